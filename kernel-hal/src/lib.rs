//! The kernel's hardware layer: the code that needs `unsafe`, behind safe
//! types, so that the `kernel` crate above it is safe code
//! (`#![forbid(unsafe_code)]`; the split Asterinas makes with OSTD).
//!
//! - [`addr`]: [`PhysAddr`](addr::PhysAddr) and [`VirtAddr`](addr::VirtAddr);
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
//! - [`percpu`]: per-CPU data ([`CpuLocal`](percpu::CpuLocal)) and its
//!   safe handles;
//! - [`stack`]: kernel stacks with guard pages ([`KernelStack`](stack::KernelStack));
//! - [`context`]: the context switch ([`TaskContext`](context::TaskContext),
//!   [`switch_to`](context::switch_to));
//! - [`PreemptGuard`]: preemption off as a scope;
//! - [`testing`]: the in-kernel test registry (the `.ktest` section) and the
//!   `ktest!` / `kassert!` macros, for the kernel's tests and this crate's;
//! - [`hooks`]: the one trait through which this crate calls the kernel,
//!   registered at boot. Nothing here names the kernel crate;
//! - [`kernel_entry!`]: the kernel's unmangled entry symbol.
//!
//! Every `unsafe` block carries a `// SAFETY:` comment.
#![no_std]

extern crate alloc;

pub mod addr;
pub mod arch;
pub mod context;
pub mod cpu;
pub mod cpumask;
pub mod heap;
pub mod hooks;
pub mod lockdep;
pub mod percpu;
mod preempt;
pub mod stack;
pub mod sync;
pub mod testing;
pub mod topo;

pub use preempt::PreemptGuard;

/// Defines the kernel's entry point: the `kernel_main` symbol the `boot`
/// crate's arch entry code calls (`extern "Rust" fn(&'static BootInfo) ->
/// !`, one definition, unmangled), as a call of `$main`, a safe
/// `fn(&'static boot::BootInfo) -> !` of the kernel. The unmangled symbol
/// is this crate's, so the kernel needs no `#[no_mangle]` (which the
/// `unsafe_code` lint counts) of its own.
#[macro_export]
macro_rules! kernel_entry {
    ($main:path) => {
        /// The symbol the `boot` crate's entry code calls.
        #[no_mangle]
        pub extern "Rust" fn kernel_main(info: &'static $crate::BootInfo) -> ! {
            $main(info)
        }
    };
}

/// What the boot code hands the kernel (the `boot` crate's type).
pub use boot::BootInfo;

/// Most CPUs the kernel runs on: the scheduler's limit (the size of its CPU
/// mask), the one constant every crate takes.
pub use sched::MAX_CPUS;
