#!/usr/bin/env bash
# The layout noise of make bench-kernel, and its baseline.
#
#   scripts/tools/kbench-noise.sh [--record]
#
# Under QEMU -icount a boot is deterministic, so two runs of one kernel give
# the same figures; what moves a figure between two builds whose scheduler
# code is the same is where code and data land (memcpy's alignment paths,
# for one) and the phase of the tick against the workload (any change in
# the instructions run before it). This script measures that: it builds the
# committed HEAD three more times in a scratch worktree (KN_DIR, default
# build/kbench-noise of this checkout, so that two checkouts never share
# it), each with an unrelated change in
# kernel/src/main.rs that the bench never calls into,
#
#   noise-1: 8 never-called padding functions and a boot-time loop of 1000
#            iterations (code addresses, boot time),
#   noise-2: 24 bytes allocated and leaked at boot (every later heap address:
#            stacks, runqueues, task cells, wake lists),
#   noise-3: 200 bytes leaked and 3 padding functions,
#
# (Code addresses and the boot's length alone moved no figure at all, at
# 324db8b: each run starts at a tick, and no scheduler path's instruction
# count depends on where the code is. Heap addresses can: memcpy takes
# other paths for other alignments.)
#
# and runs the in-kernel bench on each (kbench.sh, KBENCH_ELF), samples in
# build/bench/noise-N.csv. Then it prints, per figure, HEAD's mean and how far
# each noise build moved it. With --record it also benches HEAD itself and
# writes bench/kernel-baseline.txt: HEAD's means, each with its per-run
# stddev and run count (for the check's significance test) and the largest
# noise shift (at least twice the standard error of its mean, and the
# floors below) as its tolerance (abtool --baseline-record). Every kernel, HEAD's own included,
# is built from the committed HEAD in the scratch worktree (uncommitted
# changes in the work tree are not measured). Four benches of 6 boots
# each: about 4 minutes at a host load of 2-5 (2026-12-04), more on a busier
# host or from a cold target directory.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
record=0
case ${1:-} in
    --record) record=1 ;;
    "") ;;
    *) echo "usage: $0 [--record]" >&2; exit 2 ;;
esac
sha=$(git -C "$root" rev-parse --short=10 HEAD)
KN_DIR=${KN_DIR:-$root/build/kbench-noise}
src=$KN_DIR/src
mkdir -p "$KN_DIR" "$root/build/bench"
git -C "$root" worktree remove --force "$src" 2>/dev/null || rm -rf "$src"
git -C "$root" worktree add -q --detach "$src" HEAD
trap 'git -C "$root" worktree remove --force "$src"' EXIT

# pad LOOPS FUNCTIONS LEAK: the unrelated change, on a clean checkout.
pad() {
    git -C "$src" checkout -q -- kernel/src/main.rs
    [[ $1 == 0 && $2 == 0 && $3 == 0 ]] && return 0
    python3 - "$src/kernel/src/main.rs" "$1" "$2" "$3" <<'EOF'
import sys
path, loops, fns, leak = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = open(path).read()
anchor = "    HZ.store(args.hz, Ordering::Relaxed);\n"
assert anchor in s, "kbench-noise: anchor line not found in kernel/src/main.rs"
loop = ("    {\n        let mut x = 1u64;\n        for i in 0..%d {\n"
        "            x = core::hint::black_box(x.wrapping_mul(31).wrapping_add(i));\n"
        "        }\n        core::hint::black_box(x);\n    }\n" % loops)
if leak:
    loop += "    alloc::vec![1u8; %d].leak();\n" % leak
s = s.replace(anchor, anchor + loop)
for k in range(fns):
    body = "".join("    x = core::hint::black_box(x ^ 0x%x).wrapping_mul(%d);\n" % ((k * 977 + j * 131) & 0xffffffff, j + 3)
                   for j in range(40))
    s += ("\n#[inline(never)]\nfn layout_pad_%d(mut x: u64) -> u64 {\n%s    x\n}\n"
          "#[used]\nstatic LAYOUT_PAD_%d: fn(u64) -> u64 = layout_pad_%d;\n" % (k, body, k, k))
open(path, "w").write(s)
EOF
}

# bench NAME LOOPS FUNCTIONS LEAK: build HEAD with that padding and bench
# it into build/bench/NAME.csv.
bench() {
    pad "$2" "$3" "$4"
    (cd "$src" && CARGO_TARGET_DIR=$KN_DIR/target nice -n 5 cargo build -q -p kernel \
        --target x86_64-unknown-none --release)
    cp "$KN_DIR/target/x86_64-unknown-none/release/kernel" "$KN_DIR/$1.elf"
    KBENCH_ELF=$KN_DIR/$1.elf KBENCH_NAME=$1 nice -n 5 "$here/kbench.sh" >"$KN_DIR/$1.log" 2>&1 ||
        { echo "error: kbench-noise: the bench of $1 failed; see $KN_DIR/$1.log" >&2; exit 1; }
}

echo "kbench-noise: HEAD ($sha) as committed"
bench "$sha" 0 0 0
base=$root/build/bench/$sha.csv
variants=("1000 8 0" "0 0 24" "0 3 200")
noise=()
for i in "${!variants[@]}"; do
    n=$((i + 1))
    read -r loops fns leak <<<"${variants[$i]}"
    echo "kbench-noise: noise-$n: HEAD ($sha) with a $loops-iteration boot loop, $fns padding functions, $leak bytes leaked"
    bench "noise-$n" "$loops" "$fns" "$leak"
    noise+=("$root/build/bench/noise-$n.csv")
done
cd "$root"
out=$KN_DIR/baseline.txt
[[ $record == 1 ]] && out=$root/bench/kernel-baseline.txt
mkdir -p "$(dirname "$out")"
# The floors: builds of different commits that do not touch the measured
# paths (scripts/tools/kbisect.sh; docs/benchmarks.md) moved an average by
# up to 0.09% (perfpipe -s between bc4aec9 and 31d8cfd) and cyclictest's
# maximum by +220% (7.5 -> 24.1 us, the same pair: whether one sample of a
# run meets CPU 0's tick work), which these padded builds do not reproduce
# (each run starts at a tick). cyclictest's average: a build that changed
# only a kernel test's code (600e169 against the baseline of b044f33) moved
# it by -1.24%, +0.67%, -0.23% and -1.21% in the four preempt models, which
# the padded builds did not reproduce either.
cargo run -q -p abtool --release -- --baseline-record "$base" "$out" --floor 0.1 \
    --floor lat_max_us=220 --floor lat_avg_us=1.5 "${noise[@]}"
for f in "${noise[@]}"; do
    echo "== $(basename "$f" .csv) against HEAD ($sha)"
    cargo run -q -p abtool --release -- --baseline-check "$out" "$f" | grep -v '^abtool:' || true
done
echo "kbench-noise: tolerances in $out"
