# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# where, in Linux 7.x, hackbench's workers get the `wakee_flips` that make
# `wake_wide()` hold for most of their wakeups (docs/results/linux/smt.md,
# "Two-level topology (SMT): Linux and ours"). A new task copies its
# parent's flips (`dup_task_struct`; `__sched_fork()` leaves them), and
# `record_wakee()` adds one to the waker's (`current`'s) flips for each
# wakeup of another task than its last, in `select_task_rq_fair` (WF_TTWU
# only), halving them once a second. So per run of `hackbench HB_ARGS`
# (default -g 2 -l 100), RUNS times (`lc.runs=N` on the kernel's command
# line, 1 to 1000; 3 without it), the same way the smt part starts
# it (`sh -c` from this shell, after the shell's own awk and cat):
#   - `fork`: the flips each worker starts with (`wake_up_new_task`'s
#     `p->wakee_flips`, for children of hackbench); the lowest is the main
#     process's at its first fork (it wakes nothing but rcu_preempt while
#     it forks), the input ours' `hackbench -W FLIPS` / `make linux-compare
#     OURS_FLIPS=FLIPS` gives ours' run (its median over seeds 1-4 was 6);
#   - `wakee`: the wakee's flips at each hackbench wakeup (WF_TTWU in
#     `select_task_rq_fair`), and the share of them at 4 or more (the LLC
#     size here, `wake_wide()`'s first test);
#   - `init`: this shell's (pid 1's) own flips, as `select_task_rq_fair`
#     reads them whenever it is woken (a child's exit wakes it);
#   - `wakers`: the wakeups `record_wakee()` counted (WF_TTWU) for the
#     tasks of the chain that starts hackbench (pid 1; hackbench's main
#     process, `sh -c` before its exec) in the run's window, by waker
#     and wakee comm.
# Events: fprobes with BTF on `wake_up_new_task` and `select_task_rq_fair`
# (entry), the `sched_waking` tracepoint for the wakees' comms.
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/flips-probe.sh
#   MEM=1G SMP=4 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1 [lc.runs=N]
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run)
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
HB="hackbench ${HB_ARGS:--g 2 -l 100}"
RUNS=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^lc.runs=//p' | tail -1)
case ${RUNS:-3} in
    '' | *[!0-9]* | 0*) echo "flips: error: lc.runs=$RUNS: expected a number of runs from 1 to 1000; no runs"; RUNS=0 ;;
esac
[ "${RUNS:-3}" -le 1000 ] || { echo "flips: error: lc.runs=$RUNS: expected a number of runs from 1 to 1000; no runs"; RUNS=0; }
fp_add() { echo "$1" >>$T/dynamic_events || { echo "flips: error: probe refused: $1"; tail -2 $T/error_log; return 1; }; }
fp_add 'f:lc/wn wake_up_new_task pid=p->pid:s32 fl=p->wakee_flips:u32'
fp_add 'f:lc/sr select_task_rq_fair wpid=p->pid:s32 wf=wake_flags:u32 fl=p->wakee_flips:u32'
echo 16384 >$T/buffer_size_kb || echo "flips: error: buffer_size_kb"
echo 1 >$T/events/lc/enable
echo 1 >$T/events/sched/sched_waking/enable
fp_summary() { # RUN
    awk -v run="$1" '
    function parse(   i, j) { delete F; for (i = 1; i <= NF; i++) { j = index($i, "="); if (j) F[substr($i, 1, j - 1)] = substr($i, j + 1) } }
    function who(   w) { w = $1; sub(/-[0-9]+$/, "", w); return w }
    { parse() }
    / sched_waking: / { c = F["comm"]; p = F["pid"] + 0; name[p] = c; next }
    function pid(   w) { w = $1; sub(/.*-/, "", w); return w + 0 }
    / wn: / { if (who() == "hackbench") { main = pid(); f = F["fl"] + 0; n++; s += f; if (n == 1 || f < lo) lo = f; if (f > hi) hi = f } next }
    / sr: / { wf = F["wf"] + 0; if (int(wf / 8) % 2 == 0) next
        w = who(); wp = pid(); p = F["wpid"] + 0; wk = (p in name) ? name[p] : "?"
        f = F["fl"] + 0
        if (p == 1) { ni++; if (ni == 1 || f < ilo) ilo = f; if (f > ihi) ihi = f }
        if (wk == "hackbench" && p != main) { nw++; ws += f; if (f >= 4) ge4++ }
        if (wp == 1) pair["pid 1 (" w ") -> " wk]++
        else if (wp > 0 && (wp == main || (w == "sh" && main == 0))) pair["main (" w ") -> " wk]++
        next }
    END {
        printf "flips run %d: fork: %d workers, flips mean %.1f [%d-%d]\n", run, n, n ? s / n : 0, lo, hi
        printf "flips run %d: wakee: %d hackbench wakeups, flips mean %.1f, >= 4 at %.1f%%\n", run, nw, nw ? ws / nw : 0, nw ? 100 * ge4 / nw : 0
        printf "flips run %d: init: woken %d times, its flips [%d-%d]\n", run, ni, ilo, ihi
        for (k in pair) printf "flips run %d: wakers: %s %d\n", run, k, pair[k]
    }' $T/trace
}
for r in $(seq 1 ${RUNS:-3}); do
    echo >$T/trace
    echo 1 >$T/tracing_on
    # what lc_smt does around a run: awk over /proc, then sh -c
    awk '/^cpu[0-9]/ {n++} END {print "flips: cpus", n}' /proc/schedstat
    cat /proc/uptime >/dev/null
    sh -c "$HB" >/tmp/flips.out 2>&1
    echo 0 >$T/tracing_on
    grep -m1 '^Time' /tmp/flips.out
    fp_summary $r
    echo "flips run $r: lost $(awk '/^# entries-in-buffer/ {print $0}' $T/trace | head -1)"
done
