#!/usr/bin/env bash
# Where an in-kernel workload's instructions go, function by function, under
# QEMU -icount (where instructions are the guest's time): boots the kernel
# twice, running WORKLOAD with its count at N and at 2N, counts every
# translation block's executions with the tbcount plugin
# (scripts/tools/tbcount.c, built here with the host's C compiler), subtracts
# the two runs so that boot, setup and teardown cancel, and prints the
# instructions per unit of work by function (the kernel's symbols, `nm`).
# Deterministic under -icount: one boot pair is the whole sample.
#
#   scripts/tools/kprof.sh [ELF] [-- WORKLOAD]
#
#   WORKLOAD   a shell command with a `-l N` loop count (default
#              'perfpipe -x -l 1000'); the second boot runs it with 2N
#   ELF        the kernel (default: this tree's release kernel for ARCH, built)
#   ARCH=x86_64|aarch64 (aarch64: QEMU virt, GICv3, -cpu max, as ab.sh boots it)
#   CPUS=2 SEED=1 PREEMPT=full ICOUNT=2 TOP=40   boot options and rows shown
#   KPROF_OUT=DIR   keep the counts there (default: a temporary directory)
#
# Output: "instructions per loop" in total and per function, the largest
# first. Two kernels compared: run it on each and diff the lists.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/harness.sh
. "$here/../lib/harness.sh"
h_init kprof
root=$H_ROOT

elf=""
wl="perfpipe -x -l 1000"
while [[ $# -gt 0 ]]; do
    case $1 in
        --) shift; wl="$*"; break ;;
        -*) echo "usage: $0 [ELF] [-- WORKLOAD]" >&2; exit 2 ;;
        *) [[ -z $elf ]] || { echo "usage: $0 [ELF] [-- WORKLOAD]" >&2; exit 2; }; elf=$1; shift ;;
    esac
done
[[ $wl =~ (^|[[:space:]])-l[[:space:]]+([0-9]+)([[:space:]]|$) ]] ||
    { echo "error: kprof: the workload needs a '-l N' loop count, got '$wl'" >&2; exit 2; }
n=${BASH_REMATCH[2]}
[[ $n -ge 1 ]] || { echo "error: kprof: the loop count must be >= 1" >&2; exit 2; }
wl2=$(sed -E "s/(^|[[:space:]])-l[[:space:]]+$n([[:space:]]|\$)/\\1-l $((2 * n))\\2/" <<<"$wl")
arch=${ARCH:-x86_64}
case $arch in
    x86_64) qopts=() ;;
    aarch64) qopts=(gic=3 cpu=max) ;;
    *) echo "error: kprof: ARCH must be x86_64 or aarch64, got '$arch'" >&2; exit 2 ;;
esac
cpus=${CPUS:-2} seed=${SEED:-1} preempt=${PREEMPT:-full} icount=${ICOUNT:-2} top=${TOP:-40}
[[ $cpus =~ ^[1-8]$ ]] || { echo "error: kprof: CPUS must be 1..8, got '$cpus'" >&2; exit 2; }
[[ $icount =~ ^[0-9]$ ]] || { echo "error: kprof: ICOUNT must be a shift 0..9, got '$icount'" >&2; exit 2; }
[[ $top =~ ^[0-9]+$ ]] || { echo "error: kprof: TOP must be a count, got '$top'" >&2; exit 2; }
command -v cc >/dev/null || { echo "error: kprof: needs a C compiler (cc) for the plugin" >&2; exit 2; }
command -v nm >/dev/null || { echo "error: kprof: needs nm (binutils)" >&2; exit 2; }

if [[ -z $elf ]]; then
    make -s -C "$root" kernel ARCH="$arch" >/dev/null
    elf=${CARGO_TARGET_DIR:-$root/target}/$arch-unknown-none/release/kernel
fi
[[ -f $elf ]] || { echo "error: kprof: no such kernel: $elf" >&2; exit 2; }

out=${KPROF_OUT:-$(mktemp -d)}
mkdir -p "$out"
[[ -n ${KPROF_OUT:-} ]] || trap 'rm -rf "$out"' EXIT
cc -shared -fPIC -fvisibility=hidden -O2 -o "$out/tbcount.so" "$here/tbcount.c"

boot() { # WORKLOAD COUNTS_FILE
    h_qemu "$arch" kernel="$elf" append="seed=$seed preempt=$preempt run=$1; poweroff" \
        smp="$cpus" icount="$icount" "${qopts[@]}"
    local rc=0
    timeout -k 5 300 "${QEMU[@]}" -plugin "$out/tbcount.so,out=$2" </dev/null >"$2.log" 2>&1 || rc=$?
    h_status_ok "$arch" "$rc" || { echo "error: kprof: the boot running '$1' failed (rc $rc); log: $2.log" >&2; exit 1; }
    grep -q '^error' "$2.log" && { echo "error: kprof: the kernel refused '$1':" >&2; grep '^error' "$2.log" >&2; exit 1; }
    [[ -s $2 ]] || { echo "error: kprof: the plugin wrote no counts (QEMU without plugin support?)" >&2; exit 1; }
}
boot "$wl" "$out/a.tb"
boot "$wl2" "$out/b.tb"
nm -n --defined-only -C "$elf" | awk '$2 ~ /^[tTwW]$/' >"$out/syms"

python3 - "$out/a.tb" "$out/b.tb" "$out/syms" "$n" "$top" "$wl" <<'EOF'
import bisect, sys
a_path, b_path, syms_path, n, top, wl = sys.argv[1:7]
n, top = int(n), int(top)
addrs, names = [], []
for line in open(syms_path):
    parts = line.rstrip("\n").split(" ", 2)
    if len(parts) == 3:
        addrs.append(int(parts[0], 16))
        names.append(parts[2])

def name_of(va):
    i = bisect.bisect_right(addrs, va) - 1
    return names[i] if i >= 0 else f"?{va:x}"

def per_fn(path):
    out = {}
    for line in open(path):
        va, k, execs = line.split()
        fn = name_of(int(va, 16))
        out[fn] = out.get(fn, 0) + int(k) * int(execs)
    return out

a, b = per_fn(a_path), per_fn(b_path)
fns = set(a) | set(b)
diff = {f: (b.get(f, 0) - a.get(f, 0)) / n for f in fns}
total = sum(diff.values())
print(f"kprof: '{wl}': {total:.1f} guest instructions per loop (2N run minus N run, all CPUs)")
for f, v in sorted(diff.items(), key=lambda kv: -abs(kv[1]))[:top]:
    if abs(v) >= 0.05:
        print(f"{v:10.1f}  {f}")
EOF
