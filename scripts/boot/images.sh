# Boot-image builders, sourced by scripts/boot/make-images.sh and
# scripts/test/firmware-test.sh (scripts/setup/ensure-firmware.sh installs
# the tools). Each function writes one image; ARGS is the kernel command
# line baked into the image's boot configuration (empty: boot to the sched>
# shell).
#
#   x86_iso KERNEL_ELF ARGS OUT.iso     GRUB ISO, BIOS + UEFI when GRUB's
#                                       x86_64-efi modules are installed
#   x86_iso_cfg KERNEL_ELF GRUB_CFG OUT.iso
#                                       the same with this grub.cfg (the
#                                       kernel is /boot/kernel.elf)
#   uboot_disk IMAGE ARGS OUT.img       MBR disk, one FAT partition: Image and
#                                       U-Boot's boot.scr (distro boot)
#   esp_disk IMAGE OUT.img              MBR disk, one EFI system partition:
#                                       EFI/BOOT/BOOTAA64.EFI = the Image
#   esp_grub_disk IMAGE ARGS GRUBDIR OUT.img
#                                       the same with GRUB arm64 as
#                                       BOOTAA64.EFI, EFI/BOOT/grub.cfg running
#                                       `linux /Image ARGS`, and /Image
# A failure prints what failed (and its log) and returns non-zero.

# GRUB's serial console at 115200 8n1 beside the screen (a PC without COM1
# still shows the menu); no menu delay.
grub_console_cfg() {
    cat <<'CFG'
set timeout=0
serial --unit=0 --speed=115200
terminal_input serial console
terminal_output serial console
CFG
}

x86_iso() { # KERNEL_ELF ARGS OUT
    x86_iso_cfg "$1" <(
        grub_console_cfg
        printf 'menuentry "sched" {\n    multiboot2 /boot/kernel.elf %s\n    boot\n}\n' "$2"
    ) "$3"
}

x86_iso_cfg() { # KERNEL_ELF GRUB_CFG OUT
    local elf=$1 cfg=$2 out=$3 dir
    dir=$(mktemp -d "${out%/*}/iso.XXXXXX")
    mkdir -p "$dir/boot/grub"
    cp "$elf" "$dir/boot/kernel.elf"
    cat "$cfg" >"$dir/boot/grub/grub.cfg"
    if ! grub-mkrescue -o "$out" "$dir" >"$out.log" 2>&1; then
        echo "images: grub-mkrescue failed for $out; see $out.log" >&2
        rm -rf "$dir"
        return 1
    fi
    rm -rf "$dir" "$out.log"
}

# Writes a DOS partition table to OUT (SIZE_MIB MiB, sparse) with one
# bootable partition of TYPE (hex byte) from 1 MiB to the end, FAT32 on it,
# then copies SRC_DIR's contents in. mtools addresses the partition by
# byte offset, so no loop device or root is needed.
fat_disk() { # SIZE_MIB TYPE SRC_DIR OUT
    local size=$1 type=$2 src=$3 out=$4
    local start=2048 sectors=$(($1 * 2048 - 2048))
    rm -f "$out"
    truncate -s "${size}M" "$out"
    le32() { printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($1 & 255)) $(($1 >> 8 & 255)) $(($1 >> 16 & 255)) $(($1 >> 24 & 255)); }
    # Entry 1: active, CHS fields at their "use LBA" maximum, LBA start and size.
    # shellcheck disable=SC2059 # the escapes are the point
    printf "\\x80\\xfe\\xff\\xff\\x${type}\\xfe\\xff\\xff$(le32 $start)$(le32 $sectors)" |
        dd of="$out" bs=1 seek=446 conv=notrunc status=none
    printf '\x55\xaa' | dd of="$out" bs=1 seek=510 conv=notrunc status=none
    if ! mkfs.fat -F 32 -s 1 -n SCHED --offset "$start" "$out" $((sectors / 2)) >"$out.log" 2>&1 ||
        ! mcopy -s -i "$out@@$((start * 512))" "$src"/* ::/ >>"$out.log" 2>&1; then
        echo "images: making the FAT file system of $out failed; see $out.log" >&2
        return 1
    fi
    rm -f "$out.log"
}

uboot_disk() { # IMAGE ARGS OUT
    local image=$1 args=$2 out=$3 dir
    dir=$(mktemp -d "${out%/*}/uboot.XXXXXX")
    cp "$image" "$dir/Image"
    cat >"$dir/boot.cmd" <<CMD
# U-Boot distro boot script for the sched kernel (boot.scr is this file
# through mkimage -A arm64 -T script). Loads the Image from the partition the
# script was found on and starts it with U-Boot's own device tree.
setenv bootargs "$args"
load \${devtype} \${devnum}:\${distro_bootpart} \${kernel_addr_r} Image
booti \${kernel_addr_r} - \${fdtcontroladdr}
CMD
    if ! mkimage -A arm64 -O linux -T script -C none -n "sched boot" -d "$dir/boot.cmd" "$dir/boot.scr" >/dev/null; then
        echo "images: mkimage failed for $out" >&2
        rm -rf "$dir"
        return 1
    fi
    fat_disk 64 0c "$dir" "$out"
    local rc=$?
    rm -rf "$dir"
    return $rc
}

esp_disk() { # IMAGE OUT
    local dir rc
    dir=$(mktemp -d "${2%/*}/esp.XXXXXX")
    mkdir -p "$dir/EFI/BOOT"
    cp "$1" "$dir/EFI/BOOT/BOOTAA64.EFI"
    fat_disk 64 ef "$dir" "$2"
    rc=$?
    rm -rf "$dir"
    return $rc
}

esp_grub_disk() { # IMAGE ARGS GRUB_ARM64_DIR OUT
    local image=$1 args=$2 grubdir=$3 out=$4 dir rc
    dir=$(mktemp -d "${out%/*}/espgrub.XXXXXX")
    mkdir -p "$dir/EFI/BOOT"
    cp "$image" "$dir/Image"
    # The firmware's console (ConOut) is GRUB's: UEFI puts it on the serial
    # port and the screen itself.
    printf 'set timeout=0\nmenuentry "sched" {\n    linux /Image %s\n    boot\n}\n' "$args" \
        >"$dir/EFI/BOOT/grub.cfg"
    # The GRUB image carries only a loader config: find the partition with
    # our grub.cfg and run it, so grub.cfg stays an editable file on the ESP.
    cat >"$dir/embedded.cfg" <<'CFG'
search --no-floppy --file --set=root /EFI/BOOT/grub.cfg
configfile ($root)/EFI/BOOT/grub.cfg
CFG
    if ! grub-mkstandalone -O arm64-efi -d "$grubdir" -o "$dir/EFI/BOOT/BOOTAA64.EFI" \
        --modules="part_msdos part_gpt fat search configfile linux normal serial efi_gop" \
        --locales= --themes= --fonts= \
        "boot/grub/grub.cfg=$dir/embedded.cfg" >"$out.log" 2>&1; then
        echo "images: grub-mkstandalone (arm64-efi) failed for $out; see $out.log" >&2
        rm -rf "$dir"
        return 1
    fi
    rm -f "$dir/embedded.cfg" "$out.log"
    fat_disk 64 ef "$dir" "$out"
    rc=$?
    rm -rf "$dir"
    return $rc
}
