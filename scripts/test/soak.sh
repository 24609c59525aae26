#!/usr/bin/env bash
# The SMP soak (`soak` shell command) on one arch: boots ARCH at SMP=4 under
# multi-threaded TCG (not -icount: aarch64 at SMP>1 hangs under QEMU 7.2's
# icount), pipes a script into the shell and checks the replies:
#   - `soak -t SOAK_THREADS -s SOAK_SECS` ends with `violations 0` (no
#     VIOLATION line, no `error:`), and its CPU time line is there;
#   - a second soak stopped at once by Ctrl-C reports `(interrupted)` with
#     `violations 0` (every worker exited, the checks still ran);
#   - `soak -t 4000` asks for more stacks than MEM holds: one `error:` line
#     about memory, nothing started;
#   - `features`, `preempt` and `sysctl -a` read the same before and after
#     (the soak puts back what it flips);
#   - the kernel did not panic and QEMU exited 0 after `poweroff`;
#   - with FAIL_ALLOC=PERCENT,SEED: the boot's bad `fail_alloc=bogus` is
#     warned about and ignored, a bad `sysctl debug.fail_alloc` value is
#     refused, then the same soak runs again with allocations failing at
#     random (`sysctl debug.fail_alloc=$FAIL_ALLOC`): `violations 0` again
#     (every failed spawn retried, heap (within 1 KiB) and live threads back where they
#     were, no panic), with at least one allocation failed on purpose;
#   - with LOCKDEP=1 (a `lockdep` kernel): no lock validator report, and
#     its figures are printed.
# Prints the figures.
#
#   scripts/test/soak.sh ARCH KERNEL_ELF
#   env: SOAK_SECS (default 60), SOAK_THREADS (default 1000), SOAK_SEED
#   (default: the kernel takes one from the clock and prints it), SMP
#   (default 4), MEM (default 128M: 1000 workers' 32 KiB stacks are ~33 MiB,
#   plus the 8 MiB the workloads leave to the kernel; aarch64's heap is
#   about half of MEM), FAIL_ALLOC, LOCKDEP.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init soak
[ $# -eq 2 ] || { echo "usage: $0 ARCH KERNEL_ELF" >&2; exit 2; }
arch=$1 kernel=$2
tag=""
[ "${LOCKDEP:-0}" = 1 ] && tag=lockdep
log=$(h_log soak "$arch" "$tag")
secs=${SOAK_SECS:-60}
threads=${SOAK_THREADS:-1000}
seed=${SOAK_SEED:+ -r $SOAK_SEED}
export SMP=${SMP:-4} MEM=${MEM:-128M} ACCEL=tcg
soak="soak -t $threads -s $secs$seed"
# The Ctrl-C (\003) follows the second soak's line: that soak reads it at
# its first poll, after its workers are spawned.
fail_alloc=${FAIL_ALLOC:-}
# Workloads (and `trace start`) run under failing allocations after the soak: each must run or
# answer one `error:` line saying it had no memory (could not spawn, or
# for trace, no memory for its rings).
export FAIL_WORKLOADS="trace start
trace stop
hackbench -g 4 -l 20
schbench -m 2 -t 8 -r 1
pgbench -c 8 -t 20
perfpipe -l 200
cyclictest -t 4 -l 100"
failing=""
if [ -n "$fail_alloc" ]; then
    failing="ps
sysctl debug.fail_alloc=101,$fail_alloc
sysctl debug.fail_alloc=$fail_alloc
$soak
$FAIL_WORKLOADS
sysctl debug.fail_alloc=off
ps
"
fi
script="features
preempt
sysctl -a
$soak
${failing}features
preempt
sysctl -a
soak -t 200 -s 600
"$'\003'"soak -t 4000 -s 1
poweroff"
# Boot, the run, the exit phase's progress bound (10 s) and a slow host.
limit=$((secs * (1 + (${#fail_alloc} > 0)) + 240))
# Under FAIL_ALLOC the boot also gets a bad fail_alloc= (warned about and
# ignored: the first soak runs without failures).
h_qemu "$arch" kernel="$kernel" ${fail_alloc:+append=fail_alloc=bogus} || exit 2
h_run "$log" "$limit" -- "${QEMU[@]}" <<<"$script"
h_status_ok "$arch" "$H_RC" && rc=0 || rc=$H_RC
SOAK="$soak" FAIL_ALLOC="$fail_alloc" LOCKDEP="${LOCKDEP:-0}" PYTHONPATH=$H_LIB python3 - "$log" "$rc" "$arch" "$SMP" "$H_SECS" <<'PY'
import os, re, sys
import transcript
log, rc, arch, smp, took = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
soak = os.environ["SOAK"]
text = transcript.read(log)
fails = []
if transcript.panicked(text):
    fails.append("the kernel panicked")
replies = [(c.replace("^C", "").strip(), r) for c, r in transcript.replies(text)]
def reply(cmd, nth=0):
    got = [r for c, r in replies if c == cmd]
    return got[nth] if len(got) > nth else None
def final(lines):
    return next((l for l in lines if l.startswith("soak: threads ")), None)
def check_soak(lines, what):
    if lines is None:
        fails.append(f"no reply to '{soak}' ({what})")
        return
    for l in lines:
        if "VIOLATION" in l or l.startswith("error:"):
            fails.append(f"{what}: {l}")
    f = final(lines)
    if f is None or not f.endswith(" violations 0"):
        fails.append(f"{what}: no 'violations 0' report: {f!r}")
    if not any(l.startswith("soak: cpu time: ") for l in lines):
        fails.append(f"{what}: no cpu time line")
main = reply(soak)
check_soak(main, "the soak")
fail_alloc = os.environ["FAIL_ALLOC"]
failing = None
if fail_alloc:
    bad = reply("sysctl debug.fail_alloc=101," + fail_alloc)
    if bad is None or len(bad) != 1 or not bad[0].startswith("error: sysctl: fail_alloc: PERCENT out of range"):
        fails.append(f"a bad debug.fail_alloc value should be refused: {bad!r}")
    on = reply("sysctl debug.fail_alloc=" + fail_alloc)
    if on != [f"debug.fail_alloc = {fail_alloc}"]:
        fails.append(f"'sysctl debug.fail_alloc={fail_alloc}' -> {on!r}")
    failing = reply(soak, 1)
    check_soak(failing, "the soak under fail_alloc")
    fa = next((l for l in failing or [] if l.startswith("soak: fail_alloc ")), "")
    m = re.match(r"soak: fail_alloc \S+: (\d+) of (\d+) allocations failed on purpose", fa)
    if not m or int(m.group(1)) == 0:
        fails.append(f"no allocation failed on purpose under fail_alloc: {fa!r}")
    for cmd in os.environ["FAIL_WORKLOADS"].split("\n"):
        r = reply(cmd)
        if r is None:
            fails.append(f"no reply to '{cmd}' under fail_alloc")
        elif any(l.startswith("error:") for l in r) and not (
                len([l for l in r if l.startswith("error:")]) == 1
                and r[-1].startswith("error: ")
                and ("cannot spawn: NoMemory" in r[-1] or "not enough memory" in r[-1])):
            fails.append(f"'{cmd}' under fail_alloc: {r!r}")
    raw = transcript.read(log, drop_klog=False)
    if "ignoring 'fail_alloc=bogus': fail_alloc must be PERCENT,SEED" not in raw:
        fails.append("the bad boot argument fail_alloc=bogus was not warned about")
    if reply("sysctl debug.fail_alloc=off") != ["debug.fail_alloc = off"]:
        fails.append("'sysctl debug.fail_alloc=off' did not switch it off")
    ps0, ps1 = reply("ps", 0), reply("ps", 1)
    if ps0 is None or ps1 is None or len(ps0) != len(ps1):
        fails.append(f"threads lost or left behind by the workloads under fail_alloc: ps {ps0!r} -> {ps1!r}")
if "lockdep: BUG" in text:
    fails.append("the lock validator reported: " + next(l for l in text.splitlines() if "lockdep: BUG" in l))
if os.environ["LOCKDEP"] == "1" and "lockdep: lock validator on" not in transcript.read(log, drop_klog=False):
    fails.append("LOCKDEP=1 but the kernel has no lock validator")
stop = reply("soak -t 200 -s 600")
if stop is None:
    fails.append("no reply to the soak stopped by Ctrl-C")
else:
    f = final(stop)
    if f is None or not f.endswith(" violations 0 (interrupted)"):
        fails.append(f"the soak stopped by Ctrl-C: {f!r}")
big = reply("soak -t 4000 -s 1")
if big is None or len(big) != 1 or not big[0].startswith("error: soak: ") or "memory" not in big[0]:
    fails.append(f"'soak -t 4000' should be refused for memory: {big!r}")
for cmd in ("features", "preempt", "sysctl -a"):
    a, b = reply(cmd, 0), reply(cmd, 1)
    if a is None or a != b:
        fails.append(f"'{cmd}' changed across the soak: {a!r} -> {b!r}")
if rc == 124 or rc == 137:
    fails.append("timed out (hang?)")
elif rc != 0:
    fails.append(f"QEMU exit status {rc} after poweroff")
for f in fails:
    print(f"soak: FAIL: {arch} SMP={smp}: {f}; see {log}", file=sys.stderr)
if fails:
    sys.exit(1)
head = next(l for l in main if l.startswith("soak: seed "))
cpu = next(l for l in main if l.startswith("soak: cpu time: "))
print(f"soak: PASS: {arch} SMP={smp} ({took} s in all)\n  {head}\n  {cpu}\n  {final(main)}")
for l in main:
    if l.startswith("soak: lockdep: "):
        print(f"  {l}")
if failing:
    for l in failing:
        if l.startswith(("soak: fail_alloc ", "soak: threads ")):
            print(f"  {l}")
PY
status=$?
h_record "soak $arch${tag:+ $tag}" "$((status == 0))" "$((status != 0))"
exit "$status"
