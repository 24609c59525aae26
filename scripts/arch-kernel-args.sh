# Sourced by the scripts that take `ARCH KERNEL_ELF` (shell-e2e.sh, soak.sh,
# small-mem-test.sh): checks the two arguments and sets `arch`, `kernel`,
# `here` (the scripts folder) and `builddir` (build/, created).
if [ $# -ne 2 ]; then
    echo "usage: $0 ARCH KERNEL_ELF" >&2
    exit 2
fi
arch=$1
kernel=$2
here=$(cd "$(dirname "$0")" && pwd)
builddir="$(cd "$here/.." && pwd)/build"
mkdir -p "$builddir"
