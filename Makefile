# Build, boot, test and benchmark the scheduler and its kernel.
#
#   make qemu [ARCH=x86_64|aarch64] [SMP=1] [MEM=256M] [ARGS="hz=250 ..."]
#   make test          host tests + in-kernel suites on both arches, each at
#                      SMP=1 and SMP=$(SMP_TEST) (aarch64 SMP run with GICv3)
#   make bench         scheduler micro-benchmarks (host)
#   make ab            in-kernel A/B (compare) over boots/arches/CPUs, build/ab/
#   make lint          rustfmt + clippy on every crate and target
#   make sim ARGS=...  the discrete-event simulator (sim run / study / bench)
#   make study         the NEXT_BUDDY A/B study: tables, CSV, JSON, plots in build/study/
ARCH    ?= x86_64
SMP     ?= 1
MEM     ?= 256M
ARGS    ?=
PROFILE ?= release

TARGET_x86_64  := x86_64-unknown-none
TARGET_aarch64 := aarch64-unknown-none
TARGET         := $(TARGET_$(ARCH))
# Where cargo puts its output (honours CARGO_TARGET_DIR).
TARGET_DIR     ?= $(or $(CARGO_TARGET_DIR),target)
KERNEL_ELF      = $(TARGET_DIR)/$(TARGET)/$(PROFILE)/kernel
# CPU count of the multi-CPU in-kernel test runs.
SMP_TEST       ?= 4

CARGO ?= cargo
export SMP MEM

.PHONY: all build kernel qemu test test-host test-kernel test-x86_64 test-x86_64-grub test-aarch64 sim \
        test-x86_64-smp test-aarch64-smp check-toolchain \
        bench lint fmt clean ensure-qemu ensure-toolchain test-shell study ensure-fonts test-calibrate clock-test test-small-mem test-ab-smoke ab

all: build

build: kernel

kernel: ensure-toolchain
	$(CARGO) build -p kernel --target $(TARGET) --profile $(PROFILE)

ensure-qemu:
	@scripts/ensure-qemu.sh

# The bare-metal targets and rustfmt/clippy for rust-toolchain.toml's toolchain
# (rustup applies that file's lists only when it installs the toolchain itself).
ensure-toolchain:
	@scripts/ensure-toolchain.sh

# Fails, naming what is missing, if the step above was ever skipped.
check-toolchain:
	@scripts/ensure-toolchain.sh --check

qemu: ensure-qemu kernel
	scripts/qemu-$(ARCH).sh $(KERNEL_ELF) $(ARGS)

test: ensure-toolchain check-toolchain test-host test-kernel test-shell test-calibrate test-small-mem test-ab-smoke

test-host:
	$(CARGO) test -p sched -p shell -p sim -p abtool --release

test-kernel: ensure-qemu test-x86_64 test-aarch64

# Each arch: the suite on one CPU, then on SMP_TEST CPUs. The multi-CPU run
# must skip nothing (the SMP tests only skip below 2 CPUs): its closing line
# must say "0 skipped".
test-x86_64:
	$(MAKE) kernel ARCH=x86_64
	SMP=1 scripts/ktest.sh x86_64 $(TARGET_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel
	$(MAKE) test-x86_64-smp
	$(MAKE) test-x86_64-grub

# Bare-metal boot path: the same ELF from a GRUB ISO through Multiboot2.
test-x86_64-grub:
	SMP=2 scripts/grub-boot-test.sh $(TARGET_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel

test-x86_64-smp:
	SMP=$(SMP_TEST) scripts/ktest.sh x86_64 $(TARGET_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel
	@tr -d '\r' <build/ktest-x86_64-smp$(SMP_TEST).log | grep -Eq '^[0-9]+ passed, 0 failed, 0 skipped' \
		|| { echo "ktest: FAIL: x86_64 SMP=$(SMP_TEST) skipped tests" >&2; exit 1; }

test-aarch64:
	$(MAKE) kernel ARCH=aarch64
	SMP=1 scripts/ktest.sh aarch64 $(TARGET_DIR)/$(TARGET_aarch64)/$(PROFILE)/kernel
	$(MAKE) test-aarch64-smp
	$(MAKE) test-aarch64-reloc

# The Image relocates itself: load it 4 MiB above its link address and run a
# part of the suite there; the boot banner must show where it really ran.
RELOC_ADDR = 0x40600000
test-aarch64-reloc:
	LOAD_ADDR=$(RELOC_ADDR) SMP=2 scripts/ktest.sh aarch64 $(TARGET_DIR)/$(TARGET_aarch64)/$(PROFILE)/kernel sched_
	@tr -d '\r' <build/ktest-aarch64-smp2.log | grep -q 'image $(RELOC_ADDR)\.\.' \
		|| { echo "ktest: FAIL: aarch64 Image did not run at $(RELOC_ADDR)" >&2; exit 1; }

# The 4-CPU run also covers GICv3 and `-cpu max` (the 1-CPU run: cortex-a72, GICv2).
test-aarch64-smp:
	SMP=$(SMP_TEST) GIC=3 CPU=max scripts/ktest.sh aarch64 $(TARGET_DIR)/$(TARGET_aarch64)/$(PROFILE)/kernel
	@tr -d '\r' <build/ktest-aarch64-smp$(SMP_TEST).log | grep -Eq '^[0-9]+ passed, 0 failed, 0 skipped' \
		|| { echo "ktest: FAIL: aarch64 SMP=$(SMP_TEST) skipped tests" >&2; exit 1; }

# The debug shell end to end: a command script piped into QEMU, replies checked.
SHELL_E2E_DIR = $(or $(CARGO_TARGET_DIR),target)
# compare in reproducible mode (-icount): two boots print the same bytes, the
# table's format, NEXT_BUDDY's counters (a few seconds).
test-ab-smoke: ensure-qemu
	$(MAKE) kernel ARCH=x86_64
	scripts/ab-smoke.sh $(TARGET_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel

# The in-kernel `compare` over several boots, arches and CPU counts (see
# scripts/ab.sh for the knobs: ARCHES CPUS BOOTS RUNS WARMUP CONFIGS WORKLOADS
# ICOUNT OUT), reproducible (-icount) by default; abtool writes tables with the
# boot-to-boot / within-boot variance split, CSV, JSON and PNGs to build/ab/.
ab: ensure-qemu ensure-fonts
	scripts/ab.sh

test-shell: ensure-qemu
	$(MAKE) kernel ARCH=x86_64
	scripts/shell-e2e.sh x86_64 $(SHELL_E2E_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel
	$(MAKE) kernel ARCH=aarch64
	scripts/shell-e2e.sh aarch64 $(SHELL_E2E_DIR)/$(TARGET_aarch64)/$(PROFILE)/kernel

# Out of memory is an error, not a panic: both arches at a small MEM.
test-small-mem: ensure-qemu
	$(MAKE) kernel ARCH=x86_64
	MEM=6M SMP=4 scripts/small-mem-test.sh x86_64 $(TARGET_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel
	$(MAKE) kernel ARCH=aarch64
	MEM=12M SMP=4 scripts/small-mem-test.sh aarch64 $(TARGET_DIR)/$(TARGET_aarch64)/$(PROFILE)/kernel

# The simulator against the kernel: the same 4-CPU hackbench with NEXT_BUDDY
# off and on, in QEMU (-icount) and in sim; the per-message switch and
# wakeup-preemption counts must move the same way.
test-calibrate: ensure-qemu
	$(MAKE) kernel ARCH=x86_64
	$(CARGO) build -q -p sim --release
	scripts/calibrate.sh $(TARGET_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel $(TARGET_DIR)/release/sim

# x86_64: 20 boots with the host cores kept busy; the TSC and LAPIC rates
# they print must agree within 1% (scripts/clock-test.sh says when they can't).
clock-test: ensure-qemu
	$(MAKE) kernel ARCH=x86_64
	scripts/clock-test.sh $(TARGET_DIR)/$(TARGET_x86_64)/$(PROFILE)/kernel $(or $(BOOTS),20)

# Micro-benchmarks (LTO build), then the oracle property test at 20x the
# cases `make test` runs (>= 2M random operations).
bench:
	$(CARGO) run -p bench --profile bench --bin bench -- $(ARGS)
	PROPTEST_CASES=5000 $(CARGO) test -p sched --release --test oracle
	$(CARGO) run -q -p sim --release -- bench

# The scheduler on simulated machines (discrete events, sim/):
#   make sim ARGS="run --machine small mix hog hog:5"
#   make sim ARGS="run --machine graviton3 --config NEXT_BUDDY hackbench groups=8"
sim:
	$(CARGO) run -q -p sim --release -- $(ARGS)

# The plots' font (DejaVu Sans, Debian's fonts-dejavu-core).
FONT = /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf
ensure-fonts:
	@test -f $(FONT) || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-dejavu-core >/dev/null; } \
		|| echo "study: no $(FONT): plots will be skipped"

# NEXT_BUDDY off/on/variants on graviton3 and cascadelake-2s (a few minutes
# on 2 cores): tables on stdout, tables.txt, samples.csv/json, PNGs in build/study/.
study: ensure-fonts
	$(CARGO) run -q -p sim --release -- study --out build/study $(ARGS)

lint: ensure-toolchain
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy -p sched -p shell -p bench -p sim -p abtool --all-targets -- -D warnings
	$(CARGO) clippy -p kernel --target $(TARGET_x86_64) -- -D warnings
	$(CARGO) clippy -p kernel --target $(TARGET_aarch64) -- -D warnings

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
