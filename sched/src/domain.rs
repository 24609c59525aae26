//! Scheduling domains: each CPU's nested spans of CPUs, from its SMT core up
//! to the whole machine, with the balancing parameters of each level.
//!
//! Linux builds, for every CPU, a chain of `struct sched_domain` bottom-up
//! from its topology levels (kernel/sched/topology.c: `sd_init`,
//! `build_sched_domain`, `sd_parent_degenerate`): SMT (hardware threads of a
//! core), MC (the CPUs sharing a last-level cache), PKG (the package or node),
//! then NUMA levels. A domain's *groups* are its child's spans: the groups of
//! MC are cores, the groups of PKG are LLCs, the groups of NUMA are nodes, and
//! the groups of the lowest level are single CPUs. Placement
//! ([`crate::smp::Scheduler::select_task_rq`]) and load balancing
//! ([`crate::smp::Scheduler::load_balance`]) walk this chain.
//!
//! # What we build
//! From a [`Topology`], for each CPU, the levels SMT → MC → PKG → NUMA with
//! the spans `smt_mask` → `llc_mask` → `node_mask` → all CPUs. A level whose
//! span is a single CPU, or equal to the level below, is dropped (Linux's
//! degenerate domains). So [`Topology::flat`] has one level, MC over all CPUs
//! with single-CPU groups: the flat behaviour of old; a 2-socket machine with
//! one LLC per socket has SMT, MC (the socket) and NUMA (both); a one-node
//! machine with several LLCs has SMT, MC and PKG. Linux's multi-hop NUMA
//! levels (from node distances) are not modelled: all nodes are one hop apart.
//!
//! # Parameters (Linux's `sd_init`)
//! - `imbalance_pct`: how much busier (in %) the busiest group must be than
//!   the local one before an overloaded CPU pulls: 110 for SMT, 117 otherwise.
//! - `cache_nice_tries`: balancing failures on cache-hot tasks tolerated
//!   before hot tasks may move: 0 for SMT, 1 for MC and PKG, 2 for NUMA.
//! - `min_interval`/`max_interval`: the periodic balance interval starts at
//!   the span weight in ms (`balance_interval`), doubles up to twice that
//!   while the level is balanced, and is multiplied by `busy_factor` (16)
//!   while the CPU is busy.
//! - `imb_numa_nr`: how many tasks a node may hold beyond its share before a
//!   NUMA imbalance counts (Linux's `build_sched_domains` rule: the number of
//!   LLCs under the first level above the LLC, or an eighth of its span when
//!   it holds one LLC; scaled by span above that).
//! - `asym_cpucapacity` / `asym_cpucapacity_full`: the span holds CPUs of
//!   different capacities / of every capacity the machine has (Linux's
//!   `SD_ASYM_CPUCAPACITY` / `SD_ASYM_CPUCAPACITY_FULL`, set by
//!   `asym_cpu_capacity_classify`); the lowest domain with the second is
//!   the CPU's `sd_asym_cpucapacity` ([`CpuDomains::asym_cpucapacity`]).
//! - `hot_scale` (ours): the multiple of `kernel.sched_migration_cost_ns` for
//!   which a task that ran recently counts as cache-hot when moved across this
//!   level: 0 between SMT siblings (they share every cache, Linux's
//!   `task_hot` says the same), 1 within an LLC, 2 across LLCs in a node, 4
//!   across nodes. Linux keeps one window and relies on `cache_nice_tries`
//!   and NUMA balancing's locality checks to make far moves rarer; a longer
//!   window is our simpler stand-in for that cost.

use alloc::vec::Vec;

use crate::cpu_id::CpuId;
use crate::cpumask::CpuMask;
use crate::topology::Topology;

/// Most domain levels a CPU can have (SMT, MC, PKG, NUMA).
pub const MAX_LEVELS: usize = 4;

/// A topology level, bottom-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum DomainLevel {
    /// Hardware threads of one core.
    Smt,
    /// The CPUs sharing a last-level cache (`SD_SHARE_LLC`).
    #[default]
    Mc,
    /// The CPUs of one node (package).
    Pkg,
    /// The whole machine, across nodes (`SD_NUMA`).
    Numa,
}

impl DomainLevel {
    /// Linux's name of the level (`/sys/kernel/debug/sched/domains/cpu0/domain0/name`).
    pub const fn name(self) -> &'static str {
        match self {
            DomainLevel::Smt => "SMT",
            DomainLevel::Mc => "MC",
            DomainLevel::Pkg => "PKG",
            DomainLevel::Numa => "NUMA",
        }
    }
}

/// One CPU's domain at one level (Linux's `struct sched_domain`, static part).
#[derive(Clone, Copy, Debug, Default)]
pub struct SchedDomain {
    /// Which level.
    pub level: DomainLevel,
    /// The CPUs it spans (this CPU included).
    pub span: CpuMask,
    /// `span.weight()`.
    pub weight: u32,
    /// The level whose spans are this domain's groups; `None`: single CPUs.
    pub child: Option<DomainLevel>,
    /// Busiest-to-local ratio in % needed before an overloaded CPU pulls.
    pub imbalance_pct: u32,
    /// Failed passes on cache-hot tasks tolerated before hot tasks may move.
    pub cache_nice_tries: u32,
    /// Shortest periodic balance interval, ms (the span weight).
    pub min_interval_ms: u32,
    /// Longest periodic balance interval, ms (twice the span weight).
    pub max_interval_ms: u32,
    /// The interval is this many times longer while the CPU is busy.
    pub busy_factor: u32,
    /// Tasks a node may run before a NUMA imbalance counts (NUMA level only).
    pub imb_numa_nr: u32,
    /// Cache-hot window across this level, in multiples of the migration cost.
    pub hot_scale: u32,
    /// The span holds CPUs of different capacities (`SD_ASYM_CPUCAPACITY`).
    pub asym_cpucapacity: bool,
    /// ... and of every capacity the machine has (`SD_ASYM_CPUCAPACITY_FULL`).
    pub asym_cpucapacity_full: bool,
}

impl SchedDomain {
    fn new(level: DomainLevel, span: CpuMask, child: Option<DomainLevel>) -> Self {
        let weight = span.weight() as u32;
        let (imbalance_pct, cache_nice_tries, hot_scale) = match level {
            DomainLevel::Smt => (110, 0, 0),
            DomainLevel::Mc => (117, 1, 1),
            DomainLevel::Pkg => (117, 1, 2),
            DomainLevel::Numa => (117, 2, 4),
        };
        SchedDomain {
            level,
            span,
            weight,
            child,
            imbalance_pct,
            cache_nice_tries,
            min_interval_ms: weight,
            max_interval_ms: 2 * weight,
            busy_factor: 16,
            imb_numa_nr: 0,
            hot_scale,
            asym_cpucapacity: false,
            asym_cpucapacity_full: false,
        }
    }

    /// The group of this domain that holds `cpu` (a CPU of the span): the
    /// child level's span of `cpu`, or `cpu` alone at the lowest level.
    pub fn group_of(&self, topo: &Topology, cpu: CpuId) -> CpuMask {
        match self.child {
            None => CpuMask::of(cpu),
            Some(l) => topo.level_mask(l, cpu).and(&self.span),
        }
    }

    /// The groups of this domain, each once, ordered by their first CPU.
    /// Allocation-free: walks the span, removing each group found (at the
    /// lowest level, where a group is its one CPU, that CPU's bit: no
    /// mask built and read back per group, which a newly idle CPU's
    /// balance of a 64-CPU LLC would do 64 times).
    pub fn groups<'a>(&'a self, topo: &'a Topology) -> impl Iterator<Item = CpuMask> + 'a {
        let mut rest = self.span;
        core::iter::from_fn(move || {
            let cpu = rest.first_cpu()?;
            let g = self.group_of(topo, cpu);
            match self.child {
                None => rest.remove(cpu),
                Some(_) => rest = rest.and_not(&g),
            }
            Some(g)
        })
    }
}

/// One CPU's domains, bottom-up (Linux's `for_each_domain`).
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuDomains {
    sds: [SchedDomain; MAX_LEVELS],
    nr: usize,
}

impl CpuDomains {
    /// The domains, lowest first. Empty on a one-CPU machine.
    #[inline]
    pub fn as_slice(&self) -> &[SchedDomain] {
        &self.sds[..self.nr]
    }

    /// The lowest domain that sees every capacity of an asymmetric machine
    /// (`sd_asym_cpucapacity`): where wakeup placement looks for a CPU that
    /// fits the task. `None` on a machine of equal CPUs.
    pub fn asym_cpucapacity(&self) -> Option<&SchedDomain> {
        self.as_slice().iter().find(|sd| sd.asym_cpucapacity_full)
    }

    /// The domain spanning the CPU's last-level cache (`sd_llc`), if any.
    pub fn llc(&self) -> Option<&SchedDomain> {
        self.as_slice()
            .iter()
            .rev()
            .find(|sd| sd.level <= DomainLevel::Mc)
    }
}

/// Builds every CPU's domains from the topology (`build_sched_domains`).
pub fn build_domains(topo: &Topology) -> Vec<CpuDomains> {
    CpuId::range(topo.nr_cpus())
        .map(|cpu| build_cpu(topo, cpu))
        .collect()
}

fn build_cpu(topo: &Topology, cpu: CpuId) -> CpuDomains {
    let mut d = CpuDomains::default();
    let mut below = CpuMask::of(cpu);
    let mut child = None;
    for level in [
        DomainLevel::Smt,
        DomainLevel::Mc,
        DomainLevel::Pkg,
        DomainLevel::Numa,
    ] {
        let span = topo.level_mask(level, cpu);
        // Degenerate: no CPU beyond the level below.
        if span == below {
            continue;
        }
        let mut sd = SchedDomain::new(level, span, child);
        (sd.asym_cpucapacity, sd.asym_cpucapacity_full) = topo.classify_capacity(&span);
        d.sds[d.nr] = sd;
        d.nr += 1;
        below = span;
        child = Some(level);
    }
    // imb_numa_nr: from the first level above the LLC up.
    let llc_weight = topo.llc_mask(cpu).weight() as u32;
    let mut imb = 0;
    let mut imb_span = 1;
    for i in 0..d.nr {
        let sd = d.sds[i];
        if sd.weight <= llc_weight {
            continue;
        }
        if imb == 0 {
            let nr_llcs = sd.weight / llc_weight;
            imb = if nr_llcs == 1 {
                sd.weight >> 3
            } else {
                nr_llcs
            }
            .max(1);
            imb_span = d.sds[i..d.nr]
                .iter()
                .find(|s| s.level == DomainLevel::Numa)
                .map_or(sd.weight, |s| s.weight);
            d.sds[i].imb_numa_nr = imb;
        } else {
            d.sds[i].imb_numa_nr = imb * (sd.weight / imb_span).max(1);
        }
    }
    d
}
