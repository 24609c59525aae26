#!/bin/bash
# Checks that a change to the simulator meant to leave its results alone
# (a speed-up) does: the outputs of two builds, byte for byte.
#
#   scripts/tools/sim-identity.sh BEFORE_DIR AFTER_DIR
#
# Each directory holds a release build's `sim` and `digest`
# (target/release/sim and target/release/examples/digest, copied before
# and after the change:
#   cargo build -p sim --release --bin sim --example digest;
# or of two commits: scripts/tools/sim-at.sh COMMIT DIR, which builds
# each tree in its own target directory).
# Compared: 20 `sim run`s (hackbench pipes and sockets, processes and
# threads, schbench, pgbench, dbench; graviton3, cascadelake-2s,
# epyc-ccx, small, qemu:4; several seeds and configurations; each with
# and without --machine-noise), their wall-time line left out; the digest
# matrix (588 runs) with and without --machine-noise, each also with
# --no-batch (which must give the default run's digests); `sim study
# --quick` (its files, less the line giving its wall time). Prints the
# first difference and exits 1 on any; 0 and "same" otherwise.
set -euo pipefail

if [ $# -ne 2 ] || [ ! -x "$1/sim" ] || [ ! -x "$2/sim" ] || [ ! -x "$1/digest" ] || [ ! -x "$2/digest" ]; then
    echo "usage: $0 BEFORE_DIR AFTER_DIR (each with executables sim and digest)" >&2
    exit 2
fi
before=$(cd "$1" && pwd)
after=$(cd "$2" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

runs() {
    local bin=$1 dir=$2 i=0 n
    mkdir -p "$dir"
    run() {
        i=$((i + 1))
        echo "sim run $*" >"$dir/$i.txt"
        "$bin" run "$@" 2>&1 | grep -v " s wall" >>"$dir/$i.txt" || true
    }
    for n in "" "--machine-noise"; do
        run --machine graviton3 --config NO_NEXT_BUDDY --ms 20 $n hackbench groups=16 loops=20000 ipc=pipe
        run --machine graviton3 --config NO_NEXT_BUDDY --seed 7 --ms 20 $n hackbench groups=16 loops=20000 ipc=socket
        run --machine cascadelake-2s --seed 3 --ms 20 $n hackbench groups=8 loops=2000 ipc=pipe
        # qemu:N has no machine noise: small instead.
        if [ -z "$n" ]; then
            run --machine qemu:4 --seed 2 --ms 20 hackbench groups=4 loops=500 ipc=socket
        else
            run --machine small --seed 2 --ms 20 $n hackbench groups=4 loops=500 ipc=socket
        fi
        run --machine graviton3 --seed 5 --ms 50 $n schbench
        run --machine epyc-ccx --seed 4 --ms 50 $n schbench
        run --machine graviton3 --seed 6 --ms 50 $n pgbench
        run --machine cascadelake-2s --seed 9 --ms 50 $n pgbench
        run --machine small --seed 11 --ms 50 $n dbench
        run --machine graviton3 --config NEXT_BUDDY --seed 12 --ms 20 $n hackbench groups=16 loops=20000 ipc=pipe mode=thread
    done
}

# Two copies of one binary compare nothing: say so (a docs-only change
# builds the same binary; a stale build of another tree does too, see
# scripts/tools/sim-at.sh).
if cmp -s "$before/sim" "$after/sim"; then
    echo "sim-identity: note: BEFORE and AFTER hold the same sim binary" >&2
fi
fail=0
for side in before after; do
    dir=${!side}
    echo "sim-identity: $side: sim runs" >&2
    runs "$dir/sim" "$out/$side/runs"
    for flags in "" "--machine-noise"; do
        name=digest${flags:+-noise}
        echo "sim-identity: $side: digest $flags" >&2
        "$dir/digest" $flags >"$out/$side/$name.txt"
        "$dir/digest" --no-batch $flags >"$out/$side/$name-nobatch.txt"
        if ! cmp -s "$out/$side/$name.txt" "$out/$side/$name-nobatch.txt"; then
            echo "sim-identity: $side: digest $flags differs with --no-batch" >&2
            fail=1
        fi
    done
    echo "sim-identity: $side: study --quick" >&2
    "$dir/sim" study --quick --jobs 1 --out "$out/$side/study" 2>&1 |
        grep -v " s wall\|^study: wrote" >"$out/$side/study.txt"
    sed -i '/ s wall$/d' "$out/$side/study/tables.txt"
done
if ! diff -r "$out/before" "$out/after" >"$out/diff.txt"; then
    echo "sim-identity: outputs differ:" >&2
    head -20 "$out/diff.txt" >&2
    fail=1
fi
if [ $fail -ne 0 ]; then
    exit 1
fi
echo "sim-identity: same ($(find "$out/before" -type f | wc -l) files each)"
