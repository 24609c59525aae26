//! The real-time class: SCHED_FIFO and SCHED_RR with 99 priorities.
//!
//! One FIFO list per priority, linked through the runqueue's task slots
//! ([`crate::slots`]), and a 100-bit bitmap of non-empty lists, so enqueue,
//! dequeue and pick are O(1): the pick is the head of the highest non-empty
//! list (a leading-zero count). The running RT
//! task stays at its list's head, so a task preempted by a higher priority
//! resumes first among its peers. SCHED_RR tasks carry a time slice
//! (`kernel.sched_rr_timeslice_ms`); when it runs out the task moves to the tail
//! of its list and, if a peer is waiting, the CPU is rescheduled at once.

use crate::config::SchedConfig;
use crate::slots::Slot;
use crate::task::{Policy, SchedTask, MAX_RT_PRIO, NIL};

const NPRIO: usize = MAX_RT_PRIO as usize + 1;

/// Most queued RT tasks [`RtRq::highest_pushable`] looks at per call, so
/// that a push or pull decision is O(1) in the number of tasks. Linux keeps
/// a separate priority-sorted list of the pushable tasks (`pushable_tasks`);
/// we walk the priority lists from the top instead, which costs nothing on
/// enqueue and dequeue but lets more than this many unsuitable tasks (the
/// running one, pinned ones, ones not allowed on the target) queued above a
/// pushable one hide it from that decision.
pub const PUSHABLE_SCAN: usize = 16;

/// One CPU's RT runqueue.
#[derive(Clone, Debug)]
pub struct RtRq {
    bitmap: [u64; 2],
    head: [u32; NPRIO],
    tail: [u32; NPRIO],
    /// Queued RT tasks (the running one included).
    pub nr_running: u32,
}

impl Default for RtRq {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn prio(ts: &[SchedTask], i: u32) -> usize {
    ts[i as usize].params.rt_priority as usize
}

impl RtRq {
    /// An empty RT runqueue.
    pub const fn new() -> Self {
        RtRq {
            bitmap: [0; 2],
            head: [NIL; NPRIO],
            tail: [NIL; NPRIO],
            nr_running: 0,
        }
    }

    fn set_bit(&mut self, p: usize) {
        self.bitmap[p / 64] |= 1 << (p % 64);
    }

    fn clear_bit(&mut self, p: usize) {
        self.bitmap[p / 64] &= !(1 << (p % 64));
    }

    /// The highest priority with a queued task.
    #[inline]
    pub fn highest_prio(&self) -> Option<u8> {
        if self.bitmap[1] != 0 {
            return Some((64 + 63 - self.bitmap[1].leading_zeros()) as u8);
        }
        if self.bitmap[0] != 0 {
            return Some((63 - self.bitmap[0].leading_zeros()) as u8);
        }
        None
    }

    /// Links the task at the tail (or head) of its priority's list.
    pub fn enqueue(&mut self, ts: &mut [SchedTask], id: Slot, at_head: bool) {
        let i = id.0;
        let p = prio(ts, i);
        let rt = &mut ts[i as usize].rt;
        debug_assert!(!rt.on_list);
        rt.on_list = true;
        if self.head[p] == NIL {
            rt.prev = NIL;
            rt.next = NIL;
            self.head[p] = i;
            self.tail[p] = i;
            self.set_bit(p);
        } else if at_head {
            let h = self.head[p];
            rt.prev = NIL;
            rt.next = h;
            ts[h as usize].rt.prev = i;
            self.head[p] = i;
        } else {
            let t = self.tail[p];
            rt.prev = t;
            rt.next = NIL;
            ts[t as usize].rt.next = i;
            self.tail[p] = i;
        }
        self.nr_running += 1;
    }

    /// Unlinks the task.
    pub fn dequeue(&mut self, ts: &mut [SchedTask], id: Slot) {
        let i = id.0;
        let p = prio(ts, i);
        let (prev, next) = {
            let rt = &mut ts[i as usize].rt;
            debug_assert!(rt.on_list);
            rt.on_list = false;
            let pn = (rt.prev, rt.next);
            rt.prev = NIL;
            rt.next = NIL;
            pn
        };
        if prev == NIL {
            self.head[p] = next;
        } else {
            ts[prev as usize].rt.next = next;
        }
        if next == NIL {
            self.tail[p] = prev;
        } else {
            ts[next as usize].rt.prev = prev;
        }
        if self.head[p] == NIL {
            self.clear_bit(p);
        }
        self.nr_running -= 1;
    }

    /// Moves the task to the tail of its list (RR expiry, yield).
    pub fn requeue_tail(&mut self, ts: &mut [SchedTask], id: Slot) {
        self.dequeue(ts, id);
        self.enqueue(ts, id, false);
    }

    /// Is the task alone on its priority list?
    pub fn alone(&self, ts: &[SchedTask], id: Slot) -> bool {
        let p = prio(ts, id.0);
        self.head[p] == id.0 && self.tail[p] == id.0
    }

    /// The highest-priority task (`pick_task_rt`). O(1).
    #[inline]
    pub fn pick_task(&self) -> Option<Slot> {
        self.highest_prio().map(|p| Slot(self.head[p as usize]))
    }

    /// The first queued task, in pick order (priority, then FIFO), other
    /// than slot `curr` that `ok` accepts, looking at most at
    /// [`PUSHABLE_SCAN`] tasks (`pick_highest_pushable_task`).
    pub fn highest_pushable(
        &self,
        ts: &[SchedTask],
        curr: u32,
        ok: impl Fn(&SchedTask) -> bool,
    ) -> Option<Slot> {
        let mut seen = 0;
        for w in [1usize, 0] {
            let mut bits = self.bitmap[w];
            while bits != 0 {
                let b = 63 - bits.leading_zeros() as usize;
                bits &= !(1 << b);
                let mut i = self.head[w * 64 + b];
                while i != NIL {
                    if seen == PUSHABLE_SCAN {
                        return None;
                    }
                    seen += 1;
                    if i != curr && ok(&ts[i as usize]) {
                        return Some(Slot(i));
                    }
                    i = ts[i as usize].rt.next;
                }
            }
        }
        None
    }

    /// Charges the running RT task; returns the runtime charged.
    pub fn update_curr(ts: &mut [SchedTask], id: Slot, now: u64) -> u64 {
        let t = &mut ts[id.0 as usize];
        let delta = now.saturating_sub(t.se.exec_start);
        t.se.exec_start = now;
        t.se.sum_exec_runtime += delta;
        if t.params.policy == Policy::RoundRobin {
            t.rt.slice_left_ns = t.rt.slice_left_ns.saturating_sub(delta);
        }
        delta
    }

    /// The tick (`task_tick_rt`): an RR task whose slice ran out goes to the tail
    /// of its list; returns true when a peer should run now.
    pub fn task_tick(
        &mut self,
        ts: &mut [SchedTask],
        cfg: &SchedConfig,
        id: Slot,
        now: u64,
    ) -> bool {
        Self::update_curr(ts, id, now);
        let t = &mut ts[id.0 as usize];
        if t.params.policy != Policy::RoundRobin || t.rt.slice_left_ns > 0 {
            return false;
        }
        t.rt.slice_left_ns = cfg.tunables.rr_timeslice_ns();
        if self.alone(ts, id) {
            return false;
        }
        self.requeue_tail(ts, id);
        true
    }

    /// Checks list links, counts and the bitmap.
    pub fn check(&self, ts: &[SchedTask]) -> Result<(), &'static str> {
        let mut n = 0;
        for p in 0..NPRIO {
            let bit = self.bitmap[p / 64] & (1 << (p % 64)) != 0;
            if bit != (self.head[p] != NIL) {
                return Err("rt bitmap out of sync");
            }
            let mut i = self.head[p];
            let mut prev = NIL;
            while i != NIL {
                let rt = &ts[i as usize].rt;
                if rt.prev != prev || !rt.on_list || prio(ts, i) != p {
                    return Err("rt list links broken");
                }
                n += 1;
                prev = i;
                i = rt.next;
            }
            if self.tail[p] != prev {
                return Err("rt list tail stale");
            }
        }
        if n != self.nr_running {
            return Err("rt nr_running wrong");
        }
        Ok(())
    }
}
