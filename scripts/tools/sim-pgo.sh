#!/bin/bash
# A profile-guided build of the simulator (rustc's -Cprofile-generate and
# -Cprofile-use, stable Rust): the same code and the same output byte for
# byte (scripts/tools/sim-identity.sh), laid out and inlined by where
# `sim bench`'s rows spend their time. See docs/design/simulator.md,
# "What bounds the time; a profile-guided build".
#
#   scripts/tools/sim-pgo.sh [OUT_DIR]     (default: target/pgo)
#
# Builds an instrumented `bench_row` (sim/examples/bench_row.rs) in
# OUT_DIR/gen, runs the bench's three hackbench rows with it for 100
# simulated ms each, merges their profiles, and builds `sim` and
# `bench_row` with the profile in OUT_DIR/use: OUT_DIR/use/release/sim
# bench runs the bench on the result. The normal build (target/) is left
# alone. Needs the toolchain's llvm-profdata (`rustup component add
# llvm-tools`), whose LLVM matches rustc's; without it, exits 2 before
# building anything.
set -euo pipefail

cd "$(dirname "$0")/../.."
out=${1:-target/pgo}
cargo=${CARGO:-cargo}
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
    echo "sim-pgo: no $profdata (rustup component add llvm-tools)" >&2
    exit 2
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
data="$out/profiles"
rm -rf "$data"
mkdir -p "$data"

CARGO_TARGET_DIR="$out/gen" RUSTFLAGS="-Cprofile-generate=$data" \
    "$cargo" build -q -p sim --release --example bench_row
for kind in pipe socket noise; do
    LLVM_PROFILE_FILE="$data/$kind-%p.profraw" "$out/gen/release/examples/bench_row" "$kind" 100
done
"$profdata" merge -o "$out/sim.profdata" "$data"
CARGO_TARGET_DIR="$out/use" RUSTFLAGS="-Cprofile-use=$out/sim.profdata" \
    "$cargo" build -q -p sim --release --bin sim --example bench_row --example digest
echo "sim-pgo: $out/use/release/sim"
