//! The fair runqueue's timeline: a red-black tree of entities ordered by virtual
//! deadline and augmented with each subtree's minimum vruntime and minimum slice.
//!
//! Nodes live in the runqueue's task arena and link to each other by [`TaskId`]
//! index, so insertion and removal never allocate and the crate needs no
//! `unsafe`. The augmentation is what makes EEVDF's pick O(log n): a subtree
//! whose `min_vruntime` is eligible contains an eligible entity (see
//! `FairRq::pick_eevdf`), and `min_slice` gives `cfs_rq_min_slice` in O(1).
//!
//! Equal deadlines go to the right, so entities with the same key keep FIFO
//! order. The leftmost node (earliest deadline) is cached for the O(1) fast path.
//! Keys are `u64` virtual times that may wrap; they are only compared through
//! signed differences, as Linux does.

use crate::task::{SchedTask, TaskId, NIL};

/// Per-node links and augmented values, embedded in each task's fair entity.
#[derive(Clone, Copy, Debug)]
#[repr(C)]
pub struct RbLinks {
    /// Minimum vruntime over this node's subtree.
    pub(crate) min_vruntime: u64,
    /// Minimum slice over this node's subtree.
    pub(crate) min_slice: u64,
    pub(crate) parent: u32,
    pub(crate) left: u32,
    pub(crate) right: u32,
    pub(crate) red: bool,
}

impl Default for RbLinks {
    fn default() -> Self {
        RbLinks {
            parent: NIL,
            left: NIL,
            right: NIL,
            red: false,
            min_vruntime: 0,
            min_slice: u64::MAX,
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

/// The tree: root and cached leftmost node (both [`NIL`] when empty).
#[derive(Clone, Copy, Debug)]
pub struct Timeline {
    pub(crate) root: u32,
    pub(crate) leftmost: u32,
}

impl Default for Timeline {
    fn default() -> Self {
        Timeline {
            root: NIL,
            leftmost: NIL,
        }
    }
}

#[inline]
fn rb(ts: &[SchedTask], i: u32) -> &RbLinks {
    &ts[i as usize].se.rb
}

#[inline]
fn rbm(ts: &mut [SchedTask], i: u32) -> &mut RbLinks {
    &mut ts[i as usize].se.rb
}

#[inline]
fn is_red(ts: &[SchedTask], i: u32) -> bool {
    i != NIL && rb(ts, i).red
}

impl Timeline {
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
    pub fn min_vruntime(&self, ts: &[SchedTask]) -> Option<u64> {
        (self.root != NIL).then(|| rb(ts, self.root).min_vruntime)
    }

    /// Minimum slice over the whole tree.
    #[inline]
    pub fn min_slice(&self, ts: &[SchedTask]) -> Option<u64> {
        (self.root != NIL).then(|| rb(ts, self.root).min_slice)
    }

    /// Recomputes one node's augmented values from itself and its children.
    /// Returns whether they changed.
    #[inline]
    fn update_aug(ts: &mut [SchedTask], i: u32) -> bool {
        let se = &ts[i as usize].se;
        let (l, r) = (se.rb.left, se.rb.right);
        let mut minv = se.vruntime;
        let mut mins = se.slice_ns;
        if l != NIL {
            minv = vmin(minv, rb(ts, l).min_vruntime);
            mins = mins.min(rb(ts, l).min_slice);
        }
        if r != NIL {
            minv = vmin(minv, rb(ts, r).min_vruntime);
            mins = mins.min(rb(ts, r).min_slice);
        }
        let n = rbm(ts, i);
        let changed = n.min_vruntime != minv || n.min_slice != mins;
        n.min_vruntime = minv;
        n.min_slice = mins;
        changed
    }

    /// Recomputes augmented values from `i` up to the root.
    fn propagate(ts: &mut [SchedTask], mut i: u32) {
        while i != NIL {
            Self::update_aug(ts, i);
            i = rb(ts, i).parent;
        }
    }

    fn replace_child(&mut self, ts: &mut [SchedTask], parent: u32, old: u32, new: u32) {
        if parent == NIL {
            self.root = new;
        } else if rb(ts, parent).left == old {
            rbm(ts, parent).left = new;
        } else {
            rbm(ts, parent).right = new;
        }
    }

    fn rotate_left(&mut self, ts: &mut [SchedTask], x: u32) {
        let y = rb(ts, x).right;
        let yl = rb(ts, y).left;
        rbm(ts, x).right = yl;
        if yl != NIL {
            rbm(ts, yl).parent = x;
        }
        let xp = rb(ts, x).parent;
        rbm(ts, y).parent = xp;
        self.replace_child(ts, xp, x, y);
        rbm(ts, y).left = x;
        rbm(ts, x).parent = y;
        Self::update_aug(ts, x);
        Self::update_aug(ts, y);
    }

    fn rotate_right(&mut self, ts: &mut [SchedTask], x: u32) {
        let y = rb(ts, x).left;
        let yr = rb(ts, y).right;
        rbm(ts, x).left = yr;
        if yr != NIL {
            rbm(ts, yr).parent = x;
        }
        let xp = rb(ts, x).parent;
        rbm(ts, y).parent = xp;
        self.replace_child(ts, xp, x, y);
        rbm(ts, y).right = x;
        rbm(ts, x).parent = y;
        Self::update_aug(ts, x);
        Self::update_aug(ts, y);
    }

    /// Inserts `z` by its deadline (after all equal keys). O(log n).
    pub fn insert(&mut self, ts: &mut [SchedTask], z: TaskId) {
        let z = z.0;
        let key = ts[z as usize].se.deadline;
        let mut parent = NIL;
        let mut cur = self.root;
        let mut go_left = false;
        let mut leftmost = true;
        while cur != NIL {
            parent = cur;
            go_left = vbefore(key, ts[cur as usize].se.deadline);
            if go_left {
                cur = rb(ts, cur).left;
            } else {
                cur = rb(ts, cur).right;
                leftmost = false;
            }
        }
        {
            let (v, s) = (ts[z as usize].se.vruntime, ts[z as usize].se.slice_ns);
            let n = rbm(ts, z);
            *n = RbLinks {
                parent,
                left: NIL,
                right: NIL,
                red: true,
                min_vruntime: v,
                min_slice: s,
            };
        }
        if parent == NIL {
            self.root = z;
        } else if go_left {
            rbm(ts, parent).left = z;
        } else {
            rbm(ts, parent).right = z;
        }
        if leftmost {
            self.leftmost = z;
        }
        // A new leaf can only lower its ancestors' minima: stop at the first
        // ancestor that does not change.
        let mut a = parent;
        while a != NIL && Self::update_aug(ts, a) {
            a = rb(ts, a).parent;
        }
        self.insert_fixup(ts, z);
    }

    fn insert_fixup(&mut self, ts: &mut [SchedTask], mut z: u32) {
        loop {
            let p = rb(ts, z).parent;
            if !is_red(ts, p) {
                break;
            }
            let g = rb(ts, p).parent; // p is red, so it is not the root
            if p == rb(ts, g).left {
                let u = rb(ts, g).right;
                if is_red(ts, u) {
                    rbm(ts, p).red = false;
                    rbm(ts, u).red = false;
                    rbm(ts, g).red = true;
                    z = g;
                    continue;
                }
                if z == rb(ts, p).right {
                    z = p;
                    self.rotate_left(ts, z);
                }
                let p = rb(ts, z).parent;
                let g = rb(ts, p).parent;
                rbm(ts, p).red = false;
                rbm(ts, g).red = true;
                self.rotate_right(ts, g);
            } else {
                let u = rb(ts, g).left;
                if is_red(ts, u) {
                    rbm(ts, p).red = false;
                    rbm(ts, u).red = false;
                    rbm(ts, g).red = true;
                    z = g;
                    continue;
                }
                if z == rb(ts, p).left {
                    z = p;
                    self.rotate_right(ts, z);
                }
                let p = rb(ts, z).parent;
                let g = rb(ts, p).parent;
                rbm(ts, p).red = false;
                rbm(ts, g).red = true;
                self.rotate_left(ts, g);
            }
        }
        let root = self.root;
        rbm(ts, root).red = false;
    }

    fn minimum(ts: &[SchedTask], mut i: u32) -> u32 {
        while rb(ts, i).left != NIL {
            i = rb(ts, i).left;
        }
        i
    }

    /// In-order successor of `i`, or NIL.
    pub(crate) fn next(ts: &[SchedTask], i: u32) -> u32 {
        if rb(ts, i).right != NIL {
            return Self::minimum(ts, rb(ts, i).right);
        }
        let mut c = i;
        let mut p = rb(ts, i).parent;
        while p != NIL && rb(ts, p).right == c {
            c = p;
            p = rb(ts, p).parent;
        }
        p
    }

    fn maximum(ts: &[SchedTask], mut i: u32) -> u32 {
        while rb(ts, i).right != NIL {
            i = rb(ts, i).right;
        }
        i
    }

    /// The latest-deadline node, or NIL.
    pub(crate) fn last(&self, ts: &[SchedTask]) -> u32 {
        if self.root == NIL {
            NIL
        } else {
            Self::maximum(ts, self.root)
        }
    }

    /// In-order predecessor of `i`, or NIL.
    pub(crate) fn prev(ts: &[SchedTask], i: u32) -> u32 {
        if rb(ts, i).left != NIL {
            return Self::maximum(ts, rb(ts, i).left);
        }
        let mut c = i;
        let mut p = rb(ts, i).parent;
        while p != NIL && rb(ts, p).left == c {
            c = p;
            p = rb(ts, p).parent;
        }
        p
    }

    /// Replaces `u`'s subtree position with `v` (which may be NIL).
    fn transplant(&mut self, ts: &mut [SchedTask], u: u32, v: u32) {
        let up = rb(ts, u).parent;
        self.replace_child(ts, up, u, v);
        if v != NIL {
            rbm(ts, v).parent = up;
        }
    }

    /// Removes `z` from the tree. O(log n).
    pub fn erase(&mut self, ts: &mut [SchedTask], z: TaskId) {
        let z = z.0;
        if self.leftmost == z {
            self.leftmost = Self::next(ts, z);
        }
        let zl = rb(ts, z).left;
        let zr = rb(ts, z).right;
        let mut y_red = rb(ts, z).red;
        let x;
        let xp;
        if zl == NIL {
            x = zr;
            xp = rb(ts, z).parent;
            self.transplant(ts, z, zr);
        } else if zr == NIL {
            x = zl;
            xp = rb(ts, z).parent;
            self.transplant(ts, z, zl);
        } else {
            let y = Self::minimum(ts, zr);
            y_red = rb(ts, y).red;
            x = rb(ts, y).right;
            if rb(ts, y).parent == z {
                xp = y;
            } else {
                xp = rb(ts, y).parent;
                self.transplant(ts, y, x);
                rbm(ts, y).right = zr;
                rbm(ts, zr).parent = y;
            }
            self.transplant(ts, z, y);
            rbm(ts, y).left = zl;
            rbm(ts, zl).parent = y;
            rbm(ts, y).red = rb(ts, z).red;
        }
        Self::propagate(ts, xp);
        if !y_red {
            self.erase_fixup(ts, x, xp);
        }
        *rbm(ts, z) = RbLinks::default();
    }

    fn erase_fixup(&mut self, ts: &mut [SchedTask], mut x: u32, mut xp: u32) {
        while x != self.root && !is_red(ts, x) {
            if xp == NIL {
                break;
            }
            if x == rb(ts, xp).left {
                let mut w = rb(ts, xp).right;
                if is_red(ts, w) {
                    rbm(ts, w).red = false;
                    rbm(ts, xp).red = true;
                    self.rotate_left(ts, xp);
                    w = rb(ts, xp).right;
                }
                if !is_red(ts, rb(ts, w).left) && !is_red(ts, rb(ts, w).right) {
                    rbm(ts, w).red = true;
                    x = xp;
                    xp = rb(ts, x).parent;
                } else {
                    if !is_red(ts, rb(ts, w).right) {
                        let wl = rb(ts, w).left;
                        rbm(ts, wl).red = false;
                        rbm(ts, w).red = true;
                        self.rotate_right(ts, w);
                        w = rb(ts, xp).right;
                    }
                    rbm(ts, w).red = rb(ts, xp).red;
                    rbm(ts, xp).red = false;
                    let wr = rb(ts, w).right;
                    if wr != NIL {
                        rbm(ts, wr).red = false;
                    }
                    self.rotate_left(ts, xp);
                    x = self.root;
                    break;
                }
            } else {
                let mut w = rb(ts, xp).left;
                if is_red(ts, w) {
                    rbm(ts, w).red = false;
                    rbm(ts, xp).red = true;
                    self.rotate_right(ts, xp);
                    w = rb(ts, xp).left;
                }
                if !is_red(ts, rb(ts, w).left) && !is_red(ts, rb(ts, w).right) {
                    rbm(ts, w).red = true;
                    x = xp;
                    xp = rb(ts, x).parent;
                } else {
                    if !is_red(ts, rb(ts, w).left) {
                        let wr = rb(ts, w).right;
                        rbm(ts, wr).red = false;
                        rbm(ts, w).red = true;
                        self.rotate_left(ts, w);
                        w = rb(ts, xp).left;
                    }
                    rbm(ts, w).red = rb(ts, xp).red;
                    rbm(ts, xp).red = false;
                    let wl = rb(ts, w).left;
                    if wl != NIL {
                        rbm(ts, wl).red = false;
                    }
                    self.rotate_right(ts, xp);
                    x = self.root;
                    break;
                }
            }
        }
        if x != NIL {
            rbm(ts, x).red = false;
        }
    }

    /// Checks every structural and augmentation invariant (tests and debug
    /// builds): BST order by deadline, red-black rules, parent links, exact
    /// subtree minima, the cached leftmost. Returns the node count.
    pub fn check(&self, ts: &[SchedTask]) -> Result<usize, &'static str> {
        fn walk(
            ts: &[SchedTask],
            i: u32,
            parent: u32,
            count: &mut usize,
        ) -> Result<(u32, u64, u64), &'static str> {
            if i == NIL {
                return Ok((1, u64::MAX, u64::MAX));
            }
            *count += 1;
            let n = rb(ts, i);
            if n.parent != parent {
                return Err("parent link broken");
            }
            if n.red && (is_red(ts, n.left) || is_red(ts, n.right)) {
                return Err("red node with red child");
            }
            let d = ts[i as usize].se.deadline;
            if n.left != NIL && vbefore(d, ts[n.left as usize].se.deadline) {
                return Err("left child has a later deadline");
            }
            if n.right != NIL && vbefore(ts[n.right as usize].se.deadline, d) {
                return Err("right child has an earlier deadline");
            }
            let (bl, lv, ls) = walk(ts, n.left, i, count)?;
            let (br, rv, rs) = walk(ts, n.right, i, count)?;
            if bl != br {
                return Err("black heights differ");
            }
            let mut minv = ts[i as usize].se.vruntime;
            if n.left != NIL {
                minv = vmin(minv, lv);
            }
            if n.right != NIL {
                minv = vmin(minv, rv);
            }
            let mins = ts[i as usize].se.slice_ns.min(ls).min(rs);
            if n.min_vruntime != minv {
                return Err("min_vruntime augmentation wrong");
            }
            if n.min_slice != mins {
                return Err("min_slice augmentation wrong");
            }
            Ok((bl + u32::from(!n.red), minv, mins))
        }
        if is_red(ts, self.root) {
            return Err("red root");
        }
        let mut count = 0;
        walk(ts, self.root, NIL, &mut count)?;
        let lm = if self.root == NIL {
            NIL
        } else {
            Self::minimum(ts, self.root)
        };
        if lm != self.leftmost {
            return Err("cached leftmost is stale");
        }
        Ok(count)
    }
}
