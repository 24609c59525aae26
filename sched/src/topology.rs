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

use alloc::vec::Vec;
use core::fmt;

use crate::cpumask::{CpuMask, MAX_CPUS};
use crate::domain::DomainLevel;

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
    node_masks: Vec<CpuMask>,
    online: CpuMask,
    has_smt: bool,
}

impl Topology {
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
        let masks_of = |ids: &[u32]| -> Vec<CpuMask> {
            (0..n)
                .map(|c| (0..n).filter(|&o| ids[o] == ids[c]).collect())
                .collect()
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
        Ok(Topology {
            has_smt,
            core: core.to_vec(),
            llc: llc.to_vec(),
            node: node.to_vec(),
            smt_masks,
            llc_masks,
            node_masks,
            online: CpuMask::first_n(n),
        })
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
    pub fn core_of(&self, cpu: usize) -> u32 {
        self.core[cpu]
    }

    /// `cpu`'s LLC id.
    pub fn llc_of(&self, cpu: usize) -> u32 {
        self.llc[cpu]
    }

    /// `cpu`'s NUMA node id.
    pub fn node_of(&self, cpu: usize) -> u32 {
        self.node[cpu]
    }

    /// `cpu` and its SMT siblings (`cpu_smt_mask`).
    pub fn smt_mask(&self, cpu: usize) -> CpuMask {
        self.smt_masks[cpu]
    }

    /// The CPUs sharing `cpu`'s LLC (`cpu_coregroup_mask`, `sd_llc`'s span).
    pub fn llc_mask(&self, cpu: usize) -> CpuMask {
        self.llc_masks[cpu]
    }

    /// The CPUs of `cpu`'s node (`cpumask_of_node`).
    pub fn node_mask(&self, cpu: usize) -> CpuMask {
        self.node_masks[cpu]
    }

    /// The span of `cpu`'s domain at `level`: its SMT core, its LLC, its
    /// node, or every CPU.
    pub fn level_mask(&self, level: DomainLevel, cpu: usize) -> CpuMask {
        match level {
            DomainLevel::Smt => self.smt_masks[cpu],
            DomainLevel::Mc => self.llc_masks[cpu],
            DomainLevel::Pkg => self.node_masks[cpu],
            DomainLevel::Numa => self.online,
        }
    }

    /// Whether some core has more than one hardware thread.
    pub fn has_smt(&self) -> bool {
        self.has_smt
    }

    /// How close `a` and `b` are.
    pub fn distance(&self, a: usize, b: usize) -> CpuDistance {
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
    pub fn share_cache(&self, a: usize, b: usize) -> bool {
        self.llc[a] == self.llc[b]
    }
}
