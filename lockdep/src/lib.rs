//! A lock validator: Linux's lockdep (`kernel/locking/lockdep.c`), reduced
//! to what a small SMP kernel needs, in fixed-size tables (no allocation,
//! so the heap's own lock can be validated) and without `unsafe`.
//!
//! - Every lock has a **class**: the place in the source where it is
//!   declared (a [`Key`] made with `#[track_caller]`, as Linux keys a class by
//!   the static `lock_class_key` of its init site), optionally with a name.
//!   All runqueue locks are one class, all wait-queue locks another, and so
//!   on. Classes get small ids on first use ([`MAX_CLASSES`] of them).
//! - Each CPU records what it holds: a stack of (class, lock address) of
//!   [`MAX_DEPTH`] entries. Only locks held with interrupts off are pushed:
//!   they cannot migrate, so the CPU's stack is the holder's. A lock taken
//!   with interrupts on is checked (its order against what the CPU holds, its
//!   interrupt safety) but not pushed.
//! - Taking lock B while holding A adds the dependency A -> B to a graph of
//!   classes (a bitmap, and the first context of each edge: CPU and held
//!   chain, [`MAX_EDGES`] of them). A new edge A -> B when B already reaches A
//!   is an **order inversion**: reported once per pair, with this CPU's chain
//!   and, for every edge of the old path B -> ... -> A, the CPU and chain
//!   that first took it. The inverting edge is not added, so the graph stays
//!   acyclic and each report is about a new pair.
//! - Taking a lock of the class already on top of the held chain is
//!   **recursive locking**, unless the acquisition says it is nested
//!   (`double_rq_lock`'s second lock, Linux's `SINGLE_DEPTH_NESTING`).
//! - **Interrupt safety** (hardirq only): a class taken inside an interrupt
//!   handler is *irq-used*; a class held with interrupts enabled is
//!   *irq-unsafe*. A class that is both, or a dependency irq-used -> irq-unsafe
//!   (the interrupt may spin on the first lock while the interrupted holder
//!   of the second waits for the first), is reported once. A try-lock in a
//!   handler does not count: it cannot spin.
//!
//! The caller says which CPU it runs on, whether it is in an interrupt
//! handler ([`irq_enter`]/[`irq_exit`]) and whether interrupts stay enabled
//! while the lock is held, and must call with interrupts disabled (the
//! per-CPU stack is then the caller's alone). Reports go to the [`set_sink`]
//! function, line by line, each line starting with `lockdep: `; the first
//! line of each report starts with `lockdep: BUG: `. The format is in
//! docs/design/lockdep.md.
#![no_std]
#![forbid(unsafe_code)]

use core::fmt;
use core::panic::Location;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Lock classes the validator tracks (ids `1..MAX_CLASSES`; 0 is "none").
pub const MAX_CLASSES: usize = 256;
/// Locks one CPU may hold at once.
pub const MAX_DEPTH: usize = 24;
/// Dependencies whose first context is kept for reports (more are still
/// checked, without context).
pub const MAX_EDGES: usize = 2048;
/// CPUs tracked: the scheduler's limit, so the per-CPU table has a slot for
/// every CPU the kernel can bring up.
pub use sched::{CpuId, MAX_CPUS};
const _: () = assert!(
    MAX_CPUS <= u16::MAX as usize + 1,
    "a context keeps its CPU in a u16"
);
/// Held classes kept per recorded context (the innermost).
pub const CHAIN_LEN: usize = 8;
/// Reports kept for [`reported`].
pub const MAX_REPORTS: usize = 32;

const WORDS: usize = MAX_CLASSES / 64;
const NONE: u16 = 0;

/// The class of a lock: its declaration site and an optional name, and the
/// class id once the validator has seen it.
#[derive(Debug)]
pub struct Key {
    site: &'static Location<'static>,
    name: &'static str,
    id: AtomicU16,
}

impl Key {
    /// The class of the caller's site, named `name` ("" for none).
    #[track_caller]
    pub const fn new(name: &'static str) -> Self {
        Key {
            site: Location::caller(),
            name,
            id: AtomicU16::new(NONE),
        }
    }

    /// The class declared at `site`.
    pub const fn at(name: &'static str, site: &'static Location<'static>) -> Self {
        Key {
            site,
            name,
            id: AtomicU16::new(NONE),
        }
    }

    /// The declaration site.
    pub fn site(&self) -> &'static Location<'static> {
        self.site
    }

    /// The name ("" if none was given).
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// How a lock is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Acquire {
    /// A try-lock that succeeded: it cannot wait, so adds no dependency into
    /// it (locks taken under it still depend on it), and one in an
    /// interrupt handler does not make its class irq-used (Linux's lockdep
    /// counts it; a handler that only try-locks cannot deadlock on it).
    pub trylock: bool,
    /// A second lock of a class already held, taken in a fixed order
    /// (`double_rq_lock`): not recursive locking.
    pub nested: bool,
    /// Interrupts stay enabled while it is held.
    pub irqs_on: bool,
}

/// What a report was about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A -> B taken, B -> A seen before.
    Inversion,
    /// A class taken while already held, not marked nested.
    Recursive,
    /// A class taken in an interrupt handler and held elsewhere with
    /// interrupts enabled (`first` both times), or a dependency from an
    /// irq-used class `first` to an irq-unsafe class `second`.
    IrqUnsafe,
}

/// The validator's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Lock acquisitions checked.
    pub acquisitions: u64,
    /// Classes registered.
    pub classes: usize,
    /// Dependencies (edges) in the graph.
    pub dependencies: usize,
    /// Order inversions reported.
    pub inversions: u64,
    /// Recursive acquisitions reported.
    pub recursive: u64,
    /// Interrupt-safety violations reported.
    pub irq_unsafe: u64,
    /// Reports whose classes are named `test.*` (the deliberate ones).
    pub test_reports: u64,
    /// Table overflows (held stack, classes, edge contexts): the validator
    /// saw less than everything.
    pub overflows: u64,
    /// Classes taken in an interrupt handler.
    pub irq_used: u32,
    /// Classes held with interrupts enabled.
    pub irqs_on: u32,
}

impl Stats {
    /// Reports about the kernel's own classes (not `test.*`).
    pub fn real_reports(&self) -> u64 {
        (self.inversions + self.recursive + self.irq_unsafe).saturating_sub(self.test_reports)
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} acquisitions, {} classes ({} taken in interrupts, {} held with interrupts on), {} dependencies; reports: {} inversions, {} recursive, {} irq-unsafe ({} from test classes); {} overflows; {} reports outside the test classes",
            self.acquisitions,
            self.classes,
            self.irq_used,
            self.irqs_on,
            self.dependencies,
            self.inversions,
            self.recursive,
            self.irq_unsafe,
            self.test_reports,
            self.overflows,
            self.real_reports()
        )
    }
}

/// A recorded context: the CPU and the classes it held (innermost last).
#[derive(Clone, Copy, Debug)]
struct Ctx {
    cpu: u16,
    n: u8,
    chain: [u16; CHAIN_LEN],
}

impl Ctx {
    const EMPTY: Ctx = Ctx {
        cpu: 0,
        n: 0,
        chain: [NONE; CHAIN_LEN],
    };
}

#[derive(Clone, Copy, Debug)]
struct ClassInfo {
    site: Option<&'static Location<'static>>,
    name: &'static str,
    irq_used: Ctx,
    irq_on: Ctx,
}

#[derive(Clone, Copy, Debug)]
struct Edge {
    from: u16,
    to: u16,
    ctx: Ctx,
}

struct Graph {
    classes: [ClassInfo; MAX_CLASSES],
    nclasses: usize,
    edges: [Edge; MAX_EDGES],
    nedges: usize,
    ndeps: usize,
    reports: [(Kind, u16, u16); MAX_REPORTS],
    nreports: usize,
    // Scratch of the path search.
    parent: [u16; MAX_CLASSES],
    queue: [u16; MAX_CLASSES],
}

static GRAPH: spin::Mutex<Graph> = spin::Mutex::new(Graph {
    classes: [ClassInfo {
        site: None,
        name: "",
        irq_used: Ctx::EMPTY,
        irq_on: Ctx::EMPTY,
    }; MAX_CLASSES],
    nclasses: 1,
    edges: [Edge {
        from: NONE,
        to: NONE,
        ctx: Ctx::EMPTY,
    }; MAX_EDGES],
    nedges: 0,
    ndeps: 0,
    reports: [(Kind::Inversion, NONE, NONE); MAX_REPORTS],
    nreports: 0,
    parent: [NONE; MAX_CLASSES],
    queue: [NONE; MAX_CLASSES],
});

/// `ADJ[a]` bit `b`: the dependency a -> b is in the graph (read without
/// the graph lock on the fast path).
static ADJ: [[AtomicU64; WORDS]; MAX_CLASSES] =
    [const { [const { AtomicU64::new(0) }; WORDS] }; MAX_CLASSES];
static IRQ_USED: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];
static IRQ_ON: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

/// One CPU's held locks; only that CPU touches it, with interrupts off.
struct Held {
    /// Acquisitions checked on this CPU (per CPU: a shared counter would
    /// bounce its cache line on every lock operation).
    acquisitions: AtomicU64,
    depth: AtomicU8,
    irq_depth: AtomicU8,
    busy: AtomicBool,
    class: [AtomicU16; MAX_DEPTH],
    addr: [AtomicUsize; MAX_DEPTH],
}

static HELD: [Held; MAX_CPUS] = [const {
    Held {
        acquisitions: AtomicU64::new(0),
        depth: AtomicU8::new(0),
        irq_depth: AtomicU8::new(0),
        busy: AtomicBool::new(false),
        class: [const { AtomicU16::new(NONE) }; MAX_DEPTH],
        addr: [const { AtomicUsize::new(0) }; MAX_DEPTH],
    }
}; MAX_CPUS];

static ENABLED: AtomicBool = AtomicBool::new(false);
static INVERSIONS: AtomicU64 = AtomicU64::new(0);
static RECURSIVE: AtomicU64 = AtomicU64::new(0);
static IRQ_UNSAFE: AtomicU64 = AtomicU64::new(0);
static TEST_REPORTS: AtomicU64 = AtomicU64::new(0);
static OVERFLOWS: AtomicU64 = AtomicU64::new(0);
static SINK: spin::Once<fn(fmt::Arguments)> = spin::Once::new();

const R: Ordering = Ordering::Relaxed;

fn bit(set: &[AtomicU64; WORDS], c: u16) -> bool {
    set[c as usize / 64].load(R) & (1 << (c % 64)) != 0
}

fn set_bit(set: &[AtomicU64; WORDS], c: u16) {
    set[c as usize / 64].fetch_or(1 << (c % 64), R);
}

/// Where reports go (once; later calls change nothing).
pub fn set_sink(sink: fn(fmt::Arguments)) {
    SINK.call_once(|| sink);
}

/// Starts validating (the kernel calls it once its CPU ids are valid).
pub fn enable() {
    ENABLED.store(true, Ordering::Release);
}

/// Stops validating (a fault report or panic: the state may be
/// inconsistent, as Linux's `debug_locks_off`).
pub fn disable() {
    ENABLED.store(false, Ordering::Release);
}

/// Whether the validator runs.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Acquire)
}

/// CPU `cpu` enters an interrupt handler.
pub fn irq_enter(cpu: CpuId) {
    HELD[cpu.index()].irq_depth.fetch_add(1, R);
}

/// CPU `cpu` leaves an interrupt handler.
pub fn irq_exit(cpu: CpuId) {
    let h = &HELD[cpu.index()];
    let d = h.irq_depth.load(R);
    h.irq_depth.store(d.saturating_sub(1), R);
}

/// Whether CPU `cpu` is in an interrupt handler (as told by [`irq_enter`]).
pub fn in_irq(cpu: CpuId) -> bool {
    HELD[cpu.index()].irq_depth.load(R) > 0
}

/// Locks CPU `cpu` holds (tracked ones).
pub fn depth(cpu: CpuId) -> usize {
    HELD[cpu.index()].depth.load(R) as usize
}

/// CPU `cpu` is about to take the lock at `addr` of class `key` (before it
/// spins: a deadlock is reported before it hangs). Interrupts off.
pub fn acquire(key: &Key, addr: usize, cpu: CpuId, how: Acquire) {
    acquire_site(key.site, key.name, &key.id, addr, cpu, how);
}

/// [`acquire`] for a lock whose class is kept by the caller: declared at
/// `site`, named `name`, its id cached in `class` (0 until first use).
pub fn acquire_site(
    site: &'static Location<'static>,
    name: &'static str,
    class: &AtomicU16,
    addr: usize,
    cpu: CpuId,
    how: Acquire,
) {
    if !enabled() {
        return;
    }
    let h = &HELD[cpu.index()];
    if h.busy.swap(true, R) {
        return;
    }
    h.acquisitions.store(h.acquisitions.load(R) + 1, R);
    let id = class_id(site, name, class);
    if id != NONE {
        check(h, id, cpu, how);
        if !how.irqs_on {
            let d = h.depth.load(R) as usize;
            if d < MAX_DEPTH {
                h.class[d].store(id, R);
                h.addr[d].store(addr, R);
                h.depth.store(d as u8 + 1, R);
            } else {
                OVERFLOWS.fetch_add(1, R);
            }
        }
    }
    h.busy.store(false, R);
}

/// CPU `cpu` released the lock at `addr` (a lock it did not record, such as
/// one held with interrupts on, is ignored). Interrupts off.
pub fn release(addr: usize, cpu: CpuId) {
    let h = &HELD[cpu.index()];
    if h.busy.swap(true, R) {
        return;
    }
    let d = h.depth.load(R) as usize;
    if let Some(i) = (0..d).rev().find(|&i| h.addr[i].load(R) == addr) {
        for j in i..d - 1 {
            h.class[j].store(h.class[j + 1].load(R), R);
            h.addr[j].store(h.addr[j + 1].load(R), R);
        }
        h.depth.store(d as u8 - 1, R);
    }
    h.busy.store(false, R);
}

fn class_id(site: &'static Location<'static>, name: &'static str, cache: &AtomicU16) -> u16 {
    let id = cache.load(Ordering::Acquire);
    if id != NONE {
        return id;
    }
    let mut g = GRAPH.lock();
    let found = (1..g.nclasses).find(|&i| {
        g.classes[i].site.is_some_and(|s| {
            s.line() == site.line() && s.column() == site.column() && s.file() == site.file()
        })
    });
    let id = match found {
        Some(i) => i as u16,
        None if g.nclasses < MAX_CLASSES => {
            let i = g.nclasses;
            g.classes[i].site = Some(site);
            g.classes[i].name = name;
            g.nclasses += 1;
            i as u16
        }
        None => {
            if OVERFLOWS.fetch_add(1, R) == 0 {
                emit(format_args!(
                    "lockdep: class table full ({MAX_CLASSES}): {site} not validated"
                ));
            }
            return NONE;
        }
    };
    cache.store(id, Ordering::Release);
    id
}

fn ctx_of(h: &Held, cpu: CpuId, extra: u16) -> Ctx {
    let d = h.depth.load(R) as usize;
    let mut c = Ctx::EMPTY;
    c.cpu = cpu.as_u32() as u16;
    let take = d.min(CHAIN_LEN - 1);
    for (k, i) in (d - take..d).enumerate() {
        c.chain[k] = h.class[i].load(R);
    }
    c.chain[take] = extra;
    c.n = take as u8 + 1;
    c
}

fn check(h: &Held, id: u16, cpu: CpuId, how: Acquire) {
    // A try-lock in an interrupt handler cannot spin on the interrupted
    // holder, so it does not make the class irq-used.
    if h.irq_depth.load(R) > 0 && !how.trylock && !bit(&IRQ_USED, id) {
        mark_irq(id, true, ctx_of(h, cpu, id));
    }
    if how.irqs_on && !bit(&IRQ_ON, id) {
        mark_irq(id, false, ctx_of(h, cpu, id));
    }
    if how.trylock {
        return;
    }
    let d = h.depth.load(R) as usize;
    for i in 0..d {
        let prev = h.class[i].load(R);
        if prev == id {
            if !how.nested {
                report_recursive(id, ctx_of(h, cpu, id));
            }
        } else if !bit(&ADJ[prev as usize], id) {
            add_dependency(prev, id, ctx_of(h, cpu, id));
        }
    }
}

fn add_dependency(from: u16, to: u16, ctx: Ctx) {
    let mut g = GRAPH.lock();
    if bit(&ADJ[from as usize], to) {
        return;
    }
    if let Some(len) = path(&mut g, to, from) {
        // `to` already reaches `from`: from -> to closes a cycle.
        if first_report(&mut g, Kind::Inversion, from.min(to), from.max(to)) {
            INVERSIONS.fetch_add(1, R);
            report_inversion(&g, from, to, ctx, len);
        }
        return;
    }
    set_bit(&ADJ[from as usize], to);
    g.ndeps += 1;
    if g.nedges < MAX_EDGES {
        let n = g.nedges;
        g.edges[n] = Edge { from, to, ctx };
        g.nedges += 1;
    } else {
        OVERFLOWS.fetch_add(1, R);
    }
    if bit(&IRQ_USED, from) && bit(&IRQ_ON, to) {
        report_irq_dependency(&mut g, from, to);
    }
}

/// A path `src` -> ... -> `dst` in the graph: its edge count, with the
/// path in `g.parent` (breadth first, so a shortest one).
fn path(g: &mut Graph, src: u16, dst: u16) -> Option<usize> {
    let mut seen = [0u64; WORDS];
    let (mut head, mut tail) = (0, 0);
    g.queue[tail] = src;
    tail += 1;
    seen[src as usize / 64] |= 1 << (src % 64);
    while head < tail {
        let c = g.queue[head];
        head += 1;
        for w in 0..WORDS {
            let mut bits = ADJ[c as usize][w].load(R) & !seen[w];
            while bits != 0 {
                let b = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let n = (w * 64 + b) as u16;
                seen[w] |= 1 << b;
                g.parent[n as usize] = c;
                if n == dst {
                    let mut len = 1;
                    let mut x = dst;
                    while g.parent[x as usize] != src {
                        x = g.parent[x as usize];
                        len += 1;
                    }
                    return Some(len);
                }
                g.queue[tail] = n;
                tail += 1;
            }
        }
    }
    None
}

fn mark_irq(id: u16, used: bool, ctx: Ctx) {
    let mut g = GRAPH.lock();
    let (set, other) = if used {
        (&IRQ_USED, &IRQ_ON)
    } else {
        (&IRQ_ON, &IRQ_USED)
    };
    if bit(set, id) {
        return;
    }
    set_bit(set, id);
    if used {
        g.classes[id as usize].irq_used = ctx;
    } else {
        g.classes[id as usize].irq_on = ctx;
    }
    if bit(other, id) && first_report(&mut g, Kind::IrqUnsafe, id, id) {
        IRQ_UNSAFE.fetch_add(1, R);
        let c = &g.classes[id as usize];
        emit(format_args!(
            "lockdep: BUG: {} taken in an interrupt handler and held with interrupts enabled",
            Name(&g, id)
        ));
        emit(format_args!(
            "lockdep:   in an interrupt handler on {}",
            CtxFmt(&g, &c.irq_used)
        ));
        emit(format_args!(
            "lockdep:   with interrupts enabled on {}",
            CtxFmt(&g, &c.irq_on)
        ));
        emit(format_args!(
            "lockdep:   possible deadlock: the interrupt arrives on the CPU that holds it and spins forever"
        ));
        count_test(&g, id, id);
    }
    let n = g.nedges;
    for i in 0..n {
        let e = g.edges[i];
        let hit = if used {
            e.from == id && bit(&IRQ_ON, e.to)
        } else {
            e.to == id && bit(&IRQ_USED, e.from)
        };
        if hit {
            report_irq_dependency(&mut g, e.from, e.to);
        }
    }
}

fn report_irq_dependency(g: &mut Graph, from: u16, to: u16) {
    if !first_report(g, Kind::IrqUnsafe, from, to) {
        return;
    }
    IRQ_UNSAFE.fetch_add(1, R);
    emit(format_args!(
        "lockdep: BUG: irq-safe -> irq-unsafe dependency: {} -> {}",
        Name(g, from),
        Name(g, to)
    ));
    if let Some(e) = g.edges[..g.nedges]
        .iter()
        .find(|e| e.from == from && e.to == to)
    {
        emit(format_args!(
            "lockdep:   the dependency on {}",
            CtxFmt(g, &e.ctx)
        ));
    }
    let (f, t) = (&g.classes[from as usize], &g.classes[to as usize]);
    emit(format_args!(
        "lockdep:   {} in an interrupt handler on {}",
        Name(g, from),
        CtxFmt(g, &f.irq_used)
    ));
    emit(format_args!(
        "lockdep:   {} with interrupts enabled on {}",
        Name(g, to),
        CtxFmt(g, &t.irq_on)
    ));
    emit(format_args!(
        "lockdep:   possible deadlock: one CPU holds {} with interrupts on and is interrupted by a handler that wants {}, held by a CPU that waits for {}",
        Name(g, to),
        Name(g, from),
        Name(g, to)
    ));
    count_test(g, from, to);
}

fn report_recursive(id: u16, ctx: Ctx) {
    let mut g = GRAPH.lock();
    if !first_report(&mut g, Kind::Recursive, id, id) {
        return;
    }
    RECURSIVE.fetch_add(1, R);
    emit(format_args!(
        "lockdep: BUG: possible recursive locking of {}",
        Name(&g, id)
    ));
    emit(format_args!("lockdep:   on {}", CtxFmt(&g, &ctx)));
    emit(format_args!(
        "lockdep:   a second lock of a class already held, not marked nested: two CPUs taking two such locks in opposite orders deadlock"
    ));
    count_test(&g, id, id);
}

fn report_inversion(g: &Graph, from: u16, to: u16, ctx: Ctx, len: usize) {
    emit(format_args!(
        "lockdep: BUG: possible circular locking dependency: {} -> {}",
        Name(g, from),
        Name(g, to)
    ));
    emit(format_args!("lockdep:   now: {}", CtxFmt(g, &ctx)));
    emit(format_args!(
        "lockdep:   but {} -> {} was seen before ({len} step(s)):",
        Name(g, to),
        Name(g, from)
    ));
    // Walk the path found by `path` (to -> ... -> from) back from `from`.
    let mut hops = [NONE; MAX_CLASSES];
    let mut n = 0;
    let mut x = from;
    while x != to && n < MAX_CLASSES {
        hops[n] = x;
        n += 1;
        x = g.parent[x as usize];
    }
    let mut prev = to;
    for &next in hops[..n].iter().rev() {
        match g.edges[..g.nedges]
            .iter()
            .find(|e| e.from == prev && e.to == next)
        {
            Some(e) => emit(format_args!(
                "lockdep:     {} -> {} first on {}",
                Name(g, prev),
                Name(g, next),
                CtxFmt(g, &e.ctx)
            )),
            None => emit(format_args!(
                "lockdep:     {} -> {} (context not kept: edge table full)",
                Name(g, prev),
                Name(g, next)
            )),
        }
        prev = next;
    }
    emit(format_args!(
        "lockdep:   possible deadlock: one CPU holds {} and waits for {}, another holds {} and waits for {}",
        Name(g, from),
        Name(g, to),
        Name(g, to),
        Name(g, from)
    ));
    count_test(g, from, to);
}

fn first_report(g: &mut Graph, kind: Kind, a: u16, b: u16) -> bool {
    let n = g.nreports;
    if g.reports[..n].contains(&(kind, a, b)) {
        return false;
    }
    if n < MAX_REPORTS {
        g.reports[n] = (kind, a, b);
        g.nreports += 1;
    }
    true
}

fn is_test(g: &Graph, c: u16) -> bool {
    g.classes[c as usize].name.starts_with("test.")
}

fn count_test(g: &Graph, a: u16, b: u16) {
    if is_test(g, a) || is_test(g, b) {
        TEST_REPORTS.fetch_add(1, R);
    }
}

/// Whether a report of `kind` named classes `a` and `b` (in either order;
/// the same name twice for a one-class report).
pub fn reported(kind: Kind, a: &str, b: &str) -> bool {
    let g = GRAPH.lock();
    g.reports[..g.nreports].iter().any(|&(k, x, y)| {
        let (nx, ny) = (g.classes[x as usize].name, g.classes[y as usize].name);
        k == kind && ((nx == a && ny == b) || (nx == b && ny == a))
    })
}

/// Whether a class named `name` was registered (seen taken).
pub fn has_class(name: &str) -> bool {
    let g = GRAPH.lock();
    g.classes[1..g.nclasses].iter().any(|c| c.name == name)
}

/// The counters.
pub fn stats() -> Stats {
    let g = GRAPH.lock();
    Stats {
        acquisitions: HELD.iter().map(|h| h.acquisitions.load(R)).sum(),
        classes: g.nclasses - 1,
        dependencies: g.ndeps,
        inversions: INVERSIONS.load(R),
        recursive: RECURSIVE.load(R),
        irq_unsafe: IRQ_UNSAFE.load(R),
        test_reports: TEST_REPORTS.load(R),
        overflows: OVERFLOWS.load(R),
        irq_used: IRQ_USED.iter().map(|w| w.load(R).count_ones()).sum(),
        irqs_on: IRQ_ON.iter().map(|w| w.load(R).count_ones()).sum(),
    }
}

fn emit(args: fmt::Arguments) {
    if let Some(sink) = SINK.get() {
        sink(args);
    }
}

/// A class as `name (file:line)`, or `file:line`.
struct Name<'a>(&'a Graph, u16);

impl fmt::Display for Name<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.0.classes[self.1 as usize];
        let site = c.site.map_or(("?", 0), |s| (s.file(), s.line()));
        if c.name.is_empty() {
            write!(f, "{}:{}", site.0, site.1)
        } else {
            write!(f, "{} ({}:{})", c.name, site.0, site.1)
        }
    }
}

/// A context as `cpu N holding A, B, taking C`.
struct CtxFmt<'a>(&'a Graph, &'a Ctx);

impl fmt::Display for CtxFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.1;
        let n = c.n as usize;
        write!(f, "cpu {}", c.cpu)?;
        if n > 1 {
            write!(f, " holding ")?;
            for (i, &h) in c.chain[..n - 1].iter().enumerate() {
                let sep = if i == 0 { "" } else { ", " };
                write!(f, "{sep}{}", Name(self.0, h))?;
            }
        }
        if n > 0 {
            write!(f, ", taking {}", Name(self.0, c.chain[n - 1]))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
