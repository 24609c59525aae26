//! A small seeded PRNG (xoshiro256**, seeded through SplitMix64): same seed,
//! same stream, on every host. No allocation, no global state.

/// xoshiro256** by Blackman and Vigna (public domain reference algorithm).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// A generator for `seed` (any value, 0 included).
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        Rng {
            s: [
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
                splitmix(&mut x),
            ],
        }
    }

    /// The stream of entity `id` (a task, a CPU) in the run of `seed`:
    /// the generator of SplitMix64(`seed`) XOR `id` × 2^64/φ, so that a
    /// task's draws depend on the run's seed and on its own history only,
    /// not on how the run's events interleave. Distinct ids give distinct
    /// streams for one seed; two seeds share no stream structurally (the
    /// seed is hashed before the id is mixed in, so seed 1 task 2 is not
    /// seed 3 task 0).
    pub fn stream(seed: u64, id: u64) -> Self {
        let mut x = seed;
        let s = splitmix(&mut x);
        Rng::new(s ^ id.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let r = self.peek_u64();
        self.step();
        r
    }

    /// What [`Rng::next_u64`] returns next, without drawing it (the
    /// output is a function of the state before the step).
    #[inline]
    pub fn peek_u64(&self) -> u64 {
        self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9)
    }

    /// What [`Rng::jittered`] returns next for `j`, without drawing it
    /// (a draw is made only if `j` has a range: then [`Rng::next_u64`]
    /// takes it).
    #[inline]
    pub fn peek_jittered(&self, j: Jitter) -> u64 {
        if j.range == 0 {
            return j.low;
        }
        j.low + ((self.peek_u64() as u128 * j.range as u128) >> 64) as u64
    }

    /// Draws what [`Rng::peek_jittered`] for `j` returned, without
    /// working it out again: the stream is then where [`Rng::jittered`]
    /// leaves it.
    #[inline]
    pub fn skip_jittered(&mut self, j: Jitter) {
        if j.range != 0 {
            self.step();
        }
    }

    /// [`Rng::peek_jittered`] for a `j` that draws ([`Jitter::draws`]),
    /// without the test for it (a loop that tested once).
    #[inline(always)]
    pub fn peek_drawn(&self, j: Jitter) -> u64 {
        debug_assert!(j.draws());
        j.low + ((self.peek_u64() as u128 * j.range as u128) >> 64) as u64
    }

    /// [`Rng::skip_jittered`] for a `j` that draws ([`Rng::peek_drawn`]).
    #[inline(always)]
    pub fn skip_drawn(&mut self) {
        self.step();
    }

    /// The state's step (what [`Rng::next_u64`] does besides its output).
    #[inline(always)]
    fn step(&mut self) {
        let s = &mut self.s;
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, n) (n > 0).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// `mean` ns jittered uniformly by ±`pct`% (a cost that varies run to run).
    #[inline]
    pub fn jitter(&mut self, mean: u64, pct: u32) -> u64 {
        if pct == 0 || mean == 0 {
            return mean;
        }
        let span = mean * pct as u64 / 100;
        mean - span + self.below(2 * span + 1)
    }

    /// `j`'s cost jittered: the same value and the same draw as
    /// [`Rng::jitter`] with the mean and percentage `j` was made from.
    #[inline]
    pub fn jittered(&mut self, j: Jitter) -> u64 {
        if j.range == 0 {
            return j.low;
        }
        j.low + self.below(j.range)
    }

    /// Exponentially distributed with the given mean (ns), at least 1.
    #[inline]
    pub fn exp(&mut self, mean: u64) -> u64 {
        let u = 1.0 - self.f64();
        ((-u.ln()) * mean as f64).max(1.0) as u64
    }
}

/// A cost jittered uniformly by ±pct% ([`Rng::jitter`]) with its span
/// worked out once, for a cost drawn at every message.
#[derive(Clone, Copy, Debug, Default)]
pub struct Jitter {
    /// The lowest value (the mean without jitter).
    low: u64,
    /// Values drawn from (0: none, the mean as it is).
    range: u64,
}

impl Jitter {
    /// Whether a value is drawn (a range), else the mean is taken as it is.
    #[inline(always)]
    pub fn draws(&self) -> bool {
        self.range != 0
    }

    /// The lowest value it draws.
    pub fn low(&self) -> u64 {
        self.low
    }

    /// The highest value it draws.
    pub fn high(&self) -> u64 {
        self.low + self.range.saturating_sub(1)
    }

    /// `mean` ns jittered by ±`pct`%.
    pub fn new(mean: u64, pct: u32) -> Self {
        if pct == 0 || mean == 0 {
            return Jitter {
                low: mean,
                range: 0,
            };
        }
        let span = mean * pct as u64 / 100;
        Jitter {
            low: mean - span,
            range: 2 * span + 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }

    /// A precomputed jitter draws what `jitter` draws, value for value and
    /// draw for draw (the two streams stay in step), for means and
    /// percentages around the edge cases (0, a span of 0, ±100%).
    #[test]
    fn precomputed_jitter_is_jitter() {
        let (mut a, mut b) = (Rng::new(11), Rng::new(11));
        for mean in [
            0,
            1,
            9,
            10,
            11,
            99,
            100,
            315,
            849,
            1_000_000,
            u32::MAX as u64,
        ] {
            for pct in [0, 1, 10, 50, 100] {
                let j = Jitter::new(mean, pct);
                for _ in 0..50 {
                    assert_eq!(a.jitter(mean, pct), b.jittered(j), "mean {mean} pct {pct}");
                }
            }
        }
        assert_eq!(a.next_u64(), b.next_u64());
    }

    /// Entity streams: reproducible, and different across ids and seeds
    /// (including the pairs a plain `seed ^ id` would merge).
    #[test]
    fn streams_differ_by_seed_and_id() {
        let first = |seed, id| Rng::stream(seed, id).next_u64();
        assert_eq!(first(1, 2), first(1, 2));
        assert_ne!(first(1, 2), first(3, 0));
        assert_ne!(first(1, 0), first(1, 1));
        assert_ne!(first(1, 0), first(2, 0));
        let mut seen: Vec<u64> = (0..4)
            .flat_map(|seed| (0..256).map(move |id| first(seed, id)))
            .collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 4 * 256);
    }

    /// A peek is the next draw, and draws nothing.
    #[test]
    fn peek_is_the_next_draw() {
        let (mut a, mut b) = (Rng::new(5), Rng::new(5));
        for mean in [0, 9, 315, 849] {
            let j = Jitter::new(mean, 10);
            for _ in 0..100 {
                assert_eq!(a.peek_u64(), a.clone().next_u64());
                let v = a.peek_jittered(j);
                assert_eq!(v, b.jittered(j));
                a.skip_jittered(j);
            }
        }
        assert_eq!(a.next_u64(), b.next_u64());
    }

    #[test]
    fn ranges() {
        let mut r = Rng::new(3);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
            let j = r.jitter(1000, 10);
            assert!((900..=1100).contains(&j));
            assert!((0.0..1.0).contains(&r.f64()));
        }
    }
}
