#!/usr/bin/env bash
# Fast check of `compare` in reproducible mode (part of `make test`):
# boots x86_64 at 4 CPUs twice under QEMU -icount (same seed, the script as
# the boot argument run=) and checks
#   - the two boots printed identical bytes;
#   - the run lines (2 warmup + 4 kept, rotated), the table's rows (CI95
#     included), legends
#     and baseline column, and the restore line;
#   - NEXT_BUDDY's mechanism in the counters: buddy=0 in every run of A,
#     buddy>0 and wk_sync_none>0 in every run of B;
#   - a refused config is an error line, runs nothing, changes nothing.
#
#   scripts/test/ab-smoke.sh KERNEL_ELF
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init ab-smoke
[ $# -eq 1 ] || { echo "usage: $0 KERNEL_ELF" >&2; exit 2; }
kernel=$1
script="compare -n 2 -w 1 -c default -c NEXT_BUDDY -- hackbench -g 1 -f 10; \
compare -c default -c kernel.sched_nr_migrate=0 -- perfpipe -l 10; \
sysctl kernel.sched_nr_migrate; features; poweroff"
fail() {
    h_err "FAIL: $*"
    h_record ab-smoke 0 1
    exit 1
}
h_qemu x86_64 kernel="$kernel" append="seed=1 run=$script" smp=4 icount=3 || exit 2
for i in 1 2; do
    h_run "$(h_log ab-smoke $i)" 120 -- "${QEMU[@]}" </dev/null
    h_status_ok x86_64 "$H_RC" || fail "boot $i did not power off cleanly (QEMU status $H_RC); see $(h_log ab-smoke $i)"
done
log=$(h_log ab-smoke 1)
cmp -s "$log" "$(h_log ab-smoke 2)" ||
    fail "two boots with seed=1 printed different bytes: diff $log $(h_log ab-smoke 2)"
text=$(tr -d '\r' <"$log")
want() { grep -Eq -- "$1" <<<"$text" || fail "no line matching '$1' in $log"; }
want '^compare: 2 config\(s\) x 2 run\(s\) \(\+1 warmup\) of .hackbench -g 1 -l 100 -f 10 -s 100., rotated order, seed 1$'
[ "$(grep -c '^warmup ' <<<"$text")" -eq 2 ] || fail "want 2 warmup lines"
[ "$(grep -c '^run ' <<<"$text")" -eq 4 ] || fail "want 4 run lines"
# Rotation: round 1 is A B, round 2 B A, round 3 A B.
order=$(grep -E '^(run|warmup) ' <<<"$text" | sed -E 's/.* cfg ([A-Z]) .*/\1/' | tr -d '\n')
[ "$order" = ABBAAB ] || fail "run order $order, want ABBAAB"
want '^ +A:default +B:NEXT_BUDDY$'
want '^Amean   time_s +[0-9.]+ \(  0\.00%\) +[0-9.]+ [(*] *-?[0-9.]+%[)*]$'
# The 95% interval under the mean, in B's column (A's is blank): an interval,
# or unbounded.
want '^CI95    time_s {20,}(\[[-+][0-9.]+, [-+][0-9.]+\]%|unbounded)$'
want '^Stddev  time_s '
# It excludes 0 exactly where the mean is marked * (an end printed as 0.00
# is a tie at the printed precision and is not judged).
mean=$(grep -E '^Amean   time_s ' <<<"$text")
ci=$(grep -E '^CI95    time_s ' <<<"$text")
if [[ $ci =~ \[([-+][0-9.]+),\ ([-+][0-9.]+)\]% ]]; then
    lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]}
    if [ "${lo#[-+]}" != 0.00 ] && [ "${hi#[-+]}" != 0.00 ]; then
        excl=0
        [[ $lo == +* || $hi == -* ]] && excl=1
        star=0
        [[ ${mean:50} == *'*'* ]] && star=1
        [ "$excl" = "$star" ] || fail "CI95 [$lo, $hi] disagrees with the mean's mark: $mean"
    fi
fi
want '^CoV     time_s +[0-9.]+% '
want '^counters, per run \(% change: more is positive\)$'
want '^Amean   buddy +0\.0 \(  0\.00%\) '
want "^% change against A, better is positive; \\*x\\.xx%\\*: Welch's t-test \\(two-sided, unequal variances\\) p < 0\\.05$"
want "^CI95: 95% confidence interval of that % change \\(arithmetic means; Fieller's interval, Welch's df\\), excluding 0 exactly where \\*x\\.xx%\\*; unbounded: A's mean is not significantly away from 0; n/a: fewer than 2 runs$"
want '^compare: 4 run\(s\) kept, 2 warmup dropped$'
want '^compare: features, sysctls and preempt model restored$'
grep -E '^(run|warmup) .* cfg A ' <<<"$text" | grep -v ' buddy=0 ' >/dev/null && fail "buddy picks without NEXT_BUDDY"
grep -E '^(run|warmup) .* cfg B ' <<<"$text" | grep ' buddy=0 ' >/dev/null && fail "a NEXT_BUDDY run without buddy picks"
[ "$(grep -E '^(run|warmup) .* cfg B ' <<<"$text" | grep -c ' wk_sync_none=[1-9]')" -eq 3 ] ||
    fail "every NEXT_BUDDY run should count sync wakeups in row 12 (wk_sync_none)"
want "^error: compare: config B 'kernel.sched_nr_migrate=0': kernel.sched_nr_migrate=0: .*nothing was run$"
want '^kernel.sched_nr_migrate = 32$'
# Restored: after the NEXT_BUDDY runs the feature is off again.
want '^PLACE_LAG .* NO_NEXT_BUDDY '
h_record ab-smoke 1 0
h_say "PASS: 2 identical boots ($(wc -c <"$log") bytes), 6 runs in order $order, table and counters as expected"
