#!/usr/bin/env bash
# scripts/tools/kprof.sh counts what -icount charges: on a cross-CPU pipe
# round trip (x86_64, 2 CPUs, -icount shift=2: 4 ns an instruction) its
# instructions per loop, times 4 ns, must come within 1% of the round trip
# the workload itself timed in the second boot (the same instructions, seen
# by the guest's clock); the scheduler's wakeup and switch functions must
# be in its list; and bad input must be refused with a message before any
# boot. About 10 s.
#
#   scripts/test/kprof-test.sh KERNEL_ELF
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init kprof-test
[ $# -eq 1 ] || { echo "usage: $0 KERNEL_ELF" >&2; exit 2; }
elf=$1
dir="$H_BUILD/kprof-test"
rm -rf "$dir"
mkdir -p "$dir"
kprof="$H_SCRIPTS/tools/kprof.sh"

# Bad input: refused with a message, no boot.
for bad in "no_loop_count|-- perfpipe -x|needs a '-l N'" "zero_loops|-- perfpipe -x -l 0|must be >= 1" \
    "cpus_9|CPUS=9|CPUS must be 1..8" "no_such_kernel|/nonexistent/elf|no such kernel"; do
    IFS='|' read -r name arg want <<<"$bad"
    case $arg in
        CPUS=*) out=$(CPUS=9 "$kprof" "$elf" 2>&1); rc=$? ;;
        --*) read -ra words <<<"$arg"; out=$("$kprof" "$elf" "${words[@]}" 2>&1); rc=$? ;;
        *) out=$("$kprof" "$arg" 2>&1); rc=$? ;;
    esac
    [ "$rc" -eq 2 ] && grep -q -- "$want" <<<"$out"
    h_check "kprof_refuses_$name" $? "exit $rc: $(head -1 <<<"$out")"
done

out=$(KPROF_OUT="$dir" TOP=60 CPUS=2 ICOUNT=2 "$kprof" "$elf" -- perfpipe -x -l 1000 2>&1)
rc=$?
echo "$out" | head -12
total=$(sed -n "s/^kprof: .*: \([0-9.]*\) guest instructions per loop.*/\1/p" <<<"$out")
timed=$(tr -d '\r' <"$dir/b.tb.log" | sed -n 's/^ *round trip \([0-9]*\) ns\/op.*/\1/p' | head -1)
if [ "$rc" -eq 0 ] && [ -n "$total" ] && [ -n "$timed" ]; then
    awk -v i="$total" -v t="$timed" 'BEGIN { d = (i * 4 - t) / t; exit !(d < 0.01 && d > -0.01) }'
    h_check kprof_counts_what_icount_charges $? "$total instructions x 4 ns against the workload's $timed ns a round trip"
else
    h_check kprof_counts_what_icount_charges 1 "kprof exit $rc, total '$total', timed '$timed'"
fi
# The wakeup's body is `wake_sleeper` (one out-of-line copy with schedstats'
# counting, one without; `try_to_wake_up`, the switch between them, inlines).
for fn in 'kernel::sched::wakeup::wake_sleeper' 'kernel::sched::switch::__schedule' 'sched::rq::Rq::pick_next_task'; do
    awk -v f="$fn" '$2 == f && $1 > 0 { found = 1 } END { exit !found }' <<<"$out"
    h_check "kprof_lists_${fn##*::}" $? "$(awk -v f="$fn" '$2 == f { print $1 " instructions a loop" }' <<<"$out")"
done

echo "kprof-test: $H_CHECKS_PASSED passed, $H_CHECKS_FAILED failed"
h_record kprof-test "$H_CHECKS_PASSED" "$H_CHECKS_FAILED"
[ "$H_CHECKS_FAILED" -eq 0 ]
