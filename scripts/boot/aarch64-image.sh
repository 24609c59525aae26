#!/usr/bin/env bash
# Makes the raw arm64 `Image` from the aarch64 kernel ELF (what booti, QEMU
# -kernel and UEFI load: the ELF's loadable segments, flat).
#
#   scripts/boot/aarch64-image.sh KERNEL_ELF OUT
set -euo pipefail
if (($# != 2)); then
    echo "usage: $0 KERNEL_ELF OUT" >&2
    exit 2
fi
[[ -f $1 ]] || { echo "$0: no such file: $1" >&2; exit 2; }

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

tmp="$2.tmp.$$"
elf_to_binary "$1" "$tmp"
mv -f "$tmp" "$2"
