//! Cross-CPU function calls ([`crate::smp`]): a call runs on the CPU it names,
//! with interrupts off; `on_each_cpu` reaches every CPU; back-to-back waited
//! calls lose none; a call that is not waited for still runs; two CPUs
//! calling each other at once do not deadlock; bad targets are refused.
//!
//! Registered with `ktest_smp!` (two CPUs at least; skipped otherwise). The
//! called functions are plain `fn(usize)`, so they report through statics;
//! the runner runs one test at a time, so each test owns them.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use kernel_hal::cpu::CpuId;

use sched::TaskParams;

use crate::cpumask::{only, AtomicCpuMask, CpuMask};
use crate::percpu::MAX_CPUS;
use crate::smp::{self, CallError};
use crate::task;
use crate::{arch, kassert, kassert_eq, kprintln, ktest_smp};

/// Where the last call ran (CPU + 1; 0: not yet).
static RAN_ON: AtomicUsize = AtomicUsize::new(0);
/// The argument of the last call.
static ARG: AtomicUsize = AtomicUsize::new(usize::MAX);
/// A call ran with interrupts enabled.
static IRQS_ON: AtomicBool = AtomicBool::new(false);
/// Calls run, per CPU.
static COUNT: [AtomicU64; MAX_CPUS] = [const { AtomicU64::new(0) }; MAX_CPUS];
/// Bit n: a call ran on CPU n.
static MASK: AtomicCpuMask = AtomicCpuMask::new();

fn reset() {
    RAN_ON.store(0, Ordering::SeqCst);
    ARG.store(usize::MAX, Ordering::SeqCst);
    IRQS_ON.store(false, Ordering::SeqCst);
    MASK.store(&CpuMask::new(), Ordering::SeqCst);
    for c in &COUNT {
        c.store(0, Ordering::SeqCst);
    }
}

/// Records where and how it ran.
fn record(arg: usize) {
    let cpu = arch::cpu_id();
    if arch::irqs_enabled() {
        IRQS_ON.store(true, Ordering::Relaxed);
    }
    RAN_ON.store(cpu.index() + 1, Ordering::Relaxed);
    ARG.store(arg, Ordering::Relaxed);
    COUNT[cpu.index()].fetch_add(1, Ordering::Relaxed);
    MASK.set(cpu, Ordering::Relaxed);
}

/// Online CPUs other than `cpu`.
fn others(cpu: CpuId) -> impl Iterator<Item = CpuId> {
    let online = crate::sched::online_mask();
    online.cpus().filter(move |&c| c != cpu)
}

fn this_cpu() -> CpuId {
    let irq = arch::IrqGuard::save();
    let c = arch::cpu_id();
    drop(irq);
    c
}

ktest_smp!(smp_call_runs_on_target_cpu, 2, || {
    // A waited call to every online CPU in turn runs there, with interrupts
    // off and its argument, before the caller returns; a call to the
    // caller's own CPU runs at once, directly.
    reset();
    let online = crate::sched::online_mask();
    for cpu in online.cpus() {
        RAN_ON.store(0, Ordering::SeqCst);
        smp::call_function_single(cpu, record, 1000 + cpu.index(), true)
            .map_err(|e| alloc::format!("call to cpu {cpu}: {e:?}"))?;
        kassert_eq!(RAN_ON.load(Ordering::SeqCst), cpu.index() + 1);
        kassert_eq!(ARG.load(Ordering::SeqCst), 1000 + cpu.index());
    }
    kassert!(
        !IRQS_ON.load(Ordering::SeqCst),
        "a call ran with interrupts on"
    );
    // Local: runs before the call returns, on this CPU (interrupts off
    // around the check, so this CPU stays this CPU).
    let irq = arch::IrqGuard::save();
    let me = arch::cpu_id();
    RAN_ON.store(0, Ordering::SeqCst);
    let r = smp::call_function_single(me, record, 7, true);
    let ran = RAN_ON.load(Ordering::SeqCst);
    drop(irq);
    kassert_eq!(r, Ok(()));
    kassert_eq!(ran, me.index() + 1);
    Ok(())
});

ktest_smp!(smp_call_many_reaches_every_cpu, 2, || {
    // on_each_cpu runs once on every online CPU (the caller's included);
    // call_function_many with a mask runs exactly on the online CPUs of the
    // mask (offline bits are skipped).
    reset();
    smp::on_each_cpu(record, 1, true).map_err(|e| alloc::format!("on_each_cpu: {e:?}"))?;
    let online = crate::sched::online_mask();
    kassert_eq!(MASK.load(Ordering::SeqCst), online);
    for (c, count) in COUNT.iter().enumerate() {
        let want = u64::from(online.test(c));
        kassert_eq!(count.load(Ordering::SeqCst), want);
    }
    kassert!(
        !IRQS_ON.load(Ordering::SeqCst),
        "a call ran with interrupts on"
    );
    // Every other online CPU, plus every CPU that is not online.
    let me = this_cpu();
    let mask = CpuMask::all().and_not(&only(me));
    reset();
    smp::call_function_many(&mask, record, 2, true)
        .map_err(|e| alloc::format!("call_function_many: {e:?}"))?;
    let ran = MASK.load(Ordering::SeqCst);
    // Had the caller migrated after choosing the mask, its new CPU would run
    // the call locally: either way exactly the mask's online CPUs ran it.
    kassert_eq!(ran, online.and(&mask));
    Ok(())
});

ktest_smp!(smp_call_back_to_back_loses_none, 2, || {
    // 1000 waited calls in a row to one other CPU: each ran there before the
    // next was queued (the count matches at every step), none is lost.
    const N: u64 = 1000;
    reset();
    let me = this_cpu();
    let target = others(me).next().ok_or("no other CPU")?;
    let (ipis0, calls0) = smp::call_stats(target);
    let t0 = arch::now_ns();
    for i in 0..N {
        smp::call_function_single(target, record, i as usize, true)
            .map_err(|e| alloc::format!("call {i}: {e:?}"))?;
        let n = COUNT[target.index()].load(Ordering::SeqCst);
        kassert!(
            n == i + 1,
            "after call {} cpu {} ran {} calls",
            i,
            target,
            n
        );
        kassert_eq!(ARG.load(Ordering::SeqCst), i as usize);
    }
    let dt = arch::now_ns() - t0;
    let (ipis, calls) = smp::call_stats(target);
    kprintln!(
        "    {} waited calls to cpu {}: {} ns each, {} call IPIs, {} calls run there",
        N,
        target,
        dt / N,
        ipis - ipis0,
        calls - calls0
    );
    kassert_eq!(COUNT[target.index()].load(Ordering::SeqCst), N);
    Ok(())
});

ktest_smp!(smp_call_nowait_completes, 2, || {
    // Calls not waited for: queued back to back (more than a ring holds, so
    // the caller also waits for room), each runs eventually, in order.
    const N: u64 = 3 * smp::QUEUE_LEN as u64;
    reset();
    let me = this_cpu();
    let target = others(me).next().ok_or("no other CPU")?;
    for i in 0..N {
        smp::call_function_single(target, record, i as usize, false)
            .map_err(|e| alloc::format!("call {i}: {e:?}"))?;
    }
    super::wait_progress(
        "calls run",
        0,
        || COUNT[target.index()].load(Ordering::SeqCst) >= N,
        || COUNT[target.index()].load(Ordering::SeqCst),
    )?;
    kassert_eq!(ARG.load(Ordering::SeqCst), (N - 1) as usize);
    kassert_eq!(RAN_ON.load(Ordering::SeqCst), target.index() + 1);
    Ok(())
});

ktest_smp!(smp_call_crosswise_no_deadlock, 2, || {
    // Two threads on two CPUs call each other at the same time, 500 waited
    // calls each: each one's IPI handler runs the other's calls while it
    // waits itself.
    const N: u64 = 500;
    reset();
    let n = crate::sched::nr_cpus();
    let cpu = |i| CpuId::new(i).ok_or("no such CPU");
    let (ca, cb) = (cpu(n - 1)?, cpu(n - 2)?);
    let spawn = |name: &'static str, from: CpuId, to: CpuId| {
        task::spawn_on(name, TaskParams::default(), only(from), move || {
            for i in 0..N {
                if let Err(e) = smp::call_function_single(to, record, i as usize, true) {
                    kprintln!("    {} -> {}: call {}: {:?}", from, to, i, e);
                    return;
                }
            }
        })
        .map_err(|e| alloc::format!("spawn: {e:?}"))
    };
    let ta = spawn("call-a", ca, cb)?;
    let tb = spawn("call-b", cb, ca)?;
    super::wait_progress(
        "crosswise calls",
        5,
        || task::has_exited(ta) && task::has_exited(tb),
        || COUNT[ca.index()].load(Ordering::SeqCst) + COUNT[cb.index()].load(Ordering::SeqCst),
    )?;
    task::join(ta).map_err(|e| alloc::format!("{e:?}"))?;
    task::join(tb).map_err(|e| alloc::format!("{e:?}"))?;
    kassert_eq!(COUNT[ca.index()].load(Ordering::SeqCst), N);
    kassert_eq!(COUNT[cb.index()].load(Ordering::SeqCst), N);
    Ok(())
});

ktest_smp!(smp_call_refuses_bad_targets, 2, || {
    // Offline CPUs are errors (nothing runs; a CPU number out of range is
    // not a `CpuId`); waiting for another CPU with interrupts off is
    // refused.
    reset();
    let online = crate::sched::online_mask();
    let bad: Vec<CpuId> = CpuId::range(MAX_CPUS).filter(|&c| !online.has(c)).collect();
    for &c in &bad {
        kassert_eq!(
            smp::call_function_single(c, record, 0, true),
            Err(CallError::Offline(c))
        );
        kassert_eq!(
            smp::call_function_single(c, record, 0, false),
            Err(CallError::Offline(c))
        );
    }
    let irq = arch::IrqGuard::save();
    let me = arch::cpu_id();
    let other = others(me).next();
    let r = other.map(|c| smp::call_function_single(c, record, 0, true));
    let r_many = smp::on_each_cpu(record, 0, true);
    drop(irq);
    kassert_eq!(r, Some(Err(CallError::IrqsDisabled)));
    kassert_eq!(r_many, Err(CallError::IrqsDisabled));
    kassert_eq!(MASK.load(Ordering::SeqCst), CpuMask::new());
    Ok(())
});
