#!/usr/bin/env bash
# The x86_64 clock calibrates the same on a busy host: boots the kernel N
# times (default 20) while busy loops keep every host core loaded
# (scripts/tools/stress-host.sh: one per core), waits in each boot for the refined
# calibration's line (`clock: TSC refined against HPET over ...`, about
# 0.5 s after boot), then sends `poweroff`. Fails if a boot printed no
# refined line, or if two refined TSC figures, or two final LAPIC timer
# figures, are more than 1% apart.
#
# It also reports the spread of the initial (PIT-window) TSC figures of the
# same boots, for comparison: with busy loops on every host core (nested
# virtualisation, TCG) the guest's TSC (the host's) and its PIT (QEMU's
# clock) disagree by 2-6x for tens of ms at a time, and some boots' PIT
# windows agree on 4-10 GHz for a ~2596 MHz TSC. The refined rate is the TSC
# against the HPET over >= 500 ms, where the two clocks agree again.
#
#   scripts/test/clock-test.sh KERNEL_ELF [BOOTS]
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init clock-test
if [ $# -lt 1 ]; then
    echo "usage: $0 KERNEL_ELF [BOOTS]" >&2
    exit 2
fi
kernel=$1
boots=${2:-20}
log=$(h_log clock-test)
: >"$log"
# The load: scripts/tools/stress-host.sh (one busy loop per host core).
load=$(nproc)
"$H_SCRIPTS/tools/stress-host.sh" 0 2>/dev/null &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null' EXIT
start=$(date +%s)
h_qemu x86_64 kernel="$kernel" || exit 2
for i in $(seq "$boots"); do
    # `poweroff` goes in once the refined line (or a line saying there is
    # none) came out. The 60 s limit ends a boot that never prints it.
    boot_log=$(h_log clock-test boot "$i")
    h_start "$boot_log" 60 -- "${QEMU[@]}"
    h_wait_for 'clock: ' && h_send $'poweroff\n'
    h_finish
    tr -d '\r' <"$boot_log" | grep -aE '^x86_64: TSC|clock: ' | sed "s/^/boot $i: /" >>"$log"
done
kill "$stress" 2>/dev/null
wait "$stress" 2>/dev/null
secs=$(($(date +%s) - start))
python3 - "$log" "$boots" "$load" "$secs" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().splitlines()
boots, load, secs = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
initial = [float(m.group(1)) for l in lines if (m := re.search(r"x86_64: TSC (\d+\.\d+) MHz", l))]
refined, lapic, interval, corrected = [], [], [], 0
for l in lines:
    m = re.search(r"clock: TSC refined against HPET over (\d+) ms: (\d+\.\d+) MHz \(initial [\d.]+ MHz, (\w+)\).*LAPIC timer (\d+) kHz", l)
    if m:
        interval.append(int(m.group(1)))
        refined.append(float(m.group(2)))
        corrected += m.group(3) == "corrected"
        lapic.append(int(m.group(4)))
if len(refined) != boots or len(initial) != boots:
    print(f"clock-test: FAIL: {len(refined)} of {boots} boots printed a refined clock line "
          f"({len(initial)} the initial one); see {sys.argv[1]}", file=sys.stderr)
    sys.exit(1)
def spread(v):
    return (max(v) - min(v)) / min(v) * 100
bad = [(n, spread(v)) for n, v in (("TSC", refined), ("LAPIC timer", lapic)) if spread(v) > 1.0]
summary = (f"{boots} boots with {load} host busy loops in {secs} s: refined TSC "
           f"{min(refined):.3f}..{max(refined):.3f} MHz ({spread(refined):.4f}%, over "
           f"{min(interval)}..{max(interval)} ms, {corrected} corrected), LAPIC timer "
           f"{min(lapic)}..{max(lapic)} kHz ({spread(lapic):.3f}%); initial PIT TSC "
           f"{min(initial):.3f}..{max(initial):.3f} MHz ({spread(initial):.2f}%)")
if bad:
    print(f"clock-test: FAIL: {summary}", file=sys.stderr)
    sys.exit(1)
print(f"clock-test: PASS: {summary}")
PY
status=$?
h_record clock-test "$((status == 0))" "$((status != 0))"
exit "$status"
