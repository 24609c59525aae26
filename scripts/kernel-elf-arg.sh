# Sourced by the scripts that take one `KERNEL_ELF` argument (ab-smoke.sh,
# pc-paths-test.sh): checks it and sets `kernel`, `here` (the scripts
# folder) and `builddir` (build/, created). The two-argument form is
# arch-kernel-args.sh.
if [ $# -ne 1 ]; then
    echo "usage: $0 KERNEL_ELF" >&2
    exit 2
fi
kernel=$1
here=$(cd "$(dirname "$0")" && pwd)
builddir="$(cd "$here/.." && pwd)/build"
mkdir -p "$builddir"
