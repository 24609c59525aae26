//! CPU hotplug (`crate::hotplug`): a CPU taken offline with runnable,
//! sleeping and pinned threads on it loses none of them, runs nothing
//! (no switch, no tick) while it is offline, and is used again once back
//! online; bad requests are refused and change nothing.
//!
//! Functional, not timing, tests: every wait is a progress check or a
//! condition, never a time bound; the threads yield and sleep, so the CPU
//! reaches its idle thread under every preemption model.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use sched::TaskParams;

use super::wait_progress;
use crate::cpumask::{only, AtomicCpuMask, CpuMask};
use crate::hotplug::{cpu_down, cpu_up, HotplugError};
use crate::percpu;
use crate::sync::Semaphore;
use crate::task::{self, Tid};
use crate::{arch, kassert, kassert_eq, kprintln, ktest_smp};

/// A thread of the test: records the CPUs it ran on and counts its steps
/// (a yield, or a sleep); stops and is joined on drop.
struct Worker {
    tid: Tid,
    cpus: Arc<AtomicCpuMask>,
    steps: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    joined: bool,
}

#[derive(Clone, Copy)]
enum Kind {
    /// Runnable: spins, yielding every 256 iterations.
    Spinner,
    /// Sleeps 2 ms at a time on its CPU's timer list.
    Sleeper,
    /// Waits on the semaphore, once; then spins like a spinner.
    Waiter,
}

impl Worker {
    fn spawn(
        name: &'static str,
        kind: Kind,
        mask: CpuMask,
        sem: Option<Arc<Semaphore>>,
    ) -> Result<Worker, alloc::string::String> {
        let cpus = Arc::new(AtomicCpuMask::new());
        let steps = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, n, s) = (cpus.clone(), steps.clone(), stop.clone());
        let tid = task::spawn_on(name, TaskParams::default(), mask, move || {
            // The CPU is read and recorded with preemption off: a thread
            // moved between the two (by `cpu_down`) would record a CPU it
            // left, after the test cleared the record.
            let record = |c: &AtomicCpuMask| {
                crate::sched::preempt_disable();
                c.set(arch::cpu_id(), Ordering::Relaxed);
                crate::sched::preempt_enable();
            };
            if let (Kind::Waiter, Some(sem)) = (kind, &sem) {
                record(&c);
                n.fetch_add(1, Ordering::Relaxed);
                sem.down();
            }
            let mut i = 0u32;
            while !s.load(Ordering::Relaxed) {
                record(&c);
                match kind {
                    Kind::Sleeper => {
                        task::sleep_ms(2);
                        n.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        i = i.wrapping_add(1);
                        if i.is_multiple_of(256) {
                            n.fetch_add(1, Ordering::Relaxed);
                            crate::sched::yield_now();
                        }
                    }
                }
            }
        })
        .map_err(|e| alloc::format!("spawn {name}: {e:?}"))?;
        Ok(Worker {
            tid,
            cpus,
            steps,
            stop,
            joined: false,
        })
    }

    fn steps(&self) -> u64 {
        self.steps.load(Ordering::Relaxed)
    }

    fn cpu(&self) -> usize {
        task::thread(self.tid.idx()).cpu().index()
    }

    fn allowed(&self) -> CpuMask {
        task::thread(self.tid.idx()).cpus_allowed()
    }

    fn stop(mut self) -> Result<(), alloc::string::String> {
        self.joined = true;
        self.stop.store(true, Ordering::Relaxed);
        task::join(self.tid)
            .map(|_| ())
            .map_err(|e| alloc::format!("join: {e:?}"))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if !self.joined {
            self.stop.store(true, Ordering::Relaxed);
            let _ = task::join(self.tid);
        }
    }
}

/// Waits until every worker made `more` steps beyond `from` (a progress
/// check: fails only if all of them stand still).
fn wait_steps(what: &str, ws: &[&Worker], more: u64) -> Result<(), alloc::string::String> {
    let from: Vec<u64> = ws.iter().map(|w| w.steps()).collect();
    wait_progress(
        what,
        1,
        || ws.iter().zip(&from).all(|(w, &f)| w.steps() >= f + more),
        || ws.iter().map(|w| w.steps()).sum(),
    )
}

/// Brings `cpu` back online if a failed test left it offline.
struct Online(CpuId);

impl Drop for Online {
    fn drop(&mut self) {
        if !crate::sched::online_mask().has(self.0) {
            let _ = cpu_up(self.0);
        }
    }
}

ktest_smp!(
    smp_cpu_offline_moves_everything_and_online_restores,
    2,
    || {
        let n = crate::sched::nr_cpus();
        let k = CpuId::new(n - 1).ok_or("no such CPU")?;
        let all = crate::sched::online_mask();
        let others = {
            let mut m = all;
            m.remove(k);
            m
        };
        let sem = Arc::new(Semaphore::new(0));
        // On CPU k: two runnable threads allowed everywhere, one pinned there,
        // a timer sleeper allowed everywhere and one pinned there, a thread
        // waiting on a semaphore allowed everywhere and one pinned there.
        let spin = (0..2)
            .map(|_| Worker::spawn("hp_spin", Kind::Spinner, only(k), None))
            .collect::<Result<Vec<_>, _>>()?;
        let spin_pinned = Worker::spawn("hp_spin_pin", Kind::Spinner, only(k), None)?;
        let sleep = Worker::spawn("hp_sleep", Kind::Sleeper, only(k), None)?;
        let sleep_pinned = Worker::spawn("hp_sleep_pin", Kind::Sleeper, only(k), None)?;
        let wait = Worker::spawn("hp_wait", Kind::Waiter, only(k), Some(sem.clone()))?;
        let wait_pinned = Worker::spawn("hp_wait_pin", Kind::Waiter, only(k), Some(sem.clone()))?;
        // Each ran there; then the unpinned ones may go anywhere (still on k).
        wait_steps(
            "threads start on cpu k",
            &[&spin[0], &spin[1], &spin_pinned, &sleep, &sleep_pinned],
            2,
        )?;
        // The waiters are asleep on the semaphore, on k.
        let asleep = |w: &Worker| {
            w.steps() >= 1
                && task::thread(w.tid.idx()).state.load(Ordering::SeqCst)
                    == task::ThreadState::Sleeping
        };
        wait_progress(
            "the waiters sleep on cpu k",
            1,
            || asleep(&wait) && asleep(&wait_pinned),
            || spin[0].steps(),
        )?;
        kassert!(wait.cpus.load(Ordering::Relaxed) == only(k));
        for w in spin.iter().chain([&sleep, &wait]) {
            crate::sched::set_affinity(w.tid, all).map_err(|e| alloc::format!("{e:?}"))?;
        }
        let _restore = Online(k);
        cpu_down(k).map_err(|e| alloc::format!("cpu_down({k}): {e}"))?;
        kassert!(
            !crate::sched::online_mask().has(k),
            "cpu {} still online",
            k
        );
        kassert!(!crate::sched::sched().cpu_active(k));
        let held = crate::sched::with_cpu_rq(k, |rq| (rq.curr(), rq.tasks().count()));
        kassert_eq!(held, (None, 0));
        // While it is offline: nothing runs there, no tick; every thread goes
        // on (the sleepers' timers moved, the waiters wake elsewhere).
        let pc = percpu::cpu(k);
        let (sw0, ticks0) = (
            pc.switches.load(Ordering::Relaxed),
            pc.ticks.load(Ordering::Relaxed),
        );
        for w in spin
            .iter()
            .chain([&spin_pinned, &sleep, &sleep_pinned, &wait, &wait_pinned])
        {
            w.cpus.store(&CpuMask::new(), Ordering::Relaxed);
        }
        sem.up();
        sem.up();
        let everyone = [
            &spin[0],
            &spin[1],
            &spin_pinned,
            &sleep,
            &sleep_pinned,
            &wait,
            &wait_pinned,
        ];
        wait_steps("every thread runs while cpu k is offline", &everyone, 5)?;
        let (sw1, ticks1) = (
            pc.switches.load(Ordering::Relaxed),
            pc.ticks.load(Ordering::Relaxed),
        );
        let seen = everyone
            .iter()
            .fold(CpuMask::new(), |m, w| m.or(&w.cpus.load(Ordering::Relaxed)));
        let placed: Vec<usize> = everyone.iter().map(|w| w.cpu()).collect();
        kprintln!(
        "    cpu {} offline: threads on cpus {:?} (seen {}), its switches {} -> {}, ticks {} -> {}",
        k,
        placed,
        seen,
        sw0,
        sw1,
        ticks0,
        ticks1
    );
        kassert!(
            sw1 == sw0,
            "cpu {} switched while offline ({} -> {})",
            k,
            sw0,
            sw1
        );
        kassert!(
            ticks1 == ticks0,
            "cpu {} ticked while offline ({} -> {})",
            k,
            ticks0,
            ticks1
        );
        kassert!(
            seen.is_subset(&others),
            "ran on {} while cpu {} was offline",
            seen,
            k
        );
        kassert!(placed.iter().all(|&c| c != k.index()));
        // The pinned ones had their affinity broken (Linux's treatment).
        for w in [&spin_pinned, &sleep_pinned, &wait_pinned] {
            kassert_eq!(w.allowed(), CpuMask::all());
        }
        // Refused, changing nothing.
        kassert_eq!(cpu_down(k), Err(HotplugError::AlreadyOffline));
        kassert_eq!(cpu_down(CpuId::BOOT), Err(HotplugError::BootCpu));
        kassert_eq!(cpu_up(CpuId::BOOT), Err(HotplugError::BootCpu));
        let beyond = CpuId::new(crate::sched::nr_rqs()).ok_or("no CPU id")?;
        kassert_eq!(cpu_up(beyond), Err(HotplugError::NoSuchCpu));
        // Back online: it takes threads again (one moved there by its
        // affinity: with more CPUs than threads, balancing has no reason to).
        cpu_up(k).map_err(|e| alloc::format!("cpu_up({k}): {e}"))?;
        kassert!(crate::sched::online_mask().has(k));
        kassert_eq!(cpu_up(k), Err(HotplugError::AlreadyOnline));
        spin[0].cpus.store(&CpuMask::new(), Ordering::Relaxed);
        crate::sched::set_affinity(spin[0].tid, only(k)).map_err(|e| alloc::format!("{e:?}"))?;
        wait_progress(
            "a thread runs on cpu k again",
            1,
            || spin[0].cpus.load(Ordering::Relaxed).has(k),
            || everyone.iter().map(|w| w.steps()).sum(),
        )?;
        kassert!(pc.switches.load(Ordering::Relaxed) > sw1);
        for w in spin
            .into_iter()
            .chain([spin_pinned, sleep, sleep_pinned, wait, wait_pinned])
        {
            w.stop()?;
        }
        Ok(())
    }
);

ktest_smp!(smp_cpu_offline_online_repeatedly, 2, || {
    // Every secondary CPU goes down and up a few times while threads
    // allowed everywhere keep yielding and sleeping: none is lost (each
    // keeps making steps), and at the end every CPU is online.
    let n = crate::sched::nr_cpus();
    let all = crate::sched::online_mask();
    let ws = (0..n + 2)
        .map(|i| {
            let kind = if i % 2 == 0 {
                Kind::Spinner
            } else {
                Kind::Sleeper
            };
            Worker::spawn("hp_rep", kind, all, None)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let refs: Vec<&Worker> = ws.iter().collect();
    for round in 0..3 {
        for c in CpuId::range(n).skip(1) {
            let _restore = Online(c);
            cpu_down(c).map_err(|e| alloc::format!("round {round}: cpu_down({c}): {e}"))?;
            wait_steps("threads go on with a CPU offline", &refs, 2)?;
            cpu_up(c).map_err(|e| alloc::format!("round {round}: cpu_up({c}): {e}"))?;
        }
    }
    wait_steps("threads go on with every CPU back", &refs, 2)?;
    kassert_eq!(crate::sched::online_mask(), all);
    drop(refs);
    for w in ws {
        w.stop()?;
    }
    Ok(())
});
