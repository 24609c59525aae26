//! Idle states by depth: what an idle CPU's wakeup costs depends on how
//! deep it went to sleep, and how deep it goes is decided when it goes idle
//! from what it knows then.
//!
//! # The states
//! A machine's idle states ([`Costs::idle_states`](crate::machine::Costs)),
//! shallowest first, each an exit latency and a target residency, are the
//! table Linux's own idle driver uses on that hardware:
//! - `cascadelake-2s`: [`SKX_CSTATES`], `skx_cstates` of Linux's
//!   `drivers/idle/intel_idle.c` (Skylake-SP, whose CPU model Cascade Lake
//!   shares, `INTEL_SKYLAKE_X`): C1 (MWAIT 0x00) exit 2 µs, target residency
//!   2 µs; C1E (MWAIT 0x01) 10 / 20 µs; C6 (MWAIT 0x20) 133 / 600 µs.
//! - every other preset keeps its one state of
//!   [`Costs::idle_exit_ns`](crate::machine::Costs): graviton3 and epyc-ccx
//!   take their idle states from firmware (ACPI `_LPI` on arm64 servers,
//!   `_CST` for `acpi_idle` on EPYC), whose values we cannot cite for these
//!   machines, so they stay at the single 2 µs state they had; `qemu:N`'s
//!   halted vCPU has none (0).
//!
//! # The governor
//! When a CPU goes idle it picks the deepest state whose target residency
//! is at most its last idle period (from its previous idle entry to the
//! interrupt that ended it: an IPI's arrival, a sleeper's timer); the
//! shallowest state if none fits. A CPU idle since the run began is taken
//! to have been idle for long (the machine was idle before the benchmark):
//! the deepest state. A wakeup of an idle CPU (an IPI to it, a timer of a
//! task it holds) pays its state's exit latency before the handler runs;
//! an interrupt that leaves the CPU idle (a nohz kick that pulled nothing,
//! a timer whose task went elsewhere) ends the idle period all the same,
//! and the CPU picks its state again, as Linux's idle loop calls the
//! governor again each time round.
//!
//! Linux's governors (`drivers/cpuidle/governors/menu.c`, `teo.c`) predict
//! the coming idle period from more: menu takes the time to the next timer
//! event (`tick_nohz_get_sleep_length`) scaled by a correction factor learnt
//! per bucket, bounded by the typical interval of the last 8 idle periods,
//! and picks the deepest enabled state whose target residency is at most
//! that prediction and whose exit latency is within the PM QoS latency
//! limit; teo counts, per state, how often recent wakeups came before the
//! next timer ("intercepts") or at it ("hits"). This rule uses the last
//! period alone (one sample, not 8; no timer bound, no correction factor,
//! no latency limit): it goes deep after one long sleep and back to
//! shallow after one short one, where menu needs more history.
//!
//! `--no-idle-states` ([`Mechanisms::idle_states`](crate::machine::Mechanisms))
//! gives the model before: every idle CPU exits at `idle_exit_ns` (C1's 2 µs).

/// One idle state: its exit latency and target residency (Linux's
/// `struct cpuidle_state` `exit_latency` and `target_residency`, in µs
/// there, ns here).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdleState {
    /// The state's name in Linux's table.
    pub name: &'static str,
    /// From the wakeup event to the CPU executing again, ns.
    pub exit_latency_ns: u64,
    /// The shortest idle period for which the state is worth entering, ns.
    pub target_residency_ns: u64,
}

/// Skylake-SP / Cascade Lake: `skx_cstates` in Linux's
/// `drivers/idle/intel_idle.c` (C1, C1E, C6; exit latency / target
/// residency 2/2, 10/20, 133/600 µs).
pub const SKX_CSTATES: &[IdleState] = &[
    IdleState {
        name: "C1",
        exit_latency_ns: 2_000,
        target_residency_ns: 2_000,
    },
    IdleState {
        name: "C1E",
        exit_latency_ns: 10_000,
        target_residency_ns: 20_000,
    },
    IdleState {
        name: "C6",
        exit_latency_ns: 133_000,
        target_residency_ns: 600_000,
    },
];

/// The governor's rule: the deepest of `states` (shallowest first) whose
/// target residency is at most `last_idle_ns`; 0 if none.
pub fn select(states: &[IdleState], last_idle_ns: u64) -> usize {
    states
        .iter()
        .rposition(|s| s.target_residency_ns <= last_idle_ns)
        .unwrap_or(0)
}

/// Each CPU's idle state and the governor's memory.
#[derive(Clone, Debug)]
pub struct IdleCpus {
    states: &'static [IdleState],
    cpus: Vec<IdleCpu>,
    /// Entries into each state, summed over CPUs.
    pub entries: Vec<u64>,
    /// Exit latency paid, by state, ns (before jitter).
    pub exit_paid_ns: Vec<u64>,
}

#[derive(Clone, Copy, Debug)]
struct IdleCpu {
    /// In an idle state (entered, not yet woken).
    asleep: bool,
    /// The state it entered last.
    state: u8,
    /// When it entered it, ns.
    entered_ns: u64,
    /// Its last idle period, ns (from an entry to the interrupt that ended it).
    last_idle_ns: u64,
}

impl IdleCpus {
    /// `nr_cpus` CPUs with `states` (at least one, fewer than 256), all
    /// asleep since 0 in the deepest state (idle for long before the run).
    pub fn new(states: &'static [IdleState], nr_cpus: usize) -> Self {
        assert!(!states.is_empty() && states.len() < 256);
        let deepest = select(states, u64::MAX) as u8;
        let mut entries = vec![0; states.len()];
        entries[deepest as usize] = nr_cpus as u64;
        IdleCpus {
            states,
            cpus: vec![
                IdleCpu {
                    asleep: true,
                    state: deepest,
                    entered_ns: 0,
                    last_idle_ns: u64::MAX,
                };
                nr_cpus
            ],
            entries,
            exit_paid_ns: vec![0; states.len()],
        }
    }

    /// The states modelled, shallowest first.
    pub fn states(&self) -> &'static [IdleState] {
        self.states
    }

    /// `cpu` goes idle at `now_ns` (it ran a task, or an interrupt left it
    /// idle): it enters the state the governor picks from its last idle
    /// period. Nothing if it is asleep already.
    pub fn enter(&mut self, cpu: usize, now_ns: u64) {
        let c = &mut self.cpus[cpu];
        if c.asleep {
            return;
        }
        let s = select(self.states, c.last_idle_ns);
        self.entries[s] += 1;
        c.asleep = true;
        c.state = s as u8;
        c.entered_ns = now_ns;
    }

    /// An interrupt reaches idle `cpu` at `at_ns`: its idle period ends
    /// there. Returns the exit latency to pay: that of the state it is in,
    /// or was last in if it is waking already (a second interrupt on the
    /// way; the model before paid the one exit again, too).
    pub fn wake(&mut self, cpu: usize, at_ns: u64) -> u64 {
        let c = &mut self.cpus[cpu];
        let s = c.state as usize;
        let exit = self.states[s].exit_latency_ns;
        if c.asleep {
            c.asleep = false;
            c.last_idle_ns = at_ns.saturating_sub(c.entered_ns);
            self.exit_paid_ns[s] += exit;
        }
        exit
    }

    /// An interrupt sent while `cpu` was busy (so no exit paid) reaches
    /// it asleep at `at_ns`: its idle period ends there.
    pub fn end_period(&mut self, cpu: usize, at_ns: u64) {
        let c = &mut self.cpus[cpu];
        if c.asleep {
            c.asleep = false;
            c.last_idle_ns = at_ns.saturating_sub(c.entered_ns);
        }
    }

    /// Is `cpu` in an idle state (and which)?
    pub fn state_of(&self, cpu: usize) -> Option<usize> {
        let c = &self.cpus[cpu];
        c.asleep.then_some(c.state as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn governor_picks_the_deepest_state_that_fits() {
        let s = SKX_CSTATES;
        assert_eq!(select(s, 0), 0);
        assert_eq!(select(s, 19_999), 0);
        assert_eq!(select(s, 20_000), 1);
        assert_eq!(select(s, 599_999), 1);
        assert_eq!(select(s, 600_000), 2);
        assert_eq!(select(s, u64::MAX), 2);
    }

    #[test]
    fn a_wake_pays_the_state_entered() {
        let mut c = IdleCpus::new(SKX_CSTATES, 2);
        // Idle since the start: C6.
        assert_eq!(c.state_of(0), Some(2));
        assert_eq!(c.wake(0, 1_000), 133_000);
        // Waking already: the same exit, the period unchanged.
        assert_eq!(c.wake(0, 2_000), 133_000);
        assert_eq!(c.state_of(0), None);
        // After a 1 µs period: C1.
        c.enter(0, 5_000);
        assert_eq!(c.state_of(0), Some(0));
        c.enter(0, 6_000);
        assert_eq!(c.wake(0, 35_000), 2_000);
        // After 30 µs: C1E; after 1 ms: C6.
        c.enter(0, 40_000);
        assert_eq!(c.state_of(0), Some(1));
        assert_eq!(c.wake(0, 1_040_000), 10_000);
        c.enter(0, 1_050_000);
        assert_eq!(c.state_of(0), Some(2));
        assert_eq!(c.entries, vec![1, 1, 3]);
        assert_eq!(c.exit_paid_ns, vec![2_000, 10_000, 133_000]);
    }
}
