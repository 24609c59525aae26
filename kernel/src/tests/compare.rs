//! `compare` (kernel/src/shell/compare.rs): the state it finds is the state
//! it leaves, on success, on a refused config and on Ctrl-C; each run sees
//! exactly its config on top of the boot defaults; and on hackbench the
//! counters move the way NEXT_BUDDY's mechanism says (directions of counters,
//! never wall-clock ratios).

use alloc::string::String;
use alloc::vec::Vec;

use ::sched::rq::WAKEUP_ROW_NAMES;
use ::sched::{Feature, PreemptMode};
use ::shell::{parse, Command, Compare};

use crate::shell::compare::{self, Counters, State, BOOT};
use crate::workloads::Control;
use crate::{kassert, kassert_eq, ktest, ktest_smp};

fn compare_cmd(line: &str) -> Result<Compare, String> {
    match parse(line) {
        Ok(Some(Command::Compare(c))) => Ok(c),
        other => Err(alloc::format!("{line}: {other:?}")),
    }
}

/// Records the live state at every poll; says Ctrl-C at poll `stop_at`, or
/// at the `n`th poll that sees state `stop_in` (a poll inside a run of that
/// config, however many polls the earlier runs took).
struct Spy {
    seen: Vec<State>,
    stop_at: usize,
    stop_in: Option<(State, usize)>,
}

impl Control for Spy {
    fn interrupted(&mut self) -> bool {
        let now = State::capture(crate::sched::sched_config());
        if self.seen.len() < self.seen.capacity() {
            self.seen.push(now.clone());
        }
        if let Some((want, n)) = &mut self.stop_in {
            if *want == now {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    return true;
                }
            }
        }
        self.seen.len() >= self.stop_at
    }
}

/// A state unlike the boot defaults: three features flipped, a sysctl and
/// the preemption model changed.
fn odd_state() -> State {
    let cfg = crate::sched::sched_config();
    cfg.features.set(Feature::RunToParity, false);
    cfg.features.set(Feature::PlaceLag, false);
    cfg.features.set(Feature::NextBuddyIneligibleResched, true);
    let _ = cfg.sysctl_set("kernel.sched_migration_cost_ns", "123456");
    cfg.tunables.set_preempt_mode(PreemptMode::Voluntary);
    State::capture(cfg)
}

fn row(d: &Counters, name: &str) -> u64 {
    WAKEUP_ROW_NAMES
        .iter()
        .position(|n| *n == name)
        .map_or(0, |i| d.rows[i])
}

ktest!(compare_restores_state, || {
    let before = odd_state();
    let (boot, _) = BOOT.get().cloned().ok_or("no boot state recorded")?;
    kassert!(before != boot);

    // Success: a config, then the state found before.
    let c =
        compare_cmd("compare -n 2 -w 1 -c 'NEXT_BUDDY kernel.sched_nr_migrate=8' -- spin -d 20 0")?;
    let mut spy = Spy {
        seen: Vec::with_capacity(64),
        stop_at: usize::MAX,
        stop_in: None,
    };
    let mut out = String::new();
    let o = compare::run_restoring(&c, &mut spy, &mut out)?;
    kassert_eq!(State::capture(crate::sched::sched_config()), before);
    kassert_eq!(
        (o.dropped, o.counters[0].len(), o.interrupted),
        (1, 2, false)
    );
    kassert_eq!(out.lines().filter(|l| l.starts_with("run ")).count(), 2);
    kassert_eq!(out.lines().filter(|l| l.starts_with("warmup ")).count(), 1);
    // Every poll during a run saw the boot defaults plus exactly the config
    // (the first poll comes before the first run is set up).
    let cfg = ::sched::SchedConfig::new(crate::sched::nr_cpus() as u32, 250);
    boot.apply(&cfg);
    cfg.features.set(Feature::NextBuddy, true);
    let _ = cfg.sysctl_set("kernel.sched_nr_migrate", "8");
    let want = State::capture(&cfg);
    kassert!(spy.seen.len() > 3, "{} polls", spy.seen.len());
    for s in &spy.seen[1..] {
        kassert!(*s == want || *s == before, "a run saw {s:?}, want {want:?}");
    }
    kassert!(spy.seen[1..].contains(&want));

    // A refused config (value out of range, checked by sched): nothing runs
    // and nothing changes.
    let c = compare_cmd("compare -c NEXT_BUDDY -c kernel.sched_nr_migrate=0 -- spin -d 20 0")?;
    let mut out = String::new();
    let e = compare::run_restoring(&c, &mut crate::workloads::NoInterrupt, &mut out)
        .err()
        .ok_or("a bad config was accepted")?;
    kassert!(e.starts_with("config B 'kernel.sched_nr_migrate=0'"), "{e}");
    kassert!(out.is_empty(), "{out}");
    kassert_eq!(State::capture(crate::sched::sched_config()), before);

    // Ctrl-C during the second run (config B's third poll, inside its
    // workload's wait loop): stopped, not kept, restored.
    let c =
        compare_cmd("compare -n 3 -w 0 -c preempt=lazy -c NO_WAKEUP_PREEMPTION -- spin -d 200 0")?;
    let cfg = ::sched::SchedConfig::new(crate::sched::nr_cpus() as u32, 250);
    boot.apply(&cfg);
    cfg.features.set(Feature::WakeupPreemption, false);
    let mut spy = Spy {
        seen: Vec::with_capacity(64),
        stop_at: usize::MAX,
        stop_in: Some((State::capture(&cfg), 3)),
    };
    let mut out = String::new();
    let o = compare::run_restoring(&c, &mut spy, &mut out)?;
    kassert!(o.interrupted);
    kassert!(out.contains("interrupted, not kept"), "{out}");
    kassert_eq!(State::capture(crate::sched::sched_config()), before);
    crate::ktest::reset_sched_state();
    let _ = crate::sched::sched_config().sysctl_set("kernel.sched_migration_cost_ns", "500000");
    Ok(())
});

ktest_smp!(compare_next_buddy_counters_on_hackbench, 1, || {
    let c = compare_cmd("compare -n 3 -w 0 -c '' -c NEXT_BUDDY -- hackbench -g 1 -f 10")?;
    let mut out = String::new();
    let o = compare::run_restoring(&c, &mut crate::workloads::NoInterrupt, &mut out)?;
    kassert_eq!((o.counters[0].len(), o.counters[1].len()), (3, 3));
    let (base, nb) = (&o.counters[0], &o.counters[1]);
    let sum = |v: &[Counters], f: &dyn Fn(&Counters) -> u64| v.iter().map(f).sum::<u64>();
    let pick = |d: &Counters| {
        row(d, "wk_picked")
            + row(d, "wk_picked_short")
            + row(d, "wk_not_picked")
            + row(d, "wk_not_picked_short")
    };
    // Buddy picks happen only with NEXT_BUDDY (nothing else sets a next buddy).
    kassert!(base.iter().all(|d| d.buddy == 0), "{out}");
    kassert!(nb.iter().all(|d| d.buddy > 0), "{out}");
    // Every hackbench wakeup is WF_SYNC: with NEXT_BUDDY they take row 12;
    // with NO_NEXT_BUDDY_SYNC_RUNTIME the waker's runtime is ~0, so none of
    // them preempts (SyncNone), and the PICK rows see far fewer wakeups.
    kassert!(base.iter().all(|d| row(d, "wk_sync_none") == 0), "{out}");
    kassert!(nb.iter().all(|d| row(d, "wk_sync_none") > 0), "{out}");
    kassert!(nb.iter().all(|d| row(d, "wk_sync_resched") == 0), "{out}");
    kassert!(sum(nb, &pick) < sum(base, &pick), "{out}");
    // Every wakeup preemption, in both configs, is one of the rows that
    // preempt. Fewer wakeup preemptions under NEXT_BUDDY is not asserted: the
    // buddy is set on non-sync wakeups too, and PICK_BUDDY then lands their
    // PICK on the wakee, so those preempt more often than without it; the net
    // depends on the sync/non-sync mix (a measured outcome, for the A/B
    // tables, not a rule; 6 runs of hackbench -g 1 -f 10 gave 15 without and
    // 17 with).
    let preempting = |d: &Counters| {
        [
            "wk_idle_cpu",
            "wk_higher_class",
            "wk_idle_curr",
            "wk_inelig_waker",
            "wk_sync_resched",
            "wk_picked",
            "wk_picked_short",
            "wk_rt_higher",
            "wk_dl_earlier",
        ]
        .iter()
        .map(|n| row(d, n))
        .sum::<u64>()
    };
    kassert!(
        base.iter()
            .chain(nb)
            .all(|d| d.wakeup_preempt == preempting(d)),
        "{out}"
    );
    let mut table = String::new();
    compare::print_table(&c, &o, &mut table);
    kassert!(
        table.contains("A:default") && table.contains("B:NEXT_BUDDY"),
        "{table}"
    );
    kassert!(table.contains("Welch's t-test"), "{table}");
    for l in table.lines().filter(|l| {
        [
            "Amean   time_s",
            "Amean   buddy",
            "Amean   wk_preempt",
            "Amean   wk_sync_none",
        ]
        .iter()
        .any(|p| l.starts_with(p))
    }) {
        crate::kprintln!("    {l}");
    }
    Ok(())
});
