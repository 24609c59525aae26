//! The machine's CPU topology: which CPUs are SMT siblings of one core, which
//! share a last-level cache (LLC), which sit on one NUMA node.
//!
//! Linux learns this from firmware (`topology_sibling_cpumask`,
//! `cpu_coregroup_mask`, `cpu_to_node`) and builds its scheduling domains from
//! it (kernel/sched/topology.c, `sched_domain_topology`: SMT, CLS, MC, PKG,
//! then NUMA levels). Here the embedder describes it with one id per CPU for
//! each level, so one [`Topology`] serves the kernel (today [`Topology::flat`])
//! and the simulator (SMT/LLC/socket machines up to [`MAX_CPUS`] CPUs). The
//! levels must nest: SMT siblings share an LLC, an LLC lies in one node.
//!
//! Every per-CPU mask is computed once at construction, so queries on the
//! wakeup and balancing paths are array reads.
//!
//! # Capacity
//! CPUs need not be equal: big.LITTLE boards (RK3588, Snapdragon) mix cores
//! of different speeds. Linux reads each CPU's relative performance from the
//! devicetree's `capacity-dmips-mhz` and normalises it so that the biggest
//! CPU has [`SCHED_CAPACITY_SCALE`] (1024): `arch_scale_cpu_capacity`
//! (drivers/base/arch_topology.c, `topology_normalize_cpu_scale`; without a
//! CPU clock the frequency factor is 1, as here). A CPU that lacks the
//! property makes every CPU 1024 (`topology_parse_cpu_capacity`: partial
//! information is not used). [`Topology::with_capacities`] takes the raw
//! values; every CPU is 1024 until then.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;

use crate::cpu_id::CpuId;
use crate::cpumask::{CpuMask, MAX_CPUS};
use crate::domain::DomainLevel;
use crate::pelt::{SCHED_CAPACITY_SCALE, SCHED_CAPACITY_SHIFT};

/// How close two CPUs are, from nearest to farthest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CpuDistance {
    /// The same CPU.
    Same,
    /// SMT siblings: two hardware threads of one core (share L1/L2).
    Smt,
    /// Different cores sharing the last-level cache.
    Llc,
    /// Same NUMA node (package), different LLC.
    Node,
    /// Different NUMA nodes.
    Remote,
}

/// Why a topology description was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TopologyError {
    /// No CPUs.
    NoCpus,
    /// More than [`MAX_CPUS`] CPUs (the count given).
    TooManyCpus(usize),
    /// The per-CPU id slices differ in length.
    LengthMismatch,
    /// A size parameter of [`Topology::uniform`] is zero.
    ZeroSize,
    /// `nr_cpus` is not a whole number of nodes in [`Topology::uniform`].
    NotDivisible,
    /// This CPU shares a core id with a CPU of another LLC.
    CoreSpansLlc(usize),
    /// This CPU shares an LLC id with a CPU of another node.
    LlcSpansNode(usize),
    /// This CPU's raw capacity is 0 ([`Topology::with_capacities`]).
    ZeroCapacity(usize),
}

impl fmt::Display for TopologyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TopologyError::NoCpus => f.write_str("no CPUs"),
            TopologyError::TooManyCpus(n) => write!(f, "{n} CPUs, at most {MAX_CPUS}"),
            TopologyError::LengthMismatch => {
                f.write_str("core, llc and node id lists differ in length")
            }
            TopologyError::ZeroSize => {
                f.write_str("threads, cores and LLCs per level must be >= 1")
            }
            TopologyError::NotDivisible => f.write_str("CPU count is not a whole number of nodes"),
            TopologyError::CoreSpansLlc(c) => write!(f, "CPU {c}: its core spans two LLCs"),
            TopologyError::LlcSpansNode(c) => write!(f, "CPU {c}: its LLC spans two nodes"),
            TopologyError::ZeroCapacity(c) => write!(f, "CPU {c}: capacity 0"),
        }
    }
}

/// Per-CPU core, LLC and node ids and the masks derived from them.
#[derive(Clone, Debug)]
pub struct Topology {
    core: Vec<u32>,
    llc: Vec<u32>,
    node: Vec<u32>,
    smt_masks: Vec<CpuMask>,
    llc_masks: Vec<CpuMask>,
    /// CPUs in each CPU's LLC (`sd_llc_size`), kept beside the masks: a
    /// mask's weight is four popcounts, which targets without the `popcnt`
    /// instruction (x86_64-unknown-none) compute in ~50 instructions, and
    /// `wake_wide` asks for it at every wakeup.
    llc_sizes: Vec<u32>,
    node_masks: Vec<CpuMask>,
    online: CpuMask,
    has_smt: bool,
    /// Normalised capacity per CPU, 1..=[`SCHED_CAPACITY_SCALE`].
    capacity: Vec<u32>,
    /// Whether the capacities differ (`sched_asym_cpucap_active`).
    asym: bool,
}

impl Topology {
    /// Heap bytes this topology holds (its per-CPU ids and masks).
    pub fn heap_bytes(&self) -> usize {
        let ids = self.core.capacity()
            + self.llc.capacity()
            + self.llc_sizes.capacity()
            + self.node.capacity()
            + self.capacity.capacity();
        let masks =
            self.smt_masks.capacity() + self.llc_masks.capacity() + self.node_masks.capacity();
        ids * core::mem::size_of::<u32>() + masks * core::mem::size_of::<CpuMask>()
    }

    /// `nr_cpus` CPUs (clamped to 1..=[`MAX_CPUS`]), each its own core, all
    /// in one LLC and one node: one flat domain, the scheduler's behaviour
    /// before it knew topology.
    pub fn flat(nr_cpus: usize) -> Topology {
        let n = nr_cpus.clamp(1, MAX_CPUS);
        let core: Vec<u32> = (0..n as u32).collect();
        let zero = alloc::vec![0; n];
        Topology::from_ids(&core, &zero, &zero).expect("a flat topology is valid")
    }

    /// A symmetric machine. CPU numbering: consecutive CPUs are the SMT
    /// siblings of one core (`threads_per_core` of them), consecutive cores
    /// share one LLC (`cores_per_llc`), consecutive LLCs one node
    /// (`llcs_per_node`). So CPU `c` is on core `c / t`, LLC `c / (t·k)`, node
    /// `c / (t·k·l)`. (Linux on x86 usually numbers the second SMT thread of
    /// every core after all first threads; describe such machines with
    /// [`Topology::from_ids`].) `nr_cpus` must be a whole number of nodes.
    ///
    /// Example: a 2-socket Cascade Lake with 20 cores of 2 threads per socket
    /// and one LLC per socket is `uniform(80, 2, 20, 1)`.
    pub fn uniform(
        nr_cpus: usize,
        threads_per_core: usize,
        cores_per_llc: usize,
        llcs_per_node: usize,
    ) -> Result<Topology, TopologyError> {
        if threads_per_core == 0 || cores_per_llc == 0 || llcs_per_node == 0 {
            return Err(TopologyError::ZeroSize);
        }
        Self::check_count(nr_cpus)?;
        let per_llc = threads_per_core.saturating_mul(cores_per_llc);
        let per_node = per_llc.saturating_mul(llcs_per_node);
        if !nr_cpus.is_multiple_of(per_node) {
            return Err(TopologyError::NotDivisible);
        }
        let ids = |per: usize| -> Vec<u32> { (0..nr_cpus).map(|c| (c / per) as u32).collect() };
        Topology::from_ids(&ids(threads_per_core), &ids(per_llc), &ids(per_node))
    }

    /// A machine described by per-CPU ids (index = CPU number): CPUs with
    /// equal `core` ids are SMT siblings, equal `llc` ids share a last-level
    /// cache, equal `node` ids a NUMA node. Ids need not be dense, but the
    /// levels must nest (siblings in one LLC, an LLC in one node).
    pub fn from_ids(core: &[u32], llc: &[u32], node: &[u32]) -> Result<Topology, TopologyError> {
        let n = core.len();
        if llc.len() != n || node.len() != n {
            return Err(TopologyError::LengthMismatch);
        }
        Self::check_count(n)?;
        // One mask per distinct id, then each CPU takes its id's: O(n log n)
        // (comparing every pair of CPUs took 3 x 65 536 steps for 256 CPUs,
        // most of a 256-CPU test's time under Miri).
        let masks_of = |ids: &[u32]| -> Vec<CpuMask> {
            let mut groups: BTreeMap<u32, CpuMask> = BTreeMap::new();
            for (c, &id) in ids.iter().enumerate() {
                groups.entry(id).or_default().set(c);
            }
            ids.iter().map(|id| groups[id]).collect()
        };
        let smt_masks = masks_of(core);
        let llc_masks = masks_of(llc);
        let node_masks = masks_of(node);
        for c in 0..n {
            if !smt_masks[c].is_subset(&llc_masks[c]) {
                return Err(TopologyError::CoreSpansLlc(c));
            }
            if !llc_masks[c].is_subset(&node_masks[c]) {
                return Err(TopologyError::LlcSpansNode(c));
            }
        }
        let has_smt = smt_masks.iter().any(|m| m.weight() > 1);
        let llc_sizes = llc_masks.iter().map(|m| m.weight() as u32).collect();
        Ok(Topology {
            has_smt,
            core: core.to_vec(),
            llc: llc.to_vec(),
            node: node.to_vec(),
            smt_masks,
            llc_masks,
            llc_sizes,
            node_masks,
            online: CpuMask::first_n(n),
            capacity: alloc::vec![SCHED_CAPACITY_SCALE as u32; n],
            asym: false,
        })
    }

    /// The same machine with each CPU's raw capacity (`capacity-dmips-mhz`;
    /// index = CPU), normalised so the biggest is [`SCHED_CAPACITY_SCALE`]:
    /// `raw * 1024 / max(raw)`, at least 1. Refused when the list's length
    /// is not the CPU count or a value is 0.
    pub fn with_capacities(mut self, raw: &[u32]) -> Result<Topology, TopologyError> {
        if raw.len() != self.nr_cpus() {
            return Err(TopologyError::LengthMismatch);
        }
        if let Some(c) = raw.iter().position(|&r| r == 0) {
            return Err(TopologyError::ZeroCapacity(c));
        }
        let max = u64::from(raw.iter().copied().max().unwrap_or(1));
        for (cap, &r) in self.capacity.iter_mut().zip(raw) {
            *cap = ((u64::from(r) << SCHED_CAPACITY_SHIFT) / max).max(1) as u32;
        }
        self.asym = self.capacity.iter().any(|&c| c != self.capacity[0]);
        Ok(self)
    }

    fn check_count(n: usize) -> Result<(), TopologyError> {
        match n {
            0 => Err(TopologyError::NoCpus),
            n if n > MAX_CPUS => Err(TopologyError::TooManyCpus(n)),
            _ => Ok(()),
        }
    }

    /// Number of CPUs.
    pub fn nr_cpus(&self) -> usize {
        self.core.len()
    }

    /// CPUs `0..nr_cpus` (`cpu_online_mask`).
    pub fn online_mask(&self) -> CpuMask {
        self.online
    }

    /// `cpu`'s core id (shared by its SMT siblings).
    pub fn core_of(&self, cpu: CpuId) -> u32 {
        self.core[cpu.index()]
    }

    /// `cpu`'s LLC id.
    pub fn llc_of(&self, cpu: CpuId) -> u32 {
        self.llc[cpu.index()]
    }

    /// `cpu`'s NUMA node id.
    pub fn node_of(&self, cpu: CpuId) -> u32 {
        self.node[cpu.index()]
    }

    /// `cpu` and its SMT siblings (`cpu_smt_mask`).
    pub fn smt_mask(&self, cpu: CpuId) -> CpuMask {
        self.smt_masks[cpu.index()]
    }

    /// The CPUs sharing `cpu`'s LLC (`cpu_coregroup_mask`, `sd_llc`'s span).
    pub fn llc_mask(&self, cpu: CpuId) -> CpuMask {
        self.llc_masks[cpu.index()]
    }

    /// How many CPUs share `cpu`'s LLC (`sd_llc_size`): `llc_mask(cpu)`'s
    /// weight, computed once.
    pub fn llc_size(&self, cpu: CpuId) -> u32 {
        self.llc_sizes[cpu.index()]
    }

    /// The CPUs of `cpu`'s node (`cpumask_of_node`).
    pub fn node_mask(&self, cpu: CpuId) -> CpuMask {
        self.node_masks[cpu.index()]
    }

    /// The span of `cpu`'s domain at `level`: its SMT core, its LLC, its
    /// node, or every CPU.
    pub fn level_mask(&self, level: DomainLevel, cpu: CpuId) -> CpuMask {
        match level {
            DomainLevel::Smt => self.smt_masks[cpu.index()],
            DomainLevel::Mc => self.llc_masks[cpu.index()],
            DomainLevel::Pkg => self.node_masks[cpu.index()],
            DomainLevel::Numa => self.online,
        }
    }

    /// Whether some core has more than one hardware thread.
    pub fn has_smt(&self) -> bool {
        self.has_smt
    }

    /// `cpu`'s capacity, 1..=[`SCHED_CAPACITY_SCALE`]
    /// (`arch_scale_cpu_capacity`).
    pub fn capacity_of(&self, cpu: CpuId) -> u32 {
        self.capacity[cpu.index()]
    }

    /// Whether the CPUs' capacities differ (`sched_asym_cpucap_active`).
    pub fn has_asym_capacity(&self) -> bool {
        self.asym
    }

    /// How `span` sees the machine's capacities (Linux's
    /// `asym_cpu_capacity_classify`): `(asym, full)`, where `asym` says the
    /// span holds CPUs of at least two capacities (`SD_ASYM_CPUCAPACITY`)
    /// and `full` that it also holds every capacity the machine has
    /// (`SD_ASYM_CPUCAPACITY_FULL`).
    pub fn classify_capacity(&self, span: &CpuMask) -> (bool, bool) {
        if !self.asym {
            return (false, false);
        }
        // Distinct values, few (a board has 2 or 3 kinds of core): a linear
        // scan per CPU, once per domain at construction.
        let distinct = |cpus: &mut dyn Iterator<Item = usize>| -> Vec<u32> {
            let mut v: Vec<u32> = Vec::new();
            for c in cpus {
                if !v.contains(&self.capacity[c]) {
                    v.push(self.capacity[c]);
                }
            }
            v
        };
        let in_span = distinct(&mut span.iter().filter(|&c| c < self.nr_cpus()));
        let all = distinct(&mut (0..self.nr_cpus()));
        (
            in_span.len() >= 2,
            in_span.len() >= 2 && in_span.len() == all.len(),
        )
    }

    /// How close `a` and `b` are.
    pub fn distance(&self, a: CpuId, b: CpuId) -> CpuDistance {
        let (a, b) = (a.index(), b.index());
        if a == b {
            CpuDistance::Same
        } else if self.core[a] == self.core[b] {
            CpuDistance::Smt
        } else if self.llc[a] == self.llc[b] {
            CpuDistance::Llc
        } else if self.node[a] == self.node[b] {
            CpuDistance::Node
        } else {
            CpuDistance::Remote
        }
    }

    /// Whether `a` and `b` share a last-level cache (`cpus_share_cache`).
    pub fn share_cache(&self, a: CpuId, b: CpuId) -> bool {
        self.llc[a.index()] == self.llc[b.index()]
    }
}
