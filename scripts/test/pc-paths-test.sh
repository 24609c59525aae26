#!/usr/bin/env bash
# The x86_64 "real PC" fallbacks that QEMU's PVH boot can exercise, in one
# short boot (qboot, TCG):
#
#   scripts/test/pc-paths-test.sh KERNEL_ELF
#
# - ACPI RSDP from the BIOS area scan: `acpi_rsdp=bios` makes the boot code
#   ignore the RSDP that PVH hands over (boot/src/x86_64/rsdp.rs);
# - console UART from ACPI SPCR: QEMU gets an SPCR table (`-acpitable`)
#   naming a 16550 at I/O port 0x2f8 (COM2), COM1 goes to a file and COM2 to
#   the log: the tests' output only arrives if the kernel moved to the UART
#   the table names;
# - RAM above 4 GiB: MEM=6G puts 4 GiB at 0x1_0000_0000; `-cpu qemu64` has no
#   1 GiB pages, so the kernel maps it with 2 MiB pages (the GRUB test, on
#   `-cpu max`, uses 1 GiB pages), and ktest `highmem_` allocates there,
#   writes and reads back.
#
# Passes when the kernel's boot lines name the BIOS scan, the SPCR UART at
# 0x2f8 and 4096 MiB mapped above 4 GiB in 2 MiB pages, and the tests say
# `0 failed` with QEMU's pass status.
set -uo pipefail
# shellcheck source=../lib/harness.sh
. "$(dirname "$0")/../lib/harness.sh"
h_init pc-paths-test
[ $# -eq 1 ] || { echo "usage: $0 KERNEL_ELF" >&2; exit 2; }
kernel=$1
log=$(h_log pc-paths x86_64)
com1=$(h_log pc-paths com1)
spcr="$H_BUILD/spcr-com2.bin"

# The SPCR table body (QEMU writes the 36-byte header and checksum):
# interface type 0 (16550), GAS {system I/O, 8 bits, offset 0, byte access,
# 0x2f8}, interrupt type 1 (8259) IRQ 3 / GSI 3, 115200 baud (7), 8N1, no
# flow control, VT100, PCI ids 0xffff (not a PCI device).
python3 - "$spcr" <<'PY'
import struct, sys
body = bytes([0, 0, 0, 0])
body += struct.pack("<BBBBQ", 1, 8, 0, 1, 0x2F8)
body += bytes([1, 3]) + struct.pack("<I", 3)
body += bytes([7, 0, 1, 0, 0, 0])
body += struct.pack("<HHBBBIBI", 0xFFFF, 0xFFFF, 0, 0, 0, 0, 0, 0)
open(sys.argv[1], "wb").write(body)
PY

# COM1 goes to a file, COM2 (the SPCR's UART) to the log.
h_qemu x86_64 kernel="$kernel" append="acpi_rsdp=bios ktest=highmem_" accel=tcg cpu=qemu64 \
    smp=2 mem=6G serial=none || exit 2
QEMU+=(-serial "file:$com1" -chardev stdio,id=s0,signal=off -serial chardev:s0
    -acpitable "sig=SPCR,rev=2,oem_id=SCHED,data=$spcr")
h_say "PVH, MEM=6G, -cpu qemu64, acpi_rsdp=bios, SPCR -> COM2 (log $log)"
H_TEE=1 h_run "$log" "${PC_PATHS_TIMEOUT:-120}" -- "${QEMU[@]}" </dev/null
rc=$H_RC
text=$(tr -d '\r' <"$log")

fail() {
    h_err "FAIL: $*; see $log"
    h_record pc-paths 0 1
    exit 1
}
grep -Eq '^x86_64: ACPI RSDP 0x[0-9a-f]+ \(BIOS area scan\)' <<<"$text" \
    || fail "the RSDP did not come from the BIOS area scan"
grep -q 'UART 0x2f8 (ACPI SPCR)' <<<"$text" || fail "the console did not move to the SPCR UART (0x2f8)"
grep -q 'RAM above 4 GiB: 4096 MiB identity-mapped (0 MiB in 1 GiB pages), 0 MiB not' <<<"$text" \
    || fail "the 4 GiB above 4 GiB were not mapped with 2 MiB pages"
grep -Eq 'KiB at 0x1[0-9a-f]{8} .*written and read back' <<<"$text" \
    || fail "the heap did not hand out memory above 4 GiB"
h_check_summary "$log" nonzero
ok=$?
if ! h_status_ok x86_64 "$rc" || [ "$ok" -ne 0 ]; then
    fail "QEMU status $rc, '${H_SUMMARY:-no summary line}'"
fi
h_record pc-paths "$H_PASSED" 0 "$H_SKIPPED"
h_say "PASS: $H_SUMMARY"
