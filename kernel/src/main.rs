//! The hobby kernel that boots the `sched` crate.
#![no_std]
#![no_main]

mod arch;
mod console;
mod hooks;

use boot::BootInfo;

/// The kernel's entry point, called by the `boot` crate's arch entry code.
#[no_mangle]
pub extern "Rust" fn kernel_main(info: &'static BootInfo) -> ! {
    arch::early_init(info);
    console::init();
    log::info!("kernel: booted via {:?}, cmdline '{}'", info.protocol, info.cmdline);
    arch::timer_start(250);
    arch::irq_enable();
    let mut last = 0;
    loop {
        let t = hooks::TICKS.load(core::sync::atomic::Ordering::Relaxed);
        if t / 250 != last {
            last = t / 250;
            log::info!("heartbeat: {} ticks, now {} ns", t, arch::now_ns());
        }
        if t >= 250 * 2 {
            arch::exit_qemu(arch::ExitCode::Success);
        }
        arch::halt();
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
    arch::exit_qemu(arch::ExitCode::Failure)
}
