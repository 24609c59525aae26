#!/usr/bin/env bash
# Boots an x86_64 kernel ELF under QEMU (PVH entry through -kernel).
#
#   scripts/qemu-x86_64.sh KERNEL_ELF [kernel cmdline words...]
#
# Environment: SMP (CPUs, default 1), MEM (default 256M), ACCEL (kvm|tcg; default:
# kvm when it works here and is not PVM, else tcg), CPU (QEMU -cpu model; default host under KVM,
# max under TCG), QEMU (binary), QEMU_EXTRA (more QEMU arguments).
# Serial is on stdio: interactive use and piped input both work, and Ctrl-C goes
# to the guest (quit QEMU with Ctrl-A x). Also the cargo runner for x86_64.
#
# Exit status: 0 when the guest reported success through isa-debug-exit (QEMU
# status 33 = (0x10 << 1) | 1), 1 otherwise.
set -uo pipefail

if [ $# -lt 1 ]; then
    echo "usage: $0 KERNEL_ELF [kernel cmdline words...]" >&2
    exit 2
fi
kernel=$1
shift
if [ ! -f "$kernel" ]; then
    echo "qemu-x86_64: no such kernel: $kernel" >&2
    exit 1
fi

qemu=${QEMU:-qemu-system-x86_64}
smp=${SMP:-1}
mem=${MEM:-256M}

# Prints the first -cpu model with which QEMU can start a KVM guest here, and
# fails when there is none. A usable /dev/kvm is not enough: nested setups may
# refuse a model (seen here: `-cpu host` aborts on MSR 0x10a, arch-capabilities),
# so each candidate is tried with a paused VM that is told to quit at once.
kvm_cpu() {
    [ -r /dev/kvm ] && [ -w /dev/kvm ] || return 1
    local cpu
    for cpu in ${CPU:-host host,-arch-capabilities}; do
        if echo quit | timeout 10 "$qemu" -machine q35 -accel kvm -cpu "$cpu" -nodefaults \
            -display none -bios /usr/share/qemu/qboot.rom -S -monitor stdio >/dev/null 2>&1; then
            echo "$cpu"
            return 0
        fi
    done
    return 1
}

accel=${ACCEL:-}
case $accel in
    "")
        # PVM ("Pagetable-based Virtual Machine", module kvm_pvm) offers /dev/kvm
        # without hardware virtualization; a guest that is not PVM-aware runs
        # about 1000x slower there than under TCG (measured: a register loop
        # 3 us/iteration vs 1 ns). Prefer TCG then; ACCEL=kvm still forces KVM.
        if [ -d /sys/module/kvm_pvm ]; then
            accel_args=(-accel tcg -cpu "${CPU:-max}")
        elif cpu=$(kvm_cpu); then
            accel_args=(-accel kvm -cpu "$cpu")
        else
            accel_args=(-accel tcg -cpu "${CPU:-max}")
        fi
        ;;
    kvm)
        if ! cpu=$(kvm_cpu); then
            echo "qemu-x86_64: ACCEL=kvm, but KVM does not work here" >&2
            exit 1
        fi
        accel_args=(-accel kvm -cpu "$cpu")
        ;;
    tcg) accel_args=(-accel tcg -cpu "${CPU:-max}") ;;
    *) echo "qemu-x86_64: ACCEL must be kvm or tcg, not '$accel'" >&2; exit 2 ;;
esac

# signal=off: Ctrl-C reaches the guest instead of killing QEMU.
# qboot instead of SeaBIOS: firmware takes ~0.1 s instead of ~1.5 s under nested KVM.
# shellcheck disable=SC2086 # QEMU_EXTRA is a word list on purpose
"$qemu" -machine q35 -nodefaults -bios /usr/share/qemu/qboot.rom \
    "${accel_args[@]}" -smp "$smp" -m "$mem" \
    -display none -no-reboot \
    -chardev stdio,id=s0,signal=off -serial chardev:s0 \
    -device isa-debug-exit,iobase=0xf4,iosize=0x04 \
    -kernel "$kernel" -append "$*" ${QEMU_EXTRA:-}
rc=$?
if [ "$rc" -eq 33 ]; then
    exit 0
fi
echo "qemu-x86_64: guest did not report success (QEMU exit status $rc)" >&2
exit 1
