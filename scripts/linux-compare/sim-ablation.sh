#!/usr/bin/env bash
# The simulator's ablation beside Linux: the hackbench rows of the three-way
# table run in `sim` on qemu:N with every mechanism, with each one switched
# off, with all off, and on flat:N (the older cited costs), then abtool's
# `--versus` against Linux's logs of the same A/B, one column per variant:
# which mechanism turns a row from null into agreement (or opposite).
#
#   scripts/linux-compare/sim-ablation.sh SIM_BIN LINUX_LOGS OUT_DIR NCPUS SEEDS CONFIGS WORKLOAD...
#
# LINUX_LOGS: a directory with linux-ARCH_smpN_seedB.log (a `make
# linux-compare WHAT=ab` run's logs/; ARCH=x86_64 unless set). PREEMPT as
# sim-rows.sh's. Variants (log arch names):
#   sim-all        qemu:N, every mechanism (vCPUs share the host thread in
#                  round-robin turns)
#   sim-nowake     --no-wake-cost
#   sim-noscan     --no-scan-cost
#   sim-nolock     --no-contention
#   sim-even       --no-vcpu-turns (busy vCPUs share it evenly, continuously)
#   sim-noshare    --no-vcpu-share
#   sim-none       wake cost, scan cost, pipe mutex and vCPU sharing off
#   sim-oldret     --no-pipe-user-return (a pipe syscall's return to user
#                  after the next mutex_lock: the model before)
#   sim-nounlock   --no-wake-unlock (a wakeup's cost paid after a preemption
#                  point at its instant, not with interrupts off up to its
#                  unlock: the model before)
#   sim-nopause    --no-vcpu-pause (a spin wait on a runqueue lock or wait
#                  queue keeps the vCPU's turn: the model before)
#   sim-nopipepause --no-pipe-lock-pause (a spin on a pipe's mutex keeps
#                  the vCPU's turn: the model before)
#   sim-flat       flat:N
set -euo pipefail

[[ $# -ge 7 ]] || { echo "usage: $0 SIM_BIN LINUX_LOGS OUT_DIR NCPUS SEEDS CONFIGS WORKLOAD..." >&2; exit 2; }
sim=$1 linux=$2 out=$3 ncpus=$4 seeds=$5 configs=$6
shift 6
here=$(cd "$(dirname "$0")" && pwd)
arch=${ARCH:-x86_64}
root=$(cd "$here/../.." && pwd)
compgen -G "$linux/linux-${arch}_smp${ncpus}_seed*.log" >/dev/null ||
    { echo "error: sim-ablation: no linux-${arch}_smp${ncpus}_seed*.log in $linux" >&2; exit 2; }
rm -rf "$out/logs"
mkdir -p "$out/logs"
cp "$linux"/linux-"${arch}"_smp"${ncpus}"_seed*.log "$out/logs/"
variants=(
    "sim-all|qemu:$ncpus|"
    "sim-nowake|qemu:$ncpus|--no-wake-cost"
    "sim-noscan|qemu:$ncpus|--no-scan-cost"
    "sim-nolock|qemu:$ncpus|--no-contention"
    "sim-even|qemu:$ncpus|--no-vcpu-turns"
    "sim-noshare|qemu:$ncpus|--no-vcpu-share"
    "sim-none|qemu:$ncpus|--no-wake-cost --no-contention --no-vcpu-share --no-scan-cost"
    "sim-oldret|qemu:$ncpus|--no-pipe-user-return"
    "sim-nounlock|qemu:$ncpus|--no-wake-unlock"
    "sim-nopause|qemu:$ncpus|--no-vcpu-pause"
    "sim-nopipepause|qemu:$ncpus|--no-pipe-lock-pause"
    "sim-flat|flat:$ncpus|"
)
tags=()
for v in "${variants[@]}"; do
    IFS='|' read -r tag machine flags <<<"$v"
    SIM_TAG=$tag SIM_MACHINE=$machine SIM_FLAGS=$flags \
        "$here/sim-rows.sh" "$sim" "$out/logs" "$ncpus" "$seeds" "$configs" "$@"
    tags+=("$tag")
done
abtool() { (cd "$root" && cargo run -q -p abtool --release -- "$@"); }
abtool --out "$out" "$out"/logs/*.log >/dev/null
abtool --versus "$out/samples.csv" "linux-$arch" "${tags[@]}" | tee "$out/ablation.txt"
