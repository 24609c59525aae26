#!/usr/bin/env bash
# The HRTICK expiries of the pipe rows by what they preempt, in our kernel
# and in the simulator, under full and lazy: `hrtick-roles-probe.patch`
# (next to it) applied to a copy of the tree adds `sched::probe`, global
# counters in the scheduler crate that both instruments share, so each
# counts the same events at the same places. Per HRTICK expiry: the role of
# the task it found running (hackbench sender / receiver, set by the
# workload), whether the pick that followed switched, to whom, and what
# became of the task switched out (moved while queued, by the balance path;
# run again where it was; its next wakeup's CPU). Beside them: every
# migration by path, the HRTICK arms, the switches by what ended them, the
# wait from a request to its switch, the senders' runtime, and each consumed
# request (`update_deadline`) by the path that noticed it and whether the
# HRTICK was then overdue; the gap between the expiry the runqueue keeps and
# the one the platform is given at the hand-over (`flush_hrtick_cmd`); in
# the kernel only, the platform's expiry and the tick's entry, for the
# requests a tick finds consumed. The kernel prints them as an `HRTP` line
# after each `-R` run, the simulator after each `sim run`.
#
# Our kernel: x86_64, SMP vCPUs under `-icount`, one boot per seed running
# H six times with the models alternating (as lazy-roles.sh). The
# simulator: `sim run --machine qemu:N`, seeds 1..SIM_SEEDS, both models,
# without and with the pipe mutex (`--no-contention` is the kernel's `-C
# linux` pipe). Prints the means per run of each counter, per model.
#
#   scripts/linux-compare/hrtick-roles.sh [SEED...]     (default: 1 2)
#   SMP=4 ICOUNT=2 SIM_SEEDS=6 H='hackbench -p -g 2 -l 100 -C linux -R'
#   SIM_W='hackbench ipc=pipe mode=process groups=2 loops=100'
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
h_init hrtickroles
root=$H_ROOT
# SMP, ICOUNT and the seeds (smp, icount, seeds); SIM_SEEDS (sim_seeds), H, SIM_W.
h_probe_args "$@" || exit
h_probe_sim_args || exit

# (wakestack.sh runs a copy of this script with the build name, the patch
# and the here= line replaced: keep each on a line of its own.)
out=$root/build/hrtickroles
h_probe_build "$out" "$here/hrtick-roles-probe.patch" || exit
h_probe_sim "$out/src" "$out/logs/build.log" || exit

# Means per run of every HRTP counter, per model ("MODEL HRTP k=v ..." lines).
means() {
    awk '$2 == "HRTP" { m = $1; n[m]++
            for (i = 3; i <= NF; i++) { split($i, kv, "="); v[m, kv[1]] += kv[2]
                if (!(kv[1] in seen)) { seen[kv[1]] = 1; order[++no] = kv[1] } } }
        END { printf "%-22s %12s %12s\n", "counter", "full(" n["full"] ")", "lazy(" n["lazy"] ")"
            for (i = 1; i <= no; i++) { k = order[i]
                if (v["full", k] + v["lazy", k] == 0) continue
                printf "%-22s %12.1f %12.1f\n", k, n["full"] ? v["full", k] / n["full"] : 0,
                    n["lazy"] ? v["lazy", k] / n["lazy"] : 0 } }'
}

i=0
for s in "${seeds[@]}"; do
    if ((i % 2 == 0)); then a=full b=lazy; else a=lazy b=full; fi
    i=$((i + 1))
    cmd="seed=$s preempt=$a run=$H; preempt $b; $H; preempt $a; $H; preempt $b; $H; preempt $a; $H; preempt $b; $H; poweroff"
    h_probe_boot "$out/kernel" "$cmd" "$out/logs/seed$s.log" 1500 || true
    echo "$a" >"$out/logs/seed$s.first"
done
for s in "${seeds[@]}"; do
    first=$(cat "$out/logs/seed$s.first")
    tr -d '\r' <"$out/logs/seed$s.log" | grep '^HRTP' |
        awk -v f="$first" '{ r++; print (((r - 1) % 2 == 0) ? f : (f == "full" ? "lazy" : "full")), $0 }'
done >"$out/logs/kernel.hrtp"
for flags in --no-contention ""; do
    tag=sim${flags:+-nc}
    for m in full lazy; do
        cfg=()
        [[ $m == lazy ]] && cfg=(--config preempt=lazy)
        for s in $(seq 1 "$sim_seeds"); do
            # shellcheck disable=SC2086
            "$CARGO_TARGET_DIR/release/sim" run --machine "qemu:$smp" --ms 600000 --seed "$s" \
                "${cfg[@]}" $flags $SIM_W | grep '^HRTP' | sed "s/^/$m /"
        done
    done >"$out/logs/$tag.hrtp"
done
echo "== our kernel with the probe, x86_64 SMP=$smp, -icount shift=$icount,sleep=off, '$H', seeds ${seeds[*]}"
means <"$out/logs/kernel.hrtp"
echo "== the simulator with the probe, qemu:$smp --no-contention, '$SIM_W', seeds 1-$sim_seeds"
means <"$out/logs/sim-nc.hrtp"
echo "== the simulator with the probe, qemu:$smp (the pipe mutex), seeds 1-$sim_seeds"
means <"$out/logs/sim.hrtp"
echo "(suffix _s sender, _r receiver, _o other; runns/dlyns/idlens in ns; see sched/src/probe.rs in the patch)"
