# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# where, in Linux 7.x at 4 vCPUs under QEMU `-icount` TCG, hackbench's runs
# write the LAPIC one-shot timer, and whether the writes a switch makes
# inside its runqueue-lock window leave that CPU's timer the machine's
# earliest deadline (the write that, in QEMU 7.2, kicks the running vCPU out
# of its turn: `timer_mod_ns` -> `timerlist_rearm` -> `qemu_timer_notify_cb`
# -> `qemu_cpu_kick` when the timer becomes the virtual clock's first).
# Linux 7.x arms the HRTICK at the end of `__schedule`, in
# `hrtick_schedule_exit()` right before the runqueue unlock (commit
# 96d1610e0b20, "sched: Optimize hrtimer handling"), where it also runs an
# interrupt's deferred reprogram (`__hrtimer_rearm_deferred`); the hrtimer
# interrupt's own reprogram is deferred to the interrupt return path
# (commit 15dd3a948855).
#
# Runs, alternating preempt=full and preempt=lazy (lc_apply), `hackbench -g 2
# -l 100` (sockets; `lw.pipe=1` on the command line: `-p`, pipes), started
# as `sh -c` from this shell, ROUNDS times (`lw.rounds=N`, 1 to 100, 1
# without it); each round is:
#   plain  full, lazy: no tracing (the runs' own time and switches);
#   ring   full, lazy: events to the ring buffer, no stacks;
#   stack  full, lazy x3: the same events, and each write's kernel stack
#          (a `stacktrace` trigger on the write's event).
# Per run it prints `lapicw run N KIND CFG: time_s=T ctxt=C lost=L
# sched_calls=S wakeups=W` (deltas over the run, all CPUs: /proc/stat's
# ctxt, /proc/schedstat's sched_count and ttwu_count) and, for the traced runs, the
# ring buffer gzipped and base64-encoded between `lwtrace BEGIN N` and
# `lwtrace END N` lines, for scripts/linux-compare/lapicw-summary.py. Events
# (trace clock `mono`, the clock of the clock event's `next_event`):
#   fprobe on the clock event's set_next_event (`lapic_next_event`, or
#     `lapic_next_deadline` when the CPU has the TSC deadline timer): the
#     delta in device ticks, `evt->next_event` (ktime ns), mult and shift;
#   fprobe on `lapic_timer_shutdown` (the timer stopped: no deadline armed);
#   irq_vectors:local_timer_entry (the timer's interrupt: its deadline is
#     spent); timer:hrtimer_rearm (the hrtimer code's reprogram, `deferred`).
# With `lw.starts=1`, also timer:hrtimer_start for hrtick() (filtered by its
# address): the HRTICK's arms, and which of them wrote the device.
# Before the runs it prints the clocksource, /proc/timer_list's clock event
# lines (which set_next_event is used) and the sched features.
# The probes cost guest time (under -icount every instruction is virtual
# time): compare the plain runs' times with the ring and stack runs'.
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/lapicw-probe.sh
#   MEM=1G SMP=4 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1 [lw.rounds=N] [lw.pipe=1] [lw.starts=1] >LOG
#   scripts/linux-compare/lapicw-summary.py LOG [LOG...]
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run)
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
lw_arg() { tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -1; }
LW_ROUNDS=$(lw_arg lw.rounds)
case ${LW_ROUNDS:-1} in
    '' | *[!0-9]* | 0*) echo "lapicw: error: lw.rounds=$LW_ROUNDS: expected a number of rounds from 1 to 100; no runs"; LW_ROUNDS=0 ;;
esac
[ "${LW_ROUNDS:-1}" -le 100 ] || { echo "lapicw: error: lw.rounds=$LW_ROUNDS: expected a number of rounds from 1 to 100; no runs"; LW_ROUNDS=0; }
HB="hackbench -g 2 -l 100"
[ "$(lw_arg lw.pipe)" = 1 ] && HB="hackbench -p -g 2 -l 100"
echo "lapicw: workload $HB"
echo "lapicw: clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
grep -E 'Clock Event Device|set_next_event|event_handler|mult|shift|min_delta_ns|^ *mode:' /proc/timer_list | sort | uniq -c | sed 's/^/lapicw: timer_list /'
echo "lapicw: cpu flags: $(grep -o -w -E 'tsc_deadline_timer|x2apic|arat' /proc/cpuinfo | sort | uniq -c | tr '\n' ' ')"
echo "lapicw: features $(cat /sys/kernel/debug/sched/features)"
# The clock event's set_next_event: the one /proc/timer_list names for the lapic.
LW_FN=$(awk '/^Clock Event Device: lapic/ {l = 1} l && /set_next_event:/ {print $2; exit}' /proc/timer_list)
echo "lapicw: set_next_event ${LW_FN:-?}"
lw_add() { echo "$1" >>$T/dynamic_events || { echo "lapicw: error: probe refused: $1"; tail -2 $T/error_log | sed 's/^/lapicw:   /'; return 1; }; }
lw_add "f:lw/write ${LW_FN:-lapic_next_event} d=delta:u64 ne=evt->next_event:s64 mult=evt->mult:u32 sh=evt->shift:u32"
lw_add 'f:lw/stop lapic_timer_shutdown'
echo mono >$T/trace_clock
echo 16384 >$T/buffer_size_kb || echo "lapicw: error: buffer_size_kb"
echo 0 >$T/tracing_on
LW_EVENTS="lw irq_vectors/local_timer_entry timer/hrtimer_rearm"
# lw.starts=1: also the HRTICK's starts (timer:hrtimer_start of hrtick()),
# to count the arms that wrote nothing
if [ "$(lw_arg lw.starts)" = 1 ]; then
    a=$(awk '$3 == "hrtick" {print "0x" $1; exit}' /proc/kallsyms)
    if [ -n "$a" ] && echo "function == $a" >$T/events/timer/hrtimer_start/filter; then
        LW_EVENTS="$LW_EVENTS timer/hrtimer_start"
        echo "lapicw: hrtick's starts traced (hrtick at $a)"
    else
        echo "lapicw: error: no filter on hrtick's starts (hrtick at ${a:-?})"
    fi
fi
lw_events() { # 0|1
    for e in $LW_EVENTS; do echo "$1" >$T/events/$e/enable || echo "lapicw: error: cannot set $e to $1"; done
}
lw_schedstat() { # schedule() calls and wakeups (ttwu_count), summed over CPUs
    awk '/^cpu[0-9]/ {s += $4; w += $6} END {printf "%.0f %.0f", s, w}' /proc/schedstat
}
lw_n=0
lw_run() { # KIND CFG (plain|ring|stack, full|lazy)
    lw_n=$((lw_n + 1))
    lc_restore
    lc_apply "preempt=$2" || echo "lapicw: error: preempt=$2 refused"
    lc_rand
    usleep $((lc_rng % 4000))
    echo >$T/trace
    if [ "$1" = stack ]; then
        echo stacktrace >$T/events/lw/write/trigger || echo "lapicw: error: stacktrace trigger refused"
    fi
    if [ "$1" != plain ]; then
        lw_events 1
        echo 1 >$T/tracing_on
    fi
    c0=$(awk '/^ctxt/ {print $2}' /proc/stat)
    s0=$(lw_schedstat)
    sh -c "$HB" >/tmp/lw.out 2>&1
    s1=$(lw_schedstat)
    c1=$(awk '/^ctxt/ {print $2}' /proc/stat)
    echo 0 >$T/tracing_on
    lw_events 0
    [ "$1" = stack ] && echo '!stacktrace' >$T/events/lw/write/trigger
    t=$(sed -n 's/^Time: *//p' /tmp/lw.out)
    lost=$(cat $T/per_cpu/cpu*/stats | awk '/^overrun/ {s += $2} END {print s + 0}')
    echo "lapicw run $lw_n $1 $2: time_s=${t:-?} ctxt=$((c1 - c0)) lost=$lost sched_calls=$((${s1% *} - ${s0% *})) wakeups=$((${s1#* } - ${s0#* }))"
    [ -n "$t" ] || sed 's/^/lapicw: hackbench: /' /tmp/lw.out
    if [ "$1" != plain ]; then
        echo "lwtrace BEGIN $lw_n"
        grep -v '^#' $T/trace | gzip | base64
        echo "lwtrace END $lw_n"
    fi
    lc_restore
}
r=0
while [ $r -lt "${LW_ROUNDS:-1}" ]; do
    r=$((r + 1))
    lw_run plain full
    lw_run plain lazy
    lw_run ring full
    lw_run ring lazy
    for i in 1 2 3; do
        lw_run stack full
        lw_run stack lazy
    done
done
echo "lapicw: done"
