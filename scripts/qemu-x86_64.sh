#!/usr/bin/env bash
# scripts/boot/qemu.sh x86_64 KERNEL_ELF [words...], under the name that
# scripts/linux-compare.sh calls.
exec "$(dirname "$0")/boot/qemu.sh" x86_64 "$@"
