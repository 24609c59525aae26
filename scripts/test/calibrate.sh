#!/usr/bin/env bash
# Calibration of the simulator against the kernel (can its mechanism be
# trusted?): the same 4-CPU hackbench, with NEXT_BUDDY off and on, in the
# kernel under QEMU and in `sim` on its `small` machine (4 CPUs, one LLC).
# Times are not comparable (TCG vs a cost model); the mechanism is: the
# per-message ratios of context switches and of wakeups that asked to preempt
# must move in the same direction when NEXT_BUDDY is turned on.
#
#   scripts/test/calibrate.sh KERNEL_ELF_x86_64 [SIM_BIN]
#
# The kernel runs under `-icount shift=3,sleep=off` (instruction-counted
# time, so host load does not change what the guest sees), 4 CPUs, hackbench
# over unix sockets (its default), 4 groups x 20 fds x 50 loops = 80 000
# messages, once per configuration after a warm-up run; the counters are the
# sums of `sched_debug`'s per-CPU `.nr_switches` / `.nr_preempt_wakeup`
# between the dumps around each run. The simulator runs the same shape
# (`hackbench groups=4 loops=50 ipc=socket mode=thread`), 3 seeds each.
# Prints a table, keeps the transcript in build/calibrate.log, and fails when
# a direction disagrees.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init calibrate
if [ $# -lt 1 ]; then
    echo "usage: $0 KERNEL_ELF_x86_64 [SIM_BIN]" >&2
    exit 2
fi
kernel=$1
sim=${2:-$H_ROOT/${CARGO_TARGET_DIR:-target}/release/sim}
[ -x "$sim" ] || { echo "calibrate: no simulator binary at $sim (cargo build -p sim --release)" >&2; exit 2; }
log=$(h_log calibrate)
# Every failure below is recorded as this one test's.
trap 'h_record calibrate "$((status == 0))" "$((status != 0))"' EXIT
status=1
hb="hackbench -g 4 -l 50"
script="features NO_NEXT_BUDDY
$hb
sched_debug
$hb
sched_debug
features NEXT_BUDDY
sched_debug
$hb
sched_debug
poweroff"
h_qemu x86_64 kernel="$kernel" smp=4 icount=3 || exit 2
h_run "$log" 300 -- "${QEMU[@]}" <<<"$script"
h_status_ok x86_64 "$H_RC" || { h_err "FAIL: the kernel run did not end cleanly (QEMU status $H_RC); see $log"; exit 1; }

for cfg in NO_NEXT_BUDDY NEXT_BUDDY; do
    for seed in 1 2 3; do
        echo "== sim $cfg $seed"
        "$sim" run --machine small --config "$cfg" --seed "$seed" hackbench groups=4 loops=50 ipc=socket mode=thread
    done
done >>"$log" 2>&1 || { echo "calibrate: FAIL: the simulator run failed; see $log" >&2; exit 1; }

PYTHONPATH=$H_LIB python3 - "$log" <<'PY'
import re, sys
from transcript import read
text = read(sys.argv[1])
fails = []
# Kernel: sched_debug dumps, summed over CPUs.
dumps = []
for block in text.split("sched> ")[1:]:
    cmd = block.split("\n", 1)[0]
    if cmd == "sched_debug":
        sw = sum(int(x) for x in re.findall(r"^\s+\.nr_switches\s+:\s+(\d+)", block, re.M))
        wp = sum(int(x) for x in re.findall(r"^\s+\.nr_preempt_wakeup\s+:\s+(\d+)", block, re.M))
        dumps.append((sw, wp))
msgs = [int(m) for m in re.findall(r"^(\d+) socket messages", text, re.M)]
if len(dumps) != 4 or len(msgs) != 3:
    print(f"calibrate: FAIL: kernel transcript has {len(dumps)} dumps and {len(msgs)} hackbench results (want 4 and 3)", file=sys.stderr)
    sys.exit(1)
# dumps[0] after the warm-up, [1] after the NO_NEXT_BUDDY run, [2] before and
# [3] after the NEXT_BUDDY run.
kern = {
    "off": [(dumps[1][i] - dumps[0][i]) / msgs[1] for i in (0, 1)],
    "on": [(dumps[3][i] - dumps[2][i]) / msgs[2] for i in (0, 1)],
}
# Simulator: the mean over seeds of each configuration.
sim = {"off": [], "on": []}
for cfg, key in (("NO_NEXT_BUDDY", "off"), ("NEXT_BUDDY", "on")):
    runs = [b for b in text.split("== sim ")[1:] if b.startswith(cfg + " ")]
    vals = []
    for b in runs:
        sw = re.search(r"switches (\d+)", b)
        wp = re.search(r"wakeup preempts (\d+)", b)
        n = 4 * 20 * 20 * 50
        if not (sw and wp):
            fails.append(f"sim {cfg}: no counters in its output")
            continue
        vals.append((int(sw.group(1)) / n, int(wp.group(1)) / n))
    if not vals:
        print(f"calibrate: FAIL: no simulator runs for {cfg}", file=sys.stderr)
        sys.exit(1)
    sim[key] = [sum(v[i] for v in vals) / len(vals) for i in (0, 1)]
print("calibrate: 4-CPU hackbench (sockets, 4 groups x 20 fds x 50 loops), per message:")
print(f"  {'':28} {'NEXT_BUDDY off':>15} {'on':>10} {'change':>9}")
for i, name in enumerate(("context switches", "wakeup preemptions")):
    for src, d in (("kernel (QEMU -icount)", kern), ("sim (small, 3 seeds)", sim)):
        off, on = d["off"][i], d["on"][i]
        ch = (on - off) / off * 100 if off else float("inf")
        print(f"  {name[:18]:18} {src[:21]:21} {off:10.4f} {on:10.4f} {ch:+8.1f}%")
    dk = kern["on"][i] - kern["off"][i]
    ds = sim["on"][i] - sim["off"][i]
    if (dk > 0) != (ds > 0) or dk == 0 or ds == 0:
        fails.append(f"{name}: the kernel moves {dk:+.4f} per message, the simulator {ds:+.4f}")
for f in fails:
    print(f"calibrate: FAIL: {f}", file=sys.stderr)
if fails:
    sys.exit(1)
print("calibrate: PASS: both counters move the same way in the kernel and in the simulator")
PY
status=$?
exit "$status"
