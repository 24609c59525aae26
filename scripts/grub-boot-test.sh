#!/usr/bin/env bash
# Boots the x86_64 kernel the bare-metal way: GRUB loads the same ELF through
# its Multiboot2 header instead of QEMU's PVH `-kernel`, from one hybrid ISO
# (BIOS El Torito + UEFI), twice:
#
#   scripts/grub-boot-test.sh KERNEL_ELF [ktest filter]
#
# 1. SeaBIOS + GRUB (i386-pc): the in-kernel concurrency-suite tests whose
#    names contain the filter (default `smp_`), at SMP=2 unless SMP is set.
# 2. OVMF (UEFI) + GRUB (x86_64-efi), unless GRUB_EFI=0: `acpi_rsdp=efi`, so
#    the kernel must find the ACPI RSDP in the EFI system table that
#    Multiboot2 tag 12 names (not in GRUB's ACPI tags), and the `highmem_` and
#    the same `smp_` tests. grub.cfg picks the entry by $grub_platform.
#
# Each boot passes only when the kernel reports a Multiboot2 boot, the
# closing line says `0 failed`, and QEMU ends with the pass status; and:
# - a framebuffer console: the machine has a standard VGA (`-device VGA`;
#   under OVMF its GOP) and GRUB sets 1024x768x32 (gfxpayload, after the
#   multiboot2 command, which would otherwise override it with the kernel's
#   "any mode" request), so the kernel must report `console: fb 1024x768x32`,
#   and a QEMU screendump taken while the tests run must show the console's
#   text colour in its first text rows (scripts/screendump-check.py; the
#   pictures are kept in build/grub-fb-{bios,efi}.png);
# - RAM above 4 GiB: GRUB_MEM (default 6G; not MEM, which make sets) puts 4 GiB at 0x1_0000_0000, which the
#   kernel must map (`-cpu max`: with 1 GiB pages) and use (the heap takes its
#   highest range first, so the tests' threads run on memory above 4 GiB);
# - under OVMF, the boot line `ACPI RSDP ... (EFI system table)`.
#
# Installs GRUB's BIOS and EFI modules, xorriso, mtools and OVMF from
# Debian's packages when they are missing (grub-mkrescue needs the first four).
set -uo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 KERNEL_ELF [ktest filter]" >&2
    exit 2
fi
kernel=$1
filter=${2:-smp_}
here=$(cd "$(dirname "$0")" && pwd)
build="$(cd "$here/.." && pwd)/build"
ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd
ovmf_vars=/usr/share/OVMF/OVMF_VARS_4M.fd
efi=${GRUB_EFI:-1}

need=()
command -v grub-mkrescue >/dev/null 2>&1 || need+=(grub-common)
[ -d /usr/lib/grub/i386-pc ] || need+=(grub-pc-bin)
[ "$efi" = 0 ] || [ -d /usr/lib/grub/x86_64-efi ] || need+=(grub-efi-amd64-bin)
[ "$efi" = 0 ] || [ -f "$ovmf_code" ] || need+=(ovmf)
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
set default=0
if [ "\$grub_platform" = "efi" ]; then set default=1; fi
menuentry "sched (BIOS)" {
    multiboot2 /boot/kernel.elf ktest=$filter ktest_suite=concurrency
    set gfxpayload=1024x768x32
    boot
}
menuentry "sched (UEFI): RSDP from the EFI system table" {
    multiboot2 /boot/kernel.elf acpi_rsdp=efi ktest=highmem_,$filter ktest_suite=concurrency
    set gfxpayload=1024x768x32
    boot
}
CFG
iso="$build/sched-grub.iso"
if ! grub-mkrescue -o "$iso" "$iso_dir" >"$build/grub-mkrescue.log" 2>&1; then
    echo "grub-boot-test: FAIL: grub-mkrescue failed; see $build/grub-mkrescue.log" >&2
    exit 1
fi

smp=${SMP:-2}
mem=${GRUB_MEM:-6G}
# The text colour of the kernel's framebuffer console (fbcon::FG_RGB).
text_rgb=208,208,208

# boot_once NAME FIRMWARE_ARGS...: one boot of the ISO; sets $log, $rc and
# $shot_line (the screendump verdict).
boot_once() {
    local name=$1
    shift
    log="$build/grub-boot-x86_64${name:+-$name}.log"
    local monitor="$build/grub-monitor-$name.sock"
    local shot="$build/grub-fb-$name.ppm"
    rm -f "$monitor" "$log"
    echo "grub-boot-test: $name: GRUB + Multiboot2, SMP=$smp, MEM=$mem, VGA 1024x768x32 (log $log)"
    # TCG: firmware and GRUB are slow under nested KVM (~19 s), fast under TCG.
    {
        timeout -k 5 "${GRUB_TIMEOUT:-120}" qemu-system-x86_64 -machine q35 -accel tcg -cpu max \
            -smp "$smp" -m "$mem" -nodefaults -device VGA -display none -no-reboot "$@" \
            -cdrom "$iso" -chardev stdio,id=s0,signal=off -serial chardev:s0 \
            -monitor "unix:$monitor,server=on,wait=off" \
            -device isa-debug-exit,iobase=0xf4,iosize=0x04 </dev/null 2>&1
        echo "qemu-status $?"
    } | stdbuf -oL tr -d '\r' | tee "$log" | grep -av '^qemu-status' &
    local qemu_pipe=$!
    # Screendump once the tests start (the console has drawn the boot log;
    # they run for seconds unless every one is skipped).
    shot_line="screendump: FAIL: the tests never started"
    local i
    for i in $(seq 1 "$((${GRUB_TIMEOUT:-120} * 20))"); do
        if grep -aq '^qemu-status' "$log" 2>/dev/null; then
            break
        fi
        if grep -aq '^ktest: running' "$log" 2>/dev/null; then
            shot_line=$(python3 "$here/screendump-check.py" "$monitor" "$shot" "$text_rgb" 5)
            break
        fi
        sleep 0.05
    done
    wait "$qemu_pipe"
    rc=$(sed -n 's/^qemu-status //p' "$log" | tail -n 1)
    rc=${rc:-1}
    echo "$shot_line"
}

# check NAME: the verdict of the boot just done.
check() {
    local name=$1
    fail() {
        echo "grub-boot-test: $name: FAIL: $*; see $log" >&2
        exit 1
    }
    grep -aq "booted via Multiboot2" "$log" || fail "the kernel did not report a Multiboot2 boot"
    grep -aq "console: fb 1024x768x32 @0x" "$log" \
        || fail "no 'console: fb 1024x768x32' line (framebuffer tag)"
    if [ "$mem" = 6G ] && ! grep -aq 'RAM above 4 GiB: 4096 MiB identity-mapped (4096 MiB in 1 GiB pages)' "$log"; then
        fail "MEM=6G, but the 4 GiB above 4 GiB were not mapped with 1 GiB pages"
    fi
    case $shot_line in
        "screendump: PASS"*) ;;
        *) fail "the framebuffer shows no text ($shot_line)" ;;
    esac
    summary=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ "$rc" -ne 33 ] || ! grep -Eq '^[1-9][0-9]* passed, 0 failed' <<<"$summary"; then
        fail "QEMU status $rc, '${summary:-no summary line}'"
    fi
}

boot_once bios
check bios
bios_summary=$summary
bios_shot=${shot_line#screendump: PASS: }

if [ "$efi" = 0 ]; then
    echo "grub-boot-test: PASS: $bios_summary; $bios_shot (UEFI boot skipped: GRUB_EFI=0)"
    exit 0
fi
vars="$build/ovmf-vars.fd"
cp "$ovmf_vars" "$vars"
boot_once efi -drive "if=pflash,format=raw,readonly=on,file=$ovmf_code" \
    -drive "if=pflash,format=raw,file=$vars"
check efi
grep -aEq '^x86_64: ACPI RSDP 0x[0-9a-f]+ \(EFI system table\)' "$log" || {
    echo "grub-boot-test: efi: FAIL: the RSDP did not come from the EFI system table; see $log" >&2
    exit 1
}
echo "grub-boot-test: PASS: BIOS: $bios_summary; $bios_shot"
echo "grub-boot-test: PASS: UEFI: $summary, RSDP from the EFI system table; ${shot_line#screendump: PASS: }"
