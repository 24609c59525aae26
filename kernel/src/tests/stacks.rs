//! The kernel stacks (`kernel_hal::stack`) with the kernel's threads:
//! every CPU's exception stacks sit in the guarded region, and freed stack
//! slots are recycled through the all-CPU TLB flush the kernel gives the
//! allocator (`task::init`).

use core::sync::atomic::Ordering;
use kernel_hal::cpu::CpuId;

use crate::arch;
use crate::heap::stack;

// Every exception stack of every CPU (x86_64: #DF/#PF, NMI and machine
// check; aarch64: the emergency stack) sits in the region with an unmapped
// guard below it that names that CPU's exception owner, so an overflow of
// any of them faults into a guard and the report says whose stack it was.
// The test visits each online CPU in turn (secondary CPUs got theirs
// before they started, the boot CPU once the region existed).
crate::ktest!(exception_stacks_have_guards, || {
    crate::kassert!(stack::guarded(), "no guarded stack region");
    let me = crate::task::current_tid();
    let online = crate::sched::online_mask();
    let mut visited = 0;
    let mut result = Ok(());
    for cpu in online.cpus() {
        if let Err(e) = crate::sched::set_affinity(me, crate::cpumask::only(cpu)) {
            result = Err(alloc::format!("cannot move to cpu {cpu}: {e:?}"));
            break;
        }
        crate::sched::yield_now();
        result = exception_stacks_here_guarded(cpu);
        if result.is_err() {
            break;
        }
        visited += 1;
    }
    let _ = crate::sched::set_affinity(me, online);
    result?;
    crate::kassert_eq!(visited, online.weight());
    Ok(())
});

/// The check of `exception_stacks_have_guards` on this CPU, which must be
/// `cpu`.
fn exception_stacks_here_guarded(cpu: CpuId) -> Result<(), alloc::string::String> {
    let irqs_off = arch::IrqGuard::save();
    let here = arch::cpu_id();
    let tops = arch::exception_stack_tops();
    drop(irqs_off);
    crate::kassert_eq!(here, cpu);
    for (i, &top) in tops.iter().enumerate() {
        let bottom = stack::stack_bottom_of(top - 8);
        crate::kassert!(
            bottom.is_some(),
            "cpu {cpu}: exception stack {i} (top {top:#x}) is not in the region"
        );
        let bottom = bottom.unwrap_or_default();
        crate::kassert_eq!(top, bottom + stack::STACK_SIZE);
        crate::kassert_eq!(
            stack::guard_owner(bottom - 8),
            Some(Some(stack::EXCEPTION_OWNER + cpu.as_u32()))
        );
        crate::kassert_eq!(
            stack::exception_stack_cpu(stack::EXCEPTION_OWNER + cpu.as_u32()),
            Some(cpu)
        );
    }
    Ok(())
}

// More spawns and joins than the region has slots: freed slots must be
// recycled through the all-CPU TLB flush (a cross-CPU call to every online
// CPU), and every thread must run on a region stack whose guard names it.
// The threads stay on the test's CPU: a wakeup of an idle vCPU costs about
// 1 ms under TCG, which would make 8000 of them last seconds.
crate::ktest_smp!(stack_slots_recycled_after_tlb_flush_on_every_cpu, 1, || {
    use core::sync::atomic::AtomicBool;
    crate::kassert!(
        stack::guarded(),
        "no stack region: stacks have no guard pages"
    );
    let slots = stack::region_slots();
    let flushes = stack::tlb_flushes();
    let n = slots + 64;
    let t0 = arch::now_ns();
    for i in 0..n {
        let ok = alloc::sync::Arc::new(AtomicBool::new(false));
        let seen = ok.clone();
        let here = crate::cpumask::only(arch::cpu_id());
        let tid =
            crate::task::spawn_on("stackslot", sched::TaskParams::default(), here, move || {
                let local = 0u64;
                let sp = kernel_hal::addr::VirtAddr::new(
                    core::hint::black_box(core::ptr::addr_of!(local)) as usize,
                );
                let me = crate::task::current_idx();
                let good = stack::stack_bottom_of(sp).is_some_and(|b| {
                    stack::guard_owner(b - 8) == Some(Some(me)) && stack::guard_owner(b).is_none()
                });
                seen.store(good, Ordering::Release);
            })
            .map_err(|e| alloc::format!("spawn {i} of {n}: {e:?}"))?;
        crate::task::join(tid).map_err(|e| alloc::format!("join {i}: {e:?}"))?;
        crate::kassert!(
            ok.load(Ordering::Acquire),
            "thread {i}: its stack is not in a region slot whose guard names it"
        );
    }
    let per_ns = (arch::now_ns() - t0) / n as u64;
    let done = stack::tlb_flushes() - flushes;
    log::info!("stack: {n} spawn+join of region stacks, {per_ns} ns each, {done} TLB flush(es)");
    crate::kassert!(
        done >= 1,
        "{n} stacks over {slots} slots and no flush recycled any"
    );
    Ok(())
});
