#!/usr/bin/env bash
# Runs a `cargo test` command, shows its output, keeps it in
# build/cargo-test-NAME.log and records its counts for make test's closing
# line: the sums of cargo's `test result: ... N passed; M failed; K ignored`
# lines (ignored counted as skipped).
#
#   scripts/test/cargo-test.sh NAME CARGO test ARGS...
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init cargo-test
if [ $# -lt 3 ]; then
    echo "usage: $0 NAME CARGO test ARGS..." >&2
    exit 2
fi
name=$1
shift
log=$(h_log cargo-test "$name")
"$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
h_cargo_counts "$log"
# A run that failed before any test result (a build error) counts as one failure.
[ "$rc" -ne 0 ] && [ "$H_FAILED" -eq 0 ] && H_FAILED=1
h_record "cargo $name" "$H_PASSED" "$H_FAILED" "$H_SKIPPED"
h_say "$name: $H_PASSED passed, $H_FAILED failed, $H_SKIPPED ignored in $H_BINARIES test binaries"
exit "$rc"
