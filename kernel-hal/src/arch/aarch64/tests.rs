//! The aarch64 layer's in-kernel tests, in one module the arch exposes
//! (`arch::tests`) rather than inside the files they test: the MMU and
//! caches on every CPU, and the secondary CPUs' guarded bootstrap stacks.
//! They reach the arch's private items through `pub(super)`.

use core::sync::atomic::Ordering;

use super::{mmu, smp};

crate::ktest_smp!(aarch64_mmu_and_cache_on_every_cpu, 1, || {
    let online = crate::hooks::online_mask();
    let on = mmu::cpus_on();
    crate::kassert!(mmu::enabled(), "this CPU runs with the MMU or D-cache off");
    crate::kassert!(
        online.is_subset(&on),
        "CPUs online {online:#x}, with MMU and cache on {on:#x}"
    );
    // RAM is Normal memory: an unaligned load works (it faults on Device).
    let buf = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
    let p = core::hint::black_box(buf.as_ptr()).wrapping_add(1) as *const u64;
    let v: u64;
    // SAFETY: bytes 1..9 of `buf` are in bounds and initialised; the load is
    // deliberately unaligned (Rust code is built +strict-align, so use asm).
    unsafe { core::arch::asm!("ldr {v}, [{p}]", v = out(reg) v, p = in(reg) p) };
    crate::kassert!(
        v == u64::from_le_bytes([2, 3, 4, 5, 6, 7, 8, 9]),
        "read {v:#x}"
    );
    Ok(())
});

// Every secondary CPU started on a bootstrap stack from the stack region,
// whose guard names that CPU's bring-up (not an unguarded heap block).
crate::ktest_smp!(aarch64_bootstrap_stacks_have_guards, 2, || {
    let online = crate::hooks::online_mask();
    for cpu in online.cpus().filter(|&c| c != crate::cpu::CpuId::BOOT) {
        let top = smp::BOOTSTRAP_TOPS[cpu.index()].load(Ordering::Relaxed);
        crate::kassert!(top != 0, "cpu {cpu} has no bootstrap stack");
        let below = top - crate::heap::STACK_SIZE - 8;
        let owner = crate::hooks::stack_guard_owner(crate::addr::VirtAddr::new(below));
        crate::kassert!(
            matches!(owner, Some(crate::hooks::StackOwner::Bringup(c)) if c == cpu),
            "cpu {cpu}'s bootstrap stack (top {top:#x}) has no guard naming its bring-up"
        );
    }
    Ok(())
});
