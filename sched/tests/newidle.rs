//! Proportional newidle balancing (NI_RANDOM, NI_RATE) through the
//! scheduler: a CPU whose newidle balances keep failing, with each flag on
//! and off, at a high and a low newidle rate.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::common;
use common::cpu_id;

use common::plat::Plat;
use sched::smp::{NewidleStats, Scheduler};
use sched::{CpuMask, Feature, SchedConfig, SchedTask, TaskId, TaskParams};

use crate::common::MS;
use crate::common::US;

/// Two CPUs; CPU 0 runs one task and queues another, both pinned to it, so
/// CPU 0 counts as overloaded (a newidle balance is tried) but CPU 1's
/// newidle balances can never pull anything.
fn pinned_pair(random: bool, rate: bool, seed: u64) -> Scheduler<Plat> {
    let cfg = Arc::new(SchedConfig::new(2, 250));
    cfg.features.set(Feature::NiRandom, random);
    cfg.features.set(Feature::NiRate, rate);
    let s = Scheduler::new(Plat::default(), cfg, 2, 64);
    s.seed_sched_rng(seed);
    {
        let mut rq = s.cpu_rq(cpu_id(0));
        rq.update_rq_clock(1);
        for id in 1..=2 {
            let mut t = SchedTask::new(TaskParams::default());
            t.cpus_allowed = CpuMask::from_cpus(&[0]);
            rq.wake_up_new_task(TaskId(id), t);
        }
        rq.pick_next_task();
    }
    assert_eq!(s.overloaded_cpus(), 1);
    s
}

/// `n` newidle balances of CPU 1, `gap_ns` apart on the platform clock.
fn newidle_calls(s: &Scheduler<Plat>, n: u64, gap_ns: u64) {
    for _ in 0..n {
        s.platform.now.fetch_add(gap_ns, Ordering::Relaxed);
        assert!(s.load_balance(cpu_id(1), true).is_empty());
    }
}

/// The ratio after `calls` failing newidle balances from the start (512
/// calls in, 256 successes, ratio 512) when the ratio comes from the
/// successes alone (no NI_RATE, or windows far shorter than 2^22 ns): each
/// window of 512 calls halves the successes, so 256, 128, ... 1, then 0
/// from the 10th window on.
fn failing_ratio(calls: u64) -> u32 {
    512u32.checked_shr((calls / 512) as u32).unwrap_or(0)
}

fn stats(s: &Scheduler<Plat>) -> NewidleStats {
    // A flat machine has one domain level, MC.
    assert_eq!(s.domains(cpu_id(1)).len(), 1);
    s.newidle_stats(cpu_id(1), 0)
}

/// Linux's starting point: 512 calls, 256 successes, ratio 512.
#[test]
fn stats_start_at_half_success() {
    let s = pinned_pair(true, true, 0);
    assert_eq!(
        stats(&s),
        NewidleStats {
            call: 512,
            success: 256,
            ratio: 512,
            balances: 0,
            skipped: 0
        }
    );
}

/// NI_RANDOM (NI_RATE on, newidle every 1 µs: far above NI_RATE's ~120 Hz
/// threshold): every window of 512 calls halves the successes, so the ratio
/// goes 256, 128, ... 1, 0 within 10 windows; from then on a balance runs
/// only when the die shows 0 or 1, 2 in 1024 calls. Over 100 000 calls that
/// is 195.3 balances expected (binomial sd 14.0); the bound is +-30% (4 sd).
#[test]
fn ni_random_skips_failing_newidle_balances_in_proportion() {
    // Miri interprets ~1000x slower: there the CPU starts at ratio 0
    // (`set_newidle_ratio`; the fall to 0 is what no_ni_random_... and
    // ni_rate_... check) and makes 20 000 calls: 39.1 balances expected
    // (sd 6.2), bound +-65% (4 sd).
    let (warm, n, bound) = if cfg!(miri) {
        (0, 20_000, 0.65)
    } else {
        (10_000, 100_000, 0.3)
    };
    let s = pinned_pair(true, true, 1);
    if warm == 0 {
        s.set_newidle_ratio(cpu_id(1), 0, 0);
    } else {
        newidle_calls(&s, warm, US);
    }
    let a = stats(&s);
    assert_eq!(a.ratio, 0, "{a:?}");
    assert_eq!(a.balances + a.skipped, warm);
    newidle_calls(&s, n, US);
    let b = stats(&s);
    assert_eq!(b.ratio, 0);
    assert_eq!(b.balances + b.skipped, warm + n);
    let ran = b.balances - a.balances;
    let want = n as f64 * 2.0 / 1024.0;
    assert!(
        (ran as f64 - want).abs() < bound * want,
        "{ran} balances in {n} calls, want ~{want:.1}"
    );
    // Every call counts in the window, skipped or not: call stays in 512..1024.
    assert!((512..1024).contains(&b.call), "{b:?}");
    assert_eq!(b.success, 0);
}

/// NO_NI_RANDOM: every newidle balance runs, however often it fails; the
/// ratio is still kept (it reads 0 here, 128 under Miri).
#[test]
fn no_ni_random_balances_every_time() {
    // 1 024 calls under Miri (~1000x slower; each runs a whole balance):
    // two windows, the ratio down to 128, where NI_RANDOM would already
    // skip 87% of the calls.
    let n = if cfg!(miri) { 1_024 } else { 20_000 };
    let s = pinned_pair(false, true, 1);
    newidle_calls(&s, n, US);
    let st = stats(&s);
    assert_eq!((st.balances, st.skipped), (n, 0));
    assert_eq!(st.ratio, failing_ratio(n));
}

/// NI_RATE: the same failing CPU going newly idle every 10 ms (100 Hz).
/// A window of 512 calls then lasts 5.12 s, more than the 2^32 ns (~4.29 s)
/// that gives the full ratio 1024, and at 1024 NI_RANDOM throws no die:
/// after the first window every call balances. Without NI_RATE the ratio
/// comes from the successes alone and the CPU is skipped as at a high rate.
#[test]
fn ni_rate_keeps_a_rarely_idle_cpu_balancing() {
    // Miri interprets ~1000x slower, and each of these calls runs a whole
    // balance: 200 calls at the full ratio there.
    let full = if cfg!(miri) { 200 } else { 5_000 };
    let s = pinned_pair(true, true, 2);
    newidle_calls(&s, 512, 10 * MS);
    let a = stats(&s);
    assert_eq!(a.ratio, 1024, "{a:?}");
    newidle_calls(&s, full, 10 * MS);
    let b = stats(&s);
    assert_eq!(b.ratio, 1024);
    assert_eq!(b.balances - a.balances, full, "{b:?}");
    assert_eq!(b.skipped, a.skipped);

    let s = pinned_pair(true, false, 2);
    // The ratio needs 10 windows of 512 to fall to 0 (about 520 balances
    // run on the way, 2 in 1024 calls after): of 10 000 calls at most
    // 2 000 balance. Under Miri two windows, 1 024 calls: the ratio falls
    // to 128 (with NI_RATE it would read 1024) and about 386 balance (sd
    // 15; with NI_RATE about 770): at most 500.
    let (calls, max_run) = if cfg!(miri) {
        (1_024, 500)
    } else {
        (10_000, 2_000)
    };
    newidle_calls(&s, calls, 10 * MS);
    let c = stats(&s);
    assert_eq!(c.ratio, failing_ratio(calls), "{c:?}");
    assert!(c.skipped > calls - max_run, "{c:?}");

    // In between, 2.5 ms apart: a window lasts 1.28 s, 305 units of
    // 2^22 ns, the ratio settles at 305 and about (305 + 2) / 1024 = 30%
    // of the calls run (bound +-10% of that, the binomial sd is 1.4%).
    // Under Miri the CPU starts settled (`set_newidle_ratio`: ratio 305, no
    // successes), and 2 000 calls give a bound of +-15% (4.4 sd).
    let settled = ((512 * 2_500 * US) >> 22) as u32;
    let (warm, n, bound) = if cfg!(miri) {
        (0, 2_000, 0.15)
    } else {
        (6_000, 20_000, 0.1)
    };
    let s = pinned_pair(true, true, 3);
    if warm == 0 {
        s.set_newidle_ratio(cpu_id(1), 0, settled);
    } else {
        newidle_calls(&s, warm, 2_500 * US);
    }
    let d = stats(&s);
    assert_eq!(d.ratio, settled, "{d:?}");
    newidle_calls(&s, n, 2_500 * US);
    let e = stats(&s);
    // Three windows or more closed on the way, each at 305 again.
    assert_eq!(e.ratio, settled, "{e:?}");
    let frac = (e.balances - d.balances) as f64 / n as f64;
    let want = (d.ratio + 2) as f64 / 1024.0;
    assert!(
        (frac - want).abs() < bound * want,
        "ran {frac:.4}, want {want:.4}"
    );
}

/// The die is drawn from the seeded per-CPU generator: the same seed
/// replays the same skips, another seed gives another sequence.
#[test]
fn the_die_is_reproducible_per_seed() {
    let run = |seed| {
        let s = pinned_pair(true, true, seed);
        // 100 calls under Miri (~1000x slower): 100 dice at ratio 512 in
        // the first window, about 50 balances (sd 5), so four other seeds
        // all matching seed 5's count has a chance of about 10^-4.
        newidle_calls(&s, if cfg!(miri) { 100 } else { 3_000 }, US);
        stats(&s)
    };
    assert_eq!(run(5), run(5));
    let others: Vec<_> = (6..10).map(run).collect();
    assert!(others.iter().any(|o| *o != run(5)), "{others:?}");
}

/// Periodic balancing neither throws the die nor counts as a newidle call.
#[test]
fn periodic_balance_leaves_newidle_stats_alone() {
    let s = pinned_pair(true, true, 0);
    // 100 under Miri (~1000x slower): counted as newidle calls they would
    // show as 612.
    for _ in 0..if cfg!(miri) { 100 } else { 2_000 } {
        s.platform.now.fetch_add(MS, Ordering::Relaxed);
        assert!(s.load_balance(cpu_id(1), false).is_empty());
    }
    assert_eq!(stats(&s).call, 512);
    assert_eq!((stats(&s).balances, stats(&s).skipped), (0, 0));
}
