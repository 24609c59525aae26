#!/usr/bin/env bash
# cyclictest under load with its measuring thread on CPU 0, at 2 vCPUs under
# QEMU's `-icount shift=2,sleep=off` (the conditions of `make linux-compare
# SMP=2`): the average latency of 3 kept runs must stay below a bound.
#
#   scripts/test/cyclictest-cpu0.sh [ARCH] KERNEL_ELF   (ARCH: x86_64, the
#                                                       default, or aarch64)
#
# Runs `compare -n 3 -w 1 -c default -- cyclictest -t 1 -i 500 -l 1000 -p 50
# -L 1 -a 0` in one boot (seed 1). Under `-icount` QEMU 7.2 runs the vCPUs
# in turns, CPU 0 first after every timer deadline, and a vCPU's turn ends
# when it re-arms its timer for the machine's earliest deadline; what the
# thread on CPU 0 waits is the other vCPU's turns that such re-arms hand
# over between its timer interrupt and its switch-in (docs/results/linux/ab-features.md,
# "At 2 vCPUs").
#
# x86_64: re-arming the LAPIC for every change of the next deadline, later
# ones too (each hrtick move at a switch of the hackbench threads), gave 228
# +- 18 us (192-246 per run, 2 boots x 3 runs; 226-289 in two more boots);
# re-arming only for an earlier deadline, as Linux's hrtimer_reprogram does,
# 149 +- 10 us (138-166), Linux 7.2 itself 148 +- 31 us. Bound: the mean of
# the 3 runs below 190 us.
#
# aarch64 (QEMU virt, cortex-a72, GICv2; the generic timer's comparator),
# the same change: 224 +- 18 us (201-250 per run, seeds 1-6 x 3 runs; a
# seed's 3-run mean 206-230, seed 1's 230) -> 170 +- 28 us (134-249; a
# seed's mean 159-179, seed 1's 159), in boots that ran this and `-a 1` and
# perfpipe; a boot is deterministic for its command line and seed here.
# This script's own boot: 264, 216, 262 us (mean 247) before, 141, 160,
# 173 (158) after. Bound: the mean below 195 us. QEMU 7.2's `-icount` can
# starve an aarch64 vCPU for good (docs/notes/aarch64-icount-hang.md; the
# kernel before the change did so once, seed 5, in its `-a 1` runs):
# CYC_TIMEOUT then ends the boot, and the check fails.
#
# Environment: CYC_BOUND_US (instead of the arch's bound), CYC_TIMEOUT
# (seconds, default 300). Log: build/cyclictest-cpu0-ARCH-smp2.log.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init cyclictest-cpu0
case $# in
    1) arch=x86_64 kernel=$1 ;;
    2) arch=$1 kernel=$2 ;;
    *) echo "usage: $0 [ARCH] KERNEL_ELF" >&2; exit 2 ;;
esac
case $arch in
    x86_64) default_bound=190 name=cyclictest-cpu0 ;;
    aarch64) default_bound=195 name=cyclictest-cpu0-aarch64 ;;
    *) echo "cyclictest-cpu0: unknown ARCH '$arch' (x86_64 or aarch64)" >&2; exit 2 ;;
esac
[ -f "$kernel" ] || { echo "cyclictest-cpu0: no kernel $kernel" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
bound=${CYC_BOUND_US:-$default_bound}
mkdir -p "$root/build"
log=$root/build/cyclictest-cpu0-$arch-smp2.log
cmd="compare -n 3 -w 1 -c default -- cyclictest -t 1 -i 500 -l 1000 -p 50 -L 1 -a 0"
SMP=2 ACCEL=tcg QEMU_EXTRA="-icount shift=2,sleep=off" timeout -k 5 "${CYC_TIMEOUT:-300}" \
    "$root/scripts/boot/qemu.sh" "$arch" "$kernel" "seed=1 preempt=full run=$cmd; poweroff" \
    </dev/null >"$log" 2>&1
avgs=$(tr -d '\r' <"$log" | sed -nE 's/^run [0-9]+\/[0-9]+ cfg A default: lat_avg_us=([0-9.]+) .*/\1/p')
n=$(echo "$avgs" | grep -c . || true)
if [ "$n" -ne 3 ]; then
    h_check cyclictest_cpu0_average_below_bound 1 "$n kept runs in $log (3 expected)"
else
    line=$(echo "$avgs" | awk -v b="$bound" '
        { s += $1; r = r sprintf(" %.0f", $1) }
        END { printf "averages%s us, mean %.0f us (bound %d us)\n", r, s / NR, b; exit !(s / NR < b) }')
    h_check cyclictest_cpu0_average_below_bound $? "$line"
fi
echo "$name: $H_CHECKS_PASSED passed, $H_CHECKS_FAILED failed"
h_record "$name" "$H_CHECKS_PASSED" "$H_CHECKS_FAILED"
[ "$H_CHECKS_FAILED" -eq 0 ]
