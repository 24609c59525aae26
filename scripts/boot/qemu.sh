#!/usr/bin/env bash
# Boots a kernel ELF under QEMU with the serial console on this terminal:
# `make qemu`, and the cargo runner of both kernel targets.
#
#   scripts/boot/qemu.sh ARCH KERNEL_ELF [kernel command line words...]
#
# x86_64: PVH entry through -kernel (qboot firmware). aarch64: the ELF as a
# raw arm64 Image (KERNEL_ELF.Image) through -kernel on QEMU virt, so QEMU
# passes the DTB (with the command line as /chosen/bootargs) in x0, as U-Boot
# `booti` would. Interactive use and piped stdin both work, and Ctrl-C goes
# to the guest (x86_64: quit QEMU with Ctrl-A x).
#
# Environment (scripts/lib/harness.sh, h_qemu, has the details): SMP (1),
# MEM (256M), ACCEL (auto|tcg|kvm), CPU, GIC (aarch64: 2, or 3 beyond 8
# CPUs), LOAD_ADDR (aarch64: a 2 MiB-aligned load address other than QEMU's,
# to exercise the self-relocation), ICOUNT (a shift 0..9: reproducible
# time; off or empty: none),
# TIMEOUT (seconds, then exit 124), QEMU_EXTRA (more QEMU arguments).
#
# Exit status: 0 when the guest reported success (isa-debug-exit /
# semihosting), 124 on TIMEOUT, else 1.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init qemu
if [ $# -lt 2 ]; then
    echo "usage: $0 ARCH KERNEL_ELF [kernel command line words...]" >&2
    exit 2
fi
arch=$1 kernel=$2
shift 2
h_qemu "$arch" kernel="$kernel" append="$*" ${ICOUNT:+icount=$ICOUNT} || exit 2
if [ -n "${TIMEOUT:-}" ]; then
    timeout --foreground "$TIMEOUT" "${QEMU[@]}"
else
    "${QEMU[@]}"
fi
rc=$?
h_status_ok "$arch" "$rc" && exit 0
h_timed_out "$rc" && { h_err "timed out after ${TIMEOUT}s"; exit 124; }
h_err "guest did not report success (QEMU exit status $rc)"
exit 1
