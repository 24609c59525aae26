#!/usr/bin/env bash
# Installs QEMU from Debian's packages when it is missing (fresh machines and CI).
set -euo pipefail
need=()
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
command -v qemu-system-aarch64 >/dev/null 2>&1 || need+=(qemu-system-arm)
[ -f /usr/share/qemu/qboot.rom ] || need+=(qemu-system-data)
((${#need[@]})) || exit 0
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
echo "ensure-qemu: installing ${need[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
