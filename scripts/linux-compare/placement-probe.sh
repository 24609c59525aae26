# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# splits, in Linux 7.x, each hackbench wakeup's placement
# (`select_task_rq_fair`) by the rule that chose the target and by what
# `select_idle_sibling` returned, the breakdown ours' `compare` prints as
# `wa_*` / `sis_*` / `placed_local` (sched/src/smp/placement.rs). For
# `hackbench -g 2 -l 100` (sockets; HB_ARGS) under CONFIGS (default
# "default"): UNTRACED (2) runs with /proc/schedstat deltas only, then RUNS
# (3) traced runs each.
#
# `wake_affine`, `wake_wide`, `select_idle_sibling` and `select_idle_cpu`
# are inlined into `select_task_rq_fair` in Debian's build (none is in its
# BTF), so the rules are read from what the fast path calls outside
# fair.c, each probed between the entry and exit of `select_task_rq_fair`
# on the same CPU (irqs are off there):
#   select_task_rq_fair entry/exit (fprobes, BTF): the wakee, prev_cpu,
#     wake_flags, the wakee's wakee_flips and recent_used_cpu; the CPU
#     returned;
#   cpus_share_cache(a, b) (core.c): called as (this, prev) by
#     wake_affine_idle only when the waker's CPU is idle; as (prev, target)
#     by select_idle_sibling only when prev != target and the target is not
#     idle; as (recent_used_cpu, target) only when the previous CPU was not
#     taken either and recent_used_cpu differs from both;
#   task_h_load(p) (fair.c, not inlined): called by wake_affine_weight only,
#     within the fast path: so WA_IDLE gave no answer; with the task's CPU's
#     root load (cpu_load()) read through p->se.cfs_rq->rq, the waker's
#     (sync: task_h_load(current) first) and the wakee's.
# The target (the waker's CPU or prev) is the second argument of the
# (prev, target) call when there is one; without it, either the target was
# idle (returned at once) or it is prev. Per wakeup (the waker's CPU =
# the event's CPU):
#   rule: not_asked (prev == waker's CPU); idle_this (the waker's CPU idle);
#     weight_this / weight_prev (task_h_load called); otherwise sync (the
#     target is the waker's CPU), or prev_or_wide (the target is prev:
#     WA_IDLE's idle prev, or wake_wide; `wakee_flips` >= the LLC size is
#     needed for wake_wide, counted as `wide_possible`);
#   wake_wide itself, recomputed: the waker's (current's) wakee_flips are
#     not an argument, so awk follows each task's record_wakee() (halved
#     when jiffies passed its stamp + HZ (250), +1 for a new last wakee)
#     from its last state read when it was itself a wakee (flips, stamp,
#     last wakee's pid; `sj` event); `ww_*` counts wake_wide's answer
#     (unknown until the waker was seen as a wakee), `fl_s_*` the wakee's
#     flips by size, and the mean flips of each side;
#   pick: target (the target returned without a (prev, target) call),
#     prev, recent, scan (another CPU), none (the target returned after
#     the checks), or target_or_none (prev == target, no later call:
#     recent_used_cpu equal to prev or target hides whether the target was
#     idle).
# Summed by awk in the guest: `placement CONFIG: ...` lines. Also prints
# the sched domains and, per run, /proc/schedstat's ttwu, ttwu_local and the
# domains' ttwu_wake_remote, ttwu_move_affine.
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/placement-probe.sh
#   MEM=2G SMP=4 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run)
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
HB="hackbench ${HB_ARGS:--g 2 -l 100}"
pp_add() { echo "$1" >>$T/dynamic_events || { echo "placement: error: probe refused: $1"; tail -2 $T/error_log; return 1; }; }
pp_add 'f:lc/sr select_task_rq_fair wpid=p->pid:s32 prev=prev_cpu:s32 wf=wake_flags:u32 fl=p->wakee_flips:u32 ruc=p->recent_used_cpu:s32'
pp_add 'f:lc/srr select_task_rq_fair%return wpid=p->pid:s32 ret=$retval:s32 ruc=p->recent_used_cpu:s32'
# The wakee's flip state (a separate event: a NULL last_wakee faults).
pp_add 'f:lc/sj select_task_rq_fair j=@jiffies_64:u64 ts=p->wakee_flip_decay_ts:u64 lwp=p->last_wakee->pid:s32'
pp_add 'f:lc/sc cpus_share_cache a=$arg1:s32 b=$arg2:s32'
pp_add 'f:lc/thl task_h_load%return tpid=p->pid:s32 tcpu=p->se.cfs_rq->rq->cpu:s32 rql=p->se.cfs_rq->rq->cfs.avg.load_avg:u64 h=$retval:u64'
echo 'comm == "hackbench"' >$T/events/sched/sched_waking/filter
echo 'comm == "hackbench"' >$T/events/sched/sched_wakeup/filter
echo 65536 >$T/buffer_size_kb || echo "placement: error: buffer_size_kb"
for d in /sys/kernel/debug/sched/domains/cpu0/domain*; do
    echo "placement: cpu0 $(basename $d): $(cat $d/name 2>/dev/null) flags $(cat $d/flags 2>/dev/null)"
done
echo "placement: autogroup $(cat /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null)"
pp_stat() { # ttwu ttwu_local, then per domain level: wake_remote move_affine
    awk '/^cpu[0-9]/ {w += $6; l += $7} /^domain/ {r[$1] += $(NF-2); a[$1] += $(NF-1)}
        END {printf "%.0f %.0f", w, l; for (d in r) printf " %s %.0f %.0f", d, r[d], a[d]; printf "\n"}' /proc/schedstat
}
pp_delta() { # BEFORE AFTER: "ttwu T local L (S%) domainN remote R affine A ..."
    echo "$1 | $2" | awk '{n = index($0, "|"); split(substr($0, 1, n - 1), a, " "); split(substr($0, n + 1), b, " ")
        w = b[1] - a[1]; l = b[2] - a[2]; printf "ttwu %d local %d (%.1f%%)", w, l, w ? 100 * l / w : 0
        for (i = 3; i + 2 <= length(b); i += 3) printf ", %s remote %d affine %d", b[i], b[i + 1] - a[i + 1], b[i + 2] - a[i + 2]
        printf "\n" }'
}
pp_summary() { # CONFIG
    awk -v cfg="$1" '
    function parse(   i, j) { delete F; for (i = 5; i <= NF; i++) { j = index($i, "="); if (j) F[substr($i, 1, j - 1)] = substr($i, j + 1) } }
    function cpu(   i) { for (i = 1; i <= 3; i++) if ($i ~ /^\[[0-9]+\]$/) return substr($i, 2, length($i) - 2) + 0; return -1 }
    function bump(k) { n[k]++ }
    { parse() }
    / sched_waking: / { hb[F["pid"]] = 1; wakings++; next }
    / sched_wakeup: / { if (F["pid"] in hb) wakeups++; next }
    / sj: / { c = cpu(); sjj[c] = F["j"] + 0; sjts[c] = F["ts"] + 0; sjlw[c] = F["lwp"] + 0; havesj[c] = 1; next }
    / sr: / { c = cpu(); p = F["wpid"] + 0; wf = F["wf"] + 0; w = $1; sub(/.*-/, "", w)
        mir[c] = (int(wf / 8) % 2 == 1); mw[c] = w + 0; mp[c] = p; msl[c] = F["fl"] + 0
        if (!(p in hb) || int(wf / 8) % 2 == 0) { inw[c] = 0; next }
        inw[c] = 1; slave[c] = F["fl"] + 0; prev[c] = F["prev"] + 0; sync[c] = int(wf / 16) % 2; fl[c] = F["fl"] + 0; ruc[c] = F["ruc"] + 0
        nsc[c] = 0; pt[c] = -1; rc[c] = 0; ti[c] = 0; nthl[c] = 0; next }
    / sc: / { c = cpu(); if (!inw[c]) next; a = F["a"] + 0; b = F["b"] + 0; nsc[c]++
        if (nsc[c] == 1 && a == c && b == prev[c] && a != b) ti[c] = 1
        else if (a == prev[c] && pt[c] < 0 && !rc[c]) pt[c] = b
        else if (a == ruc[c]) rc[c] = 1
        next }
    / thl: / { c = cpu(); if (!inw[c]) next; nthl[c]++
        if (F["tcpu"] + 0 == c) { thisl += F["rql"]; curl += F["h"]; nthis++ }
        else { prevl += F["rql"]; taskl += F["h"]; nprev++ }
        next }
    / srr: / { c = cpu()
        if (mir[c]) { # record_wakee() on the waker, wake_wide(), then the wakee state
            mir[c] = 0; w = mw[c]; p = mp[c]; sl = msl[c]; ww = -2
            if (havesj[c]) {
                j = sjj[c]; ww = -1
                if (w in KF) {
                    if (j > KT[w] + 250) { KF[w] = int(KF[w] / 2); KT[w] = j }
                    if (KL[w] != p) { KL[w] = p; KF[w]++ }
                    ww = !(sl < 4 || KF[w] < sl * 4); master[c] = KF[w]
                }
                KF[p] = sl; KT[p] = sjts[c]; KL[p] = sjlw[c]
            }
            wide[c] = ww; havesj[c] = 0
        }
        if (!inw[c]) next; inw[c] = 0
        r = F["ret"] + 0; pv = prev[c]; total++
        if (r == c) local++
        if (pv == c) placed_prev_this++
        # the target
        if (pt[c] >= 0) tg = pt[c]
        else if (r == c || r == pv) tg = r
        else tg = pv
        if (pv == c) rule = "not_asked"
        else if (ti[c]) rule = "idle_this"
        else if (nthl[c]) rule = (tg == c) ? "weight_this" : "weight_prev"
        else rule = (tg == c) ? "sync" : "prev_or_wide"
        if (rule == "prev_or_wide" && fl[c] >= 4) bump("wide_possible")
        s = slave[c]; bump(s < 4 ? "fl_s_lt4" : s < 16 ? "fl_s_4_15" : s < 64 ? "fl_s_16_63" : "fl_s_ge64"); ssum += s
        if (wide[c] >= 0) { bump("ww_" wide[c] "_" rule); msum += master[c]; mn++ } else bump("ww_unknown")
        bump("wa_" rule); if (r == c) bump("local_" rule)
        if (sync[c]) bump("sync_flag")
        if (pt[c] < 0 && tg != pv && r == tg) pick = "target"
        else if (r == pv && tg != pv) pick = "prev"
        else if (rc[c] && r == ruc[c]) pick = "recent"
        else if (r != tg) pick = "scan"
        else if (pt[c] >= 0 || rc[c]) pick = "none"
        else pick = "target_or_none"
        bump("sis_" pick)
        next }
    END {
        printf "placement %s: sched_waking %d, sched_wakeup %d, select_task_rq_fair (TTWU, hackbench wakees) %d, placed on the waker CPU %d (%.1f%%), prev == waker CPU %d\n", cfg, wakings, wakeups, total, local, total ? 100 * local / total : 0, placed_prev_this
        printf "placement %s:", cfg; for (k in n) printf " %s=%d", k, n[k]; printf "\n"
        if (total) printf "placement %s: wakee flips mean %.1f; waker flips (followed) mean %.1f over %d\n", cfg, ssum / total, mn ? msum / mn : 0, mn
        if (nthis) printf "placement %s: WA_WEIGHT inputs, mean: cpu_load(this) %.1f, task_h_load(current) %.1f (%d)\n", cfg, thisl / nthis, curl / nthis, nthis
        if (nprev) printf "placement %s: WA_WEIGHT inputs, mean: cpu_load(prev) %.1f, task_h_load(p) %.1f (%d)\n", cfg, prevl / nprev, taskl / nprev, nprev
    }' $T/trace
}
pp_events() { # 1|0
    for e in lc sched/sched_waking sched/sched_wakeup; do echo "$1" >$T/events/$e/enable; done
}
pp_run() { # CONFIG TRACED
    lc_restore
    lc_apply "$1"
    echo >$T/trace
    s0=$(pp_stat)
    [ "$2" = 1 ] && pp_events 1
    $HB >/tmp/pp.out 2>&1
    [ "$2" = 1 ] && pp_events 0
    s1=$(pp_stat)
    echo "placement $1: traced $2 $(grep Time: /tmp/pp.out), events lost $(lc_ring_lost); schedstat $(pp_delta "$s0" "$s1")"
    [ "$2" = 1 ] && pp_summary "$1"
    lc_restore
}
for r in $(seq "${UNTRACED:-2}"); do
    for c in ${CONFIGS:-default}; do pp_run "$c" 0; done
done
for r in $(seq "${RUNS:-3}"); do
    for c in ${CONFIGS:-default}; do pp_run "$c" 1; done
done
