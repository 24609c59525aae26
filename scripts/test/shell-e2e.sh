#!/usr/bin/env bash
# End-to-end test of the `sched> ` debug shell on one architecture.
#
#   scripts/test/shell-e2e.sh ARCH KERNEL_ELF
#
# Sends a script of commands into the normal QEMU boot (h_qemu ARCH
# kernel=KERNEL_ELF, no kernel arguments: the kernel boots to the shell),
# all at once, with a time limit, keeps the transcript in
# build/shell-e2e-$ARCH-smp$SMP.log and checks every reply:
#   - NEXT_BUDDY flipped both ways through `features` and through
#     `sysctl kernel.sched_features=...` (the features line before/after: only
#     that flag changes, and it comes back);
#   - a tunable set and read back; refused tunables (unknown key, bad number,
#     out of range, huge number) give an `error:` naming the accepted range and
#     leave the value as it was;
#   - preempt modes switched (the parenthesised mode, and kernel.sched_preempt);
#   - `spin -d 400 0 5`: the shares follow the weights 1024:335 (75.3 / 24.7 %)
#     within +-8 points: at hz=250 a 400 ms run is 100 ticks, and EEVDF keeps
#     each thread within about one slice / tick of its fair share, so the
#     error from scheduling is ~1-2 points. The guest runs under
#     `-icount shift=3,sleep=off`, so its clock counts instructions: without
#     it, a busy host descheduling the vCPU thread shows up as runtime of
#     whichever thread was current (a 63.6% share seen at load average 10);
#   - bad input (unknown command, missing / extra arguments, out-of-range
#     numbers, a 10 000-character line, non-ASCII bytes) answered with one
#     `error:` line each, and features / sysctl -a / preempt unchanged after;
#   - `ps`, `sched_debug`, `stat`, `trace`, `schedstat` produce their lines
#     (`schedstat`: its domain lines well formed, nothing counted while
#     schedstats is off, and with it on, with SMP>1, balance passes
#     counted);
#   - `poweroff` ends QEMU with exit status 0, and nothing after stdin's EOF
#     (QEMU's stdio chardev keeps the guest running until poweroff).
#   - no input byte is lost or changed: the very first command is checked
#     byte for byte as the first thing echoed after boot (input arrives
#     before the kernel has set up its UART), and a 64 KiB paste of `#`
#     comment lines, sent in one go before `poweroff`, must come back
#     complete and in order.
#   - background jobs: `hackbench ... &` and `spin ... &` print
#     their job number and thread ids and return to the prompt; `jobs` lists
#     them; `nice`, `taskset` and `chrt` on a running spin thread show in
#     `ps`, `sched_debug` (weight 335) and `taskset -p`; `compare` is refused
#     while they run; `kill` of a hackbench receiver stops its whole job
#     (Killed, interrupted report) and `kill %2` the spin job; afterwards no
#     job thread is left in `ps`; a short job's Done report appears by itself
#     (at the idle prompt), another's through `wait`, each exactly once;
#     Ctrl-C (`@CTRLC@`, a lone 0x03 byte) ends a `wait` with the job still
#     running but kills the job under `fg`; bad job input (`&&`, `& foo`,
#     `ps &`, `kill %99`, `wait x`, ...) is refused.
#     The thread ids are taken from the transcript while QEMU runs: the
#     script waits at `@JOBS@` for both jobs' `[N] LEADER (threads ...)`
#     lines and at `@DONE@` for the short job's report (no timing bound: a
#     slow host only waits longer, up to the time limit).
# Commands are matched to replies through the echoed `sched> CMD` lines, so
# every reply must be complete before the next prompt.
#
# Environment: SHELL_E2E_TIMEOUT (seconds without output, default 180), SHELL_E2E_ICOUNT
# (default 3; 0: wall-clock guest time), and what h_qemu reads (SMP, MEM,
# ACCEL, ...).
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init shell-e2e
[ $# -eq 2 ] || { echo "usage: $0 ARCH KERNEL_ELF" >&2; exit 2; }
arch=$1 kernel=$2
command -v python3 >/dev/null || { echo "shell-e2e: needs python3" >&2; exit 2; }
# LOCKDEP=1: a `lockdep` kernel; any lock validator report fails the run.
tag=""
[ "${LOCKDEP:-0}" = 1 ] && tag=lockdep
log=$(h_log shell-e2e "$arch" "smp${SMP:-1}" "$tag")
limit=${SHELL_E2E_TIMEOUT:-180}

# The commands, one per line (the checker below reads the same list).
read -r -d '' COMMANDS <<'EOF'
features
features NEXT_BUDDY
features
features NO_NEXT_BUDDY
features
sysctl kernel.sched_features=NEXT_BUDDY
features
sysctl kernel.sched_features=NO_NEXT_BUDDY
sysctl kernel.sched_features
features BOGUS
features
sysctl -a
sysctl kernel.sched_base_slice_ns=3000000
sysctl kernel.sched_base_slice_ns
sysctl kernel.bogus=1
sysctl kernel.bogus
sysctl kernel.sched_base_slice_ns=abc
sysctl kernel.sched_base_slice_ns=5
sysctl kernel.sched_base_slice_ns=99999999999999999999999
sysctl kernel.sched_preempt=sometimes
sysctl kernel.sched_base_slice_ns
sysctl kernel.sched_base_slice_ns=@SLICE@
preempt
preempt lazy
preempt
preempt none
sysctl kernel.sched_preempt
preempt bogus
preempt
preempt full
preempt
@SPIN@
bogus
nice
nice 8 25
nice 8 0 0
spin -d 0 0
spin -d 100
chrt -f 100 8
kill 0
@LONG@
@NONASCII@
taskset -p 0 8
features
sysctl -a
preempt
ps
sched_debug
stat
trace start
spin -d 50 0 0
trace stop
trace dump
help
help spin
taskset -p 1 8
taskset -cp 8
spin -d 100 -c 9 0
taskset -p ffffffffffffffff 8
hackbench -g 1 -f 4 -l 1000000 &
spin -d 60000 0 0 &
@JOBS@
jobs
jobs -l
nice @SPINTID@ 5
taskset -p 1 @SPINTID@
chrt -b 0 @SPINTID@
ps
sched_debug
taskset -p @SPINTID@
compare -c '' -- perfpipe -l 10
kill @RECVTID@
jobs
kill %2
jobs
ps
kill %1
wait %1
fg
kill 8
perfpipe -l 2000 &
@DONE@
jobs
hackbench -g 1 -f 2 -l 10 &
wait
spin -d 60000 0 &
wait
@CTRLC@
jobs
fg
@CTRLC@
jobs
hackbench &&
& foo
ps &
hackbench -g 2& -l 5
kill %99
wait x
cpu offline 0
cpu offline x
cpu online 255
schedstat
schedstat x
sysctl kernel.sched_schedstats=1
spin -d 300 0 0 0
schedstat
sysctl kernel.sched_schedstats=0
@PASTE@
poweroff
EOF

long=$(head -c 10000 /dev/zero | tr '\0' 'x')
# The default base slice: 0.7 ms x (1 + log2(min(CPUs, 8))) (tunable_scaling=log).
cpus=${SMP:-1}
[ "$cpus" -gt 8 ] && cpus=8
factor=1
while [ "$cpus" -gt 1 ]; do cpus=$((cpus / 2)); factor=$((factor + 1)); done
slice=$((700000 * factor))
# With more than one CPU the spin threads must share CPU 0 to compete.
spin="spin -d 400 0 5"
[ "${SMP:-1}" -gt 1 ] && spin="spin -d 400 -c 0 0 5"
COMMANDS=${COMMANDS//@SLICE@/$slice}
COMMANDS=${COMMANDS//@SPIN@/$spin}
# 64 KiB of comment lines, 64 bytes each: `# paste NNNN ` and 50 characters
# that differ from line to line, so a lost, repeated or changed byte shows.
paste=$(python3 -c '
import string
a = string.ascii_letters + string.digits
for i in range(1024):
    print("# paste %04d " % i + "".join(a[(i * 7 + j * 13) % len(a)] for j in range(50)))
')
vars="$log.vars"
rm -f "$vars"
# Types the commands; waits (up to the time limit) at @JOBS@ and @DONE@.
type_commands() {
    local spin_tid="" recv_tid="" line
    while IFS= read -r line; do
        line=${line//@SPINTID@/$spin_tid}
        line=${line//@RECVTID@/$recv_tid}
        case $line in
            @JOBS@)
                # Both jobs started: take a spin thread (the first thread
                # its job spawned) and a hackbench receiver (the second:
                # the first is the run's parent thread, which spawns the
                # receivers first, as Linux's hackbench forks them).
                h_wait_for '^\[2\] [0-9]+ \(threads [0-9]+' || true
                recv_tid=$(tr -d '\r' <"$log" | sed -nE 's/^\[1\] [0-9]+ \(threads ([0-9]+).*/\1/p' | head -1)
                [[ -n $recv_tid ]] && recv_tid=$((recv_tid + 1))
                spin_tid=$(tr -d '\r' <"$log" | sed -nE 's/^\[2\] [0-9]+ \(threads ([0-9]+).*/\1/p' | head -1)
                printf 'SPIN=%s\nRECV=%s\n' "$spin_tid" "$recv_tid" >"$vars"
                ;;
            @DONE@) h_wait_for '^\[1\]  Done +perfpipe -l 2000 &' || true ;;
            @CTRLC@) h_send $'\003' ;;
            @PASTE@) h_send "$paste"$'\n' ;;
            @LONG@) h_send "$long"$'\n' ;;
            @NONASCII@) h_send $'features \303\251t\303\251\n' ;;
            *) h_send "$line"$'\n' ;;
        esac
    done <<<"$COMMANDS"
}

icount=${SHELL_E2E_ICOUNT:-3}
[ "$icount" = 0 ] && icount=""
h_qemu "$arch" kernel="$kernel" ${icount:+icount=$icount} || exit 2
h_say "$arch, $kernel (limit ${limit}s, log $log)"
h_start "$log" "$limit" -- "${QEMU[@]}"
type_commands
h_finish_shell shell-e2e "$arch" "$log"
rc=$H_SHELL_RC

COMMANDS="$COMMANDS" SLICE="$slice" PASTE="$paste" PYTHONPATH=$H_LIB python3 - "$log" "$rc" "$vars" <<'PY'
import os, re, sys
from transcript import read

log, rc, varfile = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# Kernel log lines out (transcript.KLOG: they land anywhere, even in the
# middle of an echoed command).
text = read(log)
jv = {}
if os.path.exists(varfile):
    jv = dict(l.split("=", 1) for l in open(varfile).read().split())
SPIN, RECV = jv.get("SPIN", ""), jv.get("RECV", "")
cmds = [c.replace("@SPINTID@", SPIN).replace("@RECVTID@", RECV)
        for c in os.environ["COMMANDS"].split("\n") if c not in ("@JOBS@", "@DONE@", "@CTRLC@")]
fails = []
if not SPIN or not RECV:
    fail_early = f"background jobs: no thread ids in the '&' replies (spin {SPIN!r}, receiver {RECV!r})"
else:
    fail_early = None

def fail(msg):
    fails.append(msg)

if fail_early:
    fail(fail_early)

# Not one input byte lost: the first prompt echoes the first command exactly
# (its bytes were queued before the kernel set up the UART) ...
first = text.split("sched> ")[1].split("\n", 1)[0] if "sched> " in text else ""
if first != cmds[0]:
    fail(f"first command echoed as {first!r}, sent {cmds[0]!r}: input lost at boot")
# ... and the 64 KiB paste comes back whole, in order.
paste = os.environ["PASTE"].split("\n")
got = [b.split("\n", 1)[0] for b in text.split("sched> ") if b.startswith("# paste ")]
if got != paste:
    bad = next((i for i, (a, b) in enumerate(zip(got, paste)) if a != b), min(len(got), len(paste)))
    fail(f"64 KiB paste: {len(got)} of {len(paste)} lines echoed; first difference at line {bad}: "
         f"{got[bad] if bad < len(got) else None!r} vs {paste[bad] if bad < len(paste) else None!r}")
cmds = [c for c in cmds if c != "@PASTE@"]

if "KERNEL PANIC" in text or "panicked" in text:
    fail("the kernel panicked")

# Split the transcript at the prompts: each block is "CMD-echo\nreply...".
blocks = text.split("sched> ")[1:]
replies = []  # (cmd, reply lines) in script order
pos = 0
for c in cmds:
    echo = {"@LONG@": "x" * 1024, "@NONASCII@": "features ??t??"}.get(c, c)
    # A background job's report that arrives while a command is being
    # typed ends the line ("sched> wai", the report) and the editor
    # redraws it ("sched> wait"): such a report belongs to that command.
    early = []
    while pos < len(blocks) and blocks[pos].split("\n", 1)[0] != echo:
        first, _, rest = blocks[pos].partition("\n")
        if first and echo.startswith(first):
            early += [l for l in rest.split("\n") if l]
        else:
            early = []
        pos += 1
    if pos == len(blocks):
        fail(f"no reply to '{c[:40]}' in the transcript")
        replies.append((c, []))
        continue
    lines = early + blocks[pos].split("\n")[1:]
    while lines and lines[-1] == "":
        lines.pop()
    replies.append((c, lines))
    pos += 1

def reply(i):
    return replies[i][1]

def one(i):
    r = reply(i)
    if len(r) != 1:
        fail(f"'{replies[i][0][:40]}': expected one line, got {r!r}")
        return ""
    return r[0]

def want_error(i, *parts):
    line = one(i)
    if not line.startswith("error: "):
        fail(f"'{replies[i][0][:40]}': expected an error line, got {line!r}")
    for p in parts:
        if p not in line:
            fail(f"'{replies[i][0][:40]}': error line lacks {p!r}: {line!r}")

def want(i, line):
    got = one(i)
    if got != line:
        fail(f"'{replies[i][0][:40]}': expected {line!r}, got {got!r}")

idx = {}
for i, c in enumerate(cmds):
    idx.setdefault(c, []).append(i)

# Every command that is not expected to fail must not print an error.
errors_expected = {
    "features BOGUS", "sysctl kernel.bogus=1", "sysctl kernel.bogus",
    "sysctl kernel.sched_base_slice_ns=abc", "sysctl kernel.sched_base_slice_ns=5",
    "sysctl kernel.sched_base_slice_ns=99999999999999999999999",
    "sysctl kernel.sched_preempt=sometimes", "preempt bogus", "bogus", "nice",
    "nice 8 25", "nice 8 0 0", "spin -d 0 0", "spin -d 100", "chrt -f 100 8",
    "kill 0", "@LONG@", "@NONASCII@", "taskset -p 0 8", "spin -d 100 -c 9 0",
    "compare -c '' -- perfpipe -l 10", "kill %1", "wait %1", "fg", "kill 8", "hackbench &&",
    "& foo", "ps &", "hackbench -g 2& -l 5", "kill %99", "wait x",
    "cpu offline 0", "cpu offline x", "cpu online 255", "schedstat x",
}
for i, (c, r) in enumerate(replies):
    if c not in errors_expected and any(l.startswith("error:") for l in r):
        fail(f"'{c}' printed an error: {r!r}")

# Features through `features` and through sysctl.
f0 = one(0)
if " NO_NEXT_BUDDY " not in f0:
    fail(f"NEXT_BUDDY should start disabled: {f0!r}")
f1 = f0.replace(" NO_NEXT_BUDDY ", " NEXT_BUDDY ")
want(1, f1)
want(2, f1)
want(3, f0)
want(4, f0)
want(5, "kernel.sched_features = " + f1)
want(6, f1)
want(7, "kernel.sched_features = " + f0)
want(8, "kernel.sched_features = " + f0)
want_error(9, "features: unknown feature 'BOGUS'")
want(10, f0)

# Tunables.
sysctl_a = reply(11)
if len(sysctl_a) < 7 or not all(" = " in l for l in sysctl_a):
    fail(f"sysctl -a: {sysctl_a!r}")
if "kernel.sched_features = " + f0 not in sysctl_a:
    fail("sysctl -a lacks the features line")
want(12, "kernel.sched_base_slice_ns = 3000000")
want(13, "kernel.sched_base_slice_ns = 3000000")
want_error(14, "unknown key", "kernel.bogus")
want_error(15, "unknown key", "kernel.bogus")
want_error(16, "[100000, 100000000]")
want_error(17, "[100000, 100000000]")
want_error(18, "[100000, 100000000]")
want_error(19, "none", "voluntary", "full", "lazy")
want(20, "kernel.sched_base_slice_ns = 3000000")
want(21, f"kernel.sched_base_slice_ns = {os.environ['SLICE']}")

# Preemption modes.
want(22, "none voluntary (full) lazy")
want(23, "none voluntary full (lazy)")
want(24, "none voluntary full (lazy)")
want(25, "(none) voluntary full lazy")
want(26, "kernel.sched_preempt = none")
want_error(27, "preempt")
want(28, "(none) voluntary full lazy")
want(29, "none voluntary (full) lazy")
want(30, "none voluntary (full) lazy")

# spin -d 400 0 5: 1024 / (1024 + 335) = 75.3 %.
spin = [l for l in reply(31) if l.startswith("nice ")]
shares = {}
for l in spin:
    m = re.match(r"nice (-?\d+) runtime_ms (\d+) share ([\d.]+)%", l)
    if m:
        shares[int(m.group(1))] = (int(m.group(2)), float(m.group(3)))
if set(shares) != {0, 5}:
    fail(f"spin: expected lines for nice 0 and 5, got {reply(31)!r}")
else:
    for n, expect in ((0, 75.3), (5, 24.7)):
        if abs(shares[n][1] - expect) > 8:
            fail(f"spin: nice {n} share {shares[n][1]}% not within 8 of {expect}%")
    # A sanity check that they ran for about the window: under TCG the host
    # deschedules vCPU threads, and that time counts as runtime of whoever
    # was current, so the sum strays from 400 ms by tens of ms either way.
    total = shares[0][0] + shares[5][0]
    if not 200 <= total <= 600:
        fail(f"spin: the two threads ran {total} ms in a 400 ms run")

# Bad input: one error line each.
want_error(32, "unknown command 'bogus'")
want_error(33, "nice", "missing")
want_error(34, "[-20, 19]")
want_error(35, "nice")
want_error(36, "spin", "[1, 60000]")
want_error(37, "spin", "missing SPEC")
want_error(38, "chrt")
want_error(39, "kill", "idle")
want_error(40, "line too long")
want_error(41, "non-ASCII")
want_error(42, "taskset")
# ... and nothing changed.
want(43, f0)
if reply(44) != sysctl_a:
    fail(f"sysctl -a changed after the bad input: {reply(44)!r} vs {sysctl_a!r}")
want(45, "none voluntary (full) lazy")

# Inspection.
ps = reply(46)
if not ps or not ps[0].lstrip().startswith("PID NAME"):
    fail(f"ps: no header: {ps[:1]!r}")
if not any(re.match(r"\s*\d+ shell\s+\d+ NORMAL\s+0 R ", l) for l in ps):
    fail(f"ps: no line for the running shell: {ps!r}")
sd = "\n".join(reply(47))
for key in ("cpu#0", ".clock", ".nr_running", ".load", ".avg_vruntime", ".curr", ".next_buddy",
            ".nr_switches", ".nr_preempt_tick", ".nr_preempt_wakeup", ".nr_migrations_in"):
    if key not in sd:
        fail(f"sched_debug lacks {key}")
if not re.search(r"^  >\s+\d+ shell .* eligible$", sd, re.M):
    fail("sched_debug: no '>' line for the running shell with its eligibility")
st = "\n".join(reply(48))
for key in ("uptime", "cpu0 busy", "ctxt", "intr"):
    if key not in st:
        fail(f"stat lacks {key}")
if not reply(49) or not reply(49)[0].startswith("trace: recording"):
    fail(f"trace start: {reply(49)!r}")
if not reply(51) or not reply(51)[0].startswith("trace: stopped"):
    fail(f"trace stop: {reply(51)!r}")
dump = reply(52)
if not dump or dump[0] != "# tracer: nop":
    fail(f"trace dump: no ftrace header: {dump[:2]!r}")
for l in dump:
    if not l.startswith("#") and not re.match(
        r"\s*\S+-\d+\s+\[\d{3}\]\s+\d+\.\d{6}: sched_(switch|wakeup|wakeup_new|migrate_task): ", l):
        fail(f"trace dump: not an ftrace line: {l!r}")
        break
# spin spawns a thread (wakeup_new) and switches to and from it.
for ev in ("sched_switch: prev_comm=", "sched_wakeup_new: comm=spin"):
    if not any(ev in l for l in dump):
        fail(f"trace dump: no '{ev}' event")
if not any(l.lstrip().startswith("spin") for l in reply(53)):
    fail("help lacks spin")
if not reply(54) or not reply(54)[0].startswith("usage: spin"):
    fail(f"help spin: {reply(54)[:1]!r}")

# Affinity (the shell is pid 8, the first spawned thread).
r = reply(55)
if len(r) != 2 or not r[1].startswith("pid 8's new affinity mask: 1"):
    fail(f"taskset -p 1 8: {r!r}")
want(56, "pid 8's current affinity list: 0")
want_error(57, "spin", "CPU 9 is not online")

# Background jobs; indices from 58 on (the shell's taskset).
J = {}
for i, c in enumerate(cmds):
    if i >= 58:
        J.setdefault(c, i)  # the first one
def jr(c):
    return reply(J[c])
hb_line = "hackbench -g 1 -f 4 -l 1000000 &"
spin_line = "spin -d 60000 0 0 &"
started = {}
for c, n in ((hb_line, 1), (spin_line, 2)):
    r = jr(c)
    m = re.fullmatch(rf"\[{n}\] (\d+) \(threads ([\d,-]+)\)", r[0] if len(r) == 1 else "")
    if not m:
        fail(f"'{c}': expected '[{n}] LEADER (threads IDS)', got {r!r}")
    else:
        started[n] = (m.group(1), m.group(2))
if started.get(2) and not started[2][1].startswith(SPIN):
    fail(f"spin job threads {started[2][1]} do not start at {SPIN}")
want_jobs = [f"[1]  Running  {hb_line}", f"[2]  Running  {spin_line}"]
if jr("jobs") != want_jobs:
    fail(f"jobs: {jr('jobs')!r}, want {want_jobs!r}")
jl = jr("jobs -l")
if len(jl) != 4 or not all(started.get(n) for n in (1, 2)) or \
        jl[0] != f"[1]  {started[1][0]:>5} Running  {hb_line}" or \
        jl[1].strip() != f"threads {started[1][1]}" or jl[3].strip() != f"threads {started[2][1]}":
    fail(f"jobs -l: {jl!r}")
want(J[f"nice {SPIN} 5"], f"{SPIN} (spin): old priority 0, new priority 5")
# Jobs inherit the shell's affinity, all CPUs again (taskset -p ff.. 8).
online = (1 << int(os.environ.get("SMP", "1"))) - 1
r = jr("taskset -p ffffffffffffffff 8")
if len(r) != 2 or r[1] != f"pid 8's new affinity mask: {online:x}":
    fail(f"taskset -p ffffffffffffffff 8: {r!r}")
r = jr(f"taskset -p 1 {SPIN}")
if r != [f"pid {SPIN}'s current affinity mask: {online:x}", f"pid {SPIN}'s new affinity mask: 1"]:
    fail(f"taskset -p 1 {SPIN}: {r!r}")
want(J[f"chrt -b 0 {SPIN}"], f"pid {SPIN}'s policy: SCHED_NORMAL/0 -> SCHED_BATCH/0")
# The running spin thread shows its new nice, policy and CPU (0, the mask).
row = [l for l in jr("ps") if re.match(rf"\s*{SPIN} spin ", l)]
if len(row) != 1 or not re.match(rf"\s*{SPIN} spin\s+0 BATCH\s+5 R ", row[0]):
    fail(f"ps after nice/taskset/chrt: spin row {row!r}")
# The WEIGHT column by the table's header (more columns may follow it).
sd = jr("sched_debug")
head = next((l.split() for l in sd if "PID" in l.split() and "WEIGHT" in l.split()), [])
ent = [l.replace(">", " ", 1).split() for l in sd if re.match(rf"\s*>?\s*{SPIN} spin ", l)]
w = head.index("WEIGHT") if "WEIGHT" in head else None
if not ent or w is None or len(ent[0]) <= w or ent[0][w] != "335":
    fail(f"sched_debug: spin {SPIN} should weigh 335 (nice 5): header {head!r}, {ent!r}")
want(J[f"taskset -p {SPIN}"], f"pid {SPIN}'s current affinity mask: 1")
want_error(J["compare -c '' -- perfpipe -l 10"], "compare", "2 background job(s) running")
# Killing a receiver stops the whole hackbench job; kill waits and reports.
r = jr(f"kill {RECV}")
if len(r) < 4 or r[0] != f"kill: {RECV} (hackbench-recv) belongs to job 1: stopping the whole job" \
        or r[1] != f"[1]  Killed   {hb_line}" or "hackbench: interrupted" not in r \
        or not any(l.startswith("Time: ") for l in r):
    fail(f"kill {RECV}: {r!r}")
jobs_after = [reply(i) for i, c in enumerate(cmds) if c == "jobs" and i > J[f"kill {RECV}"]]
if not jobs_after or jobs_after[0] != [f"[2]  Running  {spin_line}"]:
    fail(f"jobs after kill {RECV}: {jobs_after[:1]!r}")
r = jr("kill %2")
if len(r) < 4 or r[0] != f"[2]  Killed   {spin_line}" or r[1] != "spin: interrupted" \
        or not all(re.match(r"nice 0 runtime_ms \d+ share", l) for l in r[2:4]) \
        or not any(re.search(rf"\(pid {SPIN}, switches \d+; ended as SCHED_BATCH nice 5\)$", l)
                   for l in r[2:4]):
    fail(f"kill %2: {r!r}")
if len(jobs_after) < 2 or jobs_after[1] != []:
    fail(f"jobs after kill %2: {jobs_after[1:2]!r}")
# No job thread is left.
ps2 = reply(max(i for i, c in enumerate(cmds) if c == "ps"))
left = [l for l in ps2 if re.search(r" (job/\d|hackbench-\w+|spin)\s", l)]
if left:
    fail(f"ps after the kills: job threads left: {left!r}")
want_error(J["kill %1"], "kill: no such job %1")
want_error(J["wait %1"], "wait: no such job %1")
want_error(J["fg"], "fg: no current job")
want_error(J["kill 8"], "kill: 8 is the shell itself")
# perfpipe -l 2000 &: its report comes by itself (the script waited for it
# without typing), exactly once, before the next command.
pp = "perfpipe -l 2000 &"
a = text.find("sched> " + pp + "\n")
b = text.find("sched> jobs\n", a)
seg = text[a:b] if a >= 0 and b >= 0 else ""
if seg.count(f"[1]  Done     {pp}\n") != 1 or seg.count("# Executed 2000 pipe operations") != 1:
    fail(f"{pp}: no single Done report before the next command: {seg[-400:]!r}")
if jobs_after[2:3] != [[]]:
    fail(f"jobs after the Done report: {jobs_after[2:3]!r}")
# hackbench -g 1 -f 2 -l 10 &: Done once, at a prompt or through wait.
hb2 = "hackbench -g 1 -f 2 -l 10 &"
seg = "\n".join(jr(hb2) + jr("wait"))
if seg.count(f"[1]  Done     {hb2}") != 1 or seg.count("40 socket messages") != 1:
    fail(f"{hb2} / wait: {seg!r}")
# Ctrl-C ends `wait` (the job runs on) but kills the job under `fg`.
sp = "spin -d 60000 0 &"
r = jr(sp)
if len(r) != 1 or not re.fullmatch(r"\[1\] \d+ \(threads \d+\)", r[0]):
    fail(f"'{sp}': {r!r}")
waits = [i for i, c in enumerate(cmds) if c == "wait"]
fgs = [i for i, c in enumerate(cmds) if c == "fg"]
if len(waits) != 2 or reply(waits[1]) != []:
    fail(f"wait, Ctrl-C: {[reply(i) for i in waits[1:]]!r}")
if jobs_after[3:4] != [[f"[1]  Running  {sp}"]]:
    fail(f"jobs after wait + Ctrl-C: {jobs_after[3:4]!r}")
r = reply(fgs[1]) if len(fgs) == 2 else []
if r[:3] != [sp, f"[1]  Killed   {sp}", "spin: interrupted"] or len(r) != 4:
    fail(f"fg, Ctrl-C: {r!r}")
if jobs_after[4:5] != [[]]:
    fail(f"jobs after fg + Ctrl-C: {jobs_after[4:5]!r}")
want_error(J["hackbench &&"], "'&&' is not supported")
want_error(J["& foo"], "'&' must end the line")
want_error(J["ps &"], "ps: only workloads")
want_error(J["hackbench -g 2& -l 5"], "'&' must end the line")
want_error(J["kill %99"], "kill: %JOB must be in [1, 8]")
want_error(J["wait x"], "wait: expected %JOB")
# CPU hotplug: refused, nothing changed (the boot CPU stays; bad numbers).
want_error(J["cpu offline 0"], "cpu: cannot take cpu 0 offline: CPU 0 stays online")
want_error(J["cpu offline x"], "cpu: ", "'x'")
want_error(J["cpu online 255"], "cpu: cannot take cpu 255 online: no such CPU")
# schedstat: /proc/schedstat's domain lines (name, span, 8 lb_* fields for
# each of 3 idle types, 3 alb_* fields, ttwu_wake_remote, ttwu_move_affine,
# ours' ttwu_migrate). They count only with schedstats on, as Linux's: this
# boot leaves it off (Linux's default) and runs no `compare`, which turns
# it on for its runs (the one above is refused), so after the jobs above
# every field is 0; a bad argument is refused. Then, switched on, three
# spinning threads for 300 ms: with 2+ CPUs, the ticks' balance passes are
# counted (a busy CPU's periodic pass comes every 16 x its domain's weight
# in ms, 256 ms at 16 CPUs; at 4 CPUs or more no CPU runs two spinners, so
# newly idle CPUs skip the walk and only the periodic passes count).
def domain_lines(r):
    if len(r) < 3 or not r[0].startswith("schedstat:") or not r[1].startswith("fields:"):
        fail(f"schedstat: no header: {r[:2]!r}")
    if "cpu0" not in r:
        fail(f"schedstat: no cpu0 line: {r!r}")
    doms = [l.split() for l in r if l.startswith("domain")]
    if any(len(d) != 33 or not all(x.isdigit() for x in d[3:]) for d in doms):
        fail(f"schedstat: malformed domain line in {r!r}")
        return []
    if int(os.environ.get("SMP", "1")) > 1 and not doms:
        fail(f"schedstat: no domain line with SMP>1: {r!r}")
    return doms
r = jr("schedstat")
if any(int(x) for d in domain_lines(r) for x in d[3:]):
    fail(f"schedstat: counted with schedstats off: {r!r}")
want_error(J["schedstat x"], "schedstat: unexpected argument 'x'")
want(J["sysctl kernel.sched_schedstats=1"], "kernel.sched_schedstats = 1")
r = reply(idx["schedstat"][1])
doms = domain_lines(r)
if int(os.environ.get("SMP", "1")) > 1 and sum(int(x) for d in doms for x in (d[3], d[11], d[19])) == 0:
    fail(f"schedstat: no balance pass counted with schedstats on: {r!r}")
want(J["sysctl kernel.sched_schedstats=0"], "kernel.sched_schedstats = 0")

# poweroff: the last thing printed, and QEMU's status 0.
if rc != 0:
    fail(f"QEMU exit status {rc} after poweroff (want 0)")
if not text.rstrip().endswith("poweroff"):
    fail("output after poweroff")

events = sum(1 for l in dump if not l.startswith("#"))
if fails:
    for f in fails:
        print(f"shell-e2e: FAIL: {f}", file=sys.stderr)
    sys.exit(1)
print(f"shell-e2e: PASS: {len(cmds)} commands, a {sum(len(l) + 1 for l in paste)}-byte paste intact; spin shares "
      f"{shares[0][1]}% / {shares[5][1]}%; {events} trace events; background jobs (spin {SPIN}, receiver {RECV})")
PY
status=$?
if [ -n "$tag" ] && grep -aq "lockdep: BUG" "$log"; then
    h_err "FAIL: $arch: the lock validator reported: $(grep -a -m1 'lockdep: BUG' "$log" | tr -d '\r')"
    status=1
fi
[ "$status" -eq 0 ] || h_err "see $log"
h_record "shell-e2e $arch${tag:+ $tag}" "$((status == 0))" "$((status != 0))"
exit "$status"
