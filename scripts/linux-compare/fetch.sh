#!/usr/bin/env bash
# Downloads the Debian packages `make linux-compare` boots and runs, through a
# private apt configuration, and extracts them. Cached: a second run with the
# same packages already present downloads nothing (not even the indexes).
#
#   scripts/linux-compare/fetch.sh OUT_DIR
#
#   LINUX_SUITE=sid    sid: the current Debian Linux (7.x, linux-image-7.*-ARCH);
#                      bookworm: Debian 12's 6.1 (kept as an option)
#   LINUX_ARCH=amd64   Debian's architecture: amd64, or arm64 (for QEMU virt)
#   PERF=1             also linux-perf and the libraries it needs (0: without)
#
# The private configuration lives under OUT_DIR/apt-SUITE/: a sources.list of
# its own (suite LINUX_SUITE, component main), its own lists, cache and an
# empty dpkg status (scripts/lib/apt.sh). The machine's apt set-up is not
# changed, and the archive's address is read from it at run time, so no host
# name is written here.
#
# Prints, on its last line, the directory holding the extracted packages
# (OUT_DIR/x-SUITE, OUT_DIR/x-SUITE-arm64 for arm64); OUT_DIR/debs-SUITE[-arm64]/
# keeps the .deb files.
set -euo pipefail

[[ $# -eq 1 ]] || { echo "usage: $0 OUT_DIR" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
suite=${LINUX_SUITE:-sid}
perf=${PERF:-1}
darch=${LINUX_ARCH:-amd64}
case $darch in
    amd64) tag="" ;;
    arm64) tag=-arm64 ;;
    *) echo "error: linux-compare: LINUX_ARCH must be amd64 or arm64, got '$darch'" >&2; exit 2 ;;
esac
case $suite in
    sid) image_glob="linux-image-7.*-$darch" ;;
    bookworm) image_glob="linux-image-6.1.*-$darch" ;;
    *) echo "error: linux-compare: LINUX_SUITE must be sid or bookworm, got '$suite'" >&2; exit 2 ;;
esac
[[ $perf == 0 || $perf == 1 ]] || { echo "error: linux-compare: PERF must be 0 or 1, got '$perf'" >&2; exit 2; }

apt_dir=$out/apt-$suite$tag
debs=$out/debs-$suite$tag
x=$out/x-$suite$tag
mkdir -p "$debs"

# The packages wanted by name; the libraries are added below from the index.
wanted=(busybox-static rt-tests)
[[ $perf == 1 ]] && wanted+=(linux-perf)

have_all() { # every wanted package (and the kernel image) has a .deb here
    compgen -G "$debs/${image_glob%-"$darch"}*-${darch}_*.deb" >/dev/null || return 1
    local p
    for p in "${wanted[@]}"; do compgen -G "$debs/${p}_*.deb" >/dev/null || return 1; done
    [[ -f $debs/.complete ]]
}

if ! have_all; then
    # shellcheck source=../lib/apt.sh
    . "$(dirname "$0")/../lib/apt.sh"
    apt_private "$apt_dir" "$suite" "$darch" || exit 1
    opts=("${APT_OPTS[@]}")
    echo "linux-compare: apt-get update (private configuration, suite $suite)" >&2
    apt-get "${opts[@]}" -qq update >&2
    img=$(apt-cache "${opts[@]}" depends "linux-image-$darch" | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    [[ $img == ${image_glob} ]] ||
        { echo "error: linux-compare: $suite's linux-image-$darch names '$img', not $image_glob" >&2; exit 1; }
    # Debian 14's image is split: the kernel is in linux-binary-VERSION and
    # its config in linux-base-VERSION (no modules are needed: the
    # initramfs is the whole userland, the console a built-in 8250).
    parts=$(apt-cache "${opts[@]}" depends "$img" |
        awk -v v="${img#linux-image-}" '/Depends: linux-(binary|base)-/ && index($2, v) {print $2}')
    # Libraries: the lib* packages among the dependencies (recursively) of
    # the tools; perl's and python's own modules are not needed by the
    # binaries we run (their DT_NEEDED closure is checked when the
    # initramfs is built).
    libs=$(apt-cache "${opts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
        --no-breaks --no-replaces --no-enhances "${wanted[@]}" |
        grep -E '^(lib|zlib)' | grep -vE -- '-perl$|python3(\.[0-9]+)?-(stdlib|minimal)|debian-installer|gconv|^libpython3-' | sort -u)
    cd "$debs"
    # apt's sandbox user may not write here; as root the download still works.
    apt-get "${opts[@]}" download "$img" $parts "${wanted[@]}" $libs 2>&1 |
        grep -vE '^W: Download is performed unsandboxed|^Get:' >&2 || true
    have() { compgen -G "$debs/${1}_*.deb" >/dev/null; }
    for p in "$img" $parts; do have "$p" || { echo "error: linux-compare: $p was not downloaded" >&2; exit 1; }; done
    for p in "${wanted[@]}"; do have "$p" || { echo "error: linux-compare: $p was not downloaded" >&2; exit 1; }; done
    touch "$debs/.complete"
    rm -rf "$x"
fi

# Extract once per package set (the stamp lists the .deb files).
stamp=$(cd "$debs" && ls -1 ./*.deb | md5sum | cut -d' ' -f1)
if [[ ! -f $x/.stamp || $(cat "$x/.stamp") != "$stamp" ]]; then
    rm -rf "$x"
    mkdir -p "$x"
    for d in "$debs"/*.deb; do dpkg-deb -x "$d" "$x"; done
    echo "$stamp" >"$x/.stamp"
fi
echo "$x"
