//! The fair runqueue's timeline: a red-black tree of entities ordered by virtual
//! deadline and augmented with each subtree's minimum vruntime and minimum slice.
//!
//! Nodes live in an array owned by the tree, indexed by [`TaskId`], and link to
//! each other by index, so insertion and removal never allocate and the crate
//! needs no `unsafe`. Each node is one 64-byte cache line holding everything a
//! walk reads: links, colour, the key (deadline), vruntime, slice and the
//! subtree minima. The entity's own copy of those values lives in its
//! `SchedTask`; the two agree while it is queued, because a queued entity's
//! vruntime, deadline and slice only change while it is out of the tree (as the
//! running entity, or between a dequeue and a re-insert).
//!
//! The augmentation is what makes EEVDF's pick O(log n): a subtree whose
//! `min_vruntime` is eligible contains an eligible entity (see
//! `FairRq::pick_eevdf`), and `min_slice` gives `cfs_rq_min_slice` in O(1).
//!
//! Equal deadlines go to the right, so entities with the same key keep FIFO
//! order. The leftmost node (earliest deadline) is cached for the O(1) fast path.
//! Keys are `u64` virtual times that may wrap; they are only compared through
//! signed differences, as Linux does.

use alloc::vec::Vec;

use crate::task::{TaskId, NIL};

/// One tree node: links, the key, and what the augmentation needs.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct Node {
    /// Virtual deadline (the key).
    pub(crate) deadline: u64,
    /// The entity's vruntime.
    pub(crate) vruntime: u64,
    /// The entity's slice.
    pub(crate) slice: u64,
    /// Minimum vruntime over this node's subtree.
    pub(crate) min_vruntime: u64,
    /// Minimum slice over this node's subtree.
    pub(crate) min_slice: u64,
    pub(crate) parent: u32,
    pub(crate) left: u32,
    pub(crate) right: u32,
    pub(crate) red: bool,
}

impl Default for Node {
    fn default() -> Self {
        Node {
            deadline: 0,
            vruntime: 0,
            slice: 0,
            min_vruntime: 0,
            min_slice: u64::MAX,
            parent: NIL,
            left: NIL,
            right: NIL,
            red: false,
        }
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

/// The tree: its node array, root and cached leftmost node (NIL when empty).
#[derive(Clone, Debug)]
pub struct Timeline {
    nodes: Vec<Node>,
    pub(crate) root: u32,
    pub(crate) leftmost: u32,
}

impl Timeline {
    /// An empty tree for ids below `capacity` (the only allocation).
    pub fn with_capacity(capacity: usize) -> Self {
        Timeline {
            nodes: alloc::vec![Node::default(); capacity],
            root: NIL,
            leftmost: NIL,
        }
    }

    /// The node of `i`.
    #[inline]
    pub(crate) fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    #[inline]
    fn n(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    #[inline]
    fn is_red(&self, i: u32) -> bool {
        i != NIL && self.node(i).red
    }

    /// The earliest-deadline entity, or `None`.
    #[inline]
    pub fn first(&self) -> Option<TaskId> {
        (self.leftmost != NIL).then_some(TaskId(self.leftmost))
    }

    /// Is the tree empty?
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.root == NIL
    }

    /// Minimum vruntime over the whole tree.
    #[inline]
    pub fn min_vruntime(&self) -> Option<u64> {
        (self.root != NIL).then(|| self.node(self.root).min_vruntime)
    }

    /// Minimum slice over the whole tree.
    #[inline]
    pub fn min_slice(&self) -> Option<u64> {
        (self.root != NIL).then(|| self.node(self.root).min_slice)
    }

    /// Recomputes one node's minima from itself and its children; returns
    /// whether they changed.
    #[inline]
    fn update_aug(&mut self, i: u32) -> bool {
        let n = *self.node(i);
        let mut minv = n.vruntime;
        let mut mins = n.slice;
        if n.left != NIL {
            let l = self.node(n.left);
            minv = vmin(minv, l.min_vruntime);
            mins = mins.min(l.min_slice);
        }
        if n.right != NIL {
            let r = self.node(n.right);
            minv = vmin(minv, r.min_vruntime);
            mins = mins.min(r.min_slice);
        }
        let m = self.n(i);
        let changed = m.min_vruntime != minv || m.min_slice != mins;
        m.min_vruntime = minv;
        m.min_slice = mins;
        changed
    }

    /// Recomputes minima from `i` up to the root.
    fn propagate(&mut self, mut i: u32) {
        while i != NIL {
            self.update_aug(i);
            i = self.node(i).parent;
        }
    }

    fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if self.node(parent).left == old {
            self.n(parent).left = new;
        } else {
            self.n(parent).right = new;
        }
    }

    fn rotate_left(&mut self, x: u32) {
        let y = self.node(x).right;
        let yl = self.node(y).left;
        self.n(x).right = yl;
        if yl != NIL {
            self.n(yl).parent = x;
        }
        let xp = self.node(x).parent;
        self.n(y).parent = xp;
        self.replace_child(xp, x, y);
        self.n(y).left = x;
        self.n(x).parent = y;
        self.update_aug(x);
        self.update_aug(y);
    }

    fn rotate_right(&mut self, x: u32) {
        let y = self.node(x).left;
        let yr = self.node(y).right;
        self.n(x).left = yr;
        if yr != NIL {
            self.n(yr).parent = x;
        }
        let xp = self.node(x).parent;
        self.n(y).parent = xp;
        self.replace_child(xp, x, y);
        self.n(y).right = x;
        self.n(x).parent = y;
        self.update_aug(x);
        self.update_aug(y);
    }

    /// Inserts `z` with its key and augmented values (after all equal keys).
    /// O(log n).
    pub fn insert(&mut self, z: TaskId, deadline: u64, vruntime: u64, slice: u64) {
        let z = z.0;
        let mut parent = NIL;
        let mut cur = self.root;
        let mut go_left = false;
        let mut leftmost = true;
        while cur != NIL {
            parent = cur;
            go_left = vbefore(deadline, self.node(cur).deadline);
            if go_left {
                cur = self.node(cur).left;
            } else {
                cur = self.node(cur).right;
                leftmost = false;
            }
        }
        *self.n(z) = Node {
            deadline,
            vruntime,
            slice,
            min_vruntime: vruntime,
            min_slice: slice,
            parent,
            left: NIL,
            right: NIL,
            red: true,
        };
        if parent == NIL {
            self.root = z;
        } else if go_left {
            self.n(parent).left = z;
        } else {
            self.n(parent).right = z;
        }
        if leftmost {
            self.leftmost = z;
        }
        // A new leaf can only lower its ancestors' minima: stop at the first
        // ancestor that does not change.
        let mut a = parent;
        while a != NIL && self.update_aug(a) {
            a = self.node(a).parent;
        }
        self.insert_fixup(z);
    }

    fn insert_fixup(&mut self, mut z: u32) {
        loop {
            let p = self.node(z).parent;
            if !self.is_red(p) {
                break;
            }
            let g = self.node(p).parent; // p is red, so it is not the root
            if p == self.node(g).left {
                let u = self.node(g).right;
                if self.is_red(u) {
                    self.n(p).red = false;
                    self.n(u).red = false;
                    self.n(g).red = true;
                    z = g;
                    continue;
                }
                if z == self.node(p).right {
                    z = p;
                    self.rotate_left(z);
                }
                let p = self.node(z).parent;
                let g = self.node(p).parent;
                self.n(p).red = false;
                self.n(g).red = true;
                self.rotate_right(g);
            } else {
                let u = self.node(g).left;
                if self.is_red(u) {
                    self.n(p).red = false;
                    self.n(u).red = false;
                    self.n(g).red = true;
                    z = g;
                    continue;
                }
                if z == self.node(p).left {
                    z = p;
                    self.rotate_right(z);
                }
                let p = self.node(z).parent;
                let g = self.node(p).parent;
                self.n(p).red = false;
                self.n(g).red = true;
                self.rotate_left(g);
            }
        }
        let root = self.root;
        self.n(root).red = false;
    }

    fn minimum(&self, mut i: u32) -> u32 {
        while self.node(i).left != NIL {
            i = self.node(i).left;
        }
        i
    }

    fn maximum(&self, mut i: u32) -> u32 {
        while self.node(i).right != NIL {
            i = self.node(i).right;
        }
        i
    }

    /// In-order successor of `i` (later deadline), or NIL.
    pub(crate) fn next(&self, i: u32) -> u32 {
        if self.node(i).right != NIL {
            return self.minimum(self.node(i).right);
        }
        let mut c = i;
        let mut p = self.node(i).parent;
        while p != NIL && self.node(p).right == c {
            c = p;
            p = self.node(p).parent;
        }
        p
    }

    /// In-order predecessor of `i`, or NIL.
    pub(crate) fn prev(&self, i: u32) -> u32 {
        if self.node(i).left != NIL {
            return self.maximum(self.node(i).left);
        }
        let mut c = i;
        let mut p = self.node(i).parent;
        while p != NIL && self.node(p).left == c {
            c = p;
            p = self.node(p).parent;
        }
        p
    }

    /// The latest-deadline node, or NIL.
    pub(crate) fn last(&self) -> u32 {
        if self.root == NIL {
            NIL
        } else {
            self.maximum(self.root)
        }
    }

    /// Replaces `u`'s subtree position with `v` (which may be NIL).
    fn transplant(&mut self, u: u32, v: u32) {
        let up = self.node(u).parent;
        self.replace_child(up, u, v);
        if v != NIL {
            self.n(v).parent = up;
        }
    }

    /// Removes `z` from the tree. O(log n).
    pub fn erase(&mut self, z: TaskId) {
        let z = z.0;
        if self.leftmost == z {
            self.leftmost = self.next(z);
        }
        let zl = self.node(z).left;
        let zr = self.node(z).right;
        let mut y_red = self.node(z).red;
        let x;
        let xp;
        if zl == NIL {
            x = zr;
            xp = self.node(z).parent;
            self.transplant(z, zr);
        } else if zr == NIL {
            x = zl;
            xp = self.node(z).parent;
            self.transplant(z, zl);
        } else {
            let y = self.minimum(zr);
            y_red = self.node(y).red;
            x = self.node(y).right;
            if self.node(y).parent == z {
                xp = y;
            } else {
                xp = self.node(y).parent;
                self.transplant(y, x);
                self.n(y).right = zr;
                self.n(zr).parent = y;
            }
            self.transplant(z, y);
            self.n(y).left = zl;
            self.n(zl).parent = y;
            self.n(y).red = self.node(z).red;
        }
        // Every node whose subtree changed is on the path from xp to the root
        // (including y in z's old place).
        self.propagate(xp);
        if !y_red {
            self.erase_fixup(x, xp);
        }
        *self.n(z) = Node::default();
    }

    fn erase_fixup(&mut self, mut x: u32, mut xp: u32) {
        while x != self.root && !self.is_red(x) {
            if xp == NIL {
                break;
            }
            if x == self.node(xp).left {
                let mut w = self.node(xp).right;
                if self.is_red(w) {
                    self.n(w).red = false;
                    self.n(xp).red = true;
                    self.rotate_left(xp);
                    w = self.node(xp).right;
                }
                if !self.is_red(self.node(w).left) && !self.is_red(self.node(w).right) {
                    self.n(w).red = true;
                    x = xp;
                    xp = self.node(x).parent;
                } else {
                    if !self.is_red(self.node(w).right) {
                        let wl = self.node(w).left;
                        self.n(wl).red = false;
                        self.n(w).red = true;
                        self.rotate_right(w);
                        w = self.node(xp).right;
                    }
                    self.n(w).red = self.node(xp).red;
                    self.n(xp).red = false;
                    let wr = self.node(w).right;
                    if wr != NIL {
                        self.n(wr).red = false;
                    }
                    self.rotate_left(xp);
                    x = self.root;
                    break;
                }
            } else {
                let mut w = self.node(xp).left;
                if self.is_red(w) {
                    self.n(w).red = false;
                    self.n(xp).red = true;
                    self.rotate_right(xp);
                    w = self.node(xp).left;
                }
                if !self.is_red(self.node(w).left) && !self.is_red(self.node(w).right) {
                    self.n(w).red = true;
                    x = xp;
                    xp = self.node(x).parent;
                } else {
                    if !self.is_red(self.node(w).left) {
                        let wr = self.node(w).right;
                        self.n(wr).red = false;
                        self.n(w).red = true;
                        self.rotate_left(w);
                        w = self.node(xp).left;
                    }
                    self.n(w).red = self.node(xp).red;
                    self.n(xp).red = false;
                    let wl = self.node(w).left;
                    if wl != NIL {
                        self.n(wl).red = false;
                    }
                    self.rotate_right(xp);
                    x = self.root;
                    break;
                }
            }
        }
        if x != NIL {
            self.n(x).red = false;
        }
    }

    /// Checks every structural and augmentation invariant: deadline order,
    /// red-black rules, parent links, exact subtree minima, the cached
    /// leftmost. Returns the node count.
    pub fn check(&self) -> Result<usize, &'static str> {
        fn walk(
            t: &Timeline,
            i: u32,
            parent: u32,
            count: &mut usize,
        ) -> Result<(u32, u64, u64), &'static str> {
            if i == NIL {
                return Ok((1, u64::MAX, u64::MAX));
            }
            *count += 1;
            let n = t.node(i);
            if n.parent != parent {
                return Err("parent link broken");
            }
            if n.red && (t.is_red(n.left) || t.is_red(n.right)) {
                return Err("red node with red child");
            }
            if n.left != NIL && vbefore(n.deadline, t.node(n.left).deadline) {
                return Err("left child has a later deadline");
            }
            if n.right != NIL && vbefore(t.node(n.right).deadline, n.deadline) {
                return Err("right child has an earlier deadline");
            }
            let (bl, lv, ls) = walk(t, n.left, i, count)?;
            let (br, rv, rs) = walk(t, n.right, i, count)?;
            if bl != br {
                return Err("black heights differ");
            }
            let mut minv = n.vruntime;
            if n.left != NIL {
                minv = vmin(minv, lv);
            }
            if n.right != NIL {
                minv = vmin(minv, rv);
            }
            let mins = n.slice.min(ls).min(rs);
            if n.min_vruntime != minv {
                return Err("min_vruntime augmentation wrong");
            }
            if n.min_slice != mins {
                return Err("min_slice augmentation wrong");
            }
            Ok((bl + u32::from(!n.red), minv, mins))
        }
        if self.is_red(self.root) {
            return Err("red root");
        }
        let mut count = 0;
        walk(self, self.root, NIL, &mut count)?;
        let lm = if self.root == NIL {
            NIL
        } else {
            self.minimum(self.root)
        };
        if lm != self.leftmost {
            return Err("cached leftmost is stale");
        }
        Ok(count)
    }
}
