//! A fixed-size CPU set of [`MAX_CPUS`] bits (Linux's `struct cpumask`).
//!
//! Affinity masks, scheduling-domain spans and idle-CPU searches all work on
//! sets of CPUs. Linux sizes `cpumask` by `NR_CPUS` at build time; here the
//! size is fixed at 256 CPUs (four `u64` words, 32 bytes), enough for the
//! largest machines the simulator models, small enough to be `Copy` and to live
//! in every [`crate::SchedTask`] without allocation. Iteration walks set bits
//! word by word (`for_each_cpu`), so sparse masks cost little.
//!
//! Two views of the bits: a typed one over [`CpuId`]s ([`CpuMask::of`],
//! [`CpuMask::add`], [`CpuMask::remove`], [`CpuMask::has`],
//! [`CpuMask::first_cpu`], [`CpuMask::cpus`], [`CpuMask::cpus_wrap`]), what
//! the scheduler and the kernel use, with no range check since a `CpuId` is
//! below [`MAX_CPUS`]; and the raw one over bit numbers (`set`, `clear`,
//! `test`, `iter`, `first`, `from_cpus`), for masks built from numbers that
//! come from outside (a parsed hex mask, a topology's id lists).
//!
//! Text follows Linux's `cpumask_parse`/`%*pb` hex form: the least significant
//! bit is CPU 0, e.g. `0xf` is CPUs 0-3 (the `0x` prefix and `,` word
//! separators are optional on input).

use core::fmt;

use crate::cpu_id::CpuId;
pub use crate::cpu_id::MAX_CPUS;

/// `u64` words in a [`CpuMask`] ([`CpuMask::words`]).
pub const CPUMASK_WORDS: usize = MAX_CPUS / 64;
const WORDS: usize = CPUMASK_WORDS;

/// A set of CPU numbers below [`MAX_CPUS`]. `Default` is the empty set.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CpuMask {
    bits: [u64; WORDS],
}

impl CpuMask {
    /// The empty set.
    pub const fn new() -> Self {
        CpuMask { bits: [0; WORDS] }
    }

    /// Every CPU number below [`MAX_CPUS`] (`cpu_possible_mask` of a maximal machine).
    pub const fn all() -> Self {
        CpuMask {
            bits: [u64::MAX; WORDS],
        }
    }

    /// CPUs `0..n` (`n` is clamped to [`MAX_CPUS`]).
    pub const fn first_n(n: usize) -> Self {
        let n = if n > MAX_CPUS { MAX_CPUS } else { n };
        let mut m = CpuMask::new();
        let mut w = 0;
        while w < WORDS {
            let lo = w * 64;
            if n >= lo + 64 {
                m.bits[w] = u64::MAX;
            } else if n > lo {
                m.bits[w] = (1u64 << (n - lo)) - 1;
            }
            w += 1;
        }
        m
    }

    /// CPUs 0..63 from a `u64` (bit n = CPU n), as the kernel's masks are.
    pub const fn from_u64(bits: u64) -> Self {
        let mut m = CpuMask::new();
        m.bits[0] = bits;
        m
    }

    /// The set whose word `w` holds CPUs `64 * w ..= 64 * w + 63` (bit n of a
    /// word = CPU `64 * w + n`): the inverse of [`CpuMask::words`], for an
    /// atomic copy kept as [`CPUMASK_WORDS`] `AtomicU64`s.
    pub const fn from_words(bits: [u64; CPUMASK_WORDS]) -> Self {
        CpuMask { bits }
    }

    /// The set as [`CPUMASK_WORDS`] words, CPU 0 in bit 0 of word 0.
    pub const fn words(&self) -> [u64; CPUMASK_WORDS] {
        self.bits
    }

    /// The set of the listed CPUs. Panics on a CPU >= [`MAX_CPUS`].
    pub fn from_cpus(cpus: &[usize]) -> Self {
        let mut m = CpuMask::new();
        for &c in cpus {
            m.set(c);
        }
        m
    }

    /// Adds `cpu`. Panics if `cpu >= MAX_CPUS`.
    #[inline]
    pub fn set(&mut self, cpu: usize) {
        assert!(cpu < MAX_CPUS, "cpu {cpu} out of range");
        self.bits[cpu / 64] |= 1 << (cpu % 64);
    }

    /// Removes `cpu` (no-op if absent or out of range).
    #[inline]
    pub fn clear(&mut self, cpu: usize) {
        if cpu < MAX_CPUS {
            self.bits[cpu / 64] &= !(1 << (cpu % 64));
        }
    }

    /// Whether `cpu` is in the set (false for any `cpu >= MAX_CPUS`).
    #[inline]
    pub fn test(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.bits[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    /// Whether `cpu` is in the set: [`CpuMask::test`] for a [`CpuId`],
    /// which needs no range check.
    #[inline]
    pub fn has(&self, cpu: CpuId) -> bool {
        self.bits[word_of(cpu)] & (1 << (cpu.index() % 64)) != 0
    }

    /// The CPUs in the set as [`CpuId`]s, lowest first ([`CpuMask::iter`]).
    #[inline]
    pub fn cpus(&self) -> impl Iterator<Item = CpuId> {
        // Every bit is below MAX_CPUS: the mask has no others.
        self.iter().map(CpuId::wrapping)
    }

    /// The set holding `cpu` alone (`cpumask_of`).
    #[inline]
    pub fn of(cpu: CpuId) -> Self {
        let mut m = CpuMask::new();
        m.add(cpu);
        m
    }

    /// Adds `cpu`: [`CpuMask::set`] for a [`CpuId`], which needs no range
    /// check.
    #[inline]
    pub fn add(&mut self, cpu: CpuId) {
        self.bits[word_of(cpu)] |= 1 << (cpu.index() % 64);
    }

    /// Removes `cpu`: [`CpuMask::clear`] for a [`CpuId`].
    #[inline]
    pub fn remove(&mut self, cpu: CpuId) {
        self.bits[word_of(cpu)] &= !(1 << (cpu.index() % 64));
    }

    /// The lowest CPU in the set as a [`CpuId`] ([`CpuMask::first`]).
    #[inline]
    pub fn first_cpu(&self) -> Option<CpuId> {
        self.first().map(CpuId::wrapping)
    }

    /// [`CpuMask::iter_wrap`] as [`CpuId`]s: the CPUs from `start` on,
    /// wrapping around (`for_each_cpu_wrap`).
    #[inline]
    pub fn cpus_wrap(&self, start: usize) -> impl Iterator<Item = CpuId> {
        self.iter_wrap(start).map(CpuId::wrapping)
    }

    /// Number of CPUs in the set (`cpumask_weight`).
    ///
    /// Empty words are skipped: a target without a population-count
    /// instruction (the kernel's `x86_64-unknown-none`) counts a word in
    /// about 18 instructions, and a machine of a few CPUs leaves three of
    /// the four words empty (`wake_wide` weighs the LLC at every fair
    /// wakeup).
    pub fn weight(&self) -> usize {
        let mut n = 0;
        for &w in &self.bits {
            if w != 0 {
                n += w.count_ones() as usize;
            }
        }
        n
    }

    /// No CPU in the set.
    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// The lowest CPU in the set (`cpumask_first`).
    pub fn first(&self) -> Option<usize> {
        self.iter().next()
    }

    /// The lowest CPU >= `from` in the set (`cpumask_next`, inclusive).
    pub fn next_from(&self, from: usize) -> Option<usize> {
        if from >= MAX_CPUS {
            return None;
        }
        let mut w = from / 64;
        let mut word = self.bits[w] & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
            w += 1;
            if w == WORDS {
                return None;
            }
            word = self.bits[w];
        }
    }

    /// The intersection (`cpumask_and`).
    #[inline]
    pub fn and(&self, other: &CpuMask) -> CpuMask {
        let mut m = *self;
        for (a, b) in m.bits.iter_mut().zip(other.bits.iter()) {
            *a &= b;
        }
        m
    }

    /// The union (`cpumask_or`).
    #[inline]
    pub fn or(&self, other: &CpuMask) -> CpuMask {
        let mut m = *self;
        for (a, b) in m.bits.iter_mut().zip(other.bits.iter()) {
            *a |= b;
        }
        m
    }

    /// The CPUs of `self` not in `other` (`cpumask_andnot`).
    #[inline]
    pub fn and_not(&self, other: &CpuMask) -> CpuMask {
        let mut m = *self;
        for (a, b) in m.bits.iter_mut().zip(other.bits.iter()) {
            *a &= !b;
        }
        m
    }

    /// Whether the two sets share a CPU (`cpumask_intersects`).
    pub fn intersects(&self, other: &CpuMask) -> bool {
        self.bits
            .iter()
            .zip(other.bits.iter())
            .any(|(a, b)| a & b != 0)
    }

    /// Whether every CPU of `self` is in `other` (`cpumask_subset`).
    pub fn is_subset(&self, other: &CpuMask) -> bool {
        self.bits
            .iter()
            .zip(other.bits.iter())
            .all(|(a, b)| a & !b == 0)
    }

    /// CPUs 0..63 as a `u64` (bit n = CPU n), for the kernel's masks.
    pub const fn low_u64(&self) -> u64 {
        self.bits[0]
    }

    /// The CPUs in ascending order (`for_each_cpu`).
    pub fn iter(&self) -> Iter {
        Iter {
            bits: self.bits,
            w: 0,
        }
    }

    /// The CPUs in the set, in the order `start, start+1, ..., wrapping around`
    /// (`for_each_cpu_wrap`): how Linux scans for an idle CPU starting after
    /// the target so that wakeups do not all pile on the lowest CPU.
    pub fn iter_wrap(&self, start: usize) -> impl Iterator<Item = usize> {
        let below = CpuMask::first_n(start % MAX_CPUS);
        self.and_not(&below).iter().chain(self.and(&below).iter())
    }

    /// The first CPU `c` for which `f(c)` holds among the first `limit`
    /// CPUs of [`CpuMask::cpus_wrap`]`(start)`, calling `f` on each of them
    /// in that order until one holds: `cpus_wrap(start).take(limit).find(f)`
    /// as one loop over the words, with no iterator state kept in memory
    /// (a wakeup's LLC scan, `select_idle_cpu`, looks at every CPU of a busy
    /// LLC).
    #[inline]
    pub fn find_wrap(
        &self,
        start: usize,
        mut limit: usize,
        mut f: impl FnMut(CpuId) -> bool,
    ) -> Option<CpuId> {
        let below = CpuMask::first_n(start % MAX_CPUS);
        for part in [self.and_not(&below), self.and(&below)] {
            for (w, &word) in part.bits.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    if limit == 0 {
                        return None;
                    }
                    limit -= 1;
                    let c = CpuId::wrapping(w * 64 + bits.trailing_zeros() as usize);
                    if f(c) {
                        return Some(c);
                    }
                    bits &= bits - 1;
                }
            }
        }
        None
    }

    /// Parses Linux's hex form (`0xf`, `ff,00000000`); `None` if it is empty,
    /// not hex, or names a CPU >= [`MAX_CPUS`].
    pub fn parse_hex(s: &str) -> Option<CpuMask> {
        let s = s.trim();
        let s = s
            .strip_prefix("0x")
            .or_else(|| s.strip_prefix("0X"))
            .unwrap_or(s);
        let mut m = CpuMask::new();
        let mut bit = 0usize;
        let mut any = false;
        for ch in s.bytes().rev() {
            if ch == b',' {
                continue;
            }
            let v = (ch as char).to_digit(16)? as u64;
            any = true;
            for i in 0..4 {
                if v & (1 << i) != 0 {
                    if bit + i >= MAX_CPUS {
                        return None;
                    }
                    m.set(bit + i);
                }
            }
            bit += 4;
        }
        any.then_some(m)
    }
}

/// The word of a [`CpuMask`] holding `cpu`'s bit. Reduced modulo the word
/// count, which changes nothing for a `CpuId` (below [`MAX_CPUS`]) but lets
/// the compiler drop the bounds check.
#[inline]
fn word_of(cpu: CpuId) -> usize {
    (cpu.index() / 64) % WORDS
}

/// Iterator over a [`CpuMask`]'s CPUs, ascending.
#[derive(Clone, Debug)]
pub struct Iter {
    bits: [u64; WORDS],
    w: usize,
}

impl Iterator for Iter {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        while self.w < WORDS {
            let word = self.bits[self.w];
            if word != 0 {
                self.bits[self.w] = word & (word - 1);
                return Some(self.w * 64 + word.trailing_zeros() as usize);
            }
            self.w += 1;
        }
        None
    }
}

impl fmt::LowerHex for CpuMask {
    /// Hex without leading zeros (`f` for CPUs 0-3; `0` when empty); with `#`, `0x` first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if f.alternate() {
            f.write_str("0x")?;
        }
        let top = self.bits.iter().rposition(|&w| w != 0);
        match top {
            None => f.write_str("0"),
            Some(t) => {
                write!(f, "{:x}", self.bits[t])?;
                for w in (0..t).rev() {
                    write!(f, "{:016x}", self.bits[w])?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for CpuMask {
    /// `0x`-prefixed hex, as Linux's `taskset -p` prints.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:#x}")
    }
}

impl fmt::Debug for CpuMask {
    /// `CpuMask(0xf)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuMask({self:#x})")
    }
}

impl FromIterator<usize> for CpuMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut m = CpuMask::new();
        for c in iter {
            m.set(c);
        }
        m
    }
}
