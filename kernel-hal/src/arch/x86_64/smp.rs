//! Multiprocessor support: CPU discovery, application-processor start-up
//! (INIT-SIPI-SIPI and a real-mode trampoline) and inter-processor interrupts.
//!
//! **Discovery.** `init` (from `early_init`) reads the ACPI MADT (`acpi.rs`)
//! and fixes the dense CPU numbering: index 0 is the boot CPU, then the other
//! enabled processors in MADT order, at most `MAX_CPUS` (online-capable ones
//! are hotplug slots without a CPU at boot: counted in the boot line only).
//! `APIC_IDS[index]` maps index -> APIC id; [`cpu_index_of`] maps back. No
//! RSDP or no MADT: one CPU.
//!
//! **Start-up.** An AP wakes in 16-bit real mode at the 4 KiB page that the
//! STARTUP IPI names. The trampoline below (assembled into the kernel image,
//! position independent: it addresses its page through CS in real mode and
//! through the page's base in a register after that) is copied to that page
//! with an argument block at its end, which also carries the three absolute
//! pointers the copy needs (its GDT's base and the two far jumps), written
//! for the page chosen. It claims a one-shot ticket (so an AP that wakes
//! after its start timed out parks instead of running on a stack that is no
//! longer its own), loads its own small GDT, enters 32-bit protected mode,
//! loads the boot CPU's CR3 (the 0-4 GiB identity map built by `boot`), CR4
//! and EFER, enables paging to reach long mode, and calls [`ap_main`] on the
//! stack the caller gave. `ap_main` loads the CPU's own GDT/TSS (per-CPU IST
//! stacks) and GS base (so `cpu_id()` is right), the shared IDT, enables the
//! LAPIC in the boot CPU's mode, sets the "online" flag the boot CPU waits for,
//! and calls the generic entry with interrupts disabled.
//!
//! Trampoline page: a page below 1 MiB that the memory map lists as usable
//! RAM, 0x8000 when it is (`lowmem::trampoline_page`), chosen by
//! [`check_trampoline_page`]. The heap never reaches it (`heap_regions` only
//! hands out memory above the kernel image, which is linked at 1 MiB),
//! nothing else of ours lives there, and by the time an AP is started the
//! boot code has copied everything it needed out of loader memory and the
//! MADT has been read. No such page: the kernel runs on the boot CPU alone.
//!
//! **Hotplug.** [`park_this_cpu`] takes an AP down for good: interrupts off,
//! marked not online (IPIs to it are dropped) and startable again, then a
//! `hlt` loop that only INIT, NMI or SMI can leave. A later [`start_cpu`]
//! sends INIT-SIPI-SIPI again: INIT resets the core wherever it halts and it
//! comes up through the trampoline as at boot (what Linux does with
//! `hlt_play_dead` and the next `do_boot_cpu`). Why not wake the halt loop
//! instead: that needs an NMI (interrupts stay off while parked) and an NMI
//! handler that knows about parked CPUs, and the CPU would come back with
//! whatever state it parked with; INIT gives a clean CPU through a path
//! that boot already exercises.
//!
//! **IPIs.** [`send_ipi`] sends a fixed interrupt through the ICR (x2APIC MSR
//! 0x830, or xAPIC MMIO 0x310/0x300 after waiting for the delivery status) on
//! vector `apic::IPI_RESCHEDULE_VECTOR` (0xF0) or `apic::IPI_CALL_VECTOR`
//! (0xF1); `trap.rs` acknowledges it and calls `crate::hooks::ipi(kind)` then
//! `crate::hooks::irq_exit()`.

use core::fmt::Write;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

use x86_64::registers::control::{Cr0, Cr3, Cr4};
use x86_64::registers::model_specific::Msr;

use super::super::{IpiKind, MAX_CPUS};
use super::{acpi, apic, percpu, serial, time, trap};
use crate::cpu::CpuId;

/// Physical address of the AP trampoline page (below 1 MiB, 4 KiB-aligned;
/// a STARTUP IPI names it), 0 when none was found.
static TRAMPOLINE_PHYS: AtomicUsize = AtomicUsize::new(0);
/// Size of the trampoline page.
const TRAMPOLINE_BYTES: usize = 4096;
/// Wait after INIT (Intel MP specification: 10 ms).
const INIT_DELAY_NS: u64 = 10_000_000;
/// Wait after each STARTUP IPI (Intel MP specification: 200 us).
const SIPI_DELAY_NS: u64 = 200_000;
/// How long the AP has, after the second STARTUP IPI, to report itself
/// online: 10 s, as Linux waits for an x86 AP (`cpuhp_wait_for_sync_state`
/// in `kernel/cpu.c`, `10ULL * NSEC_PER_SEC`, which x86 uses since v6.5;
/// before, `arch/x86/kernel/smpboot.c` waited `10*HZ` for the AP to report
/// in). A hypervisor may keep a new vCPU off the host for seconds; the wait
/// ends as soon as the AP is online, so a normal boot is not slower.
pub const START_TIMEOUT_NS: u64 = 10_000_000_000;
/// Extra time granted to an AP that claimed its ticket (it is running the
/// trampoline, past the point of no return) when [`START_TIMEOUT_NS`] ran
/// out: as long again, since it may have claimed it just before and then
/// been descheduled.
const CLAIMED_GRACE_NS: u64 = START_TIMEOUT_NS;
/// `IA32_EFER`.
const MSR_EFER: u32 = 0xC000_0080;

// The trampoline, in AT&T syntax (16-bit far jumps are unambiguous there). It
// runs at the copy, page T, not in the image, and knows T only at run time.
// Real mode starts with CS = T >> 4, IP = 0: near jumps are relative, data is
// addressed as `label - start` with DS = CS, and ESI = T (CS << 4) from
// then on. Protected and long mode use flat segments, so data is
// `label - start` off ESI / RSI. The GDT pointer's base and the two far
// jumps into 32- and 64-bit code need T itself: `start_cpu` writes them
// into the argument block (ap_tr_gdtr, ap_tr_pm32_far, ap_tr_lm64_far).
core::arch::global_asm!(
    r#"
    .section .text.ap_trampoline, "ax"
    .balign 16
    .global x86_ap_trampoline_start
x86_ap_trampoline_start:
    .code16
    cli
    cld
    movw %cs, %ax
    movw %ax, %ds
    /* Claim the one-shot ticket: only the CPU it names (its APIC id + 1)
       takes it and goes on. The id: in x2APIC mode the 32-bit x2APIC id
       (CPUID leaf 0xB EDX), else the initial APIC id (leaf 1 EBX[31:24]). */
    movl ap_tr_x2apic - x86_ap_trampoline_start, %eax
    testl %eax, %eax
    jz 1f
    movl $0xb, %eax
    xorl %ecx, %ecx
    cpuid
    movl %edx, %ebx
    jmp 2f
1:
    movl $1, %eax
    cpuid
    shrl $24, %ebx
2:
    movl %ebx, %eax
    incl %eax
    xorl %ecx, %ecx
    lock cmpxchgl %ecx, ap_tr_ticket - x86_ap_trampoline_start
    jne ap_tr_park
    xorl %esi, %esi
    movw %cs, %si
    shll $4, %esi                    /* ESI = T, the page's physical address */
    lgdtl ap_tr_gdtr - x86_ap_trampoline_start
    movl %cr0, %eax
    orl $1, %eax                     /* PE */
    movl %eax, %cr0
    ljmpl *ap_tr_pm32_far - x86_ap_trampoline_start
ap_tr_park:
    cli
    hlt
    jmp ap_tr_park

    .code32
ap_tr_pm32:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movw %ax, %fs
    movw %ax, %gs
    /* The boot CPU's CR4 without PCIDE (not allowed outside long mode), plus PAE. */
    movl ap_tr_cr4 - x86_ap_trampoline_start(%esi), %eax
    andl $0xFFFDFFFF, %eax
    orl $0x20, %eax
    movl %eax, %cr4
    movl ap_tr_cr3 - x86_ap_trampoline_start(%esi), %eax
    movl %eax, %cr3
    /* The boot CPU's EFER without LMA (read-only), plus LME. */
    movl $0xC0000080, %ecx
    movl ap_tr_efer - x86_ap_trampoline_start(%esi), %eax
    movl ap_tr_efer + 4 - x86_ap_trampoline_start(%esi), %edx
    andl $0xFFFFFBFF, %eax
    orl $0x100, %eax
    wrmsr
    /* The boot CPU's CR0 (caches on, WP), with PG|PE: long mode. */
    movl ap_tr_cr0 - x86_ap_trampoline_start(%esi), %eax
    orl $0x80000001, %eax
    movl %eax, %cr0
    ljmpl *ap_tr_lm64_far - x86_ap_trampoline_start(%esi)

    .code64
ap_tr_lm64:
    movw $0x10, %ax
    movw %ax, %ds
    movw %ax, %es
    movw %ax, %ss
    movl %esi, %esi                  /* the upper half is undefined after the mode switch */
    movq ap_tr_stack - x86_ap_trampoline_start(%rsi), %rsp
    movq ap_tr_cpu - x86_ap_trampoline_start(%rsi), %rdi
    movq ap_tr_rust - x86_ap_trampoline_start(%rsi), %rax
    movq ap_tr_entry - x86_ap_trampoline_start(%rsi), %rsi
    xorl %ebp, %ebp
    callq *%rax                      /* ap_main(cpu, entry): never returns */
    ud2

    /* null, 32-bit code (0x08), data (0x10), 64-bit code (0x18) */
    .balign 8
ap_tr_gdt:
    .quad 0
    .quad 0x00CF9A000000FFFF
    .quad 0x00CF92000000FFFF
    .quad 0x00AF9A000000FFFF
ap_tr_gdt_end:

    /* The argument block: TrampolineArgs, filled by start_cpu. */
    .balign 8
    .global x86_ap_trampoline_args
x86_ap_trampoline_args:
ap_tr_ticket: .quad 0
ap_tr_cr3:    .quad 0
ap_tr_cr4:    .quad 0
ap_tr_cr0:    .quad 0
ap_tr_efer:   .quad 0
ap_tr_stack:  .quad 0
ap_tr_cpu:    .quad 0
ap_tr_entry:  .quad 0
ap_tr_rust:   .quad 0
ap_tr_gdtr:   .quad 0                /* limit (16 bits), base T + GDT offset (32) */
ap_tr_pm32_far: .quad 0              /* T + ap_tr_pm32 (32 bits), selector 0x08 */
ap_tr_lm64_far: .quad 0              /* T + ap_tr_lm64 (32 bits), selector 0x18 */
ap_tr_x2apic: .quad 0                /* non-zero: x2APIC mode, the id from CPUID 0xB */
    .global x86_ap_trampoline_gdt
    .set x86_ap_trampoline_gdt, ap_tr_gdt
    .global x86_ap_trampoline_gdt_end
    .set x86_ap_trampoline_gdt_end, ap_tr_gdt_end
    .global x86_ap_trampoline_pm32
    .set x86_ap_trampoline_pm32, ap_tr_pm32
    .global x86_ap_trampoline_lm64
    .set x86_ap_trampoline_lm64, ap_tr_lm64
    .global x86_ap_trampoline_end
x86_ap_trampoline_end:
    .code64
    "#,
    options(att_syntax)
);

extern "C" {
    static x86_ap_trampoline_start: u8;
    static x86_ap_trampoline_gdt: u8;
    static x86_ap_trampoline_gdt_end: u8;
    static x86_ap_trampoline_pm32: u8;
    static x86_ap_trampoline_lm64: u8;
    static x86_ap_trampoline_args: u8;
    static x86_ap_trampoline_end: u8;
}

/// Offset of a trampoline symbol from its start.
fn trampoline_offset(sym: *const u8) -> usize {
    sym as usize - core::ptr::addr_of!(x86_ap_trampoline_start) as usize
}

/// The trampoline's argument block (layout of `x86_ap_trampoline_args`).
#[repr(C)]
struct TrampolineArgs {
    /// The APIC id of the AP it is for, plus 1 (0: none); only that AP
    /// claims it, swapping in 0 (only the low 32 bits are used). Naming the
    /// AP matters: an AP whose start timed out may wake later, while the
    /// block is armed for the next CPU, and must not run as that CPU (seen
    /// on a loaded host: the AP of cpu 2 came up as cpu 3, whose IPIs and
    /// timer then went to another CPU).
    ticket: u64,
    cr3: u64,
    cr4: u64,
    cr0: u64,
    efer: u64,
    stack_top: u64,
    cpu: u64,
    /// The generic entry, `extern "C" fn(usize) -> !`.
    entry: u64,
    /// [`ap_main`].
    rust_entry: u64,
    /// The `lgdt` operand: limit in bits 15:0, the copy's GDT in 47:16.
    gdtr: u64,
    /// Far pointer (m16:32) to the copy's 32-bit code: offset in bits 31:0,
    /// selector 0x08 in 47:32.
    pm32_far: u64,
    /// Far pointer to the copy's 64-bit code, selector 0x18.
    lm64_far: u64,
    /// Non-zero in x2APIC mode: the AP finds its id in CPUID leaf 0xB (32
    /// bits) rather than leaf 1 (8 bits), so ids above 255 work.
    x2apic: u64,
}

/// Number of CPUs in use (1 until `init` found more).
static CPU_COUNT: AtomicUsize = AtomicUsize::new(1);
/// APIC id of each dense CPU index.
static APIC_IDS: [AtomicU32; MAX_CPUS] = [const { AtomicU32::new(0) }; MAX_CPUS];
/// Set by each CPU once it runs in long mode with its per-CPU state loaded.
static ONLINE: [AtomicBool; MAX_CPUS] = [const { AtomicBool::new(false) }; MAX_CPUS];
/// Start state per CPU: [`OFF`], [`STARTING`] (a start is in progress or the
/// CPU is online) or [`LOST`] (it claimed its ticket but never came online).
static START_STATE: [AtomicU8; MAX_CPUS] = [const { AtomicU8::new(OFF) }; MAX_CPUS];
const OFF: u8 = 0;
const STARTING: u8 = 1;
const LOST: u8 = 2;
/// Held while one AP start is in progress (the trampoline page is shared).
static START_LOCK: AtomicBool = AtomicBool::new(false);
/// The boot CPU's CR4, restored in full on each AP (the trampoline must leave
/// PCIDE out).
static BOOT_CR4: AtomicU64 = AtomicU64::new(0);

/// How CPU discovery went, for the boot banner.
#[derive(Clone, Copy, Debug)]
pub enum Discovery {
    /// Found in the MADT; usable ones the kernel cannot run on are ignored.
    Madt {
        /// Beyond `MAX_CPUS`.
        dropped: usize,
        /// APIC id above [`apic::XAPIC_MAX_ID`] while the LAPIC is in xAPIC
        /// mode (no x2APIC): an IPI cannot name them.
        no_x2apic: usize,
        /// Online-capable, not enabled: hotplug slots, absent at boot.
        hotplug: usize,
    },
    /// No RSDP or no (valid) MADT: the boot CPU alone.
    NoMadt,
}

impl core::fmt::Display for Discovery {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Discovery::Madt {
                dropped,
                no_x2apic,
                hotplug,
            } => write!(
                f,
                "ACPI MADT{}",
                super::super::IgnoredCpus(&[
                    (dropped, super::super::BEYOND_MAX_CPUS),
                    (no_x2apic, "with APIC id > 254 and no x2APIC"),
                    (hotplug, "online-capable (hotplug, absent at boot)"),
                ])
            ),
            Discovery::NoMadt => f.write_str("no ACPI MADT"),
        }
    }
}

/// Reads the MADT and numbers the CPUs (index 0 = this, the boot CPU). Call
/// once from `early_init`, after the LAPIC is enabled and before the heap
/// exists (ACPI tables may lie in RAM the heap would reuse).
pub fn init(info: &boot::BootInfo) -> Discovery {
    let boot_id = apic::id();
    APIC_IDS[0].store(boot_id, Ordering::Relaxed);
    ONLINE[0].store(true, Ordering::Relaxed);
    START_STATE[0].store(STARTING, Ordering::Relaxed);
    let found = acpi::rsdp_of(info).and_then(|rsdp| {
        // SAFETY: the RSDP address comes from the loader (or is boot's copy
        // of it), and nothing has overwritten firmware tables yet (no heap).
        unsafe { acpi::discover(rsdp, boot_id) }
    });
    match found {
        Some(cpus) => {
            if let Some((addr, gsi_base)) = cpus.io_apic {
                super::ioapic::set(addr, gsi_base, cpus.com1_gsi);
            }
            let x2apic = apic::x2apic();
            let mut n = 0;
            for (i, &id) in cpus.apic_ids[..cpus.len].iter().enumerate() {
                if reachable(i, id, x2apic) {
                    APIC_IDS[n].store(id, Ordering::Relaxed);
                    n += 1;
                }
            }
            CPU_COUNT.store(n, Ordering::Release);
            Discovery::Madt {
                dropped: cpus.dropped,
                no_x2apic: cpus.len - n,
                hotplug: cpus.hotplug,
            }
        }
        None => Discovery::NoMadt,
    }
}

/// Whether an IPI can reach the CPU with APIC id `id`, `index`-th in MADT
/// order (0: the boot CPU, which runs anyway): in xAPIC mode an IPI names
/// its target in 8 bits, so APIC ids above 254 need x2APIC.
pub(super) fn reachable(index: usize, id: u32, x2apic: bool) -> bool {
    index == 0 || x2apic || id <= apic::XAPIC_MAX_ID
}

/// Number of CPUs the firmware describes (ACPI MADT), at most `MAX_CPUS`; 1
/// when there is no MADT. CPU indices are `0..cpu_count()`, 0 = boot CPU.
pub fn cpu_count() -> usize {
    CPU_COUNT.load(Ordering::Acquire)
}

/// The LAPIC id of CPU `cpu` (dense index), if it exists.
pub fn apic_id_of(cpu: CpuId) -> Option<u32> {
    (cpu.index() < cpu_count()).then(|| APIC_IDS[cpu.index()].load(Ordering::Relaxed))
}

/// The dense index of the CPU whose LAPIC id is `apic_id`, if it is in use.
pub fn cpu_index_of(apic_id: u32) -> Option<CpuId> {
    CpuId::range(cpu_count()).find(|&c| APIC_IDS[c.index()].load(Ordering::Relaxed) == apic_id)
}

/// Where CPU `cpu` sits (its core and last-level cache ids, from its APIC
/// id and this CPU's CPUID: [`crate::topo`]); `None` without the x2APIC
/// topology leaf (0x1F or 0xB), where every CPU counts as its own core in
/// one shared cache.
pub fn cpu_topology_ids(cpu: CpuId) -> Option<crate::topo::TopoIds> {
    Some(topology_shifts()?.ids(apic_id_of(cpu)?))
}

/// The APIC-id bit fields from CPUID: leaf 0x1F (or 0xB) for the SMT and
/// package levels, the deterministic cache leaf (4 on Intel, 0x8000001D on
/// AMD with TOPOEXT) for the last-level cache's sharing.
fn topology_shifts() -> Option<crate::topo::X86Shifts> {
    use core::arch::x86_64::{__cpuid, __cpuid_count};
    let max = __cpuid(0).eax;
    let leaf = [0x1f, 0xb]
        .into_iter()
        .find(|&l| max >= l && __cpuid_count(l, 0).ebx != 0)?;
    let (mut smt_shift, mut pkg_shift) = (0, 0);
    for sub in 0..8 {
        let r = __cpuid_count(leaf, sub);
        let level_type = (r.ecx >> 8) & 0xff;
        if level_type == 0 {
            break;
        }
        if level_type == 1 {
            smt_shift = r.eax & 0x1f;
        }
        pkg_shift = r.eax & 0x1f;
    }
    let v = __cpuid(0);
    let amd = (v.ebx, v.edx, v.ecx) == (0x6874_7541, 0x6974_6e65, 0x444d_4163);
    let max_ext = __cpuid(0x8000_0000).eax;
    let cache_leaf = if amd {
        (max_ext >= 0x8000_001d && __cpuid(0x8000_0001).ecx & (1 << 22) != 0).then_some(0x8000_001d)
    } else {
        (max >= 4).then_some(4)
    };
    // The highest level's sharing count (EAX[7:5] level, [25:14] + 1 CPUs).
    let llc_sharing = cache_leaf.and_then(|l| {
        (0..16)
            .map(|sub| __cpuid_count(l, sub).eax)
            .take_while(|eax| eax & 0x1f != 0)
            .max_by_key(|eax| (eax >> 5) & 0x7)
            .map(|eax| ((eax >> 14) & 0xfff) + 1)
    });
    Some(crate::topo::X86Shifts::new(
        smt_shift,
        pkg_shift,
        llc_sharing,
    ))
}

/// Busy-waits `ns` nanoseconds, measured with the TSC.
fn delay_ns(ns: u64) {
    let start = time::rdtsc();
    let cycles = time::ns_to_cycles(ns);
    while time::rdtsc().wrapping_sub(start) < cycles {
        core::hint::spin_loop();
    }
}

/// Waits at most `ns` for `cond`; returns whether it became true.
fn wait_for(ns: u64, cond: impl Fn() -> bool) -> bool {
    let start = time::rdtsc();
    let cycles = time::ns_to_cycles(ns);
    loop {
        if cond() {
            return true;
        }
        if time::rdtsc().wrapping_sub(start) >= cycles {
            return cond();
        }
        core::hint::spin_loop();
    }
}

/// Picks the trampoline page from the memory map (`lowmem`), from
/// `early_init`. With none, the other CPUs cannot be started: the CPU count
/// drops to 1 and this returns `None`, for the boot log.
pub fn check_trampoline_page(info: &boot::BootInfo) -> Option<crate::addr::PhysAddr> {
    let page = super::lowmem::trampoline_page(info.memory_regions());
    TRAMPOLINE_PHYS.store(page.map_or(0, |p| p.as_usize()), Ordering::Relaxed);
    if page.is_none() {
        CPU_COUNT.store(1, Ordering::Release);
    }
    page
}

/// Spin lock serialising [`start_cpu`] calls.
struct StartGuard;

impl StartGuard {
    fn lock() -> StartGuard {
        while START_LOCK
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            core::hint::spin_loop();
        }
        StartGuard
    }
}

impl Drop for StartGuard {
    fn drop(&mut self) {
        START_LOCK.store(false, Ordering::Release);
    }
}

/// Starts application processor `cpu` (dense index, `1..cpu_count()`) on the
/// stack that ends at `stack_top`. The AP loads its own GDT/TSS (with its own
/// IST stacks), the IDT and its GS base (so `cpu_id()` returns `cpu` there),
/// enables its LAPIC in the boot CPU's mode, and calls `entry(cpu)` with
/// interrupts disabled; `entry` must not return.
///
/// Sends INIT, waits 10 ms, sends STARTUP, waits 200 us, sends a second STARTUP
/// if the AP has not yet claimed the trampoline, then waits up to `wait_ns`
/// (normally [`START_TIMEOUT_NS`], 10 s; 0 always gives up, as if the AP
/// came too late) for the AP to report itself online (all delays measured
/// with the TSC). Returns
/// true once it is; false if `cpu` is out of range, is the boot CPU, was
/// already started, or did not come up in time. Calls are serialised (the
/// trampoline page is shared), from any CPU.
///
/// # Safety
/// `stack_top` must be the 16-byte aligned end of a stack that is mapped in
/// the boot identity map (below 4 GiB), large enough for `entry`, and given to
/// this CPU forever (it is never freed, also when this returns false: an AP
/// that claimed the trampoline late may still run on it). `early_init` must
/// have run on the boot CPU.
pub unsafe fn start_cpu(
    cpu: CpuId,
    stack_top: crate::addr::VirtAddr,
    entry: extern "C" fn(CpuId) -> !,
    wait_ns: u64,
) -> bool {
    let stack_top = stack_top.as_usize();
    let Some(apic_id) = apic_id_of(cpu) else {
        return false;
    };
    let tramp = TRAMPOLINE_PHYS.load(Ordering::Relaxed);
    if cpu == CpuId::BOOT || tramp == 0 {
        return false;
    }
    // Its GDT, TSS and IST stacks (heap; kept even if the start fails).
    if !percpu::alloc_block(cpu) {
        let _ = writeln!(
            serial::RawWriter,
            "x86_64: no memory for cpu {cpu}'s per-CPU block"
        );
        return false;
    }
    let _guard = StartGuard::lock();
    if START_STATE[cpu.index()]
        .compare_exchange(OFF, STARTING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }

    let code_start = core::ptr::addr_of!(x86_ap_trampoline_start) as usize;
    let code_len = core::ptr::addr_of!(x86_ap_trampoline_end) as usize - code_start;
    let args_offset = core::ptr::addr_of!(x86_ap_trampoline_args) as usize - code_start;
    assert!(code_len <= TRAMPOLINE_BYTES, "AP trampoline too large");
    let (gdt, gdt_end) = (
        trampoline_offset(core::ptr::addr_of!(x86_ap_trampoline_gdt)),
        trampoline_offset(core::ptr::addr_of!(x86_ap_trampoline_gdt_end)),
    );
    let far =
        |sym: *const u8, selector: u64| (tramp + trampoline_offset(sym)) as u64 | selector << 32;
    let cr3 = Cr3::read_raw().0.start_address().as_u64();
    assert!(cr3 < 1 << 32, "boot page tables must lie below 4 GiB");
    BOOT_CR4.store(Cr4::read_raw(), Ordering::Relaxed);
    let args_ptr = (tramp + args_offset) as *mut TrampolineArgs;
    // SAFETY: `rdmsr` of EFER, which every x86_64 CPU has.
    let efer = unsafe { Msr::new(MSR_EFER).read() };
    let args = TrampolineArgs {
        ticket: 0,
        cr3,
        cr4: Cr4::read_raw(),
        cr0: Cr0::read_raw(),
        efer,
        stack_top: (stack_top & !0xF) as u64,
        cpu: cpu.index() as u64,
        entry: entry as usize as u64,
        rust_entry: ap_main as *const () as usize as u64,
        gdtr: (gdt_end - gdt - 1) as u64 | ((tramp + gdt) as u64) << 16,
        pm32_far: far(core::ptr::addr_of!(x86_ap_trampoline_pm32), 0x08),
        lm64_far: far(core::ptr::addr_of!(x86_ap_trampoline_lm64), 0x18),
        x2apic: u64::from(apic::x2apic()),
    };
    // Soundness: the trampoline page is identity-mapped conventional RAM that
    // only this code uses (see the module docs; `lowmem` chose it from the
    // memory map), START_LOCK gives us exclusive use of it, and no AP is
    // executing it (any earlier AP claimed its ticket and left, or parks
    // outside the argument block). The source is the kernel image's copy.
    // SAFETY: as argued just above.
    unsafe {
        core::ptr::copy_nonoverlapping(code_start as *const u8, tramp as *mut u8, code_len);
        core::ptr::write_volatile(args_ptr, args);
    }
    // SAFETY: the ticket is an 8-aligned u64 slot in the argument block, which
    // lives as long as the kernel; the AP accesses it only with `lock xchg`.
    let ticket = unsafe { AtomicU32::from_ptr(args_ptr.cast::<u32>()) };
    // Release: the code and the arguments are visible before the ticket is.
    // A zero wait gives up at once, deterministically: no ticket is armed,
    // so the AP wakes, finds none and parks in the trampoline (the next
    // start's INIT resets it), as one that came too late would.
    let armed = if wait_ns == 0 { 0 } else { apic_id + 1 };
    ticket.store(armed, Ordering::Release);

    let page = (tramp >> 12) as u8;
    apic::send_init(apic_id);
    delay_ns(INIT_DELAY_NS);
    apic::send_startup(apic_id, page);
    delay_ns(SIPI_DELAY_NS);
    if ticket.load(Ordering::Acquire) == armed {
        apic::send_startup(apic_id, page);
        delay_ns(SIPI_DELAY_NS);
    }
    let online = || ONLINE[cpu.index()].load(Ordering::Acquire);
    if wait_for(wait_ns, online) {
        return true;
    }
    // Too slow. Withdraw the ticket; if the AP had already claimed it, it is
    // running the trampoline: give it a grace period, else it may never
    // touch the stack (retrying later is then safe).
    if ticket.swap(0, Ordering::AcqRel) == armed {
        START_STATE[cpu.index()].store(OFF, Ordering::Release);
        return false;
    }
    if wait_for(CLAIMED_GRACE_NS, online) {
        return true;
    }
    START_STATE[cpu.index()].store(LOST, Ordering::Release);
    false
}

/// First Rust code on an AP: called by the trampoline in long mode on the
/// caller's stack, with interrupts disabled, `cpu` its dense index and
/// `entry` the generic entry point.
extern "C" fn ap_main(cpu: usize, entry: usize) -> ! {
    // `start_cpu` passed a `CpuId`'s index through the trampoline.
    let cpu = CpuId::wrapping(cpu);
    let cr4 = BOOT_CR4.load(Ordering::Relaxed);
    if Cr4::read_raw() != cr4 {
        // SAFETY: the boot CPU's CR4 on an identical CPU, in long mode with
        // CR3's PCID bits zero (the boot page tables are 4 KiB-aligned).
        unsafe { Cr4::write_raw(cr4) };
    }
    // SAFETY: first thing on this CPU, interrupts disabled; `cpu` is this
    // CPU's index (START_LOCK and START_STATE make it used once).
    unsafe { percpu::init_cpu(cpu) };
    trap::load();
    apic::init_ap();
    let apic_id = apic::id();
    percpu::set_lapic_id(apic_id);
    if cpu_index_of(apic_id) != Some(cpu) {
        // Not fatal: IPIs go by the MADT's id, so this CPU would miss them.
        let _ = writeln!(
            serial::RawWriter,
            "x86_64: cpu {cpu} has LAPIC id {apic_id}, the MADT said {:?}",
            apic_id_of(cpu)
        );
    }
    // SAFETY: `start_cpu` stored an `extern "C" fn(CpuId) -> !` here.
    let entry: extern "C" fn(CpuId) -> ! = unsafe { core::mem::transmute(entry) };
    ONLINE[cpu.index()].store(true, Ordering::Release);
    crate::hooks::secondary_arch_up(cpu);
    entry(cpu)
}

/// Takes this AP down for good (CPU hotplug): interrupts off, marked not
/// online ([`send_ipi`] drops IPIs to it) and startable again by
/// [`start_cpu`], `parked` set (Release), then halted with interrupts off
/// until the INIT of that start resets it. Its timer deadlines are the
/// caller's to clear (nothing is taken while interrupts stay off).
pub fn park_this_cpu(parked: &AtomicBool) -> ! {
    x86_64::instructions::interrupts::disable();
    let me = percpu::cpu_id();
    ONLINE[me.index()].store(false, Ordering::Release);
    START_STATE[me.index()].store(OFF, Ordering::Release);
    parked.store(true, Ordering::Release);
    loop {
        x86_64::instructions::hlt();
    }
}

/// Whether an IPI is pending at another CPU's interrupt controller: not
/// readable on x86_64 (a local APIC's IRR is its own CPU's), so `None`.
pub fn ipi_state(_cpu: CpuId, _kind: IpiKind) -> Option<(bool, bool)> {
    None
}

/// Interrupts CPU `cpu` (dense index) with the vector for `kind`; its handler
/// acknowledges it and calls `crate::hooks::ipi(kind)`, then
/// `crate::hooks::irq_exit()`. Memory written before the call is visible to
/// that handler. Sending to oneself works; an index that is not online is
/// ignored (a CPU still waiting for its STARTUP IPI would drop it anyway).
/// Callable with interrupts enabled or disabled.
pub fn send_ipi(cpu: CpuId, kind: IpiKind) {
    if !ONLINE[cpu.index()].load(Ordering::Acquire) {
        return;
    }
    let vector = match kind {
        IpiKind::Reschedule => apic::IPI_RESCHEDULE_VECTOR,
        IpiKind::Call => apic::IPI_CALL_VECTOR,
    };
    apic::send_fixed(APIC_IDS[cpu.index()].load(Ordering::Relaxed), vector);
}
