//! Small accessors for the debug shell (`crate::shell`) that need the private
//! parts of the thread table.

use ::core::sync::atomic::Ordering;

use super::{threads, tid_is_live, Tid};

/// The id of the live thread in slot `idx` (a spawned thread that has not been
/// joined; not an idle thread), for calls that take a [`Tid`] such as
/// `set_affinity`.
pub fn tid_of(idx: u32) -> Option<Tid> {
    let t = threads().get(idx as usize)?;
    let tid = Tid {
        idx,
        gen: t.gen.load(Ordering::Relaxed),
    };
    tid_is_live(tid).then_some(tid)
}
