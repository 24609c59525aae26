#!/usr/bin/env bash
# QEMU-side evidence for the aarch64 "halted vCPU with a reschedule IPI"
# stall (docs/notes/aarch64-icount-hang.md): boots the ping-pong ktest
# repeated in one boot with QEMU's GICv3 trace events on, and while the
# guest's stall watchdog reports no progress, samples what QEMU itself says
# about each vCPU.
#
#   scripts/tools/gic-wfi-trace.sh KERNEL_ELF [ROUNDS]     (ROUNDS: 10)
#
# Writes, under OUT (default build/gic-wfi-trace):
#   serial.log   the guest's console
#   qemu.log     QEMU's trace (log backend, -D, -msg timestamp=on) of
#                the SGI path: the sender's ICC_SGI1R write
#                (gicv3_icc_generate_sgi), the redistributor's pending bit
#                (gicv3_redist_send_sgi), the CPU interface's best pending
#                interrupt and IRQ line (gicv3_cpuif_update,
#                gicv3_cpuif_set_irqs), the target's acknowledge and EOI
#                (gicv3_icc_iar1_read, gicv3_icc_eoir_write)
#   monitor.txt  at the first "no progress" line of the guest and again
#                every SAMPLE_SECS (3 samples): HMP `info cpus` and each
#                vCPU's registers (PC, PSTATE), plus each vCPU thread's
#                host state (/proc/PID/task/TID: state, wchan, utime), which
#                shows whether QEMU keeps that vCPU asleep
# and prints the last trace lines of the stalled CPU.
#
# Environment: QEMU_AARCH64 (the emulator; default the system's),
# SMP (4), GIC (3), CPU (max), OUT, TRACE_EVENTS (space-separated trace
# patterns, replacing the list above), SAMPLE_SECS (2), LIMIT (seconds for
# the whole boot, 900). One QEMU at a time: nothing else is started.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init gic-wfi-trace

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
    echo "usage: $0 KERNEL_ELF [ROUNDS]" >&2
    exit 2
fi
kernel=$1
rounds=${2:-10}
out=${OUT:-$H_BUILD/gic-wfi-trace}
limit=${LIMIT:-900}
sample_secs=${SAMPLE_SECS:-2}
events=${TRACE_EVENTS:-gicv3_icc_generate_sgi gicv3_redist_send_sgi gicv3_cpuif_update gicv3_cpuif_set_irqs gicv3_icc_iar1_read gicv3_icc_eoir_write}
export SMP=${SMP:-4} GIC=${GIC:-3} CPU=${CPU:-max}
mkdir -p "$out"
rm -f "$out/serial.log" "$out/qemu.log" "$out/monitor.txt" "$out/mon.sock"

extra="-D $out/qemu.log -msg timestamp=on"
for e in $events; do
    extra+=" -trace enable=$e"
done
QEMU_EXTRA="$extra${QEMU_EXTRA:+ $QEMU_EXTRA}" h_qemu aarch64 kernel="$kernel" \
    append="ktest=smp_pingpong_no_lost_wakeups ktest_repeat=$rounds fail_cpu_start=2" \
    monitor="$out/mon.sock" || exit 2
h_say "$("${QEMU[0]}" --version | head -1), SMP=$SMP GIC=$GIC, $rounds rounds, out $out"
h_say "${QEMU[*]}"

timeout -k 5 "$limit" "${QEMU[@]}" </dev/null >"$out/serial.log" 2>&1 &
qpid=$!

# HMP command through the monitor socket; prints the reply.
hmp() {
    python3 - "$out/mon.sock" "$1" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(2.0)
def drain():
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
            if buf.endswith(b"(qemu) "):
                break
    except socket.timeout:
        pass
    return buf
drain()
s.sendall(sys.argv[2].encode() + b"\n")
reply = drain().decode(errors="replace")
# The monitor echoes the command; drop the echo and the prompt.
print("\n".join(l for l in reply.replace("\r", "").splitlines()
                if l.strip() and not l.startswith("(qemu)") and sys.argv[2] not in l))
EOF
}

# The QEMU process itself (timeout's child).
emulator_pid() { pgrep -P "$qpid" | head -1; }

sample() {
    local n=$1 pid tid
    {
        echo "=== sample $n at $(date -u +%T.%N) (serial line $(wc -l <"$out/serial.log"), trace line $(wc -l <"$out/qemu.log"))"
        hmp "info cpus"
        pid=$(emulator_pid)
        for tid in $(hmp "info cpus" | sed -n 's/.*thread_id=\([0-9]*\).*/\1/p'); do
            [ -n "$pid" ] && [ -r "/proc/$pid/task/$tid/stat" ] || continue
            # stat fields after the name: 3 state, 14 utime, 15 stime (ticks).
            echo "host thread $tid: $(sed 's/^.*) //' "/proc/$pid/task/$tid/stat" | awk '{print "state " $1 ", utime " $12 ", stime " $13}'), wchan $(cat "/proc/$pid/task/$tid/wchan" 2>/dev/null)"
        done
        hmp "info registers -a" | grep -E '^CPU#|^ *PC=|PSTATE='
    } >>"$out/monitor.txt" 2>&1
}

sampled=0
while kill -0 "$qpid" 2>/dev/null; do
    if [ "$sampled" = 0 ] && grep -aq 'no progress for' "$out/serial.log" 2>/dev/null; then
        for n in 1 2 3; do
            sample "$n"
            sleep "$sample_secs"
        done
        sampled=1
    fi
    sleep 0.5
done
wait "$qpid"
rc=$?
h_say "QEMU exit status $rc; $(grep -a -c '^test .* ok' "$out/serial.log") rounds ok, $(grep -a -c 'FAILED' "$out/serial.log") FAILED lines"
grep -a '^stall: cpu' "$out/serial.log" | head -3
if [ -s "$out/monitor.txt" ]; then
    h_say "monitor samples ($out/monitor.txt):"
    cat "$out/monitor.txt"
fi
exit 0
