//! The hobby kernel that boots the `sched` crate.
//!
//! Boot order (`kernel_main`): arch early init, console, command line, heap,
//! thread table (the boot context becomes CPU 0's idle thread and moves from
//! the boot stack to a kernel stack with a guard page below it,
//! `heap::stack`), scheduler configuration and the per-CPU runqueues, the
//! secondary CPUs (each gets a guarded kernel stack, turns its start-up
//! context into its idle
//! thread, comes online in the scheduler, starts its own tick and idles), the
//! first threads, the boot CPU's tick; then this context idles. The first
//! threads are spawned after every CPU is online, so they may use them all. With `ktest` on the command line the in-kernel test suite
//! runs in a thread and ends QEMU with its verdict; with `fault=CASE` the
//! kernel fails on purpose (`fault`, for the fault-report tests); otherwise (until the debug
//! shell lands) a banner and a heartbeat line of scheduler stats every second.
#![no_std]
#![no_main]
// No `unsafe`: what needs it is kernel-hal's, behind safe types.
#![forbid(unsafe_code)]

extern crate alloc;

// The in-kernel test macros are kernel-hal's (its `testing` module), used
// here as `crate::ktest!` and the like.
use kernel_hal::cpu::CpuId;
use kernel_hal::{kassert, kassert_eq, kskip, ktest, ktest_smp, ktest_smp_timing, ktest_timing};
// CPU sets (`crate::cpumask`) are kernel-hal's.
use kernel_hal::cpumask;

// Hardware: registers, interrupt controllers, page tables, the context
// switch's assembly, the boot protocols' symbols: kernel-hal's `arch`, named
// `crate::arch` here.
use kernel_hal::arch;
mod cmdline;
mod console;
mod fault;
mod fbcon;
// The heap's RAM ranges and the kernel stacks: kernel-hal's allocators.
mod heap;
mod hooks;
mod hotplug;
mod ktest;
mod percpu;
mod sched;
mod shell;
mod smp;
mod sync;
mod task;
mod tests;
mod trace;
mod workloads;

use alloc::sync::Arc;
use core::sync::atomic::{AtomicU32, Ordering};

use ::sched::{SchedConfig, TaskParams};
use boot::BootInfo;

// The `kernel_main` symbol the `boot` crate's entry code calls.
kernel_hal::kernel_entry!(start_kernel);

/// The kernel's entry point (Linux's `start_kernel`), called through
/// `kernel_main` by the `boot` crate's arch entry code.
fn start_kernel(info: &'static BootInfo) -> ! {
    hooks::register();
    arch::early_init(info);
    console::init();
    #[cfg(feature = "lockdep")]
    kernel_hal::lockdep::enable(console::lockdep_sink);
    // The heap first: the framebuffer console keeps its text grid there.
    let heap_len = heap::total_bytes(heap::init(info));
    if let Some(fb) = arch::framebuffer() {
        let drawn = arch::framebuffer_memory().is_some_and(|mem| fbcon::init(fb, mem));
        let (cols, rows) = fbcon::size().unwrap_or_default();
        log::info!(
            "console: fb {}x{}x{} @{:#x} pitch {}: {}x{} text{}",
            fb.width,
            fb.height,
            fb.bpp,
            fb.addr,
            fb.pitch,
            cols,
            rows,
            match (drawn, fbcon::has_shadow()) {
                (false, _) => " (format not drawn: serial only)",
                (true, true) => ", grid in RAM",
                (true, false) => ", no memory for the grid: scrolling reads video memory",
            }
        );
    }
    log::info!(
        "kernel: booted via {:?}, cmdline '{}'",
        info.protocol,
        info.cmdline
    );
    let mut args = cmdline::parse(info.cmdline, |word, why| {
        log::warn!("cmdline: ignoring '{}': {}", word, why)
    });
    cmdline::check_run(&mut args, |word, why| {
        log::warn!("cmdline: ignoring '{}': {}", word, why)
    });
    fault::set(args.fault);
    fault::on_early_boot();

    task::init();
    // CPU 0's idle thread (this context) leaves the boot stack for a kernel
    // stack with a guard below it, like every other thread's.
    BOOT.call_once(|| BootState { args, heap_len });
    match heap::stack::KernelStack::new(task::idle_idx(CpuId::BOOT)) {
        Ok(stack) => stack.run_forever(boot_continue, 0),
        Err(_) => boot_continue(0),
    }
}

/// What `kernel_main` hands to [`boot_continue`] across the stack switch.
static BOOT: spin::Once<BootState> = spin::Once::new();

/// What `kernel_main` hands to [`boot_continue`] across the stack switch.
struct BootState {
    args: cmdline::BootArgs<'static>,
    heap_len: usize,
}

/// The rest of the boot, on CPU 0's idle stack: scheduler, secondary CPUs,
/// the first thread, the tick; then this context idles.
extern "C" fn boot_continue(_: usize) -> ! {
    let Some(&BootState { args, heap_len }) = BOOT.get() else {
        panic!("boot state missing");
    };
    heap::stack::exception_stack_init(CpuId::BOOT);
    fault::on_boot_cpu();
    let ncpus = arch::cpu_count().clamp(1, percpu::MAX_CPUS);
    if !provision(CpuId::BOOT) {
        log::error!("percpu: no memory for cpu 0's timer list and call queue");
    }
    let cfg = Arc::new(SchedConfig::new(ncpus as u32, args.hz));
    if let Some(mode) = args.preempt {
        cfg.tunables.set_preempt_mode(mode);
    }
    if let Some(us) = args.idle_poll_us {
        crate::sched::IDLE_POLL_NS.store(us * 1000, Ordering::Relaxed);
    }
    if let Some(on) = args.nohz {
        crate::sched::NOHZ_IDLE.store(on, Ordering::Relaxed);
    }
    if let Some(on) = args.schedstats {
        crate::sched::schedstats::boot_schedstats(on);
    }
    crate::sched::init_sched(cfg, args.cpu_capacity.as_ref().map(|c| c.as_slice()));
    shell::compare::record_boot_state(args.seed.unwrap_or(0));
    if let Some(script) = args.run {
        shell::SCRIPT.call_once(|| script);
    }
    log::info!(
        "sched: EEVDF, hz={}, preempt={}, base slice {} ns, idle poll {} us, nohz {}, heap {} MiB",
        args.hz,
        crate::sched::preempt_mode().name(),
        crate::sched::sched_config().tunables.base_slice_ns(),
        crate::sched::IDLE_POLL_NS.load(Ordering::Relaxed) / 1000,
        if crate::sched::NOHZ_IDLE.load(Ordering::Relaxed) {
            "on"
        } else {
            "off"
        },
        heap_len >> 20
    );
    HZ.store(args.hz, Ordering::Relaxed);
    start_secondaries(ncpus, args.fail_cpu_start);

    let spawned = match args.ktest {
        _ if fault::armed() => {
            fault::start();
            Ok(task::current_tid())
        }
        Some(filter) => {
            let (suite, repeat) = (args.ktest_suite, args.ktest_repeat);
            task::spawn("ktest", TaskParams::default(), move || {
                ktest::run(filter, suite, repeat)
            })
        }
        None => task::spawn("shell", TaskParams::default(), shell::run),
    };
    if let Err(e) = spawned {
        log::error!("kernel: cannot spawn the first thread: {:?}", e);
    }
    // The boot path is over: failing allocations on demand start now.
    if let Some(f) = args.fail_alloc.filter(|f| f.percent > 0) {
        kernel_hal::heap::fail::set(f);
        log::info!(
            "fail_alloc: {f}: allocations that may fail now fail at random ({}%)",
            f.percent
        );
    }
    arch::timer_start(args.hz);
    // Before interrupts come on: the shell may run (and echo) right after.
    let rx_irq = console::rx_start();
    log::info!(
        "console: input {}",
        if rx_irq {
            "interrupt-driven (receive ring)"
        } else {
            "polled (no UART interrupt described)"
        }
    );
    arch::irq_enable();
    crate::sched::cpu_idle()
}

/// The tick rate the secondary CPUs start their timers with.
pub(crate) static HZ: AtomicU32 = AtomicU32::new(250);

/// Starts CPUs `1..ncpus` one after the other and waits until each is online
/// in the scheduler (bounded). `fail_first` (`fail_cpu_start=N`): that CPU's
/// first start is given up at once, so that its second try runs.
fn start_secondaries(ncpus: usize, fail_first: Option<usize>) {
    // A CPU whose start timed out (its vCPU may just not have been scheduled
    // in time on a loaded host: seen at 64 vCPUs on 2 host cores) gets one
    // more try after the others.
    let mut retry = cpumask::CpuMask::new();
    match fail_first {
        Some(n) if n < ncpus => {
            log::info!("smp: fail_cpu_start: cpu {n}'s first start is given up at once")
        }
        Some(n) => {
            log::warn!("smp: fail_cpu_start={n} ignored: no secondary cpu {n} (cpus 0..{ncpus})")
        }
        None => {}
    }
    for cpu in CpuId::range(ncpus).skip(1) {
        let wait_ns = if fail_first == Some(cpu.index()) {
            0
        } else {
            arch::START_TIMEOUT_NS
        };
        match start_one(cpu, wait_ns) {
            Err(StartError::Timeout) => retry.add(cpu),
            Err(StartError::NoMemory) => {
                log::warn!(
                    "smp: cpu {} did not start: {}",
                    cpu,
                    StartError::NoMemory.why()
                )
            }
            // Said where it happened.
            Err(StartError::NotOnline) | Ok(()) => {}
        }
    }
    for cpu in retry.cpus() {
        match start_one(cpu, arch::START_TIMEOUT_NS) {
            Ok(()) => log::info!("smp: cpu {} started on the second try", cpu),
            Err(e) => log::warn!("smp: cpu {} did not start: {}", cpu, e.why()),
        }
    }
    log::info!(
        "smp: {} of {} CPU(s) online (mask {:#x})",
        crate::sched::nr_cpus(),
        ncpus,
        crate::sched::online_mask()
    );
}

/// Why [`start_one`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StartError {
    NoMemory,
    Timeout,
    NotOnline,
}

impl StartError {
    fn why(self) -> &'static str {
        match self {
            StartError::NoMemory => "no memory for its stack, timer list or call queue",
            StartError::Timeout => "it did not come up in time",
            StartError::NotOnline => "it started but did not come online",
        }
    }
}

/// How long [`start_one`] waits, once the arch layer saw the CPU alive, for
/// it to come online in the scheduler (a few microseconds of its own work).
/// The CPU is past the point of no return, and Linux waits for this step
/// without a bound (`bringup_wait_for_ap_online` in `kernel/cpu.c`); here
/// 10 s, the longest arch bring-up wait (x86's), so a vCPU the host
/// deschedules for seconds still counts, and a CPU that died on the way is
/// named instead of hanging the boot.
const ONLINE_WAIT_NS: u64 = 10_000_000_000;

/// Allocates what CPU `cpu` needs beyond its static per-CPU block (its sleep
/// timer list, its cross-call queue), before it is brought up; false when
/// the heap has no room (the CPU is then not started).
fn provision(cpu: CpuId) -> bool {
    percpu::provision(cpu, task::MAX_THREADS) && smp::provision(cpu)
}

/// Starts CPU `cpu`, waiting up to `wait_ns` for the arch layer to see it
/// alive, then until it is online in the scheduler (bounded).
fn start_one(cpu: CpuId, wait_ns: u64) -> Result<(), StartError> {
    if !provision(cpu) {
        return Err(StartError::NoMemory);
    }
    // Never freed: the CPU runs on it forever (also if the start timed out:
    // a late CPU may still use it). From the stack region (guard pages below
    // it) where the arch has one.
    let stack =
        heap::stack::KernelStack::new(task::idle_idx(cpu)).map_err(|_| StartError::NoMemory)?;
    heap::stack::exception_stacks_for(cpu);
    if !stack.start_cpu(cpu, secondary_entry, wait_ns) {
        return Err(StartError::Timeout);
    }
    let t0 = arch::now_ns();
    while !percpu::cpu(cpu).online.load(Ordering::Acquire) {
        if arch::now_ns() - t0 > ONLINE_WAIT_NS {
            log::warn!("smp: cpu {} {}", cpu, StartError::NotOnline.why());
            return Err(StartError::NotOnline);
        }
        arch::cpu_relax();
    }
    Ok(())
}

/// First generic code of a secondary CPU (interrupts disabled, on the stack
/// `start_secondaries` gave it): idle thread, scheduler, tick, idle loop.
extern "C" fn secondary_entry(cpu: CpuId) -> ! {
    fault::on_secondary(cpu, false);
    task::init_idle(cpu);
    fault::on_secondary(cpu, true);
    crate::sched::cpu_online(cpu);
    arch::timer_start(HZ.load(Ordering::Relaxed));
    arch::irq_enable();
    crate::sched::cpu_idle()
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    arch::irq_disable();
    kernel_hal::lockdep::disable();
    console::claim_for_report();
    let (tid, name) = hooks::current_thread();
    console::emergency_write(format_args!(
        "\nKERNEL PANIC on cpu {} in thread '{}' (tid {}): {}\n",
        arch::cpu_id(),
        name,
        tid.map_or(-1, i64::from),
        info
    ));
    ktest::on_panic(info);
    arch::exit_qemu(arch::ExitCode::Failure)
}
