#!/usr/bin/env bash
# Runs the in-kernel test suite of one architecture under QEMU.
#
#   scripts/ktest.sh ARCH KERNEL_ELF [filter]
#
# Boots `scripts/qemu-$ARCH.sh KERNEL_ELF ktest[=filter] [ktest_suite=SUITE]`,
# shows the serial output and keeps it in build/ktest-$ARCH-smp$SMP[-SUITE].log. The in-kernel runner prints
# `test NAME ... ok|FAILED` per test and a closing `N passed, M failed`, then
# ends QEMU with a verdict. The run passes only when the QEMU script reports
# success AND that closing line says `0 failed`; a hang is cut off after
# KTEST_TIMEOUT seconds (default 300) and fails.
#
# Environment: SMP (default 1), KTEST_TIMEOUT, KTEST_SUITE (timing|concurrency:
# only that suite; default every test), KTEST_ICOUNT=1 (reproducible time: QEMU
# `-icount shift=3,sleep=off`, one instruction = 8 ns of guest time and vCPUs
# run round-robin on one host thread, so host load cannot stretch guest time;
# the timing suite's bounds assume it), and whatever the QEMU script reads
# (MEM, ACCEL, QEMU_EXTRA, ...).
set -uo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 ARCH KERNEL_ELF [filter]" >&2
    exit 2
fi
arch=$1
kernel=$2
filter=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
runner="$here/qemu-$arch.sh"
if [ ! -x "$runner" ]; then
    echo "ktest: no QEMU script for arch '$arch' ($runner)" >&2
    exit 2
fi

export SMP=${SMP:-1}
limit=${KTEST_TIMEOUT:-300}
logdir="$(cd "$here/.." && pwd)/build"
mkdir -p "$logdir"
suite=${KTEST_SUITE:-}
log="$logdir/ktest-$arch-smp$SMP${suite:+-$suite}.log"
arg=ktest
[ -n "$filter" ] && arg="ktest=$filter"
[ -n "$suite" ] && arg="$arg ktest_suite=$suite"
if [ "${KTEST_ICOUNT:-0}" = 1 ]; then
    # TCG only (icount is a TCG feature); the x86_64 script would pick KVM.
    export ACCEL=tcg
    export QEMU_EXTRA="${QEMU_EXTRA:-} -icount shift=3,sleep=off"
fi

echo "ktest: $arch, SMP=$SMP, $kernel $arg${KTEST_ICOUNT:+ (icount)} (limit ${limit}s, log $log)"
# stdin from /dev/null: the guest must not wait for a terminal. timeout signals
# its whole process group (the script and QEMU); -k: KILL if TERM is ignored.
# shellcheck disable=SC2086 # $arg is one or two words
timeout -k 5 "$limit" "$runner" "$kernel" $arg </dev/null 2>&1 | tee "$log"
status=("${PIPESTATUS[@]}")
rc=${status[0]}

if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "ktest: FAIL: $arch SMP=$SMP timed out after ${limit}s (hang?); see $log" >&2
    exit 1
fi
summary=$(tr -d '\r' <"$log" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
if [ "$rc" -ne 0 ]; then
    echo "ktest: FAIL: $arch SMP=$SMP: the guest did not exit with success (${summary:-no summary line}); see $log" >&2
    exit 1
fi
# The last summary line decides (a suite may print more than one).
if ! grep -Eq '^[0-9]+ passed, 0 failed' <<<"$summary"; then
    echo "ktest: FAIL: $arch SMP=$SMP: no '<N> passed, 0 failed' line (${summary:-no summary line}); see $log" >&2
    exit 1
fi
echo "ktest: PASS: $arch SMP=$SMP${suite:+ $suite}: $summary"
