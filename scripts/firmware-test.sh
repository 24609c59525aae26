#!/usr/bin/env bash
# Boots the kernel through real firmware in QEMU (TCG), from the images
# `make images` builds, and runs a part of the in-kernel suite on each path:
#
#   seabios-grub   x86_64   SeaBIOS -> GRUB (hybrid ISO, BIOS El Torito) -> Multiboot2
#   ovmf-grub      x86_64   OVMF (UEFI) -> GRUB (the same ISO, UEFI El Torito) -> Multiboot2
#   uboot          aarch64  U-Boot distro boot -> boot.scr -> booti (FAT disk)
#   uboot-efi      aarch64  U-Boot distro boot -> its UEFI (EBBR) -> the ESP's
#                           BOOTAA64.EFI = the Image, to the shell as edk2-esp
#   edk2           aarch64  edk2 -> the Image as an EFI application (QEMU -kernel/-append:
#                           edk2's own loader, LoadOptions = the command line)
#   edk2-el2       aarch64  the same with edk2 at EL2 (virtualization=on), GICv3, -cpu max
#   edk2-grub      aarch64  edk2 -> ESP -> GRUB arm64 -> `linux /Image ARGS` (EFI stub path)
#   edk2-esp       aarch64  edk2 -> ESP -> EFI/BOOT/BOOTAA64.EFI = the Image, no
#                           options: it must reach the sched> shell, which is
#                           then told to power off
#   edk2-acpi      aarch64  the same ESP with ACPI on (QEMU's default): the kernel
#                           must say it needs a device tree (acpi=off) and
#                           return EFI_UNSUPPORTED to the firmware
#
#   scripts/firmware-test.sh X86_64_ELF AARCH64_ELF [path...]
#
# Each path passes only when the kernel says it was booted the expected way,
# the ktest closing line says `N passed, 0 failed, 0 skipped` (N > 0) and QEMU ends with
# the pass status (x86: isa-debug-exit 33, aarch64: semihosting 0). Logs in
# build/firmware/<path>.log; a failure names the path. Environment: FW_FILTER
# (ktest filter, default every_cpu,static_stacks_have_guards: the tests that
# check every CPU runs threads, takes cross-CPU calls and, on aarch64, runs
# with its MMU and caches on, which UEFI boots most need, and that the guards
# below the kernel image's stacks were unmapped wherever the loader put the
# image), FW_SMP (default 2), FW_TIMEOUT (seconds per
# boot, default 120).
set -uo pipefail
if (($# < 2)); then
    echo "usage: $0 X86_64_ELF AARCH64_ELF [path...]" >&2
    exit 2
fi
x86_elf=$1
arm_elf=$2
shift 2
paths=("$@")
((${#paths[@]})) || paths=(seabios-grub ovmf-grub uboot uboot-efi edk2 edk2-el2 edk2-grub edk2-esp edk2-acpi)
here=$(cd "$(dirname "$0")" && pwd)
dir="$(cd "$here/.." && pwd)/build/firmware"
mkdir -p "$dir"
grubdir=$("$here/ensure-firmware.sh" --grub-arm64-dir) || exit 1
# shellcheck source=images.sh
. "$here/images.sh"

filter=${FW_FILTER:-every_cpu,static_stacks_have_guards}
smp=${FW_SMP:-2}
limit=${FW_TIMEOUT:-120}
args="ktest=$filter ktest_suite=concurrency"

# The images, with the ktest arguments in their boot configuration.
img="$dir/images"
mkdir -p "$img"
"$here/aarch64-image.sh" "$arm_elf" "$img/Image" || exit 1
x86_iso "$x86_elf" "$args" "$img/x86_64.iso" || exit 1
uboot_disk "$img/Image" "$args" "$img/uboot.img" || exit 1
esp_disk "$img/Image" "$img/esp.img" || exit 1
esp_grub_disk "$img/Image" "$args" "$grubdir" "$img/esp-grub.img" || exit 1

serial=(-nodefaults -display none -no-reboot -chardev stdio,id=s0,signal=off -serial chardev:s0)
x86=(qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp "$smp" -m 256M "${serial[@]}"
    -device isa-debug-exit,iobase=0xf4,iosize=0x04)
arm=(qemu-system-aarch64 -cpu cortex-a72 -smp "$smp" -m 256M -semihosting -nic none "${serial[@]}")
edk2=(-machine virt,acpi=off -bios /usr/share/qemu-efi-aarch64/QEMU_EFI.fd)
disk() { echo "-drive if=none,format=raw,file=$1,id=d0 -device virtio-blk-device,drive=d0"; }

# Where the aarch64 image ran (the firmware chose; link address 0x40200000).
where() { grep -aom1 'image 0x[0-9a-f]*' "$1" | sed 's/^image /; image at /'; }

# Seconds from T0 to T1 (date +%s%N), one decimal.
secs() { local ds=$((($2 - $1) / 100000000)); echo "$((ds / 10)).$((ds % 10))"; }

# boot PATH PASS_RC PROTOCOL [extra pattern] -- QEMU command...
# Runs the command under the time limit with stdin from /dev/null and checks
# the log; prints one PASS/FAIL line with the boot's wall-clock time. Every
# test of the subset must run: a skipped one (a CPU that did not come up)
# fails the path. One boot, no retry (the kernel itself gives a CPU whose
# start timed out a second try, and says so in its log).
failed=()
boot() {
    local name=$1 pass_rc=$2 proto=$3 extra=$4
    shift 5
    local log="$dir/$name.log" t0 t1 rc summary why=""
    t0=$(date +%s%N)
    timeout -k 5 "$limit" "$@" </dev/null 2>&1 | tr -d '\r' >"$log"
    rc=${PIPESTATUS[0]}
    t1=$(date +%s%N)
    summary=$(grep -aE '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        why="timed out after ${limit}s"
    elif ! grep -aq "booted via $proto" "$log"; then
        why="the kernel did not report a $proto boot"
    elif [ -n "$extra" ] && ! grep -aq "$extra" "$log"; then
        why="no '$extra' in the log"
    elif [ "$rc" -ne "$pass_rc" ]; then
        why="QEMU status $rc, not $pass_rc (${summary:-no summary line})"
    elif ! grep -Eq '^[1-9][0-9]* passed, 0 failed, 0 skipped' <<<"$summary"; then
        why="'${summary:-no summary line}'"
    fi
    if [ -n "$why" ]; then
        echo "firmware-test: FAIL: $name: $why; see $log" >&2
        failed+=("$name")
    else
        printf 'firmware-test: PASS: %-13s %5s s  %s%s\n' "$name" "$(secs "$t0" "$t1")" "$summary" "$(where "$log")"
    fi
}

# boot_until NAME PATTERN INPUT -- QEMU command...
# Runs QEMU with stdin from a FIFO until PATTERN shows in its output, then
# writes INPUT to it and gives it 15 s to end; QEMU is ended then (at once
# when INPUT is empty).
# Sets rc (QEMU's status; 143 when it had to be ended) and secs.
boot_until() {
    local name=$1 pattern=$2 input=$3
    shift 4
    local log="$dir/$name.log" fifo="$dir/$name.in" t0 pid waited=0
    rm -f "$fifo"
    mkfifo "$fifo"
    # Empty before the wait below reads it: the background command opens
    # (and truncates) it only once the fifo has a writer, so a log left by
    # an earlier run could otherwise match the pattern at once.
    : >"$log"
    t0=$(date +%s%N)
    timeout -k 5 "$limit" "$@" <"$fifo" >"$log" 2>&1 &
    pid=$!
    exec 7>"$fifo"
    until grep -aq "$pattern" "$log" || ! kill -0 "$pid" 2>/dev/null || ((waited >= limit * 10)); do
        sleep 0.1
        waited=$((waited + 1))
    done
    if [ -n "$input" ]; then
        printf '%s' "$input" >&7
        # The input should end the run; give it 15 s.
        waited=0
        while kill -0 "$pid" 2>/dev/null && ((waited < 150)); do
            sleep 0.1
            waited=$((waited + 1))
        done
    fi
    # QEMU ends with status 0 on SIGTERM: rc 143 says it had to be ended.
    local ended=0
    kill -0 "$pid" 2>/dev/null && ended=1 && kill "$pid" 2>/dev/null
    exec 7>&-
    wait "$pid"
    rc=$?
    ((ended)) && rc=143
    secs=$(secs "$t0" "$(date +%s%N)")
    rm -f "$fifo"
}

# Prints the verdict of a boot_until run: PASS with WHAT, or FAIL with why.
verdict() { # NAME WHY WHAT
    if [ -n "$2" ]; then
        echo "firmware-test: FAIL: $1: $2; see $dir/$1.log" >&2
        failed+=("$1")
    else
        printf 'firmware-test: PASS: %-13s %5s s  %s%s\n' "$1" "$secs" "$3" "$(where "$dir/$1.log")"
    fi
}

# The ESP's BOOTAA64.EFI gets no options: a UEFI boot to the sched> shell,
# told to power off (semihosting status 0).
to_shell() { # NAME -- QEMU command...
    local name=$1 why=""
    shift 2
    boot_until "$name" 'sched> ' $'poweroff\n' -- "$@"
    if ! grep -aq "booted via Uefi" "$dir/$name.log"; then
        why="the kernel did not report a Uefi boot"
    elif ! grep -aq 'sched> ' "$dir/$name.log"; then
        why="no sched> prompt"
    fi
    if [ -z "$why" ] && [ "$rc" -ne 0 ]; then
        why="the shell did not act on 'poweroff' (QEMU status $rc)"
    fi
    verdict "$name" "$why" "reached sched>, powered off"
}

for p in "${paths[@]}"; do
    case $p in
    seabios-grub)
        boot "$p" 33 Multiboot2 "" -- "${x86[@]}" -cdrom "$img/x86_64.iso"
        ;;
    ovmf-grub)
        cp /usr/share/OVMF/OVMF_VARS.fd "$dir/ovmf-vars.fd"
        boot "$p" 33 Multiboot2 "BdsDxe: starting" -- "${x86[@]}" -cdrom "$img/x86_64.iso" \
            -drive if=pflash,format=raw,unit=0,readonly=on,file=/usr/share/OVMF/OVMF_CODE.fd \
            -drive "if=pflash,format=raw,unit=1,file=$dir/ovmf-vars.fd"
        ;;
    uboot)
        # shellcheck disable=SC2046 # disk's words
        boot "$p" 0 LinuxImage "" -- "${arm[@]}" -machine virt \
            -bios /usr/lib/u-boot/qemu_arm64/u-boot.bin $(disk "$img/uboot.img")
        ;;
    edk2)
        boot "$p" 0 Uefi "command line from LoadOptions" -- "${arm[@]}" "${edk2[@]}" \
            -kernel "$img/Image" -append "$args"
        ;;
    edk2-el2)
        # UEFI at EL2 (as on hardware with virtualization), GICv3, -cpu max.
        boot "$p" 0 Uefi "entered at EL2" -- "${arm[@]}" -cpu max \
            -machine virt,acpi=off,virtualization=on,gic-version=3 \
            -bios /usr/share/qemu-efi-aarch64/QEMU_EFI.fd -kernel "$img/Image" -append "$args"
        ;;
    edk2-grub)
        # shellcheck disable=SC2046
        boot "$p" 0 Uefi "command line from LoadOptions" -- "${arm[@]}" "${edk2[@]}" \
            $(disk "$img/esp-grub.img")
        ;;
    edk2-esp)
        # shellcheck disable=SC2046
        to_shell "$p" -- "${arm[@]}" "${edk2[@]}" $(disk "$img/esp.img")
        ;;
    uboot-efi)
        # shellcheck disable=SC2046
        to_shell "$p" -- "${arm[@]}" -machine virt \
            -bios /usr/lib/u-boot/qemu_arm64/u-boot.bin $(disk "$img/esp.img")
        ;;
    edk2-acpi)
        # ACPI only (QEMU virt's default): the kernel must say so and hand
        # back to the firmware, which goes on to its next boot option.
        # shellcheck disable=SC2046
        boot_until "$p" 'failed to start Boot' "" -- "${arm[@]}" -machine virt \
            -bios /usr/share/qemu-efi-aarch64/QEMU_EFI.fd $(disk "$img/esp.img")
        why=""
        if ! grep -aq "offers ACPI tables only" "$dir/$p.log"; then
            why="no ACPI-only message from the kernel"
        elif ! grep -aq "acpi=off" "$dir/$p.log"; then
            why="the message does not name acpi=off"
        elif ! grep -aq "failed to start Boot.*Unsupported" "$dir/$p.log"; then
            why="the firmware did not get EFI_UNSUPPORTED back"
        fi
        verdict "$p" "$why" "ACPI only: message, EFI_UNSUPPORTED to the firmware"
        ;;
    *)
        echo "firmware-test: unknown path '$p'" >&2
        failed+=("$p")
        ;;
    esac
done

if ((${#failed[@]})); then
    echo "firmware-test: FAIL: ${failed[*]}" >&2
    exit 1
fi
echo "firmware-test: PASS: ${paths[*]}"
