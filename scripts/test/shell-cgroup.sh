#!/usr/bin/env bash
# The `cgroup` shell commands end to end: task groups created, nested,
# weighted, attached to, listed and removed through the `sched> ` shell, and
# every refusal's message.
#
#   scripts/test/shell-cgroup.sh ARCH KERNEL_ELF
#
# Boots the shell on 2 CPUs (plain TCG; nothing here is timed), starts
# `spin -d 60000 0 &` for a thread to attach, then sends, in one go:
#   create a, b, b1 under b; the refusals of create (an existing name, an
#   unknown parent); weight b 300 and its refusals (0: out of range; an
#   unknown group); attach the spinner to a; ls (a: 1 task, b: weight 300,
#   b1 under b); the refusals of rm (a with its task, b with its child, root,
#   an unknown name, no name); ls again (unchanged by the refusals); the
#   spinner back to root; rm a, b1, b; ls (empty); a re-created under its
#   old name; and poweroff.
# Every reply is checked line for line (the `ls` rows by their fields), and
# the run must end with QEMU's clean poweroff status and no panic.
# Log: build/shell-cgroup-$ARCH-smp2.log.
#
# Environment: SHELL_CGROUP_TIMEOUT (seconds, default 240), and what h_qemu
# reads (MEM, ...; SMP is 2).
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init shell-cgroup
[ $# -eq 2 ] || { echo "usage: $0 ARCH KERNEL_ELF" >&2; exit 2; }
arch=$1 kernel=$2
command -v python3 >/dev/null || { echo "shell-cgroup: needs python3" >&2; exit 2; }
export SMP=2
log=$(h_log shell-cgroup "$arch" "smp2")
limit=${SHELL_CGROUP_TIMEOUT:-240}

h_qemu "$arch" kernel="$kernel" || exit 2
h_say "$arch, $kernel (limit ${limit}s, log $log)"
h_start "$log" "$limit" -- "${QEMU[@]}"
h_send $'spin -d 60000 0 &\n'
h_wait_for '^\[1\] [0-9]+ \(threads [0-9]+' || true
tid=$(tr -d '\r' <"$log" | sed -nE 's/^\[1\] [0-9]+ \(threads ([0-9]+).*/\1/p' | head -1)
cmds=(
    "cgroup create a"
    "cgroup create b"
    "cgroup create b1 b"
    "cgroup create a"
    "cgroup create x nope"
    "cgroup weight b 300"
    "cgroup weight b 0"
    "cgroup weight nope 100"
    "cgroup attach a ${tid:-0}"
    "cgroup ls"
    "cgroup rm a"
    "cgroup rm b"
    "cgroup rm root"
    "cgroup rm nope"
    "cgroup rm"
    "cgroup ls"
    "cgroup attach root ${tid:-0}"
    "cgroup rm a"
    "cgroup rm b1"
    "cgroup rm b"
    "cgroup ls"
    "cgroup create a"
    "cgroup ls"
    "poweroff"
)
for c in "${cmds[@]}"; do
    h_send "$c"$'\n'
done
h_finish_shell shell-cgroup "$arch" "$log"
rc=$H_SHELL_RC

TID="$tid" PYTHONPATH=$H_LIB python3 - "$log" "$rc" <<'PY'
import os, sys
from transcript import panicked, read, replies

log, rc = sys.argv[1], int(sys.argv[2])
tid = os.environ["TID"]
text = read(log)
fails = []
if not tid:
    fails.append("no thread id in the 'spin ... &' reply")
blocks = replies(text)
seen = {}
def reply(cmd):
    """The reply to the next occurrence of cmd (its non-empty lines)."""
    n = seen.get(cmd, 0)
    seen[cmd] = n + 1
    got = [[l.rstrip() for l in b if l.strip()] for c, b in blocks if c.rstrip() == cmd]
    if len(got) <= n:
        fails.append(f"no reply to {cmd!r} #{n + 1}")
        return []
    return got[n]
def want(cmd, lines):
    got = reply(cmd)
    if got != lines:
        fails.append(f"{cmd!r}: got {got!r}, want {lines!r}")
def want_start(cmd, prefix):
    got = reply(cmd)
    if len(got) != 1 or not got[0].startswith(prefix):
        fails.append(f"{cmd!r}: got {got!r}, want one line starting {prefix!r}")
def want_ls(rows):
    got = reply("cgroup ls")
    if not got or got[0].split() != ["NAME", "PARENT", "WEIGHT", "TASKS"]:
        fails.append(f"cgroup ls: no header: {got!r}")
        return
    have = sorted(l.split() for l in got[1:])
    if have != sorted(rows):
        fails.append(f"cgroup ls: rows {have!r}, want {sorted(rows)!r}")

want("cgroup create a", ["cgroup a created under root"])
want("cgroup create b", ["cgroup b created under root"])
want("cgroup create b1 b", ["cgroup b1 created under b"])
want("cgroup create a", ["error: cgroup: group 'a' exists"])
want("cgroup create x nope", ["error: cgroup: no such group 'nope'"])
want("cgroup weight b 300", ["cgroup b weight 300"])
want_start("cgroup weight b 0", "error: cgroup: W must be in [1, 10000], got '0'")
want("cgroup weight nope 100", ["error: cgroup: no such group 'nope'"])
want_start(f"cgroup attach a {tid}", f"pid {tid} (")
full = [["a", "root", "100", "1"], ["b", "root", "300", "0"], ["b1", "b", "100", "0"]]
want_ls(full)
want("cgroup rm a", ["error: cgroup: cannot remove 'a': busy (1 task(s) attached, 0 child group(s))"])
want("cgroup rm b", ["error: cgroup: cannot remove 'b': busy (0 task(s) attached, 1 child group(s))"])
want("cgroup rm root", ["error: cgroup: the root group cannot be removed"])
want("cgroup rm nope", ["error: cgroup: no such group 'nope'"])
want_start("cgroup rm", "error: cgroup: missing NAME")
want_ls(full)
want_start(f"cgroup attach root {tid}", f"pid {tid} (")
want("cgroup rm a", ["cgroup a removed"])
want("cgroup rm b1", ["cgroup b1 removed"])
want("cgroup rm b", ["cgroup b removed"])
want_ls([])
want("cgroup create a", ["cgroup a created under root"])
want_ls([["a", "root", "100", "0"]])
if panicked(text):
    fails.append("the kernel panicked")
if rc != 0:
    fails.append(f"QEMU exit status {rc} after poweroff (want 0)")
if fails:
    for f in fails:
        print(f"shell-cgroup: FAIL: {f}", file=sys.stderr)
    sys.exit(1)
print("shell-cgroup: PASS: create, nested create, weight, attach, ls, rm and every refusal "
      f"({sum(seen.values())} replies checked)")
PY
status=$?
[ "$status" -eq 0 ] || h_err "see $log"
h_record "shell-cgroup $arch" "$((status == 0))" "$((status != 0))"
exit "$status"
