//! Proportional newidle balancing: NI_RANDOM and NI_RATE.
//!
//! A CPU about to go idle balances each domain level only with a probability
//! that follows how often its newidle balances at that level pulled
//! something, so a CPU whose newidle balances keep failing stops paying for
//! them on most of its idle entries. Linux 6.19 added it with NI_RANDOM
//! (Peter Zijlstra, commit 33cf66d88306, "sched/fair: Proportional newidle
//! balance"); Linux 7.0 added NI_RATE (commit 9fe89f022c05, "sched/fair: More
//! complex proportional newidle balance"); Linux 7.2 has both on.
//!
//! Per CPU and level (Linux keeps these in each CPU's `struct sched_domain`):
//! - `newidle_call` and `newidle_success` count calls and (weighted)
//!   successes; they start at 512 and 256 (a 50% success rate). When calls
//!   reach [`NI_WINDOW`] (1024), `newidle_ratio` is recomputed from the
//!   successes and both counts are halved, so the ratio is an exponentially
//!   weighted success rate in 1/1024 units, refreshed every 512 calls.
//! - With NI_RATE the recomputation also adds the time the last window
//!   took, in units of 2^22 ns (~4.2 ms): 512 calls spread over ~4.3 s (a
//!   newidle rate of ~120 Hz or less) give the full ratio 1024 whatever their
//!   success, so a CPU that rarely goes newly idle keeps balancing every time
//!   ([`ni_ratio`]). Without NI_RATE the ratio is the success count alone.
//! - With NI_RANDOM and a ratio below 1024, each newidle balance of a level
//!   throws a 1024-sided die `d`; it is skipped (counted as a failed call)
//!   when `d > 1 + ratio`, i.e. it runs with probability
//!   `min(ratio + 2, 1024) / 1024`. A balance that runs and pulls credits
//!   `round(1024 / (1 + ratio))` successes instead of one, so the success
//!   count estimates what every call would have achieved had none been
//!   skipped ([`ni_dice`]; the weight inverts `(1 + ratio) / 1024` while the
//!   chance is `(2 + ratio) / 1024`, as in Linux). Without NI_RANDOM every level is balanced and a
//!   success counts one.
//!
//! The die: Linux draws `prandom_u32_state()` from a per-CPU `rnd_state`
//! (L'Ecuyer's LFSR113 combined Tausworthe generator, "Tables of maximally
//! equidistributed combined LFSR generators", Math. Comp. 68 (1999)) seeded
//! once at boot from the kernel's entropy pool (`prandom_init_once`). Ours
//! is the same generator ([`Lfsr113`]) in each CPU's slot, seeded from a
//! 64-bit seed and the CPU number ([`Scheduler::seed_sched_rng`]; seed 0
//! at construction), so host tests and the simulator are reproducible.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::{Platform, Scheduler};
use crate::cpu_id::CpuId;
use crate::features::Feature;

/// Calls per ratio window: the ratio is recomputed when the call count
/// reaches it, then both counts halve (`update_newidle_stats`).
pub const NI_WINDOW: u32 = 1024;

/// NI_RATE: a window's duration adds `delta_ns >> NI_RATE_SHIFT` to the ratio
/// (one unit per ~4.19 ms; 2^32 ns ≈ 4.29 s gives the full 1024).
pub const NI_RATE_SHIFT: u32 = 22;

/// NI_RANDOM's die: with `d1k` uniform in 0..1024 and the level's `ratio`,
/// `None` skips the balance; `Some(weight)` runs it, a success then counting
/// `weight` = `round(1024 / (1 + ratio))`.
#[inline]
pub fn ni_dice(d1k: u32, ratio: u32) -> Option<u32> {
    let w = 1 + ratio;
    if d1k > w {
        None
    } else {
        Some((NI_WINDOW + w / 2) / w)
    }
}

/// The ratio recomputed at the end of a window: the (weighted) successes,
/// plus with NI_RATE (`rate`) the window's duration in 2^22 ns units, at
/// most 1024.
#[inline]
pub fn ni_ratio(success: u32, window_ns: u64, rate: bool) -> u32 {
    let by_rate = if rate { window_ns >> NI_RATE_SHIFT } else { 0 };
    by_rate.saturating_add(success as u64).min(NI_WINDOW as u64) as u32
}

/// L'Ecuyer's LFSR113 (period ~2^113), the generator behind Linux's
/// `prandom_u32_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lfsr113 {
    s: [u32; 4],
}

/// Per component: (q, s, k-mask, r) of `((z & mask) << r) ^ (((z << q) ^ z) >> s)`.
const TAUS: [(u32, u32, u32, u32); 4] = [
    (6, 13, 0xffff_fffe, 18),
    (2, 27, 0xffff_fff8, 2),
    (13, 21, 0xffff_fff0, 7),
    (3, 12, 0xffff_ff80, 13),
];
/// Each component's state must exceed these (its low bits are not state).
const TAUS_MIN: [u32; 4] = [1, 7, 15, 127];

impl Lfsr113 {
    /// A generator from `seed` (any value): the four words from splitmix64,
    /// each raised above its component's minimum, then ten steps of warm-up
    /// as Linux's `prandom_seed_state` does.
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut s = [0; 4];
        for (i, w) in s.iter_mut().enumerate() {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let v = (z ^ (z >> 31)) as u32;
            *w = if v <= TAUS_MIN[i] {
                v + TAUS_MIN[i] + 1
            } else {
                v
            };
        }
        let mut g = Lfsr113 { s };
        for _ in 0..10 {
            g.next_u32();
        }
        g
    }

    /// The next 32 random bits.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        // Four plain steps rather than a zip over the components: the same
        // code once optimised, but a debug build (and Miri, which interprets
        // one) paid about 500 instructions more a draw for the adapters.
        let [a, b, c, d] = self.s;
        self.s = [
            taus_step(a, TAUS[0]),
            taus_step(b, TAUS[1]),
            taus_step(c, TAUS[2]),
            taus_step(d, TAUS[3]),
        ];
        self.s[0] ^ self.s[1] ^ self.s[2] ^ self.s[3]
    }
}

/// One step of a Tausworthe component with parameters (q, s, k-mask, r).
#[inline]
fn taus_step(z: u32, (q, sh, mask, r): (u32, u32, u32, u32)) -> u32 {
    ((z & mask) << r) ^ (((z << q) ^ z) >> sh)
}

/// A CPU's generator state in its slot: only that CPU draws from it, so
/// relaxed loads and stores suffice (a draw lost to a race would only repeat
/// a number, never break anything).
#[derive(Debug, Default)]
pub(super) struct RngCell([AtomicU64; 2]);

impl RngCell {
    /// Stores the generator's four words as two pairs.
    pub(super) fn seed(&self, g: Lfsr113) {
        let [lo, hi] = &self.0;
        lo.store(g.s[0] as u64 | (g.s[1] as u64) << 32, Ordering::Relaxed);
        hi.store(g.s[2] as u64 | (g.s[3] as u64) << 32, Ordering::Relaxed);
    }

    /// The next draw. Two 64-bit words rather than four 32-bit ones, and
    /// written out (no `array::from_fn`, no zip), like
    /// [`Lfsr113::next_u32`]: in a debug build the adapters cost about
    /// 1 500 instructions a draw, 40% of a newidle balance that NI_RANDOM
    /// skips, and under Miri, where the tests make tens of thousands of
    /// those, every atomic access also updates the data-race clocks.
    fn next_u32(&self) -> u32 {
        let [lo, hi] = &self.0;
        let (l, h) = (lo.load(Ordering::Relaxed), hi.load(Ordering::Relaxed));
        let mut g = Lfsr113 {
            s: [l as u32, (l >> 32) as u32, h as u32, (h >> 32) as u32],
        };
        let v = g.next_u32();
        self.seed(g);
        v
    }
}

/// The newidle figures of one CPU's domain level (the `newidle_*` fields of
/// Linux's `struct sched_domain`, plus our counters).
#[derive(Debug)]
pub(super) struct NewidleState {
    call: AtomicU32,
    success: AtomicU32,
    ratio: AtomicU32,
    /// When the current window began, ns (`newidle_stamp`).
    stamp_ns: AtomicU64,
    /// Ours: newidle balances run at this level.
    balances: AtomicU64,
    /// Ours: newidle balances NI_RANDOM skipped at this level.
    skipped: AtomicU64,
}

impl NewidleState {
    /// Linux's `sd_init` values: a 50% success rate, the window starting now.
    pub(super) fn new(now_ns: u64) -> Self {
        NewidleState {
            call: AtomicU32::new(NI_WINDOW / 2),
            success: AtomicU32::new(NI_WINDOW / 4),
            ratio: AtomicU32::new(NI_WINDOW / 2),
            stamp_ns: AtomicU64::new(now_ns),
            balances: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        }
    }
}

/// A snapshot of one CPU's newidle figures at one domain level
/// ([`Scheduler::newidle_stats`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewidleStats {
    /// Calls in the current window (`sd->newidle_call`; halves at 1024).
    pub call: u32,
    /// Weighted successes in the current window (`sd->newidle_success`).
    pub success: u32,
    /// The success ratio, 0..=1024 (`sd->newidle_ratio`).
    pub ratio: u32,
    /// Newidle balances run at this level since boot.
    pub balances: u64,
    /// Newidle balances skipped by NI_RANDOM since boot.
    pub skipped: u64,
}

impl<P: Platform> Scheduler<P> {
    /// Reseeds every CPU's NI_RANDOM generator from `seed` and the CPU
    /// number (Linux seeds its per-CPU `rnd_state` from the entropy pool;
    /// ours is deterministic so runs can be replayed).
    pub fn seed_sched_rng(&self, seed: u64) {
        for (slot, cpu) in self.slots.iter().zip(CpuId::range(self.nr_cpus())) {
            slot.rng.seed(Lfsr113::new(rng_seed(seed, cpu)));
        }
    }

    /// `cpu`'s newidle figures at domain `level` (an index into
    /// [`Self::domains`]).
    pub fn newidle_stats(&self, cpu: CpuId, level: usize) -> NewidleStats {
        let st = &self.slots[cpu.index()].lb[level].ni;
        NewidleStats {
            call: st.call.load(Ordering::Relaxed),
            success: st.success.load(Ordering::Relaxed),
            ratio: st.ratio.load(Ordering::Relaxed),
            balances: st.balances.load(Ordering::Relaxed),
            skipped: st.skipped.load(Ordering::Relaxed),
        }
    }

    /// Starts a new window of `cpu`'s newidle figures at domain `level` with
    /// `ratio` (at most [`NI_WINDOW`]), no successes and half a window of
    /// calls: where a CPU whose newidle balances all fail settles (at ratio 0
    /// without NI_RATE's time share). For the tests, which would otherwise
    /// fail ten windows of balances (5 120 calls) to get there; the counters
    /// of balances run and skipped are left as they are.
    #[doc(hidden)]
    pub fn set_newidle_ratio(&self, cpu: CpuId, level: usize, ratio: u32) {
        let st = &self.slots[cpu.index()].lb[level].ni;
        st.call.store(NI_WINDOW / 2, Ordering::Relaxed);
        st.success.store(0, Ordering::Relaxed);
        st.ratio.store(ratio.min(NI_WINDOW), Ordering::Relaxed);
        st.stamp_ns.store(self.platform.now_ns(), Ordering::Relaxed);
    }

    /// NI_RANDOM's decision for `this_cpu`'s newidle balance at `level`:
    /// `None` skips it (already counted), `Some(weight)` runs it and a
    /// success will count `weight` (1 without NI_RANDOM, or at ratio 1024).
    pub(super) fn newidle_should_balance(&self, this_cpu: CpuId, level: usize) -> Option<u32> {
        let slot = &self.slots[this_cpu.index()];
        let st = &slot.lb[level].ni;
        let ratio = st.ratio.load(Ordering::Relaxed);
        if !self.cfg.features.enabled(Feature::NiRandom) || ratio >= NI_WINDOW {
            return Some(1);
        }
        let d1k = slot.rng.next_u32() % NI_WINDOW;
        let w = ni_dice(d1k, ratio);
        if w.is_none() {
            st.skipped.fetch_add(1, Ordering::Relaxed);
            self.update_newidle_stats(this_cpu, level, 0);
        }
        w
    }

    /// After a newidle balance of `this_cpu`'s `level` ran: counts it, with
    /// `success` (0 when nothing moved, else the die's weight).
    pub(super) fn newidle_balanced(&self, this_cpu: CpuId, level: usize, success: u32) {
        let st = &self.slots[this_cpu.index()].lb[level].ni;
        st.balances.fetch_add(1, Ordering::Relaxed);
        self.update_newidle_stats(this_cpu, level, success);
    }

    /// `update_newidle_stats`: one more call, `success` more successes; at the
    /// end of a window, the new ratio ([`ni_ratio`]) and both counts halved.
    fn update_newidle_stats(&self, this_cpu: CpuId, level: usize, success: u32) {
        let st = &self.slots[this_cpu.index()].lb[level].ni;
        let mut call = st.call.load(Ordering::Relaxed) + 1;
        let mut succ = st.success.load(Ordering::Relaxed).saturating_add(success);
        if call >= NI_WINDOW {
            let now = self.platform.now_ns();
            let window_ns = now.saturating_sub(st.stamp_ns.load(Ordering::Relaxed));
            st.stamp_ns.store(now, Ordering::Relaxed);
            let rate = self.cfg.features.enabled(Feature::NiRate);
            st.ratio
                .store(ni_ratio(succ, window_ns, rate), Ordering::Relaxed);
            call /= 2;
            succ /= 2;
        }
        st.call.store(call, Ordering::Relaxed);
        st.success.store(succ, Ordering::Relaxed);
    }
}

/// The generator seed of `cpu` under the machine seed `seed`.
pub(super) fn rng_seed(seed: u64, cpu: CpuId) -> u64 {
    seed ^ (cpu.index() as u64).wrapping_mul(0xd1b5_4a32_d192_ed03)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The die runs a balance with probability (ratio + 2) / 1024 and its
    /// weight is the rounded inverse of (1 + ratio) / 1024.
    #[test]
    fn dice_follow_the_ratio() {
        for ratio in [0, 1, 255, 511, 1000, 1022, 1023] {
            let runs = (0..NI_WINDOW)
                .filter(|&d| ni_dice(d, ratio).is_some())
                .count() as u32;
            assert_eq!(runs, (ratio + 2).min(NI_WINDOW), "ratio {ratio}");
        }
        assert_eq!(ni_dice(0, 0), Some(1024));
        assert_eq!(ni_dice(1, 0), Some(1024));
        assert_eq!(ni_dice(2, 0), None);
        assert_eq!(ni_dice(2, 1), Some(512));
        assert_eq!(ni_dice(3, 1), None);
        assert_eq!(ni_dice(0, 255), Some(4));
        assert_eq!(ni_dice(0, 511), Some(2));
        assert_eq!(ni_dice(0, 1023), Some(1));
    }

    #[test]
    fn ratio_adds_the_window_time_with_ni_rate() {
        assert_eq!(ni_ratio(100, 0, true), 100);
        assert_eq!(ni_ratio(100, 1 << 30, false), 100);
        // 2^30 ns (~1.07 s) is 256 units of 2^22 ns.
        assert_eq!(ni_ratio(100, 1 << 30, true), 356);
        assert_eq!(ni_ratio(0, 1 << 32, true), 1024);
        assert_eq!(ni_ratio(5000, 0, false), 1024);
        assert_eq!(ni_ratio(u32::MAX, u64::MAX, true), 1024);
    }

    /// The generator: a fixed stream per seed, different seeds differ, and
    /// `% 1024` is uniform enough that each of 16 bins of 64 faces gets
    /// 1/16 of 1 M draws within 2% (the binomial sd is 0.1%).
    #[test]
    fn lfsr113_is_reproducible_and_uniform() {
        let mut a = Lfsr113::new(7);
        let mut b = Lfsr113::new(7);
        let mut c = Lfsr113::new(8);
        let xs: [u32; 8] = core::array::from_fn(|_| a.next_u32());
        let ys: [u32; 8] = core::array::from_fn(|_| b.next_u32());
        let zs: [u32; 8] = core::array::from_fn(|_| c.next_u32());
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
        // Seed 7's stream, as the first version of the generator (a zip over
        // the four components) drew it: rewriting the steps kept it.
        assert_eq!(
            xs[..4],
            [0x5d81_1770, 0xb4da_c218, 0x6868_2a88, 0xd86b_6606]
        );
        let mut bins = [0u32; 16];
        // Miri interprets ~1000x slower: 16 K draws there, where the
        // binomial sd is 3.0% and the bound 12.5% (4.1 sd) instead of 2%.
        let (n, tolerance) = if cfg!(miri) {
            (1 << 14, 8)
        } else {
            (1 << 20, 50)
        };
        for _ in 0..n {
            bins[(a.next_u32() % NI_WINDOW / 64) as usize] += 1;
        }
        for (i, &k) in bins.iter().enumerate() {
            let want = n / 16;
            assert!(k.abs_diff(want) * tolerance < want, "bin {i}: {k} of {n}");
        }
    }
}
