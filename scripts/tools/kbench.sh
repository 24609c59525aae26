#!/usr/bin/env bash
# make bench's in-kernel section: perfpipe (--same CPU and
# --cross), yield ping-pong, hackbench and cyclictest under each preempt model,
# in reproducible mode (QEMU -icount), through scripts/tools/ab.sh and abtool: the
# tables print every metric with its noise (Amean/Hmean, Stddev, CoV over the
# kept runs of every boot, then the within-boot / boot-to-boot split), and
# the samples are saved as build/bench/<commit>.csv for `make bench-compare`.
#
#   scripts/tools/kbench.sh [COMMIT]
#
# Without COMMIT: the work tree's kernel; the CSV is build/bench/<short
# sha>.csv, or <short sha>-dirty.csv when the tree has uncommitted changes.
# With COMMIT: that commit's kernel, built from a temporary git worktree
# (build/bench/src) into its own target directory (build/bench/target), then
# booted by this tree's scripts. A workload the old kernel does not take
# (checked first with a boot each) is left out of its run and its CSV.
#
# Environment: BOOTS (default 6, seeds 1..BOOTS), RUNS (3), WARMUP (1), CPUS
# (2), ICOUNT (2: -icount shift=2,sleep=off). 6 boots, not 2: hackbench's
# runs spread by about 20% (CoV), so its mean needs the runs for the
# baseline check's significance test to see a step smaller than about 30%
# (18 runs against 18: about 16%). The whole section takes one to two
# minutes of host time. KBENCH_ELF=ELF KBENCH_NAME=NAME: bench that kernel
# instead, samples in build/bench/NAME.csv (scripts/tools/kbench-noise.sh).
#
# The kernels boot with `schedstats=disable`: `compare` then leaves the
# diagnostic wakeup counters (ttwu, wkl_*, wa_*, sis_*) off, as a kernel
# does by default, so the figures are the scheduler's without them (a
# kernel older than the argument warns about it and counts as it always
# did). KBENCH_SCHEDSTATS=1 boots without it: the figures with the counters.
#
# Then, for the work tree's kernel, the figures are checked against the
# recorded baseline, bench/kernel-baseline.txt (abtool --baseline-check):
# a figure worse than the baseline by more than its measured layout noise
# (the tolerance) AND significantly worse given the run-to-run spread of
# both samples (Welch's t of this bench's runs against the baseline's
# recorded mean, per-run stddev and run count, one-sided p < 0.01) prints a
# REGRESSION line and the script fails; worse than the tolerance but not
# significant is marked noise. KBENCH_CHECK=0 skips the
# check; scripts/tools/kbench-noise.sh --record records a new baseline.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
h_init kbench
root=$H_ROOT
out=$root/build/bench
mkdir -p "$out"
export ARCHES=x86_64 CPUS=${CPUS:-2} BOOTS=${BOOTS:-6} RUNS=${RUNS:-3} WARMUP=${WARMUP:-1} ICOUNT=${ICOUNT:-2}
export CONFIGS="preempt=none|preempt=voluntary|preempt=full|preempt=lazy"
export WORKLOADS="perfpipe -s -l 1000|perfpipe -x -l 1000|yield -l 2000|hackbench -g 1 -l 20|cyclictest -t 1 -i 500 -l 400 -p 50"
case ${KBENCH_SCHEDSTATS:-0} in
    0) export AB_BOOTARGS=schedstats=disable ;;
    1) export AB_BOOTARGS="" ;;
    *) echo "error: kbench: KBENCH_SCHEDSTATS must be 0 or 1, got '$KBENCH_SCHEDSTATS'" >&2; exit 2 ;;
esac

if [[ $# -gt 1 ]]; then
    echo "usage: $0 [COMMIT]" >&2
    exit 2
fi
if [[ -n ${KBENCH_ELF:-} ]]; then
    [[ $# -eq 0 && -f $KBENCH_ELF && -n ${KBENCH_NAME:-} ]] ||
        { echo "error: kbench: KBENCH_ELF needs an existing ELF, KBENCH_NAME and no COMMIT" >&2; exit 2; }
    sha=$KBENCH_NAME
    export KERNEL=$KBENCH_ELF
elif [[ $# -eq 1 ]]; then
    sha=$(git -C "$root" rev-parse --short=10 --verify -q "$1^{commit}") ||
        { echo "error: kbench: '$1' is not a commit" >&2; exit 2; }
    src=$out/src
    git -C "$root" worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
    git -C "$root" worktree add -q --detach "$src" "$sha"
    trap 'git -C "$root" worktree remove --force "$src"' EXIT
    echo "kbench: building $sha's kernel in $src"
    (cd "$src" && CARGO_TARGET_DIR=$out/target cargo build -q -p kernel --target x86_64-unknown-none --release)
    export KERNEL=$out/target/x86_64-unknown-none/release/kernel
    # A run= script with one command the kernel cannot parse is ignored
    # whole (the boot then waits at the prompt), so keep the workloads this
    # kernel knows: `run=poweroff; W` powers off at once if W parses.
    keep=""
    IFS='|' read -ra wls <<<"$WORKLOADS"
    for w in "${wls[@]}"; do
        h_qemu x86_64 kernel="$KERNEL" append="run=poweroff; $w" smp=1 icount=2
        if timeout -k 2 20 "${QEMU[@]}" </dev/null >/dev/null 2>&1; [ $? -eq "$(h_pass_status x86_64)" ]; then
            keep+="${keep:+|}$w"
        else
            echo "kbench: $sha's kernel does not take '$w': left out"
        fi
    done
    [[ -n $keep ]] || { echo "error: kbench: $sha's kernel takes none of the workloads" >&2; exit 1; }
    export WORKLOADS=$keep
else
    sha=$(git -C "$root" rev-parse --short=10 HEAD)
    [[ -z $(git -C "$root" status --porcelain --untracked-files=no) ]] || sha=$sha-dirty
    unset KERNEL
fi
export OUT=$out/$sha
"$here/ab.sh"
cp "$OUT/samples.csv" "$out/$sha.csv"
echo "kbench: samples of $sha in build/bench/$sha.csv; tables in build/bench/$sha/tables.txt"
baseline=$root/bench/kernel-baseline.txt
if [[ $# -eq 0 && -z ${KBENCH_ELF:-} && ${KBENCH_CHECK:-1} == 1 ]]; then
    if [[ -f $baseline ]]; then
        echo "kbench: against the baseline (bench/kernel-baseline.txt):"
        (cd "$root" && cargo run -q -p abtool --release -- --baseline-check "$baseline" "$out/$sha.csv") ||
            { echo "error: kbench: figures regressed against bench/kernel-baseline.txt (see the REGRESSION lines)" >&2; exit 1; }
    else
        echo "kbench: no bench/kernel-baseline.txt: nothing to check against"
    fi
fi
