# /lc.sh of the linux-compare initramfs (busybox sh, sourced by /init): the
# in-guest half of the Linux A/B, printing what the `sched>` shell's
# `compare` prints, so that abtool reads both the same way:
#
#   compare: N config(s) x R run(s) (+W warmup) of 'LABEL', rotated order, seed S
#   run I/T cfg C CONFIG: metric=value ... | counter=delta ...
#
# lc_compare RUNS WARMUP LABEL CMD CONFIGS
#   CONFIGS is '|'-separated; a config is `default` or comma-separated
#   settings: FEATURE or NO_FEATURE (written to
#   /sys/kernel/debug/sched/features), preempt=full|lazy (written to
#   /sys/kernel/debug/sched/preempt) and kernel.sched_base_slice_ns=N
#   (ours' tunable's key, written to /sys/kernel/debug/sched/base_slice_ns:
#   both set the effective base slice). Every config is tried first; one that
#   the kernel refuses skips the whole comparison. Each run starts from the
#   boot's features and preempt model plus the config's settings; rounds are
#   rotated (A B C, B C A, ...) as `compare` rotates them; before each run a
#   pseudo-random pause of 0..1 tick (4 ms at HZ=250), from lc.seed, so runs
#   start at different tick phases (under -icount the seed is what samples
#   the variance, as in our kernel).
#   Metrics, from the command's output: hackbench / perf bench sched
#   messaging `time_s`; perf bench sched pipe and piperr `usecs_per_op`,
#   `ops_per_s`; cyclictest `lat_avg_us`, `lat_max_us`; lcbench its own
#   (`lcbench: k=v ... | k=v ...`). Counters, as deltas over the run:
#   `switches` (/proc/stat ctxt), from /proc/schedstat summed over CPUs
#   `sched_calls`, `goidle`, `wakeups` (ttwu_count), `wakeups_local`,
#   `run_delay_us`, `timeslices` (pcount), `yields`; and the workload's own
#   tasks' `task_nvcsw` / `task_nivcsw` (voluntary / involuntary switches,
#   getrusage of the waited-for children, `lcbench rus`).

LC_FEAT=/sys/kernel/debug/sched/features
LC_PRE=/sys/kernel/debug/sched/preempt
LC_SLICE=/sys/kernel/debug/sched/base_slice_ns
lc_boot_features=$(cat $LC_FEAT)
lc_boot_preempt=$(sed -n 's/.*(\([a-z]*\)).*/\1/p' $LC_PRE)
lc_boot_slice=$(cat $LC_SLICE 2>/dev/null)
lc_seed=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^lc.seed=//p' | tail -1)
lc_rng=$(( ${lc_seed:-1} * 2654435761 % 2147483647 + 1 ))

lc_rand() { # next pseudo-random number in lc_rng (Park-Miller)
    lc_rng=$(( lc_rng * 48271 % 2147483647 ))
}

# lc.trace=1 on the command line: each A/B run also collects, through
# ftrace's histogram triggers (in-kernel counts, no trace buffer to read
# back), why the workload's tasks switch out and who wakes whom, printed
# after its run line as `trace I/T NAME: LINE` (abtool ignores them;
# trace-summary.py sums them per config):
#   state  sched_switch by prev_pid, prev_state of the workload's tasks
#          (comm = the command's first word): 1 = S (blocked), 2 = D
#          (blocked uninterruptibly: a mutex's waiter), 0 = R
#          (called schedule() while runnable: the return to user space's
#          need_resched loop), 256 = R+ (preempted: preempt_schedule*)
#   sw0 / sw1 / sw2 / sw256   the kernel stacks of those switch-outs, per state
#   wake   sched_waking by waker pid (common_pid) and wakee pid
#   wakestk  the wakers' stacks
#   wakepid  the wakers' stacks by wakee pid: which wait queue a wakeup
#          came from where one function wakes two (a pipe write wakes
#          readers on rd_wait, and the next writer on wr_wait)
#   mig / migstk  sched_migrate_task by orig_cpu, dest_cpu; its stacks
#   resched / reschedlazy  kprobes on resched_curr and resched_curr_lazy
#          (all tasks), by stack: who asked for a reschedule, and how
#   mutexlock / mutexunlock  kprobes on __mutex_lock_slowpath (a mutex_lock
#          that found the lock taken: it then spins or sleeps) and
#          __mutex_unlock_slowpath (an unlock with waiters or a handoff
#          flag), the workload's tasks only, by stack
#   sd     /proc/schedstat's domain lines' last three fields summed per
#          domain level over the run: ttwu_wake_remote, ttwu_move_affine,
#          ttwu_move_balance
#   wlat   a synthetic event `lc_wlat` (inter-event triggers: sched_waking
#          saves the time and the waker's CPU per wakee, the wakee's next
#          sched_switch in emits it): the workload's tasks' wakeup-to-run
#          time, as a sum and count per (waker's CPU, CPU it ran on) and
#          as a log2 histogram (ns) per (waker's CPU, CPU it ran on)
#   hrtimer  hrtimer_expire_entry by the timer's function (`hrtick`: the
#          HRTICK's expiries, whether or not they rescheduled)
#   prehrt / pretck / preipi  synthetic events `lc_pre*`: the workload's
#          preemptions (R+ switch-outs) by pid and by the time (log2 ns)
#          since the last HRTICK expiry, tick (`tick_nohz_handler`) or
#          reschedule IPI on that CPU that no earlier preemption took (a
#          preemption a few microseconds after one is most likely its)
# lc.trace=2 keeps only the triggers without a stack (state, wake, mig,
# wlat, hrtimer, pre*) and no kprobes: a run costs about what an untraced one does.
# The events stay disabled (a trigger alone arms its event: nothing goes to
# the ring buffer), but the triggers cost time on every switch and wakeup
# (a stack walk): the runs' times are not the untraced A/B's.
LC_TR=/sys/kernel/tracing
lc_trace=$(tr ' ' '\n' </proc/cmdline | sed -n 's/^lc.trace=//p' | tail -1)
[ "$lc_trace" = 0 ] && lc_trace=""
lc_trace_trig() { # NAME EVENT_DIR TRIGGER
    if echo "$3" 2>/dev/null >>"$LC_TR/events/$2/trigger"; then
        echo "$3" >"/tmp/lc.t.$1"
        lc_trace_on="$lc_trace_on $1:$2"
    else
        echo "trace: error: $1: '$3' refused"
        tail -3 "$LC_TR/error_log" 2>/dev/null | sed 's/^/trace: error:   /'
        echo >"$LC_TR/error_log" 2>/dev/null
    fi
}
lc_trace_start() { # COMM
    local f c s st sym
    [ -d $LC_TR/events ] || mount -t tracefs nodev $LC_TR
    if [ -z "$lc_trace_synth" ]; then
        lc_trace_synth=1
        echo 'lc_wlat u64 lat; unsigned int wcpu; unsigned int rcpu' >>$LC_TR/synthetic_events || echo "trace: error: synthetic event lc_wlat refused"
        for e in hrt tck ipi; do
            echo "lc_pre$e u64 dt; pid_t pid" >>$LC_TR/synthetic_events || echo "trace: error: synthetic event lc_pre$e refused"
        done
    fi
    if [ -z "$lc_trace_probes" ] && [ "$lc_trace" = 1 ]; then
        lc_trace_probes=1
        for f in resched_curr resched_curr_lazy; do
            echo "p:lc/$f $f" 2>/dev/null >>$LC_TR/kprobe_events || echo "trace: error: no kprobe on $f"
        done
        # (the compiler may have renamed them, e.g. a .constprop.0 copy)
        for f in mutexlock:__mutex_lock_slowpath mutexunlock:__mutex_unlock_slowpath; do
            sym=$(awk -v f="${f#*:}" '$3 == f || index($3, f ".") == 1 {print $3; exit}' /proc/kallsyms)
            echo "p:lc/${f%%:*} ${sym:-${f#*:}}" 2>/dev/null >>$LC_TR/kprobe_events || echo "trace: error: no kprobe on ${sym:-${f#*:}}"
        done
    fi
    c=$(echo "$1" | cut -c1-15)
    s=common_stacktrace
    lc_trace_on=""
    lc_trace_trig state sched/sched_switch "hist:keys=prev_pid,prev_state:vals=hitcount:size=4096 if prev_comm == \"$c\""
    lc_trace_trig wake sched/sched_waking "hist:keys=common_pid,pid:vals=hitcount:size=8192 if comm == \"$c\""
    lc_trace_trig mig sched/sched_migrate_task "hist:keys=orig_cpu,dest_cpu:vals=hitcount if comm == \"$c\""
    # wakeup to run: the variables' triggers first (removed last)
    if [ -d $LC_TR/events/synthetic/lc_wlat ]; then
        lc_trace_trig wlat0 sched/sched_waking "hist:keys=pid:lcts0=common_timestamp,lcwc=common_cpu if comm == \"$c\""
        lc_trace_trig wlat1 sched/sched_switch "hist:keys=next_pid:lclat=common_timestamp-\$lcts0,lcrc=common_cpu:onmatch(sched.sched_waking).trace(lc_wlat,\$lclat,\$lcwc,\$lcrc) if next_comm == \"$c\""
        lc_trace_trig wlat synthetic/lc_wlat "hist:keys=wcpu,rcpu:vals=hitcount,lat:size=128"
        lc_trace_trig wlatlog synthetic/lc_wlat "hist:keys=wcpu,rcpu,lat.log2:vals=hitcount:size=2048"
    fi
    lc_trace_trig hrtimer timer/hrtimer_expire_entry "hist:keys=function.sym:vals=hitcount:size=256"
    # the workload's preemptions (R+) by the time since the last HRTICK
    # expiry, tick or reschedule IPI on their CPU (each expiry or IPI is
    # consumed by the first such preemption after it)
    for f in hrt:hrtick tck:tick_nohz_handler; do
        a=$(awk -v f="${f#*:}" '$3 == f {print $1; exit}' /proc/kallsyms)
        [ -n "$a" ] && [ -d $LC_TR/events/synthetic/lc_pre${f%%:*} ] || continue
        lc_trace_trig pre${f%%:*}0 timer/hrtimer_expire_entry "hist:keys=common_cpu:lc${f%%:*}=common_timestamp if function == 0x$a"
        lc_trace_trig pre${f%%:*}1 sched/sched_switch "hist:keys=common_cpu:lcd${f%%:*}=common_timestamp-\$lc${f%%:*}:onmatch(timer.hrtimer_expire_entry).trace(lc_pre${f%%:*},\$lcd${f%%:*},prev_pid) if prev_comm == \"$c\" && prev_state == 256"
        lc_trace_trig pre${f%%:*} synthetic/lc_pre${f%%:*} "hist:keys=pid,dt.log2:vals=hitcount:size=4096"
    done
    if [ -d $LC_TR/events/synthetic/lc_preipi ]; then
        lc_trace_trig preipi0 irq_vectors/reschedule_entry "hist:keys=common_cpu:lcipi=common_timestamp"
        lc_trace_trig preipi1 sched/sched_switch "hist:keys=common_cpu:lcdipi=common_timestamp-\$lcipi:onmatch(irq_vectors.reschedule_entry).trace(lc_preipi,\$lcdipi,prev_pid) if prev_comm == \"$c\" && prev_state == 256"
        lc_trace_trig preipi synthetic/lc_preipi "hist:keys=pid,dt.log2:vals=hitcount:size=4096"
    fi
    if [ "$lc_trace" = 2 ]; then
        lc_trace_sd0=$(lc_trace_sd)
        return
    fi
    for st in 0 1 2 256; do
        lc_trace_trig sw$st sched/sched_switch "hist:keys=$s:vals=hitcount:size=2048 if prev_comm == \"$c\" && prev_state == $st"
    done
    lc_trace_trig wakestk sched/sched_waking "hist:keys=$s:vals=hitcount:size=2048 if comm == \"$c\""
    lc_trace_trig wakepid sched/sched_waking "hist:keys=pid,$s:vals=hitcount:size=8192 if comm == \"$c\""
    lc_trace_trig migstk sched/sched_migrate_task "hist:keys=$s:vals=hitcount:size=2048 if comm == \"$c\""
    [ -d $LC_TR/events/lc/resched_curr ] && lc_trace_trig resched lc/resched_curr "hist:keys=$s:vals=hitcount:size=2048"
    [ -d $LC_TR/events/lc/resched_curr_lazy ] && lc_trace_trig reschedlazy lc/resched_curr_lazy "hist:keys=$s:vals=hitcount:size=2048"
    for f in mutexlock mutexunlock; do
        [ -d $LC_TR/events/lc/$f ] && lc_trace_trig $f lc/$f "hist:keys=$s:vals=hitcount:size=2048 if comm == \"$c\""
    done
    lc_trace_sd0=$(lc_trace_sd)
}
lc_trace_sd() { # per domain level: ttwu_wake_remote ttwu_move_affine ttwu_move_balance
    awk '/^domain/ {r[$1] += $(NF-2); a[$1] += $(NF-1); b[$1] += $NF}
        END {for (d in r) printf "%s %.0f %.0f %.0f\n", d, r[d], a[d], b[d]}' /proc/schedstat | sort
}
lc_trace_stop() { # keeps each event's histograms in a file; removes the triggers
    local t d
    lc_trace_sd1=$(lc_trace_sd)
    for d in $(for t in $lc_trace_on; do echo "${t#*:}"; done | sort -u); do
        cp "$LC_TR/events/$d/hist" "/tmp/lc.h.${d#*/}"
    done
    # last added first: a trigger that uses another's variables goes first
    for t in $(for t in $lc_trace_on; do echo "$t"; done | sed -n '1!G;h;$p'); do
        echo "!$(cat "/tmp/lc.t.${t%%:*}")" >>"$LC_TR/events/${t#*:}/trigger" || echo "trace: error: ${t%%:*} not removed"
    done
}
# Prints one line per histogram entry, `trace RUN HIST: KEYS = COUNT`; HIST
# names the event and its keys (`stk` for a stack), and the state of a
# prev_state filter: sched_switch.stk.256 = the stacks of preemptions.
lc_trace_print() { # RUN_TAG
    local t d
    for d in $(for t in $lc_trace_on; do echo "${t#*:}"; done | sort -u); do
        awk -v p="trace $1" -v e="${d#*/}" '
            /^# trigger info:/ { k = $0; sub(/.*hist:keys=/, "", k); sub(/:.*/, "", k)
                if (k ~ /stacktrace/) { sub(/,?common_stacktrace/, "", k); k = k == "" ? "stk" : k ".stk" }
                s = ""; if (match($0, /prev_state == [0-9]+/)) { s = substr($0, RSTART, RLENGTH); sub(/.* /, ".", s) }
                h = e "." k s ":"; next }
            /^\{ .*stacktrace:/ { pre = $0; sub(/,? *[a-z_]*stacktrace:.*/, "", pre); sub(/^\{ */, "", pre)
                gsub(/[a-z_]+: */, "", pre); gsub(/,/, "", pre); stk = ""; in_stk = 1; next }
            in_stk && /\} hitcount:/ { n = $0; sub(/.*hitcount: */, "", n); print p, h, (pre == "" ? "" : pre " ") stk, "=", n; in_stk = 0; next }
            in_stk { f = $1; sub(/\+0x.*/, "", f); stk = stk == "" ? f : stk "<" f; next }
            /^\{ .*\} hitcount:/ { k = $0; sub(/ *\} hitcount:.*/, "", k); sub(/^\{ /, "", k)
                gsub(/[a-z_]+: */, "", k); gsub(/,/, "", k); n = $0; sub(/.*hitcount: */, "", n)
                # more values than the hit count (vals=hitcount,lat): one
                # more line each, `HIST.sum_NAME`
                m = split(n, v, " "); print p, h, k, "=", v[1]
                for (i = 2; i + 1 <= m; i += 2) { nm = v[i]; sub(/:$/, "", nm); print p, substr(h, 1, length(h) - 1) ".sum_" nm ":", k, "=", v[i + 1] }
                next }
            /Dropped:/ { print p, h, "dropped =", $2 }' "/tmp/lc.h.${d#*/}"
    done
    echo "$lc_trace_sd0" | awk -v t="$1" -v b="$lc_trace_sd1" 'BEGIN {n = split(b, l, "\n"); for (i = 1; i <= n; i++) {split(l[i], f, " "); r[f[1]] = f[2]; a[f[1]] = f[3]; m[f[1]] = f[4]}}
        NF == 4 {printf "trace %s sd: %s ttwu_wake_remote=%d ttwu_move_affine=%d ttwu_move_balance=%d\n", t, $1, r[$1] - $2, a[$1] - $3, m[$1] - $4}'
}

# Events the trace ring buffer overwrote since its last clear (the probe
# plans' check that their counts are whole).
lc_ring_lost() {
    cat /sys/kernel/tracing/per_cpu/cpu*/stats | awk '/^overrun/ {s += $2} END {print s + 0}'
}

lc_restore() {
    for f in $lc_boot_features; do echo "$f" >$LC_FEAT; done
    [ -n "$lc_boot_preempt" ] && echo "$lc_boot_preempt" >$LC_PRE
    [ -n "$lc_boot_slice" ] && echo "$lc_boot_slice" >$LC_SLICE
}

lc_apply() { # CONFIG; fails on a setting the kernel refuses
    for s in $(echo "$1" | tr ',' ' '); do
        case $s in
            default) ;;
            preempt=*) echo "${s#preempt=}" 2>/dev/null >$LC_PRE || return 1 ;;
            # ours' key (compare -c); Linux's debugfs value is the effective
            # base slice, as the value ours' key sets
            kernel.sched_base_slice_ns=*)
                v=${s#*=}
                case $v in '' | *[!0-9]*) return 1 ;; esac
                echo "$v" 2>/dev/null >$LC_SLICE && [ "$(cat $LC_SLICE)" = "$v" ] || return 1 ;;
            *) echo "$s" 2>/dev/null >$LC_FEAT || return 1 ;;
        esac
    done
}

# ctxt, then the /proc/schedstat sums (version 15+ cpu lines: yld_count,
# legacy 0, sched_count, sched_goidle, ttwu_count, ttwu_local, rq_cpu_time,
# run_delay, pcount).
lc_counters() {
    awk '/^ctxt/ {c = $2} END {printf "%.0f ", c}' /proc/stat
    awk '/^cpu[0-9]/ {y += $2; s += $4; g += $5; w += $6; l += $7; d += $9; p += $10}
        END {printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", s, g, w, l, d / 1000, p, y}' /proc/schedstat
}

# Where the run's time went, machine-wide (counter order as printed by
# lc_counters2's delta): rq_cpu_time summed over CPUs (/proc/schedstat, ns:
# the time tasks other than the idle task were current), idle and irq +
# softirq time (/proc/stat's cpu line, USER_HZ ticks: idle + iowait, irq +
# softirq), the local timer (ticks and hrtimers: LOC), reschedule (RES),
# function call (CAL) and TLB shootdown (TLB) interrupts (/proc/interrupts,
# summed over CPUs), and the TIMER, SCHED (balancing), HRTIMER and RCU
# softirqs (/proc/softirqs).
lc_counters2() {
    {
        awk '/^cpu[0-9]/ {t += $8} END {printf "%.0f ", t}' /proc/schedstat
        awk '/^cpu / {printf "%.0f %.0f ", $5 + $6, $7 + $8}' /proc/stat
        for k in LOC: RES: CAL: TLB:; do
            awk -v k=$k '$1 == k {for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) t += $i} END {printf "%.0f ", t}' /proc/interrupts
        done
        for k in TIMER: SCHED: HRTIMER: RCU:; do
            awk -v k=$k '$1 == k {for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) t += $i} END {printf "%.0f ", t}' /proc/softirqs
        done
    }
    echo
}

lc_counters2_delta() { # "BEFORE" "AFTER" -> counters
    echo "$1 $2" | awk '{printf "cpu_time_us=%.0f idle_ticks=%.0f irq_ticks=%.0f irq_loc=%.0f irq_res=%.0f irq_cal=%.0f irq_tlb=%.0f softirq_timer=%.0f softirq_sched=%.0f softirq_hrtimer=%.0f softirq_rcu=%.0f",
        ($12 - $1) / 1000, $13 - $2, $14 - $3, $15 - $4, $16 - $5, $17 - $6, $18 - $7, $19 - $8, $20 - $9, $21 - $10, $22 - $11}'
}

lc_metrics() { # OUTFILE -> "metrics;extra counters;nvcsw;nivcsw;status"
    awk '
        /^lcbench: / { sub(/^lcbench: /, ""); n = index($0, " | ");
            if (n) { m = substr($0, 1, n - 1); c = substr($0, n + 3) } else m = $0; next }
        /^Time: / { m = sprintf("time_s=%.4f", $2) }
        /Total time:/ { m = sprintf("time_s=%.4f", $3) }
        /usecs\/op/ { m = sprintf("usecs_per_op=%.4f ops_per_s=%.4f", $1, 1e6 / $1) }
        /^round trip / { m = sprintf("usecs_per_op=%.4f ops_per_s=%.4f", $3 / 1000, 1e9 / $3) }
        /^T: *0 / { a = $0; sub(/.*Avg: */, "", a); sub(/ .*/, "", a);
            x = $0; sub(/.*Max: */, "", x); sub(/ .*/, "", x);
            m = sprintf("lat_avg_us=%.4f lat_max_us=%.4f", a, x) }
        /^rus: / { for (i = 2; i <= NF; i++) { split($i, kv, "="); r[kv[1]] = kv[2] } }
        END { if (r["cpu_us"] != "") c = c (c == "" ? "" : " ") "task_cpu_us=" r["cpu_us"] " wall_us=" int(r["wall_ns"] / 1000)
            printf "%s;%s;%s;%s;%s\n", m, c, r["nvcsw"], r["nivcsw"], r["status"] }' "$1"
}

lc_compare() { # RUNS WARMUP LABEL CMD CONFIGS
    runs=$1 warm=$2 label=$3 cmd=$4
    old_ifs=$IFS
    IFS='|'
    set -- $5
    IFS=$old_ifs
    n=$#
    i=0
    for c in "$@"; do
        i=$((i + 1))
        eval "lc_cfg_$i=\$c"
        lc_restore
        if ! lc_apply "$c"; then
            lc_restore
            echo "compare: error: config $i '$c' refused by this kernel; '$label' not run"
            return 1
        fi
    done
    lc_restore
    rounds=$((warm + runs))
    total=$((rounds * n))
    echo "compare: $n config(s) x $runs run(s) (+$warm warmup) of '$label', rotated order, seed ${lc_seed:-1}"
    echo "compare: linux command: $cmd"
    index=0 kept=0 r=0
    while [ $r -lt $rounds ]; do
        k=0
        while [ $k -lt $n ]; do
            ci=$(((r + k) % n))
            index=$((index + 1))
            eval "cfg=\$lc_cfg_$((ci + 1))"
            tag=$(printf "\\$(printf %o $((65 + ci)))")
            lc_restore
            lc_apply "$cfg"
            lc_rand
            usleep $((lc_rng % 4000))
            [ -n "$lc_trace" ] && lc_trace_start "${cmd%% *}"
            before2=$(lc_counters2)
            before=$(lc_counters)
            lcbench rus sh -c "$cmd" >/tmp/lc.out 2>&1
            after=$(lc_counters)
            after2=$(lc_counters2)
            [ -n "$lc_trace" ] && lc_trace_stop
            lc_metrics /tmp/lc.out >/tmp/lc.m
            IFS=';' read -r met extra nv niv st </tmp/lc.m
            if [ "${st:-1}" != 0 ] || [ -z "$met" ]; then
                echo "compare: run $index/$total failed (status ${st:-?}), not kept; its output:"
                sed 's/^/  | /' /tmp/lc.out | tail -5
                k=$((k + 1))
                continue
            fi
            cnt=$(echo "$before $after" | awk '{printf "switches=%.0f sched_calls=%.0f goidle=%.0f wakeups=%.0f wakeups_local=%.0f run_delay_us=%.0f timeslices=%.0f yields=%.0f",
                $9 - $1, $10 - $2, $11 - $3, $12 - $4, $13 - $5, $14 - $6, $15 - $7, $16 - $8}')
            cnt="$cnt $(lc_counters2_delta "$before2" "$after2")"
            word=run
            [ $r -lt $warm ] && word=warmup
            [ $r -ge $warm ] && kept=$((kept + 1))
            echo "$word $index/$total cfg $tag $cfg: $met | $cnt task_nvcsw=$nv task_nivcsw=$niv $extra"
            [ -n "$lc_trace" ] && lc_trace_print "$index/$total"
            k=$((k + 1))
        done
        r=$((r + 1))
    done
    lc_restore
    echo "compare: $kept run(s) kept, $((warm * n)) warmup dropped"
    echo "compare: features and preempt model restored"
}

# Waits until the machine is idle: after boot, kernel threads keep CPUs
# busy for a few seconds (measured at 1 CPU: spinners got only 40% of the
# CPU in the first runs), which would land in the first runs. Idle means
# >= 95% of the CPU time idle over 1 s (the probe's own awk runs are in the
# window), three times in a row; at most 30 s.
# Prints how long it took and the threads that used the most CPU so far.
lc_settle() {
    t=0 calm=0
    while [ $calm -lt 3 ] && [ $t -lt 30 ]; do
        a=$(awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat)
        usleep 1000000
        b=$(awk '/^cpu / {print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9}' /proc/stat)
        if echo "$a $b" | awk '{exit !($4 > $2 && ($3 - $1) * 100 >= 95 * ($4 - $2))}'; then
            calm=$((calm + 1))
        else
            calm=0
        fi
        t=$((t + 1))
    done
    echo "lc: settled after $t s ($calm calm windows); busiest threads so far (ticks):"
    for d in /proc/[0-9]*/task/[0-9]*; do
        [ -r "$d/stat" ] && awk '{sub(/^[^)]*\) /, ""); print $12 + $13, "'"${d##*/}"'"}' "$d/stat" 2>/dev/null |
            { read -r ticks tid; echo "$ticks $tid $(cat "$d/comm" 2>/dev/null)"; }
    done | sort -rn | head -3 | sed 's/^/lc:   /'
}

# Task groups through cgroup v2's cpu controller (the `cgroup` part of
# linux-compare.sh; CONFIG_FAIR_GROUP_SCHED):
# lc_cgroup SMP CASE MS CPU WEIGHT_A WEIGHT_B TASKS_A TASKS_B
#   runs only when the machine has SMP CPUs (one plan serves every SMP).
#   Mounts cgroup2 on /sys/fs/cgroup (once), enables the cpu controller for
#   the root's children, makes groups A and B afresh with those cpu.weight
#   values (read back), then after a pause of 0..4 ms from lc.seed runs
#   TASKS_A nice-0 spinners in A and TASKS_B in B for MS ms (`lcbench spin`,
#   each spinner joins its group before it starts; CPU: all pinned to that
#   CPU, `-`: not pinned). Prints lcbench's lines (`cgtask:` per spinner:
#   CPU time and /proc/PID/stat utime/stime ticks), then one line
#     cgroup: case=CASE cpus=N ms=MS cpu=CPU weight_A=W weight_B=W tasks_A=N
#       tasks_B=N status=S usage_A_usec=U usage_B_usec=U utime_A_ticks=T
#       utime_B_ticks=T stime_A_ticks=T stime_B_ticks=T cpu_A_ms=X cpu_B_ms=X
#   (usage: the difference of each group's cpu.stat usage_usec over the run;
#   utime / stime / cpu: sums over the group's spinners), and removes the
#   groups. A failure prints `cgroup: case=CASE error=WORD ...`.
LC_CG=/sys/fs/cgroup
lc_cg_usage() { awk '$1 == "usage_usec" {print $2}' "$LC_CG/$1/cpu.stat"; }
lc_cgroup() {
    [ "$(nproc)" = "$1" ] || return 0
    local case=$2 ms=$3 cpu=$4 wa=$5 wb=$6 na=$7 nb=$8 g w specs="" i st ua0 ub0 ua1 ub1 sums
    if [ ! -f $LC_CG/cgroup.controllers ]; then
        mount -t cgroup2 cgroup2 $LC_CG || { echo "cgroup: case=$case error=mount (mount -t cgroup2 failed)"; return 1; }
    fi
    grep -qw cpu $LC_CG/cgroup.controllers || { echo "cgroup: case=$case error=no_cpu_controller controllers=$(cat $LC_CG/cgroup.controllers)"; return 1; }
    if ! grep -qw cpu $LC_CG/cgroup.subtree_control; then
        echo +cpu >$LC_CG/cgroup.subtree_control || { echo "cgroup: case=$case error=subtree_control (+cpu refused)"; return 1; }
    fi
    for g in A B; do
        [ -d $LC_CG/$g ] && rmdir $LC_CG/$g
        mkdir $LC_CG/$g || { echo "cgroup: case=$case error=mkdir_$g"; return 1; }
    done
    echo "$wa" >$LC_CG/A/cpu.weight && echo "$wb" >$LC_CG/B/cpu.weight
    w="$(cat $LC_CG/A/cpu.weight) $(cat $LC_CG/B/cpu.weight)"
    [ "$w" = "$wa $wb" ] || { echo "cgroup: case=$case error=weight (read back '$w', wanted '$wa $wb')"; rmdir $LC_CG/A $LC_CG/B; return 1; }
    i=0
    while [ $i -lt "$na" ]; do specs="$specs 0@$LC_CG/A"; i=$((i + 1)); done
    i=0
    while [ $i -lt "$nb" ]; do specs="$specs 0@$LC_CG/B"; i=$((i + 1)); done
    lc_rand
    usleep $((lc_rng % 4000))
    ua0=$(lc_cg_usage A) ub0=$(lc_cg_usage B)
    if [ "$cpu" = - ]; then lcbench spin -d "$ms" $specs >/tmp/cg.out 2>&1
    else lcbench spin -d "$ms" -c "$cpu" $specs >/tmp/cg.out 2>&1; fi
    st=$?
    ua1=$(lc_cg_usage A) ub1=$(lc_cg_usage B)
    cat /tmp/cg.out
    sums=$(awk -v a="$LC_CG/A" '/^cgtask: / {
            g = "B"; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            if (v["cgroup"] == a) g = "A"
            u[g] += v["utime_ticks"]; s[g] += v["stime_ticks"]; c[g] += v["cpu_ms"] }
        END { printf "utime_A_ticks=%d utime_B_ticks=%d stime_A_ticks=%d stime_B_ticks=%d cpu_A_ms=%.3f cpu_B_ms=%.3f",
            u["A"], u["B"], s["A"], s["B"], c["A"], c["B"] }' /tmp/cg.out)
    echo "cgroup: case=$case cpus=$(nproc) ms=$ms cpu=$cpu weight_A=$wa weight_B=$wb tasks_A=$na tasks_B=$nb status=$st usage_A_usec=$((ua1 - ua0)) usage_B_usec=$((ub1 - ub0)) $sums"
    rmdir $LC_CG/A $LC_CG/B || echo "cgroup: case=$case error=rmdir"
}

lc_check() { # NAME OK(0/1) DETAIL
    if [ "$2" = 0 ]; then echo "lc: check $1 ok: $3"; else echo "lc: check $1 FAIL: $3"; fi
}

# The smoke run of `make test-linux`.
lc_smoke() {
    grep -qw NO_NEXT_BUDDY $LC_FEAT
    lc_check boot-default-no-next-buddy $? "$(tr ' ' '\n' <$LC_FEAT | grep NEXT_BUDDY)"
    echo NEXT_BUDDY >$LC_FEAT && tr ' ' '\n' <$LC_FEAT | grep -qx NEXT_BUDDY
    lc_check flip-next-buddy $? "$(tr ' ' '\n' <$LC_FEAT | grep NEXT_BUDDY)"
    before=$(cat $LC_FEAT)
    ! echo NO_SUCH_FEATURE 2>/dev/null >$LC_FEAT && [ "$(cat $LC_FEAT)" = "$before" ]
    lc_check bad-feature-refused $? "unchanged after NO_SUCH_FEATURE"
    echo NO_NEXT_BUDDY >$LC_FEAT && tr ' ' '\n' <$LC_FEAT | grep -qx NO_NEXT_BUDDY
    lc_check flip-back $? "$(tr ' ' '\n' <$LC_FEAT | grep NEXT_BUDDY)"
    if [ -e $LC_PRE ]; then
        echo lazy >$LC_PRE && grep -q '(lazy)' $LC_PRE
        lc_check preempt-lazy $? "$(cat $LC_PRE)"
    else
        # no PREEMPT_DYNAMIC (Debian's arm64): a preemptible build, whose
        # model initramfs.sh found lazy in the package's config
        uname -v | grep -qw PREEMPT
        lc_check preempt-lazy $? "no sched/preempt, built in; uname -v: $(uname -v)"
    fi
    lc_restore
    hackbench -p -g 1 -l 20 >/tmp/hb.out 2>&1
    st=$?
    t=$(awk '/^Time: / {print $2}' /tmp/hb.out)
    [ $st = 0 ] && [ -n "$t" ]
    lc_check hackbench $? "status $st, Time: ${t:-none}"
    lcbench spin -d 400 -c 0 0 5 >/tmp/spin.out 2>&1
    share=$(awk '/^lcbench: / {sub(/.*share0_pct=/, ""); print $1}' /tmp/spin.out)
    # nice 0 vs 5 on one CPU: 1024 / (1024 + 335) = 75.35%; bound +-5 points
    awk -v s="${share:-0}" 'BEGIN {exit !(s > 70.35 && s < 80.35)}'
    lc_check spin-share $? "nice 0 vs 5 share ${share:-none}% (ideal 75.35, bound 70.35..80.35)"
    # task groups: cgroup2 mounted, the cpu controller on, 1 spinner in A and
    # 10 in B at cpu.weight 100 each, all on CPU 0: A's share of the groups'
    # time (cpu.stat usage_usec), ideal 50%, bound +-5 points
    lc_cgroup "$(nproc)" smoke 400 0 100 100 1 10 >/tmp/cg.smoke 2>&1
    share=$(awk '/^cgroup: case=smoke / {for (i = 2; i <= NF; i++) {split($i, kv, "="); v[kv[1]] = kv[2]}
        if (v["usage_A_usec"] + v["usage_B_usec"] > 0) printf "%.2f", 100 * v["usage_A_usec"] / (v["usage_A_usec"] + v["usage_B_usec"])}' /tmp/cg.smoke)
    awk -v s="${share:-0}" 'BEGIN {exit !(s > 45 && s < 55)}'
    lc_check cgroup-share $? "group A (1 spinner) vs B (10), cpu.weight 100 each, share ${share:-none}% (ideal 50, bound 45..55)$(grep -m1 -o 'error=.*' /tmp/cg.smoke | sed 's/^/; /')"
}

# The latency figures (cyclictest, pipe round trips on one CPU and across
# two), then hackbench over pipes: after every other repetition, since the
# exit of its 80 processes disturbs a cyclictest run just after it (maxima
# of 1.4-1.6 ms were seen).
lc_latency() { # REPS LOOPS
    r=0
    while [ $r -lt "${1:-3}" ]; do
        cyclictest -t1 -i500 -l1000 -p50 -q
        piperr "${2:-2000}" 0 0
        [ "$(nproc)" -gt 1 ] && piperr "${2:-2000}" 0 1
        r=$((r + 1))
    done
    r=0
    while [ $r -lt "${1:-3}" ]; do
        hackbench -p -g 2 -l 100
        r=$((r + 1))
    done
}

# What the scheduler sees of the machine, one "topo:" line per fact: each
# CPU's package and core ids, each cache level's shared_cpu_list (the last
# level decides `cpus_share_cache`, hence whether a remote wakeup goes
# through the wake list), the sched domains debugfs lists (name, flags) and
# /proc/schedstat's domain masks.
lc_topology() {
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        n=${c##*/}
        t=$c/topology
        echo "topo: $n package $(cat $t/physical_package_id 2>/dev/null) die $(cat $t/die_id 2>/dev/null) core $(cat $t/core_id 2>/dev/null) siblings $(cat $t/thread_siblings_list 2>/dev/null) core_siblings $(cat $t/core_siblings_list 2>/dev/null)"
        for i in $c/cache/index*; do
            [ -d "$i" ] || continue
            echo "topo: $n cache ${i##*/} level $(cat $i/level) $(cat $i/type) size $(cat $i/size 2>/dev/null) shared_cpu_list $(cat $i/shared_cpu_list)"
        done
        for d in /sys/kernel/debug/sched/domains/$n/domain*; do
            [ -d "$d" ] || continue
            echo "topo: $n ${d##*/} name $(cat $d/name 2>/dev/null) flags $(cat $d/flags 2>/dev/null)"
        done
    done
    awk '/^version/ {print "topo: schedstat " $0} /^cpu[0-9]/ {print "topo: schedstat " $1} /^domain/ {print "topo: schedstat", $1, $2, $3}' /proc/schedstat
    grep -m1 'model name' /proc/cpuinfo | sed 's/^/topo: /'
}

# The two-level topology rows (the `smt` part of linux-compare.sh, e.g. on
# -smp 4,threads=2): where the scheduler puts CPU hogs, a pipe pair and
# hackbench when CPUs share a core.
# lc_smt_topo: once per boot, `smt: topo` lines: each CPU's core (the first
#   CPU of its thread_siblings_list) and cpu0's sched domains
#   (/proc/schedstat: level, name, span; debugfs lists them only under
#   sched_verbose), so the summary knows which CPUs share a core and that
#   Linux built both levels.
# lc_smt ROW CMD [COMM]: after a pause of 0..4 ms from lc.seed, runs CMD (sh -c)
#   and prints its output, then one line
#     smt: row=ROW status=S up_ms=U ctxt=N cpuK_ms=B ... mig_all=N
#       mig_all_cross=N mig_wl=N mig_wl_cross=N LEVEL.KEY=N ...
#   up_ms: /proc/uptime's delta (10 ms steps); cpuK_ms: CPU K's
#   rq_cpu_time delta (/proc/schedstat: time tasks ran there, ns -> ms);
#   mig_*: sched_migrate_task events over the run (a histogram trigger by
#   comm, orig_cpu, dest_cpu): all tasks, or the workload's (comm =
#   COMM, by default CMD's first word), and of those the ones between
#   cores (_cross); per domain
#   level (LEVEL = its name, SMT or MC; summed over CPUs), /proc/schedstat
#   version 17's deltas: lb_{idle,busy,newidle} (load_balance calls per
#   idle type), gained_* (tasks pulled), failed_*, balanced_*, alb_count,
#   alb_pushed (active balance), wake_remote, move_affine, move_balance
#   (ttwu_*), and cpu.ttwu, cpu.ttwu_local (the CPU lines' ttwu_count and
#   ttwu_local, summed over CPUs); others_ms: the CPU time (utime + stime, USER_HZ steps) that
#   threads alive before and after the run used during it, by comm (the
#   workload's own children have exited by then: not counted).
lc_smt_topo() {
    local c n d
    for c in /sys/devices/system/cpu/cpu[0-9]*; do
        n=${c##*/}
        echo "smt: topo $n core $(cut -d, -f1 <$c/topology/thread_siblings_list | cut -d- -f1) siblings $(cat $c/topology/thread_siblings_list)"
    done
    awk '/^version/ {print "smt: topo schedstat", $0} /^domain/ {if (!seen[$1]++) print "smt: topo schedstat", $1, $2, $3}' /proc/schedstat
}
lc_smt_snap() { # key value lines
    awk '/^ctxt/ {print "ctxt", $2}' /proc/stat
    awk '{printf "up_ms %.0f\n", $1 * 1000}' /proc/uptime
    awk '/^cpu[0-9]/ {print $1 "_ns", $8; s["cpu.ttwu"] += $6; s["cpu.ttwu_local"] += $7}
        /^domain/ { l = $2; i = NF - 44
            split("idle busy newidle", t, " ")
            for (k = 0; k < 3; k++) { b = i + 11 * k
                s[l ".lb_" t[k + 1]] += $b; s[l ".balanced_" t[k + 1]] += $(b + 1)
                s[l ".failed_" t[k + 1]] += $(b + 2); s[l ".gained_" t[k + 1]] += $(b + 7) }
            s[l ".alb_count"] += $(NF - 11); s[l ".alb_pushed"] += $(NF - 9)
            s[l ".wake_remote"] += $(NF - 2); s[l ".move_affine"] += $(NF - 1); s[l ".move_balance"] += $NF }
        END { for (k in s) print k, s[k] }' /proc/schedstat
}
lc_smt_tasks() { # every thread: its stat path, comm, utime + stime (USER_HZ ticks)
    awk '{ c = $0; sub(/^[^(]*\(/, "", c); sub(/\) [^)]*$/, "", c); gsub(/ /, "_", c)
        l = $0; sub(/^.*\) /, "", l); split(l, f, " "); print "t", FILENAME, c, f[12] + f[13] }' \
        /proc/[0-9]*/task/[0-9]*/stat 2>/dev/null
}
lc_smt() { # ROW CMD [COMM]
    local row=$1 cmd=$2 c st trig
    [ -d $LC_TR/events ] || mount -t tracefs nodev $LC_TR
    c=$(echo "${3:-${cmd%% *}}" | cut -c1-15)
    trig="hist:keys=comm,orig_cpu,dest_cpu:vals=hitcount:size=2048"
    lc_rand
    usleep $((lc_rng % 4000))
    echo "$trig" >>$LC_TR/events/sched/sched_migrate_task/trigger || echo "smt: error: migrate trigger refused"
    lc_smt_tasks >/tmp/smt.t0
    lc_smt_snap >/tmp/smt.s0
    sh -c "$cmd" >/tmp/smt.out 2>&1
    st=$?
    lc_smt_snap >/tmp/smt.s1
    lc_smt_tasks >/tmp/smt.t1
    cp $LC_TR/events/sched/sched_migrate_task/hist /tmp/smt.h
    echo "!$trig" >>$LC_TR/events/sched/sched_migrate_task/trigger
    cat /tmp/smt.out
    {
        echo "row $row status $st"
        awk '{print "a", $0}' /tmp/smt.s0
        awk '{print "b", $0}' /tmp/smt.s1
        for f in /sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list; do
            n=${f#/sys/devices/system/cpu/cpu}
            echo "core ${n%%/*} $(cut -d, -f1 <$f | cut -d- -f1)"
        done
        sed -n 's/^{ *comm: *\([^ ,]*\) *, *orig_cpu: *\([0-9]*\), *dest_cpu: *\([0-9]*\) *} *hitcount: *\([0-9]*\).*/mig \1 \2 \3 \4/p' /tmp/smt.h
        sed 's/^t /t0 /' /tmp/smt.t0
        sed 's/^t /t1 /' /tmp/smt.t1
    } | awk -v wl="$c" -v hz="$(getconf CLK_TCK 2>/dev/null || echo 100)" '
        $1 == "t0" { t0[$2] = $4; next }
        $1 == "t1" { d = $4 - t0[$2]; if (d > 0) oth[$3] += d; next }
        $1 == "row" { line = "smt: row=" $2 " status=" $4; next }
        $1 == "a" { a[$2] = $3; next }
        $1 == "b" { b[$2] = $3; next }
        $1 == "core" { core[$2] = $3; next }
        $1 == "mig" { x = core[$3] != core[$4]; ma += $5; mac += x * $5
            if ($2 == wl) { mw += $5; mwc += x * $5 } next }
        END {
            line = line " up_ms=" (b["up_ms"] - a["up_ms"]) " ctxt=" (b["ctxt"] - a["ctxt"])
            for (k = 0; ("cpu" k "_ns") in b; k++) line = line sprintf(" cpu%d_ms=%.1f", k, (b["cpu" k "_ns"] - a["cpu" k "_ns"]) / 1e6)
            line = line sprintf(" mig_all=%d mig_all_cross=%d mig_wl=%d mig_wl_cross=%d", ma, mac, mw, mwc)
            o = ""; for (k in oth) o = o (o == "" ? "" : ",") k ":" oth[k] * 1000 / hz
            line = line " others_ms=" (o == "" ? "-" : o)
            n = 0; for (k in b) if (k ~ /\./) keys[++n] = k
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (keys[j] < keys[i]) { t = keys[i]; keys[i] = keys[j]; keys[j] = t }
            for (i = 1; i <= n; i++) line = line " " keys[i] "=" (b[keys[i]] - a[keys[i]])
            print line }'
}
