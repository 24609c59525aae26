//! The scheduler's event tracer: a ring buffer per CPU of `sched_switch`,
//! `sched_wakeup`, `sched_wakeup_new` and `sched_migrate_task` records,
//! for the shell's `trace start|stop|dump` (which prints them in ftrace's
//! text format, so trace-cmd / Perfetto users can read the dump).
//!
//! Events are recorded by hook calls in the scheduler core
//! ([`sched_switch`], [`sched_wakeup`], [`sched_wakeup_new`],
//! [`sched_migrate_task`]). Each hook first reads one global flag (a relaxed
//! atomic load: the whole cost while tracing is off). While on, it writes one
//! fixed-size record into its CPU's ring, allocated by [`start`] and never
//! while recording; a full ring overwrites its oldest records, like ftrace's
//! overwrite mode. Each ring has its own lock, taken with interrupts
//! disabled (the tick records wakeups), and no other lock is taken under it,
//! so a hook may run with runqueue locks held.
//!
//! As in Linux, idle threads appear as pid 0 named `swapper/N`; other pids
//! are thread slot indices, as `ps` shows them.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use ::sched::{Rq, TaskId};

use crate::percpu::{CpuId, MAX_CPUS};
use crate::{arch, task};

/// Records per CPU.
pub const RING_LEN: usize = 8192;

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Records lost to overwriting since the last `trace start`.
static OVERWRITTEN: AtomicU64 = AtomicU64::new(0);

#[derive(Clone, Copy, Debug)]
pub enum Kind {
    /// a = prev, b = next; `state` = prev's state letter(s).
    Switch { state: &'static str },
    /// a = woken thread; `target` = its CPU.
    Wakeup { new: bool, target: CpuId },
    /// a = migrated thread.
    Migrate { orig: CpuId, dest: CpuId },
}

/// One record (fixed size, copied; names are `&'static str`).
#[derive(Clone, Copy, Debug)]
pub struct Rec {
    pub ts: u64,
    pub cpu: CpuId,
    /// The thread running when the event was recorded (the line prefix).
    pub cur: u32,
    pub a: u32,
    pub a_prio: i32,
    pub b: u32,
    pub b_prio: i32,
    pub kind: Kind,
    /// Names at record time (a slot may be reused before the dump).
    pub cur_comm: &'static str,
    pub a_comm: &'static str,
    pub b_comm: &'static str,
}

struct Ring {
    buf: Box<[Option<Rec>]>,
    /// Next slot to write; `head - len` is the oldest record.
    head: usize,
    len: usize,
}

impl Ring {
    fn push(&mut self, r: Rec) {
        let n = self.buf.len();
        if n == 0 {
            return;
        }
        self.buf[self.head] = Some(r);
        self.head = (self.head + 1) % n;
        if self.len < n {
            self.len += 1;
        } else {
            OVERWRITTEN.fetch_add(1, Ordering::Relaxed);
        }
    }
}

static RINGS: [::sched::SpinMutex<Option<Ring>>; MAX_CPUS] =
    [const { ::sched::SpinMutex::named("trace_ring", None) }; MAX_CPUS];

/// Appends `r` to this CPU's ring (interrupts disabled around the lock).
fn record(r: Rec) {
    let irq = arch::IrqGuard::save();
    if let Some(ring) = RINGS[r.cpu.index()].lock().as_mut() {
        ring.push(r);
    }
    drop(irq);
}

#[inline]
fn on() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

pub fn is_idle(idx: u32) -> bool {
    task::is_idle_idx(idx)
}

/// Linux's `prio` of thread `idx` (120 + nice, 99 - rt_priority; idle 120),
/// for `sched_switch`: `rq` is this CPU's locked runqueue, `idx` its previous
/// or next thread.
fn prio_of(rq: &Rq, idx: u32) -> i32 {
    if is_idle(idx) {
        return 120;
    }
    if let Some(t) = rq.task(TaskId(idx)) {
        return t.prio();
    }
    // An exited thread (the runqueue keeps sleepers and movers).
    task::thread(idx)
        .prio
        .load(core::sync::atomic::Ordering::Relaxed)
}

fn prev_state(idx: u32, preempt: bool) -> &'static str {
    if is_idle(idx) {
        return "R";
    }
    match task::thread(idx).state() {
        task::ThreadState::Sleeping => "S",
        task::ThreadState::Dead => "X",
        _ if preempt => "R+",
        _ => "R",
    }
}

/// Hook: a context switch on this CPU from `prev` to `next` (thread slot
/// indices), called by `__schedule` with this CPU's `rq` locked, after the
/// pick and before the switch.
/// `preempt`: the switch is a preemption (prev stays runnable).
#[inline]
pub fn sched_switch(rq: &Rq, prev: u32, next: u32, preempt: bool) {
    if !on() {
        return;
    }
    record(Rec {
        ts: arch::now_ns(),
        cpu: arch::cpu_id(),
        cur: prev,
        a: prev,
        a_prio: prio_of(rq, prev),
        b: next,
        b_prio: prio_of(rq, next),
        kind: Kind::Switch {
            state: prev_state(prev, preempt),
        },
        cur_comm: name(prev),
        a_comm: name(prev),
        b_comm: name(next),
    });
}

/// Records an event about one thread (`idx`), seen from the current one.
fn record_task_event(idx: u32, prio: i32, kind: Kind) {
    let cur = task::current_idx();
    record(Rec {
        ts: arch::now_ns(),
        cpu: arch::cpu_id(),
        cur,
        a: idx,
        a_prio: prio,
        b: 0,
        b_prio: 0,
        kind,
        cur_comm: name(cur),
        a_comm: name(idx),
        b_comm: "",
    });
}

fn wakeup(idx: u32, prio: i32, target: CpuId, new: bool) {
    record_task_event(idx, prio, Kind::Wakeup { new, target });
}

/// Hook: thread `idx` (Linux prio `prio`, `SchedTask::prio`) was woken, to
/// run on `target_cpu` (`try_to_wake_up`).
#[inline]
pub fn sched_wakeup(idx: u32, prio: i32, target_cpu: CpuId) {
    if on() {
        wakeup(idx, prio, target_cpu, false);
    }
}

/// Hook: new thread `idx` was queued on `target_cpu` (`wake_up_new`).
#[inline]
pub fn sched_wakeup_new(idx: u32, prio: i32, target_cpu: CpuId) {
    if on() {
        wakeup(idx, prio, target_cpu, true);
    }
}

/// Hook: thread `idx` (Linux prio `prio`) moves from CPU `orig` to `dest`.
#[inline]
pub fn sched_migrate_task(idx: u32, prio: i32, orig: CpuId, dest: CpuId) {
    if on() {
        record_task_event(idx, prio, Kind::Migrate { orig, dest });
    }
}

/// A thread's name at record time (idle threads are named at dump time).
fn name(idx: u32) -> &'static str {
    if is_idle(idx) {
        ""
    } else {
        task::thread(idx).name()
    }
}

/// `comm` as ftrace prints it: idle threads are `swapper/N`.
pub struct Comm(pub u32, pub &'static str);

impl core::fmt::Display for Comm {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        if is_idle(self.0) {
            write!(f, "swapper/{}", self.0)
        } else {
            f.write_str(self.1)
        }
    }
}

pub fn pid(idx: u32) -> u32 {
    if is_idle(idx) {
        0
    } else {
        idx
    }
}

/// Starts recording on every online CPU, clearing the rings (allocated
/// here the first time, fallibly: a heap too small for them is an error
/// and nothing changes).
pub fn start() -> Result<(), String> {
    // One ring per online CPU (the others stay unallocated), allocated
    // outside the hooks' critical sections and fallibly: a heap too small
    // for them is an error, and nothing changes.
    let online = crate::sched::online_mask();
    let no_memory = || {
        alloc::format!(
            "trace: not enough memory for the event rings ({} KiB per online CPU)",
            RING_LEN * core::mem::size_of::<Option<Rec>>() / 1024
        )
    };
    // (cpu, its new ring), on the heap: up to MAX_CPUS of them would not
    // fit on a thread's stack.
    // Allocation failures are this command's error: failing allocations
    // on demand may hit them (`kernel_hal::heap::may_fail`).
    let mut fresh: Vec<(usize, Ring)> = Vec::new();
    kernel_hal::heap::may_fail(|| fresh.try_reserve_exact(online.weight()))
        .map_err(|_| no_memory())?;
    for cpu in online.iter() {
        // Interrupts off: the tick records events into these rings (with a
        // runqueue lock held) and would spin on one this thread held.
        let irq = arch::IrqGuard::save();
        let has_ring = RINGS[cpu].lock().is_some();
        drop(irq);
        if has_ring {
            continue;
        }
        let mut buf: Vec<Option<Rec>> = Vec::new();
        if kernel_hal::heap::may_fail(|| buf.try_reserve_exact(RING_LEN)).is_err() {
            return Err(no_memory());
        }
        buf.resize(RING_LEN, None);
        fresh.push((
            cpu,
            Ring {
                buf: buf.into_boxed_slice(),
                head: 0,
                len: 0,
            },
        ));
    }
    let mut fresh = fresh.into_iter().peekable();
    for (cpu, ring) in RINGS.iter().enumerate() {
        let f = fresh.next_if(|(c, _)| *c == cpu).map(|(_, r)| r);
        let irq = arch::IrqGuard::save();
        {
            let mut g = ring.lock();
            match (g.as_mut(), f) {
                (Some(r), _) => {
                    r.head = 0;
                    r.len = 0;
                }
                (None, f) => *g = f,
            }
        }
        drop(irq);
    }
    OVERWRITTEN.store(0, Ordering::Relaxed);
    ENABLED.store(true, Ordering::Release);
    Ok(())
}

/// Stops recording; returns the events kept in the rings.
pub fn stop() -> usize {
    ENABLED.store(false, Ordering::Release);
    RINGS
        .iter()
        .map(|r| {
            let irq = arch::IrqGuard::save();
            let n = r.lock().as_ref().map_or(0, |r| r.len);
            drop(irq);
            n
        })
        .sum()
}

/// Records lost to overwriting since the last [`start`].
pub fn overwritten() -> u64 {
    OVERWRITTEN.load(Ordering::Relaxed)
}

/// Every record in the rings, merged by time.
pub fn snapshot() -> Vec<Rec> {
    let mut out = Vec::new();
    for ring in &RINGS {
        let mut chunk = Vec::with_capacity(RING_LEN);
        let irq = arch::IrqGuard::save();
        if let Some(r) = ring.lock().as_ref() {
            let n = r.buf.len();
            for k in 0..r.len {
                if let Some(rec) = r.buf[(r.head + n - r.len + k) % n] {
                    chunk.push(rec);
                }
            }
        }
        drop(irq);
        out.extend(chunk);
    }
    out.sort_by_key(|r| r.ts);
    out
}
