# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# records, in Linux 7.x at 1 CPU, what ends each slice of the conformance
# rows' hog pair (`lcbench spin -d MS -c 0 0 0`, default and
# NO_RUN_TO_PARITY) and of the duty-cycle row (`lcbench spin -d MS -c 0
# duty:1000:3000 0`, default and NO_PLACE_LAG): the HRTICK timer or the tick.
# Events go to the ring buffer; after each run the buffer is printed gzipped
# and base64-encoded between `hrtrace BEGIN NAME` and `hrtrace END NAME`
# lines, for scripts/linux-compare/hrtick-summary.py on the host:
#   timer:hrtimer_start / hrtimer_expire_entry for hrtick() and the tick's
#     timer (filtered by function address), hrtimer_cancel, hrtimer_rearm,
#     hrtimer_start_expired;
#   sched:sched_switch, sched:sched_wakeup;
#   fprobes with BTF fields (CONFIG_PROBE_EVENTS_BTF_ARGS), where the
#   function exists (not inlined): task_tick_fair (queued: 1 = hrtick(),
#   0 = the tick; the running task's vruntime, deadline, vprot, exec_start
#   and the rq's clock_task, before update_curr), hrtick_start (the delay
#   asked for, rq->hrtick_sched), set_next_task_fair (pid, first),
#   place_entity (se, its vlag at the enqueue: the lag PLACE_LAG pays back).
# Before the runs it prints the timer set-up: the clocksource, /proc/timer_list's
# hres_active and event device, and the boot log's clocksource/TSC lines.
# The probes and the ring buffer cost time: the runs' figures are not the
# untraced conformance rows'.
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/hrtick-probe.sh
#   SMP=1 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1 >LOG
#   scripts/linux-compare/hrtick-summary.py LOG
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run.
#  On the kernel command line: hp.ms=N sets the run length, 1000 by default;
#  hp.runs=LIST the runs, comma-separated, `hogpair,duty` by default: hogpair
#  (the two hog pair runs), duty (the two duty-cycle runs), poll10 (the hog
#  pair beside a sleeper that wakes every 10 ms on the CPU, `lcbench
#  wakelat -n 2 -p 10000`, default and NO_RUN_TO_PARITY: the shape of our
#  kernel's run, whose shell polls every 10 ms); batch (the conformance
#  row wake_batch_2hogs, `lcbench wakelat -n 2 -p 2000 -P batch`))
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
hp_ms=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^hp.ms=//p' | tail -1)
hp_ms=${hp_ms:-1000}
echo "hrinfo: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource) (available: $(cat /sys/devices/system/clocksource/clocksource0/available_clocksource))"
grep -E 'hres_active|Clock Event Device|event_handler|set_next_event|^ *mode:|max_delta_ns|min_delta_ns|Tick Device' /proc/timer_list | sort | uniq -c | sed 's/^/hrinfo: timer_list /'
dmesg | grep -iE 'clocksource|tsc|hpet|high.res|hrtimer|apic timer|lapic|tick' | sed 's/^/hrinfo: dmesg /'
for f in hrtick hrtick_start hrtick_start_fair hrtick_update task_tick_fair set_next_task_fair place_entity enqueue_entity dequeue_entity pick_task_fair resched_curr tick_nohz_handler tick_sched_timer __hrtimer_rearm_deferred; do
    a=$(grep -c "^$f\( \|\.\|$\)" $T/available_filter_functions)
    k=$(awk -v f="$f" '$3 == f || index($3, f ".") == 1 {print $1 " " $3}' /proc/kallsyms | head -2 | tr '\n' ' ')
    echo "hrinfo: function $f: ftrace-able $a, kallsyms ${k:-none}"
done
fn_addr() { awk -v f="$1" '$3 == f {print "0x" $1; exit}' /proc/kallsyms; }
hrtick_fn=$(fn_addr hrtick)
tick_fn=$(fn_addr tick_nohz_handler)
[ -n "$tick_fn" ] || tick_fn=$(fn_addr tick_sched_timer)
echo "hrinfo: hrtick at ${hrtick_fn:-?}, tick timer at ${tick_fn:-?}"
hp_add() { echo "$1" >>$T/dynamic_events 2>/dev/null || { echo "hrinfo: probe refused: $1"; tail -2 $T/error_log | sed 's/^/hrinfo:   /'; }; }
hp_add 'f:hp/ttf task_tick_fair q=queued pid=curr->pid v=curr->se.vruntime:s64 d=curr->se.deadline:s64 vp=curr->se.vprot:s64 es=curr->se.exec_start:u64 ct=rq->clock_task:u64 nr=rq->cfs.h_nr_queued:u32'
hp_add 'f:hp/hs hrtick_start dl=delay:u64 hsch=rq->hrtick_sched:u32 dpid=rq->donor->pid'
hp_add 'f:hp/snt set_next_task_fair pid=p->pid first=first:u8 v=p->se.vruntime:s64 d=p->se.deadline:s64 vp=p->se.vprot:s64'
hp_add 'f:hp/pe place_entity se=se vlag=se->vlag:s64 fl=flags:x32 v=se->vruntime:s64'
hp_add 'f:hp/de dequeue_entity se=se fl=flags:x32 v=se->vruntime:s64 delayed=se->sched_delayed:u8'
for e in hrtimer_start hrtimer_expire_entry; do
    if [ -n "$hrtick_fn" ] && [ -n "$tick_fn" ]; then
        echo "function == $hrtick_fn || function == $tick_fn" >$T/events/timer/$e/filter || echo "hrinfo: filter refused on $e"
    fi
done
echo 32768 >$T/buffer_size_kb
hp_run() { # NAME CONFIG CMD
    lc_restore
    lc_apply "$2"
    lc_rand
    usleep $((lc_rng % 4000))
    echo >$T/trace
    for e in timer/hrtimer_start timer/hrtimer_expire_entry timer/hrtimer_cancel timer/hrtimer_rearm timer/hrtimer_start_expired sched/sched_switch sched/sched_wakeup hp; do
        [ -e $T/events/$e/enable ] && echo 1 >$T/events/$e/enable
    done
    echo "hp run $1 start" >$T/trace_marker
    $3 >/tmp/hp.out 2>&1
    echo "hp run $1 end" >$T/trace_marker
    for e in timer/hrtimer_start timer/hrtimer_expire_entry timer/hrtimer_cancel timer/hrtimer_rearm timer/hrtimer_start_expired sched/sched_switch sched/sched_wakeup hp; do
        [ -e $T/events/$e/enable ] && echo 0 >$T/events/$e/enable
    done
    sed 's/^/hpout: /' /tmp/hp.out
    echo "hrinfo: $1: events lost $(cat $T/per_cpu/cpu*/stats | awk '/^overrun/ {s += $2} END {print s + 0}'), lines $(grep -vc '^#' $T/trace)"
    echo "hrtrace BEGIN $1"
    grep -v '^#' $T/trace | gzip -9 | base64
    echo "hrtrace END $1"
    lc_restore
}
hp_runs=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^hp.runs=//p' | tail -1)
for r in $(echo "${hp_runs:-hogpair,duty}" | tr ',' ' '); do
    case $r in
        hogpair)
            hp_run hogpair default "lcbench spin -d $hp_ms -c 0 0 0"
            hp_run hogpair_NO_RUN_TO_PARITY NO_RUN_TO_PARITY "lcbench spin -d $hp_ms -c 0 0 0" ;;
        duty)
            hp_run duty default "lcbench spin -d $hp_ms -c 0 duty:1000:3000 0"
            hp_run duty_NO_PLACE_LAG NO_PLACE_LAG "lcbench spin -d $hp_ms -c 0 duty:1000:3000 0" ;;
        poll10) # the hog pair beside a task that wakes every 10 ms on the CPU (as our shell polls)
            hp_run hogpair_poll10 default "lcbench wakelat -d $hp_ms -c 0 -n 2 -p 10000"
            hp_run hogpair_poll10_NO_RUN_TO_PARITY NO_RUN_TO_PARITY "lcbench wakelat -d $hp_ms -c 0 -n 2 -p 10000" ;;
        batch) # the conformance row wake_batch_2hogs: a SCHED_BATCH sleeper every 2 ms beside the pair
            hp_run batch_2hogs default "lcbench wakelat -d $hp_ms -c 0 -n 2 -p 2000 -P batch" ;;
        *) echo "hrinfo: unknown run '$r' (hogpair, duty, poll10, batch)" ;;
    esac
done
