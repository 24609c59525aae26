#!/usr/bin/env bash
# make bench-compare A=<commit> B=<commit>: the in-kernel bench of two commits
# side by side (mmtests-style, abtool --compare): per workload and preempt
# model, A's and B's mean, stddev, CoV, % change and Welch's t-test over
# every kept run of every boot.
#
#   scripts/tools/bench-compare.sh A B
#
# Each commit's samples are build/bench/<short sha>.csv (what `make bench`
# writes for a clean tree at that commit); a missing one is made first with
# scripts/tools/kbench.sh COMMIT (a temporary worktree, about two minutes).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $# -ne 2 ]]; then
    echo "usage: $0 COMMIT_A COMMIT_B   (make bench-compare A=... B=...)" >&2
    exit 2
fi
names=()
mkdir -p "$root/build/bench"
for c in "$1" "$2"; do
    sha=$(git -C "$root" rev-parse --short=10 --verify -q "$c^{commit}") ||
        { echo "error: bench-compare: '$c' is not a commit" >&2; exit 2; }
    if [[ ! -f $root/build/bench/$sha.csv ]]; then
        echo "bench-compare: no build/bench/$sha.csv: running the in-kernel bench of $sha"
        "$here/kbench.sh" "$sha" >"$root/build/bench/kbench-$sha.log" 2>&1 ||
            { echo "error: bench-compare: the bench of $sha failed; see build/bench/kbench-$sha.log" >&2; exit 1; }
    fi
    names+=("$sha")
done
cd "$root"
cargo run -q -p abtool --release -- --compare "build/bench/${names[0]}.csv" "build/bench/${names[1]}.csv" "${names[@]}"
