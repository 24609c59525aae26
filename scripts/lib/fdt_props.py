#!/usr/bin/env python3
"""Adds a u32 property to nodes of a flattened devicetree (DTB), without dtc.

    fdt_props.py IN.dtb OUT.dtb PROP PATH=VALUE [PATH=VALUE ...]

e.g. `fdt_props.py virt.dtb big-little.dtb capacity-dmips-mhz
/cpus/cpu@0=530 /cpus/cpu@1=1024` gives the named nodes the property (one
big-endian cell), as a board's devicetree describes big.LITTLE cores. The
blob is rebuilt (header, memory reservations, structure, strings: the
layout of the devicetree specification, v17) with the property right after
each node's name, where properties belong (before any subnode). A path that
names no node is an error. Used by the capacity boot test to hand QEMU's own
`virt` tree (`-machine dumpdtb=`) back with capacities (`-dtb`).
"""
import struct
import sys

FDT_MAGIC = 0xD00DFEED
BEGIN_NODE, END_NODE, PROP, NOP, END = 1, 2, 3, 4, 9


def align4(n):
    return (n + 3) & ~3


def add_props(blob, prop, values):
    (magic, _total, off_struct, off_strings, off_rsv, version, last_comp, boot_cpu,
     size_strings, size_struct) = struct.unpack_from(">10I", blob, 0)
    if magic != FDT_MAGIC:
        raise ValueError("not a flattened devicetree (bad magic)")
    if version < 17:
        raise ValueError(f"devicetree version {version}, need 17")
    strings = bytearray(blob[off_strings:off_strings + size_strings])
    nameoff = len(strings)
    strings += prop.encode() + b"\0"
    rsv = bytearray()
    i = off_rsv
    while True:
        addr, size = struct.unpack_from(">QQ", blob, i)
        rsv += blob[i:i + 16]
        i += 16
        if addr == 0 and size == 0:
            break
    out = bytearray()
    path = []
    found = set()
    i = off_struct
    end = off_struct + size_struct
    while i < end:
        (tok,) = struct.unpack_from(">I", blob, i)
        if tok == BEGIN_NODE:
            j = blob.index(b"\0", i + 4)
            name = blob[i + 4:j].decode()
            nxt = align4(j + 1)
            out += blob[i:nxt]
            path.append(name)
            here = "/" + "/".join(p for p in path if p)
            if here in values:
                found.add(here)
                out += struct.pack(">III", PROP, 4, nameoff)
                out += struct.pack(">I", values[here])
            i = nxt
        elif tok == END_NODE:
            path.pop()
            out += blob[i:i + 4]
            i += 4
        elif tok == PROP:
            length, _ = struct.unpack_from(">II", blob, i + 4)
            nxt = align4(i + 12 + length)
            out += blob[i:nxt]
            i = nxt
        elif tok == NOP:
            out += blob[i:i + 4]
            i += 4
        elif tok == END:
            out += blob[i:i + 4]
            break
        else:
            raise ValueError(f"bad structure token {tok:#x} at {i:#x}")
    missing = sorted(set(values) - found)
    if missing:
        raise ValueError(f"no such node: {', '.join(missing)}")
    header_size = 40
    off_rsv2 = align4(header_size)
    off_rsv2 = (off_rsv2 + 7) & ~7  # reservations are 8-byte aligned
    off_struct2 = off_rsv2 + len(rsv)
    off_strings2 = off_struct2 + len(out)
    total = off_strings2 + len(strings)
    head = struct.pack(">10I", FDT_MAGIC, total, off_struct2, off_strings2, off_rsv2,
                       version, last_comp, boot_cpu, len(strings), len(out))
    blob2 = bytearray(head)
    blob2 += b"\0" * (off_rsv2 - len(blob2))
    return bytes(blob2 + rsv + out + strings)


def main(argv):
    if len(argv) < 5:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    src, dst, prop = argv[1], argv[2], argv[3]
    values = {}
    for a in argv[4:]:
        p, _, v = a.partition("=")
        if not p.startswith("/") or not v.isdigit():
            print(f"fdt_props: '{a}' is not PATH=NUMBER", file=sys.stderr)
            return 2
        values[p] = int(v)
    with open(src, "rb") as f:
        blob = f.read()
    try:
        out = add_props(blob, prop, values)
    except ValueError as e:
        print(f"fdt_props: {src}: {e}", file=sys.stderr)
        return 1
    with open(dst, "wb") as f:
        f.write(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
