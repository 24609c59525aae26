#!/usr/bin/env bash
# The simulator held against Linux 7.2 on every `make test`: the 15
# hackbench rows of docs/results/linux/three-way.md (NEXT_BUDDY, NEXT_BUDDY
# under lazy, lazy against full; sockets and pipes, processes and threads,
# 2 and 4 groups) at 4 vCPUs. The Linux column is read from the
# transcripts kept in docs/results/linux/referee/ (six reproducible boots of
# Debian's Linux 7.2.13 on the project's QEMU machine; that page says how
# they were taken), the simulator's comes from `sim run` on `qemu:4` with
# seeds 1-6 (scripts/linux-compare/sim-rows.sh, as `make linux-compare`
# runs it), and `abtool --versus` scores each row: agree / null /
# opposite, and within 2x.
#
# Fails when a row is opposite, or when fewer rows agree, or agree within
# 2x, than the floors: the tally of the commit that set them. A change to
# the model that loses a row must lower a floor here, in the same commit,
# and say why in docs/results/linux/three-way.md. The simulator is
# deterministic: the same tree gives the same table, whatever the load.
# About 10 s of CPU.
#
#   scripts/test/referee-test.sh [SIM_BIN [ABTOOL_BIN]]
#   REFEREE_AGREE=12 REFEREE_WITHIN2X=10   the floors
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
# shellcheck source=../linux-compare/defaults.sh
. "$(dirname "$0")/../linux-compare/defaults.sh"
h_init referee
target=$H_ROOT/${CARGO_TARGET_DIR:-target}
sim=${1:-$target/release/sim}
abtool=${2:-$target/release/abtool}
ref=$H_ROOT/docs/results/linux/referee/x86_64
agree_min=${REFEREE_AGREE:-12}
within_min=${REFEREE_WITHIN2X:-10}
for f in "$sim" "$abtool"; do
    [ -x "$f" ] || { h_err "no binary at $f (cargo build --release -p sim -p abtool)"; exit 2; }
done
for v in "REFEREE_AGREE=$agree_min" "REFEREE_WITHIN2X=$within_min"; do
    [[ ${v#*=} =~ ^(0|1[0-5]?|[2-9])$ ]] || { h_err "error: ${v%%=*} must be 0..15 (of 15 rows), got '${v#*=}'"; exit 2; }
done
status=1
trap 'h_record referee "$((status == 0))" "$((status != 0))"' EXIT

dir=$H_BUILD/referee
log=$(h_log referee)
rm -rf "$dir"
mkdir -p "$dir/logs"
shopt -s nullglob
linux=("$ref"/linux-x86_64_smp4_seed*.log)
[ ${#linux[@]} -ge 2 ] || { h_err "FAIL: no Linux transcripts in $ref"; exit 1; }
cp "${linux[@]}" "$dir/logs/"

configs="default|NEXT_BUDDY|preempt=lazy|NEXT_BUDDY,preempt=lazy"
workloads=("hackbench -g 2 -l 100" "hackbench -T -g 2 -l 100" "hackbench -p -g 2 -l 100"
    "hackbench -p -T -g 2 -l 100" "hackbench -p -g 4 -l 50")
# The simulator runs sched, whose defaults are ours': it starts from the
# Linux boot's default features where they differ, as make linux-compare's
# simulator part does (none differ on x86_64 today).
line=$(tr -d '\r' <"${linux[0]}" | sed -n 's/^lc: features //p' | head -1)
d=$(lcd_diff "$(lcd_ours_table "$H_ROOT/sched/src/features.rs")" "$line") ||
    { h_err "FAIL: no 'lc: features' line in ${linux[0]}"; exit 1; }
base=$(sed -n 's/^set: *//p' <<<"$d")
if ! SIM_BASE=$base PREEMPT=full "$H_ROOT/scripts/linux-compare/sim-rows.sh" "$sim" "$dir/logs" 4 6 \
    "$configs" "${workloads[@]}" >"$log" 2>&1; then
    h_err "FAIL: the simulator's runs failed; see $log"
    exit 1
fi
"$abtool" --out "$dir" "$dir"/logs/*.log >>"$log" 2>&1 || { h_err "FAIL: abtool could not read the transcripts; see $log"; exit 1; }
"$abtool" --versus "$dir/samples.csv" linux-x86_64 sim-qemu4 >"$dir/versus.txt" 2>>"$log" ||
    { h_err "FAIL: abtool --versus failed; see $log"; exit 1; }
cat "$dir/versus.txt"
tally=$(grep -m1 '^sim-qemu4 against linux-x86_64:' "$dir/versus.txt")
read -r agree within null opposite < <(sed -E -n \
    's/.*: ([0-9]+) agree \(([0-9]+) within 2x\), ([0-9]+) null, ([0-9]+) opposite.*/\1 \2 \3 \4/p' <<<"$tally")
[ -n "${opposite:-}" ] || { h_err "FAIL: no tally line in $dir/versus.txt"; exit 1; }
rows=$((agree + null + opposite))
fails=()
[ "$rows" -eq 15 ] || fails+=("$rows rows scored, want the 15 where Linux's change is significant")
[ "$opposite" -eq 0 ] || fails+=("$opposite row(s) opposite to Linux's direction")
[ "$agree" -ge "$agree_min" ] || fails+=("$agree rows agree with Linux's direction, the floor is $agree_min")
[ "$within" -ge "$within_min" ] || fails+=("$within rows agree within 2x of Linux's change, the floor is $within_min")
for f in "${fails[@]}"; do h_err "FAIL: $f"; done
[ ${#fails[@]} -eq 0 ] || exit 1
h_say "PASS: $agree agree ($within within 2x), $null null, $opposite opposite of 15 Linux 7.2 rows (floors $agree_min, $within_min, 0 opposite)"
status=0
