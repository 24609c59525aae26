#!/usr/bin/env python3
"""Checks the relative links of the Markdown docs.

    scripts/test/md-links.py [FILE.md...]    (default: every Markdown file
                                              git tracks: README.md, docs/**)
    scripts/test/md-links.py --self-test

For each file (paths relative to the repository's root, or absolute), every
relative link (`[text](path)`, `![alt](path)`, `[ref]: path`, an HTML
`href=` or `src=`) must name a file or directory that exists, and every
`#anchor` (`#x` on the same page, `page.md#x` on another) must be one of the
target page's anchors: the slug GitHub gives each heading (below), or an
explicit `<a id=...>` / `<a name=...>`. Links inside fenced code blocks and
inline code are not links. External links (http:, https:, mailto:, any
scheme) are not checked, nor the anchor of a link to a file that is not
Markdown (GitHub's `file.rs#L10`).

GitHub's slug of a heading: the heading's text as rendered (inline code's
content, a link's text, no emphasis markers, escapes resolved), lowercased;
every character but a letter, a mark, a digit, `_`, `-` or a space dropped
(non-ASCII letters stay; `.`, `(`, `)`, `,`, `'`, a backtick, `:`, `×`, `−`
go); each space turned into `-`. A page's second heading with the same slug
gets `-1`, the third `-2`, and so on (github-slugger's rule).

A code fence left open (to the end of the file, or to where the next block
opens with ```sh) counts as a broken link too: the headings and links after
it would render as code. Prints each broken link as `FILE:LINE: ...` (for
a missing anchor, also the checked files that have it: where a section
went when it moved to a page of its own) and exits 1 when there is one, 0
when there is none, 2 on bad input (a file that is not there).
--self-test checks the checker on a fixture made in a temporary directory:
the good links pass, each broken one is reported at its line.
"""
import glob
import html
import os
import re
import subprocess
import sys
import tempfile
import unicodedata
from urllib.parse import unquote

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

FENCE = re.compile(r"^ *(`{3,}|~{3,})(.*)$")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:[ \t]*(<[^>]*>|\S+)")
HTML_ANCHOR = re.compile(r"<a\s[^>]*?\b(?:id|name)\s*=\s*[\"']?([^\"'\s>]+)", re.I)
HTML_LINK = re.compile(r"<(?:a|img)\s[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
# A line under which `---` or `===` makes no setext heading.
NOT_PARAGRAPH = re.compile(r"^ {0,3}(#|[-*+>|]|\d+[.)]|=+[ \t]*$|-+[ \t]*$)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
ESCAPABLE = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def blocks(lines, unclosed=None):
    """The file's lines outside fenced code blocks, grouped into blocks
    (paragraphs, headings, tables: runs of non-blank lines), as lists of
    (line number, text). A fence's lines belong to no block. The line of a
    fence still open at the end of the file, or open where another fence
    with an info string (```sh) starts, is appended to `unclosed`."""
    block, fence, fence_line = [], None, 0
    for no, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                if not m.group(2).strip():
                    fence = None
                elif unclosed is not None:
                    # An opening fence (```sh) inside a code block: most
                    # likely the block before it was never closed.
                    unclosed.append(fence_line)
            continue
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            if block:
                yield block
                block = []
            fence, fence_line = m.group(1), no
            continue
        if not line.strip():
            if block:
                yield block
                block = []
            continue
        block.append((no, line))
    if block:
        yield block
    if fence is not None and unclosed is not None:
        unclosed.append(fence_line)


def strip_code(text):
    """text with each inline code span's backticks and content replaced by
    spaces (its line breaks kept), so nothing inside one is taken for a
    link; backticks without a closing run of the same length stay."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i] == "\\" and i + 1 < n and text[i + 1] == "`":
            out.append("\\`")
            i += 2
            continue
        if text[i] != "`":
            out.append(text[i])
            i += 1
            continue
        j = i
        while j < n and text[j] == "`":
            j += 1
        run = j - i
        k = j
        close = -1
        while k < n:
            if text[k] == "`":
                e = k
                while e < n and text[e] == "`":
                    e += 1
                if e - k == run:
                    close = k
                    break
                k = e
            else:
                k += 1
        if close < 0:
            out.append(text[i:j])
            i = j
            continue
        end = close + run
        out.append("".join(c if c == "\n" else " " for c in text[i:end]))
        i = end
    return "".join(out)


def inline_text(text):
    """A heading's text as GitHub renders it, as far as its slug goes."""
    parts, i = [], 0
    # Code spans keep their content verbatim (no escapes, no emphasis),
    # less one space each side when both are there.
    for m in re.finditer(r"(`+)(.+?)(?<!`)\1(?!`)", text):
        code = m.group(2)
        if len(code) > 2 and code[0] == code[-1] == " " and code.strip():
            code = code[1:-1]
        parts.append(("md", text[i:m.start()]))
        parts.append(("code", code))
        i = m.end()
    parts.append(("md", text[i:]))
    out = []
    for kind, s in parts:
        if kind == "md":
            s = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", s)  # links and images: their text
            s = re.sub(r"<[^>]+>", "", s)  # HTML tags
            # Escapes: the character itself (an escaped `_` is no emphasis:
            # held aside while emphasis underscores, the ones not inside a
            # word, are dropped).
            s = re.sub(r"\\([%s])" % re.escape(ESCAPABLE),
                       lambda m: "\ue000" if m.group(1) == "_" else m.group(1), s)
            s = re.sub(r"(?<!\w)_+|_+(?!\w)", "", s)
            s = html.unescape(s.replace("\ue000", "_"))
        out.append(s)
    return "".join(out)


def slug(text):
    s = inline_text(text).strip().lower()
    keep = []
    for c in s:
        cat = unicodedata.category(c)
        if c in " -_" or cat[0] in "LMN" or cat == "Pc":
            keep.append(c)
    return "".join(keep).replace(" ", "-")


class Page:
    """One Markdown file's anchors and links."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8") as f:
            self.lines = f.read().split("\n")
        self.anchors = set()
        self.links = []  # (line, target)
        self.unclosed = []  # the line of a code fence never closed
        seen = {}
        for block in blocks(self.lines, self.unclosed):
            for idx, (no, line) in enumerate(block):
                m = ATX.match(line)
                if m:
                    heading = m.group(2) or ""
                elif idx > 0 and SETEXT.match(line) and not NOT_PARAGRAPH.match(block[idx - 1][1]):
                    heading = block[idx - 1][1].strip()
                else:
                    continue
                base = slug(heading)
                name = base
                while name in seen:
                    seen[base] += 1
                    name = "%s-%d" % (base, seen[base])
                seen[name] = 0
                self.anchors.add(name)
            self._links(block)

    def _links(self, block):
        text = "\n".join(line for _, line in block)
        first = block[0][0]
        code_free = strip_code(text)

        def line_of(pos):
            return first + code_free.count("\n", 0, pos)

        for m in HTML_ANCHOR.finditer(code_free):
            self.anchors.add(m.group(1))
        for m in HTML_LINK.finditer(code_free):
            self.links.append((line_of(m.start()), html.unescape(m.group(1))))
        offset = 0
        for line in code_free.split("\n"):
            m = REF_DEF.match(line)
            if m:
                self.links.append((line_of(offset), m.group(2).strip("<>")))
            offset += len(line) + 1
        i = 0
        while True:
            i = code_free.find("](", i)
            if i < 0:
                break
            if i > 0 and code_free[i - 1] == "\\":
                i += 2
                continue
            j = i + 2
            while j < len(code_free) and code_free[j] in " \t\n":
                j += 1
            if j < len(code_free) and code_free[j] == "<":
                end = code_free.find(">", j)
                target = code_free[j + 1:end] if end > 0 else ""
            else:
                depth, k = 0, j
                while k < len(code_free):
                    c = code_free[k]
                    if c in " \t\n":
                        break
                    if c == "(":
                        depth += 1
                    elif c == ")":
                        if depth == 0:
                            break
                        depth -= 1
                    k += 1
                target = code_free[j:k]
            if target:
                self.links.append((line_of(i), target))
            i += 2


def check(paths, root, out):
    """Prints each broken link of the files `paths` to `out`; returns their
    count and the count of links checked. `root` is the repository's root
    (for links starting with /)."""
    pages = {}

    def page(path):
        if path not in pages:
            pages[path] = Page(path)
        return pages[path]

    broken = links = 0
    for path in paths:
        src = page(path)
        rel = os.path.relpath(path, root)
        links += len(src.links)
        for no in src.unclosed:
            print("%s:%d: a code fence not closed before the next one opens (or the file ends):"
                  " what follows, its headings and links, is code" % (rel, no), file=out)
            broken += 1
        for no, target in src.links:
            if SCHEME.match(target) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            file_part = unquote(file_part.split("?", 1)[0])
            anchor = unquote(anchor)
            if file_part:
                base = root if file_part.startswith("/") else os.path.dirname(path)
                dest = os.path.normpath(os.path.join(base, file_part.lstrip("/")))
                if not os.path.exists(dest):
                    print("%s:%d: %s: no such file or directory (%s)"
                          % (rel, no, target, os.path.relpath(dest, root)), file=out)
                    broken += 1
                    continue
            else:
                dest = path
            if not anchor or not dest.endswith(".md") or os.path.isdir(dest):
                continue
            if anchor not in page(dest).anchors:
                where = "this page" if dest == path else os.path.relpath(dest, root)
                # Where the heading went, if another of the files has it (a
                # section moved to a page of its own).
                found = [os.path.relpath(p, root) for p in paths
                         if p != dest and anchor in page(p).anchors]
                hint = "; it is in %s" % ", ".join(found) if found else ""
                print("%s:%d: %s: no heading or anchor '%s' in %s%s"
                      % (rel, no, target, anchor, where, hint), file=out)
                broken += 1
    return broken, links


def default_files(root):
    """The repository's Markdown files: git's list of them (README.md,
    docs/, the crates' and scripts' own), else README.md and docs/**."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.md"],
                             capture_output=True, check=True).stdout.decode()
        files = [os.path.join(root, f) for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.join(root, "README.md")]
        files += glob.glob(os.path.join(root, "docs", "**", "*.md"), recursive=True)
    return sorted(f for f in files if os.path.isfile(f))


FIXTURE = {
    "README.md": """# The fixture

See [the guide](docs/guide.md), [its part](docs/guide.md#part-two-the-end)
and [a second line
link](docs/guide.md#über-straße), [a folder](docs/), [code](src/lib.rs#L3),
[the web](https://example.org/x.md#nothing) and [here](#the-fixture).

A [missing page](docs/nope.md) and [a missing heading](docs/guide.md#part-three).
`[in code](docs/nope.md)` and ``a `[nested](nope.md)` span``.

```sh
[in a fence](nope.md)
```

[ref]: docs/guide.md#dup-1
[bad ref]: docs/guide.md#dup-3
""",
    "docs/guide.md": """# Guide

## Part two: the end

## Über Straße

## Dup

## Dup

<a id="custom"></a>

## Ours with Linux's costs (`hackbench -C linux`), 1.5×

Back [up](../README.md#the-fixture), [custom](#custom),
[slugged](#ours-with-linuxs-costs-hackbench--c-linux-15), [broken](#dup-2).
""",
    "src/lib.rs": "// three lines\n\n\n",
    "docs/other.md": "# Other\n\n## Part three\n",
    "docs/open.md": "# Open\n\n[fine](#open)\n\n   ```sh\nmake\n\n## Swallowed\n\n"
                    "```sh\nmake test\n```\n\n```\nthe last\n```\n",
}
# The broken links of the fixture: file, line, and a part of the message.
FIXTURE_BROKEN = [
    ("README.md", 8, "docs/nope.md: no such file"),
    ("README.md", 8, "no heading or anchor 'part-three' in docs/guide.md; it is in docs/other.md"),
    ("README.md", 16, "no heading or anchor 'dup-3'"),
    ("docs/guide.md", 16, "no heading or anchor 'dup-2' in this page"),
    ("docs/open.md", 5, "a code fence not closed"),
]


def self_test():
    import io
    failed = 0

    def expect(ok, what):
        nonlocal failed
        print("  %s: %s" % ("ok" if ok else "FAILED", what))
        failed += not ok

    cases = {
        "Where things stand (2026-12-06)": "where-things-stand-2026-12-06",
        "Ours with Linux's syscall costs (`hackbench -C linux`)":
            "ours-with-linuxs-syscall-costs-hackbench--c-linux",
        "A/B: NEXT_BUDDY and the preemption model, hackbench":
            "ab-next_buddy-and-the-preemption-model-hackbench",
        "Smoke test: `make test-linux`": "smoke-test-make-test-linux",
        "2026-12-05 (late afternoon) on main at 2679821: latency re-taken":
            "2026-12-05-late-afternoon-on-main-at-2679821-latency-re-taken",
        "Bounds at −10 and µs, **bold** and [a link](x.md)": "bounds-at-10-and-µs-bold-and-a-link",
        "NEXT\\_BUDDY _on_ `a_b`": "next_buddy-on-a_b",
    }
    for text, want in cases.items():
        got = slug(text)
        expect(got == want, "slug(%r) = %r (want %r)" % (text, got, want))
    with tempfile.TemporaryDirectory() as tmp:
        for name, body in FIXTURE.items():
            os.makedirs(os.path.dirname(os.path.join(tmp, name)), exist_ok=True)
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(body)
        buf = io.StringIO()
        n, _ = check([os.path.join(tmp, f) for f in ("README.md", "docs/guide.md", "docs/open.md", "docs/other.md")],
                     tmp, buf)
        lines = buf.getvalue().splitlines()
        expect(n == len(FIXTURE_BROKEN) == len(lines),
               "the fixture's broken links: %d reported, %d expected" % (n, len(FIXTURE_BROKEN)))
        for name, no, part in FIXTURE_BROKEN:
            expect(any(l.startswith("%s:%d: " % (name, no)) and part in l for l in lines),
                   "reported %s:%d %s" % (name, no, part))
        for l in lines:
            expect(any(l.startswith("%s:%d: " % (name, no)) and part in l
                       for name, no, part in FIXTURE_BROKEN), "expected: %s" % l)
    print("md-links self-test: %s" % ("FAILED" if failed else "ok"))
    return 1 if failed else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if any(a.startswith("-") for a in argv[1:]):
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    files = [os.path.abspath(os.path.join(ROOT, a)) if not os.path.isabs(a) else a for a in argv[1:]]
    files = files or default_files(ROOT)
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        print("md-links: no such file: %s" % ", ".join(missing), file=sys.stderr)
        return 2
    broken, links = check(files, ROOT, sys.stdout)
    print("md-links: %d files, %d links, %d broken" % (len(files), links, broken))
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
