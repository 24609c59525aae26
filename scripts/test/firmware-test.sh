#!/usr/bin/env bash
# Boots the kernel through real firmware in QEMU (TCG) and runs a part of
# the in-kernel suite on each path. The boot images are the ones `make
# images` builds (scripts/boot/images.sh), with the ktest arguments in their
# boot configuration:
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
# and, not among the default paths (make test-x86_64-grub runs them), the
# bare-metal PC console and memory from a GRUB ISO of their own, with a
# standard VGA and GRUB_MEM (default 6G; not MEM, which make sets) of RAM:
#
#   grub-fb-bios   x86_64   SeaBIOS -> GRUB (i386-pc) -> Multiboot2: the `smp_`
#                           concurrency tests (GRUB_FILTER) at SMP=2 (FW_SMP)
#   grub-fb-efi    x86_64   OVMF -> GRUB (x86_64-efi), `acpi_rsdp=efi`: the
#                           kernel must find the ACPI RSDP in the EFI system
#                           table that Multiboot2 tag 12 names (not in GRUB's
#                           ACPI tags); the `highmem_` and the same tests
#
#   The framebuffer paths also pass only when GRUB set 1024x768x32
#   (gfxpayload, after the multiboot2 command, which would otherwise override
#   it with the kernel's "any mode" request) and the kernel reports `console:
#   fb 1024x768x32`, a QEMU screendump taken while the tests run shows the
#   console's text colour in its first text rows (screendump-check.py; the
#   pictures are kept in build/firmware/grub-fb-*.png), and the 4 GiB above
#   4 GiB are mapped with 1 GiB pages (`-cpu max`) and used (the heap takes
#   its highest range first).
#
#   scripts/test/firmware-test.sh X86_64_ELF|- AARCH64_ELF|- [path...]
#
# Each path passes only when the kernel says it was booted the expected way,
# the ktest closing line says `N passed, 0 failed` (N > 0; the image paths:
# and `0 skipped`) and QEMU ends with the pass status (x86: isa-debug-exit
# 33, aarch64: semihosting 0). Logs in build/firmware/<path>.log; a failure
# names the path. One boot per path, no retry (the kernel itself gives a CPU
# whose start timed out a second try, and says so in its log).
#
# Environment: FW_FILTER (ktest filter of the image paths, default
# every_cpu,static_stacks_have_guards: the tests that check every CPU runs
# threads, takes cross-CPU calls and, on aarch64, runs with its MMU and
# caches on, which UEFI boots most need, and that the guards below the
# kernel image's stacks were unmapped wherever the loader put the image),
# GRUB_FILTER (default smp_), FW_SMP (default 2), FW_TIMEOUT (seconds without output per
# boot, default 120), GRUB_MEM.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init firmware-test
if (($# < 2)); then
    echo "usage: $0 X86_64_ELF|- AARCH64_ELF|- [path...]" >&2
    exit 2
fi
x86_elf=$1
arm_elf=$2
shift 2
paths=("$@")
suite="firmware paths"
((${#paths[@]})) && suite="firmware paths ${paths[*]}"
((${#paths[@]})) || paths=(seabios-grub ovmf-grub uboot uboot-efi edk2 edk2-el2 edk2-grub edk2-esp edk2-acpi)
dir="$H_BUILD/firmware"
img="$dir/images"
mkdir -p "$img"
# shellcheck source=../boot/images.sh
. "$H_SCRIPTS/boot/images.sh"

filter=${FW_FILTER:-every_cpu,static_stacks_have_guards}
grub_filter=${GRUB_FILTER:-smp_}
smp=${FW_SMP:-2}
limit=${FW_TIMEOUT:-120}
grub_mem=${GRUB_MEM:-6G}
args="ktest=$filter ktest_suite=concurrency"
# The text colour of the kernel's framebuffer console (fbcon::FG_RGB).
text_rgb=208,208,208

# image NAME: makes the image a path boots from, once; prints its path.
image() {
    local out
    case $1 in
        x86-iso | grub-fb-iso)
            [ "$x86_elf" != - ] || { h_err "path needs the x86_64 kernel"; return 1; } ;;
        *)
            [ "$arm_elf" != - ] || { h_err "path needs the aarch64 kernel"; return 1; }
            [ -f "$img/Image" ] || "$H_SCRIPTS/boot/aarch64-image.sh" "$arm_elf" "$img/Image" || return 1
            ;;
    esac
    case $1 in
        x86-iso) out="$img/x86_64.iso"; [ -f "$out" ] || x86_iso "$x86_elf" "$args" "$out" ;;
        grub-fb-iso) out="$img/grub-fb.iso"; [ -f "$out" ] || x86_iso_cfg "$x86_elf" <(grub_fb_cfg) "$out" ;;
        uboot) out="$img/uboot.img"; [ -f "$out" ] || uboot_disk "$img/Image" "$args" "$out" ;;
        esp) out="$img/esp.img"; [ -f "$out" ] || esp_disk "$img/Image" "$out" ;;
        esp-grub)
            out="$img/esp-grub.img"
            if [ ! -f "$out" ]; then
                local grubdir
                grubdir=$("$H_SCRIPTS/setup/ensure-firmware.sh" --grub-arm64-dir) || return 1
                esp_grub_disk "$img/Image" "$args" "$grubdir" "$out"
            fi
            ;;
    esac || return 1
    echo "$out"
}
# Every run makes its images afresh (the kernel or the arguments changed).
rm -f "$img"/*.iso "$img"/*.img "$img/Image"

# The framebuffer ISO's grub.cfg: serial console only, all video drivers,
# 1024x768x32 for the kernel; the entry by $grub_platform.
grub_fb_cfg() {
    cat <<CFG
set timeout=0
serial --unit=0 --speed=115200
terminal_input serial
terminal_output serial
insmod all_video
set default=0
if [ "\$grub_platform" = "efi" ]; then set default=1; fi
menuentry "sched (BIOS)" {
    multiboot2 /boot/kernel.elf ktest=$grub_filter ktest_suite=concurrency
    set gfxpayload=1024x768x32
    boot
}
menuentry "sched (UEFI): RSDP from the EFI system table" {
    multiboot2 /boot/kernel.elf acpi_rsdp=efi ktest=highmem_,$grub_filter ktest_suite=concurrency
    set gfxpayload=1024x768x32
    boot
}
CFG
}

# Where the aarch64 image ran (the firmware chose; link address 0x40200000).
where() { grep -aom1 'image 0x[0-9a-f]*' "$1" | sed 's/^image /; image at /'; }

passed=0
failed=()
# verdict NAME WHY WHAT: PASS with WHAT, or FAIL with WHY.
verdict() {
    if [ -n "$2" ]; then
        h_err "FAIL: $1: $2; see $dir/$1.log"
        failed+=("$1")
    else
        printf 'firmware-test: PASS: %-13s %5s s  %s%s\n' "$1" "$H_SECS" "$3" "$(where "$dir/$1.log")"
        passed=$((passed + 1))
    fi
}

# ktest_why ARCH PROTO [EXTRA] [any|noskip]: sets why to why the ktest boot
# just run (log $log, status $H_RC) failed; empty when it passed.
ktest_why() {
    local arch=$1 proto=$2 extra=${3:-} skip=${4:-noskip} ok
    h_check_summary "$log" nonzero "$skip"
    ok=$?
    why=""
    if h_ended; then
        why="ended by the harness: $H_WHY_ENDED"
    elif ! grep -aq "booted via $proto" "$log"; then
        why="the kernel did not report a $proto boot"
    elif [ -n "$extra" ] && ! grep -aq "$extra" "$log"; then
        why="no '$extra' in the log"
    elif ! h_status_ok "$arch" "$H_RC"; then
        why="QEMU status $H_RC, not $(h_pass_status "$arch") (${H_SUMMARY:-no summary line})"
    elif [ "$ok" -ne 0 ]; then
        why=$H_WHY
    fi
}

# ktest_boot NAME ARCH PROTO [EXTRA]: boots $QEMU to its end, checks it.
ktest_boot() {
    local why
    log="$dir/$1.log"
    h_run "$log" "$limit" -- "${QEMU[@]}" </dev/null
    ktest_why "$2" "$3" "${4:-}"
    verdict "$1" "$why" "$H_SUMMARY"
}

# to_shell NAME: the ESP's BOOTAA64.EFI gets no options: a UEFI boot to the
# sched> shell, told to power off (semihosting status 0).
to_shell() {
    local name=$1 why="" log="$dir/$1.log"
    h_start "$log" "$limit" -- "${QEMU[@]}"
    h_wait_for 'sched> ' && h_send $'poweroff\n'
    h_finish 15
    if ! grep -aq "booted via Uefi" "$log"; then
        why="the kernel did not report a Uefi boot"
    elif ! grep -aq 'sched> ' "$log"; then
        why="no sched> prompt"
    elif ! h_status_ok aarch64 "$H_RC"; then
        why="the shell did not act on 'poweroff' (QEMU status $H_RC)"
    fi
    verdict "$name" "$why" "reached sched>, powered off"
}

# grub_fb NAME: a framebuffer boot; the screendump is taken once the tests
# run (the console has drawn the boot log; they run for seconds).
grub_fb() {
    local name=$1 why="" shot monitor="$dir/$1.monitor"
    log="$dir/$name.log"
    rm -f "$monitor"
    QEMU+=(-monitor "unix:$monitor,server=on,wait=off")
    h_start "$log" "$limit" -- "${QEMU[@]}"
    shot="screendump: FAIL: the tests never started"
    if h_wait_for '^ktest: running'; then
        shot=$(python3 "$H_SCRIPTS/test/screendump-check.py" "$monitor" "$dir/$name.ppm" "$text_rgb" 5)
    fi
    h_finish
    ktest_why x86_64 Multiboot2 "" any
    if [ -z "$why" ] && ! grep -aq "console: fb 1024x768x32 @0x" "$log"; then
        why="no 'console: fb 1024x768x32' line (framebuffer tag)"
    fi
    if [ -z "$why" ] && [ "$grub_mem" = 6G ] &&
        ! grep -aq 'RAM above 4 GiB: 4096 MiB identity-mapped (4096 MiB in 1 GiB pages)' "$log"; then
        why="MEM=6G, but the 4 GiB above 4 GiB were not mapped with 1 GiB pages"
    fi
    if [ -z "$why" ] && [[ $shot != "screendump: PASS"* ]]; then
        why="the framebuffer shows no text ($shot)"
    fi
    if [ -z "$why" ] && [ "$name" = grub-fb-efi ] &&
        ! tr -d '\r' <"$log" | grep -aE '^x86_64: ACPI RSDP 0x[0-9a-f]+ \(EFI system table\)' >/dev/null; then
        why="the RSDP did not come from the EFI system table"
    fi
    verdict "$name" "$why" "$H_SUMMARY; ${shot#screendump: PASS: }"
}

# acpi_only NAME: boots until the firmware says the kernel did not start.
acpi_only() {
    local why="" log="$dir/$1.log"
    h_start "$log" "$limit" -- "${QEMU[@]}"
    h_wait_for 'failed to start Boot'
    h_finish 0
    if ! grep -aq "offers ACPI tables only" "$log"; then
        why="no ACPI-only message from the kernel"
    elif ! grep -aq "acpi=off" "$log"; then
        why="the message does not name acpi=off"
    elif ! grep -aq "failed to start Boot.*Unsupported" "$log"; then
        why="the firmware did not get EFI_UNSUPPORTED back"
    fi
    verdict "$1" "$why" "ACPI only: message, EFI_UNSUPPORTED to the firmware"
}

have_arm() { [ "$arm_elf" != - ] || { h_err "path needs the aarch64 kernel"; return 1; }; }
x86() { h_qemu x86_64 accel=tcg cpu=max smp="$smp" mem=256M "$@"; }
arm() { h_qemu aarch64 accel=tcg cpu=cortex-a72 smp="$smp" mem=256M "$@"; }
disk() { QEMU+=(-drive "if=none,format=raw,file=$1,id=d0" -device virtio-blk-device,drive=d0); }

for p in "${paths[@]}"; do
    # A path whose image or command line cannot be made fails by name.
    if ! case $p in
        seabios-grub)
            iso=$(image x86-iso) && x86 fw=seabios && QEMU+=(-cdrom "$iso") &&
                ktest_boot "$p" x86_64 Multiboot2
            ;;
        ovmf-grub)
            iso=$(image x86-iso) && x86 fw=ovmf && QEMU+=(-cdrom "$iso") &&
                ktest_boot "$p" x86_64 Multiboot2 "BdsDxe: starting"
            ;;
        grub-fb-bios | grub-fb-efi)
            fw=seabios
            [ "$p" = grub-fb-efi ] && fw=ovmf
            iso=$(image grub-fb-iso) && x86 fw=$fw mem="$grub_mem" vga=1 && QEMU+=(-cdrom "$iso") &&
                grub_fb "$p"
            ;;
        uboot)
            d=$(image uboot) && arm fw=uboot && disk "$d" && ktest_boot "$p" aarch64 LinuxImage
            ;;
        edk2)
            have_arm && arm fw=edk2 machine=acpi=off kernel="$arm_elf" append="$args" &&
                ktest_boot "$p" aarch64 Uefi "command line from LoadOptions"
            ;;
        edk2-el2)
            # UEFI at EL2 (as on hardware with virtualization), GICv3, -cpu max.
            have_arm && arm fw=edk2 cpu=max gic=3 machine=acpi=off,virtualization=on \
                kernel="$arm_elf" append="$args" && ktest_boot "$p" aarch64 Uefi "entered at EL2"
            ;;
        edk2-grub)
            d=$(image esp-grub) && arm fw=edk2 machine=acpi=off && disk "$d" &&
                ktest_boot "$p" aarch64 Uefi "command line from LoadOptions"
            ;;
        edk2-esp)
            d=$(image esp) && arm fw=edk2 machine=acpi=off && disk "$d" && to_shell "$p"
            ;;
        uboot-efi)
            d=$(image esp) && arm fw=uboot && disk "$d" && to_shell "$p"
            ;;
        edk2-acpi)
            # ACPI only (QEMU virt's default): the kernel must say so and hand
            # back to the firmware, which goes on to its next boot option.
            d=$(image esp) && arm fw=edk2 && disk "$d" && acpi_only "$p"
            ;;
        *)
            h_err "unknown path '$p'"
            false
            ;;
    esac; then
        [[ " ${failed[*]} " == *" $p "* ]] || failed+=("$p")
    fi
done

h_record "$suite" "$passed" "${#failed[@]}"
if ((${#failed[@]})); then
    h_err "FAIL: ${failed[*]}"
    exit 1
fi
h_say "PASS: ${paths[*]}"
