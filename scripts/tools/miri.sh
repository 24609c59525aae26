#!/usr/bin/env bash
# Runs every test target of the `sched` crate under Miri (undefined
# behaviour, aliasing violations, leaks, data races between the tests'
# threads) on a nightly toolchain installed for this purpose only; the rest
# of the tree stays on the stable toolchain of rust-toolchain.toml.
#
#   scripts/tools/miri.sh [TOOLCHAIN] [PROPTEST_CASES] [cargo test args...]
#
# By default: the unit tests and the two test binaries of tests/
# (`integration`, every file but one as a module, and `memory`), with the
# features `oracle` and `axsched` that the oracle, fair_server,
# server_fast_path, axsched and axtask modules need; extra arguments such as
# `--test integration hotplug::` (one file's tests) pick targets and tests.
#
# Miri interprets ~1000x slower than native code (several thousand times
# an optimised build). The tests shrink their sizes under `cfg(miri)` (fewer
# ticks, seeds, tasks, cases; each reduction is commented where it is made,
# and no assertion is dropped), the property tests run a few cases only
# (PROPTEST_CASES, default 4) and draw from proptest's XorShift generator
# (PROPTEST_RNG_ALGORITHM=xs): its default, ChaCha20, seeds a new generator
# for every value drawn, and under Miri those ChaCha blocks were 44% of the
# oracle target's time. Isolation is disabled only because proptest
# and the threaded tests read the clock and the environment. The whole run's
# times per target are in docs/testing.md.
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
PROPTEST_CASES=$cases PROPTEST_MAX_SHRINK_ITERS=0 PROPTEST_RNG_ALGORITHM=xs \
    MIRIFLAGS="${MIRIFLAGS:--Zmiri-disable-isolation}" \
    rustup run "$tc" cargo miri test -p sched --features oracle,axsched "${@:3}"
