#!/usr/bin/env bash
# Runs the in-kernel test suite of one architecture under QEMU.
#
#   scripts/test/ktest.sh ARCH KERNEL_ELF [filter]
#
# Boots KERNEL_ELF with `ktest[=filter] [ktest_suite=SUITE]`, shows the
# serial output and keeps it in build/ktest-$ARCH-smp$SMP[-SUITE].log. The
# in-kernel runner prints `test NAME ... ok|FAILED` per test and a closing
# `N passed, M failed, K skipped`, then ends QEMU with a verdict. The run
# passes only when QEMU's status is the guest's pass AND that closing line
# says `0 failed`; a hang is cut off after KTEST_TIMEOUT seconds without output (default
# 600: a last resort, as the in-kernel watchdog ends a test that stands still
# for 10 s or runs 180 s in all) and fails.
#
# Environment: SMP (default 1), KTEST_TIMEOUT, KTEST_SUITE (timing|concurrency:
# only that suite; default every test), KTEST_ICOUNT=1 (reproducible time: QEMU
# `-icount shift=3,sleep=off`, one instruction = 8 ns of guest time and vCPUs
# run round-robin on one host thread, so host load cannot stretch guest time;
# the timing suite's bounds assume it), KTEST_NOSKIP=1 (the closing line must
# also say `0 skipped`: multi-CPU runs, where no test may skip; without it a
# test that skipped itself at run time, `skipped (REASON)`, still passes the
# run but is listed after it and in make test's closing lines),
# KTEST_EXPECT (lines of extended regexes the log must also match, e.g. the
# boot's `smp: 16 of 16 CPU(s) online`), KTEST_TAG (a word added to the log's
# and the result's names, e.g. lockdep), KTEST_REPEAT=N (run the selection N
# times in the one boot: `ktest_repeat=N`), KTEST_ARGS (more boot arguments,
# e.g. `fail_cpu_start=2`), and what h_qemu reads (MEM, ACCEL,
# CPU, GIC, LOAD_ADDR, QEMU_EXTRA, ...).
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init ktest

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 ARCH KERNEL_ELF [filter]" >&2
    exit 2
fi
arch=$1
kernel=$2
filter=${3:-}
export SMP=${SMP:-1}
limit=${KTEST_TIMEOUT:-600}
suite=${KTEST_SUITE:-}
tag=${KTEST_TAG:-}
log=$(h_log ktest "$arch" "smp$SMP" "$suite" "$tag")
arg=ktest
[ -n "$filter" ] && arg="ktest=$filter"
[ -n "$suite" ] && arg="$arg ktest_suite=$suite"
[ -n "${KTEST_REPEAT:-}" ] && arg="$arg ktest_repeat=$KTEST_REPEAT"
[ -n "${KTEST_ARGS:-}" ] && arg="$arg $KTEST_ARGS"
icount=""
[ "${KTEST_ICOUNT:-0}" = 1 ] && icount=3
name="$arch SMP=$SMP${suite:+ $suite}${icount:+ (icount)}${tag:+ $tag}"

h_qemu "$arch" kernel="$kernel" append="$arg" ${icount:+icount=$icount} || exit 2
h_say "$name, $kernel $arg (limit ${limit}s, log $log)"
# stdin from /dev/null: the guest must not wait for a terminal.
H_TEE=1 h_run "$log" "$limit" -- "${QEMU[@]}" </dev/null

fail() {
    h_err "FAIL: $name: $*; see $log"
    h_record "ktest $arch smp$SMP${suite:+ $suite}" "${H_PASSED:-0}" "$((${H_FAILED:-0} > 0 ? H_FAILED : 1))" "${H_SKIPPED:-0}"
    exit 1
}
h_ended && fail "ended by the harness: $H_WHY_ENDED (hang?)"
# Tests that skipped themselves (a precondition of this boot did not hold,
# `skipped (REASON)`): named here and in make test's closing lines, whether
# the run allows skips (then they pass with the skip in plain view) or not.
skips=$(h_runtime_skips "$log")
if [ -n "$skips" ]; then
    h_say "$name: skipped at run time:"
    sed 's/^/    /' <<<"$skips"
    h_record_skips "ktest $arch smp$SMP${suite:+ $suite}${tag:+ $tag}" "$skips"
fi
noskip=skip
[ "${KTEST_NOSKIP:-0}" = 1 ] && noskip=noskip
h_check_summary "$log" any "$noskip"
ok=$?
h_status_ok "$arch" "$H_RC" || fail "the guest did not exit with success (QEMU status $H_RC; ${H_SUMMARY:-no summary line})"
[ "$ok" -eq 0 ] || fail "$H_WHY"
while IFS= read -r re; do
    [ -z "$re" ] && continue
    # grep reads the whole log (no -q): under pipefail, a grep that quit at
    # its first match could fail the pipeline through tr's SIGPIPE.
    if ! tr -d '\r' <"$log" | grep -aE -- "$re" >/dev/null; then
        # The boot's own lines (up to the runner's first line) say why a
        # boot-time expectation failed; shown here so that a CI log's tail,
        # where the log file itself cannot be opened, has them.
        h_err "the boot's lines (of $log):"
        tr -d '\r' <"$log" | sed -n '1,/^ktest: running/p' | tail -n 40 >&2
        fail "no line matching '$re'"
    fi
done <<<"${KTEST_EXPECT:-}"
h_record "ktest $arch smp$SMP${suite:+ $suite}${tag:+ $tag}" "$H_PASSED" 0 "$H_SKIPPED"
h_say "PASS: $name: $H_SUMMARY"
