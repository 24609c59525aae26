#!/usr/bin/env bash
# make linux-compare: latency of our kernel against stock Debian Linux on the
# same emulated machine (issue #14 item 5). A tool target, not in `make test`.
#
#   scripts/linux-compare.sh KERNEL_ELF
#
#   SMP=2          CPUs of both machines (the cross-CPU pair needs 2)
#   REPS=3         repetitions of each measurement within a boot
#   MODES="icount tcg"   icount: reproducible (-icount shift=2,sleep=off);
#                  tcg: ordinary multi-threaded TCG, wall-clock time
#   OUT=build/linux-compare   cache of the Debian packages, the initramfs, logs
#   REPORT_ONLY=1  no boots: the tables from the logs of the last run
#
# Linux: Debian 12's linux-image-amd64 (6.1, HZ=250, PREEMPT_DYNAMIC, booted
# with preempt=full), busybox-static for the init, rt-tests' cyclictest with
# the shared libraries it needs, and piperr (scripts/linux-compare/piperr.c,
# built here with gcc -static): N request/reply round trips over two pipes
# between two processes pinned to two CPUs. Both kernels boot through
# scripts/qemu-x86_64.sh (same machine, CPU model, SMP, memory and flags),
# Linux with `-initrd` and `console=ttyS0 preempt=full`; always TCG
# (ACCEL=tcg: -icount needs it, and the wall-clock mode should match).
#
# Ours boots with `preempt=full` (its default, as its hz=250 is) and seed=1.
# The work, REPS times per boot, on both:
#   cyclictest -t1 -i500 -l1000 -p50     (ours: cyclictest -t 1 -i 500 -l 1000 -p 50)
#   pipe round trip, both ends on CPU 0  (ours: perfpipe --same)
#   pipe round trip, CPU 0 <-> CPU 1     (ours: perfpipe --cross; Linux: not
#                                         under -icount, see maxcpus=1 below)
# Prints a table per mode: mean +- stddev over the repetitions, ours / Linux.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: $0 KERNEL_ELF" >&2
    exit 2
fi
elf=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
SMP=${SMP:-2}
REPS=${REPS:-3}
MODES=${MODES:-icount tcg}
OUT=${OUT:-$root/build/linux-compare}
LOOPS_PIPE=${LOOPS_PIPE:-2000}
BOOT_TIMEOUT=${BOOT_TIMEOUT:-900}
[[ $SMP =~ ^[2-8]$ ]] || { echo "error: linux-compare: SMP must be 2..8, got '$SMP'" >&2; exit 2; }
[[ $REPS =~ ^[1-9][0-9]*$ ]] || { echo "error: linux-compare: REPS must be a positive integer, got '$REPS'" >&2; exit 2; }
for m in $MODES; do
    [[ $m == icount || $m == tcg ]] || { echo "error: linux-compare: unknown mode '$m' (icount, tcg)" >&2; exit 2; }
done
mkdir -p "$OUT/debs" "$OUT/logs"

# --- Linux: packages (cached), initramfs ----------------------------------
need() { command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$2" >/dev/null; }; }
need cpio cpio
need gcc gcc
cd "$OUT/debs"
if ! ls linux-image-6.1.*-amd64_*.deb >/dev/null 2>&1; then
    apt-get update -qq
    img=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    [[ -n $img ]] || { echo "error: linux-compare: linux-image-amd64 names no kernel package" >&2; exit 1; }
    # apt's sandbox user may not write here; as root the download still works.
    apt-get download "$img" busybox-static rt-tests libnuma1 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
fi
ls linux-image-6.1.*-amd64_*.deb busybox-static_*.deb rt-tests_*.deb libnuma1_*.deb >/dev/null
cd "$OUT"
rm -rf x initramfs
mkdir -p x
for d in debs/*.deb; do dpkg-deb -x "$d" x; done
vmlinuz=$(ls x/boot/vmlinuz-6.1.*-amd64 | head -1)
version=${vmlinuz##*/vmlinuz-}
grep -q '^CONFIG_HZ=250$' "x/boot/config-$version" && grep -q '^CONFIG_PREEMPT_DYNAMIC=y$' "x/boot/config-$version" ||
    { echo "error: linux-compare: $version is not HZ=250 with PREEMPT_DYNAMIC" >&2; exit 1; }
cp "$vmlinuz" vmlinuz
gcc -O2 -static -o piperr "$here/linux-compare/piperr.c"

ir=initramfs
mkdir -p $ir/bin $ir/proc $ir/sys $ir/dev $ir/tmp
cp x/bin/busybox $ir/bin/busybox
for app in sh mount mkdir echo sleep reboot cat seq grep; do ln -s busybox "$ir/bin/$app"; done
cp x/usr/bin/cyclictest piperr $ir/bin/
# cyclictest's shared libraries: this host's (Debian 12, as the packages),
# libnuma from its package; all in one directory the init names.
mkdir -p $ir/lib/x86_64-linux-gnu $ir/lib64
LD_LIBRARY_PATH=x/usr/lib/x86_64-linux-gnu ldd x/usr/bin/cyclictest | awk '$2 == "=>" && $3 ~ /\// {print $3}' |
    while read -r lib; do cp -L "$lib" $ir/lib/x86_64-linux-gnu/; done
cp -L /lib64/ld-linux-x86-64.so.2 $ir/lib64/
cat >$ir/init <<INIT
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu
echo "linux-compare: \$(cat /proc/version)"
echo "linux-compare: preempt \$(cat /sys/kernel/debug/sched/preempt 2>/dev/null || grep -o 'preempt=[a-z]*' /proc/cmdline)"
for r in \$(seq $REPS); do
    cyclictest -t1 -i500 -l1000 -p50 -q
    piperr $LOOPS_PIPE 0 0
    piperr $LOOPS_PIPE 0 1
done
echo "linux-compare: done"
reboot -f
INIT
chmod +x $ir/init
(cd $ir && find . | cpio -o -H newc --quiet | gzip -9) >initramfs.cpio.gz

# --- boots ----------------------------------------------------------------
ours_script=""
for ((r = 1; r <= REPS; r++)); do
    ours_script+="cyclictest -t 1 -i 500 -l 1000 -p 50; perfpipe -s -l $LOOPS_PIPE; perfpipe -x -l $LOOPS_PIPE; "
done
ours_script+="poweroff"

boot() { # mode kernel log [qemu args...] -- cmdline
    local mode=$1 kernel=$2 log=$3
    shift 3
    local extra=()
    while [[ $1 != -- ]]; do extra+=("$1"); shift; done
    shift
    [[ $mode == icount ]] && extra+=(-icount shift=2,sleep=off)
    local t0=$SECONDS
    SMP=$SMP ACCEL=tcg QEMU_EXTRA="${extra[*]}" timeout -k 5 "$BOOT_TIMEOUT" \
        "$here/qemu-x86_64.sh" "$kernel" "$@" </dev/null >"$log" 2>&1 || true
    cut -d' ' -f1-3 /proc/loadavg >"$log.load"
    echo "linux-compare: $mode: $(basename "$log" .log) booted and ran in $((SECONDS - t0)) s of host time"
}

# mean and stddev (n-1) of the numbers on stdin, as "mean sd n".
stats() { awk 'NF {s += $1; q += $1 * $1; n++} END {if (n == 0) {print "- - 0"; exit} m = s / n; v = n > 1 ? (q - n * m * m) / (n - 1) : 0; if (v < 0) v = 0; printf "%.1f %.1f %d\n", m, sqrt(v), n}'; }

# Figures from one log: cyc_avg cyc_max pipe_same pipe_cross (one value per line, per rep).
cyc() { tr -d '\r' <"$1" | grep -E '^T: *0 ' | sed -E "s/.*Avg: *([0-9]+) +Max: *([0-9]+).*/\\$2/"; }
linux_pipe() { tr -d '\r' <"$1" | grep -E "^round trip .*cpu 0 <-> cpu $2\\)" | awk '{print $3}'; }
ours_pipe() { tr -d '\r' <"$1" | awk -v want="--$2" '/^     round trip / {v = $3} /^placement:/ && index($0, want) {print v}'; }

report() { # mode
    local mode=$1 L=$OUT/logs/linux-$1.log O=$OUT/logs/ours-$1.log
    local cond="SMP=$SMP, $( [[ $mode == icount ]] && echo 'reproducible: -icount shift=2,sleep=off' || echo 'multi-threaded TCG, wall clock')"
    echo
    echo "== $mode ($cond; mean +- stddev over $REPS repetitions in one boot) =="
    printf '%-34s %18s %18s %8s\n' metric ours linux ratio
    row() { # name ours-values linux-values
        read -r om os on <<<"$(stats <<<"$2")"
        read -r lm ls ln <<<"$(stats <<<"$3")"
        local ratio=-
        [[ $on -gt 0 && $ln -gt 0 ]] && ratio=$(awk -v a="$om" -v b="$lm" 'BEGIN {if (b > 0) printf "%.2f", a / b; else printf "-"}')
        printf '%-34s %10s +- %-5s %10s +- %-5s %8s\n' "$1" "$om" "$os" "$lm" "$ls" "$ratio"
    }
    row "cyclictest avg latency (us)" "$(cyc "$O" 1)" "$(cyc "$L" 1)"
    row "cyclictest max latency (us)" "$(cyc "$O" 2)" "$(cyc "$L" 2)"
    row "pipe round trip, same CPU (ns)" "$(ours_pipe "$O" same)" "$(linux_pipe "$L" 0)"
    row "pipe round trip, cross CPU (ns)" "$(ours_pipe "$O" cross)" "$(linux_pipe "$L" 1)"
    echo "ours, placements (last runs):"
    tr -d '\r' <"$O" | grep '^placement: ' | tail -2 | sed 's/^/  /'
    [[ $mode == tcg ]] && echo "host load average when the boots ended: linux $(cat "$L.load") / ours $(cat "$O.load") (2 host cores)"
    echo "linux: $(tr -d '\r' <"$L" | grep -m1 '^linux-compare: Linux' | cut -c 16-70)"
}

for mode in $MODES; do
    [[ ${REPORT_ONLY:-0} == 1 ]] && break
    # Under -icount (QEMU 7.2, with or without sleep=off, also with
    # tsc=reliable) Linux 6.1 never brings its second CPU up: the AP spins in
    # wait_for_master_cpu while the boot CPU keeps switching tasks. So in
    # reproducible mode Linux runs on one of the machine's CPUs (maxcpus=1)
    # and has no cross-CPU figure.
    one=""
    [[ $mode == icount ]] && one=maxcpus=1
    boot "$mode" "$OUT/vmlinuz" "$OUT/logs/linux-$mode.log" -initrd "$OUT/initramfs.cpio.gz" -- \
        console=ttyS0 preempt=full quiet $one
    boot "$mode" "$elf" "$OUT/logs/ours-$mode.log" -- "seed=1 preempt=full run=$ours_script"
done
for mode in $MODES; do report "$mode"; done | tee "$OUT/table.txt"
