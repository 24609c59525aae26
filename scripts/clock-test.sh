#!/usr/bin/env bash
# The x86_64 clock calibrates the same on a busy host: boots the kernel N
# times (default 20) straight to `poweroff` while busy loops keep every host
# core loaded (scripts/stress-host.sh: one per core), reads the TSC and LAPIC timer rates each boot
# printed, and fails if two TSC figures, or two LAPIC figures, are more than
# 1% apart (a single 25 ms PIT window used to read 1993-5095 MHz for a
# ~1995 MHz TSC in 9 of 26 boots under load).
#
# Known limit (measured here, nested virtualisation under TCG): when the host
# is overloaded, the guest's TSC (the host's TSC) and its PIT (QEMU's clock)
# disagree by 2-6x for tens of ms at a time; no PIT-window method can tell
# which one is right, so this test fails then. Not part of `make test`.
#
#   scripts/clock-test.sh KERNEL_ELF [BOOTS]
set -uo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 KERNEL_ELF [BOOTS]" >&2
    exit 2
fi
kernel=$1
boots=${2:-20}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/../build"
log="$here/../build/clock-test.log"
: >"$log"
# The load: scripts/stress-host.sh (one busy loop per host core).
load=$(nproc)
"$here/stress-host.sh" 0 2>/dev/null &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null' EXIT
for i in $(seq "$boots"); do
    printf 'poweroff\n' | timeout -k 5 60 "$here/qemu-x86_64.sh" "$kernel" 2>&1 | grep -a '^x86_64: TSC' >>"$log"
done
kill "$stress" 2>/dev/null
wait "$stress" 2>/dev/null
python3 - "$log" "$boots" "$load" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
boots, load = int(sys.argv[2]), int(sys.argv[3])
tsc = [float(m.group(1)) for l in lines if (m := re.search(r"TSC (\d+\.\d+) MHz", l))]
lapic = [int(m.group(1)) for l in lines if (m := re.search(r"timer (\d+) kHz", l))]
how = sorted({m.group(1) for l in lines if (m := re.search(r"MHz \(([A-Za-z0-9 /_x]+?)[,)]", l))})
if len(tsc) != boots or len(lapic) != boots:
    print(f"clock-test: FAIL: {len(tsc)} of {boots} boots printed their clock rates", file=sys.stderr)
    sys.exit(1)
def spread(v):
    return (max(v) - min(v)) / min(v) * 100
bad = [(n, spread(v)) for n, v in (("TSC", tsc), ("LAPIC timer", lapic)) if spread(v) > 1.0]
summary = (f"{boots} boots with {load} host busy loops: TSC {min(tsc):.3f}..{max(tsc):.3f} MHz "
           f"({spread(tsc):.4f}%), LAPIC timer {min(lapic)}..{max(lapic)} kHz ({spread(lapic):.3f}%), "
           f"method {', '.join(how)}")
if bad:
    print(f"clock-test: FAIL: {summary}", file=sys.stderr)
    sys.exit(1)
print(f"clock-test: PASS: {summary}")
PY
