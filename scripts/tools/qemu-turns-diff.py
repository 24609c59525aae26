#!/usr/bin/env python3
"""The vCPU turns of one run, from the counting QEMU of
scripts/tools/qemu-turns.sh: the difference of two of its counts (two
QEMU_TSTAT files, or two snapshots of one QEMU_TSTAT.snap file, named by
their tags), as a table of the turns by how they ended, and with a symbol
table the kicks by the callers of the timer write.

  scripts/tools/qemu-turns-diff.py BEFORE AFTER [SYMS]
  scripts/tools/qemu-turns-diff.py FILE.snap:TAG1 FILE.snap:TAG2 [SYMS]

SYMS: `nm` output of the guest kernel (ours) or the guest's
/proc/kallsyms (Linux): "ADDR TYPE NAME" lines. Instructions are shown as
time at -icount shift=2 (4 ns an instruction; ICOUNT_SHIFT to change).
"""
import bisect
import collections
import os
import sys

KINDS = ["deadline", "kick", "halt", "pause", "other"]
BANDS = ["<20us", "<100us", "<1ms", "<4ms", "<10ms", "longer"]


def read(spec):
    """One count: {name: value} for the first line, {kind: [turns, ins,
    bins...]}, and the kick callers {"a,b,c": n}."""
    path, _, tag = spec.rpartition(":") if ".snap:" in spec else (spec, "", "")
    lines = open(path).read().splitlines()
    if tag:
        out, take = [], False
        for l in lines:
            if l.startswith("snap "):
                take = l.split()[1] == tag
            elif take:
                out.append(l)
        if not out:
            sys.exit(f"qemu-turns-diff: no snapshot '{tag}' in {path}")
        lines = out
    head, kinds, callers = {}, {}, collections.Counter()
    for l in lines:
        w = l.split()
        if not w:
            continue
        if w[0] == "kicks":
            head = {w[i]: int(w[i + 1]) for i in range(0, len(w) - 1, 2)}
        elif w[0] in KINDS + ["empty"]:
            kinds[w[0]] = [int(w[2]), int(w[4])] + [int(x) for x in w[6:]]
        elif w[0] == "kick-callers":
            callers[w[1]] += int(w[2])
    return head, kinds, callers


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    (h0, k0, c0), (h1, k1, c1) = read(sys.argv[1]), read(sys.argv[2])
    ns = 1 << int(os.environ.get("ICOUNT_SHIFT", "2"))
    print("  ".join(f"{k} {h1[k] - h0.get(k, 0)}" for k in h1))
    rows = {k: [b - a for a, b in zip(k0.get(k, [0] * 8), k1[k])] for k in KINDS if k in k1}
    total = sum(r[1] for r in rows.values()) or 1
    for k, r in rows.items():
        bands = " ".join(f"{n} {v}" for n, v in zip(BANDS, r[2:]))
        print(f"{k:9s} turns {r[0]:7d}  {r[1] * ns / 1e6:8.1f} ms ({100 * r[1] / total:4.1f}%)"
              f"  mean {r[1] * ns / max(r[0], 1) / 1e3:7.1f} us  {bands}")
    if len(sys.argv) == 4:
        syms = []
        for l in open(sys.argv[3]):
            w = l.split()
            if len(w) >= 3 and w[1] in "tTwW":
                syms.append((int(w[0], 16), w[2]))
        syms.sort()
        addrs = [a for a, _ in syms]

        def name(x):
            x = int(x, 16)
            i = bisect.bisect_right(addrs, x) - 1
            return syms[i][1] if x and i >= 0 else "-"

        by = collections.Counter()
        for key in set(c0) | set(c1):
            n = c1.get(key, 0) - c0.get(key, 0)
            if n:
                by[" <- ".join(name(x) for x in key.split(","))] += n
        print(f"kicks by the timer write's callers ({sum(by.values())} resolved):")
        for chain, n in by.most_common(12):
            print(f"  {n:6d}  {chain}")


if __name__ == "__main__":
    main()
