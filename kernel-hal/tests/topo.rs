//! Host tests of `kernel_hal::topo`: APIC ids split into core and
//! last-level-cache ids as x86's CPUID leaves describe them (the module is
//! included by path: the crate itself links only into a kernel).

#[path = "../src/topo.rs"]
mod topo;

use topo::{log2_ceil, TopoIds, X86Shifts};

#[test]
fn log2_ceil_rounds_up() {
    let want = [
        (0, 0),
        (1, 0),
        (2, 1),
        (3, 2),
        (4, 2),
        (5, 3),
        (16, 4),
        (17, 5),
        (4096, 12),
    ];
    for (n, k) in want {
        assert_eq!(log2_ceil(n), k, "{n}");
    }
    assert_eq!(log2_ceil(u32::MAX), 32);
}

#[test]
fn apic_ids_split_into_cores_and_caches() {
    // A 2-socket machine of 8 cores x 2 threads per socket, the L3 shared by
    // the socket (16 logical CPUs): SMT 1 bit, package 4 bits, L3 4 bits.
    let s = X86Shifts::new(1, 4, Some(16));
    assert_eq!((s.smt_shift, s.llc_shift, s.pkg_shift), (1, 4, 4));
    assert_eq!(s.ids(0), TopoIds { core: 0, llc: 0 });
    assert_eq!(s.ids(1), TopoIds { core: 0, llc: 0 }, "thread 1 of core 0");
    assert_eq!(s.ids(2), TopoIds { core: 1, llc: 0 });
    assert_eq!(s.ids(15), TopoIds { core: 7, llc: 0 });
    assert_eq!(s.ids(16), TopoIds { core: 8, llc: 1 }, "the second socket");
    // AMD-like: 16 cores a package, an L3 per 8-core CCX (16 CPUs with SMT)
    // in a 5-bit package: two LLCs a package.
    let s = X86Shifts::new(1, 5, Some(16));
    assert_eq!(s.ids(15).llc, 0);
    assert_eq!(s.ids(16).llc, 1);
    assert_eq!(s.ids(31).llc, 1);
    assert_eq!(s.ids(32).llc, 2);
    // A sharing count that is not a power of two rounds up (12 CPUs: 4 bits).
    assert_eq!(X86Shifts::new(1, 5, Some(12)).llc_shift, 4);
}

#[test]
fn the_cache_stays_between_the_core_and_the_package() {
    // No cache leaf: the package is the LLC.
    assert_eq!(X86Shifts::new(1, 3, None).llc_shift, 3);
    // A cache shared by 1 CPU on an SMT core: the core's (never below it).
    assert_eq!(X86Shifts::new(1, 3, Some(1)).llc_shift, 1);
    // One shared by more CPUs than a package holds: the package's.
    assert_eq!(X86Shifts::new(0, 2, Some(64)).llc_shift, 2);
    // A package shift below the SMT shift (bad firmware) is raised to it.
    let s = X86Shifts::new(2, 1, Some(4));
    assert_eq!((s.smt_shift, s.llc_shift, s.pkg_shift), (2, 2, 2));
    // Out-of-range fields stay within a u32's bits.
    let s = X86Shifts::new(40, 40, Some(u32::MAX));
    assert_eq!((s.smt_shift, s.pkg_shift), (31, 31));
    assert_eq!(s.ids(u32::MAX), TopoIds { core: 1, llc: 1 });
}
