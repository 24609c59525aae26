#!/usr/bin/env bash
# `make test`'s closing lines. Each suite records its own counts, as it
# finishes, in build/test-results.tsv (h_record in scripts/lib/harness.sh;
# cargo's through scripts/test/cargo-test.sh): suite, passed, failed,
# skipped, seconds of wall time, CPU seconds. This prints the SLOWEST
# (default 8) slowest suites with their seconds, and the wall time spent
# outside every suite (make's own builds of the kernels), then sums them
# in one line:
#
#   scripts/test/summary.sh begin        empty the file, note the start time
#   scripts/test/summary.sh end STATUS   print the lines; exit with STATUS
#
# Tests that skipped themselves at run time (a precondition of the boot did
# not hold; scripts/test/ktest.sh records them in $results.skips) are listed
# after the closing line, each with its suite and reason.
#
# H_RESULTS names another file (the harness test's); a line written before
# the time columns (four fields) counts as 0 s, its CPU shown as -.
#
# STATUS is the suites' make status: a failing make test stays failing, and
# says which suites recorded failures (a suite that stopped before it could
# record shows in make's own error above).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
results=${H_RESULTS:-$root/build/test-results.tsv}
mkdir -p "$(dirname "$results")"
case ${1:-} in
begin)
    : >"$results"
    : >"$results.skips"
    date +%s >"$results.start"
    ;;
end)
    status=${2:-1}
    start=$(cat "$results.start" 2>/dev/null || date +%s)
    secs=$(($(date +%s) - start))
    slowest=${SLOWEST:-8}
    [[ $slowest =~ ^[0-9]+$ ]] || { echo "summary.sh: SLOWEST must be a count, got '$slowest'" >&2; slowest=8; }
    # The slowest suites, by their fifth column, before the closing line.
    # awk reads the whole sorted list and prints its first $slowest lines:
    # `head` would close the pipe early, and a sort that runs with SIGPIPE
    # ignored (as under some CI runners) then reports a write error.
    sort -t$'\t' -k5,5gr "$results" |
        awk -F'\t' -v n="$slowest" -v secs="$secs" -v all="$(awk -F'\t' '{ t += $5 } END { printf "%.0f", t }' "$results")" '
            NR > n { next }
            NR == 1 { printf "make test: the slowest suites, wall and CPU seconds (%d s of the %d were outside every suite: make'"'"'s own builds):\n", secs - all, secs }
            { printf "  %7.1f %7s  %s\n", $5, $6 == "" ? "-" : $6, $1 }'
    awk -F'\t' -v status="$status" -v secs="$secs" '
        { suites++; p += $2; f += $3; s += $4; if ($3 > 0) bad = bad (bad ? ", " : "") $1 }
        END {
            verdict = (status == 0 && f == 0) ? "PASS" : "FAIL"
            printf "make test: %s: %d suites, %d tests passed, %d failed, %d skipped in %d min %02d s\n",
                verdict, suites, p, f, s, secs / 60, secs % 60
            if (bad) printf "make test: failures in: %s\n", bad
        }' "$results"
    # Tests that skipped themselves at run time (h_record_skips): a
    # precondition of the boot did not hold, so what they test went
    # untested, pass or not.
    if [ -s "$results.skips" ]; then
        echo "make test: skipped at run time (untested here):"
        awk -F'\t' '{ printf "  %s: %s\n", $1, $2 }' "$results.skips"
    fi
    # A suite that recorded a failure fails make test even if its script's
    # status did not say so.
    if [ "$status" -eq 0 ] && awk -F'\t' '$3 > 0 { found = 1 } END { exit !found }' "$results"; then
        status=1
    fi
    exit "$status"
    ;;
*)
    echo "usage: $0 begin | end STATUS" >&2
    exit 2
    ;;
esac
