//! Device tree discovery: what the rest of the arch layer needs, copied out of the
//! DTB into a small `Copy` description, plus the free-RAM computation for the heap.
//!
//! The DTB stays where the loader put it (we never write to it); [`heap_region`]
//! keeps it, the kernel image and every reserved range out of the heap.

use aarch64_cpu::registers::{Readable, MPIDR_EL1};
use fdt::Fdt;

use super::cpu::MPIDR_AFF_MASK;
use crate::addr::PhysAddr;
use crate::arch::MAX_CPUS;
use crate::topo::TopoIds;

/// Which GIC the platform has, with its MMIO bases (physical = virtual: identity map).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GicKind {
    /// GICv2: distributor and CPU interface (memory mapped).
    V2 {
        /// GICD base.
        gicd: PhysAddr,
        /// GICC base.
        gicc: PhysAddr,
    },
    /// GICv3: distributor and the first redistributor region; the CPU interface is
    /// accessed through `ICC_*_EL1` system registers.
    V3 {
        /// GICD base.
        gicd: PhysAddr,
        /// Base of the (first) redistributor region.
        gicr: PhysAddr,
        /// Length of that region in bytes.
        gicr_len: usize,
    },
}

/// How PSCI calls reach the firmware / hypervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PsciConduit {
    /// `hvc #0` (QEMU virt at EL1: QEMU emulates EL2 firmware).
    Hvc,
    /// `smc #0` (EL3 firmware, or QEMU with `virtualization=on`).
    Smc,
}

/// The platform as far as the arch layer cares.
#[derive(Clone, Copy, Debug)]
pub struct Platform {
    /// PL011 MMIO base, from `/chosen/stdout-path` or the first `arm,pl011`.
    pub uart_base: Option<PhysAddr>,
    /// The PL011's interrupt (an SPI: 32 + the DT number), if the node names one.
    pub uart_intid: Option<u32>,
    /// The interrupt controller.
    pub gic: GicKind,
    /// INTID of the EL1 virtual timer (a PPI: 16 + the DT number; 27 on QEMU).
    pub timer_intid: u32,
    /// PSCI conduit from `/psci` `method`, if there is PSCI.
    pub psci: Option<PsciConduit>,
    /// The CPUs this kernel can run on, as `MPIDR_EL1` affinity values (Aff3..Aff0,
    /// the DTB `/cpus/cpu@*` `reg`), in device-tree order: the boot CPU and every
    /// CPU with `enable-method = "psci"` (when there is PSCI), at most
    /// [`MAX_CPUS`]. Only `cpus[..nr_cpus]` is valid.
    pub cpus: [u64; MAX_CPUS],
    /// How many entries of `cpus` are valid (at least 1: the boot CPU).
    pub nr_cpus: usize,
    /// Each CPU's `capacity-dmips-mhz` (index as `cpus`; 0: the node has
    /// none), Linux's relative performance of a big.LITTLE core
    /// (Documentation/devicetree/bindings/cpu/cpu-capacity.txt).
    pub capacity_dmips_mhz: [u32; MAX_CPUS],
    /// Each CPU's core and last-level cache ids from `/cpus/cpu-map`
    /// (index as `cpus`; `None`: not in a map), see [`cpu_map`].
    pub topo: [Option<TopoIds>; MAX_CPUS],
    /// Usable CPUs beyond [`MAX_CPUS`], ignored (reported at boot, never
    /// dropped silently).
    pub cpus_ignored: usize,
}

/// The architectural default INTID of the EL1 virtual timer (PPI 11).
const DEFAULT_VTIMER_INTID: u32 = 27;

/// Parses the DTB handed over by the boot code.
fn fdt(info: &boot::BootInfo) -> Fdt<'static> {
    let dtb = info
        .dtb
        .expect("aarch64: no device tree (x0 was not a DTB)");
    // SAFETY: the boot code checked the FDT magic at `dtb`; the blob lives in RAM
    // that nothing writes to (heap_region excludes it) for the kernel's lifetime.
    unsafe { Fdt::from_ptr(dtb as *const u8) }.expect("aarch64: malformed device tree")
}

/// A device tree `reg` address as a physical address (`None` beyond 52
/// bits, which no device can be at).
fn reg_addr(r: &fdt::standard_nodes::MemoryRegion) -> Option<PhysAddr> {
    PhysAddr::try_new(r.starting_address as usize)
}

/// First `reg` entry of `node` as (address, size).
fn first_reg(node: fdt::node::FdtNode) -> Option<(PhysAddr, usize)> {
    let r = node.reg()?.next()?;
    Some((reg_addr(&r)?, r.size.unwrap_or(0)))
}

/// Reads the platform description from the device tree. Panics if the DTB is
/// missing or names no supported interrupt controller.
pub fn discover(info: &boot::BootInfo) -> Platform {
    let fdt = fdt(info);

    let stdout = fdt.chosen().stdout().or_else(|| {
        // `stdout-path` may carry options ("serial0:115200n8") or be an alias.
        let path = fdt
            .find_node("/chosen")?
            .property("stdout-path")?
            .as_str()?;
        let path = path.split(':').next()?;
        fdt.find_node(path)
            .or_else(|| fdt.aliases()?.resolve_node(path))
    });
    let uart = stdout
        .filter(|n| {
            n.compatible()
                .is_some_and(|c| c.all().any(|s| s == "arm,pl011"))
        })
        .or_else(|| fdt.find_compatible(&["arm,pl011"]));
    let uart_base = uart.and_then(first_reg).map(|(base, _)| base);
    // `interrupts = <GIC_SPI num flags>` (three cells under a GIC parent).
    let uart_intid = uart.and_then(|n| n.property("interrupts")).and_then(|p| {
        let cell = |i: usize| -> Option<u32> {
            Some(u32::from_be_bytes(
                p.value.get(i * 4..i * 4 + 4)?.try_into().ok()?,
            ))
        };
        const GIC_SPI: u32 = 0;
        match (cell(0)?, cell(1)?) {
            (GIC_SPI, num) if num < 988 => Some(32 + num),
            _ => None,
        }
    });

    let gic = if let Some(node) = fdt.find_compatible(&["arm,gic-v3"]) {
        let mut regs = node.reg().expect("GICv3 node without reg");
        let gicd = regs
            .next()
            .and_then(|r| reg_addr(&r))
            .expect("GICv3 without GICD");
        let r = regs.next().expect("GICv3 without GICR");
        GicKind::V3 {
            gicd,
            gicr: reg_addr(&r).expect("GICv3 GICR beyond 52 bits"),
            gicr_len: r.size.unwrap_or(0),
        }
    } else if let Some(node) = fdt.find_compatible(&[
        "arm,gic-400",
        "arm,cortex-a15-gic",
        "arm,cortex-a9-gic",
        "arm,cortex-a7-gic",
    ]) {
        let mut regs = node.reg().expect("GICv2 node without reg");
        let gicd = regs
            .next()
            .and_then(|r| reg_addr(&r))
            .expect("GICv2 without GICD");
        let gicc = regs
            .next()
            .and_then(|r| reg_addr(&r))
            .expect("GICv2 without GICC");
        GicKind::V2 { gicd, gicc }
    } else {
        panic!("aarch64: the device tree names no supported GIC (v2 or v3)");
    };

    let psci = psci_conduit(&fdt);
    let (cpus, capacity_dmips_mhz, nr_cpus, cpus_ignored) = cpu_list(&fdt, psci.is_some());
    let topo = cpu_map(&fdt, &cpus[..nr_cpus]);
    Platform {
        uart_base,
        uart_intid,
        gic,
        timer_intid: vtimer_intid(&fdt),
        psci,
        cpus,
        nr_cpus,
        capacity_dmips_mhz,
        topo,
        cpus_ignored,
    }
}

/// The CPUs of `/cpus` (nodes with `device_type = "cpu"`) that we can use: the
/// boot CPU (the one running this, found by `MPIDR_EL1`) always, the others when
/// they are started through PSCI (`enable-method = "psci"`) and `have_psci`.
/// A CPU whose `status` is `"fail"` is skipped. The boot CPU is always in the
/// list, even if the device tree lacks it or more than [`MAX_CPUS`] CPUs come
/// first; the list is cut at [`MAX_CPUS`]. With each CPU's
/// `capacity-dmips-mhz` (0 where its node has none), the count, and how
/// many were cut.
fn cpu_list(fdt: &Fdt, have_psci: bool) -> ([u64; MAX_CPUS], [u32; MAX_CPUS], usize, usize) {
    let boot = MPIDR_EL1.get() & MPIDR_AFF_MASK;
    let mut cpus = [0u64; MAX_CPUS];
    let mut caps = [0u32; MAX_CPUS];
    cpus[0] = boot;
    let mut n = 1;
    let mut ignored = 0;
    let Some(node) = fdt.find_node("/cpus") else {
        return (cpus, caps, n, ignored);
    };
    let addr_cells = node
        .property("#address-cells")
        .and_then(|p| p.as_usize())
        .unwrap_or(1);
    for child in node.children() {
        if child.property("device_type").and_then(|p| p.as_str()) != Some("cpu") {
            continue;
        }
        if child.property("status").and_then(|p| p.as_str()) == Some("fail") {
            continue;
        }
        // `reg` is the MPIDR affinity in #address-cells cells (1 or 2), no size.
        let Some(reg) = child.property("reg").map(|p| p.value) else {
            continue;
        };
        let mpidr = match (addr_cells, reg.len()) {
            (1, 4) => u64::from(u32::from_be_bytes([reg[0], reg[1], reg[2], reg[3]])),
            (2, 8) => u64::from_be_bytes([
                reg[0], reg[1], reg[2], reg[3], reg[4], reg[5], reg[6], reg[7],
            ]),
            _ => continue,
        } & MPIDR_AFF_MASK;
        let cap = child
            .property("capacity-dmips-mhz")
            .and_then(|p| p.as_usize())
            .map_or(0, |c| u32::try_from(c).unwrap_or(u32::MAX));
        if mpidr == boot {
            caps[0] = cap;
            continue;
        }
        let psci = child.property("enable-method").and_then(|p| p.as_str()) == Some("psci");
        if !(psci && have_psci) || cpus[..n].contains(&mpidr) {
            continue;
        }
        if n < MAX_CPUS {
            cpus[n] = mpidr;
            caps[n] = cap;
            n += 1;
        } else {
            ignored += 1;
        }
    }
    (cpus, caps, n, ignored)
}

/// The `reg` (MPIDR affinity) of the `/cpus` node whose `phandle` is
/// `phandle`.
fn mpidr_of_phandle(fdt: &Fdt, phandle: u32) -> Option<u64> {
    let node = fdt.find_phandle(phandle)?;
    let reg = node.property("reg")?.value;
    let v = match reg.len() {
        4 => u64::from(u32::from_be_bytes(reg.try_into().ok()?)),
        8 => u64::from_be_bytes(reg.try_into().ok()?),
        _ => return None,
    };
    Some(v & MPIDR_AFF_MASK)
}

/// Core and last-level cache ids of `cpus` (MPIDRs) from the devicetree's
/// `/cpus/cpu-map` (Documentation/devicetree/bindings/cpu/cpu-topology.txt):
/// `socketN` > `clusterN` (nested or not) > `coreN` > `threadN`, the leaves
/// naming their CPU by phandle (`cpu`). The threads of one core node share
/// its core id; the last-level cache is the socket (the whole map when it
/// has no socket nodes): without cache nodes Linux's `cpu_coregroup_mask`
/// falls back to the package too. A CPU the map does not name gets `None`.
fn cpu_map(fdt: &Fdt, cpus: &[u64]) -> [Option<TopoIds>; MAX_CPUS] {
    let mut out = [None; MAX_CPUS];
    let Some(map) = fdt.find_node("/cpus/cpu-map") else {
        return out;
    };
    let mut next_core = 0u32;
    let mut put = |phandle: Option<u32>, core: u32, llc: u32| {
        let Some(mpidr) = phandle.and_then(|p| mpidr_of_phandle(fdt, p)) else {
            return;
        };
        if let Some(i) = cpus.iter().position(|&m| m == mpidr) {
            out[i] = Some(TopoIds { core, llc });
        }
    };
    let cpu_of = |n: fdt::node::FdtNode| {
        n.property("cpu")
            .and_then(|p| p.as_usize())
            .and_then(|p| u32::try_from(p).ok())
    };
    // Depth-first, iteratively: (node, socket id) pairs, at most 4 levels of
    // clusters nested.
    let has_sockets = map.children().any(|c| c.name.starts_with("socket"));
    let mut stack: [Option<(fdt::node::FdtNode, u32)>; 64] = [None; 64];
    let mut top = 0;
    for (i, child) in map.children().enumerate() {
        let socket = if has_sockets { i as u32 } else { 0 };
        if top < stack.len() {
            stack[top] = Some((child, socket));
            top += 1;
        }
    }
    while top > 0 {
        top -= 1;
        let Some((node, socket)) = stack[top].take() else {
            continue;
        };
        if node.name.starts_with("core") {
            let core = next_core;
            next_core += 1;
            let mut threads = false;
            for t in node.children().filter(|t| t.name.starts_with("thread")) {
                threads = true;
                put(cpu_of(t), core, socket);
            }
            if !threads {
                put(cpu_of(node), core, socket);
            }
        } else {
            for child in node.children() {
                if top < stack.len() {
                    stack[top] = Some((child, socket));
                    top += 1;
                }
            }
        }
    }
    out
}

/// INTID of the EL1 virtual timer from the `arm,armv8-timer` node: its
/// `interrupts` list is (secure phys, non-secure phys, virtual, hypervisor), each
/// three cells (type, number, flags) for a GIC; the PPI number is offset by 16.
fn vtimer_intid(fdt: &Fdt) -> u32 {
    let cells = fdt
        .find_compatible(&["arm,armv8-timer", "arm,armv7-timer"])
        .and_then(|n| n.property("interrupts"))
        .map(|p| p.value);
    let Some(cells) = cells else {
        return DEFAULT_VTIMER_INTID;
    };
    let cell = |i: usize| -> Option<u32> {
        Some(u32::from_be_bytes(
            cells.get(i * 4..i * 4 + 4)?.try_into().ok()?,
        ))
    };
    const GIC_PPI: u32 = 1;
    match (cell(6), cell(7)) {
        (Some(GIC_PPI), Some(num)) if num < 16 => 16 + num,
        _ => DEFAULT_VTIMER_INTID,
    }
}

/// The PSCI conduit named by `/psci` `method`, if the node exists.
fn psci_conduit(fdt: &Fdt) -> Option<PsciConduit> {
    let node = fdt.find_node("/psci")?;
    match node.property("method")?.as_str()? {
        "hvc" => Some(PsciConduit::Hvc),
        "smc" => Some(PsciConduit::Smc),
        _ => None,
    }
}

/// Most ranges [`heap_region`] keeps out of RAM at once.
const MAX_EXCLUDED: usize = 16;

/// RAM as the DTB `/memory` nodes describe it: up to `N` `[start, end)`
/// ranges, and how many there are.
pub fn ram_ranges<const N: usize>(info: &boot::BootInfo) -> ([(PhysAddr, PhysAddr); N], usize) {
    let mut out = [(PhysAddr::ZERO, PhysAddr::ZERO); N];
    let mut n = 0;
    for region in fdt(info).memory().regions() {
        // RAM beyond 52 bits cannot exist: such a range is left out.
        let Some(start) = reg_addr(&region) else {
            continue;
        };
        let len = region.size.unwrap_or(0);
        if len > 0 && n < N {
            out[n] = (start, start.saturating_add(len));
            n += 1;
        }
    }
    (out, n)
}

/// (start, len) of the largest free RAM range at or above the end of the kernel
/// image: RAM from the DTB `/memory` nodes, minus the DTB blob, its
/// `/memreserve/` entries and its `/reserved-memory` children. Page aligned.
///
/// Under UEFI the RAM is the memory map's usable ranges instead (the DTB's
/// `/memory` also covers the firmware's runtime and reserved memory), and
/// RAM below the image counts too: the firmware may load it anywhere, near
/// the top of RAM as well.
pub fn heap_region(info: &boot::BootInfo) -> (PhysAddr, usize) {
    const PAGE: usize = 4096;
    let fdt = fdt(info);
    let efi = info.protocol == boot::BootProtocol::Uefi && info.memory_len > 0;
    let floor = if efi {
        0
    } else {
        info.kernel_end.next_multiple_of(PAGE)
    };

    let mut excluded = [(0usize, 0usize); MAX_EXCLUDED];
    let mut n_excluded = 0;
    let mut exclude = |start: usize, len: usize| {
        if len > 0 && n_excluded < MAX_EXCLUDED {
            excluded[n_excluded] = (start, start.saturating_add(len));
            n_excluded += 1;
        }
    };
    exclude(info.dtb.unwrap_or(0), fdt.total_size());
    exclude(info.kernel_start, info.kernel_end - info.kernel_start);
    for r in fdt.memory_reservations() {
        exclude(r.address() as usize, r.size());
    }
    if let Some(resv) = fdt.find_node("/reserved-memory") {
        for child in resv.children() {
            for r in child.reg().into_iter().flatten() {
                exclude(r.starting_address as usize, r.size.unwrap_or(0));
            }
        }
    }
    let excluded = &excluded[..n_excluded];

    let mut best = (0usize, 0usize);
    let mut scan = |ram_start: usize, ram_len: usize| {
        let ram_end = ram_start.saturating_add(ram_len);
        // Walk the free gaps of [max(ram_start, floor), ram_end) between exclusions.
        let mut cursor = ram_start.max(floor);
        while cursor < ram_end {
            // Skip past any exclusion that covers the cursor.
            if let Some(&(_, end)) = excluded.iter().find(|&&(s, e)| s <= cursor && cursor < e) {
                cursor = end.next_multiple_of(PAGE);
                continue;
            }
            let gap_end = excluded
                .iter()
                .filter(|&&(s, _)| s > cursor)
                .map(|&(s, _)| s)
                .fold(ram_end, usize::min);
            let start = cursor;
            let end = gap_end & !(PAGE - 1);
            if end > start && end - start > best.1 {
                best = (start, end - start);
            }
            cursor = gap_end;
        }
    };
    if efi {
        for r in info.memory_regions() {
            scan(r.start, r.len);
        }
    } else {
        for region in fdt.memory().regions() {
            scan(region.starting_address as usize, region.size.unwrap_or(0));
        }
    }
    assert!(best.1 > 0, "aarch64: no free RAM for the heap");
    (PhysAddr::new(best.0), best.1)
}
