#!/usr/bin/env bash
# Installs what `make images` and `make test-firmware` need, from Debian's
# packages, when it is missing (fresh machines and CI), like ensure-qemu.sh:
#
#   ovmf               x86_64 UEFI firmware (OVMF_CODE.fd / OVMF_VARS.fd)
#   qemu-efi-aarch64   aarch64 UEFI firmware (edk2's AAVMF_CODE.fd / QEMU_EFI.fd)
#   u-boot-qemu        U-Boot for QEMU virt (qemu_arm64/u-boot.bin)
#   u-boot-tools       mkimage, for U-Boot's boot.scr
#   grub-pc-bin, grub-efi-amd64-bin, grub-common, xorriso, mtools
#                      the hybrid (BIOS + UEFI) x86 ISO (grub-mkrescue)
#   dosfstools         mkfs.fat, for the aarch64 FAT images
#
# GRUB's arm64 EFI modules (grub-efi-arm64-bin) are built for arm64 only:
# Debian has no amd64 package of them, and installing the arm64 one would pull
# in grub-common:arm64 in place of the amd64 one. So on a non-arm64 host the
# arm64 package is fetched with apt-get download into build/firmware/ (with
# its own package lists, so the machine's apt configuration is not changed)
# and unpacked there: grub-mkstandalone (amd64) builds an arm64 EFI GRUB from
# those modules. Prints where they are with --grub-arm64-dir.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fwdir="$(cd "$here/../.." && pwd)/build/firmware"

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

need=()
[ -f /usr/share/OVMF/OVMF_CODE_4M.fd ] || [ -f /usr/share/OVMF/OVMF_CODE.fd ] || need+=(ovmf)
[ -f /usr/share/AAVMF/AAVMF_CODE.fd ] || need+=(qemu-efi-aarch64)
[ -f /usr/lib/u-boot/qemu_arm64/u-boot.bin ] || need+=(u-boot-qemu)
command -v mkimage >/dev/null 2>&1 || need+=(u-boot-tools)
command -v grub-mkrescue >/dev/null 2>&1 || need+=(grub-common)
[ -d /usr/lib/grub/i386-pc ] || need+=(grub-pc-bin)
[ -d /usr/lib/grub/x86_64-efi ] || need+=(grub-efi-amd64-bin)
command -v xorriso >/dev/null 2>&1 || need+=(xorriso)
command -v mcopy >/dev/null 2>&1 || need+=(mtools)
command -v mkfs.fat >/dev/null 2>&1 || need+=(dosfstools)
host_arch=$(dpkg --print-architecture)
[ "$host_arch" != arm64 ] || [ -d /usr/lib/grub/arm64-efi ] || need+=(grub-efi-arm64-bin)
if ((${#need[@]})); then
    echo "ensure-firmware: installing ${need[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi

grub_arm64=/usr/lib/grub/arm64-efi
if [ "$host_arch" != arm64 ]; then
    grub_arm64="$fwdir/grub-efi-arm64-bin/usr/lib/grub/arm64-efi"
    if [ ! -f "$grub_arm64/linux.mod" ]; then
        echo "ensure-firmware: fetching grub-efi-arm64-bin (arm64) into $fwdir" >&2
        apt_dir="$fwdir/apt"
        rm -rf "$apt_dir" "$fwdir/grub-efi-arm64-bin" "$fwdir"/grub-efi-arm64-bin_*_arm64.deb
        mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
        # The machine's sources, package lists of its own and arm64 added:
        # nothing under /var/lib/apt or /etc/apt changes.
        opts=(-o "APT::Architectures::=$host_arch" -o "APT::Architectures::=arm64"
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir"
            -o "Dir::Cache::archives=$apt_dir/archives" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
        apt-get -qq "${opts[@]}" update >/dev/null
        (cd "$fwdir" && apt-get -qq "${opts[@]}" download grub-efi-arm64-bin:arm64 >/dev/null)
        dpkg-deb -x "$fwdir"/grub-efi-arm64-bin_*_arm64.deb "$fwdir/grub-efi-arm64-bin"
        rm -rf "$apt_dir"
        [ -f "$grub_arm64/linux.mod" ] || { echo "ensure-firmware: no arm64-efi GRUB modules in the package" >&2; exit 1; }
    fi
fi
if [ "${1:-}" = --grub-arm64-dir ]; then
    echo "$grub_arm64"
fi
