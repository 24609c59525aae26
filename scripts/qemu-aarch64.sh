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

# ELF -> raw binary: rust-objcopy from the toolchain (works when the llvm-tools
# component is installed), a system llvm-objcopy or aarch64 GNU objcopy, else a
# small python3 flattener of the PT_LOAD segments (what `objcopy -O binary` does).
objcopy=""
candidates=()
if sysroot=$(rustc --print sysroot 2>/dev/null); then
    candidates+=("$sysroot"/lib/rustlib/*/bin/rust-objcopy "$sysroot"/lib/rustlib/*/bin/llvm-objcopy)
fi
candidates+=(llvm-objcopy llvm-objcopy-{19,18,17,16,15,14} aarch64-linux-gnu-objcopy)
for c in "${candidates[@]}"; do
    if "$c" --version >/dev/null 2>&1; then
        objcopy=$c
        break
    fi
done
elf_to_binary() { # ELF OUT
    if [[ -n $objcopy ]]; then
        "$objcopy" -O binary "$1" "$2"
        return
    fi
    python3 - "$1" "$2" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not a little-endian ELF64"
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
segs = []
for i in range(phnum):
    p_type, _, off, _, paddr, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
    if p_type == 1 and filesz > 0:  # PT_LOAD with file contents
        segs.append((paddr, data[off:off + filesz]))
base = min(p for p, _ in segs)
out = bytearray(max(p + len(b) for p, b in segs) - base)
for p, b in segs:
    out[p - base:p - base + len(b)] = b
open(sys.argv[2], "wb").write(out)
PY
}

image="$elf.Image"
tmp="$image.tmp.$$"
elf_to_binary "$elf" "$tmp"
mv -f "$tmp" "$image"

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
