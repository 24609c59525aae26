# Sourced by scripts/linux-compare.sh (and scripts/test/harness-test.sh): how
# a Linux boot is made to repeat itself, LINUX_DETERMINISTIC=1 (the
# default). -icount makes the guest's clocks follow its instruction count,
# but a Debian kernel on QEMU still takes in what differs from boot to boot:
#
#   host entropy  x86_64 `-cpu max` offers RDRAND/RDSEED, which QEMU's TCG
#                 answers from the host's generator; QEMU also hands the
#                 guest seeds of its own (x86 setup_data, arm64 virt's
#                 /chosen rng-seed and kaslr-seed) from its guest generator,
#                 which `-seed N` makes a fixed sequence (here N is the
#                 boot's lc.seed: another seed, another sequence);
#   host time     the RTC follows the host clock unless `-rtc clock=vm`,
#                 and starts at the host's date unless given a base;
#   layout        KASLR (RANDOMIZE_BASE, RANDOMIZE_MEMORY), a random offset
#                 of the kernel stack at each syscall (RANDOMIZE_KSTACK_
#                 OFFSET_DEFAULT), the page allocator's shuffled free lists
#                 (SHUFFLE_PAGE_ALLOCATOR) and user ASLR (each process's
#                 stack, mmap base and brk);
#   the initramfs initramfs.sh now archives it byte for byte the same;
#                 before, each build had other times and inode numbers, so
#                 two calls of the harness booted different archives.
#
# Debian's SLAB_FREELIST_RANDOM has no switch: with the inputs above fixed,
# the kernel's generator repeats its sequence. docs/results/linux/three-way.md,
# "Linux boots made reproducible", has the boots behind each item.
#
# aarch64 (Debian's arm64 Image on QEMU virt, booted by -kernel: no
# firmware, no EFI stub) takes the same flags. Its cortex-a72 has no RNDR
# and no pointer authentication or MTE, so there is no CPU generator to
# turn off; the virt DT's kaslr-seed and rng-seed are QEMU's guest
# generator's, which -seed fixes (scripts/test/harness-test.sh compares the
# dumped DTBs); nokaslr is arm64's too. The aarch64 section of
# docs/results/linux.md has its repeated boots.
#
# What this does not fix: with the inputs above fixed, a boot booted again
# still parts now and then, in a threaded row, and then takes one of two
# paths. The serial console is not the cause (its log is a regular file,
# so no write is ever retried). The suspect is QEMU's main-loop thread,
# which runs expired virtual timers and warps the idle clock at host-timed
# moments beside the one TCG thread. QEMU 7.2's record/replay refuses
# -smp > 1. docs/results/linux/aarch64.md, "what parts same-seed boots", has the
# boots.

# lc_det_args ON ARCH SEED: sets LC_DET_CPU (the CPU model, '' for h_qemu's
# default), LC_DET_QEMU (QEMU arguments) and LC_DET_WORDS (kernel command
# line words) for a Linux boot of seed SEED (a positive integer, else 1);
# ON 0 leaves all three empty.
lc_det_args() {
    LC_DET_CPU="" LC_DET_QEMU=() LC_DET_WORDS=()
    [[ $1 == 1 ]] || return 0
    case $2 in
        x86_64) LC_DET_CPU="max,-rdrand,-rdseed" ;;
        *) ;; # cortex-a72 (ARMv8.0) has no RNDR
    esac
    local seed=${3:-1}
    [[ $seed =~ ^[1-9][0-9]{0,8}$ ]] || seed=1
    LC_DET_QEMU=(-rtc base=2026-01-01T00:00:00,clock=vm -seed "$seed")
    LC_DET_WORDS=(nokaslr randomize_kstack_offset=off page_alloc.shuffle=0 norandmaps)
}
