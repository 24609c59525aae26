//! The aarch64 layer's in-kernel tests, in one module the arch exposes
//! (`arch::tests`) rather than inside the files they test: the MMU and
//! caches on every CPU, the secondary CPUs' guarded bootstrap stacks, and
//! the `memcpy` of `mem`.
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

// The arch's `memcpy` (`mem`) against a byte loop: every length up to 200
// and a few longer ones (the 312-byte task state, 64-byte blocks with every
// tail), from and to every offset 0..8 (both aligned, one, neither), with
// guard bytes around the destination that must stay untouched.
crate::ktest!(aarch64_memcpy_every_length_and_alignment, || {
    extern "C" {
        fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8;
    }
    const MAX: usize = 520;
    const GUARD: usize = 16;
    let mut src = alloc::vec![0u8; MAX + 8];
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(31).wrapping_add(7);
    }
    let mut dst = alloc::vec![0u8; MAX + 8 + 2 * GUARD];
    let lens = (0..=200).chain([255, 256, 257, 312, 319, 320, 383, 448, 511, 512, 513]);
    for n in lens {
        for so in 0..8 {
            for d in 0..8 {
                dst.fill(0xa5);
                let (s, t) = (&src[so..so + n], GUARD + d);
                // SAFETY: `n` bytes from `src[so..]` into `dst[t..]`, both in
                // bounds (so + n <= MAX + 8, t + n + GUARD <= dst.len()),
                // separate allocations.
                let ret = unsafe { memcpy(dst.as_mut_ptr().add(t), s.as_ptr(), n) };
                crate::kassert!(
                    ret == dst.as_mut_ptr().wrapping_add(t),
                    "n {n} src+{so} dst+{d}: returned another pointer"
                );
                crate::kassert!(
                    &dst[t..t + n] == s,
                    "n {n} src+{so} dst+{d}: copied wrongly"
                );
                let outside = dst[..t].iter().chain(&dst[t + n..]).all(|&b| b == 0xa5);
                crate::kassert!(
                    outside,
                    "n {n} src+{so} dst+{d}: wrote outside the destination"
                );
            }
        }
    }
    Ok(())
});
