# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# counts, in Linux 7.x, which wakeups set the NEXT_BUDDY buddy and which picks
# take it, for `hackbench -g 2 -l 100` under NEXT_BUDDY and default, RUNS
# (3) times each. fprobes with BTF fields (CONFIG_PROBE_EVENTS_BTF_ARGS):
#   wakeup_preempt_fair entry/exit: wake_flags, rq->cfs.next before and
#     after (the buddy set, an earlier one kept, or none);
#   pick_task_fair entry/exit: rq->cfs.next (vruntime, deadline) before the
#     pick, the picked task's after (equal: the pick took the buddy).
# Events go to the ring buffer and are summed in the guest by awk; one line
# per count, `nbcount CONFIG: ...`. The probes slow the runs down (by about
# half), so their times are not the A/B's.
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/buddy-probe.sh
#   SMP=4 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run)
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
bp_add() { echo "$1" >>$T/dynamic_events || { echo "nbcount: error: probe refused: $1"; tail -2 $T/error_log; }; }
bp_add 'f:lc/wpf wakeup_preempt_fair wpid=p->pid wf=wake_flags nxt=rq->cfs.next'
bp_add 'f:lc/wpfr wakeup_preempt_fair%return nxt=rq->cfs.next'
bp_add 'f:lc/ptf pick_task_fair nxt=rq->cfs.next nv=rq->cfs.next->vruntime:s64 nd=rq->cfs.next->deadline:s64'
bp_add 'f:lc/ptfr pick_task_fair%return rv=$retval rvv=$retval->se.vruntime:s64 rvd=$retval->se.deadline:s64'
echo 16384 >$T/buffer_size_kb
bp_summary() { # CONFIG
    awk -v cfg="$1" '
    function field(name,   i, n, a) { n = split($0, a, " "); for (i = 1; i <= n; i++) if (index(a[i], name "=") == 1) return substr(a[i], length(name) + 2); return "" }
    / wpf: / { c = $2; before[c] = field("nxt"); flags[c] = field("wf"); calls++; byflag[flags[c]]++; next }
    / wpfr: / { c = $2; if (!(c in before)) next; after = field("nxt")
        if (after != before[c] && after != "0x0") { set++; setby[flags[c]]++ }
        else if (before[c] != "0x0" && after == before[c]) kept++
        else none++
        delete before[c]; next }
    / ptf: / { c = $2; pn[c] = field("nxt"); pv[c] = field("nv"); pd[c] = field("nd"); next }
    / ptfr: / { c = $2; if (!(c in pn)) next; picks++
        if (field("rv") == "0x0") empty++
        if (pn[c] != "0x0" && pn[c] != "") { withb++; if (field("rvv") == pv[c] && field("rvd") == pd[c]) took++ }
        delete pn[c]; next }
    END { printf "nbcount %s: wakeup_preempt_fair %d, set the buddy %d, kept an earlier buddy %d, left none %d; picks %d (nothing to run %d), with a buddy %d, took it %d\n", cfg, calls, set, kept, none, picks, empty, withb, took
        for (f in byflag) printf "nbcount %s: wake_flags %d: %d calls, %d set the buddy\n", cfg, f, byflag[f], setby[f] }' $T/trace
}
bp_run() { # CONFIG
    lc_restore
    lc_apply "$1"
    echo >$T/trace
    echo 1 >$T/events/lc/enable
    hackbench -g 2 -l 100 >/tmp/bp.out 2>&1
    echo 0 >$T/events/lc/enable
    echo "nbcount $1: $(grep Time: /tmp/bp.out), events lost $(lc_ring_lost)"
    bp_summary "$1"
    lc_restore
}
r=0
while [ $r -lt "${RUNS:-3}" ]; do
    bp_run NEXT_BUDDY
    bp_run default
    r=$((r + 1))
done
