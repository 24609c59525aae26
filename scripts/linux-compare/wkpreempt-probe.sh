# A /plan.sh for the linux-compare initramfs (lc.mode=ab; sourced with /lc.sh):
# counts, in Linux 7.x, the outcome of each hackbench wakeup's
# `wakeup_preempt_fair()` by branch, and where the wakee was placed (the
# waker's CPU or another), for `hackbench -g 2 -l 100` (sockets) under
# CONFIGS (default "default"), RUNS (3) times each. fprobes with BTF fields
# (CONFIG_PROBE_EVENTS_BTF_ARGS) and two tracepoints:
#   sched_waking (on the waker's CPU) and sched_wakeup (target_cpu): the
#     hackbench wakeups and their placement;
#   wakeup_preempt_fair entry/exit: wake_flags, both slices, the wakee's
#     vruntime, deadline and se.vlag (the lag its placement used);
#   pick_eevdf exit (pick_next_entity if pick_eevdf is inlined): the
#     protect argument, cfs_rq->curr with its vruntime, deadline and vprot
#     at the pick, the pick's vruntime and deadline;
#   pick_eevdf exit again: V (cfs_rq's weighted sums, the running entity
#     counted as vruntime_eligible() does) against the running entity's
#     vruntime (V − v ≥ 0: eligible), and its run since its pick; outside
#     a wakeup (the schedule's picks), V against the picked entity's
#     vruntime and the queue's length (a plain mean over every pick,
#     any task's: one bad sample, e.g. a fetch that faulted, spoils it;
#     seen in 1 run of 3 on 2026-12-04);
#   resched_curr_lazy: a reschedule asked after the pick is the decision's
#     (the `preempt:` label), one before it is update_curr()'s.
# Branches, per wakeup that reached the decision: no pick and no request
# (an early return: a pending reschedule, a fork, a delayed wakee,...); a
# request without a pick (an idle running entity, or a NEXT_BUDDY sync
# RESCHED); the pick is the wakee (preempts; SHORT when protect = 0); the
# pick is the running entity while v < vprot (its slice protected: the
# protection return of pick_eevdf(), taken before any other candidate,
# which implies it is eligible); the pick is the running entity while
# unprotected (its deadline is the earliest eligible); another queued
# entity. Summed in the guest by awk; `wpcount CONFIG: ...` lines. The
# probes slow the runs down, so their times are not the A/B's.
#
#   scripts/linux-compare/initramfs.sh X_DIR DIR scripts/linux-compare/wkpreempt-probe.sh
#   SMP=4 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off -initrd DIR/initramfs.cpio.gz" \
#     scripts/boot/qemu.sh x86_64 DIR/vmlinuz console=ttyS0 quiet preempt=full lc.mode=ab lc.seed=1
# (X_DIR: the unpacked packages, build/linux-compare/x-sid after a linux-compare run)
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T
wp_add() { echo "$1" >>$T/dynamic_events || { echo "wpcount: error: probe refused: $1"; tail -2 $T/error_log; return 1; }; }
wp_add 'f:lc/wpf wakeup_preempt_fair'
wp_add 'f:lc/wpfr wakeup_preempt_fair%return wpid=p->pid:s32 wf=wake_flags:u32 rcpu=rq->cpu:s32 psl=p->se.slice:u64 csl=rq->donor->se.slice:u64 pv=p->se.vruntime:s64 pd=p->se.deadline:s64 pvl=p->se.vlag:s64 nq=rq->cfs.nr_queued:u32 dly=p->se.sched_delayed:u8'
pick_fields='prot=protect:u8 cur=cfs_rq->curr cv=cfs_rq->curr->vruntime:s64 cd=cfs_rq->curr->deadline:s64 cvp=cfs_rq->curr->vprot:s64 rv=$retval rvv=$retval->vruntime:s64 rvd=$retval->deadline:s64'
wp_add "f:lc/per pick_eevdf%return $pick_fields" || wp_add "f:lc/per pick_next_entity%return $pick_fields"
# The running entity's place against V at the pick, and its run since its
# pick (a separate event: a field this kernel lacks loses only it).
wp_add 'f:lc/pev pick_eevdf%return sww=cfs_rq->sum_w_vruntime:s64 sw=cfs_rq->sum_weight:u64 z=cfs_rq->zero_vruntime:s64 sh=cfs_rq->sum_shift:u32 cw=cfs_rq->curr->load.weight:u64 con=cfs_rq->curr->on_rq:u8 cv=cfs_rq->curr->vruntime:s64 cr=cfs_rq->curr->sum_exec_runtime:u64 cpr=cfs_rq->curr->prev_sum_exec_runtime:u64 nv=$retval->vruntime:s64 qn=cfs_rq->nr_queued:u32'
wp_add 'f:lc/rcl resched_curr_lazy'
echo 'comm == "hackbench"' >$T/events/sched/sched_waking/filter
echo 'comm == "hackbench"' >$T/events/sched/sched_wakeup/filter
echo 98304 >$T/buffer_size_kb || echo "wpcount: error: buffer_size_kb"
wp_summary() { # CONFIG
    awk -v cfg="$1" '
    function parse(   i, j) { delete F; for (i = 5; i <= NF; i++) { j = index($i, "="); if (j) F[substr($i, 1, j - 1)] = substr($i, j + 1) } }
    function field(name) { return F[name] }
    function cpu(   i) { for (i = 1; i <= 3; i++) if ($i ~ /^\[[0-9]+\]$/) return substr($i, 2, length($i) - 2) + 0; return -1 }
    { parse() }
    function bump(k, loc) { n[k]++; n[k "|" loc]++ }
    / sched_waking: / { waker[field("pid")] = cpu(); wakings++; next }
    / sched_wakeup: / { p = field("pid"); if (!(p in waker)) next; wk++; loc = (field("target_cpu") + 0 == waker[p]) ? "local" : "remote"; wkloc[loc]++; next }
    / wpf: / { c = cpu(); inw[c] = 1; picks[c] = 0; rb[c] = 0; ra[c] = 0; havem[c] = 0; next }
    / per: / { c = cpu(); if (!inw[c]) next; picks[c]++; prot[c] = field("prot") + 0; cur[c] = field("cur"); rv[c] = field("rv")
        rvv[c] = field("rvv") + 0; rvd[c] = field("rvd") + 0; cv[c] = field("cv") + 0; cd[c] = field("cd") + 0; cvp[c] = field("cvp") + 0; next }
    / pev: / { c = cpu(); w = field("cw") + 0; sh = field("sh") + 0
        if (sh > 0) { w = int(w / 2 ^ sh); if (w < 2) w = 2 }
        key = field("cv") - field("z"); sww = field("sww") + 0; sw = field("sw") + 0
        if (field("con") + 0) { sww += key * w; sw += w }
        if (!inw[c]) { if (sw > 0) { pk++; pm = sww / sw - (field("nv") - field("z")); pmsum += pm / 1000; pqsum += field("qn"); if (pm < 0) pinel++; if (field("qn") == 1) psingle++ }; next }
        havem[c] = (sw > 0); if (sw > 0) marg[c] = sww / sw - key; ran[c] = field("cr") - field("cpr"); next }
    / rcl: / { c = cpu(); if (!inw[c]) next; if (picks[c]) ra[c]++; else rb[c]++; next }
    / wpfr: / { c = cpu(); if (!inw[c]) next; inw[c] = 0; p = field("wpid"); if (!(p in waker)) next
        l = (field("rcpu") + 0 == waker[p]) ? "local" : "remote"; wf[c] = field("wf") + 0; dly[c] = field("dly") + 0
        pv = field("pv") + 0; pd = field("pd") + 0; pvl = field("pvl") + 0; nq = field("nq") + 0
        if (field("psl") + 0 < field("csl") + 0) shortslice++
        if (rb[c] && picks[c]) bump("(update_curr asked first, then the pick)", l)
        if (!picks[c]) {
            if (rb[c]) k = "request without a pick (idle curr, sync RESCHED, or update_curr before an early return)"
            else if (int(wf[c] / 4) % 2) k = "early return: WF_FORK"
            else if (dly[c]) k = "early return: delayed wakee"
            else if ((wf[c] % 32) >= 16) k = "early return: sync flag (pending, or sync NONE)"
            else k = "early return: need_resched pending (or other)"
        } else {
            s = (prot[c] == 0) ? " (PREEMPT_SHORT)" : ""
            if (rv[c] == "0x0") k = "pick NULL (delayed dequeue)" s
            else if (rvv[c] == pv && rvd[c] == pd) k = "PREEMPT: the wakee is the pick" s
            else if (rv[c] == cur[c] && prot[c] && cv[c] < cvp[c]) k = "not: curr protected (v < vprot)"
            else if (rv[c] == cur[c]) k = "not: curr is the pick, unprotected" s
            else k = "not: another queued entity is the pick" s
            if (ra[c] && k !~ /PREEMPT/) k = k " +request"
            dsum[k] += (pd - cd[c]) / 1000; vsum[k] += (pv - cv[c]) / 1000; lsum[k] += pvl / 1000
            psum[k] += (cvp[c] - cv[c]) / 1000; qsum[k] += nq
            if (havem[c]) { nm[k]++; msum[k] += marg[c] / 1000; rsum[k] += ran[c] / 1000; if (marg[c] >= 0) elig[k]++ }
        }
        bump(k, l); calls++; calls_l[l]++; next }
    END {
        if (pk) printf "wpcount %s: picks outside wakeups %d: V-v_picked %.1f us, queued %.2f, alone %d, ineligible %d\n", cfg, pk, pmsum / pk, pqsum / pk, psingle, pinel
        printf "wpcount %s: sched_waking %d, sched_wakeup %d (local %d, remote %d), wakeup_preempt_fair %d (local %d, remote %d), wakee slice shorter %d\n", cfg, wakings, wk, wkloc["local"], wkloc["remote"], calls, calls_l["local"], calls_l["remote"], shortslice
        for (k in n) if (k !~ /\|/) {
            printf "wpcount %s: %s: %d (local %d, remote %d)", cfg, k, n[k], n[k "|local"], n[k "|remote"]
            if (k in dsum) printf "; mean us: d_wakee-d_curr %.1f, v_wakee-v_curr %.1f, wakee vlag %.1f, vprot-v_curr (at the pick) %.1f; queued %.1f", dsum[k] / n[k], vsum[k] / n[k], lsum[k] / n[k], psum[k] / n[k], qsum[k] / n[k]
            if (nm[k]) printf "; V-v_curr %.1f us, curr eligible %d of %d, curr ran %.1f us since its pick", msum[k] / nm[k], elig[k], nm[k], rsum[k] / nm[k]
            printf "\n" } }' $T/trace
}
wp_events() { # 1|0: the probes and the two tracepoints on or off
    for e in lc sched/sched_waking sched/sched_wakeup; do echo "$1" >$T/events/$e/enable; done
}
wp_run() { # CONFIG
    lc_restore
    lc_apply "$1"
    echo >$T/trace
    wp_events 1
    hackbench -g 2 -l 100 >/tmp/wp.out 2>&1
    wp_events 0
    echo "wpcount $1: $(grep Time: /tmp/wp.out), events lost $(lc_ring_lost)"
    wp_summary "$1"
    lc_restore
}
for r in $(seq "${RUNS:-3}"); do
    for c in ${CONFIGS:-default}; do wp_run "$c"; done
done
