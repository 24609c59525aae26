#!/usr/bin/env bash
# Boots the aarch64 kernel on QEMU virt (TCG); also the cargo runner for aarch64.
#
#   scripts/qemu-aarch64.sh KERNEL_ELF [kernel command line words...]
#
# Converts the ELF into a raw arm64 `Image` next to it (KERNEL_ELF.Image) and boots
# it with `-kernel`, so QEMU passes the DTB (with -append as /chosen/bootargs) in x0,
# exactly as U-Boot `booti` or the Raspberry Pi firmware would. The serial console
# is this terminal: interactive use and piped stdin both work, and Ctrl-C goes to
# the guest (signal=off); end an interactive session from the guest or by killing
# QEMU. The exit status is the guest's verdict through semihosting SYS_EXIT:
# 0 = success, 1 = failure (or a QEMU error; 124 if TIMEOUT expired).
#
# Environment:
#   GIC=2|3        interrupt controller version (default 2)
#   CPU=name       -cpu model (default cortex-a72; `max` also works)
#   SMP=n          CPUs (default 1)
#   MEM=size       RAM (default 256M)
#   LOAD_ADDR=0x.. load the Image at this 2 MiB-aligned address instead of QEMU's
#                  0x40200000 (tests the self-relocation). QEMU -kernel always loads
#                  at RAM base + 2 MiB, so -kernel gets an 80-byte shim Image that
#                  branches to LOAD_ADDR with x0 (the DTB) untouched, and the real
#                  Image goes to LOAD_ADDR via `-device loader`. Keep LOAD_ADDR out
#                  of the DTB QEMU places at RAM base + 128 MiB (for >= 256M RAM):
#                  e.g. 0x40400000 or 0x47e00000.
#   TIMEOUT=secs   kill QEMU after this long (exit 124); default: no limit
#   QEMU_EXTRA="..." extra QEMU arguments (word-split)
set -euo pipefail

if (($# < 1)); then
    echo "usage: $0 KERNEL_ELF [kernel command line words...]" >&2
    exit 2
fi
elf=$1
shift
cmdline="$*"
[[ -f $elf ]] || { echo "$0: no such file: $elf" >&2; exit 2; }

image="$elf.Image"
"$(dirname "$0")/aarch64-image.sh" "$elf" "$image"

machine="virt,gic-version=${GIC:-2}"
args=(
    -machine "$machine" -cpu "${CPU:-cortex-a72}" -smp "${SMP:-1}" -m "${MEM:-256M}"
    -semihosting -no-reboot
    -nodefaults -display none
    -chardev stdio,id=s0,signal=off -serial chardev:s0
    -append "$cmdline"
)

if [[ -n ${LOAD_ADDR:-} ]]; then
    addr=$((LOAD_ADDR))
    if ((addr % 0x200000 != 0)); then
        echo "$0: LOAD_ADDR=$LOAD_ADDR is not 2 MiB aligned" >&2
        exit 2
    fi
    # Shim: arm64 image header (code0 = b +64, image_size 4 KiB, flags LE|4K|anywhere),
    # then `ldr x1, #8; br x1; .quad LOAD_ADDR`.
    # le32/le64 print printf escapes (\xNN), turned into bytes by the outer printf.
    le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
    le64() { le32 $(($1 & 0xffffffff)); le32 $(($1 >> 32 & 0xffffffff)); }
    shim="$elf.shim.Image"
    {
        printf "$(le32 0x14000010)$(le32 0)$(le64 0)$(le64 0x1000)$(le64 0xA)"
        printf "$(le64 0)$(le64 0)$(le64 0)ARM\\x64$(le32 0)"
        printf "$(le32 0x58000041)$(le32 0xd61f0020)$(le64 "$addr")"
    } >"$shim.tmp.$$"
    mv -f "$shim.tmp.$$" "$shim"
    args+=(-kernel "$shim" -device "loader,file=$image,addr=$(printf '0x%x' "$addr"),force-raw=on")
else
    args+=(-kernel "$image")
fi

# shellcheck disable=SC2206
extra=(${QEMU_EXTRA:-})
if [[ -n ${TIMEOUT:-} ]]; then
    exec timeout --foreground "$TIMEOUT" qemu-system-aarch64 "${args[@]}" "${extra[@]}"
fi
exec qemu-system-aarch64 "${args[@]}" "${extra[@]}"
