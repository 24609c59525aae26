# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# how long, in Linux 7.x, a task that goes to sleep spends in its dequeue
# under the runqueue lock. In __schedule() a blocking prev takes rq->__lock,
# then try_to_block_task() -> block_task() -> dequeue_task() (the class's
# dequeue, PELT, PSI); the wait queue's work runs before, unlocked. An fprobe
# pair (entry and %return) on dequeue_task() gives each dequeue's span; a
# dequeue of the running task (pid = the event's task) with DEQUEUE_SLEEP
# (flags bit 0) is a sleep's; its return value 0 is a DELAY_DEQUEUE (the
# task stays queued, sched_delayed: its dequeue comes at a later pick, not
# through dequeue_task, and is not in these spans).
#
# Timestamps: trace clock x86-tsc, printed as raw counts (the ns clocks
# print microseconds); the count's rate is taken from two trace_marker
# lines around each run holding ktime_get() (/proc/timer_list's "now at").
#
# The probe's own cost inside a span: the same fprobe pair (two fetched
# arguments on entry, the return value on return) on __x64_sys_getppid, a
# near-empty syscall called in a loop (`lcbench getppid`): its median span
# is the pair's in-span cost plus getppid's body (a few instructions). The
# loop's time untraced and traced gives the pair's whole cost.
#
# Runs (each traced run's spans, per class, as count / p10 / median / p90 /
# mean of spans under 20 us / spans over 20 us, the latter a vCPU's turn
# ending inside the span under QEMU's round-robin TCG):
#   getppid untraced and traced (the calibration);
#   `lcbench pingpong` (pipes) and `pingpong -s` (sockets), untraced and
#     traced: the run costs' sleep_ns comes from (two SCHED_BATCH processes
#     on CPU 0, every read sleeps);
#   hackbench -p -g 2 -l 100 and hackbench -g 2 -l 100, traced, RUNS (2)
#     times each.
# Lines `slk ...`.
#
# With lc.slk=wakewin on the kernel's command line it measures instead how
# long a hackbench wakeup keeps interrupts off. A sender's write wakes its
# reader with __wake_up_sync_key() (sock_def_readable(), anon_pipe_write()):
# spin_lock_irqsave() on the wait queue, the wake function (try_to_wake_up():
# placement, the runqueue lock, the enqueue, wakeup_preempt()),
# spin_unlock_irqrestore(). An interrupt that comes due in that span (an
# HRTICK, the tick, a reschedule IPI) is taken at the unlock. An fprobe pair
# on __wake_up_sync_key() (its span also holds, under full, the time until a
# sender preempted at the unlock runs again, and a pipe write that finds its
# reader awake wakes nobody); with lc.slk=ttwu instead, a pair on
# try_to_wake_up() (interrupts off throughout: no preemption inside, a span
# over 20 us is a lost vCPU turn; class woke / not_woken by its return
# value). Runs: the getppid calibration,
# then hackbench -p -g 2 -l 100 and hackbench -g 2 -l 100 under full and
# under lazy (/sys/kernel/debug/sched/preempt), RUNS (1) times each.
#
# With lc.slk=oncpu the same pair on try_to_wake_up() also reads the wakee's
# p->on_rq and p->on_cpu at the call's entry (BTF field fetches, before
# p->pi_lock; a racy read, as the function's own first look is): a woken task
# with on_rq 0 and on_cpu 1 is still switching out on its CPU, and the waker
# spins on p->on_cpu (smp_cond_load_acquire) unless ttwu_queue_cond() gives
# it that CPU's wake list; with on_rq 1 the wakeup is ttwu_runnable(), which
# takes the wakee's runqueue lock (on_cpu 1: the wakee still running or in
# __schedule() before block_task(); 0: a delayed dequeue or a preempted task).
# Classes woke_rqR_cpuC / not_woken_rqR_cpuC. The same runs as lc.slk=ttwu.
# In 7.2 on_cpu, on_rq and is_blocked are consecutive u8 fields of
# task_struct, so the 32-bit reads hold their neighbours: C's bytes, low
# first, are on_cpu, on_rq and is_blocked (R's low byte is on_rq).
#
# With lc.slk=phases the pair on try_to_wake_up() is kept (classes by return
# value) and pairs are added on the functions it calls in turn, none inside
# another but the IPI's: select_task_rq_fair() (placement: wake_affine(),
# select_idle_sibling()), set_task_cpu() (a migration), raw_spin_rq_lock_nested()
# (a runqueue lock's acquisition, its spin included), enqueue_task(), wakeup_preempt()
# (and native_smp_send_reschedule() inside it, a remote reschedule IPI),
# __smp_call_single_queue() (a wakeup queued on another CPU's wake list, its
# IPI). Each wakeup that woke a task is classed by where it was enqueued
# (enqueue_task()'s rq->cpu against the waker's CPU: local / remote; wakelist
# if queued instead) and whether it migrated; per class, the span of
# try_to_wake_up() and the sum of each phase's spans in it, p10 / median /
# p90 / mean, and for the wakeups over 20 us the phase whose own span was over
# 20 us (a lost vCPU turn inside it), or "between" (outside every phase's
# pair). Lines `slk phase ...`. Each pair adds its own in-span cost (the
# getppid calibration's) to its phase and to try_to_wake_up(). The trace is
# read per CPU. lc.slk_ipc=sock (or pipe) runs that channel's hackbench alone.
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/sleeplock-probe.sh
#   SMP=4 MEM=512M ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1 [lc.slk=wakewin|ttwu|oncpu|phases]
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run)
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
for f in dequeue_task block_task try_to_block_task dequeue_task_fair dequeue_entities psi_task_switch __x64_sys_getppid __wake_up_sync_key try_to_wake_up \
    select_task_rq_fair set_task_cpu raw_spin_rq_lock_nested enqueue_task wakeup_preempt native_smp_send_reschedule __smp_call_single_queue; do
    echo "slk info: function $f: ftrace-able $(grep -c "^$f\( \|\.\|$\)" $T/available_filter_functions)"
done
dmesg | grep -iE 'tsc' | sed 's/^/slk info: dmesg /'
slk_add() { echo "$1" >>$T/dynamic_events || { echo "slk error: probe refused: $1"; tail -2 $T/error_log; return 1; }; }
slk_mode=$(arg lc.slk)
slk_phases="" # "ENTRY:RETURN ..." of lc.slk=phases, the pairs the kernel took
if [ "$slk_mode" = phases ]; then
    slk_add 'f:slk/tw try_to_wake_up fl=$arg2:x32 pid=p->pid:s32'
    slk_add 'f:slk/twr try_to_wake_up%return ret=$retval:u8'
    # NAME FUNCTION FETCHES: a phase's pair, left out if the kernel refuses it
    slk_phase() {
        slk_add "f:slk/$1 $2 $3" && slk_add "f:slk/${1}r $2%return" && slk_phases="$slk_phases $1:${1}r"
    }
    slk_phase sr select_task_rq_fair 'prev=prev_cpu:s32'
    slk_phase tc set_task_cpu 'to=new_cpu:u32'
    slk_phase lk raw_spin_rq_lock_nested 'cpu=rq->cpu:s32'
    slk_phase eq enqueue_task 'cpu=rq->cpu:s32'
    slk_phase wp wakeup_preempt 'cpu=rq->cpu:s32'
    slk_phase rs native_smp_send_reschedule 'cpu=$arg1:s32'
    slk_phase cq __smp_call_single_queue 'cpu=$arg1:s32'
    echo "slk info: phases:$slk_phases"
elif [ "$slk_mode" = wakewin ] || [ "$slk_mode" = ttwu ] || [ "$slk_mode" = oncpu ]; then
    slk_add 'f:slk/wk __wake_up_sync_key fl=$arg2:x32 pid=$arg3:s32'
    slk_add 'f:slk/wkr __wake_up_sync_key%return'
    if [ "$slk_mode" = oncpu ]; then
        slk_add 'f:slk/tw try_to_wake_up fl=$arg2:x32 pid=p->pid:s32 orq=p->on_rq:s32 oc=p->on_cpu:s32'
    else
        slk_add 'f:slk/tw try_to_wake_up fl=$arg2:x32 pid=p->pid:s32'
    fi
    slk_add 'f:slk/twr try_to_wake_up%return ret=$retval:u8'
else
    # dequeue_task() if it has a body of its own, else the class's dequeue
    slk_fn=dequeue_task
    slk_add "f:slk/dq $slk_fn fl=flags:x32 pid=p->pid:s32" || { slk_fn=dequeue_task_fair; slk_add "f:slk/dq $slk_fn fl=flags:x32 pid=p->pid:s32"; }
    slk_add "f:slk/dqr $slk_fn%return ret=\$retval:u8"
    echo "slk info: spans of $slk_fn"
    # psi_task_switch(prev, next, sleep): under the same lock, later in
    # __schedule(); a sleeping prev clears its running state up the groups
    slk_add 'f:slk/ps psi_task_switch sl=sleep:u8 fl=$arg1:x32 pid=$arg2:s32'
    slk_add 'f:slk/psr psi_task_switch%return'
fi
slk_add 'f:slk/gp __x64_sys_getppid fl=$arg1:x32 pid=$arg2:s32'
slk_add 'f:slk/gpr __x64_sys_getppid%return ret=$retval:u8'
echo x86-tsc >$T/trace_clock || echo "slk error: no x86-tsc trace clock"
# phases: every runqueue lock of the run is traced too
echo $([ "$slk_mode" = phases ] && echo 32768 || echo 16384) >$T/buffer_size_kb || echo "slk error: buffer_size_kb"
slk_now() { awk '/^now at/ {print $3; exit}' /proc/timer_list; }
slk_events() { # "ENTRY:RETURN ..." 1|0
    for e in $(echo "$1" | tr ': ' '  '); do
        [ -e $T/events/slk/$e/enable ] && echo "$2" >$T/events/slk/$e/enable
    done
}
# Spans from the trace: entry and return paired per CPU; prints per class
# "slk NAME CLASS: n N p10 P med M p90 Q mean_under20us A over20us K" in ns.
slk_spans() { # NAME ENTRY RETURN
    rm -f /tmp/slk.*
    grep -v '^#' $T/trace | awk -v ent="$2:" -v ret="$3:" -v oncpu="$([ "$slk_mode" = oncpu ] && echo 1)" '
        function cpu(   i) { for (i = 1; i <= 4; i++) if ($i ~ /^\[[0-9]+\]$/) return substr($i, 2, length($i) - 2) + 0; return -1 }
        function stamp(   i) { for (i = 2; i <= 6; i++) if ($i ~ /^[0-9]+:$/) return substr($i, 1, length($i) - 1) + 0; return -1 }
        function field(k,   i) { for (i = 5; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
        / tracing_mark_write: slk mono=/ { m = $NF; sub(/.*=/, "", m); if (!mt0) { mt0 = m; tt0 = stamp() } else { mt1 = m; tt1 = stamp() } next }
        {
            c = cpu(); t = stamp()
            for (i = 4; i <= 7; i++) if ($i == ent || $i == ret) break
            if ($i == ent) { t0[c] = t; fl[c] = field("fl"); sl[c] = field("sl"); pd[c] = field("pid") + 0
                orq[c] = field("orq"); oc[c] = field("oc")
                cur = $1; sub(/.*-/, "", cur); self[c] = (pd[c] == cur + 0); next }
            if ($i != ret || !(c in t0)) next
            s = t - t0[c]; delete t0[c]
            f = fl[c]; sub(/^0x/, "", f); bit0 = index("13579bdf", substr(f, length(f), 1)) > 0
            r = field("ret") + 0
            if (ent == "gp:" || ent == "wk:") k = "all"
            else if (ent == "tw:") k = (r ? "woke" : "not_woken") (oncpu ? "_rq" orq[c] "_cpu" oc[c] : "")
            else if (ent == "ps:") k = (sl[c] == "1" ? "sleep" : "no_sleep")
            else if (bit0 && self[c]) k = (r ? "sleep" : "sleep_delayed")
            else if (bit0) k = "other_sleep_flag"
            else k = "not_sleep"
            print s >("/tmp/slk." k); n[k]++
        }
        END { if (mt1 > mt0 && tt1 > tt0) printf "slk %s: tsc counts a ns %.4f (%.0f ns between the markers)\n", "'"$1"'", (tt1 - tt0) / (mt1 - mt0), mt1 - mt0 >"/tmp/slk.rate"
              for (k in n) print k >"/tmp/slk.classes" }'
    cat /tmp/slk.rate 2>/dev/null
    rate=$(sed -n 's/.*counts a ns \([0-9.]*\).*/\1/p' /tmp/slk.rate 2>/dev/null)
    for k in $(cat /tmp/slk.classes 2>/dev/null); do
        sort -n /tmp/slk.$k | awk -v name="$1" -v k="$k" -v r="${rate:-1}" '
            { v[NR] = $1 / r } END {
                for (i = 1; i <= NR; i++) { ta += v[i]; if (v[i] < 20000) { s += v[i]; u++ } else o++ }
                printf "slk %s %s: n %d p10 %.0f med %.0f p90 %.0f mean_under20us %.0f over20us %d mean_all %.0f (ns)\n", name, k, NR,
                    v[int(NR * 0.1) + 1], v[int(NR * 0.5) + 1], v[int(NR * 0.9) + 1], u ? s / u : 0, o + 0, NR ? ta / NR : 0 }'
    done
}
# lc.slk=phases: each try_to_wake_up() that woke a task, its span and its
# phases' (pairs nested in it on the same CPU, summed per phase), classed; prints
# "slk phase NAME CLASS PHASE: n N p10 P med M p90 Q mean A (ns)" (PHASE "all"
# is the whole span; n counts the wakeups that entered the phase) and
# "slk phase NAME CLASS long: n N in PHASE K ... between K" (a wakeup over
# 20 us whose longest phase span was over 20 us is counted in that phase).
# PHASE "between" is the span less its phases' spans: the parts no pair holds
# (p->pi_lock, a runqueue lock taken inline, the wait on p->on_cpu, the
# statistics) and the try_to_wake_up() pair's own cost; "over_med_20us" counts
# the spans over the class's median plus 20 us (a lost vCPU turn).
slk_phase_spans() { # NAME
    rm -f /tmp/slk.*
    for c in $T/per_cpu/cpu*; do grep -v '^#' $c/trace; done | awk -v phases="$slk_phases" '
        function cpu(   i) { for (i = 1; i <= 4; i++) if ($i ~ /^\[[0-9]+\]$/) return substr($i, 2, length($i) - 2) + 0; return -1 }
        function stamp(   i) { for (i = 2; i <= 6; i++) if ($i ~ /^[0-9]+:$/) return substr($i, 1, length($i) - 1) + 0; return -1 }
        function field(k,   i) { for (i = 5; i <= NF; i++) if (index($i, k "=") == 1) return substr($i, length(k) + 2); return "" }
        BEGIN { np = split(phases, pp, " "); for (j = 1; j <= np; j++) { split(pp[j], q, ":"); pn[j] = q[1]; ent[q[1] ":"] = q[1]; ret[q[2] ":"] = q[1] } }
        / tracing_mark_write: slk mono=/ { m = $NF; sub(/.*=/, "", m); m += 0; st = stamp()
            if (!nm++) { mt0 = mt1 = m; tt0 = tt1 = st } else if (m < mt0) { mt0 = m; tt0 = st } else { mt1 = m; tt1 = st } next }
        {
            c = cpu(); t = stamp()
            for (i = 4; i <= 7; i++) if ($i == "tw:" || $i == "twr:" || ($i in ent) || ($i in ret)) break
            if (i > 7) next
            e = $i
            if (e == "tw:") { in_tw[c] = 1; t0[c] = t; for (j = 1; j <= np; j++) { sum[c, pn[j]] = 0; seen[c, pn[j]] = 0 }
                longp[c] = ""; eqcpu[c] = -1; next }
            if (!(c in in_tw) || !in_tw[c]) next
            if (e in ent) { ph = ent[e]; pt[c, ph] = t; if (ph == "eq") eqcpu[c] = field("cpu") + 0; next }
            if (e in ret) { ph = ret[e]; if (!((c, ph) in pt)) next
                d = t - pt[c, ph]; delete pt[c, ph]; sum[c, ph] += d; seen[c, ph] = 1
                if (d > maxd[c] || longp[c] == "") { maxd[c] = d; longp[c] = ph }
                next }
            if (e == "twr:") { in_tw[c] = 0; s = t - t0[c]
                if (field("ret") + 0 == 0) k = "not_woken"
                else if (seen[c, "cq"]) k = "wakelist"
                else if (eqcpu[c] < 0) k = "no_enqueue"
                else k = (eqcpu[c] == c ? "local" : "remote") (seen[c, "tc"] ? "_migrated" : "")
                line = k " " s " " maxd[c] " " (longp[c] == "" ? "none" : longp[c])
                for (j = 1; j <= np; j++) line = line " " (seen[c, pn[j]] ? sum[c, pn[j]] : "-")
                print line >"/tmp/slk.rec"; maxd[c] = 0; longp[c] = "" }
        }
        END { if (mt1 > mt0 && tt1 > tt0) printf "%.6f\n", (tt1 - tt0) / (mt1 - mt0) >"/tmp/slk.rate" }'
    rate=$(cat /tmp/slk.rate 2>/dev/null)
    echo "slk phase $1: tsc counts a ns ${rate:-?}"
    [ -s /tmp/slk.rec ] || return 0
    awk -v name="$1" -v r="${rate:-1}" -v phases="$slk_phases" '
        BEGIN { np = split(phases, pp, " "); for (j = 1; j <= np; j++) { split(pp[j], q, ":"); pn[j] = q[1] } }
        { k = $1; n[k]++; v = $2 / r; print v >("/tmp/slk.v." k ".all")
          if (v >= 20000) { nl[k]++; where = ($3 / r >= 20000) ? $4 : "between"; lw[k, where]++ }
          b = $2
          for (j = 1; j <= np; j++) if ($(4 + j) != "-") { print $(4 + j) / r >("/tmp/slk.v." k "." pn[j]); b -= $(4 + j) }
          print b / r >("/tmp/slk.v." k ".between") }
        END { for (k in n) { printf "slk phase %s %s long: n %d over20us %d", name, k, n[k], nl[k] + 0
                  for (j = 1; j <= np; j++) printf " in_%s %d", pn[j], lw[k, pn[j]] + 0
                  printf " between %d\n", lw[k, "between"] + 0 } }' /tmp/slk.rec
    for f in /tmp/slk.v.*; do
        k=${f#/tmp/slk.v.}
        sort -n "$f" | awk -v name="$1" -v k="${k%.*}" -v ph="${k##*.}" '
            { v[NR] = $1; ta += $1 } END { m = v[int(NR * 0.5) + 1]; for (i = 1; i <= NR; i++) o += (v[i] > m + 20000)
                printf "slk phase %s %s %s: n %d p10 %.0f med %.0f p90 %.0f mean %.0f over_med_20us %d (ns)\n", name, k, ph, NR,
                    v[int(NR * 0.1) + 1], m, v[int(NR * 0.9) + 1], NR ? ta / NR : 0, o }'
    done
}
slk_run() { # NAME "ENTRY:RETURN ..." CMD [PREEMPT]
    lc_restore
    if [ -n "${4:-}" ]; then echo "$4" >$LC_PRE; echo "slk $1 preempt: $(cat $LC_PRE)"; fi
    echo >$T/trace
    slk_events "$2" 1
    echo "slk mono=$(slk_now)" >$T/trace_marker
    $3 >/tmp/slk.out 2>&1
    echo "slk mono=$(slk_now)" >$T/trace_marker
    slk_events "$2" 0
    echo "slk $1 traced: $(grep -E 'Time:|ns=' /tmp/slk.out | tr '\n' ' ') events lost $(lc_ring_lost)"
    if [ "$slk_mode" = phases ] && [ "${2%% *}" = tw:twr ]; then slk_phase_spans "$1"; return; fi
    for p in $2; do slk_spans "$1 ${p%%:*}" "${p%%:*}" "${p#*:}"; done
}
slk_plain() { # NAME CMD
    lc_restore
    $2 >/tmp/slk.out 2>&1
    echo "slk $1 untraced: $(grep -E 'Time:|ns=' /tmp/slk.out | tr '\n' ' ')"
}
slk_plain getppid "lcbench getppid -n 20000"
slk_run getppid gp:gpr "lcbench getppid -n 20000"
if [ "$slk_mode" = wakewin ] || [ "$slk_mode" = ttwu ] || [ "$slk_mode" = oncpu ] || [ "$slk_mode" = phases ]; then
    pair=wk:wkr
    [ "$slk_mode" = ttwu ] || [ "$slk_mode" = oncpu ] && pair=tw:twr
    [ "$slk_mode" = phases ] && pair="tw:twr$slk_phases"
    # lc.slk_ipc=sock or pipe: that channel's runs alone
    ipc=$(arg lc.slk_ipc)
    for r in $(seq "${RUNS:-1}"); do
        for m in full lazy; do
            [ "$ipc" = sock ] || slk_run "hackbench_pipe_${m}_$r" "$pair" "hackbench -p -g 2 -l 100" $m
            [ "$ipc" = pipe ] || slk_run "hackbench_sock_${m}_$r" "$pair" "hackbench -g 2 -l 100" $m
        done
    done
else
    slk_plain pingpong_pipe "lcbench pingpong -n 2000"
    slk_run pingpong_pipe "dq:dqr ps:psr" "lcbench pingpong -n 2000"
    slk_plain pingpong_sock "lcbench pingpong -s -n 2000"
    slk_run pingpong_sock "dq:dqr ps:psr" "lcbench pingpong -s -n 2000"
    for r in $(seq "${RUNS:-2}"); do
        slk_run "hackbench_pipe_$r" "dq:dqr ps:psr" "hackbench -p -g 2 -l 100"
        slk_run "hackbench_sock_$r" "dq:dqr ps:psr" "hackbench -g 2 -l 100"
    done
fi
slk_plain getppid_end "lcbench getppid -n 20000"
slk_run getppid_end gp:gpr "lcbench getppid -n 20000"
