//! CPU sets: the scheduler's [`CpuMask`] (256 bits, `Copy`) and an atomic
//! copy of one, [`AtomicCpuMask`], for sets that CPUs update concurrently
//! (the online mask, a thread's affinity, the CPUs a cross-call still waits
//! for). Every CPU set in the kernel is one of these; none is a `u64`.

use core::sync::atomic::{AtomicU64, Ordering};

pub use sched::CpuMask;
use sched::{CpuId, CPUMASK_WORDS};

/// A [`CpuMask`] whose bits are set and cleared atomically, one CPU at a
/// time. [`AtomicCpuMask::load`] reads the words one after the other: a
/// snapshot of each word, not of the whole set at one instant (a CPU set or
/// cleared meanwhile may or may not be in it), which is all its users need
/// (as with Linux's `cpu_online_mask`).
pub struct AtomicCpuMask {
    words: [AtomicU64; CPUMASK_WORDS],
}

impl AtomicCpuMask {
    /// The empty set.
    pub const fn new() -> Self {
        AtomicCpuMask {
            words: [const { AtomicU64::new(0) }; CPUMASK_WORDS],
        }
    }

    /// Holding `m`.
    pub const fn from_mask(m: CpuMask) -> Self {
        let w = m.words();
        let mut words = [const { AtomicU64::new(0) }; CPUMASK_WORDS];
        let mut i = 0;
        while i < CPUMASK_WORDS {
            words[i] = AtomicU64::new(w[i]);
            i += 1;
        }
        AtomicCpuMask { words }
    }

    /// The set (each word read with `order`).
    pub fn load(&self, order: Ordering) -> CpuMask {
        let mut w = [0u64; CPUMASK_WORDS];
        for (dst, src) in w.iter_mut().zip(&self.words) {
            *dst = src.load(order);
        }
        CpuMask::from_words(w)
    }

    /// Replaces the set (word by word, each with `order`).
    pub fn store(&self, m: &CpuMask, order: Ordering) {
        for (dst, src) in self.words.iter().zip(m.words()) {
            dst.store(src, order);
        }
    }

    /// Adds `cpu`; returns whether it was already in the set.
    pub fn set(&self, cpu: CpuId, order: Ordering) -> bool {
        let (word, bit) = word_bit(cpu);
        self.words[word].fetch_or(bit, order) & bit != 0
    }

    /// Removes `cpu`; returns whether it was in the set.
    pub fn clear(&self, cpu: CpuId, order: Ordering) -> bool {
        let (word, bit) = word_bit(cpu);
        self.words[word].fetch_and(!bit, order) & bit != 0
    }

    /// Whether `cpu` is in the set.
    pub fn test(&self, cpu: CpuId, order: Ordering) -> bool {
        let (word, bit) = word_bit(cpu);
        self.words[word].load(order) & bit != 0
    }

    /// No CPU in the set.
    pub fn is_empty(&self, order: Ordering) -> bool {
        self.words.iter().all(|w| w.load(order) == 0)
    }
}

impl Default for AtomicCpuMask {
    fn default() -> Self {
        Self::new()
    }
}

/// `cpu`'s word in the mask and its bit there.
#[inline]
fn word_bit(cpu: CpuId) -> (usize, u64) {
    (cpu.index() / 64, 1u64 << (cpu.index() % 64))
}

/// The single CPU `cpu` as a set ([`CpuMask::of`]).
pub fn only(cpu: CpuId) -> CpuMask {
    CpuMask::of(cpu)
}

crate::ktest!(cpumask_atomic_set_clear_load_beyond_64_cpus, || {
    let m = AtomicCpuMask::new();
    crate::kassert!(m.is_empty(Ordering::Relaxed), "new mask not empty");
    let cpu = |i| CpuId::new(i).expect("below MAX_CPUS");
    for c in [0, 63, 64, 130, 255] {
        crate::kassert!(!m.set(cpu(c), Ordering::Relaxed), "cpu {c} set twice");
    }
    crate::kassert!(m.set(cpu(130), Ordering::Relaxed), "cpu 130 was not set");
    let got = m.load(Ordering::Relaxed);
    crate::kassert_eq!(got, CpuMask::from_cpus(&[0, 63, 64, 130, 255]));
    crate::kassert!(
        m.clear(cpu(64), Ordering::Relaxed) && !m.clear(cpu(64), Ordering::Relaxed),
        "clear 64"
    );
    crate::kassert!(
        !m.test(cpu(64), Ordering::Relaxed) && m.test(cpu(255), Ordering::Relaxed),
        "test"
    );
    m.store(&only(cpu(200)), Ordering::Relaxed);
    crate::kassert_eq!(m.load(Ordering::Relaxed), CpuMask::from_cpus(&[200]));
    Ok(())
});
