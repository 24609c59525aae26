#!/usr/bin/env bash
# Makes sure the toolchain named in rust-toolchain.toml has the bare-metal
# targets and the components that file lists. rustup applies that file's
# `targets`/`components` only when it installs the toolchain itself; an
# already-installed toolchain (profile minimal, host target only) keeps its
# gaps, and with RUSTUP_AUTO_INSTALL=0 rustup installs nothing on its own.
# Idempotent and quiet: prints one line, and only when it installed something.
#
#   scripts/setup/ensure-toolchain.sh          install what is missing
#   scripts/setup/ensure-toolchain.sh --check  install nothing; fail with a message
#                                        naming what is missing
set -euo pipefail
cd "$(dirname "$0")/../.."
file=rust-toolchain.toml
# The one-line arrays of rust-toolchain.toml: channel = "x", targets = ["a", "b"].
field() { sed -n "s/^$1[[:space:]]*=[[:space:]]*//p" "$file" | tr -d '[]",' ; }
channel=$(field channel)
targets=$(field targets)
components=$(field components)
[ -n "$channel" ] || { echo "ensure-toolchain: no channel in $file" >&2; exit 1; }

if ! command -v rustup >/dev/null 2>&1; then
    # No rustup: a distribution toolchain. Check that the targets' core exists.
    for t in $targets; do
        sysroot=$(rustc --print sysroot)
        [ -d "$sysroot/lib/rustlib/$t" ] || {
            echo "ensure-toolchain: rustc has no '$t' target and there is no rustup to add it" >&2; exit 1; }
    done
    exit 0
fi

# `rustup toolchain list` names e.g. "1.95.0-x86_64-unknown-linux-gnu (active)".
if ! rustup toolchain list 2>/dev/null | grep "^$channel[- ]" >/dev/null; then
    if [ "${1:-}" = --check ]; then
        echo "ensure-toolchain: FAIL: toolchain $channel is not installed; run scripts/setup/ensure-toolchain.sh" >&2; exit 1
    fi
    echo "ensure-toolchain: installing toolchain $channel (rustup, profile minimal)" >&2
    rustup toolchain install "$channel" --profile minimal --no-self-update >/dev/null 2>&1
fi

have_t=$(rustup +"$channel" target list --installed 2>/dev/null)
have_c=$(rustup +"$channel" component list --installed 2>/dev/null | sed 's/-x86_64.*\|-aarch64.*//')
need_t=(); need_c=()
for t in $targets; do grep -qx "$t" <<<"$have_t" || need_t+=("$t"); done
for c in $components; do grep -qx "$c" <<<"$have_c" || need_c+=("$c"); done
((${#need_t[@]} + ${#need_c[@]})) || exit 0

if [ "${1:-}" = --check ]; then
    echo "ensure-toolchain: FAIL: toolchain $channel lacks ${need_t[*]} ${need_c[*]}; run scripts/setup/ensure-toolchain.sh (make does it)" >&2
    exit 1
fi
echo "ensure-toolchain: rustup: adding to $channel: ${need_t[*]} ${need_c[*]}" >&2
((${#need_t[@]})) && rustup target add --toolchain "$channel" "${need_t[@]}" >/dev/null 2>&1
((${#need_c[@]})) && rustup component add --toolchain "$channel" "${need_c[@]}" >/dev/null 2>&1
exit 0
