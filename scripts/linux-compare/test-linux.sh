#!/usr/bin/env bash
# make test-linux: a short smoke run proving the linux-compare harness still
# boots the current Debian Linux (sid, 7.x) under reproducible time and flips
# a scheduler feature through debugfs.
#
#   scripts/linux-compare/test-linux.sh
#
#   ARCH=x86_64 SMP=4 OUT=build/linux-compare LINUX_SUITE=sid LINUX_DETERMINISTIC=1
#   (as linux-compare.sh; the boot takes determinism.sh's flags as its do)
#
# One boot (-icount shift=2,sleep=off) with lc.mode=smoke (guest.sh's
# lc_smoke): x86_64 is Debian's amd64 Linux on scripts/qemu-x86_64.sh's
# machine, booted preempt=full; aarch64 is Debian's arm64 Linux on
# scripts/boot/qemu.sh's QEMU virt, which runs the lazy model it was built
# with (no PREEMPT_DYNAMIC, so no sched/preempt file to switch: the guest
# checks the file is absent and uname -v says PREEMPT; initramfs.sh has
# checked the package's config has CONFIG_PREEMPT_LAZY=y).
# Checks, each a pass or a failure:
# - Linux reached its init and printed a version of the suite's series;
# - every CPU came online (SMP of SMP);
# - /sys/kernel/debug/sched/features exists (debugfs mounted);
# - the guest's own checks: NO_NEXT_BUDDY at boot, NEXT_BUDDY set and read
#   back, an unknown feature refused with the line unchanged, NO_NEXT_BUDDY
#   back, preempt=lazy set and read back (aarch64: the built-in model), a
#   tiny hackbench that prints its
#   time, and a nice 0 vs 5 spinner pair on one CPU within 5 points of the
#   ideal 75.35% share, and task groups (cgroup v2 mounted, the cpu
#   controller enabled, groups A and B at cpu.weight 100, 1 spinner in A and
#   10 in B on one CPU for 400 ms) with A's share within 5 points of 50%;
# - Linux finished and powered off.
# Prints "N passed, N failed"; fails if any check failed.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
ARCH=${ARCH:-x86_64}
SMP=${SMP:-4}
OUT=${OUT:-$root/build/linux-compare}
LINUX_SUITE=${LINUX_SUITE:-sid}
LINUX_DETERMINISTIC=${LINUX_DETERMINISTIC:-1}
case $ARCH in
    x86_64) darch=amd64 console=ttyS0 preempt=full qemu=("$root/scripts/qemu-x86_64.sh") ;;
    aarch64) darch=arm64 console=ttyAMA0 preempt=lazy qemu=("$root/scripts/boot/qemu.sh" aarch64) ;;
    *) echo "error: test-linux: ARCH must be x86_64 or aarch64, got '$ARCH'" >&2; exit 2 ;;
esac
[[ $SMP =~ ^[1-8]$ ]] || { echo "error: test-linux: SMP must be 1..8, got '$SMP'" >&2; exit 2; }
[[ $LINUX_DETERMINISTIC == 0 || $LINUX_DETERMINISTIC == 1 ]] ||
    { echo "error: test-linux: LINUX_DETERMINISTIC must be 0 or 1, got '$LINUX_DETERMINISTIC'" >&2; exit 2; }
# shellcheck source=determinism.sh
. "$here/determinism.sh"
lc_det_args "$LINUX_DETERMINISTIC" "$ARCH" 1

x=$(LINUX_SUITE=$LINUX_SUITE LINUX_ARCH=$darch "$here/fetch.sh" "$OUT" | tail -1) || { echo "error: test-linux: fetch failed" >&2; exit 1; }
ldir=$OUT/$LINUX_SUITE-smoke
[[ $ARCH == aarch64 ]] && ldir+=-arm64
version=$("$here/initramfs.sh" "$x" "$ldir") || { echo "error: test-linux: initramfs failed" >&2; exit 1; }
log=$OUT/logs/test-linux-$ARCH.log
mkdir -p "$OUT/logs"
t0=$SECONDS
SMP=$SMP ACCEL=tcg CPU=$LC_DET_CPU QEMU_EXTRA="-icount shift=2,sleep=off -initrd $ldir/initramfs.cpio.gz ${LC_DET_QEMU[*]}" \
    timeout -k 5 900 "${qemu[@]}" "$ldir/vmlinuz" "console=$console" quiet "preempt=$preempt" lc.mode=smoke lc.seed=1 \
    "${LC_DET_WORDS[@]}" \
    </dev/null >"$log" 2>&1
text=$(tr -d '\r' <"$log")

pass=0 fail=0
check() { # NAME OK DETAIL
    if [[ $2 == 0 ]]; then
        pass=$((pass + 1)); echo "test-linux: ok   $1 ($3)"
    else
        fail=$((fail + 1)); echo "test-linux: FAIL $1 ($3)"
    fi
}
series='7.'
[[ $LINUX_SUITE == bookworm ]] && series='6.1.'
line=$(grep -m1 '^lc: Linux ' <<<"$text")
[[ $line == "lc: Linux $series"* ]]
check linux-init $? "${line:-no init line; see $log}"
cpus=$(sed -n 's/^lc: cpus online .* nproc \([0-9]*\)$/\1/p' <<<"$text")
[[ $cpus == "$SMP" ]]
check all-cpus-online $? "${cpus:-?} of $SMP"
feat=$(grep -m1 '^lc: features ' <<<"$text")
[[ $feat == *PLACE_LAG* && $feat == *NEXT_BUDDY* ]]
check debugfs-features $? "$(cut -c1-60 <<<"${feat:-none}")"
n=0
while IFS= read -r l; do
    n=$((n + 1))
    name=${l#lc: check }
    name=${name%% *}
    [[ $l == *" ok: "* ]]
    check "$name" $? "${l#lc: check $name }"
done < <(grep '^lc: check ' <<<"$text")
[[ $n == 8 ]]
check guest-checks-ran $? "$n of 8"
grep -q '^lc: done' <<<"$text"
check finished $? "in $((SECONDS - t0)) s of host time"
echo "$pass passed, $fail failed"
[[ $fail == 0 ]]
