//! The fair runqueue's timeline: a B+tree of entities ordered by virtual
//! deadline and augmented with each subtree's minimum vruntime and minimum and
//! maximum slice.
//!
//! # Why a B+tree
//!
//! The scheduler's hot cycle re-inserts the running entity (`put_prev`),
//! searches for the earliest eligible deadline (`pick_eevdf`) and removes the
//! picked entity (`set_next`). A binary tree pays one dependent load per level
//! for each of the three (about 14 levels at n = 10 000), plus rotations and
//! their augmentation updates. A B+tree with nodes of [`B`] entries is
//! log_{B/2} n deep (4 levels at n = 10 000, a single leaf up to n = 16); each
//! node is scanned linearly, which is a few contiguous cache lines.
//!
//! # Layout
//!
//! Every node, leaf or internal, holds up to [`B`] entries in key order, stored
//! as parallel arrays (structure of arrays, so a scan of keys or of vruntimes
//! reads contiguous memory):
//!
//! - in a **leaf**, entry `k` is one entity: `child[k]` is its task id, `key[k]`
//!   its deadline, `minv[k]` its vruntime, `sl[k]` its slice;
//! - in an **internal node**, entry `k` summarises child subtree `child[k]`:
//!   `key[k]` is the subtree's smallest deadline (its first entry's), `minv[k]`
//!   its minimum vruntime and `sl[k]` its minimum and maximum slice.
//!
//! `sl` packs two 32-bit lanes per entry: the minimum slice, and the maximum
//! as `u32::MAX − slice`, so one lane-wise minimum keeps both (slices are at
//! most 100 ms). The minimum serves `cfs_rq_min_slice` (slice protection,
//! a group entity's slice); the maximum serves Linux 7.2's lag clamp,
//! `cfs_rq_max_slice() + TICK_NSEC`. One array keeps the node at 512 bytes
//! and every shift and copy as it was.
//!
//! So a leaf entry is simply the summary of a one-entity subtree and every
//! level is read the same way. All leaves are at the same depth; every node but
//! the root holds at least `B/2` entries, and an internal root at least two.
//!
//! Entities are the runqueue's slots ([`crate::slots`]), not task ids, so the
//! tree's memory follows the tasks this runqueue holds. Nodes live in an arena
//! (with a free list) and link to each other by index, and `leaf_of[slot]`
//! records the leaf holding each queued entity, so removal never searches by
//! key and the crate needs no `unsafe`. [`Timeline::try_reserve`] sizes both
//! for a slot count, the node arena for its worst case
//! ([`crate::slots::tree_nodes_bound`]): between two reservations (made by
//! the runqueue when its slot count grows) nothing allocates. The entity's
//! own copy of its values lives in its `SchedTask`; the two agree while it is
//! queued, because a queued entity's vruntime, deadline and slice only change
//! while it is out of the tree (as the running entity, or between a dequeue and
//! a re-insert).
//!
//! # Operations
//!
//! - **Insert** descends to the last child whose smallest key is not after the
//!   new key, and puts the entity after every equal key, so equal deadlines
//!   keep FIFO order. A full node splits in two halves; the split may climb to
//!   the root, which then grows a level. A deadline not before the latest
//!   queued one (a yield, or the usual re-insert of the running entity when
//!   few others are queued) skips the descent: it goes at the end of the last
//!   leaf, which is cached (`last_leaf`). The descent would scan every node on
//!   the right edge to the end; this roughly halved the cost of a yield at
//!   n = 100 000.
//! - **Erase** removes the entry from `leaf_of[slot]`. A node left with fewer than
//!   `B/2` entries merges with a neighbour (or, if both are too full to merge,
//!   the two share their entries evenly); a merge may climb to the root, which
//!   loses a level when left with one child.
//! - After either, the summaries on the path to the root are brought up to
//!   date, stopping at the first one that does not change. An insert needs no
//!   scan (an ancestor's minima can only drop to the new entity's values); an
//!   erase rescans a node only for a minimum the removed entity supplied.
//! - **First eligible** (`Timeline::first_eligible`, EEVDF's heap search): at
//!   each level take the first entry whose subtree minimum vruntime is
//!   eligible. That subtree holds an eligible entity, and every entity in the
//!   entries before it has a deadline no later and is not eligible, so the
//!   answer is inside it. One node per level: O(B·log n).
//!
//! Finding a child in its parent (`Node::position`) tests the first entry
//! (the usual answer: the pick is mostly the leftmost entity, in the
//! leftmost leaf) and the last (inserts at the end go to the last leaf),
//! and otherwise is a fixed-width mask over the node rather
//! than an early-exit loop, which would mispredict on every call. `B = 16` measured best of 8, 12, 16 and 32 on the `bench`
//! cycle (one node is 512 bytes; 10 000 entities are 4 levels deep).
//!
//! The earliest-deadline entity is cached (`leftmost`) for the O(1) fast path,
//! and so is the tree's minimum slice (`cfs_rq_min_slice`, read at every
//! context switch) with the number of entities that have it: an insert lowers
//! it or counts one more, and only the erase of its last holder rescans the
//! root (after which the count is unknown, and every erase of an entity with
//! that slice rescans, until the tree empties or a shorter slice arrives). Keys are `u64` virtual times that may wrap;
//! they are only compared through signed differences, as Linux does.

use alloc::vec::Vec;

use alloc::collections::TryReserveError;

use crate::slots::{tree_nodes_bound, Slot};
use crate::task::NIL;

/// Maximum entries per node. Non-root nodes hold at least `B / 2`.
pub const B: usize = 16;
const MIN: usize = B / 2;
/// The longest tail [`Node::remove`] moves entry by entry.
const SHORT_TAIL: usize = 3;
const _: () = assert!(B >= 4 && B < 64, "node masks are u64");

/// One entry: an entity (in a leaf) or a child subtree's summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    key: u64,
    minv: u64,
    /// Minimum and maximum slice, packed ([`pack_slice`]).
    sl: u64,
    child: u32,
}

/// One B+tree node: up to [`B`] entries as parallel arrays.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Node {
    /// Deadlines (leaf) or subtree minimum deadlines (internal).
    key: [u64; B],
    /// Vruntimes (leaf) or subtree minimum vruntimes (internal).
    minv: [u64; B],
    /// Slices (leaf) or subtree minimum and maximum slices (internal),
    /// two 32-bit lanes in one word ([`pack_slice`]): one array to move,
    /// and a node stays 512 bytes.
    sl: [u64; B],
    /// Task ids (leaf) or child node indices (internal).
    child: [u32; B],
    len: u32,
    /// Parent node, NIL for the root; links the free list for a free node.
    parent: u32,
    leaf: bool,
}

impl Default for Node {
    fn default() -> Self {
        Node {
            key: [0; B],
            minv: [0; B],
            sl: [0; B],
            child: [NIL; B],
            len: 0,
            parent: NIL,
            leaf: true,
        }
    }
}

impl Node {
    #[inline]
    fn len(&self) -> usize {
        self.len as usize
    }

    #[inline]
    fn get(&self, k: usize) -> Entry {
        Entry {
            key: self.key[k],
            minv: self.minv[k],
            sl: self.sl[k],
            child: self.child[k],
        }
    }

    #[inline]
    fn set(&mut self, k: usize, e: Entry) {
        self.key[k] = e.key;
        self.minv[k] = e.minv;
        self.sl[k] = e.sl;
        self.child[k] = e.child;
    }

    /// Inserts at `k`, shifting the tail right (the node must not be full).
    #[inline]
    fn insert(&mut self, k: usize, e: Entry) {
        for j in (k..self.len()).rev() {
            self.key[j + 1] = self.key[j];
            self.minv[j + 1] = self.minv[j];
            self.sl[j + 1] = self.sl[j];
            self.child[j + 1] = self.child[j];
        }
        self.set(k, e);
        self.len += 1;
    }

    /// Removes entry `k`, shifting the tail left (one `memmove` per array:
    /// the element loop cost about 12 instructions per entry). The last
    /// entry (often the only one: a CPU running one task between sleeps)
    /// has no tail: nothing moves. The kernel's build, without vector
    /// registers, made the fixed-size shift below three `memmove` calls of
    /// 120 bytes even then, about 115 instructions for nothing.
    #[inline]
    fn remove(&mut self, k: usize) {
        let len = self.len();
        let tail = len.saturating_sub(k + 1);
        if tail == 0 {
            // No tail: the entries from `len - 1` on are unused.
        } else if tail <= SHORT_TAIL {
            // A short tail (a CPU with two or three tasks) moves entry by
            // entry, in straight-line code: three `memmove` calls cost the
            // kernel over 100 instructions whatever they move.
            for j in k..k + SHORT_TAIL {
                if j + 1 < len {
                    self.key[j] = self.key[j + 1];
                    self.minv[j] = self.minv[j + 1];
                    self.sl[j] = self.sl[j + 1];
                    self.child[j] = self.child[j + 1];
                }
            }
        } else if k == 0 {
            // The usual case (the leftmost entity): a fixed-size shift of the
            // whole arrays, which compiles to straight vector moves.
            self.key.copy_within(1..B, 0);
            self.minv.copy_within(1..B, 0);
            self.sl.copy_within(1..B, 0);
            self.child.copy_within(1..B, 0);
        } else {
            self.key.copy_within(k + 1..len, k);
            self.minv.copy_within(k + 1..len, k);
            self.sl.copy_within(k + 1..len, k);
            self.child.copy_within(k + 1..len, k);
        }
        self.len -= 1;
    }

    /// Bit `j` set for each entry `j < len` whose `a[j]` satisfies `f`. Runs
    /// over the whole fixed-size array so it compiles to straight-line vector
    /// code: no data-dependent branch to mispredict. An index loop rather
    /// than `iter().enumerate()`: the same machine code once optimised, but
    /// two fifths of the instructions in a debug build, and so under Miri,
    /// where the tree's model tests build about 66 000 of these masks.
    #[inline]
    fn mask<T: Copy>(&self, a: &[T; B], f: impl Fn(T) -> bool) -> u64 {
        let mut m = 0u64;
        let mut j = 0;
        while j < B {
            m |= u64::from(f(a[j])) << j;
            j += 1;
        }
        m & ((1u64 << self.len) - 1)
    }

    /// Where `child` sits in this node.
    #[inline]
    fn position(&self, child: u32) -> usize {
        // The first entry is the common case: the pick is usually the
        // leftmost entity, in the leftmost leaf.
        if self.child[0] == child {
            return 0;
        }
        // And the last: inserts at the end go to the last leaf.
        let last = self.len().saturating_sub(1);
        if self.child[last] == child {
            return last;
        }
        let m = self.mask(&self.child, |c| c == child);
        debug_assert!(m != 0, "child not in its parent");
        m.trailing_zeros() as usize
    }

    /// Number of entries whose key is not after `key` (where `key` goes, after
    /// all equal keys; the keys are sorted).
    #[inline]
    fn upper_bound(&self, key: u64) -> usize {
        let len = self.len();
        self.key[..len]
            .iter()
            .position(|&k| vbefore(key, k))
            .unwrap_or(len)
    }

    /// This node's summary, as its parent's entry for it (`child` = `me`).
    #[inline]
    fn summary(&self, me: u32) -> Entry {
        Entry {
            key: self.key[0],
            minv: self.min_vruntime(),
            sl: self.slices(),
            child: me,
        }
    }

    /// The earliest vruntime among the entries: the minimum of the signed
    /// distances from the first (virtual times are compared by difference).
    /// Like [`Node::slices`], it runs over fixed-size halves of the array
    /// (the second only when in use: a node is often at its minimum fill,
    /// right after a split), which the compiler turns into straight-line code.
    #[inline]
    fn min_vruntime(&self) -> u64 {
        let base = self.minv[0];
        let len = self.len();
        let dist = |j: usize| {
            if j < len {
                self.minv[j].wrapping_sub(base) as i64
            } else {
                0
            }
        };
        let mut d = (0..MIN).map(dist).fold(0i64, i64::min);
        if len > MIN {
            d = (MIN..B).map(dist).fold(d, i64::min);
        }
        base.wrapping_add(d as u64)
    }

    /// The entries' minimum and maximum slices, packed: each lane's
    /// minimum ([`pack_slice`]), over fixed-size halves as above.
    #[inline]
    fn slices(&self) -> u64 {
        let len = self.len();
        let lanes = |(hi, lo): (u64, u32), j: usize| {
            if j < len {
                let v = self.sl[j];
                (hi.min(v >> 32), lo.min(v as u32))
            } else {
                (hi, lo)
            }
        };
        let mut m = (0..MIN).fold((u64::from(u32::MAX), u32::MAX), lanes);
        if len > MIN {
            m = (MIN..B).fold(m, lanes);
        }
        (m.0 << 32) | u64::from(m.1)
    }
}

/// `a < b` for wrapping virtual times.
#[inline]
pub(crate) fn vbefore(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// The earlier of two wrapping virtual times.
#[inline]
pub(crate) fn vmin(a: u64, b: u64) -> u64 {
    if vbefore(b, a) {
        b
    } else {
        a
    }
}

/// A slice as a node entry: the minimum in the high lane, the maximum
/// stored as `u32::MAX - slice` in the low lane, so that a lane-wise
/// minimum ([`lane_min`]) keeps both. Slices are at most
/// [`crate::tunables::MAX_SLICE_NS`] (100 ms), well inside 32 bits; a
/// longer one would be cut to `u32::MAX` ns (4.29 s).
#[inline]
fn pack_slice(slice: u64) -> u64 {
    debug_assert!(
        slice <= u64::from(u32::MAX),
        "slice {slice} ns beyond 32 bits"
    );
    let s = slice.min(u64::from(u32::MAX));
    (s << 32) | (u64::from(u32::MAX) - s)
}

/// The minimum slice of a packed entry.
#[inline]
fn lane_min_slice(p: u64) -> u64 {
    p >> 32
}

/// The maximum slice of a packed entry.
#[inline]
fn lane_max_slice(p: u64) -> u64 {
    u64::from(u32::MAX - p as u32)
}

/// Lane-wise minimum of two packed entries: the smaller minimum and the
/// larger maximum.
#[inline]
fn lane_min(a: u64, b: u64) -> u64 {
    ((a >> 32).min(b >> 32) << 32) | u64::from((a as u32).min(b as u32))
}

/// [`Timeline::iter`]: the leaf being walked (NIL when done) and the next
/// entry in it.
pub(crate) struct InOrder<'a> {
    t: &'a Timeline,
    leaf: u32,
    k: usize,
}

impl Iterator for InOrder<'_> {
    /// (slot, deadline, vruntime, slice).
    type Item = (u32, u64, u64, u64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.leaf == NIL {
            return None;
        }
        let n = self.t.nd(self.leaf);
        let e = n.get(self.k);
        self.k += 1;
        if self.k == n.len() {
            self.leaf = self.t.next_leaf(self.leaf);
            self.k = 0;
        }
        Some((e.child, e.key, e.minv, lane_min_slice(e.sl)))
    }
}

/// The tree: its node arena, the leaf of every queued entity, the root and the
/// cached earliest-deadline entity (NIL when empty).
#[derive(Clone, Debug)]
pub struct Timeline {
    nodes: Vec<Node>,
    /// The leaf holding each queued entity, NIL when not queued.
    leaf_of: Vec<u32>,
    /// Head of the free node list (linked through `parent`).
    free: u32,
    root: u32,
    pub(crate) leftmost: u32,
    /// The last leaf (latest deadlines), NIL when empty: an entity whose
    /// deadline is not before every queued one goes there directly.
    last_leaf: u32,
    /// Minimum slice over the whole tree (`u64::MAX` when empty), kept up to
    /// date so `min_slice` (twice per context switch) does not rescan the root.
    min_slice: u64,
    /// How many queued entities have the slice `min_slice`, or 0 when not
    /// known (after the last known holder left, until the tree empties or a
    /// shorter slice arrives). While it is known, erasing one of several
    /// holders needs no rescan of the root (the usual case: most entities
    /// share the base slice).
    min_slice_holders: u32,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new()
    }
}

impl Timeline {
    /// An empty tree; allocates nothing until [`Timeline::try_reserve`].
    pub const fn new() -> Self {
        Timeline {
            nodes: Vec::new(),
            leaf_of: Vec::new(),
            free: NIL,
            root: NIL,
            leftmost: NIL,
            last_leaf: NIL,
            min_slice: u64::MAX,
            min_slice_holders: 0,
        }
    }

    /// An empty tree with room for slots below `slots` (tests).
    pub fn with_capacity(slots: usize) -> Self {
        let mut t = Self::new();
        t.try_reserve(slots).expect("Timeline::with_capacity");
        t.add_slots(slots);
        t
    }

    /// Reserves room for slots below `slots`: `leaf_of` entries and the node
    /// arena for the worst case of that many entities ([`tree_nodes_bound`]),
    /// so that no insert allocates until the next reservation.
    pub fn try_reserve(&mut self, slots: usize) -> Result<(), TryReserveError> {
        self.leaf_of
            .try_reserve_exact(slots.saturating_sub(self.leaf_of.len()))?;
        let nodes = tree_nodes_bound(slots);
        self.nodes
            .try_reserve_exact(nodes.saturating_sub(self.nodes.len()))?;
        Ok(())
    }

    /// Makes slots below `slots` usable (within the reservation).
    pub fn add_slots(&mut self, slots: usize) {
        if slots > self.leaf_of.len() {
            debug_assert!(
                slots <= self.leaf_of.capacity(),
                "add_slots beyond the reservation"
            );
            self.leaf_of.resize(slots, NIL);
        }
    }

    /// Are slots below `slots` usable, and the node arena reserved for that
    /// many entities (so inserts cannot allocate)?
    pub fn reserved_for(&self, slots: usize) -> bool {
        self.leaf_of.len() >= slots && self.nodes.capacity() >= tree_nodes_bound(slots)
    }

    /// Bytes of heap it holds.
    pub fn heap_bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Node>()
            + self.leaf_of.capacity() * core::mem::size_of::<u32>()
    }

    #[inline]
    fn nd(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    #[inline]
    fn nm(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    /// Two distinct nodes, both mutable.
    fn pair(&mut self, a: u32, b: u32) -> (&mut Node, &mut Node) {
        let (a, b) = (a as usize, b as usize);
        debug_assert_ne!(a, b);
        if a < b {
            let (lo, hi) = self.nodes.split_at_mut(b);
            (&mut lo[a], &mut hi[0])
        } else {
            let (lo, hi) = self.nodes.split_at_mut(a);
            (&mut hi[0], &mut lo[b])
        }
    }

    #[inline]
    fn alloc_node(&mut self, leaf: bool) -> u32 {
        let i = self.free;
        if i == NIL {
            return self.push_node(leaf);
        }
        self.free = self.nd(i).parent;
        let n = self.nm(i);
        n.len = 0;
        n.parent = NIL;
        n.leaf = leaf;
        i
    }

    /// [`Timeline::alloc_node`] with no free node: a new one (out of line:
    /// its zeroed node on the stack cost every reuse a 512-byte frame).
    #[cold]
    #[inline(never)]
    fn push_node(&mut self, leaf: bool) -> u32 {
        // The arena grows up to its high-water mark, within the capacity
        // reserved for the slot count (`try_reserve`): no allocation.
        debug_assert!(
            self.nodes.len() < self.nodes.capacity(),
            "tree node arena beyond its reservation"
        );
        self.nodes.push(Node::default());
        let i = (self.nodes.len() - 1) as u32;
        self.nm(i).leaf = leaf;
        i
    }

    fn free_node(&mut self, i: u32) {
        let free = self.free;
        let n = self.nm(i);
        n.len = 0;
        n.parent = free;
        self.free = i;
    }

    /// The earliest-deadline entity, or `None`.
    #[inline]
    pub fn first(&self) -> Option<Slot> {
        (self.leftmost != NIL).then_some(Slot(self.leftmost))
    }

    /// Is the tree empty?
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    /// Minimum vruntime over the whole tree.
    #[inline]
    pub fn min_vruntime(&self) -> Option<u64> {
        (self.root != NIL).then(|| self.nd(self.root).min_vruntime())
    }

    /// Minimum slice over the whole tree.
    #[inline]
    pub fn min_slice(&self) -> Option<u64> {
        (self.root != NIL).then_some(self.min_slice)
    }

    /// Maximum slice over the whole tree (Linux 7.2's `root->max_slice`),
    /// read off the root's entries: O(B).
    #[inline]
    pub fn max_slice(&self) -> Option<u64> {
        (self.root != NIL).then(|| lane_max_slice(self.nd(self.root).slices()))
    }

    /// The earliest-deadline entity's vruntime (0 when empty), read from the
    /// first leaf.
    #[inline]
    pub(crate) fn first_vruntime(&self) -> u64 {
        match self.leaf_of.get(self.leftmost as usize) {
            Some(&l) => self.nd(l).minv[0],
            None => 0,
        }
    }

    /// The first entity in deadline order whose vruntime satisfies `eligible`,
    /// or NIL. `eligible` must be monotone (if v is eligible, so is every
    /// earlier vruntime), as v ≤ V is. O(B·log n).
    #[inline]
    pub(crate) fn first_eligible(&self, eligible: impl Fn(u64) -> bool) -> u32 {
        let mut i = self.root;
        while i != NIL {
            let n = self.nd(i);
            // Early exit: the eligible entry is usually among the first few.
            let Some(k) = n.minv[..n.len()].iter().position(|&v| eligible(v)) else {
                return NIL;
            };
            if n.leaf {
                return n.child[k];
            }
            i = n.child[k];
        }
        NIL
    }

    /// Points entry `child` of node `n` back at `n`.
    #[inline]
    fn own(&mut self, n: u32, child: u32) {
        if self.nd(n).leaf {
            self.leaf_of[child as usize] = n;
        } else {
            self.nm(child).parent = n;
        }
    }

    /// Refreshes the summaries from `n`'s entry in its parent up to the root,
    /// stopping at the first that does not change.
    fn fix_up(&mut self, mut n: u32) {
        loop {
            let p = self.nd(n).parent;
            if p == NIL {
                return;
            }
            let s = self.nd(n).summary(n);
            let pn = self.nm(p);
            let k = pn.position(n);
            if pn.get(k) == s {
                return;
            }
            pn.set(k, s);
            n = p;
        }
    }

    /// After `e` was added to node `n` (no split): each ancestor's entry can
    /// only take `e`'s values as its new minima (and `n`'s first key), so no
    /// scan is needed; stop at the first entry that does not change.
    fn fix_up_added(&mut self, mut n: u32, e: Entry) {
        loop {
            let p = self.nd(n).parent;
            if p == NIL {
                return;
            }
            let key = self.nd(n).key[0];
            let pn = self.nm(p);
            let k = pn.position(n);
            let old = pn.get(k);
            let new = Entry {
                key,
                minv: vmin(old.minv, e.minv),
                sl: lane_min(old.sl, e.sl),
                child: n,
            };
            if new == old {
                return;
            }
            pn.set(k, new);
            n = p;
        }
    }

    /// After `x` was removed from node `n` (no underflow): an ancestor's entry
    /// changes only if `n`'s first key changed or `x` supplied one of its
    /// minima, and only that minimum needs a rescan; stop at the first entry
    /// that does not change.
    ///
    /// `at` is where `x` was in `n` (a leaf). When a neighbour there has the
    /// same value as `x`, that minimum cannot have changed: no rescan. Equal
    /// vruntimes and slices are common (tasks placed at V with zero lag,
    /// yields with no time passing, the base slice). And once a level's
    /// summary kept a minimum, no level above can change it: the rescans
    /// stop there (with equal slices, an erase rescans no slices at all).
    fn fix_up_removed(&mut self, mut n: u32, x: Entry, mut at: usize) {
        let (mut minv_moved, mut sl_moved) = (true, true);
        loop {
            let p = self.nd(n).parent;
            if p == NIL {
                return;
            }
            let k = self.nd(p).position(n);
            let old = self.nd(p).get(k);
            let node = self.nd(n);
            let len = node.len();
            let kept = |a: &[u64; B], v: u64| {
                (at < len && a[at] == v) || (at > 0 && at <= len && a[at - 1] == v)
            };
            let new = Entry {
                key: node.key[0],
                minv: if minv_moved && x.minv == old.minv && !kept(&node.minv, x.minv) {
                    node.min_vruntime()
                } else {
                    old.minv
                },
                // `x` supplied a lane if it equals it there; an equal
                // neighbour (the same slice) supplies both lanes as well.
                sl: if sl_moved
                    && (lane_min_slice(x.sl) == lane_min_slice(old.sl)
                        || x.sl as u32 == old.sl as u32)
                    && !kept(&node.sl, x.sl)
                {
                    node.slices()
                } else {
                    old.sl
                },
                child: n,
            };
            // Above the leaf, `x` is not an entry.
            at = usize::MAX;
            if new == old {
                return;
            }
            minv_moved = new.minv != old.minv;
            sl_moved = new.sl != old.sl;
            self.nm(p).set(k, new);
            n = p;
        }
    }

    /// Inserts `z` with its key and augmented values (after all equal keys).
    /// O(B·log n).
    #[inline]
    pub fn insert(&mut self, z: Slot, deadline: u64, vruntime: u64, slice: u64) {
        let e = Entry {
            key: deadline,
            minv: vruntime,
            sl: pack_slice(slice),
            child: z.0,
        };
        if self.root == NIL {
            // A root leaf of one entry: the general path's minimum slice,
            // and `insert_at`'s insert and owner (no ancestors), without
            // its generic path (a CPU running one task between sleeps
            // fills an empty tree at each wakeup).
            self.min_slice = slice;
            self.min_slice_holders = 1;
            let r = self.alloc_node(true);
            self.root = r;
            self.leftmost = z.0;
            self.last_leaf = r;
            let n = self.nm(r);
            n.set(0, e);
            n.len = 1;
            self.leaf_of[z.0 as usize] = r;
        } else {
            self.insert_in(e);
        }
    }

    /// [`Timeline::insert`] of `e` into a tree that is not empty.
    #[inline(always)]
    fn insert_in(&mut self, e: Entry) {
        let (z, deadline, slice) = (e.child, e.key, lane_min_slice(e.sl));
        if slice < self.min_slice {
            self.min_slice = slice;
            self.min_slice_holders = 1;
        } else if slice == self.min_slice && self.min_slice_holders != 0 {
            self.min_slice_holders += 1;
        }
        // Not before the latest deadline (a yield, or a long slice): after
        // it, in the last leaf, without a descent that scans every node on
        // the right edge.
        let last = self.nd(self.last_leaf);
        let end = last.len();
        if !vbefore(deadline, last.key[end - 1]) {
            self.insert_at(self.last_leaf, end, e, e);
            return;
        }
        if vbefore(deadline, self.nd(self.root).key[0]) {
            self.leftmost = z;
        }
        let mut i = self.root;
        while !self.nd(i).leaf {
            let n = self.nd(i);
            i = n.child[n.upper_bound(deadline).saturating_sub(1)];
        }
        let k = self.nd(i).upper_bound(deadline);
        self.insert_at(i, k, e, e);
    }

    /// Inserts `e` as entry `k` of node `n`, splitting full nodes up the path.
    /// `added` is the leaf entry being inserted: the only new values the
    /// ancestors' minima can take (a split only redistributes the others).
    fn insert_at(&mut self, n: u32, k: usize, e: Entry, added: Entry) {
        if self.nd(n).len() < B {
            self.nm(n).insert(k, e);
            self.own(n, e.child);
            self.fix_up_added(n, added);
            return;
        }
        // Split: the upper half moves to a new right sibling `m`.
        let m = self.alloc_node(self.nd(n).leaf);
        {
            // Fixed-size copies: inline vector moves.
            let (src, dst) = self.pair(n, m);
            dst.key[..B - MIN].copy_from_slice(&src.key[MIN..]);
            dst.minv[..B - MIN].copy_from_slice(&src.minv[MIN..]);
            dst.sl[..B - MIN].copy_from_slice(&src.sl[MIN..]);
            dst.child[..B - MIN].copy_from_slice(&src.child[MIN..]);
        }
        for j in 0..B - MIN {
            let c = self.nd(m).child[j];
            self.own(m, c);
        }
        self.nm(m).len = (B - MIN) as u32;
        self.nm(n).len = MIN as u32;
        if self.last_leaf == n {
            self.last_leaf = m;
        }
        let (t, tk) = if k <= MIN { (n, k) } else { (m, k - MIN) };
        self.nm(t).insert(tk, e);
        self.own(t, e.child);
        let p = self.nd(n).parent;
        let sn = self.nd(n).summary(n);
        let sm = self.nd(m).summary(m);
        if p == NIL {
            let r = self.alloc_node(false);
            self.nm(r).set(0, sn);
            self.nm(r).set(1, sm);
            self.nm(r).len = 2;
            self.nm(n).parent = r;
            self.nm(m).parent = r;
            self.root = r;
            return;
        }
        let pk = self.nd(p).position(n);
        self.nm(p).set(pk, sn);
        self.insert_at(p, pk + 1, sm, added);
    }

    /// Removes `z` from the tree. O(B·log n).
    #[inline]
    pub fn erase(&mut self, z: Slot) {
        let l = self.leaf_of[z.0 as usize];
        if l == self.root && self.nd(l).len() == 1 {
            self.erase_only(z.0, l);
        } else {
            self.erase_in(z, l);
        }
    }

    /// [`Timeline::erase`] of `z` from leaf `l` of a tree holding more.
    #[inline(always)]
    fn erase_in(&mut self, z: Slot, l: u32) {
        let z = z.0;
        let k = self.nd(l).position(z);
        let x = self.nd(l).get(k);
        self.nm(l).remove(k);
        self.leaf_of[z as usize] = NIL;
        if self.nd(l).len() >= MIN {
            self.fix_up_removed(l, x, k);
        } else {
            self.rebalance(l);
        }
        if self.leftmost == z {
            // `z` was first in the first leaf, which outlives the rebalance
            // (it is the left node of any merge) unless the tree emptied.
            self.leftmost = match self.root {
                NIL => NIL,
                _ => self.nd(l).child[0],
            };
        }
        if lane_min_slice(x.sl) == self.min_slice {
            if self.min_slice_holders > 1 {
                // Another entity still has the minimum slice.
                self.min_slice_holders -= 1;
            } else {
                self.min_slice = match self.root {
                    NIL => u64::MAX,
                    r => lane_min_slice(self.nd(r).slices()),
                };
                self.min_slice_holders = 0;
            }
        }
    }

    /// [`Timeline::erase`] of `z`, the only entity (the root is leaf `l`,
    /// holding it alone): the tree empties. What the general path ends in
    /// (the entry removed, the root freed, no leftmost, the minimum slice
    /// forgotten), without its search, shift and rebalance: a CPU that runs
    /// one task between sleeps erases it from a tree of one at each pick
    /// (about 60 instructions less each time).
    #[inline(always)]
    fn erase_only(&mut self, z: u32, l: u32) {
        let x = self.nd(l).get(0);
        debug_assert_eq!(
            x.child, z,
            "the root leaf's only entry is not the erased one"
        );
        self.leaf_of[z as usize] = NIL;
        self.free_node(l);
        self.root = NIL;
        self.last_leaf = NIL;
        if self.leftmost == z {
            self.leftmost = NIL;
        }
        if lane_min_slice(x.sl) == self.min_slice {
            if self.min_slice_holders > 1 {
                self.min_slice_holders -= 1;
            } else {
                self.min_slice = u64::MAX;
                self.min_slice_holders = 0;
            }
        }
    }

    /// Restores the fill rule at `n` after it lost an entry, then the summaries.
    fn rebalance(&mut self, n: u32) {
        let len = self.nd(n).len();
        let p = self.nd(n).parent;
        if p == NIL {
            if len == 0 {
                self.free_node(n);
                self.root = NIL;
                self.last_leaf = NIL;
            } else if len == 1 && !self.nd(n).leaf {
                let c = self.nd(n).child[0];
                self.nm(c).parent = NIL;
                self.root = c;
                self.free_node(n);
            }
            return;
        }
        if len >= MIN {
            self.fix_up(n);
            return;
        }
        // Underflow: combine with a neighbour (the parent has at least two
        // children). `a` is the left node of the pair, at `ak` in the parent.
        let pk = self.nd(p).position(n);
        let ak = if pk > 0 { pk - 1 } else { 0 };
        let a = self.nd(p).child[ak];
        let b = self.nd(p).child[ak + 1];
        let (la, lb) = (self.nd(a).len(), self.nd(b).len());
        if la + lb <= B {
            // Merge b into a and drop b from the parent.
            {
                let (an, bn) = self.pair(a, b);
                an.key[la..la + lb].copy_from_slice(&bn.key[..lb]);
                an.minv[la..la + lb].copy_from_slice(&bn.minv[..lb]);
                an.sl[la..la + lb].copy_from_slice(&bn.sl[..lb]);
                an.child[la..la + lb].copy_from_slice(&bn.child[..lb]);
            }
            for j in la..la + lb {
                let c = self.nd(a).child[j];
                self.own(a, c);
            }
            self.nm(a).len = (la + lb) as u32;
            self.free_node(b);
            if self.last_leaf == b {
                self.last_leaf = a;
            }
            let sa = self.nd(a).summary(a);
            let pn = self.nm(p);
            pn.set(ak, sa);
            pn.remove(ak + 1);
            self.rebalance(p);
        } else {
            // Share evenly: each side ends with at least MIN entries.
            let half = (la + lb) / 2;
            if la < half {
                let mv = half - la;
                for j in 0..mv {
                    let x = self.nd(b).get(j);
                    self.nm(a).set(la + j, x);
                    self.own(a, x.child);
                }
                let bn = self.nm(b);
                bn.key.copy_within(mv..lb, 0);
                bn.minv.copy_within(mv..lb, 0);
                bn.sl.copy_within(mv..lb, 0);
                bn.child.copy_within(mv..lb, 0);
            } else {
                let mv = la - half;
                let bn = self.nm(b);
                bn.key.copy_within(0..lb, mv);
                bn.minv.copy_within(0..lb, mv);
                bn.sl.copy_within(0..lb, mv);
                bn.child.copy_within(0..lb, mv);
                for j in 0..mv {
                    let x = self.nd(a).get(half + j);
                    self.nm(b).set(j, x);
                    self.own(b, x.child);
                }
            }
            self.nm(a).len = half as u32;
            self.nm(b).len = (la + lb - half) as u32;
            let sa = self.nd(a).summary(a);
            let sb = self.nd(b).summary(b);
            self.nm(p).set(ak, sa);
            self.nm(p).set(ak + 1, sb);
            self.fix_up(p);
        }
    }

    /// Descends from the root taking entry `pick(node)` at each level; returns
    /// the entity reached, or NIL when empty.
    fn descend(&self, pick: impl Fn(&Node) -> usize) -> u32 {
        let mut i = self.root;
        if i == NIL {
            return NIL;
        }
        loop {
            let n = self.nd(i);
            let c = n.child[pick(n)];
            if n.leaf {
                return c;
            }
            i = c;
        }
    }

    /// The entity after (`fwd`) or before `i` in deadline order, or NIL.
    fn step(&self, i: u32, fwd: bool) -> u32 {
        let mut n = self.leaf_of[i as usize];
        let mut k = self.nd(n).position(i);
        loop {
            let len = self.nd(n).len();
            let next = if fwd {
                (k + 1 < len).then_some(k + 1)
            } else {
                k.checked_sub(1)
            };
            if let Some(k) = next {
                let mut c = self.nd(n).child[k];
                if self.nd(n).leaf {
                    return c;
                }
                // Down to the first (or last) entity of that subtree.
                loop {
                    let cn = self.nd(c);
                    let j = if fwd { 0 } else { cn.len() - 1 };
                    if cn.leaf {
                        return cn.child[j];
                    }
                    c = cn.child[j];
                }
            }
            let p = self.nd(n).parent;
            if p == NIL {
                return NIL;
            }
            k = self.nd(p).position(n);
            n = p;
        }
    }

    /// Next entity in deadline order (later deadline), or NIL.
    pub(crate) fn next(&self, i: u32) -> u32 {
        self.step(i, true)
    }

    /// Previous entity in deadline order, or NIL.
    pub(crate) fn prev(&self, i: u32) -> u32 {
        self.step(i, false)
    }

    /// The latest-deadline entity, or NIL.
    pub(crate) fn last(&self) -> u32 {
        self.descend(|n| n.len() - 1)
    }

    /// Every queued entity in deadline order with the values the tree holds
    /// for it: (slot, deadline, vruntime, slice). For the checkers, which
    /// walk the whole tree: stepping with [`Timeline::next`] and reading
    /// `Timeline::entry` (a test helper now) searches the entity's place in its leaf twice per
    /// entity (`Node::position`, a 16-wide mask: 55% of a runqueue check in
    /// a debug build); this walks each leaf in order and searches only a
    /// leaf's place in its parent when it leaves it. O(n) in all.
    pub(crate) fn iter(&self) -> InOrder<'_> {
        let leaf = match self.leaf_of.get(self.leftmost as usize) {
            Some(&l) => l,
            None => NIL,
        };
        InOrder {
            t: self,
            leaf,
            k: 0,
        }
    }

    /// The leaf after leaf `n` in key order, or NIL.
    fn next_leaf(&self, mut n: u32) -> u32 {
        loop {
            let p = self.nd(n).parent;
            if p == NIL {
                return NIL;
            }
            let k = self.nd(p).position(n) + 1;
            if k < self.nd(p).len() {
                let mut c = self.nd(p).child[k];
                while !self.nd(c).leaf {
                    c = self.nd(c).child[0];
                }
                return c;
            }
            n = p;
        }
    }

    /// Checks every structural and augmentation invariant: key order across
    /// the whole tree, node fill, equal leaf depth, parent links and
    /// `leaf_of`, exact summaries, the cached leftmost, and that no other
    /// entity is recorded as queued. Returns the entity count.
    pub fn check(&self) -> Result<usize, &'static str> {
        struct Walk {
            count: usize,
            leaf_depth: Option<usize>,
            last_key: Option<u64>,
            first: u32,
            min_slice_holders: u32,
        }
        fn walk(
            t: &Timeline,
            i: u32,
            parent: u32,
            depth: usize,
            w: &mut Walk,
        ) -> Result<(), &'static str> {
            let n = t.nd(i);
            let len = n.len();
            if n.parent != parent {
                return Err("parent link broken");
            }
            let min = if parent != NIL {
                MIN
            } else if n.leaf {
                1
            } else {
                2
            };
            if len < min || len > B {
                return Err("node fill out of bounds");
            }
            if n.leaf {
                if *w.leaf_depth.get_or_insert(depth) != depth {
                    return Err("leaves at different depths");
                }
                for k in 0..len {
                    let id = n.child[k];
                    if t.leaf_of.get(id as usize) != Some(&i) {
                        return Err("leaf_of does not match");
                    }
                    if let Some(prev) = w.last_key {
                        if vbefore(n.key[k], prev) {
                            return Err("keys out of deadline order");
                        }
                    }
                    w.last_key = Some(n.key[k]);
                    if lane_min_slice(n.sl[k]) == t.min_slice {
                        w.min_slice_holders += 1;
                    }
                    if w.count == 0 {
                        w.first = id;
                    }
                    w.count += 1;
                }
            } else {
                for k in 0..len {
                    let c = n.child[k];
                    if c as usize >= t.nodes.len() {
                        return Err("child index out of range");
                    }
                    walk(t, c, i, depth + 1, w)?;
                    if t.nd(c).summary(c) != n.get(k) {
                        return Err("subtree summary (key/min_vruntime/slices) wrong");
                    }
                }
            }
            Ok(())
        }
        let mut w = Walk {
            count: 0,
            leaf_depth: None,
            last_key: None,
            first: NIL,
            min_slice_holders: 0,
        };
        if self.root != NIL {
            walk(self, self.root, NIL, 0, &mut w)?;
        }
        if w.first != self.leftmost {
            return Err("cached leftmost is stale");
        }
        let last_leaf = match self.root {
            NIL => NIL,
            r => {
                let mut i = r;
                while !self.nd(i).leaf {
                    i = self.nd(i).child[self.nd(i).len() - 1];
                }
                i
            }
        };
        if last_leaf != self.last_leaf {
            return Err("cached last leaf is stale");
        }
        let min_slice = match self.root {
            NIL => u64::MAX,
            r => lane_min_slice(self.nd(r).slices()),
        };
        if min_slice != self.min_slice {
            return Err("cached min_slice is stale");
        }
        if self.min_slice_holders != 0 && self.min_slice_holders != w.min_slice_holders {
            return Err("count of minimum-slice holders is wrong");
        }
        // A plain loop: `filter().count()` took 1.6 times its instructions
        // in a debug build (Miri), where this scan of every slot is up to
        // half of a tree check.
        let mut recorded = 0;
        for &l in &self.leaf_of {
            recorded += usize::from(l != NIL);
        }
        if recorded != w.count {
            return Err("leaf_of records an entity that is not in the tree");
        }
        Ok(w.count)
    }
}

#[cfg(test)]
mod tests {
    //! The runqueue tests queue at most a dozen entities, which fit in one
    //! leaf; this model test drives splits, merges, sharing and root growth
    //! and shrinkage against a sorted vector.

    use super::*;
    use alloc::vec::Vec;

    /// xorshift64*: deterministic, no dependencies.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    /// (deadline, vruntime, slice, id) in tree order: by deadline, FIFO on ties.
    type Model = Vec<(u64, u64, u64, u32)>;

    fn agree(t: &Timeline, m: &Model) {
        assert_eq!(t.check(), Ok(m.len()));
        let ids: Vec<u32> = m.iter().map(|e| e.3).collect();
        let mut fwd = Vec::new();
        let mut i = t.leftmost;
        while i != NIL {
            fwd.push(i);
            i = t.next(i);
        }
        assert_eq!(fwd, ids);
        let mut rev = Vec::new();
        let mut i = t.last();
        while i != NIL {
            rev.push(i);
            i = t.prev(i);
        }
        rev.reverse();
        assert_eq!(rev, ids);
        let walked: Vec<(u32, u64, u64, u64)> = t.iter().collect();
        let want: Vec<(u32, u64, u64, u64)> =
            m.iter().map(|&(d, v, s, id)| (id, d, v, s)).collect();
        assert_eq!(walked, want);
        assert_eq!(t.min_slice(), m.iter().map(|e| e.2).min());
        assert_eq!(t.max_slice(), m.iter().map(|e| e.2).max());
        let minv = m.iter().map(|e| e.1).reduce(vmin);
        assert_eq!(t.min_vruntime(), minv);
        for &(d, v, s, id) in m {
            assert_eq!(t.entry(id), (d, v, s));
        }
    }

    fn run(seed: u64, cap: u32, steps: usize, key_range: u64, base: u64) {
        let mut r = Rng(seed);
        let mut t = Timeline::with_capacity(cap as usize);
        let mut m: Model = Vec::new();
        let mut queued = alloc::vec![false; cap as usize];
        let mut max_height = 0;
        let every = if cfg!(miri) { MIRI_CHECK_EVERY } else { 7 };
        for step in 0..steps {
            // Drift between filling and draining so the height changes.
            let fill = (step / 500) % 2 == 0;
            let id = r.below(u64::from(cap)) as u32;
            if queued[id as usize] && (!fill || r.below(4) == 0) {
                t.erase(Slot(id));
                m.retain(|e| e.3 != id);
                queued[id as usize] = false;
            } else if !queued[id as usize] {
                let d = base.wrapping_add(r.below(key_range));
                let v = base.wrapping_add(r.below(key_range));
                let s = 1 + r.below(5);
                t.insert(Slot(id), d, v, s);
                let pos = m.iter().position(|e| vbefore(d, e.0)).unwrap_or(m.len());
                m.insert(pos, (d, v, s, id));
                queued[id as usize] = true;
            }
            max_height = max_height.max(t.height());
            if step % every == 0 || m.len() < 40 {
                agree(&t, &m);
            }
            // first_eligible against a linear scan, for a random bound.
            let bound = base.wrapping_add(r.below(key_range));
            let want = m.iter().find(|e| !vbefore(bound, e.1)).map_or(NIL, |e| e.3);
            assert_eq!(t.first_eligible(|v| !vbefore(bound, v)), want);
        }
        while let Some(&(_, _, _, id)) = m.first() {
            t.erase(Slot(id));
            m.remove(0);
        }
        agree(&t, &m);
        assert!(t.is_empty());
        // Three levels at least: splits and merges of internal nodes happened.
        assert!(max_height >= 3, "height {max_height}");
    }

    impl Timeline {
        /// The queued entity's (deadline, vruntime, slice) as the tree holds
        /// them, found from its leaf (the checkers walk with `iter` now).
        fn entry(&self, id: u32) -> (u64, u64, u64) {
            let l = self.leaf_of[id as usize];
            let n = self.nd(l);
            let e = n.get(n.position(id));
            (e.key, e.minv, lane_min_slice(e.sl))
        }

        fn height(&self) -> usize {
            let mut h = 0;
            let mut i = self.root;
            while i != NIL {
                h += 1;
                i = if self.nd(i).leaf {
                    NIL
                } else {
                    self.nd(i).child[0]
                };
            }
            h
        }
    }

    /// Enough entities for three levels.
    const CAP: u32 = (B * B + B) as u32;

    /// Random steps per run. Miri interprets ~1000x slower: fewer there, but
    /// enough to fill three levels (`run` asserts it; 200 steps do not).
    const STEPS: usize = if cfg!(miri) { 600 } else { 8000 };

    /// Under Miri the full comparisons with the model (an O(n) walk both
    /// ways, most of the cost) run every 25th step instead of every 5th or
    /// 7th, and still at every step while fewer than 40 are queued.
    const MIRI_CHECK_EVERY: usize = 25;

    #[test]
    fn matches_sorted_vector() {
        run(1, CAP, STEPS, 1 << 20, 0);
        run(2, 4 * CAP, STEPS, 1 << 20, 0);
    }

    #[test]
    fn equal_keys_stay_fifo() {
        run(3, CAP, STEPS, 4, 0);
    }

    #[test]
    fn keys_wrap() {
        run(4, CAP, STEPS, 1 << 20, u64::MAX - (1 << 19));
    }

    /// The yield pattern: the earliest deadline leaves, and comes back after
    /// every queued one (the last-leaf path), often equal to the latest (FIFO
    /// on ties); now and then one leaves from the middle or comes back
    /// earlier. The queue grows, cycles and drains, across a key wrap.
    #[test]
    fn appends_at_the_end() {
        let mut r = Rng(5);
        let cap = 4 * CAP;
        let mut t = Timeline::with_capacity(cap as usize);
        let mut m: Model = Vec::new();
        let mut free: Vec<u32> = (0..cap).collect();
        let mut latest = u64::MAX - 3000;
        let mut max_height = 0;
        let every = if cfg!(miri) { MIRI_CHECK_EVERY } else { 5 };
        for step in 0..STEPS {
            let grow = step < STEPS / 3;
            let drain = step >= 2 * STEPS / 3;
            if !m.is_empty() && (drain || (!grow && r.below(2) == 0)) {
                let at = if r.below(8) == 0 {
                    r.below(m.len() as u64) as usize
                } else {
                    0
                };
                let (_, _, _, id) = m.remove(at);
                t.erase(Slot(id));
                free.push(id);
            }
            if !drain {
                if let Some(id) = free.pop() {
                    let d = match r.below(8) {
                        0 => latest.wrapping_sub(r.below(40)),
                        1..=3 => latest,
                        _ => latest.wrapping_add(r.below(4)),
                    };
                    latest = if vbefore(latest, d) { d } else { latest };
                    let (v, s) = (r.below(1 << 10), 1 + r.below(3));
                    t.insert(Slot(id), d, v, s);
                    let pos = m.iter().position(|e| vbefore(d, e.0)).unwrap_or(m.len());
                    m.insert(pos, (d, v, s, id));
                }
            }
            max_height = max_height.max(t.height());
            if step % every == 0 || m.len() < 40 {
                agree(&t, &m);
            }
        }
        agree(&t, &m);
        // Fewer steps (Miri) leave some queued: drain them from the front.
        while let Some(&(_, _, _, id)) = m.first() {
            t.erase(Slot(id));
            m.remove(0);
            if m.len().is_multiple_of(16) {
                agree(&t, &m);
            }
        }
        assert!(t.is_empty());
        assert!(max_height >= 3, "height {max_height}");
    }
}
