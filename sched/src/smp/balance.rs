//! Load balancing over the scheduling domains (Linux's `load_balance`,
//! `find_busiest_group`, `calculate_imbalance`, `find_busiest_queue`,
//! `should_we_balance`, `can_migrate_task`/`task_hot` and
//! `sched_balance_domains`, formerly `rebalance_domains`, in
//! kernel/sched/fair.c).
//!
//! A pass walks this CPU's domains bottom-up, so imbalances are fixed within
//! a core, then within an LLC, before tasks cross LLCs or nodes. At each level:
//! 1. `should_we_balance` (periodic passes only): one CPU per local group
//!    balances for it, the first idle one, else the group's first CPU; the
//!    others stop climbing, as in Linux.
//! 2. `find_busiest_group`: sums nr_running and PELT load (`cpu_load()`,
//!    blocked load included, as Linux's `group_load`) over each group (a
//!    child span) and picks the group with the most tasks per CPU (then the
//!    most load per CPU). Nothing moves unless it holds more tasks per CPU
//!    than the local group; when the local group is overloaded too, the
//!    busiest must exceed it by the level's `imbalance_pct`.
//! 3. `calculate_imbalance`: the tasks to move so that both groups hold the
//!    same tasks per CPU: `(B·wL − L·wB) / (wL + wB)`, which is `(B − L) / 2`
//!    for equal groups and, with single-CPU groups, the old flat rule (pull
//!    when two tasks apart). Across nodes (`SD_NUMA`) a busiest node that
//!    still has idle CPUs may keep up to `NUMA_IMBALANCE_MIN` extra tasks
//!    while this node runs at most `imb_numa_nr` (`adjust_numa_imbalance`).
//! 4. `find_busiest_queue`: the CPU of that group with the most runnable
//!    tasks. One running a lone task counts (in a domain of unequal CPUs,
//!    only if this CPU has more capacity): it cannot be pulled, the pass
//!    fails, and the active balance below may push it.
//! 5. Pulling as before: queued, not running, allowed, fair tasks, least
//!    urgent first, at most the imbalance, `kernel.sched_nr_migrate` and
//!    [`MAX_PULL`]. A task counts as cache-hot for the
//!    level's `hot_scale` × `kernel.sched_migration_cost_ns` (0 between SMT
//!    siblings, longer across LLCs and nodes, see [`crate::domain`]) and stays
//!    unless the level's `nr_balance_failed` exceeds `cache_nice_tries`
//!    (`can_migrate_task`, for every kind of pass). When every task of the
//!    chosen CPU may run only elsewhere, the level is tried again without
//!    that CPU (`LBF_ALL_PINNED`), until no CPU outside the local group is
//!    left. On a periodic pass, tasks that may not run on this CPU but may
//!    on another CPU of the local group go there, from the same source,
//!    while the imbalance is not covered (`LBF_DST_PINNED`, `new_dst_cpu`,
//!    `more_balance`); a pull left short by affinity (`LBF_SOME_PINNED`)
//!    marks this level's span imbalanced for the level above
//!    (`sgc->imbalance`), which then ranks it busiest after overloaded
//!    groups and moves one task out of it (`group_imbalanced`).
//!    A newly idle pass takes one task at most: Linux's `detach_tasks` built
//!    with `CONFIG_PREEMPTION` stops after the first task it detaches on a
//!    `CPU_NEWLY_IDLE` pass ("NEWIDLE balancing is a source of latency, so
//!    preemptible kernels will stop after the first task is detached to
//!    minimize the critical section"), after the task is counted against
//!    the imbalance. Debian's amd64 Linux 7.2 has it (`PREEMPT_DYNAMIC`
//!    selects `PREEMPT_BUILD`, which selects `PREEMPTION`), whatever
//!    `preempt=` model it boots; our kernel is likewise always built
//!    preemptible with the model chosen at run time, so the rule is not a
//!    switch (Linux has no feature flag for it either). Periodic passes
//!    take up to the imbalance. Nothing else in `sched_balance_rq` hangs on
//!    it: the pass is not `LBF_NEED_BREAK`, so it does not go back to
//!    `more_balance` for that, and a newidle pass never sets
//!    `LBF_DST_PINNED`.
//!
//! `nr_balance_failed` (per CPU and level) follows Linux's
//! `sched_balance_rq` (formerly `load_balance`): a periodic pass that finds
//! an imbalance and a source CPU but moves nothing (hot, too heavy,
//! running, pinned while another task there is not) adds one; a newly idle
//! pass that moves nothing leaves it, so frequent newidle passes do not
//! make hot tasks move; moving tasks resets it, and so does a pass that
//! finds the level balanced (`out_balanced`: no busier group, no
//! imbalance, no source CPU, another CPU of the local group balances it,
//! or every candidate source pinned, `out_all_pinned`). A misfit pass that moves
//! nothing leaves it too. Besides the cache-hot test, `detach_tasks`
//! halves a task's load for each failure when balancing load.
//!
//! Active balance (`need_active_balance`, `active_load_balance_cpu_stop`):
//! a pass that balanced task counts (`migrate_task`), found a source and
//! moved nothing, with `nr_balance_failed` (this pass's failure counted)
//! above `cache_nice_tries + 2` (`imbalanced_active_balance`), has the
//! source's running task pushed here: the source is marked and asked to
//! switch, and its switch hands the task over, as for a misfit
//! ([`super::capacity`]; Linux's CPU stopper). The push landing resets the
//! count, at this CPU's lowest level spanning the source, as the stopper
//! does. A running task that may not run here is not pushed
//! (`out_one_pinned`): the count is kept, and a periodic pass doubles the
//! interval, up to [`MAX_PINNED_INTERVAL_MS`] when the source's lone task
//! was not looked at (`LBF_ALL_PINNED` still set), else up to
//! `max_interval`. A newly idle pass adds no failure but pushes once the
//! periodic ones raised the count.
//!
//! A periodic pass climbs every level due whatever the levels below moved
//! (`sched_balance_domains`, which reads the CPU's idle state again after a
//! pull); a newly idle pass stops at the first level that pulled
//! (`sched_balance_newidle`). [`Pulled`] gathers what every level moved, at
//! most [`MAX_PULL`] tasks a pass (a level past that waits
//! for the next tick), and names every CPU whose runqueue changed.
//!
//! The periodic balance ([`Scheduler::rebalance_domains`], called at every
//! tick) follows Linux 7.2's `sched_balance_trigger` and
//! `sched_balance_domains`: nothing before the CPU's `next_balance`; then
//! each level whose interval has passed since its `last_balance`, bottom-up,
//! until a level another CPU balances (`should_we_balance`), moved tasks
//! or not; `next_balance`
//! becomes the earliest time a visited level is due. The interval is
//! `get_sd_balance_interval`: the level's `balance_interval` (ms) in whole
//! ticks, rounded up, which while the CPU is busy (running a task, not only
//! SCHED_IDLE ones: `sched_idle_rq` counts as idle) is `busy_factor` (16)
//! times longer less one tick, at least one tick and at most
//! `max_load_balance_interval` (100 ms per active CPU). Time is counted in
//! ticks (`now_ns / tick_ns`, Linux's jiffies), as Linux's intervals are.
//! `balance_interval` starts at `min_interval` (the span weight in ms) and
//! follows the end of `sched_balance_rq`: any pass, newidle ones included,
//! that found an imbalance and a source CPU puts it back to `min_interval`,
//! whether it moved tasks or not; a periodic pass that found the level
//! balanced doubles it while under `max_interval` (twice the span weight),
//! or under [`MAX_PINNED_INTERVAL_MS`] when every task was pinned elsewhere
//! (`LBF_ALL_PINNED`); a newidle pass never doubles it. A newidle pass
//! lowers `next_balance` to when the levels it looked at are due at their
//! idle intervals (`update_next_balance`). [`Scheduler::load_balance`]
//! with `newidle` false ignores the intervals and balances every level now
//! (for tests); its outcome still moves `balance_interval`.
//!
//! Newidle passes are proportional to their success ([`super::newidle`]):
//! with NI_RANDOM a level is balanced with a probability that follows its
//! recent success ratio, and with NI_RATE a CPU that goes newly idle rarely
//! keeps balancing every time.
//!
//! In a domain with `SD_ASYM_CPUCAPACITY`, a misfit task goes to a bigger
//! CPU first (`group_misfit_task`, `migrate_misfit`, and active balancing
//! of the running misfit task; [`super::capacity`]).
//!
//! Group types are Linux's `group_classify` on PELT (utilisation and
//! runnable sums against the group's capacity and `imbalance_pct`,
//! [`super::placement`]'s `SgStats::group_type`): they gate the misfit
//! pull here and rank groups in fork placement.
//!
//! With tasks in task groups ([`crate::fair::group`]), a local group with
//! no idle CPU balances PELT load instead (`migrate_load`): the busiest is
//! the overloaded group of most load per capacity, the imbalance keeps both
//! groups at or under the domain's average (`find_busiest_group`'s balanced
//! cases, then `calculate_imbalance`'s `migrate_load`), the source the CPU
//! of most load, and each task moved counts its `task_h_load`, its share
//! of the CPU's root load through its groups ([`crate::Rq::task_h_load`]),
//! counted as Linux's `detach_tasks` counts it while detaching one task
//! after another: its runqueue's `h_load` as the pass began, its
//! runqueue's `load_avg` less what the tasks chosen before took away
//! ([`crate::Rq::task_h_load_parts`]), so the later tasks of a group count
//! heavier; a task whose load exceeds what is left stays, its load halved for each
//! failed periodic pass before (`nr_balance_failed`, reset when the level
//! is found balanced: `detach_tasks`' `shr_bound` and `out_balanced`).
//! Counts would misstate a grouped task's load by up to its group's size:
//! 1 task of group A beside 10 of group B on 4 CPUs settled at 3, 3, 3, 2
//! tasks, balanced by counts, with A's task sharing its CPU for good. A
//! busiest group below the domain's average gives what brings the local
//! group up to the average (Linux's unsigned difference wraps there, and
//! the minimum takes the local side).
//!
//! Left out: the group types and PELT in the busiest group's choice and
//! the imbalance when no task is in a group (nr_running stands in: Linux's
//! `update_sd_pick_busiest` by type, `find_busiest_group`'s balanced
//! cases, and `calculate_imbalance`'s migrate_util / migrate_load /
//! migrate_task, with `detach_tasks` by task load), asymmetric packing and
//! its active balance (`asym_active_balance`), the active balance of a
//! lone task on a CPU of reduced capacity (`check_cpu_capacity`: no
//! capacity pressure is modelled), the stopper's choice among the
//! source's queued tasks (`detach_one_task` takes the least recently run
//! movable one, which after a failed pass is the task that was running;
//! ours always pushes the running task, and only if it is still runnable
//! at its switch), a newly idle pass going on to the levels above after
//! one started an active balance (ours stops there, as for a misfit),
//! NUMA balancing's preferred nodes, the newidle cost cut-off
//! (`max_newidle_lb_cost`).

use core::sync::atomic::{AtomicBool, Ordering};

use super::lb_stats::{lb_stat, LbEvent, PassStats};
use super::placement::{SgStats, NUMA_IMBALANCE_MIN};
use super::{Platform, Pulled, Scheduler, MAX_PULL};
use crate::class::SchedClass;
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::domain::{DomainLevel, SchedDomain};
use crate::rq::Resched;
use crate::task::{TaskId, TaskState};

/// `MAX_PINNED_INTERVAL`: how far, in ms, a level whose tasks were all
/// pinned elsewhere (`LBF_ALL_PINNED`) may back off, past its `max_interval`.
pub const MAX_PINNED_INTERVAL_MS: u32 = 512;

impl<P: Platform> Scheduler<P> {
    /// Pulls tasks to `this_cpu` (or, for tasks pinned away from it, to
    /// another CPU of its group) from the busiest CPU of each domain level
    /// that is out of balance (`sched_balance_rq` over `for_each_domain`).
    /// With `newidle`, called from a CPU about to go idle
    /// (`sched_balance_newidle`), which tries every level until one pulls;
    /// otherwise a periodic pass of every level now, whatever its interval (for tests
    /// and tools: the kernel and the simulator balance periodically through
    /// [`Self::rebalance_domains`]), in which a level is balanced only by the
    /// one CPU of the local group chosen to (`should_we_balance`). Either
    /// way the levels' `balance_interval` follows the pass's outcome. Returns
    /// the tasks moved and where from, so the kernel can update its own
    /// records of where they are.
    pub fn load_balance(&self, this_cpu: CpuId, newidle: bool) -> Pulled {
        self.balance_levels(this_cpu, newidle)
    }

    /// The periodic balance of `this_cpu` at time `now_ns`
    /// (`sched_balance_trigger` and `sched_balance_domains`, formerly
    /// `rebalance_domains`), to be called from every tick. Nothing happens
    /// before the CPU's `next_balance`. Then each level whose interval
    /// ([`Self::balance_interval_ns`]) has passed since its last balance is
    /// balanced, bottom-up, whatever the levels below moved; a level another
    /// CPU balances (`should_we_balance`) ends the climb. `next_balance` becomes the
    /// earliest time a level visited is due again. Time is counted in ticks
    /// (`SchedConfig::tick_ns`, Linux's jiffies): `now_ns / tick_ns`.
    pub fn rebalance_domains(&self, this_cpu: CpuId, now_ns: u64) -> Pulled {
        if !self.rebalance_due(this_cpu, now_ns) {
            return Pulled::none(this_cpu);
        }
        let slot = &self.slots[this_cpu.index()];
        let jiffies = self.jiffies(now_ns);
        let mut busy = self.balance_busy(this_cpu);
        let mut next_balance = jiffies + 60 * self.hz();
        let mut update_next_balance = false;
        let mut continue_balancing = true;
        let mut out = Pulled::none(this_cpu);
        for (level, sd) in slot.doms.as_slice().iter().enumerate() {
            if !continue_balancing {
                break;
            }
            let st = &slot.lb[level];
            let mut interval = self.interval_jiffies(this_cpu, level, sd, busy);
            let last = st.last_balance_jiffies.load(Ordering::Relaxed);
            // Every level whose interval has passed is balanced, whatever
            // the levels below moved (`sched_balance_domains`); only a pass
            // that already moved `MAX_PULL` tasks leaves the levels above
            // due for the next tick ([`Pulled`] holds no more).
            if out.n < MAX_PULL && jiffies >= last.saturating_add(interval) {
                let (moved, cont) = self.sched_balance_rq(this_cpu, level, sd, false, &mut out);
                continue_balancing = cont;
                if moved {
                    // "The LBF_DST_PINNED logic could have changed
                    // env->dst_cpu, so we can't know our idle state even
                    // if we migrated tasks": read it again.
                    busy = self.balance_busy(this_cpu);
                }
                st.last_balance_jiffies.store(jiffies, Ordering::Relaxed);
                interval = self.interval_jiffies(this_cpu, level, sd, busy);
            }
            let due = st
                .last_balance_jiffies
                .load(Ordering::Relaxed)
                .saturating_add(interval);
            if due < next_balance {
                next_balance = due;
                update_next_balance = true;
            }
        }
        if update_next_balance {
            slot.next_balance_jiffies
                .store(next_balance, Ordering::Relaxed);
        }
        out
    }

    /// The kicked idle load balancer's pass (`_nohz_idle_balance` with
    /// `NOHZ_BALANCE_KICK`): for each CPU of `nohz_idle` (the CPUs in
    /// tickless idle), from the one after `ilb` on, wrapping, so that `ilb`
    /// itself comes last and the others get a chance to pull first, that
    /// is still idle, the periodic balance [`Self::rebalance_domains`] as
    /// that CPU's (`sched_balance_domains(rq, CPU_IDLE)`): only once its
    /// `next_balance` has come, levels at their idle intervals, a failed
    /// level counted in `nr_balance_failed`, so an active balance may
    /// follow (a newly idle pass counts no failure). Each CPU's outcome
    /// goes to `pulled_to(cpu, &pulled)`, which returns false to stop the
    /// walk (Linux stops when `ilb` got work: "next load balancing owner
    /// will pick it up"). The blocked-load updates the kick also asks
    /// (`NOHZ_STATS_KICK`) are not modelled. No allocation.
    pub fn nohz_idle_balance(
        &self,
        ilb: CpuId,
        nohz_idle: &CpuMask,
        now_ns: u64,
        mut pulled_to: impl FnMut(CpuId, &Pulled) -> bool,
    ) {
        for c in nohz_idle.cpus_wrap(ilb.index() + 1) {
            if c.index() >= self.nr_cpus() || !self.idle(c) {
                continue;
            }
            let pulled = self.rebalance_domains(c, now_ns);
            if !pulled_to(c, &pulled) {
                break;
            }
        }
    }

    /// Whether the periodic balance counts `cpu` busy, for its intervals
    /// (`sched_balance_domains`' `busy = idle != CPU_IDLE &&
    /// !sched_idle_rq(rq)`): it runs a task, and not only SCHED_IDLE ones.
    #[inline]
    fn balance_busy(&self, cpu: CpuId) -> bool {
        !self.idle(cpu) && !self.sched_idle_cpu(cpu)
    }

    /// The tick length, ns (at least 1): one jiffy.
    #[inline]
    fn tick_len_ns(&self) -> u64 {
        self.cfg.tick_ns().max(1)
    }

    /// `now_ns` in ticks since 0 (Linux's `jiffies`).
    #[inline]
    fn jiffies(&self, now_ns: u64) -> u64 {
        now_ns / self.tick_len_ns()
    }

    /// Whether [`Self::rebalance_domains`] would look at the levels now
    /// (`sched_balance_trigger`): `this_cpu` is active and its
    /// `next_balance` has come. Two atomic loads, for a caller that counts
    /// the passes.
    #[inline]
    pub fn rebalance_due(&self, this_cpu: CpuId, now_ns: u64) -> bool {
        let jiffies = self.jiffies(now_ns);
        self.cpu_active(this_cpu)
            && jiffies
                >= self.slots[this_cpu.index()]
                    .next_balance_jiffies
                    .load(Ordering::Relaxed)
    }

    /// The current periodic interval of `cpu`'s domain `level`, ns, as
    /// [`Self::rebalance_domains`] would use it now
    /// (`get_sd_balance_interval` with `cpu_busy` = the CPU is not idle):
    /// `balance_interval` ms, times `busy_factor` while busy, in whole
    /// ticks (rounded up, less one tick while busy), at least one tick and
    /// at most `max_load_balance_interval` (100 ms per active CPU).
    pub fn balance_interval_ns(&self, cpu: CpuId, level: usize) -> u64 {
        let busy = self.balance_busy(cpu);
        let sd = &self.slots[cpu.index()].doms.as_slice()[level];
        self.interval_jiffies(cpu, level, sd, busy) * self.tick_len_ns()
    }

    /// `sd->balance_interval` of `cpu`'s domain `level`, ms: `min_interval`
    /// at first and after a pass that found an imbalance, doubled by each
    /// periodic pass that found the level balanced, up to `max_interval`
    /// (or [`MAX_PINNED_INTERVAL_MS`] when every task was pinned elsewhere).
    pub fn balance_interval_ms(&self, cpu: CpuId, level: usize) -> u32 {
        self.slots[cpu.index()].lb[level]
            .interval_ms
            .load(Ordering::Relaxed)
    }

    /// When `cpu`'s next periodic balance may run (`rq->next_balance`), ns
    /// (a tick boundary): [`Self::rebalance_domains`] does nothing before.
    pub fn next_balance_ns(&self, cpu: CpuId) -> u64 {
        self.slots[cpu.index()]
            .next_balance_jiffies
            .load(Ordering::Relaxed)
            * self.tick_len_ns()
    }

    /// Ticks per second (`HZ`).
    fn hz(&self) -> u64 {
        (1_000_000_000 / self.tick_len_ns()).max(1)
    }

    /// `get_sd_balance_interval`, in ticks.
    fn interval_jiffies(&self, cpu: CpuId, level: usize, sd: &SchedDomain, busy: bool) -> u64 {
        let mut ms = self.slots[cpu.index()].lb[level]
            .interval_ms
            .load(Ordering::Relaxed) as u64;
        if busy {
            ms *= sd.busy_factor as u64;
        }
        // `msecs_to_jiffies` rounds up.
        let mut jiffies = (ms * 1_000_000).div_ceil(self.tick_len_ns());
        // "Reduce likelihood of busy balancing at higher domains racing with
        // balancing at lower domains by preventing their balancing periods
        // from being multiples of each other."
        if busy {
            jiffies = jiffies.saturating_sub(1);
        }
        // `max_load_balance_interval = HZ * num_online_cpus() / 10`.
        let max = (self.hz() * self.nr_active() as u64 / 10).max(1);
        jiffies.clamp(1, max)
    }

    /// `update_next_balance` (a newly idle pass, so `cpu_busy` = 0): lowers
    /// `next` to when `cpu`'s domain `level` is due.
    fn update_next_balance(&self, cpu: CpuId, level: usize, sd: &SchedDomain, next: &mut u64) {
        let last = self.slots[cpu.index()].lb[level]
            .last_balance_jiffies
            .load(Ordering::Relaxed);
        *next = (*next).min(last.saturating_add(self.interval_jiffies(cpu, level, sd, false)));
    }

    /// Whether a newly idle [`Self::load_balance`] would return at once
    /// with nothing pulled, as things stand: no CPU runs two or more tasks
    /// and none a misfit task (the test it starts with). A caller about to
    /// go idle may skip the call, and its own set-up for it, on this.
    #[inline]
    pub fn newidle_finds_nothing(&self) -> bool {
        self.overloaded.load(Ordering::Relaxed) == 0 && !self.any_misfit()
    }

    fn balance_levels(&self, this_cpu: CpuId, newidle: bool) -> Pulled {
        let slot = &self.slots[this_cpu.index()];
        let doms = slot.doms.as_slice();
        // `sched_balance_newidle` moves `next_balance` forward to when the
        // levels it looked at are due (idle intervals).
        let mut next_balance = u64::MAX;
        if newidle {
            next_balance = self.jiffies(self.platform.now_ns()) + self.hz();
        }
        let pulled = self.balance_levels_inner(this_cpu, newidle, doms, &mut next_balance);
        if newidle {
            slot.next_balance_jiffies
                .fetch_min(next_balance, Ordering::Relaxed);
        }
        pulled
    }

    fn balance_levels_inner(
        &self,
        this_cpu: CpuId,
        newidle: bool,
        doms: &[SchedDomain],
        next_balance: &mut u64,
    ) -> Pulled {
        // Newly idle with no CPU running two or more tasks: nothing anywhere
        // can be pulled (`find_busiest_queue` wants two), so skip the walk
        // (Linux's `sched_balance_newidle` bails out on `!rd->overloaded`).
        if newidle && self.newidle_finds_nothing() {
            if let Some(sd) = doms.first() {
                self.update_next_balance(this_cpu, 0, sd, next_balance);
            }
            return Pulled::none(this_cpu);
        }
        // An inactive CPU (going offline) pulls nothing.
        if !self.cpu_active(this_cpu) {
            return Pulled::none(this_cpu);
        }
        let mut out = Pulled::none(this_cpu);
        for (level, sd) in doms.iter().enumerate() {
            if out.n >= MAX_PULL {
                break;
            }
            // NI_RANDOM may skip this level's newidle balance; a success
            // counts the die's weight (see `newidle`).
            let weight = if newidle {
                self.update_next_balance(this_cpu, level, sd, next_balance);
                match self.newidle_should_balance(this_cpu, level) {
                    Some(w) => w,
                    None => continue,
                }
            } else {
                0
            };
            let (moved, continue_balancing) =
                self.sched_balance_rq(this_cpu, level, sd, newidle, &mut out);
            if newidle {
                let success = if moved { weight } else { 0 };
                self.newidle_balanced(this_cpu, level, success);
                // `sched_balance_newidle` stops at the first level that
                // pulled (`if (pulled_task || !continue_balancing)
                // break;`); a periodic pass climbs on.
                if moved || out.active_balance() {
                    break;
                }
            }
            if !continue_balancing {
                break;
            }
        }
        out
    }

    /// One level's pass (`sched_balance_rq`): `should_we_balance` on a
    /// periodic pass, then [`Self::balance_domain`], adding what moved to
    /// `out`. Returns whether tasks moved at this level (`ld_moved`) and
    /// `continue_balancing`: false when another CPU balances this level.
    fn sched_balance_rq(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        newidle: bool,
        out: &mut Pulled,
    ) -> (bool, bool) {
        // The pass's statistics, counted only while schedstats is on
        // (Linux's `schedstat_inc()`s): asked once a pass, `None` when off.
        let stats = self.pass_stats(this_cpu, level, newidle);
        lb_stat(stats, LbEvent::Count);
        if !newidle && !self.should_we_balance(sd, this_cpu) {
            // Another CPU balances this level: for this one it is
            // balanced (`should_we_balance` goes to `out_balanced`).
            self.lb_done(this_cpu, level, sd, Outcome::Balanced, newidle);
            lb_stat(stats, LbEvent::Balanced);
            self.group_imbalance_done(this_cpu, level, sd, Outcome::Balanced, false);
            return (false, false);
        }
        let moved = self.balance_domain(this_cpu, level, sd, newidle, stats, out);
        (moved, true)
    }

    /// `should_we_balance`: of the local group's CPUs, the first idle one
    /// balances this level for all of them; if none is idle, the first one.
    fn should_we_balance(&self, sd: &SchedDomain, this_cpu: CpuId) -> bool {
        let local = sd.group_of(&self.topology, this_cpu);
        match local.cpus().find(|&c| self.idle(c)) {
            Some(c) => c == this_cpu,
            None => local.first_cpu() == Some(this_cpu),
        }
    }

    /// One level: `find_busiest_group`, `calculate_imbalance`,
    /// `find_busiest_queue`, then the pull, adding what moved to `out`;
    /// its statistics counted as `stats` says ([`lb_stat`]).
    /// Returns whether tasks moved.
    fn balance_domain(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        newidle: bool,
        stats: Option<PassStats<'_>>,
        out: &mut Pulled,
    ) -> bool {
        let n0 = out.n;
        let all = self.active_mask();
        let local_span = sd.group_of(&self.topology, this_cpu);
        let local = self.sg_stats(local_span, &all);
        // SIS_UTIL: the LLC domain's periodic balance sizes the idle scan.
        if !newidle {
            self.update_idle_cpu_scan(this_cpu, sd, &all);
        }
        // SD_ASYM_CPUCAPACITY: a misfit task may go to a bigger CPU first.
        if sd.asym_cpucapacity {
            if let Some(p) = self.balance_misfit(
                this_cpu,
                sd,
                local_span,
                local.group_type(sd.imbalance_pct),
                &all,
            ) {
                // `migrate_misfit`: a misfit moved counts as any move; one
                // that did not (or went by active balance) is no failure.
                let outcome = if p.is_empty() {
                    Outcome::Misfit
                } else {
                    Outcome::Moved
                };
                self.lb_done(this_cpu, level, sd, outcome, newidle);
                out.absorb(&p);
                lb_outcome_stat(stats, outcome, out.n - n0);
                return !p.is_empty();
            }
        }
        // With tasks in groups, a local group with no CPU to spare balances
        // load, not counts (`migrate_load`, below): a grouped task's load
        // (`task_h_load`) is its group's share split among the group's
        // tasks on that CPU, so counts no longer stand for loads (1 task of
        // one group beside 10 of another: 3, 3, 3, 2 tasks is balanced by
        // counts, but the CPU holding the lone task carries 4 times the
        // others' load and shares it). A local group with an idle CPU evens
        // the counts as Linux's `migrate_task` does; without groups every
        // pass keeps the count rules.
        let by_load = self.cfg.groups.any_grouped() && local.idle == 0 && local.nr >= local.w;
        // `LBF_ALL_PINNED`: when every task of the source may run only
        // elsewhere, try again without that CPU, until no CPU outside the
        // local group is left (`out_all_pinned`: balanced).
        // A level found balanced after such a retry backs off as one whose
        // tasks were all pinned (`LBF_ALL_PINNED` stays set in `env.flags`).
        let mut cpus = all;
        let mut all_pinned = false;
        // Whether a pull left an imbalance for CPU affinity
        // (`LBF_SOME_PINNED && env.imbalance > 0`): the parent level's
        // group is marked imbalanced.
        let mut sgc_imbalance = false;
        let mut src;
        let outcome = loop {
            src = Source::default();
            let outcome = self.pull_busiest(
                this_cpu,
                level,
                sd,
                &local,
                by_load,
                newidle,
                stats,
                &cpus,
                out,
                &mut src,
                &mut sgc_imbalance,
            );
            if outcome == Outcome::Balanced && all_pinned {
                break Outcome::AllPinned;
            }
            if outcome != Outcome::AllPinned {
                break outcome;
            }
            all_pinned = true;
            if let Some(c) = src.cpu {
                cpus.remove(c);
            }
            if cpus.and_not(&local_span).is_empty() {
                break Outcome::AllPinned;
            }
        };
        let outcome = match (outcome, src.cpu) {
            (Outcome::Failed, Some(src_cpu)) => {
                self.active_balance(this_cpu, level, sd, newidle, src_cpu, &src, out)
            }
            (o, _) => o,
        };
        self.lb_done(this_cpu, level, sd, outcome, newidle);
        lb_outcome_stat(stats, outcome, out.n - n0);
        self.group_imbalance_done(this_cpu, level, sd, outcome, sgc_imbalance);
        out.n != n0
    }

    /// The end of `sched_balance_rq` after a pass that found an imbalance
    /// and a source CPU `src_cpu` but moved nothing: `need_active_balance`
    /// and the CPU stopper's push of the source's running task
    /// (`active_load_balance_cpu_stop`). The pass's failure is counted
    /// first (a periodic pass adds one to `nr_balance_failed`, in
    /// [`Self::lb_done`], before Linux asks `need_active_balance`), so the
    /// test reads the count as it will be. When the push is wanted and the
    /// running task may run on `this_cpu`, the source is asked to switch
    /// and its switch hands the task here (the same path as the misfit's
    /// active balance, [`super::capacity`]); the outcome stays
    /// [`Outcome::Failed`] ("we were unbalanced": `min_interval`). When it
    /// may not, `out_one_pinned`: [`Outcome::OnePinned`] (the failure
    /// kept, the interval backed off).
    #[allow(clippy::too_many_arguments)]
    fn active_balance(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        newidle: bool,
        src_cpu: CpuId,
        src: &Source,
        out: &mut Pulled,
    ) -> Outcome {
        let failed = self.slots[this_cpu.index()].lb[level]
            .nr_balance_failed
            .load(Ordering::Relaxed)
            .saturating_add(u32::from(!newidle));
        if !need_active_balance(sd, src.migrate_task, failed) {
            return Outcome::Failed;
        }
        let (pushed, kick) = {
            let mut rq = self.cpu_rq(src_cpu);
            // "Don't kick the active_load_balance_cpu_stop, if the curr
            // task on busiest CPU can't be moved to this_cpu" (the idle
            // task cannot either).
            let Some(t) = rq.curr().and_then(|c| rq.task(c)) else {
                return Outcome::OnePinned {
                    all_pinned: src.all_pinned,
                };
            };
            if !self.allowed(t, this_cpu) {
                return Outcome::OnePinned {
                    all_pinned: src.all_pinned,
                };
            }
            // One push at a time per source (`busiest->active_balance`:
            // the first balancer's destination stands). A running task of
            // another class: Linux's stopper would look for a queued fair
            // task, and the pass just found none it could take; nothing
            // to push.
            if t.class() != SchedClass::Fair || rq.active_push_pending() {
                (false, Resched::None)
            } else {
                rq.set_active_push(this_cpu);
                (true, rq.resched_curr(Resched::Now))
            }
        };
        if pushed {
            if out.n == 0 && !out.active {
                out.from = src_cpu;
            }
            out.touched.add(src_cpu);
            out.active = true;
            self.kick_if_needed(src_cpu, this_cpu, kick);
        }
        Outcome::Failed
    }

    /// After an active balance's push took the running task of `src` off
    /// at its switch, for the lowest domain of `asked` (the CPU that asked
    /// for it) that spans `src` (`active_load_balance_cpu_stop`): counts
    /// `alb_count`, and `alb_pushed` when the task `landed` on `asked`
    /// ("Active balancing done, reset the failure counter"), else
    /// `alb_failed`; counted only while [`Platform::schedstat_enabled`]
    /// says so (Linux's `schedstat_inc()`s), the reset whatever it says.
    pub(super) fn active_push_done(&self, asked: CpuId, src: CpuId, landed: bool) {
        if let Some(level) = self.lowest_level_spanning(asked, src) {
            let st = &self.slots[asked.index()].lb[level];
            if self.platform.schedstat_enabled() {
                st.stats.count_alb(landed);
            }
            if landed {
                st.nr_balance_failed.store(0, Ordering::Relaxed);
            }
        }
    }

    /// The `imbalance` flag of the group one level up that `this_cpu`'s
    /// domain `level` forms (`sd_parent->groups->sgc->imbalance`), after a
    /// pass at that level (`sched_balance_rq`): set when a pull left an
    /// imbalance because tasks could not run on the destination
    /// (`LBF_SOME_PINNED` with `env.imbalance > 0`, `set`); cleared when
    /// the level was found balanced with no source all pinned
    /// (`out_balanced` without `LBF_ALL_PINNED`: "clear the imbalance flag
    /// only if other tasks got a chance to move and fix the imbalance");
    /// kept otherwise (`out_all_pinned`: "let the imbalance flag set so
    /// parent level can try to migrate them"). No parent: nothing.
    fn group_imbalance_done(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        outcome: Outcome,
        set: bool,
    ) {
        if level + 1 >= self.slots[this_cpu.index()].doms.as_slice().len() {
            return;
        }
        let Some(flag) = sd
            .span
            .first_cpu()
            .and_then(|first| self.sgc_imbalance(first, sd.level))
        else {
            return;
        };
        if set {
            flag.store(true, Ordering::Relaxed);
        } else if outcome == Outcome::Balanced && flag.load(Ordering::Relaxed) {
            flag.store(false, Ordering::Relaxed);
        }
    }

    /// The `sgc->imbalance` flag of the group formed by the span of
    /// `first`'s domain at `level`, kept in `first`'s state for that
    /// domain (Linux's `sched_group_capacity` is shared by the group's
    /// CPUs and found through the first of them).
    fn sgc_imbalance(&self, first: CpuId, level: DomainLevel) -> Option<&AtomicBool> {
        let slot = &self.slots[first.index()];
        let i = slot.doms.as_slice().iter().position(|d| d.level == level)?;
        Some(&slot.lb[i].group_imbalance)
    }

    /// `sg_imbalanced` for group `g` of domain `sd`: its flag, set by a
    /// pass inside it that affinity kept from evening it out. Groups of
    /// single CPUs have no domain inside, and no flag.
    fn sg_imbalanced(&self, sd: &SchedDomain, g: &CpuMask) -> bool {
        let (Some(child), Some(first)) = (sd.child, g.first_cpu()) else {
            return false;
        };
        self.sgc_imbalance(first, child)
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }

    /// `find_busiest_group`, `calculate_imbalance`, `find_busiest_queue`
    /// and the pull, over the CPUs of `cpus`, for the local group `local`.
    /// The source CPU and what the pass knew of it go to `src_out`; a pull
    /// that left an imbalance for affinity sets `sgc_imbalance`.
    #[allow(clippy::too_many_arguments)]
    fn pull_busiest(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        local: &SgStats,
        by_load: bool,
        newidle: bool,
        stats: Option<PassStats<'_>>,
        cpus: &CpuMask,
        out: &mut Pulled,
        src_out: &mut Source,
        sgc_imbalance: &mut bool,
    ) -> Outcome {
        let local_span = local.span;
        let mut busiest: Option<SgStats> = None;
        // The busiest's rank (`group_type` as far as it matters here): 2
        // for a group running more tasks than CPUs (`group_overloaded`, by
        // counts), 1 for a group marked imbalanced (`group_imbalanced`), 0
        // otherwise. A higher rank is busier (`update_sd_pick_busiest`).
        let mut busiest_rank = 0;
        for g in sd.groups(&self.topology) {
            if g == local_span {
                continue;
            }
            let st = self.sg_stats(g, cpus);
            let rank = if st.nr > st.w {
                2
            } else if st.nr > 0 && self.sg_imbalanced(sd, &g) {
                1
            } else {
                0
            };
            // By load: only an overloaded group (more tasks than CPUs) can
            // give, and the one of most load per capacity is busiest
            // (`update_sd_pick_busiest` among `group_overloaded` groups).
            // Ties go to the later group (as the flat balancer's max_by_key).
            // Among imbalanced groups the first stays ("we don't have any
            // way to choose one more than another").
            let more = match busiest {
                None => !by_load || rank > 0,
                Some(_) if rank != busiest_rank => rank > busiest_rank,
                Some(_) if rank == 1 => false,
                Some(b) if by_load => st.avg_load() >= b.avg_load(),
                Some(b) => !busier(&b, &st),
            };
            if more {
                busiest = Some(st);
                busiest_rank = rank;
            }
        }
        let Some(busiest) = busiest else {
            lb_stat(stats, LbEvent::NoBusyGroup);
            return Outcome::Balanced;
        };
        let migrate = if busiest_rank == 1 {
            // "In the group_imb case we cannot rely on group-wide averages
            // to ensure CPU-load equilibrium, try to move any task to fix
            // the imbalance" (`calculate_imbalance`, after
            // `find_busiest_group` went straight to `force_balance`).
            Migrate::Tasks(1)
        } else if by_load {
            let domain = self.sg_stats(sd.span, cpus);
            Migrate::Load(load_imbalance(sd, local, &busiest, &domain))
        } else {
            Migrate::Tasks(calculate_imbalance(sd, local, &busiest))
        };
        if migrate.is_none() {
            // Linux's `sched_balance_find_src_group` returns no group
            // when it finds the domain balanced.
            lb_stat(stats, LbEvent::NoBusyGroup);
            return Outcome::Balanced;
        }
        let span = busiest.span.and(cpus);
        let migrate_task = matches!(migrate, Migrate::Tasks(_));
        let src = if migrate_task {
            self.find_busiest_queue(&span, sd, this_cpu)
        } else {
            self.find_busiest_queue_by_load(&span)
        };
        let Some(src_cpu) = src else {
            // No source (`sched_balance_find_src_rq` returns NULL:
            // `out_balanced`): by counts, every CPU of the busiest group
            // is empty, or in a domain of unequal CPUs runs a lone task on
            // a CPU this one does not exceed; by load, a lone task heavier
            // than the imbalance is passed over.
            lb_stat(stats, LbEvent::NoBusyQueue);
            return Outcome::Balanced;
        };
        // `update_lb_imbalance_stat`.
        let ev = match migrate {
            Migrate::Tasks(n) => LbEvent::ImbalanceTasks(n),
            Migrate::Load(l) => LbEvent::ImbalanceLoad(l),
        };
        lb_stat(stats, ev);
        *src_out = Source {
            cpu: Some(src_cpu),
            migrate_task,
            all_pinned: true,
        };
        if self.nr(src_cpu) < 2 {
            // `migrate_task` picks a CPU running a lone task as any other
            // ("if sched_balance_find_src_group has found an imbalance but
            // busiest->nr_running <= 1, the group is still unbalanced"):
            // nothing is detached, `LBF_ALL_PINNED` stays set, and the
            // pass fails, for the active balance to push that task.
            return Outcome::Failed;
        }
        src_out.all_pinned = false;
        self.pull(
            this_cpu,
            src_cpu,
            level,
            sd,
            migrate,
            newidle,
            cpus,
            out,
            sgc_imbalance,
        )
    }

    /// `nr_balance_failed` and `balance_interval` after a pass at
    /// `this_cpu`'s domain `level`, by `sched_balance_rq`'s rules.
    /// `nr_balance_failed`: reset when tasks moved or the level was found
    /// balanced (`out_balanced`, `out_all_pinned`); one more after a
    /// periodic pass that found an imbalance and moved nothing; left as it
    /// is by a newidle pass that moved nothing (frequent, it must not make
    /// cache-hot tasks move or heavy ones count lighter) and by a misfit
    /// pass; one more and kept after a periodic pass whose active balance
    /// the source's running task refused for its affinity
    /// (`out_one_pinned`). `balance_interval`: back to `min_interval` after any pass,
    /// newidle ones included, that found an imbalance and a source CPU,
    /// whether it moved tasks or not ("we were unbalanced, so reset the
    /// balancing interval"); doubled by a periodic pass that found the level
    /// balanced, while under `max_interval`, or under
    /// [`MAX_PINNED_INTERVAL_MS`] when every task was pinned elsewhere
    /// ("tune up the balancing interval"), and so by a periodic
    /// `out_one_pinned`; left by a newidle pass that found it balanced or
    /// met a pinned running task (newidle passes ignore the intervals).
    fn lb_done(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        outcome: Outcome,
        newidle: bool,
    ) {
        let st = &self.slots[this_cpu.index()].lb[level];
        let failed = &st.nr_balance_failed;
        match outcome {
            Outcome::Moved | Outcome::Balanced | Outcome::AllPinned => {
                failed.store(0, Ordering::Relaxed)
            }
            Outcome::Failed | Outcome::OnePinned { .. } if !newidle => {
                failed.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed | Outcome::OnePinned { .. } | Outcome::Misfit => {}
        }
        let iv = &st.interval_ms;
        match outcome {
            Outcome::Moved | Outcome::Failed | Outcome::Misfit => {
                iv.store(sd.min_interval_ms, Ordering::Relaxed)
            }
            Outcome::Balanced | Outcome::AllPinned | Outcome::OnePinned { .. } if !newidle => {
                let ms = iv.load(Ordering::Relaxed);
                let pinned = matches!(
                    outcome,
                    Outcome::AllPinned | Outcome::OnePinned { all_pinned: true }
                );
                if (pinned && ms < MAX_PINNED_INTERVAL_MS) || ms < sd.max_interval_ms {
                    iv.store(ms.saturating_mul(2), Ordering::Relaxed);
                }
            }
            Outcome::Balanced | Outcome::AllPinned | Outcome::OnePinned { .. } => {}
        }
    }

    /// `find_busiest_queue` for `migrate_task`: the CPU of `span` with the
    /// most runnable tasks (then PELT load, `cpu_load()`), if it has any;
    /// ties go to the later CPU. A CPU running a lone task counts (the
    /// active balance may push it), but in a domain of unequal CPUs
    /// (`SD_ASYM_CPUCAPACITY`) not one that `this_cpu` does not exceed in
    /// capacity ("don't pick a CPU that could eventually lead to
    /// active_balancing high->low capacity").
    fn find_busiest_queue(
        &self,
        span: &CpuMask,
        sd: &SchedDomain,
        this_cpu: CpuId,
    ) -> Option<CpuId> {
        let dst_cap = self.topology.capacity_of(this_cpu) as u64;
        // A lone task on a CPU this one does not exceed: no source.
        let lone_kept = |c: CpuId| {
            sd.asym_cpucapacity
                && !super::capacity::capacity_greater(dst_cap, self.topology.capacity_of(c) as u64)
        };
        span.cpus()
            .map(|c| (c, (self.nr(c), self.load_avg(c))))
            .filter(|&(c, (nr, _))| nr >= 2 || (nr == 1 && !lone_kept(c)))
            .max_by_key(|&(_, key)| key)
            .map(|(c, _)| c)
    }

    /// `find_busiest_queue` for `migrate_load`: the CPU of `span` with the
    /// most PELT load (`cpu_load()`) among those with two or more runnable
    /// tasks (a lone running task cannot be pulled); ties go to the later
    /// CPU.
    fn find_busiest_queue_by_load(&self, span: &CpuMask) -> Option<CpuId> {
        span.cpus()
            .filter(|&c| self.nr(c) >= 2)
            .max_by_key(|&c| self.load_avg(c))
    }

    /// Detaches movable tasks from `src_cpu`, up to the imbalance
    /// `migrate` (a count, or a load that the moved tasks' `task_h_load`
    /// may not exceed), and attaches them to `this_cpu` (`detach_tasks` +
    /// `attach_tasks`, both runqueues locked; nothing is allocated), adding
    /// them to `out`. A newly idle pass (`newidle`) takes one task at most,
    /// as Linux's preemptible kernels do (see the module doc).
    ///
    /// `LBF_DST_PINNED`: on a periodic pass, when a task could not come for
    /// its affinity but may run on another CPU of the local group (of
    /// `cpus`), and the imbalance is not covered, the pull goes on from the
    /// same source to that CPU (`more_balance` with `env.new_dst_cpu`),
    /// each destination tried once. A pull that ends short of the
    /// imbalance with a task kept back for its affinity
    /// (`LBF_SOME_PINNED`) sets `sgc_imbalance`.
    #[allow(clippy::too_many_arguments)]
    fn pull(
        &self,
        this_cpu: CpuId,
        src_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        migrate: Migrate,
        newidle: bool,
        cpus: &CpuMask,
        out: &mut Pulled,
        sgc_imbalance: &mut bool,
    ) -> Outcome {
        let failed = self.slots[this_cpu.index()].lb[level]
            .nr_balance_failed
            .load(Ordering::Relaxed);
        let mut env = DetachEnv {
            sd,
            // `can_migrate_task`: hot tasks go once the level's periodic
            // passes failed more than `cache_nice_tries` times in a row.
            allow_hot: failed > sd.cache_nice_tries,
            hot_ns: self.cfg.tunables.migration_cost_ns() * sd.hot_scale as u64,
            failed,
            newidle,
            // `env.cpus` less each destination tried (`dst_grpmask` is the
            // local group).
            dst_grp: sd.group_of(&self.topology, this_cpu).and(cpus),
            tasks_left: match migrate {
                Migrate::Tasks(n) => n,
                Migrate::Load(_) => u32::MAX,
            },
            load_left: match migrate {
                Migrate::Tasks(_) => None,
                Migrate::Load(l) => Some(l),
            },
            any_allowed: false,
            some_pinned: false,
            new_dst: None,
        };
        let n0 = out.n;
        let mut dst = this_cpu;
        loop {
            env.new_dst = None;
            self.detach_tasks(this_cpu, dst, src_cpu, &mut env, out);
            let left = env.tasks_left > 0 && env.load_left != Some(0);
            match env.new_dst {
                Some(next) if left && out.n < MAX_PULL => {
                    env.dst_grp.remove(dst);
                    dst = next;
                }
                _ => break,
            }
        }
        if env.some_pinned && env.tasks_left > 0 && env.load_left != Some(0) {
            // "We failed to reach balance because of affinity."
            *sgc_imbalance = true;
        }
        if out.n != n0 {
            Outcome::Moved
        } else if env.any_allowed {
            // Cache-hot, too heavy for the load imbalance, running, or
            // none queued: a failed pass.
            Outcome::Failed
        } else {
            Outcome::AllPinned
        }
    }

    /// One round of [`Self::pull`] (`detach_tasks` and `attach_tasks`)
    /// from `src_cpu` to `dst` (`this_cpu`, or with `LBF_DST_PINNED` another
    /// CPU of its group): the imbalance left and the flags in `env`.
    fn detach_tasks(
        &self,
        this_cpu: CpuId,
        dst: CpuId,
        src_cpu: CpuId,
        env: &mut DetachEnv<'_>,
        out: &mut Pulled,
    ) {
        let sd = env.sd;
        let mut kick = false;
        let n0 = out.n;
        {
            let mut locked = self.double_rq_lock(dst, src_cpu);
            let (dst_rq, src) = locked.pair();
            let now = self.platform.now_ns();
            dst_rq.update_rq_clock(now);
            src.update_rq_clock(now);
            // Single-CPU groups: recount under the locks, as the flat
            // balancer did (no other destination exists there).
            if env.load_left.is_none() && sd.child.is_none() {
                env.tasks_left =
                    (src.nr_runnable().saturating_sub(dst_rq.nr_runnable()) / 2).max(1);
            }
            let limit = (self.cfg.tunables.nr_migrate() as usize)
                .min(env.tasks_left as usize)
                .min(MAX_PULL - out.n);
            // Candidates: queued, not running, runnable fair tasks allowed
            // here and cache-cold for this level (unless earlier passes
            // failed on hot ones), least urgent (latest deadline) first.
            let mut cands = [TaskId(0); MAX_PULL];
            let mut nc = 0;
            // migrate_load: the load already taken from each runqueue of the
            // source by the candidates before (`detach_tasks` detaches as it
            // goes: a runqueue's `load_avg` drops by each task detached while
            // its `h_load` stays the jiffy's, so later tasks count heavier;
            // ours detaches after choosing, and counts that here).
            let mut removed = [(0u32, 0u64); MAX_PULL];
            let mut nr_removed = 0;
            for id in src.fair_queue_rev() {
                if nc >= limit {
                    break;
                }
                let Some(t) = src.task(id) else { continue };
                if t.class() != SchedClass::Fair {
                    continue;
                }
                if !self.allowed(t, dst) {
                    self.dst_pinned(t, env);
                    continue;
                }
                // Linux clears `LBF_ALL_PINNED` on the first task allowed
                // here, running or not.
                env.any_allowed = true;
                if t.state != TaskState::Queued {
                    continue;
                }
                let hot = sd.hot_scale > 0
                    && (src.task_hot(id)
                        || src.clock().saturating_sub(t.se.exec_start) < env.hot_ns);
                if hot && !env.allow_hot {
                    continue;
                }
                // migrate_load: a task whose load would overshoot the
                // imbalance stays (`detach_tasks`' `migrate_load` case), less
                // strictly after failed passes (its load is halved for each);
                // the pull ends once the imbalance is covered.
                if let Some(left) = env.load_left.as_mut() {
                    let Some(parts) = src.task_h_load_parts(id) else {
                        continue;
                    };
                    let k = removed[..nr_removed]
                        .iter()
                        .position(|&(q, _)| q == parts.cfs_rq);
                    let h = parts.h_load(k.map_or(0, |k| removed[k].1));
                    if h >> env.failed.min(63) > *left {
                        continue;
                    }
                    *left = left.saturating_sub(h);
                    match k {
                        Some(k) => removed[k].1 += parts.load,
                        None => {
                            removed[nr_removed] = (parts.cfs_rq, parts.load);
                            nr_removed += 1;
                        }
                    }
                }
                cands[nc] = id;
                nc += 1;
                // `detach_tasks` under CONFIG_PREEMPTION: "NEWIDLE balancing
                // is a source of latency, so preemptible kernels will stop
                // after the first task is detached to minimize the critical
                // section" (after the task is counted against the
                // imbalance, before the imbalance test). Our kernel is
                // always built preemptible (its model is chosen at run
                // time, as PREEMPT_DYNAMIC's), so the rule always applies,
                // as on Debian's amd64 Linux.
                if env.newidle || env.load_left == Some(0) {
                    break;
                }
            }
            if let Some(t) = src.curr().and_then(|id| src.task(id)) {
                if t.class() == SchedClass::Fair {
                    if self.allowed(t, dst) {
                        env.any_allowed = true;
                    } else {
                        self.dst_pinned(t, env);
                    }
                }
            }
            for &id in &cands[..nc] {
                if let Ok(t) = src.detach_task(id) {
                    let d = dst_rq.attach_task(id, t);
                    kick |= d.resched == Resched::Now;
                    self.placed(id, dst);
                    out.ids[out.n] = id;
                    out.n += 1;
                }
            }
        }
        let moved = (out.n - n0) as u32;
        if moved == 0 {
            return;
        }
        if env.load_left.is_none() {
            env.tasks_left = env.tasks_left.saturating_sub(moved);
        }
        if n0 == 0 {
            out.from = src_cpu;
        }
        out.touched.add(src_cpu);
        if dst != this_cpu {
            // `attach_task`'s `wakeup_preempt` on another CPU's runqueue
            // (the caller's own is rescheduled by its caller).
            out.touched.add(dst);
            if kick {
                self.platform.send_resched_ipi(dst);
            }
        }
        self.recheck_active(dst);
    }

    /// `can_migrate_task` for a task `t` that may not run on the
    /// destination: `LBF_SOME_PINNED`, and on a periodic pass, if no other
    /// destination was found yet this round, the first CPU of the local
    /// group left in `env.dst_grp` that `t` may run on (`LBF_DST_PINNED`,
    /// `env.new_dst_cpu`).
    fn dst_pinned(&self, t: &crate::task::SchedTask, env: &mut DetachEnv<'_>) {
        env.some_pinned = true;
        if env.newidle || env.new_dst.is_some() {
            return;
        }
        env.new_dst = env.dst_grp.cpus().find(|&c| self.allowed(t, c));
    }
}

/// The state of one [`Scheduler::pull`] across its rounds (the part of
/// Linux's `struct lb_env` that `detach_tasks` and `can_migrate_task`
/// use).
struct DetachEnv<'a> {
    sd: &'a SchedDomain,
    allow_hot: bool,
    hot_ns: u64,
    failed: u32,
    newidle: bool,
    /// The local group's CPUs not tried as destination yet, within
    /// `env.cpus` (`dst_grpmask` and `env.cpus`).
    dst_grp: CpuMask,
    /// Tasks still to move (`migrate_task`), `u32::MAX` by load.
    tasks_left: u32,
    /// Load still to move (`migrate_load`).
    load_left: Option<u64>,
    /// A task may run on a destination tried (`LBF_ALL_PINNED` cleared).
    any_allowed: bool,
    /// A task could not come for its affinity (`LBF_SOME_PINNED`).
    some_pinned: bool,
    /// Another destination for this round's pinned tasks (`LBF_DST_PINNED`).
    new_dst: Option<CpuId>,
}

/// What a pass knew of the source CPU it chose, for the active balance
/// that may follow a failed pull (the part of `struct lb_env` that
/// `need_active_balance` and `out_one_pinned` read).
#[derive(Clone, Copy, Debug, Default)]
struct Source {
    /// The source (`env.src_cpu`), once one was chosen.
    cpu: Option<CpuId>,
    /// The imbalance is a number of tasks (`migrate_task`).
    migrate_task: bool,
    /// `LBF_ALL_PINNED` still set: no task of the source was tried that
    /// could run here (the source ran a lone task, not looked at).
    all_pinned: bool,
}

/// The statistics of a balance pass that ended with `outcome`, having
/// moved `gained` tasks (`sched_balance_rq`'s `lb_gained`, `lb_failed`
/// when nothing moved from a source it found, `lb_balanced` at
/// `out_balanced` and `out_all_pinned`), counted where `stats` says
/// ([`lb_stat`]). Forced inline: out of line (as the compiler chose once
/// its callers took [`PassStats`]) a pass with schedstats off cost 5.4
/// host instructions more (`docs/benchmarks.md`).
#[inline(always)]
fn lb_outcome_stat(stats: Option<PassStats<'_>>, outcome: Outcome, gained: usize) {
    let ev = match outcome {
        Outcome::Moved => LbEvent::Gained(gained as u32),
        Outcome::Failed | Outcome::Misfit | Outcome::OnePinned { .. } => LbEvent::Failed,
        Outcome::Balanced | Outcome::AllPinned => LbEvent::Balanced,
    };
    lb_stat(stats, ev);
}

/// `need_active_balance` for a pass that moved nothing at domain `sd`,
/// whose failures in a row are now `failed`: `imbalanced_active_balance`,
/// an imbalance in tasks (`migrate_task`) that `cache_nice_tries + 2`
/// failed periodic passes could not even out. Linux's other cases do not
/// arise here: asymmetric packing (`asym_active_balance`: no domain has
/// `SD_ASYM_PACKING`), a source of reduced capacity (`check_cpu_capacity`:
/// no RT, IRQ or thermal pressure is taken off a CPU's capacity), the
/// misfit ([`super::capacity`]'s own pass) and the cache-aware scheduler's
/// `alb_break_llc` (`CONFIG_SCHED_CACHE`, not modelled).
fn need_active_balance(sd: &SchedDomain, migrate_task: bool, failed: u32) -> bool {
    migrate_task && failed > sd.cache_nice_tries.saturating_add(2)
}

/// How a pass at one domain level ended, for `nr_balance_failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Tasks moved.
    Moved,
    /// Nothing to do: no busier group, no imbalance, no source CPU, or
    /// another CPU of the local group balances this level.
    Balanced,
    /// An imbalance and a source, but nothing moved.
    Failed,
    /// A misfit pass that moved nothing (or went by active balance).
    Misfit,
    /// An active balance was wanted but the source's running task may not
    /// run here (`out_one_pinned`): the failure is counted and kept, and a
    /// periodic pass backs the interval off, up to
    /// [`MAX_PINNED_INTERVAL_MS`] when `all_pinned` (`LBF_ALL_PINNED`
    /// still set: the source's lone task was not looked at), else up to
    /// `max_interval`.
    OnePinned { all_pinned: bool },
    /// Every task of the source may run only elsewhere (`LBF_ALL_PINNED`):
    /// the caller tries another source; as a pass's end, no source was
    /// left (`out_all_pinned`) or none had an imbalance after a retry.
    AllPinned,
}

/// What a pass moves (`env->migration_type`): a number of tasks
/// (`migrate_task`) or an amount of load (`migrate_load`, in `cpu_load()`
/// units, each task counting its `task_h_load`). Zero: balanced.
#[derive(Clone, Copy, Debug)]
enum Migrate {
    Tasks(u32),
    Load(u64),
}

impl Migrate {
    fn is_none(self) -> bool {
        matches!(self, Migrate::Tasks(0) | Migrate::Load(0))
    }
}

/// `calculate_imbalance` for a local group `l` with no spare CPU against the
/// busiest group `b` of domain `sd` whose stats are `d` (`migrate_load`):
/// the load to move so that neither group passes the domain's average load
/// per capacity, `min((b − avg)·cap_b, (avg − l)·cap_l) / 1024`, with
/// `find_busiest_group`'s balanced cases first: the local group already
/// carries as much load per capacity as the busiest or as the domain's
/// average, or, overloaded itself, the busiest is not above it by the
/// level's `imbalance_pct`. Where the busiest is below the domain's average
/// (a heavier group that cannot give, such as one CPU running one heavy
/// task, raises it), Linux's unsigned difference `busiest->avg_load -
/// sds->avg_load` wraps and the minimum takes the local side: the local
/// group is raised to the average. Ours does the same: with one group's
/// lone spinner holding a CPU at twice the others' load (1 task of A
/// beside 10 of B at equal weights), no CPU of B's is ever above the
/// average, and taking the busiest side (nothing) froze B's spinners where
/// they were, one of them alone on a CPU for a whole run.
fn load_imbalance(sd: &SchedDomain, l: &SgStats, b: &SgStats, d: &SgStats) -> u64 {
    let (la, ba, avg) = (l.avg_load(), b.avg_load(), d.avg_load());
    if la >= ba || la >= avg {
        return 0;
    }
    if l.nr > l.w && ba * 100 <= la * sd.imbalance_pct as u64 {
        return 0;
    }
    let scale = crate::pelt::SCHED_CAPACITY_SCALE;
    let local_side = (avg - la) * l.capacity;
    // `min((busiest - avg) * cap_b, ...)` in unsigned long: below the
    // average the busiest side wraps to a huge value.
    let busiest_side = ba
        .checked_sub(avg)
        .map_or(u64::MAX, |x| x.saturating_mul(b.capacity));
    busiest_side.min(local_side) / scale
}

/// Is `a` busier than `b`: more tasks per CPU, then more load per CPU
/// (compared by cross-multiplying, so unequal groups compare fairly)?
fn busier(a: &SgStats, b: &SgStats) -> bool {
    let (aw, bw) = (a.w.max(1) as u64, b.w.max(1) as u64);
    let nr = (a.nr as u64 * bw).cmp(&(b.nr as u64 * aw));
    let load = (a.load as u128 * bw as u128).cmp(&(b.load as u128 * aw as u128));
    nr.then(load).is_gt()
}

/// `calculate_imbalance`: how many tasks the local group `l` should take
/// from the busiest group `b` of domain `sd` (0: balanced).
fn calculate_imbalance(sd: &SchedDomain, l: &SgStats, b: &SgStats) -> u32 {
    let (lw, bw) = (l.w.max(1) as u64, b.w.max(1) as u64);
    let (ln, bn) = (l.nr as u64 * bw, b.nr as u64 * lw);
    if bn <= ln {
        return 0;
    }
    // An overloaded local group pulls only from a clearly busier one.
    if l.nr > l.w && bn * 100 <= ln * sd.imbalance_pct as u64 {
        return 0;
    }
    let imbalance = ((bn - ln) / (lw + bw)) as u32;
    if sd.level == DomainLevel::Numa
        && b.nr <= b.w
        && l.nr < sd.imb_numa_nr // dst_running = nr + 1 <= imb_numa_nr
        && imbalance <= NUMA_IMBALANCE_MIN
    {
        return 0;
    }
    imbalance
}

impl Pulled {
    /// Adds what another level's pass moved (`other`, at most the room
    /// left: the passes are given that bound).
    fn absorb(&mut self, other: &Pulled) {
        let room = MAX_PULL - self.n;
        let n = other.n.min(room);
        self.ids[self.n..self.n + n].copy_from_slice(&other.ids[..n]);
        if n != 0 || other.active {
            if self.n == 0 && !self.active {
                self.from = other.from;
            }
            self.touched.add(other.from);
        }
        self.n += n;
        self.touched = self.touched.or(&other.touched);
        self.active |= other.active;
    }
}
