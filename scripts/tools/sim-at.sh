#!/usr/bin/env bash
# Builds the simulator of one commit, for comparing commits or builds
# (scripts/tools/sim-identity.sh, sim-rows.sh runs of old trees):
#
#   scripts/tools/sim-at.sh COMMIT OUT_DIR [PROFILE]
#
# writes OUT_DIR/sim and OUT_DIR/digest (sim/examples/digest.rs) built from
# COMMIT in PROFILE (release, the default, or dev), and OUT_DIR/commit.
# The commit is checked out in its own scratch worktree (OUT_DIR/src) and
# built into its own target directory (OUT_DIR/target), never one shared
# with another tree. Remove it afterwards with
# `git worktree remove OUT_DIR/src` (and OUT_DIR).
#
# Why: cargo decides that a workspace member is up to date from its
# sources' modification times, and keys its artifacts by the package's
# path *inside* the workspace. Two checkouts of different commits that
# share a CARGO_TARGET_DIR therefore share artifacts, and the second
# one's build does nothing ("Finished", no "Compiling") when its files
# are older than the first one's artifacts: a tree unpacked by
# `git archive | tar x` (files dated at their commit) or a worktree made
# before the other tree was built. Its "build" is then the other commit's
# binary. That made four commits' release builds one binary (65b7ef7's)
# and looked like output that depends on how the simulator is compiled
# (docs/results/linux.md).
set -euo pipefail

[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: $0 COMMIT OUT_DIR [release|dev]" >&2; exit 2; }
profile=${3:-release}
[[ $profile == release || $profile == dev ]] || { echo "error: sim-at: profile '$profile' is not release or dev" >&2; exit 2; }
root=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
sha=$(git -C "$root" rev-parse -q --verify "$1^{commit}") || { echo "error: sim-at: '$1' is not a commit" >&2; exit 2; }
out=$(mkdir -p "$2" && cd "$2" && pwd)
src=$out/src
if [[ -e $src ]]; then
    git -C "$src" checkout -q --detach "$sha"
else
    git -C "$root" worktree add -q --detach "$src" "$sha"
fi
dir=release
[[ $profile == dev ]] && dir=debug
(cd "$src" && CARGO_TARGET_DIR="$out/target" cargo build -q -p sim --profile "$profile" --bin sim --example digest)
cp "$out/target/$dir/sim" "$out/sim"
cp "$out/target/$dir/examples/digest" "$out/digest"
echo "$sha $profile" >"$out/commit"
echo "sim-at: $out/sim, $out/digest: $sha ($profile)" >&2
