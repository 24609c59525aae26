#!/usr/bin/env bash
# The machine's shape reaches the scheduler: boots ARCH
#   - on `-smp 4,threads=2` and `-smp 8,sockets=2,threads=2`: the boot line
#     `sched: topology:` gives the cores, LLCs and CPU 0's domains the
#     firmware describes (x86_64: CPUID leaf 0xB/0x1F and the cache leaf over
#     the APIC ids; aarch64: the devicetree's cpu-map, the socket as the LLC),
#     and `-smp 4` stays one LLC of 4 cores (MC 4), as before;
#   - on 4 CPUs with `cpu_capacity=530,530,1024,1024` (an RK3588-like pair of
#     Cortex-A55 and Cortex-A76 values): the boot line says the capacities
#     and "(asymmetric)", and `sched_debug` shows each CPU's `.cpu_capacity`
#     and `.misfit_task_load` (0: the shell's CPU-bound work is no misfit);
#   - with `cpu_capacity=1,2` (two values for four CPUs): a warning, and
#     every CPU 1024;
#   - aarch64 only: QEMU's own `virt` devicetree (`-machine dumpdtb=`) given
#     back (`-dtb`) with `capacity-dmips-mhz` on each /cpus/cpu@N node
#     (scripts/lib/fdt_props.py): the same capacities, "from
#     capacity-dmips-mhz"; and on CPU 0 only: "partial information", every
#     CPU 1024 (Linux's rule, drivers/base/arch_topology.c).
#
#   scripts/test/topology-test.sh ARCH KERNEL_ELF
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init topology
[ $# -eq 2 ] || { echo "usage: $0 ARCH KERNEL_ELF" >&2; exit 2; }
arch=$1 kernel=$2
export SMP=4
fails=0 boots=0

# boot TAG APPEND [QEMU_EXTRA...]: one boot on $SMP that runs `sched_debug`
# and powers off; sets LOG.
boot() {
    local tag=$1 append=$2
    shift 2
    LOG=$(h_log topology "$arch" "$tag")
    QEMU_EXTRA="$*" h_qemu "$arch" kernel="$kernel" append="$append run=sched_debug; poweroff" || exit 2
    h_run "$LOG" 120 -- "${QEMU[@]}" </dev/null
    boots=$((boots + 1))
    h_status_ok "$arch" "$H_RC" || { h_err "$tag: QEMU status $H_RC; see $LOG"; fails=$((fails + 1)); return 1; }
}

# expect TAG REGEX...: every REGEX matches a line of LOG.
expect() {
    local tag=$1 re
    shift
    for re in "$@"; do
        tr -d '\r' <"$LOG" | grep -aE -- "$re" >/dev/null || { h_err "$tag: no line matching '$re'; see $LOG"; fails=$((fails + 1)); }
    done
}

# caps TAG A B C D: sched_debug shows these capacities for cpu#0..3.
caps() {
    local tag=$1 got
    shift
    got=$(tr -d '\r' <"$LOG" | grep -a '^  \.cpu_capacity' | awk '{print $3}' | tr '\n' ' ')
    [ "$got" = "$* " ] || { h_err "$tag: sched_debug .cpu_capacity '$got', want '$* '; see $LOG"; fails=$((fails + 1)); }
}

SMP=4 boot smp4 "" &&
    expect smp4 'sched: topology: 4 CPU\(s\), 4 core\(s\), 1 LLC\(s\); cpu0.s domains: MC 4$'
SMP=4,threads=2 boot smt "" &&
    expect smt 'sched: topology: 4 CPU\(s\), 2 core\(s\), 1 LLC\(s\); cpu0.s domains: SMT 2 MC 4$'
SMP=8,sockets=2,threads=2 boot sockets "" &&
    expect sockets 'sched: topology: 8 CPU\(s\), 4 core\(s\), 2 LLC\(s\); cpu0.s domains: SMT 2 MC 4 PKG 8$'
boot arg "cpu_capacity=530,530,1024,1024" &&
    expect arg 'sched: CPU capacities from cpu_capacity=: 530 530 1024 1024 \(asymmetric\)' \
        '^  \.misfit_task_load     : 0$' &&
    caps arg 530 530 1024 1024
boot badarg "cpu_capacity=1,2" &&
    expect badarg 'sched: cpu_capacity= lists 2 CPU\(s\), the machine has 4: ignored' &&
    caps badarg 1024 1024 1024 1024

if [ "$arch" = aarch64 ]; then
    dtb="$H_BUILD/topology-virt.dtb"
    rm -f "$dtb"
    h_qemu "$arch" machine="dumpdtb=$dtb" || exit 2
    "${QEMU[@]}" </dev/null >/dev/null 2>&1
    if [ ! -s "$dtb" ]; then
        h_err "QEMU did not dump its devicetree to $dtb"
        fails=$((fails + 1))
    else
        props="$H_LIB/fdt_props.py"
        python3 "$props" "$dtb" "$dtb.bl" capacity-dmips-mhz \
            /cpus/cpu@0=530 /cpus/cpu@1=530 /cpus/cpu@2=1024 /cpus/cpu@3=1024 || exit 2
        python3 "$props" "$dtb" "$dtb.partial" capacity-dmips-mhz /cpus/cpu@0=530 || exit 2
        boot dt "" -dtb "$dtb.bl" &&
            expect dt 'sched: CPU capacities from capacity-dmips-mhz: 530 530 1024 1024 \(asymmetric\)' &&
            caps dt 530 530 1024 1024
        boot dtpartial "" -dtb "$dtb.partial" &&
            expect dtpartial 'sched: capacity-dmips-mhz on 1 of 4 CPUs: partial information, every CPU 1024' &&
            caps dtpartial 1024 1024 1024 1024
    fi
fi

if [ "$fails" -ne 0 ]; then
    h_record "topology $arch" 0 "$fails" 0
    h_err "FAIL: $arch: $fails check(s) failed"
    exit 1
fi
h_record "topology $arch" "$boots" 0 0
h_say "PASS: $arch: $boots boots, topologies and capacities as given"
