#!/usr/bin/env bash
# The locks a pipe write and a pipe read meet in our kernel, and how often a
# spin wait on them meets a holder out of its vCPU turn, in guest time under
# QEMU -icount (x86_64, SMP vCPUs): lockhold-probe.sh's measurement on the
# pipe rows, with the pipe's own spinlock (`Channel`'s "channel" lock,
# kernel/src/sync/channel.rs) counted as a class of its own.
#
# The counters are not part of the kernel: this script copies the tree at
# HEAD into build/pipelock/src, applies lockhold-probe.patch and then
# pipelock-probe.patch (next to it: the "channel" class), builds that kernel
# and boots it once per seed, running
#   schedstat; H; schedstat; H; schedstat; preempt lazy; H; schedstat; H; schedstat
# with H='hackbench -p -g 2 -l 100 -C linux -R' (PIPE_H overrides it), and
# prints per run (full and lazy apart) each lock class's holds, the holds
# cut by the end of the holder's turn (over 20 us), the spin waits that met
# a held lock ("contended": under QEMU's round-robin TCG one vCPU executes
# at a time, so each is a holder out of its turn) and their `pause`s, then
# the runs' `Time:` and `roles:` lines.
#
#   scripts/linux-compare/pipelock-probe.sh [SEED...]     (default: 1 2)
#   SMP=4 ICOUNT=2 PIPE_H='hackbench -p -g 2 -l 100 -C linux -R'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
h_init pipelock
root=$H_ROOT
# SMP, ICOUNT and the seeds (smp, icount, seeds).
h_probe_args "$@" || exit
H=${PIPE_H:-hackbench -p -g 2 -l 100 -C linux -R}
[[ $H == hackbench\ * && $H != *";"* ]] || { echo "error: pipelock: PIPE_H must be one hackbench command, got '$H'" >&2; exit 2; }

out=$root/build/pipelock
h_probe_build "$out" "$here/lockhold-probe.patch" "$here/pipelock-probe.patch" || exit

for s in "${seeds[@]}"; do
    h_probe_boot "$out/kernel" \
        "seed=$s preempt=full run=schedstat; $H; schedstat; $H; schedstat; preempt lazy; $H; schedstat; $H; schedstat; poweroff" \
        "$out/logs/seed$s.log" || true
done

echo "== pipe locks in our kernel, x86_64 SMP=$smp, -icount shift=$icount,sleep=off, '$H', seeds ${seeds[*]}"
echo "== runs 1-2 of a boot preempt=full, 3-4 preempt=lazy; means per run; ns are guest ns"
for s in "${seeds[@]}"; do cat "$out/logs/seed$s.log"; done | tr -d '\r' | awk '
    /^lockprobe / && $2 != "platform_cpu_relax" {
        dump[$2]++
        # the first dump of a boot (before any run) is zero: runs are dumps 2-5
        k = (dump[$2] - 1) % 5
        if (k == 0) next
        m = (k <= 2) ? "full" : "lazy"
        key = m SUBSEP $2
        n[key]++; holds[key] += $4; short[key] += ($4 - $8) * $6; nshort[key] += $4 - $8
        long[key] += $8; cont[key] += $20; pauses[key] += $22; wait[key] += $20 * $24
    }
    /^Time:/ { tm++; mm = ((tm - 1) % 4 < 2) ? "full" : "lazy"; tt[mm] += $2; nt[mm]++ }
    END {
        for (mi = 1; mi <= 2; mi++) {
            m = mi == 1 ? "full" : "lazy"
            if (!nt[m]) continue
            printf "-- preempt=%s: %d runs, %.3f s a run\n", m, nt[m], tt[m] / nt[m]
            printf "%-18s %9s %9s %13s %10s %10s %12s\n", "class", "holds", "mean_ns", "over_20us", "contended", "pauses", "mean_wait_us"
            split("rq_wake rq_switch rq_other waitqueue waitqueue_over5us channel pi_lock sched_other ttwu_span switch_span", order, " ")
            for (i = 1; i <= 10; i++) {
                c = order[i]; key = m SUBSEP c
                if (!n[key]) continue
                printf "%-18s %9.0f %9.0f %6.0f (%4.1f%%) %10.0f %10.0f %12.0f\n", c, holds[key] / n[key],
                    nshort[key] ? short[key] / nshort[key] : 0, long[key] / n[key],
                    holds[key] ? 100 * long[key] / holds[key] : 0, cont[key] / n[key], pauses[key] / n[key],
                    cont[key] ? wait[key] / cont[key] / 1000 : 0
            }
        }
    }'
echo "== the runs (full, full, lazy, lazy per boot)"
for s in "${seeds[@]}"; do
    echo "-- seed $s"
    tr -d '\r' <"$out/logs/seed$s.log" | grep -E '^(Time:|roles:|receiver wakeups:|pipe mutex:|[0-9]+ (pipe|socket) messages)' || true
done
