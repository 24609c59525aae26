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
# hackbench line (`hackbench [-p] [-T] -g G -l L`); other workloads are
# skipped (sim has no equivalent of their exact shape here).
#   SIM_MACHINE=qemu:NCPUS  sim's preset: `qemu:N` is the QEMU machine with
#                    the costs measured on it (sim/src/machine.rs); `flat:N`
#                    has the older cited costs
#   SIM_FLAGS=""     sim run flags, e.g. `--no-wake-cost` (an ablation)
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
# Metrics: time_s; counters: switches, wakeups, wakeup preempts, buddy picks.
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
[[ -z $flips || $flips =~ ^(0|[1-9][0-9]{0,5}|1000000)$ ]] ||
    { echo "error: sim-rows: SIM_FLIPS must be empty or 0..1000000, got '$flips'" >&2; exit 2; }
wls=("$@")
mkdir -p "$out"
IFS='|' read -ra cl <<<"$configs"
for ((s = 1; s <= seeds; s++)); do
    log=$out/${tag}_smp${ncpus}_seed$s.log
    : >"$log"
    for w in "${wls[@]}"; do
        [[ $w == hackbench\ * ]] || continue
        args=(ipc=socket mode=process)
        set -- $w
        shift
        while [[ $# -gt 0 ]]; do
            case $1 in
                -p) args[0]=ipc=pipe ;;
                -T) args[1]=mode=thread ;;
                -P) args[1]=mode=process ;;
                -g) args+=("groups=$2"); shift ;;
                -l) args+=("loops=$2"); shift ;;
                *) echo "error: sim-rows: hackbench option '$1' has no sim equivalent" >&2; exit 2 ;;
            esac
            shift
        done
        [[ -n $flips ]] && args+=("flips=$flips")
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
            r=$("$sim" run --machine "$machine" --ms 600000 "${flags[@]}" --seed "$s" ${cfg:+--config "$cfg"} hackbench "${args[@]}")
            t=$(awk '/^time_s/ {print $2}' <<<"$r")
            sw=$(sed -n 's/.*switches \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            wk=$(sed -n 's/.* wakeups \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            wp=$(sed -n 's/.*wakeup preempts \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            bp=$(sed -n 's/.*buddy picks \([0-9]*\).*/\1/p' <<<"$r" | head -1)
            [[ -n $t && -n $sw ]] || { echo "error: sim-rows: no time_s/switches from sim for '$w' [$c]" >&2; exit 1; }
            letter=$(printf "\\$(printf %o $((65 + ci)))")
            echo "run $((k + 1))/$n cfg $letter $c: time_s=$t | switches=$sw wakeups=${wk:-0} wk_preempt=${wp:-0} buddy=${bp:-0}" >>"$log"
        done
    done
done
