#!/usr/bin/env bash
# Instructions per steady-state cycle (clock advance + task_tick +
# pick_next_task) of the host scheduler, counted by callgrind: the whole
# program's instruction count with 200 000 cycles minus that with 100 000,
# divided by 100 000, so setup and warm-up cancel. Deterministic (the rig's
# random numbers are seeded), so one run per point is the whole sample.
#
#   bench/cycle-instructions.sh [N...]      (default: 10 10000)
#
# N = idle: the idle cycle instead (`bench --idle-cycle-only`: one fair
# task sleeps, the CPU goes idle, the task wakes and is picked); N =
# smp-idle: the same through smp::Scheduler's lifecycle calls
# (`bench --smp-idle-cycle-only`: schedule, finish_switch, wake, on a
# 2-CPU machine).
#
# The binary is the LTO bench profile `make bench` uses
# (target/release/bench); it is built first. Needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "error: valgrind not installed (apt-get install valgrind)" >&2; exit 2; }
cargo build -q -p bench --profile bench --bin bench
# The bench profile builds into release/ (cargo names it after its parent).
bin=target/release/bench
[ -n "${CARGO_TARGET_DIR:-}" ] && bin=$CARGO_TARGET_DIR/release/bench
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count() { # N COUNT -> total instructions
    local mode=(--cycle-only "$1")
    [ "$1" = idle ] && mode=(--idle-cycle-only)
    [ "$1" = smp-idle ] && mode=(--smp-idle-cycle-only)
    valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$1.$2" "$bin" "${mode[@]}" "$2" >/dev/null 2>"$tmp/log"
    awk '/^summary:/ {print $2}' "$tmp/cg.$1.$2"
}
[ $# -gt 0 ] || set -- 10 10000
for n in "$@"; do
    a=$(count "$n" 100000)
    b=$(count "$n" 200000)
    awk -v n="$n" -v a="$a" -v b="$b" 'BEGIN { printf "n=%s: %.2f instructions per cycle\n", n, (b - a) / 100000 }'
done
