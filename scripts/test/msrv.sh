#!/usr/bin/env bash
# The sched crate as it is published, alone, on its declared minimum Rust
# version: `cargo package` makes the .crate, it is unpacked outside the
# workspace (its own workspace root, with the workspace's Cargo.lock so the
# dependency versions are the tested ones), and its whole test suite runs
# on the `rust-version` its Cargo.toml declares. That toolchain is installed
# the way scripts/setup/ensure-toolchain.sh installs targets (rustup, profile
# minimal). Cargo refuses a toolchain older than `rust-version`, so a pass
# also proves the declaration is not newer than the toolchain used.
#
#   scripts/test/msrv.sh
set -euo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init msrv
cd "$H_ROOT"
manifest=sched/Cargo.toml
msrv=$(sed -n 's/^rust-version[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' "$manifest")
version=$(sed -n 's/^version[[:space:]]*=[[:space:]]*"\(.*\)"/\1/p' "$manifest" | head -1)
[ -n "$msrv" ] && [ -n "$version" ] || {
    echo "msrv: FAIL: $manifest has no literal rust-version/version (a published crate must not inherit them)" >&2; exit 1; }

if ! command -v rustup >/dev/null 2>&1; then
    echo "msrv: FAIL: needs rustup to install Rust $msrv" >&2; exit 1
fi
if ! rustup toolchain list 2>/dev/null | grep "^$msrv[-. ]" >/dev/null; then
    echo "msrv: installing toolchain $msrv (rustup, profile minimal)" >&2
    rustup toolchain install "$msrv" --profile minimal --no-self-update >/dev/null 2>&1 || {
        echo "msrv: FAIL: rustup could not install $msrv" >&2; exit 1; }
fi

out=$PWD/build/msrv
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
cargo package -q -p sched --allow-dirty --no-verify
crate=$target_dir/package/sched-$version.crate
[ -f "$crate" ] || { echo "msrv: FAIL: cargo package made no $crate" >&2; exit 1; }
rm -rf "$out/src"
mkdir -p "$out/src"
tar -xzf "$crate" -C "$out/src"
pkg=$out/src/sched-$version
cp Cargo.lock "$pkg/"
# `cargo package` stores fixed timestamps, so every extraction has the same
# mtimes and cargo would take the last run's build of the crate as fresh
# (seen: a module added since was missing). New mtimes rebuild it; its
# dependencies stay cached.
find "$pkg" -type f -exec touch {} +
# Its own workspace root: cargo must not take it for a stray member of ours.
printf '\n[workspace]\n' >>"$pkg/Cargo.toml"

echo "msrv: the packaged sched $version, alone, on Rust $msrv" >&2
cd "$pkg"
rc=0
PROPTEST_CASES=${PROPTEST_CASES:-32} CARGO_TARGET_DIR=$out/target \
    cargo +"$msrv" test --features axsched,oracle >"$out/test.log" 2>&1 || rc=$?
grep -E '^test result|^error|FAILED|panicked' "$out/test.log" || true
h_cargo_counts "$out/test.log"
[ "$rc" -ne 0 ] && [ "$H_FAILED" -eq 0 ] && H_FAILED=1
h_record "cargo msrv $msrv" "$H_PASSED" "$H_FAILED" "$H_SKIPPED"
[ "$rc" -eq 0 ] || { echo "msrv: FAIL: the packaged crate's tests on Rust $msrv (build/msrv/test.log)" >&2; exit 1; }
echo "msrv: ok: sched $version builds alone and passes its tests on Rust $msrv" >&2
