#!/usr/bin/env bash
# Runs the `sched` crate's tests under Miri (undefined behaviour, aliasing,
# leaks) on a nightly toolchain installed for this purpose only; the rest of
# the tree stays on the stable toolchain of rust-toolchain.toml.
#
#   scripts/tools/miri.sh [TOOLCHAIN] [PROPTEST_CASES]
#
# Miri interprets ~1000x slower than native code: the property tests run a
# few cases only (PROPTEST_CASES, default 4). Isolation is disabled only
# because proptest reads the clock and the environment.
set -euo pipefail
tc=${1:-nightly}
cases=${2:-4}
if ! rustup run "$tc" cargo miri --version >/dev/null 2>&1; then
    echo "miri: installing toolchain $tc with miri" >&2
    rustup toolchain install "$tc" --profile minimal --component miri,rust-src
fi
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.."
# Miri's own target dir: its artefacts are not stable-compatible.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/miri"
rustup run "$tc" cargo miri setup
PROPTEST_CASES=$cases PROPTEST_MAX_SHRINK_ITERS=0 \
    MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}" \
    rustup run "$tc" cargo miri test -p sched --features oracle "${@:3}"
