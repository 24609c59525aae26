#!/usr/bin/env bash
# Prints the path of a QEMU 10 qemu-system-aarch64, fetching it when needed.
#
#   scripts/setup/ensure-qemu10.sh [OUT_DIR]     (default build/qemu-10)
#
# Why: QEMU 7.2 (Debian 12's) starves an aarch64 vCPU under -icount's
# round-robin (docs/notes/aarch64-icount-hang.md), so the aarch64 timing
# suite could only run at 1 CPU. QEMU 10.0 runs it at 2 and 4 CPUs. Its
# x86_64 emulator is not used: under -icount it stops our kernel at once
# with "Bad icount read", so x86_64 stays on the system's QEMU.
#
# When the system's qemu-system-aarch64 is already 10 or newer, that is the
# answer. Otherwise the packages qemu-system-arm, qemu-system-common and
# qemu-system-data come from the machine's own suite's backports (e.g.
# bookworm-backports) through a private apt configuration
# (scripts/lib/apt.sh), and are unpacked (dpkg-deb -x) under OUT_DIR: the
# system's packages and apt set-up do not change. The emulator uses the
# shared libraries that the system's QEMU (scripts/setup/ensure-qemu.sh)
# already brought in; a missing one is an error. Cached: a second run
# downloads nothing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build/qemu-10}
major() { "$1" --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9]*\).*/\1/p' | head -1; }
sys=$(command -v qemu-system-aarch64 || true)
if [[ -n $sys && $(major "$sys") -ge 10 ]]; then
    echo "$sys"
    exit 0
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$out/x/usr/bin/qemu-system-aarch64
if [[ ! -x $bin || ! -f $out/.complete ]]; then
    # shellcheck source=../lib/apt.sh
    . "$here/../lib/apt.sh"
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [[ -n $codename ]] || { echo "error: ensure-qemu10: no VERSION_CODENAME in /etc/os-release" >&2; exit 1; }
    suite=$codename-backports
    apt_private "$out/apt" "$suite" amd64
    echo "ensure-qemu10: fetching qemu-system-arm from $suite (private apt configuration, into $out)" >&2
    apt-get "${APT_OPTS[@]}" -qq update >&2
    v=$(apt-cache "${APT_OPTS[@]}" show qemu-system-arm 2>/dev/null | sed -n 's/^Version: //p' | sort -V | tail -1)
    [[ ${v#*:} =~ ^1[0-9]\. ]] || { echo "error: ensure-qemu10: $suite has qemu-system-arm '${v:-none}', not 10.x" >&2; exit 1; }
    rm -rf "$out/debs" "$out/x"
    mkdir -p "$out/debs"
    (cd "$out/debs" && apt-get "${APT_OPTS[@]}" download "qemu-system-arm=$v" "qemu-system-common=$v" "qemu-system-data=$v" 2>&1 |
        grep -vE '^W: Download is performed unsandboxed|^Get:|^Fetched' >&2 || true)
    for d in "$out"/debs/*.deb; do dpkg-deb -x "$d" "$out/x"; done
    touch "$out/.complete"
fi
if missing=$(ldd "$bin" | grep 'not found'); then
    echo "error: ensure-qemu10: $bin lacks libraries: $missing" >&2
    exit 1
fi
[[ $(major "$bin") -ge 10 ]] || { echo "error: ensure-qemu10: $bin is not QEMU 10" >&2; exit 1; }
echo "$bin"
