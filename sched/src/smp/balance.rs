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
//!    tasks (at least two: a lone running task cannot be pulled; Linux would
//!    push it with active balancing, which we do only for a misfit task).
//! 5. Pulling as before: queued, not running, allowed, fair tasks, least
//!    urgent first, at most the imbalance, `kernel.sched_nr_migrate` and
//!    [`MAX_PULL`](super::MAX_PULL). A task counts as cache-hot for the
//!    level's `hot_scale` × `kernel.sched_migration_cost_ns` (0 between SMT
//!    siblings, longer across LLCs and nodes, see [`crate::domain`]) and stays
//!    unless the level's `nr_balance_failed` exceeds `cache_nice_tries`
//!    (`can_migrate_task`, for every kind of pass). When every task of the
//!    chosen CPU may run only elsewhere, the level is tried again without
//!    that CPU (`LBF_ALL_PINNED`), until no CPU outside the local group is
//!    left.
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
//!    `more_balance`, and a newidle pass never sets `LBF_DST_PINNED`.
//!
//! `nr_balance_failed` (per CPU and level) follows Linux's
//! `sched_balance_rq` (formerly `load_balance`): a periodic pass that finds
//! an imbalance and a source CPU but moves nothing (hot, too heavy,
//! running, pinned while another task there is not) adds one; a newly idle
//! pass that moves nothing leaves it, so frequent newidle passes do not
//! make hot tasks move; moving tasks resets it, and so does a pass that
//! finds the level balanced (`out_balanced`: no busier group, no
//! imbalance, another CPU of the local group balances it, or every
//! candidate source pinned, `out_all_pinned`). A misfit pass that moves
//! nothing leaves it too. Besides the cache-hot test, `detach_tasks`
//! halves a task's load for each failure when balancing load.
//!
//! A pass stops at the first level that moved tasks, so [`Pulled`] names one
//! source CPU (Linux's periodic pass climbs on; ours climbs at the next
//! tick: the levels above count in `next_balance`).
//!
//! The periodic balance ([`Scheduler::rebalance_domains`], called at every
//! tick) follows Linux 7.2's `sched_balance_trigger` and
//! `sched_balance_domains`: nothing before the CPU's `next_balance`; then
//! each level whose interval has passed since its `last_balance`, bottom-up,
//! until a level another CPU balances (`should_we_balance`); `next_balance`
//! becomes the earliest time a visited level is due. The interval is
//! `get_sd_balance_interval`: the level's `balance_interval` (ms) in whole
//! ticks, rounded up, which while the CPU is busy is `busy_factor` (16)
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
//! (for tests); its outcome still moves `balance_interval`. Not modelled:
//! `sched_idle_rq` (a CPU running only SCHED_IDLE tasks counts as busy
//! here, as idle in Linux).
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
//! migrate_task, with `detach_tasks` by task load), asymmetric packing, active
//! balancing of running tasks but misfits (Linux's
//! `imbalanced_active_balance` after `cache_nice_tries + 2` failures, so
//! ours counts failures on a CPU whose lone task it will not push),
//! `LBF_DST_PINNED` retries with another destination, NUMA balancing's
//! preferred nodes, the newidle cost cut-off (`max_newidle_lb_cost`).

use core::sync::atomic::Ordering;

use super::placement::{SgStats, NUMA_IMBALANCE_MIN};
use super::{Platform, Pulled, Scheduler, MAX_PULL};
use crate::class::SchedClass;
use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::domain::{DomainLevel, SchedDomain};
use crate::task::{TaskId, TaskState};

/// `MAX_PINNED_INTERVAL`: how far, in ms, a level whose tasks were all
/// pinned elsewhere (`LBF_ALL_PINNED`) may back off, past its `max_interval`.
pub const MAX_PINNED_INTERVAL_MS: u32 = 512;

impl<P: Platform> Scheduler<P> {
    /// Pulls tasks to `this_cpu` from the busiest CPU of the lowest domain
    /// level that is out of balance (`sched_balance_rq` over
    /// `for_each_domain`). With `newidle`, called from a CPU about to go idle
    /// (`sched_balance_newidle`), which tries every level; otherwise a
    /// periodic pass of every level now, whatever its interval (for tests
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
    /// balanced, bottom-up; a level another CPU balances
    /// (`should_we_balance`) ends the climb. `next_balance` becomes the
    /// earliest time a level visited is due again. Time is counted in ticks
    /// (`SchedConfig::tick_ns`, Linux's jiffies): `now_ns / tick_ns`.
    pub fn rebalance_domains(&self, this_cpu: CpuId, now_ns: u64) -> Pulled {
        if !self.rebalance_due(this_cpu, now_ns) {
            return Pulled::none(this_cpu);
        }
        let slot = &self.slots[this_cpu.index()];
        let jiffies = now_ns / self.cfg.tick_ns().max(1);
        // `busy = idle != CPU_IDLE` (the tick's `idle_cpu()`).
        let mut busy = !self.idle(this_cpu);
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
            // A pass stops at the first level that moved tasks ([`Pulled`]
            // names one source): the levels above it are not balanced now,
            // but count in `next_balance`, so the next tick climbs on.
            let moved = !out.is_empty() || out.active_balance();
            if !moved && jiffies >= last.saturating_add(interval) {
                let (pulled, cont) = self.sched_balance_rq(this_cpu, level, sd, false);
                continue_balancing = cont;
                if !pulled.is_empty() {
                    busy = !self.idle(this_cpu);
                }
                st.last_balance_jiffies.store(jiffies, Ordering::Relaxed);
                interval = self.interval_jiffies(this_cpu, level, sd, busy);
                out = pulled;
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

    /// Whether [`Self::rebalance_domains`] would look at the levels now
    /// (`sched_balance_trigger`): `this_cpu` is active and its
    /// `next_balance` has come. Two atomic loads, for a caller that counts
    /// the passes.
    #[inline]
    pub fn rebalance_due(&self, this_cpu: CpuId, now_ns: u64) -> bool {
        let jiffies = now_ns / self.cfg.tick_ns().max(1);
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
        let busy = !self.idle(cpu);
        let sd = &self.slots[cpu.index()].doms.as_slice()[level];
        self.interval_jiffies(cpu, level, sd, busy) * self.cfg.tick_ns().max(1)
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
            * self.cfg.tick_ns().max(1)
    }

    /// Ticks per second (`HZ`).
    fn hz(&self) -> u64 {
        (1_000_000_000 / self.cfg.tick_ns().max(1)).max(1)
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
        let mut jiffies = (ms * 1_000_000).div_ceil(self.cfg.tick_ns().max(1));
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
            next_balance = self.platform.now_ns() / self.cfg.tick_ns().max(1) + self.hz();
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
        for (level, sd) in doms.iter().enumerate() {
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
            let (pulled, continue_balancing) = self.sched_balance_rq(this_cpu, level, sd, newidle);
            if newidle {
                let success = if pulled.is_empty() { 0 } else { weight };
                self.newidle_balanced(this_cpu, level, success);
            }
            if !pulled.is_empty() || pulled.active_balance() || !continue_balancing {
                return pulled;
            }
        }
        Pulled::none(this_cpu)
    }

    /// One level's pass (`sched_balance_rq`): `should_we_balance` on a
    /// periodic pass, then [`Self::balance_domain`]. The flag is
    /// `continue_balancing`: false when another CPU balances this level.
    fn sched_balance_rq(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        newidle: bool,
    ) -> (Pulled, bool) {
        if !newidle && !self.should_we_balance(sd, this_cpu) {
            // Another CPU balances this level: for this one it is
            // balanced (`should_we_balance` goes to `out_balanced`).
            self.lb_done(this_cpu, level, sd, Outcome::Balanced, newidle);
            return (Pulled::none(this_cpu), false);
        }
        (self.balance_domain(this_cpu, level, sd, newidle), true)
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
    /// `find_busiest_queue`, then the pull.
    fn balance_domain(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        newidle: bool,
    ) -> Pulled {
        let mut pulled = Pulled::none(this_cpu);
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
                return p;
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
        let outcome = loop {
            let outcome = self.pull_busiest(
                this_cpu,
                level,
                sd,
                &local,
                by_load,
                newidle,
                &cpus,
                &mut pulled,
            );
            if outcome == Outcome::Balanced && all_pinned {
                break Outcome::AllPinned;
            }
            if outcome != Outcome::AllPinned {
                break outcome;
            }
            all_pinned = true;
            cpus.remove(pulled.from);
            if cpus.and_not(&local_span).is_empty() {
                break Outcome::AllPinned;
            }
        };
        self.lb_done(this_cpu, level, sd, outcome, newidle);
        pulled
    }

    /// `find_busiest_group`, `calculate_imbalance`, `find_busiest_queue`
    /// and the pull, over the CPUs of `cpus`, for the local group `local`.
    #[allow(clippy::too_many_arguments)]
    fn pull_busiest(
        &self,
        this_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        local: &SgStats,
        by_load: bool,
        newidle: bool,
        cpus: &CpuMask,
        pulled: &mut Pulled,
    ) -> Outcome {
        let local_span = local.span;
        let mut busiest: Option<SgStats> = None;
        for g in sd.groups(&self.topology) {
            if g == local_span {
                continue;
            }
            let st = self.sg_stats(g, cpus);
            // By load: only an overloaded group (more tasks than CPUs) can
            // give, and the one of most load per capacity is busiest
            // (`update_sd_pick_busiest` among `group_overloaded` groups).
            // Ties go to the later group (as the flat balancer's max_by_key).
            let more = if by_load {
                st.nr > st.w && busiest.is_none_or(|b| st.avg_load() >= b.avg_load())
            } else {
                busiest.is_none_or(|b| !busier(&b, &st))
            };
            if more {
                busiest = Some(st);
            }
        }
        let Some(busiest) = busiest else {
            return Outcome::Balanced;
        };
        let migrate = if by_load {
            let domain = self.sg_stats(sd.span, cpus);
            Migrate::Load(load_imbalance(sd, local, &busiest, &domain))
        } else {
            Migrate::Tasks(calculate_imbalance(sd, local, &busiest))
        };
        if migrate.is_none() {
            return Outcome::Balanced;
        }
        let span = busiest.span.and(cpus);
        let src = if by_load {
            self.find_busiest_queue_by_load(&span)
        } else {
            self.find_busiest_queue(&span)
        };
        let Some(src_cpu) = src else {
            // By counts, the busiest group holds more tasks per CPU than
            // ours but no CPU of it runs two: Linux's `migrate_task` picks
            // one running a lone task anyway and fails to detach it (the
            // active balance that would follow is left out). By load, a
            // lone task heavier than the imbalance is passed over, and with
            // no other source the pass ends balanced.
            return if by_load {
                Outcome::Balanced
            } else {
                Outcome::Failed
            };
        };
        pulled.from = src_cpu;
        self.pull(this_cpu, src_cpu, level, sd, migrate, newidle, pulled)
    }

    /// `nr_balance_failed` and `balance_interval` after a pass at
    /// `this_cpu`'s domain `level`, by `sched_balance_rq`'s rules.
    /// `nr_balance_failed`: reset when tasks moved or the level was found
    /// balanced (`out_balanced`, `out_all_pinned`); one more after a
    /// periodic pass that found an imbalance and moved nothing; left as it
    /// is by a newidle pass that moved nothing (frequent, it must not make
    /// cache-hot tasks move or heavy ones count lighter) and by a misfit
    /// pass. `balance_interval`: back to `min_interval` after any pass,
    /// newidle ones included, that found an imbalance and a source CPU,
    /// whether it moved tasks or not ("we were unbalanced, so reset the
    /// balancing interval"); doubled by a periodic pass that found the level
    /// balanced, while under `max_interval`, or under
    /// [`MAX_PINNED_INTERVAL_MS`] when every task was pinned elsewhere
    /// ("tune up the balancing interval"); left by a newidle pass that found
    /// it balanced (newidle passes ignore the intervals).
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
            Outcome::Failed if !newidle => {
                failed.fetch_add(1, Ordering::Relaxed);
            }
            Outcome::Failed | Outcome::Misfit => {}
        }
        let iv = &st.interval_ms;
        match outcome {
            Outcome::Moved | Outcome::Failed | Outcome::Misfit => {
                iv.store(sd.min_interval_ms, Ordering::Relaxed)
            }
            Outcome::Balanced | Outcome::AllPinned if !newidle => {
                let ms = iv.load(Ordering::Relaxed);
                let pinned = outcome == Outcome::AllPinned;
                if (pinned && ms < MAX_PINNED_INTERVAL_MS) || ms < sd.max_interval_ms {
                    iv.store(ms.saturating_mul(2), Ordering::Relaxed);
                }
            }
            Outcome::Balanced | Outcome::AllPinned => {}
        }
    }

    /// `find_busiest_queue`: the CPU of `span` with the most runnable tasks
    /// (then PELT load, `cpu_load()`), if it has two or more; ties go to
    /// the later CPU.
    fn find_busiest_queue(&self, span: &CpuMask) -> Option<CpuId> {
        span.cpus()
            .map(|c| (c, (self.nr(c), self.load_avg(c))))
            .filter(|&(_, (nr, _))| nr >= 2)
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
    /// `attach_tasks`, both runqueues locked; nothing is allocated). A
    /// newly idle pass (`newidle`) takes one task at most, as Linux's
    /// preemptible kernels do (see the module doc).
    #[allow(clippy::too_many_arguments)]
    fn pull(
        &self,
        this_cpu: CpuId,
        src_cpu: CpuId,
        level: usize,
        sd: &SchedDomain,
        migrate: Migrate,
        newidle: bool,
        pulled: &mut Pulled,
    ) -> Outcome {
        let failed = self.slots[this_cpu.index()].lb[level]
            .nr_balance_failed
            .load(Ordering::Relaxed);
        // `can_migrate_task`: hot tasks go once the level's periodic passes
        // failed more than `cache_nice_tries` times in a row.
        let allow_hot = failed > sd.cache_nice_tries;
        let hot_ns = self.cfg.tunables.migration_cost_ns() * sd.hot_scale as u64;
        let mut locked = self.double_rq_lock(this_cpu, src_cpu);
        let (this_rq, src) = locked.pair();
        let now = self.platform.now_ns();
        this_rq.update_rq_clock(now);
        src.update_rq_clock(now);
        // Single-CPU groups: recount under the locks, as the flat balancer did.
        let (imbalance, mut load_left) = match migrate {
            Migrate::Tasks(_) if sd.child.is_none() => (
                (src.nr_runnable().saturating_sub(this_rq.nr_runnable()) / 2).max(1),
                None,
            ),
            Migrate::Tasks(n) => (n, None),
            Migrate::Load(l) => (u32::MAX, Some(l)),
        };
        let limit = (self.cfg.tunables.nr_migrate() as usize)
            .min(imbalance as usize)
            .min(MAX_PULL);
        // Candidates: queued, not running, runnable fair tasks allowed here
        // and cache-cold for this level (unless earlier passes failed on hot
        // ones), least urgent (latest deadline) first.
        let mut cands = [TaskId(0); MAX_PULL];
        let mut nc = 0;
        // migrate_load: the load already taken from each runqueue of the
        // source by the candidates before (`detach_tasks` detaches as it
        // goes: a runqueue's `load_avg` drops by each task detached while
        // its `h_load` stays the jiffy's, so later tasks count heavier;
        // ours detaches after choosing, and counts that here).
        let mut removed = [(0u32, 0u64); MAX_PULL];
        let mut nr_removed = 0;
        // Whether any fair task there may run here (Linux clears
        // `LBF_ALL_PINNED` on the first such task, running or not).
        let mut any_allowed = false;
        for id in src.fair_queue_rev() {
            if nc >= limit {
                break;
            }
            let Some(t) = src.task(id) else { continue };
            if t.class() != SchedClass::Fair || !self.allowed(t, this_cpu) {
                continue;
            }
            any_allowed = true;
            if t.state != TaskState::Queued {
                continue;
            }
            let hot = sd.hot_scale > 0
                && (src.task_hot(id) || src.clock().saturating_sub(t.se.exec_start) < hot_ns);
            if hot && !allow_hot {
                continue;
            }
            // migrate_load: a task whose load would overshoot the
            // imbalance stays (`detach_tasks`' `migrate_load` case), less
            // strictly after failed passes (its load is halved for each);
            // the pull ends once the imbalance is covered.
            if let Some(left) = load_left.as_mut() {
                let Some(parts) = src.task_h_load_parts(id) else {
                    continue;
                };
                let k = removed[..nr_removed]
                    .iter()
                    .position(|&(q, _)| q == parts.cfs_rq);
                let h = parts.h_load(k.map_or(0, |k| removed[k].1));
                if h >> failed.min(63) > *left {
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
            // `detach_tasks` under CONFIG_PREEMPTION: "NEWIDLE balancing is
            // a source of latency, so preemptible kernels will stop after
            // the first task is detached to minimize the critical section"
            // (after the task is counted against the imbalance, before the
            // imbalance test). Our kernel is always built preemptible (its
            // model is chosen at run time, as PREEMPT_DYNAMIC's), so the
            // rule always applies, as on Debian's amd64 Linux.
            if newidle || load_left == Some(0) {
                break;
            }
        }
        if !any_allowed {
            any_allowed = src
                .curr()
                .and_then(|id| src.task(id))
                .is_some_and(|t| t.class() == SchedClass::Fair && self.allowed(t, this_cpu));
        }
        for &id in &cands[..nc] {
            if let Ok(t) = src.detach_task(id) {
                this_rq.attach_task(id, t);
                self.placed(id, this_cpu);
                pulled.ids[pulled.n] = id;
                pulled.n += 1;
            }
        }
        drop(locked);
        if pulled.n != 0 {
            self.recheck_active(this_cpu);
            Outcome::Moved
        } else if any_allowed {
            // Cache-hot, too heavy for the load imbalance, running, or
            // none queued: a failed pass.
            Outcome::Failed
        } else {
            Outcome::AllPinned
        }
    }
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
