//! The x86_64 layer's in-kernel tests, in one module the arch exposes
//! (`arch::tests`) rather than inside the files they test: the AP
//! trampoline's page, which CPUs xAPIC mode can reach, and MADT parsing.
//! They reach the arch's private helpers through `pub(super)` items.

use super::{acpi, apic, lowmem, smp};
use crate::addr::PhysAddr;
use crate::cpu::CpuId;

crate::ktest!(x86_ap_trampoline_page_from_memory_map, || {
    let r = |start: usize, len: usize| boot::MemRegion { start, len };
    // QEMU's map: low RAM up to the EBDA, then RAM from 1 MiB.
    crate::kassert_eq!(
        lowmem::trampoline_page(&[r(0, 0x9fc00), r(0x10_0000, 0x7ee_0000)]),
        Some(PhysAddr::new(0x8000))
    );
    // 0x8000 not RAM: the highest usable page below 1 MiB, whole and aligned.
    crate::kassert_eq!(
        lowmem::trampoline_page(&[r(0, 0x8000), r(0x1_0000, 0x8_fc00), r(0x10_0000, 1 << 30)]),
        Some(PhysAddr::new(0x9e000))
    );
    // Only page 0 usable below 1 MiB: none (the IVT lives there).
    crate::kassert_eq!(
        lowmem::trampoline_page(&[r(0, 0x1000), r(0x10_0000, 1 << 30)]),
        None
    );
    // A range ending below a whole page, or none below 1 MiB: none.
    crate::kassert_eq!(
        lowmem::trampoline_page(&[r(0x2_0800, 0x1000), r(0x10_0000, 1 << 30)]),
        None
    );
    crate::kassert_eq!(lowmem::trampoline_page(&[r(0x10_0000, 1 << 30)]), None);
    crate::kassert_eq!(lowmem::trampoline_page(&[]), None);
    // A range straddling 1 MiB gives its last page below 1 MiB.
    crate::kassert_eq!(
        lowmem::trampoline_page(&[r(0xf_0000, 0x2_0000)]),
        Some(PhysAddr::new(0xf_f000))
    );
    Ok(())
});

crate::ktest!(x86_apic_ids_above_254_need_x2apic, || {
    crate::kassert!(smp::reachable(1, 0, false) && smp::reachable(1, 254, false));
    crate::kassert!(!smp::reachable(1, 255, false) && !smp::reachable(3, 300, false));
    crate::kassert!(smp::reachable(1, 255, true) && smp::reachable(1, 100_000, true));
    crate::kassert!(
        smp::reachable(0, 300, false),
        "the boot CPU is never dropped"
    );
    crate::kassert!(
        apic::x2apic()
            || smp::cpu_count() == 1
            || CpuId::range(smp::cpu_count())
                .skip(1)
                .all(|c| smp::apic_id_of(c).is_some_and(|id| id <= apic::XAPIC_MAX_ID))
    );
    Ok(())
});

crate::ktest!(x86_madt_starts_enabled_cpus_only, || {
    // A MADT body (the header is not read by `parse_madt`): the boot CPU,
    // an enabled CPU, an online-capable slot, a disabled entry, an enabled
    // x2APIC CPU, the enabled CPU again, and an online-capable x2APIC slot.
    let mut t = alloc::vec![0u8; acpi::MADT_ENTRIES_OFFSET];
    let lapic = |t: &mut alloc::vec::Vec<u8>, id: u8, flags: u32| {
        t.extend_from_slice(&[acpi::MADT_LOCAL_APIC, 8, id, id]);
        t.extend_from_slice(&flags.to_le_bytes());
    };
    let x2apic = |t: &mut alloc::vec::Vec<u8>, id: u32, flags: u32| {
        t.extend_from_slice(&[acpi::MADT_LOCAL_X2APIC, 16, 0, 0]);
        t.extend_from_slice(&id.to_le_bytes());
        t.extend_from_slice(&flags.to_le_bytes());
        t.extend_from_slice(&id.to_le_bytes());
    };
    lapic(&mut t, 0, acpi::MADT_ENABLED);
    lapic(&mut t, 1, acpi::MADT_ENABLED);
    lapic(&mut t, 2, acpi::MADT_ONLINE_CAPABLE);
    lapic(&mut t, 3, 0);
    x2apic(&mut t, 300, acpi::MADT_ENABLED);
    lapic(&mut t, 1, acpi::MADT_ENABLED);
    x2apic(&mut t, 301, acpi::MADT_ONLINE_CAPABLE);
    let Some(at) = crate::addr::VirtAddr::from_ptr(t.as_ptr()).identity_phys() else {
        return Err("the heap is not identity-mapped".into());
    };
    // SAFETY: `t` is a live buffer of `t.len()` bytes, read only.
    let cpus = unsafe { acpi::parse_madt(at, t.len(), 0) };
    crate::kassert_eq!(&cpus.apic_ids[..cpus.len], &[0, 1, 300][..]);
    crate::kassert_eq!(cpus.hotplug, 2);
    crate::kassert_eq!(cpus.dropped, 0);
    Ok(())
});
