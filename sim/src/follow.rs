//! Where a wakeup's preemption leads (`sim run` prints it).
//!
//! For every wakeup the waker enqueues itself (on its own CPU or another's;
//! not those left on a wake list, which the target decides from an
//! interrupt) whose decision asks to preempt a running task, by why it
//! asked ([`KIND_NAMES`]: the ineligible-waker rule,
//! `NEXT_BUDDY_INELIGIBLE_RESCHED`; PICK, the wakee is EEVDF's pick; any
//! other): what the running task was at the decision (inside its
//! RUN_TO_PARITY protection or not, how long since it was picked, how far
//! its vruntime was past the queue's average, how many tasks its CPU
//! held), what that CPU's next switch did (the running task had slept or
//! exited first, the wakee ran, another queued task ran, the running task
//! was picked again, the CPU went idle), how long the preempted task then
//! waited to run again and how long the wakee waited to run. The waits of
//! every preemption, whatever asked for it, are counted too, to compare
//! configurations.
//!
//! Off unless asked for ([`crate::run_one_followed`]; `sim run` asks):
//! the study's and the benchmark's runs do not pay for it. Output only: no
//! run reads it, and it is kept apart from
//! [`crate::engine::Counters`], whose `Debug` text the golden digests hash.
//! What it reads of the runqueue it reads through the raw lock, which
//! publishes nothing.

/// The kinds of preemption request followed, by index.
pub const KIND_NAMES: [&str; KINDS] = ["ineligible waker", "PICK", "other"];

/// [`KIND_NAMES`]' length.
pub const KINDS: usize = 3;

/// The ineligible-waker rule's kind.
pub const KIND_RULE: usize = 0;
/// PICK's kind (`FairWakeup::Picked`).
pub const KIND_PICK: usize = 1;
/// Any other decision that asked to preempt a running task.
pub const KIND_OTHER: usize = 2;

/// What the CPU's next switch after a request did, by index.
pub const NEXT_NAMES: [&str; NEXTS] = ["slept first", "wakee", "another", "same", "idle"];

/// [`NEXT_NAMES`]' length.
pub const NEXTS: usize = 5;
const NEXT_SLEPT: usize = 0;
const NEXT_WAKEE: usize = 1;
const NEXT_OTHER: usize = 2;
const NEXT_SAME: usize = 3;
const NEXT_IDLE: usize = 4;

/// Upper bounds of [`Waits::bins`], ns (the last bin has none).
pub const WAIT_BIN_NS: [u64; 3] = [10_000, 100_000, 1_000_000];

/// Waits to run: how many, their sum and their lengths by [`WAIT_BIN_NS`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Waits {
    /// Waits counted.
    pub n: u64,
    /// Their sum, ns.
    pub ns: u64,
    /// By length: below 10 µs, below 100 µs, below 1 ms, longer.
    pub bins: [u64; 4],
}

impl Waits {
    fn add(&mut self, ns: u64) {
        self.n += 1;
        self.ns += ns;
        let b = WAIT_BIN_NS.iter().position(|&lim| ns < lim).unwrap_or(3);
        self.bins[b] += 1;
    }

    /// The mean wait, µs (0 without any).
    pub fn mean_us(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.ns as f64 / self.n as f64 / 1e3
        }
    }
}

/// The requests of one kind and where they led.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KindCounters {
    /// Requests to preempt a running task.
    pub requests: u64,
    /// Of which on a CPU other than the waker's (the task preempted is not
    /// the waker).
    pub remote: u64,
    /// Of which the running task was inside its RUN_TO_PARITY protection
    /// (vruntime below `vprot`).
    pub protected: u64,
    /// Sum over requests of the running task's runtime since it was picked, ns.
    pub ran_ns: u64,
    /// Sum over requests of the running task's vruntime less the queue's
    /// average (`avg_vruntime`), virtual ns (negative: eligible).
    pub past_avg_vns: i64,
    /// Sum over requests of the CPU's runnable tasks, the wakee and the
    /// running task included (`nr_running`).
    pub depth: u64,
    /// What the CPU's next switch did ([`NEXT_NAMES`]).
    pub next: [u64; NEXTS],
    /// Of `next`, the requests on a CPU other than the waker's.
    pub next_remote: [u64; NEXTS],
    /// Sum of the time from the request to that switch, ns.
    pub to_switch_ns: u64,
    /// The tasks it switched out (`next` "wakee", "another" and "idle"):
    /// their waits to run again.
    pub preempted_waits: Waits,
    /// The wakees: from the request to their next switch in.
    pub wakee_waits: Waits,
}

/// A request waiting for its CPU's next switch.
#[derive(Clone, Copy, Debug)]
struct Pending {
    kind: u8,
    remote: bool,
    curr: u32,
    wakee: u32,
    at: u64,
}

/// What [`Follow::request`] reads of the running task at the decision.
#[derive(Clone, Copy, Debug)]
pub struct AtDecision {
    /// The CPU is not the waker's.
    pub remote: bool,
    /// Inside its RUN_TO_PARITY protection.
    pub protected: bool,
    /// Runtime since it was picked, ns.
    pub ran_ns: u64,
    /// Its vruntime less the queue's average, virtual ns.
    pub past_avg_vns: i64,
    /// The CPU's runnable tasks.
    pub depth: u32,
}

const NONE: u64 = u64::MAX;
/// A preemption no followed request asked for (tick, HRTICK, ...).
const KIND_UNFOLLOWED: u8 = KINDS as u8;

/// The follower's counters and state.
#[derive(Clone, Debug, Default)]
pub struct Follow {
    /// Counting at all (off: every hook returns at once).
    pub enabled: bool,
    /// By kind ([`KIND_NAMES`]).
    pub kinds: [KindCounters; KINDS],
    /// Every preemption (a runnable task switched out for another or for
    /// idle), whatever asked for it: the waits to run again.
    pub all_preempted: Waits,
    /// Per CPU: a request waiting for the next switch.
    pending: Vec<Option<Pending>>,
    /// Per task: when it was preempted and by which kind (or
    /// [`KIND_UNFOLLOWED`]), `NONE` if it was not.
    preempted: Vec<(u64, u8)>,
    /// Per task: when a followed request woke it, and its kind.
    woken: Vec<(u64, u8)>,
}

fn slot<T: Copy>(v: &mut Vec<T>, i: usize, fill: T) -> &mut T {
    if v.len() <= i {
        v.resize(i + 1, fill);
    }
    &mut v[i]
}

impl Follow {
    /// A direct wakeup of `wakee` asked, for `kind`, to preempt `curr` on `cpu` at `now`.
    pub fn request(
        &mut self,
        kind: usize,
        cpu: usize,
        curr: u32,
        wakee: u32,
        d: AtDecision,
        now: u64,
    ) {
        let k = &mut self.kinds[kind];
        k.requests += 1;
        k.remote += u64::from(d.remote);
        k.protected += u64::from(d.protected);
        k.ran_ns += d.ran_ns;
        k.past_avg_vns += d.past_avg_vns;
        k.depth += u64::from(d.depth);
        let p = slot(&mut self.pending, cpu, None);
        if p.is_none() {
            *p = Some(Pending {
                kind: kind as u8,
                remote: d.remote,
                curr,
                wakee,
                at: now,
            });
        }
        let w = slot(&mut self.woken, wakee as usize, (NONE, 0));
        if w.0 == NONE {
            *w = (now, kind as u8);
        }
    }

    /// `cpu` switches from `prev` to `next` (either may be `nil`, and they
    /// may be the same task) at `now`; `prev_runnable`: prev stays runnable.
    pub fn switch(
        &mut self,
        cpu: usize,
        prev: u32,
        next: u32,
        prev_runnable: bool,
        nil: u32,
        now: u64,
    ) {
        let mut by = KIND_UNFOLLOWED;
        if let Some(p) = slot(&mut self.pending, cpu, None).take() {
            if p.curr == prev {
                let k = &mut self.kinds[p.kind as usize];
                k.to_switch_ns += now - p.at;
                let o = if !prev_runnable {
                    NEXT_SLEPT
                } else if next == prev {
                    NEXT_SAME
                } else if next == nil {
                    NEXT_IDLE
                } else if next == p.wakee {
                    NEXT_WAKEE
                } else {
                    NEXT_OTHER
                };
                k.next[o] += 1;
                k.next_remote[o] += u64::from(p.remote);
                if o != NEXT_SLEPT && o != NEXT_SAME {
                    by = p.kind;
                }
            }
        }
        if next == prev {
            return;
        }
        if prev != nil && prev_runnable {
            *slot(&mut self.preempted, prev as usize, (NONE, 0)) = (now, by);
        }
        if next != nil {
            let (at, k) = std::mem::replace(
                slot(&mut self.preempted, next as usize, (NONE, 0)),
                (NONE, 0),
            );
            if at != NONE {
                self.all_preempted.add(now - at);
                if (k as usize) < KINDS {
                    self.kinds[k as usize].preempted_waits.add(now - at);
                }
            }
            let (at, k) =
                std::mem::replace(slot(&mut self.woken, next as usize, (NONE, 0)), (NONE, 0));
            if at != NONE {
                self.kinds[k as usize].wakee_waits.add(now - at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NIL: u32 = u32::MAX;

    fn at() -> AtDecision {
        AtDecision {
            remote: false,
            protected: true,
            ran_ns: 5_000,
            past_avg_vns: 700,
            depth: 4,
        }
    }

    #[test]
    fn a_request_is_followed_to_the_switch_and_the_waits() {
        let mut f = Follow::default();
        // Task 1 runs on CPU 0, wakes 2; the rule asks; 3 runs first.
        f.request(KIND_RULE, 0, 1, 2, at(), 100);
        f.switch(0, 1, 3, true, NIL, 150);
        let k = f.kinds[KIND_RULE];
        assert_eq!(k.next, [0, 0, 1, 0, 0]);
        assert_eq!(k.next_remote, [0; NEXTS]);
        assert_eq!(k.to_switch_ns, 50);
        assert_eq!(
            (k.protected, k.ran_ns, k.past_avg_vns, k.depth),
            (1, 5_000, 700, 4)
        );
        // 3 sleeps, the wakee runs: its wait is from the request.
        f.switch(0, 3, 2, false, NIL, 400);
        assert_eq!(f.kinds[KIND_RULE].wakee_waits.ns, 300);
        // 2 is preempted by a tick (unfollowed), 1 runs again: 1's wait
        // is the rule's, from its switch out.
        f.switch(0, 2, 1, true, NIL, 20_400);
        let k = f.kinds[KIND_RULE];
        assert_eq!((k.preempted_waits.n, k.preempted_waits.ns), (1, 20_250));
        assert_eq!(k.preempted_waits.bins, [0, 1, 0, 0]);
        assert_eq!(f.all_preempted.n, 1);
        // 2 runs again: an unfollowed preemption's wait counts only in all.
        f.switch(0, 1, 2, false, NIL, 20_500);
        assert_eq!(f.all_preempted.n, 2);
        assert_eq!(f.kinds[KIND_RULE].preempted_waits.n, 1);
        assert_eq!(f.kinds[KIND_PICK], KindCounters::default());
    }

    #[test]
    fn a_request_whose_task_slept_first_or_went_on_preempts_nobody() {
        let mut f = Follow::default();
        let remote = AtDecision {
            remote: true,
            ..at()
        };
        f.request(KIND_PICK, 1, 5, 6, remote, 0);
        f.switch(1, 5, 6, false, NIL, 10);
        f.request(KIND_PICK, 1, 6, 7, at(), 20);
        f.switch(1, 6, 6, true, NIL, 30);
        let k = f.kinds[KIND_PICK];
        assert_eq!(k.next, [1, 0, 0, 1, 0]);
        assert_eq!(k.next_remote, [1, 0, 0, 0, 0]);
        assert_eq!(k.remote, 1);
        assert_eq!(f.all_preempted.n, 0);
        // The first request's wakee ran at 10, the second's has not.
        assert_eq!((k.wakee_waits.n, k.wakee_waits.ns), (1, 10));
    }
}
