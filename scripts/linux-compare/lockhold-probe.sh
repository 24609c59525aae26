#!/usr/bin/env bash
# How long our kernel holds the runqueue and wait-queue locks in the wakeup
# and switch paths, and how often a spin wait meets a held lock, in guest
# time under QEMU -icount (x86_64, SMP vCPUs): the measurement behind the
# simulator's `qemu:N` lock shares (`sim/src/machine.rs`, `qemu_costs`;
# docs/results/linux/sim-costs.md, "The simulator's qemu:N costs").
#
# The counters are not part of the kernel: this script copies the tree at
# HEAD into build/lockhold/src, applies lockhold-probe.patch (next to it:
# a per-lock-class hold timer in kernel-hal's SpinLock, sched's Mutex and
# the switch's handed-over runqueue lock, read from the TSC, which under
# -icount counts instructions; `schedstat` prints and resets it), builds
# that kernel and boots it once per seed, running
#   schedstat; H; schedstat; H; schedstat; preempt lazy; H; schedstat; H; schedstat
# with H='hackbench -g 2 -l 100 -C linux -R', and prints per run (full and
# lazy apart) the means the simulator uses. The same tree unpatched is
# booted too, for the probe's own cost in run time.
#
# Under QEMU's round-robin TCG one vCPU executes at a time, so a spin wait
# that finds a lock held always meets a holder out of its turn: "contended"
# counts exactly those meetings (each ends the waiter's turn at its first
# `pause`).
#
#   scripts/linux-compare/lockhold-probe.sh [SEED...]     (default: 1 2)
#   SMP=4 ICOUNT=2
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
h_init lockhold
root=$H_ROOT
# SMP, ICOUNT and the seeds (smp, icount, seeds).
h_probe_args "$@" || exit

# Two trees at HEAD: src with the probe, base without; one target dir.
out=$root/build/lockhold
h_probe_tree "$out/src" || exit
h_probe_tree "$out/base" || exit
mkdir -p "$out/logs"
h_probe_patch "$out/src" "$here/lockhold-probe.patch" || exit
export CARGO_TARGET_DIR=$out/target
for t in src base; do
    h_probe_kernel "$out/$t" "$out/kernel-$t" "$out/logs/build-$t.log" "$t" || exit
done

H='hackbench -g 2 -l 100 -C linux -R'
for s in "${seeds[@]}"; do
    for t in src base; do
        h_probe_boot "$out/kernel-$t" \
            "seed=$s preempt=full run=schedstat; $H; schedstat; $H; schedstat; preempt lazy; $H; schedstat; $H; schedstat; poweroff" \
            "$out/logs/$t-seed$s.log" || true
    done
done

echo "== lock holds in our kernel, x86_64 SMP=$smp, -icount shift=$icount,sleep=off, '$H', seeds ${seeds[*]}"
echo "== runs 1-2 of a boot preempt=full, 3-4 preempt=lazy; means per run; ns are guest ns (instructions x $((1 << icount)))"
for s in "${seeds[@]}"; do cat "$out/logs/src-seed$s.log"; done | tr -d '\r' | awk -v base="$(
    for s in "${seeds[@]}"; do tr -d '\r' <"$out/logs/base-seed$s.log"; done | awk '/^Time:/ { n++; m = (n - 1) % 4 < 2 ? "full" : "lazy"; t[m] += $2; c[m]++ }
        END { printf "%.3f %.3f", c["full"] ? t["full"] / c["full"] : 0, c["lazy"] ? t["lazy"] / c["lazy"] : 0 }')" '
    /^Time:/ { runs++ }
    /^lockprobe / && $2 != "platform_cpu_relax" {
        dump[$2]++
        # the first dump of a boot (before any run) is zero: runs are dumps 2-5
        k = (dump[$2] - 1) % 5
        if (k == 0) next
        m = (k <= 2) ? "full" : "lazy"
        key = m SUBSEP $2
        n[key]++; holds[key] += $4; short[key] += ($4 - $8) * $6; nshort[key] += $4 - $8
        long[key] += $8; cont[key] += $20; pauses[key] += $22; wait[key] += $20 * $24
        names[$2] = 1
    }
    /^Time:/ { tm++; mm = ((tm - 1) % 4 < 2) ? "full" : "lazy"; tt[mm] += $2; nt[mm]++ }
    END {
        split(base, b, " ")
        for (mi = 1; mi <= 2; mi++) {
            m = mi == 1 ? "full" : "lazy"
            printf "-- preempt=%s: %d runs, %.3f s a run (unprobed kernel %.3f s)\n", m, nt[m], tt[m] / nt[m], b[mi]
            printf "%-18s %9s %9s %13s %10s %10s %12s\n", "class", "holds", "mean_ns", "over_20us", "contended", "pauses", "mean_wait_us"
            split("rq_wake rq_switch rq_other waitqueue waitqueue_over5us pi_lock sched_other ttwu_span switch_span", order, " ")
            for (i = 1; i <= 9; i++) {
                c = order[i]; key = m SUBSEP c
                if (!n[key]) continue
                printf "%-18s %9.0f %9.0f %6.0f (%4.1f%%) %10.0f %10.0f %12.0f\n", c, holds[key] / n[key],
                    nshort[key] ? short[key] / nshort[key] : 0, long[key] / n[key],
                    holds[key] ? 100 * long[key] / holds[key] : 0, cont[key] / n[key], pauses[key] / n[key],
                    cont[key] ? wait[key] / cont[key] / 1000 : 0
            }
            rw = short[m SUBSEP "rq_wake"] / nshort[m SUBSEP "rq_wake"]; tw = short[m SUBSEP "ttwu_span"] / nshort[m SUBSEP "ttwu_span"]
            rs = short[m SUBSEP "rq_switch"] / nshort[m SUBSEP "rq_switch"]; ts = short[m SUBSEP "switch_span"] / nshort[m SUBSEP "switch_span"]
            ww = short[m SUBSEP "waitqueue_over5us"] / nshort[m SUBSEP "waitqueue_over5us"]
            printf "share_wake_rq_locked %.3f (rq_wake / ttwu_span)\n", rw / tw
            printf "share_switch_rq_locked %.3f (rq_switch / switch_span)\n", rs / ts
            printf "share_wake_wq_locked %.3f (waitqueue holds over 5 us / ttwu_span, capped at 1)\n", (ww / tw > 1 ? 1 : ww / tw)
        }
    }'
