#!/usr/bin/env bash
# Out of memory is an error, not a panic: boots ARCH at a small MEM and runs
# commands that need more memory than there is. Each must answer `error:`
# (the trace rings, a big hackbench and schbench) or run (a small hackbench,
# spin), the kernel must not panic, and `features` / `sysctl -a` / `preempt`
# must read the same before and after.
#
#   scripts/test/small-mem-test.sh ARCH KERNEL_ELF   (env: MEM, SMP)
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init small-mem
[ $# -eq 2 ] || { echo "usage: $0 ARCH KERNEL_ELF" >&2; exit 2; }
arch=$1 kernel=$2
log=$(h_log small-mem "$arch")
export MEM=${MEM:-7M} SMP=${SMP:-4}
read -r -d '' script <<'CMDS'
features
sysctl -a
preempt
trace start
trace stop
hackbench -g 30
schbench -m 6 -t 40 -r 2
hackbench -g 1 -l 5 -f 2
spin -d 20 0
features
sysctl -a
preempt
poweroff
CMDS
h_qemu "$arch" kernel="$kernel" || exit 2
h_run "$log" 120 -- "${QEMU[@]}" <<<"$script"
h_status_ok "$arch" "$H_RC" && rc=0 || rc=$H_RC
SCRIPT="$script" PYTHONPATH=$H_LIB python3 - "$log" "$rc" "$arch" "$MEM" "$SMP" <<'PY'
import os, sys
from transcript import read, replies, panicked
log, rc, arch, mem, smp = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
text = read(log)
cmds = os.environ["SCRIPT"].split("\n")
fails = []
if panicked(text):
    fails.append("the kernel panicked")
order = replies(text)
def reply(i):
    return order[i][1] if i < len(order) and order[i][0] == cmds[i] else None
for i, c in enumerate(cmds[:-1]):
    if reply(i) is None:
        fails.append(f"no reply to '{c}'")
if not fails:
    trace = reply(3)
    if not (trace and (trace[0].startswith("trace: recording") or
                       trace[0].startswith("error: trace: not enough memory"))):
        fails.append(f"trace start: {trace!r}")
    for i in (5, 6):
        r = reply(i)
        if len(r) != 1 or not r[0].startswith("error: ") or "memory" not in r[0]:
            fails.append(f"'{cmds[i]}' should be refused for memory: {r!r}")
    if not any(l.startswith("Time: ") for l in reply(7)):
        fails.append(f"a small hackbench did not run: {reply(7)!r}")
    if not any(l.startswith("nice 0 runtime_ms") for l in reply(8)):
        fails.append(f"spin did not run: {reply(8)!r}")
    for a, b in ((0, 9), (1, 10), (2, 11)):
        if reply(a) != reply(b):
            fails.append(f"'{cmds[a]}' changed: {reply(a)!r} -> {reply(b)!r}")
if rc != 0:
    fails.append(f"QEMU exit status {rc} after poweroff (not the guest's pass)")
for f in fails:
    print(f"small-mem: FAIL: {arch} MEM={mem} SMP={smp}: {f}; see {log}", file=sys.stderr)
if fails:
    sys.exit(1)
t = reply(3)[0]
print(f"small-mem: PASS: {arch} MEM={mem} SMP={smp}: refused for memory: "
      f"{'trace rings, ' if t.startswith('error') else ''}hackbench -g 30, schbench; ran: small hackbench, spin; state unchanged")
PY
status=$?
h_record "small-mem $arch" "$((status == 0))" "$((status != 0))"
exit "$status"
