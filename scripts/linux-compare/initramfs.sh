#!/usr/bin/env bash
# Builds the initramfs `make linux-compare` boots Linux with, from the packages
# fetch.sh extracted:
#
#   scripts/linux-compare/initramfs.sh X_DIR OUT_DIR [PLAN]
#
# - busybox (busybox-static) for the init and its tools;
# - rt-tests' hackbench and cyclictest, perf (linux-perf) when present;
# - lcbench and piperr (this directory, built here with gcc -static);
# - the shared libraries the dynamic binaries need: their DT_NEEDED entries
#   (readelf -d), resolved recursively in X_DIR's library directories, and
#   the dynamic loader; a library that cannot be found is an error;
# - /init (init.sh), /lc.sh (guest.sh: the in-guest A/B) and /plan.sh
#   (PLAN, the script the `ab` mode runs; empty without it).
#
# The architecture is the kernel's: an amd64 X_DIR gets x86_64 programs, an
# arm64 one aarch64 programs, built with Debian's cross compiler
# (gcc-aarch64-linux-gnu, installed here when missing).
#
# Writes OUT_DIR/initramfs.cpio.gz and OUT_DIR/vmlinuz; prints the kernel
# version. The kernel is the one X_DIR holds (Debian 14 keeps it in
# /usr/lib/modules/VERSION/vmlinuz, Debian 12 in /boot).
set -euo pipefail

[[ $# -ge 2 && $# -le 3 ]] || { echo "usage: $0 X_DIR OUT_DIR [PLAN]" >&2; exit 2; }
x=$(cd "$1" && pwd)
out=$(mkdir -p "$2" && cd "$2" && pwd)
plan=${3:-}
here=$(cd "$(dirname "$0")" && pwd)

need() { command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$2" >/dev/null; }; }
need cpio cpio
need readelf binutils

vmlinuz=$(ls "$x"/usr/lib/modules/*/vmlinuz "$x"/boot/vmlinuz-* 2>/dev/null | head -1 || true)
[[ -n $vmlinuz ]] || { echo "error: linux-compare: no kernel in $x" >&2; exit 1; }
if [[ $vmlinuz == */boot/* ]]; then
    version=${vmlinuz##*/vmlinuz-}
    config=$x/boot/config-$version
else
    version=$(basename "$(dirname "$vmlinuz")")
    config=$(dirname "$vmlinuz")/config
fi
# The GNU triplet and dynamic loader of the kernel's architecture.
case $version in
    *-arm64)
        triplet=aarch64-linux-gnu loader_name=ld-linux-aarch64.so.1 loader_dir=lib
        cc=aarch64-linux-gnu-gcc
        need "$cc" gcc-aarch64-linux-gnu
        [[ -f /usr/aarch64-linux-gnu/lib/libc.a ]] || { apt-get update -qq && apt-get install -y -qq --no-install-recommends libc6-dev-arm64-cross >/dev/null; }
        ;;
    *)
        triplet=x86_64-linux-gnu loader_name=ld-linux-x86-64.so.2 loader_dir=lib64
        cc=gcc
        need gcc gcc
        [[ -f /usr/lib/x86_64-linux-gnu/libc.a ]] || { apt-get update -qq && apt-get install -y -qq --no-install-recommends libc6-dev >/dev/null; }
        ;;
esac
wants=(CONFIG_HZ=250 CONFIG_DEBUG_FS=y CONFIG_SCHEDSTATS=y)
# amd64 chooses its preemption model at boot (preempt=full|lazy); Debian's
# arm64 build has no PREEMPT_DYNAMIC and runs the model it was built with,
# which the harness takes to be lazy (its uname -v says only PREEMPT).
[[ $triplet == x86_64-linux-gnu ]] && wants+=(CONFIG_PREEMPT_DYNAMIC=y)
[[ $triplet == aarch64-linux-gnu ]] && wants+=(CONFIG_PREEMPT_LAZY=y)
for want in "${wants[@]}"; do
    grep -q "^$want\$" "$config" || { echo "error: linux-compare: $version lacks $want" >&2; exit 1; }
done
cp "$vmlinuz" "$out/vmlinuz"

"$cc" -O2 -Wall -static -o "$out/piperr" "$here/piperr.c"
"$cc" -O2 -Wall -static -pthread -o "$out/lcbench" "$here/lcbench.c"

ir=$out/initramfs
rm -rf "$ir"
mkdir -p "$ir"/{bin,proc,sys,dev,tmp,lib64,"lib/$triplet"}
cp "$x/bin/busybox" "$ir/bin/busybox" 2>/dev/null || cp "$x/usr/bin/busybox" "$ir/bin/busybox"
# The applet links: listed here when this host can run the binary, else
# made by /init itself (`busybox --install`) from the /bin/sh link.
ln -sf busybox "$ir/bin/sh"
if apps=$("$ir/bin/busybox" --list 2>/dev/null); then
    for app in $apps; do
        [[ $app == busybox ]] || ln -sf busybox "$ir/bin/$app"
    done
fi
cp "$out/piperr" "$out/lcbench" "$ir/bin/"
bins=("$x/usr/bin/hackbench" "$x/usr/bin/cyclictest")
[[ -f $x/usr/bin/perf ]] && bins+=("$x/usr/bin/perf")
cp "${bins[@]}" "$ir/bin/"

# DT_NEEDED closure, resolved in the packages' library directories only (not
# this host's, which may be an older Debian).
libdirs=("$x/usr/lib/$triplet" "$x/lib/$triplet")
declare -A seen=()
queue=("${bins[@]}")
while ((${#queue[@]})); do
    f=${queue[0]}
    queue=("${queue[@]:1}")
    while read -r soname; do
        [[ -n $soname && -z ${seen[$soname]:-} ]] || continue
        seen[$soname]=1
        found=""
        for d in "${libdirs[@]}"; do
            [[ -e $d/$soname ]] && { found=$d/$soname; break; }
        done
        [[ -n $found ]] || { echo "error: linux-compare: ${f##*/} needs $soname, in no downloaded package" >&2; exit 1; }
        cp -L "$found" "$ir/lib/$triplet/"
        queue+=("$found")
    done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done
loader=$(ls "${libdirs[@]/%//$loader_name}" 2>/dev/null | head -1 || true)
[[ -n $loader ]] || { echo "error: linux-compare: no dynamic loader in the packages" >&2; exit 1; }
cp -L "$loader" "$ir/$loader_dir/$loader_name"
cp -L "$loader" "$ir/lib/$triplet/"

cp "$here/init.sh" "$ir/init"
cp "$here/guest.sh" "$ir/lc.sh"
if [[ -n $plan ]]; then cp "$plan" "$ir/plan.sh"; else : >"$ir/plan.sh"; fi
chmod +x "$ir/init"
# The same inputs give the same archive, byte for byte: fixed times, names
# in one order, no inode numbers (cpio --reproducible), no time in the gzip
# header. The guest unpacks it under -icount, so a different archive is a
# different boot (docs/results/linux/three-way.md, "Linux boots made reproducible").
find "$ir" -exec touch -h -d @0 {} +
(cd "$ir" && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible --owner=0:0 | gzip -6 -n) >"$out/initramfs.cpio.gz"
echo "$version"
