#!/usr/bin/env bash
# rustc wrapper for `cargo build/run` from kernel/ (kernel/.cargo/config.toml):
# on the first call of a build whose toolchain lacks the bare-metal targets,
# runs scripts/setup/ensure-toolchain.sh, then execs rustc unchanged. The check is
# one directory test, so the wrapper costs nothing once the targets exist.
rustc=$1
shift
sysroot=$(cd "$(dirname "$(command -v "$rustc")")/.." 2>/dev/null && pwd)
if [ ! -d "$sysroot/lib/rustlib/x86_64-unknown-none" ] || [ ! -d "$sysroot/lib/rustlib/aarch64-unknown-none" ]; then
    "$(dirname "$0")/ensure-toolchain.sh" >&2 || exit 1
fi
exec "$rustc" "$@"
