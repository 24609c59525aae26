//! Machines: CPU count, topology (SMT siblings, LLC domains, sockets) and the
//! cost model. Every cost is a parameter; each default names the measurement it
//! comes from. None was fitted to any study outcome.
//!
//! # Cost model
//! - **Context switch** ([`Costs::switch_thread_ns`], [`Costs::switch_process_ns`]):
//!   CPU time the incoming task loses before it makes progress. Thread switch
//!   1.07 µs and process switch 2.41 µs: ddumbying.vercel.app, Linux 6.6 on an
//!   11th-gen Core i7 (`docs/references.md`); this machine's pinned
//!   `perf bench sched pipe` gives 0.97 (threads) and 1.09 µs (processes) per
//!   switch (`docs/benchmarks.md`, "Linux on this VM"), the same order.
//! - **Wakeup IPI latency** ([`Costs::ipi_ns`]): 1.5 µs from the send to the
//!   handler on the target, a value between two measurements, fixed before
//!   the first study run: on hardware, `perf bench sched pipe` unpinned (a
//!   cross-CPU wake and a switch each way) is 1–2 µs per round trip on an x86
//!   laptop (the CPUIDLE_POLL_MIN discussion, `docs/references.md`), so under
//!   1 µs one way; the kernel's own cross-CPU ping-pong under QEMU TCG measured
//!   3.4 µs per wakeup (aarch64, 4 CPUs), emulation included.
//! - **Idle exit** ([`Costs::idle_exit_ns`]): 2 µs, the C1 exit latency of
//!   Linux's `intel_idle` table for Skylake-SP/Cascade Lake (`skx_cstates`: C1
//!   exit_latency 2 µs; C1E is 10 µs, C6 133 µs). We model only the shallow state.
//! - **Cache refill** ([`Costs::bw_llc`], [`Costs::bw_cross_llc`],
//!   [`Costs::bw_cross_node`]): a task's next burst after a migration is longer
//!   by `footprint / bandwidth`. Same LLC: the working set refills from the
//!   LLC at 20 GB/s (single-core L3 read bandwidth of Skylake-SP class cores is
//!   in the 15–30 GB/s range, e.g. Intel MLC figures; Hennessy & Patterson 6th
//!   ed. ch. 2 quote similar per-core L3 bandwidths). Another LLC in the same
//!   node: from memory at 12 GB/s (single-thread STREAM on Skylake-SP, McCalpin's
//!   STREAM results: ~12 GB/s per core). Another socket: 7 GB/s (remote memory
//!   over UPI, about 60% of local bandwidth, the usual local/remote ratio of
//!   2-socket Xeons in STREAM). SMT siblings share L1/L2: no penalty.
//! - **Working set lost in place** ([`Costs::l2_bytes`]): when other tasks ran
//!   on the CPU since a task last ran there and their footprints together with
//!   its own exceed the private L2 (1 MiB on Cascade Lake and Neoverse V1,
//!   512 KiB on Zen 2/3: vendor data sheets), the part that no longer fits is
//!   refilled from the LLC at [`Costs::bw_llc`].
//!
//! Counted: every burst that paid a refill is a "cache-cold run".

use std::fmt;

use sched::topology::CpuDistance;
use sched::Topology;

/// The cost parameters (see the module docs for where each default comes from).
#[derive(Clone, Debug)]
pub struct Costs {
    /// Switch to a thread of the same process (no mm switch), ns.
    pub switch_thread_ns: u64,
    /// Switch to another process (mm/TLB switch), ns.
    pub switch_process_ns: u64,
    /// Reschedule IPI send-to-handler latency, ns.
    pub ipi_ns: u64,
    /// Shallow idle-state exit latency, ns.
    pub idle_exit_ns: u64,
    /// Refill bandwidth from the shared LLC, bytes per µs (= MB/s).
    pub bw_llc: u64,
    /// Refill bandwidth from another LLC of the node (memory), bytes per µs.
    pub bw_cross_llc: u64,
    /// Refill bandwidth across sockets, bytes per µs.
    pub bw_cross_node: u64,
    /// Private (L2) cache per core, bytes.
    pub l2_bytes: u64,
    /// Run-to-run jitter of every modelled CPU cost, ±% (uniform).
    pub jitter_pct: u32,
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            switch_thread_ns: 1_070,
            switch_process_ns: 2_410,
            ipi_ns: 1_500,
            idle_exit_ns: 2_000,
            bw_llc: 20_000,
            bw_cross_llc: 12_000,
            bw_cross_node: 7_000,
            l2_bytes: 1 << 20,
            jitter_pct: 10,
        }
    }
}

impl Costs {
    /// Refill time of `bytes` at distance `d`, ns.
    #[inline]
    pub fn refill_ns(&self, bytes: u64, d: CpuDistance) -> u64 {
        let bw = match d {
            CpuDistance::Same | CpuDistance::Smt => return 0,
            CpuDistance::Llc => self.bw_llc,
            CpuDistance::Node => self.bw_cross_llc,
            CpuDistance::Remote => self.bw_cross_node,
        };
        bytes * 1000 / bw.max(1)
    }
}

/// A machine: topology and costs.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Preset name.
    pub name: String,
    /// Topology: `sched`'s own, the one its placement and balancing use.
    pub topo: Topology,
    /// Costs.
    pub costs: Costs,
    /// Tick rate.
    pub hz: u32,
}

impl fmt::Display for Machine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = &self.topo;
        let last = t.nr_cpus() - 1;
        let (nodes, llcs) = (t.node_of(last) + 1, t.llc_of(last) + 1);
        write!(
            f,
            "{}: {} CPUs, {} node(s), {} LLC(s), {} thread(s)/core, HZ={}",
            self.name,
            t.nr_cpus(),
            nodes,
            llcs,
            t.smt_mask(0).weight(),
            self.hz
        )
    }
}

/// The preset names [`Machine::preset`] knows.
pub const PRESETS: &[&str] = &["graviton3", "cascadelake-2s", "epyc-ccx", "small", "flat:N"];

impl Machine {
    /// A preset: `graviton3` (64 cores, one LLC, no SMT, 1 MiB L2, HZ=250 as
    /// Amazon Linux arm64), `cascadelake-2s` (2 sockets × 20 cores × 2 SMT,
    /// one LLC per socket), `epyc-ccx` (64 cores in 8-core LLCs, 2 SMT, 1
    /// node, 512 KiB L2), `small` (4 CPUs, one LLC), `flat:N` (N CPUs, one LLC).
    pub fn preset(name: &str) -> Option<Machine> {
        let c = Costs::default();
        let (topo, costs) = match name {
            "graviton3" => (Topology::uniform(64, 1, 64, 1).ok()?, c),
            "cascadelake-2s" => (Topology::uniform(80, 2, 20, 1).ok()?, c),
            "epyc-ccx" => (
                Topology::uniform(128, 2, 8, 8).ok()?,
                Costs {
                    l2_bytes: 512 << 10,
                    ..c
                },
            ),
            "small" => (Topology::uniform(4, 1, 4, 1).ok()?, c),
            s => {
                let n: usize = s.strip_prefix("flat:")?.parse().ok()?;
                if !(1..=256).contains(&n) {
                    return None;
                }
                (Topology::uniform(n, 1, n, 1).ok()?, c)
            }
        };
        Some(Machine {
            name: name.to_string(),
            topo,
            costs,
            hz: 250,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets() {
        let m = Machine::preset("cascadelake-2s").unwrap();
        assert_eq!(m.topo.nr_cpus(), 80);
        assert_eq!(m.topo.distance(0, 1), CpuDistance::Smt);
        assert_eq!(m.topo.distance(0, 2), CpuDistance::Llc);
        assert_eq!(m.topo.distance(0, 40), CpuDistance::Remote);
        let e = Machine::preset("epyc-ccx").unwrap();
        assert_eq!(e.topo.distance(0, 16), CpuDistance::Node);
        assert_eq!(Machine::preset("flat:256").unwrap().topo.nr_cpus(), 256);
        assert!(Machine::preset("flat:257").is_none());
    }
}
