//! The hobby kernel that boots the `sched` crate.
//!
//! Boot order (`kernel_main`): arch early init, console, command line, heap,
//! thread table (the boot context becomes CPU 0's idle thread), scheduler
//! configuration and CPU 0's runqueue, the first threads, the tick; then this
//! context idles. With `ktest` on the command line the in-kernel test suite
//! runs in a thread and ends QEMU with its verdict; otherwise (until the debug
//! shell lands) a banner and a heartbeat line of scheduler stats every second.
#![no_std]
#![no_main]

extern crate alloc;

mod arch;
mod cmdline;
mod console;
mod heap;
mod hooks;
mod ktest;
mod percpu;
mod sched_glue;
mod sync;
mod task;
mod tests;

use alloc::sync::Arc;

use boot::BootInfo;
use sched::{SchedConfig, TaskParams};

/// The kernel's entry point, called by the `boot` crate's arch entry code.
#[no_mangle]
pub extern "Rust" fn kernel_main(info: &'static BootInfo) -> ! {
    arch::early_init(info);
    console::init();
    log::info!(
        "kernel: booted via {:?}, cmdline '{}'",
        info.protocol,
        info.cmdline
    );
    let args = cmdline::parse(info.cmdline, |word, why| {
        log::warn!("cmdline: ignoring '{}': {}", word, why)
    });

    let (heap_start, heap_len) = arch::heap_region(info);
    // SAFETY: the arch layer reports free, mapped RAM after the kernel image,
    // and this is the only call.
    unsafe { heap::init(heap_start, heap_len) };

    task::init();
    let cfg = Arc::new(SchedConfig::new(1, args.hz));
    if let Some(mode) = args.preempt {
        cfg.tunables.set_preempt_mode(mode);
    }
    task::core::init_sched(cfg);
    log::info!(
        "sched: EEVDF, hz={}, preempt={}, base slice {} ns, heap {} MiB",
        args.hz,
        task::preempt_mode().name(),
        task::sched_config().tunables.base_slice_ns(),
        heap_len >> 20
    );

    let spawned = match args.ktest {
        Some(filter) => task::spawn("ktest", TaskParams::default(), move || ktest::run(filter)),
        None => task::spawn("heartbeat", TaskParams::default(), heartbeat),
    };
    if let Err(e) = spawned {
        log::error!("kernel: cannot spawn the first thread: {:?}", e);
    }
    arch::timer_start(args.hz);
    arch::irq_enable();
    task::core::cpu_idle()
}

/// Prints a banner, then one line of scheduler statistics per second.
fn heartbeat() {
    crate::kprintln!("kernel: up; no shell yet, printing scheduler stats every second");
    loop {
        task::sleep_ms(1000);
        let s = sched_glue::stats();
        let (used, free) = heap::stats();
        log::info!(
            "heartbeat: ticks {} switches {} wakeups {} wakeup-preempts {} running {} threads {} sleepers {} heap {}/{} KiB",
            s.nr_ticks,
            s.nr_switches,
            s.nr_wakeups,
            s.nr_wakeup_preempt,
            s.nr_running,
            task::nr_threads(),
            percpu::this_cpu().timers.lock().len(),
            used >> 10,
            (used + free) >> 10
        );
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    arch::irq_disable();
    console::emergency_write(format_args!(
        "\nKERNEL PANIC on cpu {} in thread '{}': {}\n",
        arch::cpu_id(),
        hooks::current_thread_name(),
        info
    ));
    ktest::on_panic(info);
    arch::exit_qemu(arch::ExitCode::Failure)
}
