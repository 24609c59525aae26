#!/usr/bin/env bash
# The simulator's side of `make linux-compare`'s A/B: the hackbench
# workloads of the comparison run in `sim run`, one run per seed and config,
# written as `compare` transcripts (one log per seed, arch `SIM_TAG`) so
# abtool reads them as it reads the two kernels' logs.
#
#   scripts/linux-compare/sim-rows.sh SIM_BIN OUT_DIR NCPUS SEEDS CONFIGS WORKLOAD...
#
# CONFIGS is '|'-separated as linux-compare.sh's (`default`, or settings
# separated by commas, which become sim's `+`). A WORKLOAD is our shell's
# hackbench line (`hackbench [-p] [-T] -g G -l L`, metric time_s) or
# lcbench's schbench line (`schbench [-m M] [-t T] [-r S] [-F KB] [-s US]`,
# lcbench's defaults -m 1 -t 4 -r 5 -F 256 -s 100: sim's `lcschbench`,
# metrics wakeup_p99_us and rps, over -r seconds of simulated time) or
# lcbench's pgbench line
# (`pgbench [-c C] [-t T] [-S]`, defaults -c 1 -t 10: sim's `lcpgbench`,
# metrics tps and lat_avg_ms); other workloads are skipped (sim has no
# equivalent of their shape).
# schbench's work, the worker's walk over its -F KiB (one byte written per
# 64), is charged a cost a KiB measured in Linux 7.2.13 on the QEMU machine
# of ARCH (4 vCPUs, -icount shift=2,sleep=off) as the slope of
# `lcbench schbench -m 1 -t 1 -r 1 -s 0` requests a second between -F 0
# and -F 512: x86_64 15 157 and 3 749 a second (65.98 and 266.74 us
# rounds), 392 ns a KiB, 100 us for the default 256 KiB; aarch64 12 961
# and 3 214 (77.15 and 311.16 us), 457 ns a KiB, 117 us (each arch's
# -F 256 round, 166.3 and 194.2 us, is on its line).
# docs/results/linux/ab-features.md has the runs.
#   ARCH=x86_64      the guest arch whose walk cost schbench's lines take
#                    (x86_64 or aarch64; make linux-compare passes its own)
#   SIM_APPEND=0     1: add to the seeds' logs instead of starting them anew
#                    (linux-compare.sh's second set of configs and workloads)
#   SIM_MACHINE=qemu:NCPUS  sim's preset: `qemu:N` is the QEMU machine with
#                    the costs measured on it (sim/src/machine.rs); `flat:N`
#                    has the older cited costs
#   SIM_FLAGS=""     sim run flags, e.g. `--no-wake-cost` (an ablation)
#   SIM_SCHBENCH=lcschbench  the model schbench's lines run: `lcschbench`
#                    (lcbench's program, one step a syscall) or `schbench`
#                    (the study's shape, a message thread's whole list
#                    woken in one step; the second set's model until
#                    2026-12-07)
#   SIM_FLIPS=""     hackbench's `flips=N`: the workers start with N
#                    `wakee_flips`, their main process's at the fork (Linux's
#                    measured 6; ours' OURS_FLIPS, `hackbench -W`)
#   SIM_TAG=sim-qemuN        the logs' arch name (sim-qemu4_smp4_seed1.log)
#   SIM_BASE=""      settings (space-separated NAME / NO_NAME) every config
#                    starts from, as ours' boots take them: the Linux boot's
#                    default features where sched's differ (linux-compare.sh
#                    passes them; arm64's 7.2 boots NO_HRTICK). A config that
#                    sets the same flag wins (defaults.sh's lcd_merge). The
#                    log keeps the config's own label, the one Linux's has.
# Metrics: as above; counters: switches, wakeups, wakeup preempts, buddy picks.
# PREEMPT (full by default): the boot preemption model the kernels ran with;
# any other is added to every config that does not name one.
set -euo pipefail
# shellcheck source=defaults.sh
. "$(dirname "$0")/defaults.sh"

[[ $# -ge 6 ]] || { echo "usage: $0 SIM_BIN OUT_DIR NCPUS SEEDS CONFIGS WORKLOAD..." >&2; exit 2; }
sim=$1 out=$2 ncpus=$3 seeds=$4 configs=$5
shift 5
machine=${SIM_MACHINE:-qemu:$ncpus}
tag=${SIM_TAG:-sim-${machine//:/}}
read -ra flags <<<"${SIM_FLAGS:-}"
flips=${SIM_FLIPS:-}
schbench_model=${SIM_SCHBENCH:-lcschbench}
[[ $schbench_model == lcschbench || $schbench_model == schbench ]] ||
    { echo "error: sim-rows: SIM_SCHBENCH must be lcschbench or schbench, got '$schbench_model'" >&2; exit 2; }
[[ -z $flips || $flips =~ ^(0|[1-9][0-9]{0,5}|1000000)$ ]] ||
    { echo "error: sim-rows: SIM_FLIPS must be empty or 0..1000000, got '$flips'" >&2; exit 2; }
wls=("$@")
[[ ${SIM_APPEND:-0} =~ ^[01]$ ]] ||
    { echo "error: sim-rows: SIM_APPEND must be 0 or 1, got '$SIM_APPEND'" >&2; exit 2; }
# num WORKLOAD OPTION VALUE DIGITS: VALUE is a number of at most DIGITS
# digits, or the option is refused.
num() {
    [[ $3 =~ ^[0-9]{1,$4}$ ]] ||
        { echo "error: sim-rows: $1 option '$2' needs a number, got '$3'" >&2; exit 2; }
}
# shape W: sim's arguments for workload W, as "MS|METRIC...|ARG...";
# nothing when sim has no shape for it; a bad option exits 2.
shape() {
    set -- $1
    local kind=$1 args=() ms metrics
    shift
    case $kind in
        hackbench)
            args=(hackbench ipc=socket mode=process) ms=600000 metrics=time_s
            while [[ $# -gt 0 ]]; do
                case $1 in
                    -p) args[1]=ipc=pipe ;;
                    -T) args[2]=mode=thread ;;
                    -P) args[2]=mode=process ;;
                    -g | -l)
                        num hackbench "$1" "${2:-}" 6
                        [[ $1 == -g ]] && args+=("groups=$2") || args+=("loops=$2")
                        shift ;;
                    *) echo "error: sim-rows: hackbench option '$1' has no sim equivalent" >&2; exit 2 ;;
                esac
                shift
            done
            [[ -n $flips ]] && args+=("flips=$flips")
            ;;
        schbench)
            local -A o=([-m]=1 [-t]=4 [-r]=5 [-F]=256 [-s]=100)
            local touch_ns_per_kib work_us
            while [[ $# -gt 0 ]]; do
                [[ -v o[$1] ]] ||
                    { echo "error: sim-rows: schbench option '$1' has no sim equivalent (accepted: -m -t -r -F -s)" >&2; exit 2; }
                num schbench "$1" "${2:-}" 7
                o[$1]=$((10#$2))
                shift 2
            done
            case ${ARCH:-x86_64} in
                x86_64) touch_ns_per_kib=392 ;;
                aarch64) touch_ns_per_kib=457 ;;
                *) echo "error: sim-rows: ARCH must be x86_64 or aarch64 (the walk's measured cost), got '$ARCH'" >&2; exit 2 ;;
            esac
            ((o[-r] >= 1 && o[-r] <= 3600)) ||
                { echo "error: sim-rows: schbench -r must be 1..3600 seconds, got '${o[-r]}'" >&2; exit 2; }
            work_us=$(((o[-F] * touch_ns_per_kib + 500) / 1000))
            ((work_us >= 1)) || work_us=1
            args=("$schbench_model" "m=${o[-m]}" "t=${o[-t]}" "sleep_us=${o[-s]}" "work_us=$work_us")
            ms=$((o[-r] * 1000)) metrics="wakeup_p99_us rps"
            ;;
        pgbench)
            local -A o=([-c]=1 [-t]=10)
            local rw=1
            while [[ $# -gt 0 ]]; do
                if [[ $1 == -S ]]; then
                    rw=0
                    shift
                    continue
                fi
                [[ -v o[$1] ]] ||
                    { echo "error: sim-rows: pgbench option '$1' has no sim equivalent (accepted: -c -t -S)" >&2; exit 2; }
                num pgbench "$1" "${2:-}" 7
                o[$1]=$((10#$2))
                shift 2
            done
            ((o[-c] >= 1 && o[-c] <= 1000 && o[-t] >= 1 && o[-t] <= 1000000)) ||
                { echo "error: sim-rows: pgbench -c must be 1..1000 and -t 1..1000000, got ${o[-c]} and ${o[-t]}" >&2; exit 2; }
            args=(lcpgbench "clients=${o[-c]}" "tx=${o[-t]}" "rw=$rw") ms=600000 metrics="tps lat_avg_ms"
            ;;
        *) return 0 ;;
    esac
    echo "$ms|$metrics|${args[*]}"
}
# Every workload parsed once, before anything is written: its shape or "".
shapes=()
for w in "${wls[@]}"; do
    sh=$(shape "$w") || exit 2
    shapes+=("$sh")
done
mkdir -p "$out"
IFS='|' read -ra cl <<<"$configs"
for ((s = 1; s <= seeds; s++)); do
    log=$out/${tag}_smp${ncpus}_seed$s.log
    [[ ${SIM_APPEND:-0} == 1 ]] || : >"$log"
    for i in "${!wls[@]}"; do
        w=${wls[$i]}
        [[ -n ${shapes[$i]} ]] || continue
        IFS='|' read -r ms mlist alist <<<"${shapes[$i]}"
        read -ra metrics <<<"$mlist"
        read -ra args <<<"$alist"
        n=${#cl[@]}
        echo "compare: $n config(s) x 1 run(s) (+0 warmup) of '$w', rotated order, seed $s" >>"$log"
        for ((k = 0; k < n; k++)); do
            c=${cl[$(((s + k) % n))]}
            ci=$(((s + k) % n))
            cfg=$(lcd_merge "${SIM_BASE:-}" "$c")
            cfg=${cfg//,/+}
            [[ $cfg == default ]] && cfg=""
            if [[ ${PREEMPT:-full} != full && $cfg != *preempt=* ]]; then
                cfg=preempt=$PREEMPT${cfg:++$cfg}
            fi
            r=$("$sim" run --machine "$machine" --ms "$ms" "${flags[@]}" --seed "$s" ${cfg:+--config "$cfg"} "${args[@]}")
            vals=""
            for m in "${metrics[@]}"; do
                v=$(awk -v m="$m" '$1 == m {print $2; exit}' <<<"$r")
                [[ -n $v ]] || { echo "error: sim-rows: no $m from sim for '$w' [$c]" >&2; exit 1; }
                vals+="${vals:+ }$m=$v"
            done
            sw=$(sed -n 's/.*switches \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            wk=$(sed -n 's/.* wakeups \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            wp=$(sed -n 's/.*wakeup preempts \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            bp=$(sed -n 's/.*buddy picks \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            [[ -n $sw ]] || { echo "error: sim-rows: no switches from sim for '$w' [$c]" >&2; exit 1; }
            letter=$(printf "\\$(printf %o $((65 + ci)))")
            echo "run $((k + 1))/$n cfg $letter $c: $vals | switches=$sw wakeups=${wk:-0} wk_preempt=${wp:-0} buddy=${bp:-0}" >>"$log"
        done
    done
    # No workload with a shape here: no log (abtool would find no rows).
    [[ -s $log ]] || rm -f "$log"
done
