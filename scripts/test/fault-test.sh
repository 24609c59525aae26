#!/usr/bin/env bash
# Fault reports: boots each `fault=CASE` (one deliberate fault per boot, see
# kernel/src/fault.rs) on each given arch at SMP=2 and checks that the
# kernel's report has the case's key lines and that QEMU exits with the
# failing status (x86_64: isa-debug-exit status 35; aarch64: semihosting
# exit 1), not a timeout, a reset or a pass. Then a bad value (`fault=bogus`)
# must be warned about and change nothing: the shell runs `poweroff` and
# QEMU exits with the pass status.
#
#   scripts/test/fault-test.sh ARCH:KERNEL_ELF [ARCH:KERNEL_ELF ...]
#
# Environment: FAULT_TIMEOUT (seconds per boot, default 60: a boot takes
# about 1-3 s, more on a loaded host), FAULT_CASES (default: all).
# Logs: build/fault-ARCH-CASE.log.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init fault-test
if [ $# -lt 1 ]; then
    echo "usage: $0 ARCH:KERNEL_ELF [ARCH:KERNEL_ELF ...]" >&2
    exit 2
fi
limit=${FAULT_TIMEOUT:-60}
cases=${FAULT_CASES:-"recursion huge_frame idle_stack boot_stack exception_stack early_stack early_exception_stack wild_pointer undefined panic ap_panic bringup bringup_stack bogus"}

pass=0
fail=0
start=$EPOCHREALTIME
for spec in "$@"; do
    arch=${spec%%:*}
    kernel=${spec#*:}
    for case in $cases; do
        log=$(h_log fault "$arch" "$case")
        args="fault=$case"
        # The bad value must change nothing: the shell comes up and powers off.
        [ "$case" = bogus ] && args="fault=bogus run=poweroff"
        h_qemu "$arch" kernel="$kernel" append="$args" smp=2 || exit 2
        h_run "$log" "$limit" -- "${QEMU[@]}" </dev/null
        rc=$H_RC secs=$H_SECS
        if PYTHONPATH=$H_LIB python3 - "$log" "$rc" "$arch" "$case" <<'PY'
import re, sys
from transcript import read
log, rc, arch, case = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
text = read(log, drop_klog=False)
fails = []

def need(pattern, what):
    m = re.search(pattern, text, re.M)
    if not m:
        fails.append(f"no {what} (/{pattern}/)")
    return m

# QEMU's status when the guest reports success / failure.
pass_rc, fail_rc = (33, 35) if arch == "x86_64" else (0, 1)
if case == "bogus":
    if rc != pass_rc:
        fails.append(f"exit status {rc}, want {pass_rc} (poweroff)")
    need(r"cmdline: ignoring 'fault=bogus': fault must be", "warning naming the bad word")
    for bad in ("CPU EXCEPTION", "KERNEL PANIC", "fault: triggering"):
        if bad in text:
            fails.append(f"'{bad}' in the output")
else:
    # The failing exit, not a timeout (124/137) or a triple-fault reset.
    if rc != fail_rc:
        fails.append(f"exit status {rc}, want {fail_rc} (the guest's failure exit)")
    exc = r"\*\*\* CPU EXCEPTION.* on cpu (\d+) in thread '([^']*)'(?: \(tid (\d+)\))?$"
    regs = r"^\s+RAX 0x[0-9a-f]{16}" if arch == "x86_64" else r"^\s+x0  0x[0-9a-f]{16}"
    wild = (r"fault address \(CR2\) 0x00007fffdead0000" if arch == "x86_64"
            else r"FAR 0x00007fffdead0000")
    overflow = r"kernel stack overflow: the fault address is in the guard page below the stack of thread '([^']*)' \(tid (\d+)\)"
    early_overflow = r"kernel stack overflow: the fault address is in the guard page below the stack of the boot code \(cpu 0's boot stack\)$"
    expect = {
        # case: (cpu, thread, stack overflow?, extra pattern)
        "recursion": ("0", "fault", True, None),
        "huge_frame": ("0", "fault", True, None),
        "idle_stack": ("1", "idle/1", True, None),
        "boot_stack": ("0", "idle/0", True, None),
        # The thread's overflow, then (nested) the report's own stack's.
        "exception_stack": ("0", "fault", True,
                            r"^\*\*\* nested CPU exception.*\n\s+kernel stack overflow: the fault address is in the guard page below the stack of cpu 0's exception stack$"),
        # On the boot stack itself, before the heap and the threads exist
        # (thread 'boot', no tid): its own guard page.
        "early_stack": ("0", "boot", "early", None),
        # Then the report overflows the boot CPU's static exception stack.
        "early_exception_stack": ("0", "boot", "early",
                                  r"^\*\*\* nested CPU exception.*\n\s+kernel stack overflow: the fault address is in the guard page below the stack of cpu 0's exception stack$"),
        "wild_pointer": ("0", "fault", False, wild),
        "undefined": ("0", "fault", False,
                      r"CPU EXCEPTION 6 invalid opcode \(#UD\)" if arch == "x86_64"
                      else r"class: Unknown reason \(undefined instruction\) \(EC 0x00\)"),
        "bringup": ("1", "bring-up", False, wild),
        # Recursion in the arch bring-up code of CPU 1, on the stack it
        # started on: aarch64's guarded bootstrap stack; an x86_64 AP starts
        # on its idle thread's stack.
        "bringup_stack": ("1", "bring-up", "bringup", None),
    }
    if case in ("panic", "ap_panic"):
        cpu = "1" if case == "ap_panic" else "0"
        need(rf"^KERNEL PANIC on cpu {cpu} in thread 'fault' \(tid \d+\): panicked at ",
             f"panic line on cpu {cpu} in thread 'fault'")
        need(rf"fault={case} on cpu {cpu}$", "panic message")
    else:
        cpu, thread, ovf, extra = expect[case]
        m = need(exc, "exception line")
        if m:
            if (m.group(1), m.group(2)) != (cpu, thread):
                fails.append(f"exception on cpu {m.group(1)} in '{m.group(2)}', want cpu {cpu} in '{thread}'")
            if thread not in ("bring-up", "boot") and m.group(3) is None:
                fails.append("the exception line names no tid")
        need(regs, "register dump")
        # The faulting PC at least; return addresses where frame records
        # exist (not in the default build: no frame pointers).
        need(r"^\s+backtrace \(frame pointers\): 0x[0-9a-f]+", "backtrace line")
        o = re.search(overflow, text)
        if ovf == "early":
            need(early_overflow, "'kernel stack overflow' line naming the boot stack")
            if o:
                fails.append("the boot stack's overflow names a thread")
        elif ovf == "bringup":
            # aarch64: its bootstrap stack; x86_64: the idle stack it starts
            # on, before its idle thread is set up.
            tail = "" if arch == "aarch64" else r" \(its idle stack\)"
            need(r"kernel stack overflow: the fault address is in the guard page below the stack of cpu 1's bring-up code" + tail + "$",
                 "'kernel stack overflow' line naming cpu 1's bring-up code")
        elif ovf and not o:
            fails.append("no 'kernel stack overflow' line")
        elif ovf and m and (o.group(1), o.group(2)) != (m.group(2), m.group(3)):
            fails.append(f"overflow names '{o.group(1)}' tid {o.group(2)}, the exception '{m.group(2)}' tid {m.group(3)}")
        elif not ovf and o:
            fails.append("a 'kernel stack overflow' line for a fault that is none")
        if extra:
            need(extra, "case-specific line")
for f in fails:
    print(f"    {f}")
sys.exit(1 if fails else 0)
PY
        then
            printf 'fault-test: %-8s %-13s ok (%s s)\n' "$arch" "$case" "$secs"
            pass=$((pass + 1))
        else
            printf 'fault-test: %-8s %-13s FAILED (%s s, log %s)\n' "$arch" "$case" "$secs" "$log"
            fail=$((fail + 1))
        fi
    done
done
h_say "$pass passed, $fail failed in $(h_since "$start") s"
h_record "fault reports" "$pass" "$fail"
[ "$fail" -eq 0 ]
