#!/usr/bin/env python3
"""Counts raw address parameters: in every `fn` signature under the given
directories (default: kernel-hal/src kernel/src), comments left out, but
not in addr.rs (the address types' own constructors are the conversion),

- a parameter named as an address (the name, or its last `_` word: addr,
  base, start, end, top, bottom, page, guard, entry, rsdp, dtb, mbi, block,
  va, pa, sp, fp, pc) typed `usize` / `u64` / `Option<usize|u64>`, or a
  range named ram, image, holes, region(s) typed `(usize, usize)` /
  `(u64, u64)` (or a slice of them);
- the return type of a function named as an address (a `_` word of its name
  ends in addr, base, end, top, bottom, page, guard(s), table, stack(s),
  region, redistributor, entry, maybe then _of / _for) when it is `usize` / `u64`, `Option` of one, or a
  `(usize, usize)` range.

`-v` lists each hit. A heuristic: it counts names, so a lock's address kept
as an identity key (the lock validator's `addr: usize`) counts too.
Used for the counts in docs/design/kernel.md ("Addresses")."""
import os
import re
import sys

WORDS = r'addr|base|start|end|top|bottom|page|guard|entry|rsdp|dtb|mbi|block|va|pa|sp|fp|pc'
INT = r'(?:Option<)?(?:usize|u64)\b'
RANGE = r'(?:&(?:mut )?\[)?\((?:usize|u64), (?:usize|u64)\)'
PARAM = re.compile(r'\b(?:\w+_)?(?:' + WORDS + r')\s*:\s*' + INT
                   + r'|\b(?:ram|image|holes|regions?)\s*:\s*' + RANGE)
RET_NAME = re.compile(r'(^|_)(addr|base|end|top|bottom|page|guards?|table|stacks?|region|redistributor|entry)(_of|_for)?$')
RET = re.compile(r'^\s*->\s*(?:Option<)?(?:usize|u64|\(usize, usize\)|\[\(usize, usize\); \w+\])>?\s*(where|$)')


def signatures(path):
    src = re.sub(r'//[^\n]*', '', open(path).read())
    for m in re.finditer(r'\bfn\s+(\w+)\s*(?:<[^>{]*>)?\s*\(', src):
        i, depth = m.end(), 1
        while depth and i < len(src):
            depth += (src[i] == '(') - (src[i] == ')')
            i += 1
        j = i
        while j < len(src) and src[j] not in '{;':
            j += 1
        params = re.sub(r'\s+', ' ', src[m.end():i - 1])
        params = re.sub(r'fn\s*\([^)]*\)', 'fn()', params)  # fn-pointer types
        line = src.count('\n', 0, m.start()) + 1
        yield m.group(1), line, params, re.sub(r'\s+', ' ', src[i:j])


def main():
    args = [a for a in sys.argv[1:] if a != '-v']
    verbose = '-v' in sys.argv
    total = 0
    for root in args or ['kernel-hal/src', 'kernel/src']:
        for dirpath, _, files in sorted(os.walk(root)):
            for f in sorted(files):
                if not f.endswith('.rs'):
                    continue
                path = os.path.join(dirpath, f)
                if f == 'addr.rs':
                    continue
                for name, line, params, ret in signatures(path):
                    hits = [h.group(0) for h in PARAM.finditer(params)]
                    if RET_NAME.search(name) and RET.search(ret):
                        hits.append(ret.strip())
                    total += len(hits)
                    if verbose and hits:
                        print(f'{path}:{line}: {name}: {"; ".join(hits)}')
    print(total)


main()
