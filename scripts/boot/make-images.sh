#!/usr/bin/env bash
# Builds the boot images for real machines into OUT (default build/images):
#
#   sched-x86_64.iso            GRUB ISO, BIOS and UEFI (hybrid: CD or USB stick)
#   sched-aarch64-uboot.img     disk for U-Boot boards: FAT with Image + boot.scr
#   sched-aarch64-esp.img       disk for UEFI arm64 machines: ESP with the
#                               kernel as EFI/BOOT/BOOTAA64.EFI
#   sched-aarch64-esp-grub.img  the same ESP with GRUB arm64 as BOOTAA64.EFI,
#                               EFI/BOOT/grub.cfg (`linux /Image`) and /Image
#
#   scripts/boot/make-images.sh X86_64_ELF AARCH64_ELF [OUT]
#
# ARGS (environment) is the kernel command line put into each image's boot
# configuration (default none: the kernel boots to the sched> shell). The
# BOOTAA64.EFI-only ESP has no configuration: UEFI passes no options to a
# removable-media boot, so the kernel uses the device tree's bootargs there.
set -euo pipefail
if (($# < 2 || $# > 3)); then
    echo "usage: $0 X86_64_ELF AARCH64_ELF [OUT]" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
out=${3:-"$(cd "$here/../.." && pwd)/build/images"}
args=${ARGS:-}
grubdir=$("$here/../setup/ensure-firmware.sh" --grub-arm64-dir)
# shellcheck source=images.sh
. "$here/images.sh"

mkdir -p "$out"
"$here/aarch64-image.sh" "$2" "$out/Image"
x86_iso "$1" "$args" "$out/sched-x86_64.iso"
uboot_disk "$out/Image" "$args" "$out/sched-aarch64-uboot.img"
esp_disk "$out/Image" "$out/sched-aarch64-esp.img"
esp_grub_disk "$out/Image" "$args" "$grubdir" "$out/sched-aarch64-esp-grub.img"
for f in sched-x86_64.iso sched-aarch64-uboot.img sched-aarch64-esp.img sched-aarch64-esp-grub.img; do
    printf 'images: %-28s %s\n' "$f" "$(du -h --apparent-size "$out/$f" | cut -f1)"
done
echo "images: in $out"
