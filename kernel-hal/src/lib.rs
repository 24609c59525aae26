//! The kernel's hardware layer: the code that needs `unsafe`, behind safe
//! types, so that the `kernel` crate above it is safe code (the split
//! Asterinas makes with OSTD). Not all of it yet: the kernel's stack
//! allocator (`heap/stack.rs`) and the context switch (`sched/switch.rs`)
//! still hold `unsafe` blocks of their own.
//!
//! - [`arch`]: everything per architecture (x86_64, aarch64): interrupt
//!   controllers, timers, IPIs, page tables, CPU bring-up, traps, the
//!   context switch's assembly, the console UARTs;
//! - [`cpu`]: the local interrupt mask and [`IrqGuard`](cpu::IrqGuard), the
//!   spin-wait hint, [`CpuId`](cpu::CpuId);
//! - [`cpumask`]: [`AtomicCpuMask`](cpumask::AtomicCpuMask), a CPU set
//!   CPUs update concurrently;
//! - [`sync`]: [`SpinLock`](sync::SpinLock) (interrupt-safe) and
//!   [`Mutex`](sync::Mutex) (sleeping, over the kernel's wait queue);
//! - [`heap`]: the global allocator over the RAM ranges the kernel hands it;
//! - [`lockdep`]: the lock validator's seam (the `lockdep` feature);
//! - [`PreemptGuard`]: preemption off as a scope;
//! - [`testing`]: the in-kernel test registry (the `.ktest` section) and the
//!   `ktest!` / `kassert!` macros, for the kernel's tests and this crate's;
//! - [`hooks`]: the one trait through which this crate calls the kernel,
//!   registered at boot. Nothing here names the kernel crate.
//!
//! Every `unsafe` block carries a `// SAFETY:` comment.
#![no_std]

extern crate alloc;

pub mod arch;
pub mod cpu;
pub mod cpumask;
pub mod heap;
pub mod hooks;
pub mod lockdep;
mod preempt;
pub mod sync;
pub mod testing;

pub use preempt::PreemptGuard;

/// Most CPUs the kernel runs on: the size of the scheduler's CPU mask.
pub const MAX_CPUS: usize = sched::MAX_CPUS;
