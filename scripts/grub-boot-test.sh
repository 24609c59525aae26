#!/usr/bin/env bash
# Boots the x86_64 kernel the bare-metal way: GRUB (BIOS, El Torito ISO) loads
# the same ELF through its Multiboot2 header instead of QEMU's PVH `-kernel`.
#
#   scripts/grub-boot-test.sh KERNEL_ELF [ktest filter]
#
# Runs the in-kernel concurrency-suite tests whose names contain the filter (default `smp_`, at
# SMP=2 unless SMP is set) and passes only when the kernel reports a Multiboot2
# boot, the closing line says `0 failed`, and QEMU ends with the pass status.
#
# The machine has a standard VGA (`-device VGA`) and GRUB sets a 1024x768x32
# graphics mode (gfxpayload, after the multiboot2 command, which would
# otherwise override it with the kernel's "any mode" request), so the
# kernel gets a Multiboot2 framebuffer tag: the run also passes only when the
# kernel reports `console: fb 1024x768x32` and a QEMU screendump taken while
# the tests run shows the console's text colour in its first text rows
# (scripts/screendump-check.py; the picture is kept in build/grub-fb.png).
# MEM (default 6G) puts RAM above 4 GiB, which the kernel must map (`-cpu
# max`: with 1 GiB pages) and use: the heap takes its highest range first, so
# the tests' threads run on memory above 4 GiB.
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

iso_dir="$build/grub-iso"
rm -rf "$iso_dir"
mkdir -p "$iso_dir/boot/grub"
cp "$kernel" "$iso_dir/boot/kernel.elf"
cat >"$iso_dir/boot/grub/grub.cfg" <<CFG
set timeout=0
serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
insmod all_video
menuentry "sched" {
    multiboot2 /boot/kernel.elf ktest=$filter ktest_suite=concurrency
    set gfxpayload=1024x768x32
    boot
}
CFG
iso="$build/sched-grub.iso"
if ! grub-mkrescue -o "$iso" "$iso_dir" >"$build/grub-mkrescue.log" 2>&1; then
    echo "grub-boot-test: FAIL: grub-mkrescue failed; see $build/grub-mkrescue.log" >&2
    exit 1
fi

log="$build/grub-boot-x86_64.log"
smp=${SMP:-2}
mem=${MEM:-6G}
monitor="$build/grub-monitor.sock"
shot="$build/grub-fb.ppm"
# The text colour of the kernel's framebuffer console (fbcon::FG_RGB).
text_rgb=208,208,208
rm -f "$monitor" "$log"
echo "grub-boot-test: GRUB + Multiboot2, SMP=$smp, MEM=$mem, VGA 1024x768x32, ktest=$filter (log $log)"
# TCG: SeaBIOS and GRUB are slow under nested KVM (~19 s), fast under TCG.
{
    timeout -k 5 "${GRUB_TIMEOUT:-120}" qemu-system-x86_64 -machine q35 -accel tcg -cpu max \
        -smp "$smp" -m "$mem" -nodefaults -device VGA -display none -no-reboot -cdrom "$iso" \
        -chardev stdio,id=s0,signal=off -serial chardev:s0 \
        -monitor "unix:$monitor,server=on,wait=off" \
        -device isa-debug-exit,iobase=0xf4,iosize=0x04 </dev/null 2>&1
    echo "qemu-status $?"
} | stdbuf -oL tr -d '\r' | tee "$log" | grep -v '^qemu-status' &
qemu_pipe=$!
# Screendump once the first test runs (the console has drawn the boot log).
shot_line="screendump: FAIL: the tests never started"
for _ in $(seq 1 "$(( ${GRUB_TIMEOUT:-120} * 10 ))"); do
    if grep -q '^qemu-status' "$log" 2>/dev/null; then
        break
    fi
    if grep -q '^test ' "$log" 2>/dev/null; then
        shot_line=$(python3 "$here/screendump-check.py" "$monitor" "$shot" "$text_rgb" 5)
        break
    fi
    sleep 0.1
done
wait "$qemu_pipe"
rc=$(sed -n 's/^qemu-status //p' "$log" | tail -n 1)
rc=${rc:-1}
echo "$shot_line"
if ! grep -q "booted via Multiboot2" "$log"; then
    echo "grub-boot-test: FAIL: the kernel did not report a Multiboot2 boot; see $log" >&2
    exit 1
fi
if ! grep -q "console: fb 1024x768x32 @0x" "$log"; then
    echo "grub-boot-test: FAIL: no 'console: fb 1024x768x32' line (framebuffer tag); see $log" >&2
    exit 1
fi
if [ "$mem" = 6G ] && ! grep -q 'RAM above 4 GiB: 4096 MiB identity-mapped (4096 MiB in 1 GiB pages)' "$log"; then
    echo "grub-boot-test: FAIL: MEM=6G, but the 4 GiB above 4 GiB were not mapped with 1 GiB pages; see $log" >&2
    exit 1
fi
case $shot_line in
    "screendump: PASS"*) ;;
    *) echo "grub-boot-test: FAIL: the framebuffer shows no text ($shot_line)" >&2; exit 1 ;;
esac
summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
if [ "$rc" -ne 33 ] || ! grep -Eq '^[1-9][0-9]* passed, 0 failed' <<<"$summary"; then
    echo "grub-boot-test: FAIL: QEMU status $rc, '${summary:-no summary line}'; see $log" >&2
    exit 1
fi
echo "grub-boot-test: PASS: $summary; ${shot_line#screendump: PASS: }"
