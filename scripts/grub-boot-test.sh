#!/usr/bin/env bash
# Boots the x86_64 kernel the bare-metal way: GRUB (BIOS, El Torito ISO) loads
# the same ELF through its Multiboot2 header instead of QEMU's PVH `-kernel`.
#
#   scripts/grub-boot-test.sh KERNEL_ELF [ktest filter]
#
# Runs the in-kernel concurrency-suite tests whose names contain the filter (default `smp_`, at
# SMP=2 unless SMP is set) and passes only when the kernel reports a Multiboot2
# boot, the closing line says `0 failed`, and QEMU ends with the pass status.
# Installs GRUB's BIOS modules, xorriso and mtools from Debian's packages when
# they are missing (grub-mkrescue needs all three).
set -uo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 KERNEL_ELF [ktest filter]" >&2
    exit 2
fi
kernel=$1
filter=${2:-smp_}
here=$(cd "$(dirname "$0")" && pwd)
build="$(cd "$here/.." && pwd)/build"
mkdir -p "$build"

need=()
command -v grub-mkrescue >/dev/null 2>&1 || need+=(grub-common)
[ -d /usr/lib/grub/i386-pc ] || need+=(grub-pc-bin)
command -v xorriso >/dev/null 2>&1 || need+=(xorriso)
command -v mformat >/dev/null 2>&1 || need+=(mtools)
if ((${#need[@]})); then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "grub-boot-test: installing ${need[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}" >/dev/null
fi

# The ISO `make images` builds (scripts/images.sh): BIOS, plus UEFI when
# GRUB's x86_64-efi modules are installed (make test-firmware boots that half).
# shellcheck source=images.sh
. "$here/images.sh"
iso="$build/sched-grub.iso"
x86_iso "$kernel" "ktest=$filter ktest_suite=concurrency" "$iso" || {
    echo "grub-boot-test: FAIL: could not build the ISO" >&2
    exit 1
}

log="$build/grub-boot-x86_64.log"
smp=${SMP:-2}
echo "grub-boot-test: GRUB + Multiboot2, SMP=$smp, ktest=$filter (log $log)"
# TCG: SeaBIOS and GRUB are slow under nested KVM (~19 s), fast under TCG.
timeout -k 5 "${GRUB_TIMEOUT:-120}" qemu-system-x86_64 -machine q35 -accel tcg -cpu max \
    -smp "$smp" -m 256M -nodefaults -display none -no-reboot -cdrom "$iso" \
    -chardev stdio,id=s0,signal=off -serial chardev:s0 \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 </dev/null 2>&1 | tr -d '\r' | tee "$log"
rc=${PIPESTATUS[0]}
if ! grep -q "booted via Multiboot2" "$log"; then
    echo "grub-boot-test: FAIL: the kernel did not report a Multiboot2 boot; see $log" >&2
    exit 1
fi
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
if [ "$rc" -ne 33 ] || ! grep -Eq '^[1-9][0-9]* passed, 0 failed' <<<"$summary"; then
    echo "grub-boot-test: FAIL: QEMU status $rc, '${summary:-no summary line}'; see $log" >&2
    exit 1
fi
echo "grub-boot-test: PASS: $summary"
