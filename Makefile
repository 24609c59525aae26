# Build, boot, test and benchmark the scheduler and its kernel.
#
#   make qemu [ARCH=x86_64|aarch64] [SMP=1] [MEM=256M] [ARGS="hz=250 ..."]
#   make test          host tests + in-kernel suites on both arches
#   make bench         scheduler micro-benchmarks (host)
#   make lint          rustfmt + clippy on every crate and target
ARCH    ?= x86_64
SMP     ?= 1
MEM     ?= 256M
ARGS    ?=
PROFILE ?= release

TARGET_x86_64  := x86_64-unknown-none
TARGET_aarch64 := aarch64-unknown-none
TARGET         := $(TARGET_$(ARCH))
KERNEL_ELF      = target/$(TARGET)/$(PROFILE)/kernel

CARGO ?= cargo
export SMP MEM

.PHONY: all build kernel qemu test test-host test-kernel test-x86_64 test-aarch64 \
        bench lint fmt clean ensure-qemu

all: build

build: kernel

kernel:
	$(CARGO) build -p kernel --target $(TARGET) --profile $(PROFILE)

ensure-qemu:
	@scripts/ensure-qemu.sh

qemu: ensure-qemu kernel
	scripts/qemu-$(ARCH).sh $(KERNEL_ELF) $(ARGS)

test: test-host test-kernel

test-host:
	$(CARGO) test -p sched -p shell --release

test-kernel: ensure-qemu test-x86_64 test-aarch64

test-x86_64:
	$(MAKE) kernel ARCH=x86_64
	scripts/ktest.sh x86_64 target/$(TARGET_x86_64)/$(PROFILE)/kernel

test-aarch64:
	$(MAKE) kernel ARCH=aarch64
	scripts/ktest.sh aarch64 target/$(TARGET_aarch64)/$(PROFILE)/kernel

# Micro-benchmarks (LTO build), then the oracle property test at 20x the
# cases `make test` runs (>= 2M random operations).
bench:
	$(CARGO) run -p bench --profile bench
	PROPTEST_CASES=5000 $(CARGO) test -p sched --release --test oracle

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy -p sched --all-targets -- -D warnings
	$(CARGO) clippy -p kernel --target $(TARGET_x86_64) -- -D warnings
	$(CARGO) clippy -p kernel --target $(TARGET_aarch64) -- -D warnings

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
