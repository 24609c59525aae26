#!/usr/bin/env bash
# The debug shell under a SCHED_FIFO hog on one CPU: the fair server keeps
# it usable.
#
#   scripts/test/shell-rt-hog.sh ARCH KERNEL_ELF
#
# Boots the shell on 1 CPU (plain TCG), starts `spin -d 20000 0 &` and
# makes its thread SCHED_FIFO 50 with `chrt -f`. The shell is a fair
# thread: only the fair server (Linux's defaults, 50 ms every 1 s) lets it
# run while the hog spins. Checked by order of events, which host load
# cannot upset (the time bound itself is the `fair_server_share_under_fifo_hog`
# ktest's, under -icount):
#   - with the server, `stat` and `ps` are answered while the hog still
#     runs (before the job's Done report), and `ps` shows it as FIFO;
#   - with the server off (`sysctl kernel.sched_fair_server_runtime_ns=0`)
#     the next `stat` is answered only after the hog has ended (its uptime is
#     past the job's end, and the Done report comes first or with it).
# The guest uptimes are reported: A (before the chrt) to B (the answer under
# the hog) is at most 2 periods - runtime = 1950 ms plus a tick on an idle
# host (the server is charged for all fair running time, the spinner's too
# while it was fair, so its budget may be spent when the hog starts: then it
# serves at the next period's zero-laxity point; usually it is one
# zero-laxity wait, about 950 ms); TCG under host load delivers ticks late
# and stretches it. (Not run under -icount: there the
# guest crawled once the shell slept with the spinner running, in this
# kernel and not in the one before the fair server, also with the server's
# tick disabled; not understood, see the branch's report.)
# Log: build/shell-rt-hog-$ARCH-smp1.log.
#
# Environment: SHELL_RT_HOG_TIMEOUT (seconds, default 240), and what h_qemu
# reads (MEM, ...; SMP is 1).
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init shell-rt-hog
[ $# -eq 2 ] || { echo "usage: $0 ARCH KERNEL_ELF" >&2; exit 2; }
arch=$1 kernel=$2
command -v python3 >/dev/null || { echo "shell-rt-hog: needs python3" >&2; exit 2; }
export SMP=1
log=$(h_log shell-rt-hog "$arch" "smp1")
limit=${SHELL_RT_HOG_TIMEOUT:-240}

h_qemu "$arch" kernel="$kernel" || exit 2
h_say "$arch, $kernel (limit ${limit}s, log $log)"
h_start "$log" "$limit" -- "${QEMU[@]}"
h_send $'spin -d 20000 0 &\n'
h_wait_for '^\[1\] [0-9]+ \(threads [0-9]+' || true
tid=$(tr -d '\r' <"$log" | sed -nE 's/^\[1\] [0-9]+ \(threads ([0-9]+).*/\1/p' | head -1)
for c in stat "chrt -f 50 $tid" stat ps "sysctl kernel.sched_fair_server_runtime_ns=0"; do
    h_send "$c"$'\n'
done
# The server sees its new runtime at its next tick: let the guest pass it
# (a host second is far more than one 4 ms guest tick) before the next stat.
h_wait_for '^kernel.sched_fair_server_runtime_ns = 0' || true
sleep 1
h_send $'stat\n'
h_wait_for '^\[1\]  Done' || true
h_send $'sysctl kernel.sched_fair_server_runtime_ns\npoweroff\n'
h_finish_shell shell-rt-hog "$arch" "$log"
rc=$H_SHELL_RC

TID="$tid" PYTHONPATH=$H_LIB python3 - "$log" "$rc" <<'PY'
import os, re, sys
from transcript import read

log, rc = sys.argv[1], int(sys.argv[2])
tid = os.environ["TID"]
text = read(log)
fails = []
if not tid:
    fails.append("no thread id in the 'spin ... &' reply")
blocks = [b.split("\n") for b in text.split("sched> ")[1:]]
def reply(cmd, nth=0):
    got = [[l for l in b[1:] if l] for b in blocks if b[0] == cmd]
    return got[nth] if len(got) > nth else None
def uptime(nth):
    r = reply("stat", nth) or []
    m = next((re.match(r"uptime (\d+)(?:\.(\d+))? ms", l) for l in r if l.startswith("uptime ")), None)
    if not m:
        fails.append(f"stat #{nth + 1}: no uptime line in {r!r}")
        return None
    return float(m.group(1) + "." + (m.group(2) or "0"))
a, b, c = uptime(0), uptime(1), uptime(2)
done = text.find("[1]  Done")
if done == -1:
    fails.append("no Done report for the hog")
if text.find("sched> ps") > done:
    fails.append("ps was answered only after the hog ended")
stats = [m.start() for m in re.finditer(r"sched> stat", text)]
if len(stats) == 3 and not (stats[1] < done):
    fails.append("the stat under the hog was answered only after it ended")
if len(stats) == 3 and a is not None and c is not None and c - a < 19000:
    fails.append(f"with the server off the shell answered {c - a:.1f} ms after A, before the hog's end")
ps = reply("ps") or []
row = [l for l in ps if l.split()[:1] == [tid]]
if not row or "FIFO" not in row[0]:
    fails.append(f"ps does not show thread {tid} as FIFO: {row!r}")
if reply(f"sysctl kernel.sched_fair_server_runtime_ns") != ["kernel.sched_fair_server_runtime_ns = 0"]:
    fails.append(f"sysctl read back: {reply('sysctl kernel.sched_fair_server_runtime_ns')!r}")
if "KERNEL PANIC" in text or "panicked" in text:
    fails.append("the kernel panicked")
if rc != 0:
    fails.append(f"QEMU exit status {rc} after poweroff (want 0)")
if fails:
    for f in fails:
        print(f"shell-rt-hog: FAIL: {f}", file=sys.stderr)
    sys.exit(1)
print(f"shell-rt-hog: PASS: under a FIFO hog on 1 CPU the shell answered {b - a:.1f} ms after the chrt with the "
      f"fair server (2P - R = 1950 ms on an idle host), {c - a:.1f} ms without it (the hog's end)")
PY
status=$?
[ "$status" -eq 0 ] || h_err "see $log"
h_record "shell-rt-hog $arch" "$((status == 0))" "$((status != 0))"
exit "$status"
