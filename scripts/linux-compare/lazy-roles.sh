#!/usr/bin/env bash
# Why lazy brings more pipe wakeups: the per-role counters of our kernel's
# hackbench (`-R`, the `roles:`, `receiver wakeups:` and `wakeup-to-run`
# lines) under full and lazy, set beside the same counters of the
# simulator (`sim-roles-probe.patch`, next to it, applied to a copy).
#
# Our kernel: the tree at HEAD, unpatched, x86_64, SMP vCPUs under
# `-icount`, booted once per seed with H run six times, the models
# alternating (full first on the first seed, lazy first on the second, and
# so on): a run's figures depend on the state the runs before it left
# (six runs of one model in one boot gave 12 013 to 18 251 wakeups), so
# neither model always runs first. Then a boot per seed runs `compare`
# of H (without -R) under full and lazy, with and without HRTICK. The
# simulator: `sim run --machine qemu:N` with the probe's counters
# (`SIM_ROLES=1`), seeds 1..SIM_SEEDS, both models. Prints, per
# model, the means per run. (The probe counts a reader's wakeups in the
# pipe mutex model only: with --no-contention those read 0.)
#
#   scripts/linux-compare/lazy-roles.sh [SEED...]     (default: 1 2)
#   SMP=4 ICOUNT=2 SIM_SEEDS=6 H='hackbench -p -g 2 -l 100 -C linux -R'
#   SIM_W='hackbench ipc=pipe mode=process groups=2 loops=100'
#   SIM_FLAGS='--no-contention'   (mechanism flags for every sim run)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
h_init lazyroles
root=$H_ROOT
# SMP, ICOUNT and the seeds (smp, icount, seeds); SIM_SEEDS (sim_seeds), H, SIM_W.
h_probe_args "$@" || exit
h_probe_sim_args || exit
SIM_FLAGS=${SIM_FLAGS:-}
for f in $SIM_FLAGS; do
    [[ $f == --no-* || $f == --qemu-rr-turns ]] ||
        { echo "error: lazyroles: SIM_FLAGS takes sim run's mechanism flags (--no-...), got '$f'" >&2; exit 2; }
done

# The kernel unpatched, then the simulator's probe in the same tree.
out=$root/build/lazyroles
h_probe_build "$out" || exit
h_probe_patch "$out/src" "$here/sim-roles-probe.patch" || exit
h_probe_sim "$out/src" "$out/logs/build.log" || exit

i=0
for s in "${seeds[@]}"; do
    if ((i % 2 == 0)); then a=full b=lazy; else a=lazy b=full; fi
    i=$((i + 1))
    cmd="seed=$s preempt=$a run=$H; preempt $b; $H; preempt $a; $H; preempt $b; $H; preempt $a; $H; preempt $b; $H; poweroff"
    h_probe_boot "$out/kernel" "$cmd" "$out/logs/seed$s.log" 1500 || true
    echo "$a" >"$out/logs/seed$s.first"
    # With and without HRTICK: `compare` (rotated order, the run's
    # schedstat-like counters), H without -R.
    h_probe_boot "$out/kernel" \
        "seed=$s preempt=full run=compare -n 3 -w 1 -c default -c preempt=lazy -c NO_HRTICK -c NO_HRTICK,preempt=lazy -- ${H/ -R/}; poweroff" \
        "$out/logs/hrtick$s.log" 1500 || true
done

echo "== our kernel at HEAD, x86_64 SMP=$smp, -icount shift=$icount,sleep=off, '$H', seeds ${seeds[*]}, 6 runs a boot alternating"
for s in "${seeds[@]}"; do
    first=$(cat "$out/logs/seed$s.first")
    tr -d '\r' <"$out/logs/seed$s.log" | awk -v first="$first" '{ print first, $0 }'
done | awk '
    /Time:/ { r++; m = ((r - 1) % 6 % 2 == 0) ? $1 : ($1 == "full" ? "lazy" : "full"); n[m]++; t[m] += $3 }
    / roles:/ { ps[m] += $11; pr[m] += $14; pe[m] += $19 }
    / receiver wakeups:/ {
        w[m] += $4; msg[m] += $6; loc[m] += $13; gsub(/\(/, "", $14); lns[m] += $14
        rem[m] += $19; gsub(/\(/, "", $20); rns[m] += $20
    }
    / wakeup-to-run log2 ns:/ {
        for (f = 5; f <= NF; f++) { split($f, kv, ":"); b = kv[1] + 0
            if (b < 15) h0[m] += kv[2]; else if (b < 19) h1[m] += kv[2]; else if (b < 20) h2[m] += kv[2]; else h3[m] += kv[2] }
    }
    END {
        printf "%-5s %5s %7s %8s %8s %8s %12s %12s %10s %26s\n", "model", "runs", "time_s", "wakeups",
            "on_waker", "another", "to_run_ms_w", "to_run_ms_a", "msgs/wake", "senders preempted s/r/e"
        for (mi = 1; mi <= 2; mi++) { m = mi == 1 ? "full" : "lazy"; if (!n[m]) continue
            printf "%-5s %5d %7.3f %8.0f %8.0f %8.0f %12.2f %12.2f %10.2f %10.0f/%6.0f/%6.0f\n", m, n[m], t[m] / n[m],
                w[m] / n[m], loc[m] / n[m], rem[m] / n[m], lns[m] / loc[m] / 1e6, rns[m] / rem[m] / 1e6,
                msg[m] / w[m], ps[m] / n[m], pr[m] / n[m], pe[m] / n[m]
            printf "      wakeup-to-run: < 32 us %.0f, 32-512 us %.0f, 0.5-1 ms %.0f, >= 1 ms %.0f\n",
                h0[m] / n[m], h1[m] / n[m], h2[m] / n[m], h3[m] / n[m]
        }
    }'

# The messages a run passes: groups x 20 senders x 20 receivers x loops.
g=$(sed -n 's/.*groups=\([0-9]*\).*/\1/p' <<<"$SIM_W") l=$(sed -n 's/.*loops=\([0-9]*\).*/\1/p' <<<"$SIM_W")
msgs=$((${g:-4} * 400 * ${l:-100}))
echo "== the simulator at HEAD with sim-roles-probe.patch, qemu:$smp ${SIM_FLAGS}, '$SIM_W', seeds 1-$sim_seeds"
for m in full lazy; do
    cfg=()
    [[ $m == lazy ]] && cfg=(--config preempt=lazy)
    for s in $(seq 1 "$sim_seeds"); do
        # shellcheck disable=SC2086
        SIM_ROLES=1 "$CARGO_TARGET_DIR/release/sim" run --machine "qemu:$smp" --ms 600000 --seed "$s" \
            "${cfg[@]}" $SIM_FLAGS $SIM_W 2>&1
    done | awk -v m="$m" -v n="$sim_seeds" -v msgs="$msgs" '
        /^time_s/ { t += $2 }
        /^events/ { sw += $4; pre += $6 }
        /^HBLAT/ { lns += $3 * $4; loc += $4; rns += $6 * $7; rem += $7 }
        /^HBSW/ { ss += $3 }
        /^HBDBG/ { w += $3; mw += $9 }
        /^HBWA/ { for (f = 2; f <= NF; f++) { split($f, kv, "="); wa[kv[1]] += kv[2] } }
        /^HBHIST/ { gsub(/[\[\],]/, " "); for (f = 2; f <= NF; f++) { b = f + 10
            if (b < 15) h0 += $f; else if (b < 19) h1 += $f; else if (b < 20) h2 += $f; else h3 += $f } }
        END {
            printf "%-5s %5d %7.3f reader wakeups %6.0f (on the waker'"'"'s CPU %6.0f, another %5.0f), to run %.2f / %.2f ms, msgs/wake %.2f;", m, n, t / n,
                w / n, loc / n, rem / n, loc ? lns / loc / 1e6 : 0, rem ? rns / rem / 1e6 : 0, w ? msgs * n / w : 0
            printf " mutex wakeups %.0f, preemptions %.0f, senders switched in %.0f, switches %.0f\n", mw / n, pre / n, ss / n, sw / n
            printf "      wakeup-to-run: < 32 us %.0f, 32-512 us %.0f, 0.5-1 ms %.0f, >= 1 ms %.0f\n", h0 / n, h1 / n, h2 / n, h3 / n
            printf "      placement (all wakeups): wa_not_asked %.0f, wa_wide %.0f, wa_sync %.0f, wa_weight_this %.0f, wa_weight_prev %.0f, sis_none %.0f\n",
                wa["wa_not_asked"] / n, wa["wa_wide"] / n, wa["wa_sync"] / n, wa["wa_weight_this"] / n, wa["wa_weight_prev"] / n, wa["sis_none"] / n
        }'
done

echo "== our kernel, 'compare' of '${H/ -R/}' with and without HRTICK, seeds ${seeds[*]}, kept runs"
for s in "${seeds[@]}"; do tr -d '\r' <"$out/logs/hrtick$s.log" | grep '^run ' || true; done | awk '
    { c = $4 " " $5; sub(/:$/, "", c); n[c]++
      for (i = 6; i <= NF; i++) { split($i, kv, "="); v[c, kv[1]] += kv[2] } }
    END {
        split("A default|B preempt=lazy|C NO_HRTICK|D NO_HRTICK,preempt=lazy", order, "|")
        for (i = 1; i <= 4; i++) { c = order[i]; if (!n[c]) continue
            printf "%-26s %2d runs: time %.3f s, switches %.0f, wakeups %.0f (on the waker'"'"'s CPU %.0f), hrtick_resched %.0f, migrations %.0f\n",
                c, n[c], v[c, "time_s"] / n[c], v[c, "switches"] / n[c], v[c, "wakeups"] / n[c],
                v[c, "ttwu_local"] / n[c], v[c, "hrtick_resched"] / n[c], v[c, "migrations"] / n[c]
            printf "      placement: wa_not_asked %.0f, wa_wide %.0f, wa_sync %.0f, wa_weight_this %.0f, wa_weight_prev %.0f, sis_none %.0f\n",
                v[c, "wa_not_asked"] / n[c], v[c, "wa_wide"] / n[c], v[c, "wa_sync"] / n[c],
                v[c, "wa_weight_this"] / n[c], v[c, "wa_weight_prev"] / n[c], v[c, "sis_none"] / n[c]
        }
    }'
echo "== the simulator ${SIM_FLAGS}, the same four configs, seeds 1-$sim_seeds"
for cfg in default preempt=lazy NO_HRTICK NO_HRTICK+preempt=lazy; do
    flags=()
    [[ $cfg == default ]] || flags=(--config "$cfg")
    for s in $(seq 1 "$sim_seeds"); do
        # shellcheck disable=SC2086
        "$CARGO_TARGET_DIR/release/sim" run --machine "qemu:$smp" --ms 600000 --seed "$s" "${flags[@]}" $SIM_FLAGS $SIM_W
    done | sed 's/[(),]//g' | awk -v c="$cfg" -v n="$sim_seeds" '
        /^time_s/ { t += $2 }
        /^events/ { sw += $4; wk += $8 }
        /^wakeup preempts/ { mg += $8; mw += $10 }
        /hrtick resched/ { hr += $NF }
        END { printf "%-26s %2d runs: time %.3f s, switches %.0f, wakeups %.0f, hrtick_resched %.0f, migrations %.0f (at wakeup %.0f)\n",
            c, n, t / n, sw / n, wk / n, hr / n, mg / n, mw / n }'
done
