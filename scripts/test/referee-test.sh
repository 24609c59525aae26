#!/usr/bin/env bash
# The simulator held against Linux 7.2 on every `make test`, on both
# arches' kept columns:
# - x86_64: the 15 hackbench rows of docs/results/linux/three-way.md
#   (NEXT_BUDDY, NEXT_BUDDY under lazy, lazy against full; sockets and
#   pipes, processes and threads, 2 and 4 groups), Linux booted full;
# - aarch64: the 4 NEXT_BUDDY rows of docs/results/linux/aarch64.md
#   (sockets and pipes, processes and threads), lazy, from Linux's
#   default features (arm64's 7.2 boots NO_HRTICK);
# - the second set on both arches: lcbench's schbench (wakeup p99) and
#   pgbench (TPS) with RUN_TO_PARITY, PREEMPT_SHORT, DELAY_DEQUEUE and
#   PLACE_LAG each off (docs/results/linux/ab-features.md): the rows of
#   its 8 where Linux's change is significant, 5 on x86_64 and 2 on
#   aarch64 (lazy, NO_HRTICK, as arm64's 7.2 boots).
# Each at 4 vCPUs. Linux's column is read from the transcripts kept in
# docs/results/linux/referee/ (reproducible boots of Debian's Linux 7.2.13
# on the project's QEMU machine; its README says how they were taken), the
# simulator's comes from `sim run` on `qemu:4` with seeds 1-6
# (scripts/linux-compare/sim-rows.sh, as `make linux-compare` runs it),
# and `abtool --versus` scores each row: agree / null / opposite, and
# within 2x.
#
# Fails when a row is opposite, or when fewer rows agree, or agree within
# 2x, than the floors: the tally of the commit that set them. A change to
# the model that loses a row must lower a floor here, in the same commit,
# and say why on the three-way pages. The simulator is deterministic: the
# same tree gives the same tables, whatever the load. About 5 s of CPU.
#
#   scripts/test/referee-test.sh [SIM_BIN [ABTOOL_BIN]]
#   REFEREE_AGREE=11 REFEREE_WITHIN2X=10          x86_64's floors (of 15)
#   REFEREE_ARM_AGREE=4 REFEREE_ARM_WITHIN2X=3    aarch64's (of 4)
#   REFEREE_FEAT_AGREE=4 REFEREE_FEAT_WITHIN2X=0  the second set's (of 5)
#   REFEREE_ARM_FEAT_AGREE=2 REFEREE_ARM_FEAT_WITHIN2X=1   aarch64's (of 2)
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
# shellcheck source=../linux-compare/defaults.sh
. "$(dirname "$0")/../linux-compare/defaults.sh"
h_init referee
target=$H_ROOT/${CARGO_TARGET_DIR:-target}
sim=${1:-$target/release/sim}
abtool=${2:-$target/release/abtool}
ref=$H_ROOT/docs/results/linux/referee
agree_min=${REFEREE_AGREE:-11}
within_min=${REFEREE_WITHIN2X:-10}
arm_agree_min=${REFEREE_ARM_AGREE:-4}
arm_within_min=${REFEREE_ARM_WITHIN2X:-3}
feat_agree_min=${REFEREE_FEAT_AGREE:-4}
feat_within_min=${REFEREE_FEAT_WITHIN2X:-0}
arm_feat_agree_min=${REFEREE_ARM_FEAT_AGREE:-2}
arm_feat_within_min=${REFEREE_ARM_FEAT_WITHIN2X:-1}
for f in "$sim" "$abtool"; do
    [ -x "$f" ] || { h_err "no binary at $f (cargo build --release -p sim -p abtool)"; exit 2; }
done
# floor NAME VALUE MAX: a floor is a whole number of rows, 0..MAX.
floor() {
    [[ $2 =~ ^[0-9]{1,2}$ ]] && ((10#$2 <= $3)) ||
        { h_err "error: $1 must be 0..$3 (of $3 rows), got '$2'"; exit 2; }
}
floor REFEREE_AGREE "$agree_min" 15
floor REFEREE_WITHIN2X "$within_min" 15
floor REFEREE_ARM_AGREE "$arm_agree_min" 4
floor REFEREE_ARM_WITHIN2X "$arm_within_min" 4
floor REFEREE_FEAT_AGREE "$feat_agree_min" 5
floor REFEREE_FEAT_WITHIN2X "$feat_within_min" 5
floor REFEREE_ARM_FEAT_AGREE "$arm_feat_agree_min" 2
floor REFEREE_ARM_FEAT_WITHIN2X "$arm_feat_within_min" 2
status=1
trap 'h_record referee "$((status == 0))" "$((status != 0))"' EXIT

log=$(h_log referee)
: >"$log"
# referee COLUMN PREEMPT CONFIGS ROWS AGREE_MIN WITHIN_MIN WORKLOAD...: the
# rows of one kept column (its directory under $ref, named after its arch,
# with a suffix for a further set); prints the versus table, records
# failures in `fails`.
fails=()
referee() {
    local col=$1 preempt=$2 configs=$3 want=$4 amin=$5 wmin=$6 dir d base tally
    local agree within null opposite rows arch=${1%%-*}
    shift 6
    dir=$H_BUILD/referee/$col
    rm -rf "$dir"
    mkdir -p "$dir/logs"
    local linux=("$ref/$col"/linux-"$arch"_smp4_seed*.log)
    if [ ${#linux[@]} -lt 2 ]; then
        fails+=("$col: no Linux transcripts in $ref/$col")
        return
    fi
    cp "${linux[@]}" "$dir/logs/"
    # The simulator runs sched, whose defaults are ours': it starts from the
    # Linux boot's default features where they differ, as make
    # linux-compare's simulator part does (none on x86_64; NO_HRTICK on
    # arm64, whose 7.2 boots without it).
    if ! d=$(lcd_log_diff "$(lcd_ours_table "$H_ROOT/sched/src/features.rs")" "${linux[0]}"); then
        fails+=("$col: no 'lc: features' line in ${linux[0]}")
        return
    fi
    base=$(sed -n 's/^set: *//p' <<<"$d")
    echo "== $col: the simulator from Linux's defaults (${base:-none differ}), preempt=$preempt" >>"$log"
    # sim-rows.sh's other knobs (SIM_FLAGS, SIM_FLIPS, SIM_MACHINE, SIM_TAG, SIM_SCHBENCH)
    # are cleared: the floors are the default model's; its ARCH (the
    # schbench walk's measured cost) is the column's.
    if ! env -u SIM_FLAGS -u SIM_FLIPS -u SIM_MACHINE -u SIM_TAG -u SIM_SCHBENCH ARCH="$arch" SIM_BASE="$base" PREEMPT="$preempt" \
        "$H_ROOT/scripts/linux-compare/sim-rows.sh" "$sim" "$dir/logs" 4 6 \
        "$configs" "$@" >>"$log" 2>&1; then
        fails+=("$col: the simulator's runs failed; see $log")
        return
    fi
    if ! "$abtool" --out "$dir" "$dir"/logs/*.log >>"$log" 2>&1 ||
        ! "$abtool" --versus "$dir/samples.csv" "linux-$arch" sim-qemu4 >"$dir/versus.txt" 2>>"$log"; then
        fails+=("$col: abtool could not score the transcripts; see $log")
        return
    fi
    cat "$dir/versus.txt"
    tally=$(grep -m1 "^sim-qemu4 against linux-$arch:" "$dir/versus.txt")
    read -r agree within null opposite < <(sed -E -n \
        's/.*: ([0-9]+) agree \(([0-9]+) within 2x\), ([0-9]+) null, ([0-9]+) opposite.*/\1 \2 \3 \4/p' <<<"$tally")
    if [ -z "${opposite:-}" ]; then
        fails+=("$col: no tally line in $dir/versus.txt")
        return
    fi
    rows=$((agree + null + opposite))
    local n=${#fails[@]}
    [ "$rows" -eq "$want" ] || fails+=("$col: $rows rows scored, want the $want where Linux's change is significant")
    [ "$opposite" -eq 0 ] || fails+=("$col: $opposite row(s) opposite to Linux's direction")
    [ "$agree" -ge "$amin" ] || fails+=("$col: $agree rows agree with Linux's direction, the floor is $amin")
    [ "$within" -ge "$wmin" ] || fails+=("$col: $within rows agree within 2x of Linux's change, the floor is $wmin")
    [ ${#fails[@]} -gt "$n" ] ||
        h_say "$col: $agree agree ($within within 2x), $null null, $opposite opposite of $want Linux 7.2 rows (floors $amin, $wmin, 0 opposite)"
}

# x86_64: Linux booted preempt=full; NEXT_BUDDY, NEXT_BUDDY under lazy and
# lazy against full, five hackbench lines: 15 rows.
referee x86_64 full "default|NEXT_BUDDY|preempt=lazy|NEXT_BUDDY,preempt=lazy" 15 "$agree_min" "$within_min" \
    "hackbench -g 2 -l 100" "hackbench -T -g 2 -l 100" "hackbench -p -g 2 -l 100" \
    "hackbench -p -T -g 2 -l 100" "hackbench -p -g 4 -l 50"
# aarch64: arm64's 7.2 runs lazy (its only model here); NEXT_BUDDY on four
# hackbench lines: 4 rows.
referee aarch64 lazy "default|NEXT_BUDDY" 4 "$arm_agree_min" "$arm_within_min" \
    "hackbench -g 2 -l 100" "hackbench -p -g 2 -l 100" "hackbench -T -g 2 -l 100" "hackbench -p -T -g 2 -l 100"
# x86_64's second set (defaults.sh's LCD_CONFIGS2 and LCD_WORKLOADS2):
# Linux booted full; each of four features off against the default, on
# lcbench's schbench and pgbench: 8 rows, 5 of them significant in Linux.
IFS='|' read -ra set2 <<<"$LCD_WORKLOADS2"
referee x86_64-features full "$LCD_CONFIGS2" 5 "$feat_agree_min" "$feat_within_min" "${set2[@]}"
# aarch64's second set: lazy, from arm64's defaults (NO_HRTICK); 8 rows, 2
# of them significant in Linux (PLACE_LAG off, both workloads).
referee aarch64-features lazy "$LCD_CONFIGS2" 2 "$arm_feat_agree_min" "$arm_feat_within_min" "${set2[@]}"
for f in "${fails[@]}"; do h_err "FAIL: $f"; done
[ ${#fails[@]} -eq 0 ] || exit 1
h_say "PASS: the simulator against Linux 7.2's kept columns, both arches and the second set"
status=0
