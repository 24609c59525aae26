#!/usr/bin/env bash
# Builds the machine's own QEMU (x86_64 system emulator) from Debian's
# source with scripts/tools/qemu-turns.patch: a QEMU that counts, under
# -icount's round-robin TCG, how each vCPU turn ended (a timer deadline, a
# kick, a halt, a `pause`) and how long it ran, and that can leave out the
# kick QEMU gives the running vCPU when the guest programs a timer that
# becomes the earliest deadline (softmmu/cpu-timers.c qemu_timer_notify_cb).
# It is the measurement behind docs/results/linux/lazy-rows.md, section
# (10): which part of QEMU's machine makes the lazy rows.
#
#   scripts/tools/qemu-turns.sh [OUT_DIR]      (default build/qemu-turns)
#
# Prints, on its last line, a wrapper OUT_DIR/qemu-system-x86_64 that runs
# the built binary with the installed firmware (-L /usr/share/qemu). Use it
# as the harness's QEMU:
#
#   QEMU_X86_64=OUT_DIR/qemu-system-x86_64 QEMU_TSTAT=turns.txt \
#     SMP=4 ACCEL=tcg ICOUNT=2 scripts/boot/qemu.sh x86_64 ELF 'run=...; poweroff'
#   QEMU_X86_64=... QEMU_SOFTKICK=1 make linux-compare ...   # Linux too
#
# Its environment (read by the patched QEMU):
#   QEMU_TSTAT=FILE  at exit, write the turn counts to FILE: a line
#                    "kicks K in-turn KT zero Z pauses P hlts H mwaits M
#                    lapic-fires L" (timer writes that notified the running
#                    vCPU, those inside a turn, turns given a zero budget,
#                    `pause`s, `hlt`s and `mwait`s executed, LAPIC timer
#                    expiries), then one line
#                    per way a turn ended: "WHY turns N ins I hist" and the
#                    turns' lengths below 20 us, 100 us, 1 ms, 4 ms, 10 ms,
#                    longer (I instructions in all; x 2^shift ns); and
#                    each time the guest writes 0xa0..0xaf to port 0x80
#                    (`printf '\240' | dd of=/dev/port bs=1 seek=128` in a
#                    Linux guest) the same counts, after a line "snap TAG",
#                    appended to FILE.snap: a run between two snapshots
#   QEMU_TSTAT_TEXT=LO-HI  (hex) also count the kicks of timer writes by
#                    their callers: the first three words on the guest's
#                    stack at the write that point into [LO, HI) (its text)
# scripts/tools/qemu-turns-diff.py prints a run from two counts or two
# snapshots, and the callers by name from `nm` or /proc/kallsyms.
#   QEMU_SOFTKICK=1  such a write cuts the running vCPU's budget to the new
#                    deadline instead of ending its turn (timers stay on time)
#   QEMU_NOKICK=1    such a write does nothing (the timer fires late, at the
#                    end of the budget the turn already had)
#   QEMU_NOZERO=1    a vCPU whose budget comes out 0 (a deadline just passed)
#                    gets one again once the expired timers have run
# Without any of them the patched QEMU runs the guest as the unpatched one
# does (the counts are taken outside the guest's time).
#
# The source comes through a private apt configuration (deb-src lines of
# the machine's own suite and its security suite, the archive's address read
# from the machine's apt sources: scripts/lib/apt.sh), at the version of the
# installed qemu-system-x86. Build tools are installed with apt when
# missing. Cached: a second run with the binary present builds nothing.
# About 5 minutes of build on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build/qemu-turns}
mkdir -p "$out"
out=$(cd "$out" && pwd)
wrapper=$out/qemu-system-x86_64
bin=$out/src/b/qemu-system-x86_64
if [[ -x $bin && -x $wrapper ]]; then
    echo "$wrapper"
    exit 0
fi
ver=$(dpkg-query -W -f='${source:Version}' qemu-system-x86 2>/dev/null) ||
    { echo "error: qemu-turns: qemu-system-x86 is not installed (make ensure-qemu)" >&2; exit 1; }
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[[ -n $suite ]] || { echo "error: qemu-turns: no VERSION_CODENAME in /etc/os-release" >&2; exit 1; }

# shellcheck source=../lib/apt.sh
. "$root/scripts/lib/apt.sh"
apt_private "$out/apt" "$suite" amd64 deb-src

need=()
for p in dpkg-dev ninja-build meson libglib2.0-dev libpixman-1-dev pkg-config flex bison \
    libfdt-dev zlib1g-dev python3-setuptools gcc; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || need+=("$p")
done
if [[ ${#need[@]} -gt 0 ]]; then
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    echo "qemu-turns: installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}" >&2
fi

cd "$out"
if [[ ! -d src ]]; then
    apt-get "${APT_OPTS[@]}" update -q >&2
    apt-get "${APT_OPTS[@]}" source --download-only "qemu=$ver" >&2
    dpkg-source -x qemu_*.dsc src >&2
    (cd src && patch -p1 -F0 <"$root/scripts/tools/qemu-turns.patch" >&2)
fi
mkdir -p src/b
(cd src/b && [[ -f build.ninja ]] ||
    ../configure --target-list=x86_64-softmmu --without-default-features --disable-docs \
        --disable-werror --enable-tcg >&2)
ninja -C src/b qemu-system-x86_64 >&2
cat >"$wrapper" <<EOF
#!/bin/sh
# The counting QEMU of scripts/tools/qemu-turns.sh, with the installed firmware.
exec "$bin" -L /usr/share/qemu -L /usr/share/seabios "\$@"
EOF
chmod +x "$wrapper"
echo "$wrapper"
