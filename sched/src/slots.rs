//! Where a runqueue keeps the tasks it holds: dense local slots, and a small
//! open-addressing table from the caller's [`TaskId`](crate::TaskId) to the slot.
//!
//! # Why
//!
//! A runqueue used to keep an arena indexed by `TaskId`, sized for every id
//! the machine could use: per-CPU memory grew with the total task capacity
//! (292 bytes per possible id on every CPU, plus a wake list as long: 256
//! CPUs × 10 000 ids took 1.1 GiB before a single task ran). Now each
//! runqueue stores only the tasks it holds, in *slots* `0..len` of its own
//! arena, and the fair tree ([`crate::fair::tree`]) and the RT lists
//! ([`crate::rt`]) link slots. Memory is O(tasks held here) per CPU,
//! O(tasks) + O(CPUs) for the machine: an empty runqueue allocates nothing,
//! a slot costs about 270 bytes (the 160-byte `SchedTask`, its id, map and
//! queue entries, and its worst-case share of the tree's nodes), a held task
//! one to two slots (the slack of doubling), and 256 CPUs holding 10 000 tasks
//! take 4.4 MiB (`bench --memory` measures these).
//!
//! # Layout
//!
//! - `Rq::tasks[slot]`: the task's [`SchedTask`](crate::SchedTask)
//!   (`TaskState::Absent` marks a free slot); `Rq::slot_ids[slot]`: the slot's task id: its holder's, or
//!   for a free slot its last holder's, which stays mapped.
//! - Free slots wait in a queue (`Rq::free_queue`), oldest first. A task
//!   that sleeps and wakes on the same CPU (the common case) finds its old
//!   slot through the map and takes it back without touching the queue or
//!   the map: its queue entry just goes stale and is skipped when it reaches
//!   the front (a flag per slot keeps any slot from being queued twice, so
//!   the queue never outgrows the slots). A new task takes the oldest free
//!   slot, and only then is that slot's old id removed from the map. So the
//!   map holds at most one id per slot and never needs more room than the
//!   slots.
//! - [`IdMap`]: `TaskId` → slot, linear probing over a power-of-two table of
//!   packed `(id << 32) | slot` words, Fibonacci hashing, load at most 1/2,
//!   deletion by backward shift (no tombstones, so lookups never degrade).
//!   A lookup is one multiply and usually one cache line.
//!
//! The hot paths (tick, pick, put/set of the running task) work on slots
//! only; a `TaskId` is translated once per API call that names a task
//! (enqueue, dequeue, wakeup, attribute change), and a slot back to its id by
//! one load of `slot_ids`. The running task's slot is not freed when it is
//! dequeued (it blocked) but reserved for it until it is switched out, so a
//! wakeup in between finds the same slot, and no other task can take it
//! while the classes still name it as running.
//!
//! # Growth
//!
//! Slots are added when none is free, i.e. when the runqueue's own high-water
//! mark of held tasks is exceeded. Every structure indexed by slot (the arena,
//! `slot_ids`, the free queue and its flags, the tree's `leaf_of` and its node
//! arena, the id map) is then
//! reserved together, fallibly (`Vec::try_reserve_exact`), for twice the slot
//! count: amortised O(1), and between two growths nothing allocates: not the
//! enqueue, not the tree's splits (its node arena is reserved for the worst
//! case of the slot count, [`tree_nodes_bound`]). A failed reservation is
//! reported as [`crate::RqError::NoMemory`]; a kernel that must never allocate
//! under its runqueue locks reserves up front (`Rq::try_reserve`,
//! `smp::Scheduler::try_reserve`).

use alloc::collections::TryReserveError;
use alloc::vec::Vec;

use crate::task::NIL;

/// A task's slot in one runqueue's arena (what the fair tree and the RT lists
/// link). Local to that runqueue; the caller's name for a task stays its
/// [`crate::TaskId`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slot(pub u32);

const EMPTY: u64 = u64::MAX;
/// Smallest non-empty table (8 words, one cache line).
const MIN_BITS: u32 = 3;

/// `TaskId` → slot: linear probing, load ≤ 1/2, backward-shift deletion.
#[derive(Clone, Debug)]
pub struct IdMap {
    /// `(id << 32) | slot`, or `EMPTY`.
    table: Vec<u64>,
    /// Live entries.
    len: u32,
    /// `32 - log2(table.len())` (Fibonacci hashing takes the top bits).
    shift: u32,
}

#[inline]
fn key(e: u64) -> u32 {
    (e >> 32) as u32
}

impl Default for IdMap {
    fn default() -> Self {
        Self::new()
    }
}

impl IdMap {
    /// An empty map; allocates nothing.
    pub const fn new() -> Self {
        IdMap {
            table: Vec::new(),
            len: 0,
            shift: 32,
        }
    }

    /// Entries in the map.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// Is the map empty?
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entries it can hold without growing.
    pub fn capacity(&self) -> usize {
        self.table.len() / 2
    }

    /// Bytes of heap it holds.
    pub fn heap_bytes(&self) -> usize {
        self.table.capacity() * core::mem::size_of::<u64>()
    }

    #[inline]
    fn mask(&self) -> usize {
        self.table.len() - 1
    }

    #[inline]
    fn home(&self, id: u32) -> usize {
        (id.wrapping_mul(0x9E37_79B9) >> self.shift) as usize
    }

    /// The slot of `id`, or `NIL`.
    #[inline]
    pub fn get(&self, id: u32) -> u32 {
        if self.table.is_empty() {
            return NIL;
        }
        let mask = self.mask();
        let mut i = self.home(id);
        loop {
            let e = self.table[i];
            if e == EMPTY {
                return NIL;
            }
            if key(e) == id {
                return e as u32;
            }
            i = (i + 1) & mask;
        }
    }

    /// Makes room for `entries` entries in all (load ≤ 1/2). Rehashes into a
    /// new table when it grows; never shrinks.
    pub fn try_reserve(&mut self, entries: usize) -> Result<(), TryReserveError> {
        let want = (2 * entries.max(1)).next_power_of_two().max(1 << MIN_BITS);
        if want <= self.table.len() {
            return Ok(());
        }
        let mut table = Vec::new();
        table.try_reserve_exact(want)?;
        table.resize(want, EMPTY);
        let old = core::mem::replace(&mut self.table, table);
        self.shift = 32 - want.trailing_zeros();
        self.len = 0;
        for e in old.into_iter().filter(|&e| e != EMPTY) {
            self.insert(key(e), e as u32);
        }
        Ok(())
    }

    /// Records `id` → `slot`. `id` must not be present and the map must have
    /// room ([`IdMap::try_reserve`]): inserting never allocates.
    #[inline]
    pub fn insert(&mut self, id: u32, slot: u32) {
        assert!(
            2 * (self.len as usize + 1) <= self.table.len(),
            "IdMap::insert without reserved room"
        );
        let mask = self.mask();
        let mut i = self.home(id);
        while self.table[i] != EMPTY {
            debug_assert_ne!(key(self.table[i]), id, "id inserted twice");
            i = (i + 1) & mask;
        }
        self.table[i] = (u64::from(id) << 32) | u64::from(slot);
        self.len += 1;
    }

    /// Forgets `id` (present or not). Later entries of its probe run shift
    /// back into the hole, so no tombstone is left.
    #[inline]
    pub fn remove(&mut self, id: u32) {
        if self.table.is_empty() {
            return;
        }
        let mask = self.mask();
        let mut i = self.home(id);
        loop {
            let e = self.table[i];
            if e == EMPTY {
                return;
            }
            if key(e) == id {
                break;
            }
            i = (i + 1) & mask;
        }
        self.len -= 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let e = self.table[j];
            if e == EMPTY {
                self.table[i] = EMPTY;
                return;
            }
            // `e` may move back to the hole at `i` if its home is not in the
            // cyclic range (i, j].
            let h = self.home(key(e));
            if (j.wrapping_sub(h) & mask) >= (j.wrapping_sub(i) & mask) {
                self.table[i] = e;
                i = j;
            }
        }
    }

    /// Every `(id, slot)` pair, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        self.table
            .iter()
            .filter(|&&e| e != EMPTY)
            .map(|&e| (key(e), e as u32))
    }

    /// Checks the table: the count, the load bound, and that every entry is
    /// reachable from its home slot (no empty word between them).
    pub fn check(&self) -> Result<(), &'static str> {
        if self.table.is_empty() {
            return if self.len == 0 {
                Ok(())
            } else {
                Err("id map counts entries in an empty table")
            };
        }
        if !self.table.len().is_power_of_two()
            || 32 - self.shift != self.table.len().trailing_zeros()
        {
            return Err("id map size or shift wrong");
        }
        if 2 * self.len as usize > self.table.len() {
            return Err("id map above its load bound");
        }
        let mask = self.mask();
        let mut n = 0;
        for (i, &e) in self.table.iter().enumerate() {
            if e == EMPTY {
                continue;
            }
            n += 1;
            let mut h = self.home(key(e));
            while h != i {
                if self.table[h] == EMPTY {
                    return Err("id map entry unreachable from its home");
                }
                h = (h + 1) & mask;
            }
        }
        if n != self.len {
            return Err("id map count wrong");
        }
        Ok(())
    }
}

/// The most nodes the fair tree can use for `entities` entities: every
/// non-root node holds at least `tree::B / 2` entries, so a level holding `k`
/// items has at most `max(1, k / (B/2))` nodes; summed up to the root. About
/// `entities / 7` (73 bytes per entity at 512-byte nodes).
pub fn tree_nodes_bound(entities: usize) -> usize {
    if entities == 0 {
        return 0;
    }
    let min = crate::fair::tree::B / 2;
    let mut total = 0;
    let mut k = entities;
    loop {
        let nodes = (k / min).max(1);
        total += nodes;
        if nodes == 1 {
            return total;
        }
        k = nodes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The map against a brute-force list, with ids clustered (long probe
    /// runs), sparse, and near `u32::MAX`.
    #[test]
    fn id_map_matches_model() {
        let mut m = IdMap::new();
        let mut model: Vec<(u32, u32)> = Vec::new();
        let mut x = 0x1234_5678_9abc_def0u64;
        // Miri interprets ~1000x slower, and the model is a linear scan.
        const STEPS: u32 = if cfg!(miri) { 1_500 } else { 20_000 };
        for step in 0..STEPS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let id = match x % 3 {
                0 => (x >> 8) as u32 % 64,
                1 => (x >> 8) as u32 % 1_000_000,
                _ => u32::MAX - 1 - (x >> 8) as u32 % 64,
            };
            if let Some(p) = model.iter().position(|e| e.0 == id) {
                assert_eq!(m.get(id), model[p].1);
                if x & 1 == 0 {
                    m.remove(id);
                    model.swap_remove(p);
                }
            } else {
                assert_eq!(m.get(id), NIL);
                m.try_reserve(model.len() + 1).unwrap();
                m.insert(id, step);
                model.push((id, step));
            }
            if step % 97 == 0 {
                m.check().unwrap();
                for &(id, s) in &model {
                    assert_eq!(m.get(id), s);
                }
            }
        }
        assert_eq!(m.len(), model.len());
        let mut all: Vec<_> = m.iter().collect();
        all.sort_unstable();
        model.sort_unstable();
        assert_eq!(all, model);
    }

    #[test]
    fn check_catches_an_unreachable_entry() {
        let mut m = IdMap::new();
        m.try_reserve(4).unwrap();
        m.insert(1, 0);
        m.check().unwrap();
        // Move the entry two words past its place: an empty word now sits
        // between its home and it, so a lookup would stop before finding it.
        let i = m.table.iter().position(|&e| e != EMPTY).unwrap();
        let j = (i + 2) & m.mask();
        m.table.swap(i, j);
        assert_eq!(m.get(1), NIL);
        assert_eq!(m.check(), Err("id map entry unreachable from its home"));
    }

    #[test]
    fn nodes_bound() {
        assert_eq!(tree_nodes_bound(0), 0);
        assert_eq!(tree_nodes_bound(1), 1);
        assert_eq!(tree_nodes_bound(16), 3);
        // 10 000 entities: 1250 leaves + 156 + 19 + 2 + 1.
        assert_eq!(tree_nodes_bound(10_000), 1428);
    }
}
