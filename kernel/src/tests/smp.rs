//! Multi-CPU behaviour: every CPU runs threads, no CPU idles while others have
//! waiting work, affinity holds, cross-CPU wakeups are not lost, every CPU
//! ticks, and equal hogs share the machine equally.
//!
//! Registered with `ktest_smp!`: they run unpinned and only with at least two
//! CPUs online (reported as skipped otherwise). Bounds are derived from the
//! tick and the balance interval at run time, and are wide on purpose: under
//! TCG several vCPUs share fewer host cores, and a vCPU the host does not run
//! still sees the guest clock advance (its thread is charged for that time,
//! and an idle vCPU is woken late).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel_hal::cpu::CpuId;

use sched::TaskParams;

/// One millisecond in ns.
const MS: u64 = 1_000_000;

use super::{tick_ns, Hog};
use crate::cpumask::{only, AtomicCpuMask, CpuMask};
use crate::percpu;
use crate::sync::Semaphore;
use crate::task::{self, Tid};
use crate::{arch, kassert, kassert_eq, kprintln, kskip, ktest_smp, ktest_smp_timing};

/// A CPU-bound thread that records the CPUs it ran on.
/// Stops and joins itself when dropped unstopped (a failed test).
struct CpuHog {
    tid: Tid,
    cpus: Arc<AtomicCpuMask>,
    stop: Arc<AtomicBool>,
    joined: bool,
}

impl CpuHog {
    fn spawn(name: &'static str, mask: CpuMask) -> Result<CpuHog, alloc::string::String> {
        let cpus = Arc::new(AtomicCpuMask::new());
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (cpus.clone(), stop.clone());
        let tid = task::spawn_on(name, TaskParams::default(), mask, move || {
            let mut n = 0u32;
            while !s.load(Ordering::Relaxed) {
                n = n.wrapping_add(1);
                if n.is_multiple_of(64) {
                    c.set(arch::cpu_id(), Ordering::Relaxed);
                }
            }
        })
        .map_err(|e| alloc::format!("spawn {}: {:?}", name, e))?;
        Ok(CpuHog {
            tid,
            cpus,
            stop,
            joined: false,
        })
    }

    fn runtime_ns(&self) -> u64 {
        crate::sched::task_runtime_ns(task::thread(self.tid.idx()))
    }

    fn stop(mut self) -> Result<task::ExitStats, alloc::string::String> {
        self.joined = true;
        self.stop.store(true, Ordering::Relaxed);
        task::join(self.tid).map_err(|e| alloc::format!("join: {:?}", e))
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        if !self.joined {
            self.stop.store(true, Ordering::Relaxed);
            let _ = task::join(self.tid);
        }
    }
}

fn stop_all(hogs: Vec<CpuHog>) -> Result<(), alloc::string::String> {
    for h in hogs {
        h.stop()?;
    }
    Ok(())
}

fn all_cpus() -> CpuMask {
    crate::sched::online_mask()
}

fn busy_ns(cpu: CpuId, idle0: u64, t0: u64) -> u64 {
    let idle = percpu::cpu(cpu).idle_ns() - idle0;
    (arch::now_ns() - t0).saturating_sub(idle)
}

ktest_smp!(smp_every_cpu_runs_threads, 2, || {
    // One hog per CPU: fork balancing places each new thread on the idlest
    // CPU, so they spread, and every CPU runs one. Checked: the hogs ran on
    // every CPU and every hog ran. Functional, not timed: it waits until
    // that is so, up to 10 s of guest time (a host that keeps a vCPU off
    // for 80 ms of a 150 ms window failed a timed version of this under
    // load); how evenly they share is smp_equal_hogs_equal_shares, in the
    // timing suite under -icount.
    let n = crate::sched::nr_cpus();
    let limit_ns = 10_000_000_000;
    let idle0: Vec<u64> = CpuId::range(n).map(|c| percpu::cpu(c).idle_ns()).collect();
    let t0 = arch::now_ns();
    let hogs: Vec<CpuHog> = (0..n)
        .map(|_| CpuHog::spawn("cpuhog", all_cpus()))
        .collect::<Result<_, _>>()?;
    let seen = |hogs: &[CpuHog]| {
        hogs.iter()
            .fold(CpuMask::new(), |m, h| m.or(&h.cpus.load(Ordering::Relaxed)))
    };
    while (seen(&hogs) != all_cpus() || hogs.iter().any(|h| h.runtime_ns() == 0))
        && arch::now_ns() - t0 < limit_ns
    {
        task::sleep_ns(10_000_000);
    }
    let elapsed = arch::now_ns() - t0;
    let busy: Vec<u64> = CpuId::range(n)
        .map(|c| busy_ns(c, idle0[c.index()], t0))
        .collect();
    let rts: Vec<u64> = hogs.iter().map(|h| h.runtime_ns()).collect();
    let seen = seen(&hogs);
    let placed: Vec<usize> = hogs
        .iter()
        .map(|h| task::thread(h.tid.idx()).cpu().index())
        .collect();
    stop_all(hogs)?;
    kprintln!(
        "    {} hogs: on cpus {:?} (seen mask {}), runtimes {:?} ms, cpu busy {:?} ms of {} ms",
        n,
        placed,
        seen,
        rts.iter().map(|r| r / 1_000_000).collect::<Vec<_>>(),
        busy.iter().map(|b| b / 1_000_000).collect::<Vec<_>>(),
        elapsed / 1_000_000
    );
    kassert_eq!(seen, all_cpus());
    for (i, r) in rts.iter().enumerate() {
        kassert!(*r > 0, "hog {} never ran in {} ms", i, elapsed / 1_000_000);
    }
    Ok(())
});

ktest_smp_timing!(smp_no_idle_cpu_with_waiting_work, 2, || {
    // n + n/2 hogs (6 on 4 CPUs), all started on CPU 0, then allowed
    // everywhere. Balancing must spread them and keep every CPU busy. After a
    // settle time, no CPU may stay idle longer than the bound: a CPU that
    // runs out of work balances at once (newidle), else a busy CPU's tick
    // kicks it every BALANCE_TICKS ticks (a tickless CPU; CPU 0 keeps
    // ticking and balances at its idle interval, 1 or 2 ticks here); a pass
    // that finds only cache-hot tasks fails, and the next one after a
    // failure may take hot tasks, so at most 3 passes: 3 * BALANCE_TICKS
    // ticks, plus 2 ticks for the pulled
    // thread to be switched in and the idle period to be noticed. A time
    // bound, so a timing-suite test: under `-icount` a vCPU the host keeps
    // off loses no guest time. (Under wall-clock TCG it was doubled and
    // still missed by 8 ms once beside the lock validator; the kick's pass
    // that such a run exposed has its own test,
    // smp_nohz_kick_balances_when_newidle_fails.)
    let n = crate::sched::nr_cpus();
    let nh = n + n / 2;
    let hogs: Vec<CpuHog> = (0..nh)
        .map(|_| CpuHog::spawn("balhog", only(CpuId::BOOT)))
        .collect::<Result<_, _>>()?;
    for h in &hogs {
        crate::sched::set_affinity(h.tid, all_cpus()).map_err(|e| alloc::format!("{e:?}"))?;
    }
    let settle = 30 * tick_ns();
    task::sleep_ns(settle);
    for c in CpuId::range(n) {
        percpu::cpu(c).reset_idle_streak();
    }
    let window = (100 * tick_ns()).clamp(200_000_000, 400_000_000);
    task::sleep_ns(window);
    let streaks: Vec<u64> = CpuId::range(n)
        .map(|c| percpu::cpu(c).idle_streak_max_ns())
        .collect();
    let placed: Vec<usize> = hogs
        .iter()
        .map(|h| task::thread(h.tid.idx()).cpu().index())
        .collect();
    stop_all(hogs)?;
    let bound = (3 * crate::sched::BALANCE_TICKS + 2) * tick_ns();
    let pulls: Vec<u64> = CpuId::range(n)
        .map(|c| {
            let pc = percpu::cpu(c);
            pc.balance_pulled.load(Ordering::Relaxed) + pc.newidle_pulled.load(Ordering::Relaxed)
        })
        .collect();
    kprintln!(
        "    {} hogs on {} cpus: placed {:?}, longest idle period per cpu {:?} us (bound {} us), pulls {:?}",
        nh,
        n,
        placed,
        streaks.iter().map(|s| s / 1000).collect::<Vec<_>>(),
        bound / 1000,
        pulls
    );
    for (c, s) in streaks.iter().enumerate() {
        kassert!(*s <= bound, "cpu {} idle for {} ns (bound {})", c, s, bound);
    }
    Ok(())
});

ktest_smp!(smp_affinity_respected, 2, || {
    // A thread pinned to CPU k yields and sleeps many times while unpinned
    // hogs keep every CPU busy (so balancing and wakeup placement are
    // active): it must only ever see CPU k. Then it is re-pinned to CPU j:
    // after its next scheduling point it must only ever see CPU j.
    let n = crate::sched::nr_cpus();
    let k = CpuId::new(n - 1).ok_or("no such CPU")?;
    let j = CpuId::new(if n > 2 { 1 } else { 0 }).ok_or("no such CPU")?;
    const ITERS: u32 = 200;
    let hogs: Vec<CpuHog> = (0..n)
        .map(|_| CpuHog::spawn("bghog", all_cpus()))
        .collect::<Result<_, _>>()?;
    struct Shared {
        expect: AtomicU64,
        repinned: AtomicBool,
        phase1_done: AtomicBool,
        bad: AtomicU64,
        seen_ok: AtomicU64,
        done: AtomicBool,
    }
    let sh = Arc::new(Shared {
        expect: AtomicU64::new(k.as_u32().into()),
        repinned: AtomicBool::new(false),
        phase1_done: AtomicBool::new(false),
        bad: AtomicU64::new(u64::MAX),
        seen_ok: AtomicU64::new(0),
        done: AtomicBool::new(false),
    });
    let s2 = sh.clone();
    let tid = task::spawn_on("pinned", TaskParams::default(), only(k), move || {
        let check = |s: &Shared| {
            let cpu = arch::cpu_id().index() as u64;
            if cpu != s.expect.load(Ordering::SeqCst) {
                let _ = s
                    .bad
                    .compare_exchange(u64::MAX, cpu, Ordering::SeqCst, Ordering::SeqCst);
            } else {
                s.seen_ok.fetch_add(1, Ordering::Relaxed);
            }
        };
        for phase in 0..2 {
            for i in 0..ITERS {
                check(&s2);
                if i % 8 == 7 {
                    task::sleep_ms(1);
                } else {
                    crate::sched::yield_now();
                }
                check(&s2);
            }
            if phase == 0 {
                s2.phase1_done.store(true, Ordering::SeqCst);
                while !s2.repinned.load(Ordering::SeqCst) {
                    crate::sched::yield_now();
                }
                // One scheduling point: it moves if it is misplaced.
                crate::sched::yield_now();
                s2.expect.store(j.as_u32().into(), Ordering::SeqCst);
            }
        }
        s2.done.store(true, Ordering::SeqCst);
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    // Re-pin once phase 1 is over.
    while !sh.phase1_done.load(Ordering::SeqCst) {
        task::sleep_ms(5);
    }
    crate::sched::set_affinity(tid, only(j)).map_err(|e| alloc::format!("{e:?}"))?;
    sh.repinned.store(true, Ordering::SeqCst);
    let st = task::join(tid).map_err(|e| alloc::format!("{e:?}"))?;
    stop_all(hogs)?;
    let bad = sh.bad.load(Ordering::SeqCst);
    kprintln!(
        "    pinned to cpu {} then {}: {} checks ok, {} switches, first wrong cpu {}",
        k,
        j,
        sh.seen_ok.load(Ordering::Relaxed),
        st.nvcsw + st.nivcsw,
        if bad == u64::MAX {
            alloc::string::String::from("none")
        } else {
            alloc::format!("{}", bad)
        }
    );
    kassert!(sh.done.load(Ordering::SeqCst));
    kassert!(bad == u64::MAX, "the pinned thread ran on cpu {}", bad);
    kassert_eq!(sh.seen_ok.load(Ordering::Relaxed), 2 * 2 * ITERS as u64);
    // Errors: an empty mask and a dead thread.
    kassert_eq!(
        crate::sched::set_affinity(tid, CpuMask::new()),
        Err(crate::sched::AffinityError::NoOnlineCpu)
    );
    kassert_eq!(
        crate::sched::set_affinity(tid, only(CpuId::BOOT)),
        Err(crate::sched::AffinityError::NoSuchThread)
    );
    Ok(())
});

ktest_smp!(smp_pingpong_no_lost_wakeups, 2, || {
    // Two threads pinned to different CPUs hand a token back and forth
    // through two semaphores, 10k round trips: every `up` wakes the other
    // CPU's thread through its wake list and a reschedule IPI (or, while
    // that CPU's idle thread polls, a kick it sees without one). A lost
    // wakeup hangs both; the test fails with the counts when they stop
    // moving for 2 s (a progress check; no total deadline). Reports the cross-CPU round trip (two wakeups,
    // each with its IPI or kick and switch from the idle thread).
    const ROUNDS: u64 = 10_000;
    let n = crate::sched::nr_cpus();
    let cpu = |i| CpuId::new(i).ok_or("no such CPU");
    let (ca, cb) = (cpu(n - 1)?, cpu(n - 2)?);
    struct Pp {
        a: Semaphore,
        b: Semaphore,
        na: AtomicU64,
        nb: AtomicU64,
    }
    let pp = Arc::new(Pp {
        a: Semaphore::new(0),
        b: Semaphore::new(0),
        na: AtomicU64::new(0),
        nb: AtomicU64::new(0),
    });
    // Reschedule requests received: IPIs, and kicks a polling idle CPU saw
    // without one.
    let kicks = |c: CpuId| {
        let pc = percpu::cpu(c);
        (
            pc.ipis.load(Ordering::Relaxed),
            pc.ipis_elided.load(Ordering::Relaxed),
        )
    };
    let (ipis0, elided0) = CpuId::range(n)
        .map(kicks)
        .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
    let p = pp.clone();
    let tb = task::spawn_on("pong", TaskParams::default(), only(cb), move || {
        for _ in 0..ROUNDS {
            p.b.down();
            p.nb.fetch_add(1, Ordering::SeqCst);
            p.a.up();
        }
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let p = pp.clone();
    let t0 = Arc::new(AtomicU64::new(0));
    let t1 = Arc::new(AtomicU64::new(0));
    let (t0c, t1c) = (t0.clone(), t1.clone());
    let ta = task::spawn_on("ping", TaskParams::default(), only(ca), move || {
        t0c.store(arch::now_ns(), Ordering::SeqCst);
        for _ in 0..ROUNDS {
            p.b.up();
            p.a.down();
            p.na.fetch_add(1, Ordering::SeqCst);
        }
        t1c.store(arch::now_ns(), Ordering::SeqCst);
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    // A progress check, not a deadline: the round trips must keep
    // advancing; a lost wakeup stops both counters.
    let p = pp.clone();
    super::wait_progress(
        "ping-pong (a lost wakeup?)",
        10,
        || task::has_exited(ta) && task::has_exited(tb),
        || p.na.load(Ordering::SeqCst) + p.nb.load(Ordering::SeqCst),
    )
    .map_err(|e| {
        alloc::format!(
            "{e}: ping {} / pong {} of {} rounds",
            pp.na.load(Ordering::SeqCst),
            pp.nb.load(Ordering::SeqCst),
            ROUNDS
        )
    })?;
    let sa = task::join(ta).map_err(|e| alloc::format!("{e:?}"))?;
    let sb = task::join(tb).map_err(|e| alloc::format!("{e:?}"))?;
    let (ipis1, elided1) = CpuId::range(n)
        .map(kicks)
        .fold((0, 0), |(a, b), (x, y)| (a + x, b + y));
    let (ipis, elided) = (ipis1 - ipis0, elided1 - elided0);
    let dt = t1.load(Ordering::SeqCst) - t0.load(Ordering::SeqCst);
    let rt = dt / ROUNDS;
    kprintln!(
        "    cross-cpu ping-pong (cpu {} <-> {}): {} round trips in {} ms: {} ns per round trip ({} ns per wakeup), {} IPIs, {} polled kicks, wakeups {} / {}",
        ca,
        cb,
        ROUNDS,
        dt / 1_000_000,
        rt,
        rt / 2,
        ipis,
        elided,
        sa.nr_wakeups,
        sb.nr_wakeups
    );
    kassert_eq!(pp.na.load(Ordering::SeqCst), ROUNDS);
    kassert_eq!(pp.nb.load(Ordering::SeqCst), ROUNDS);
    // Each side sleeps in nearly every round (the partner is on another CPU
    // and takes longer than the few instructions before `down`).
    kassert!(
        sa.nr_wakeups + sb.nr_wakeups >= ROUNDS,
        "only {} + {} wakeups",
        sa.nr_wakeups,
        sb.nr_wakeups
    );
    kassert!(
        ipis + elided > 0,
        "no reschedule IPI was received and no polling CPU was kicked"
    );
    Ok(())
});

/// Per CPU over `d_ns` of sleep by the calling thread: the tick interrupts
/// taken and the late-tick counters' growth ([`arch::TickStats`]); and the
/// time slept.
fn ticks_over(d_ns: u64) -> (Vec<u64>, Vec<arch::TickStats>, u64) {
    let n = crate::sched::nr_cpus();
    let stats =
        || -> Vec<arch::TickStats> { CpuId::range(n).map(arch::timer_tick_stats).collect() };
    let t0 = arch::now_ns();
    let before: Vec<u64> = CpuId::range(n)
        .map(|c| percpu::cpu(c).ticks.load(Ordering::Relaxed))
        .collect();
    let late0 = stats();
    task::sleep_ns(d_ns);
    let dt = arch::now_ns() - t0;
    let got = CpuId::range(n)
        .map(|c| percpu::cpu(c).ticks.load(Ordering::Relaxed) - before[c.index()])
        .collect();
    let late = stats()
        .iter()
        .zip(&late0)
        .map(|(a, b)| arch::TickStats {
            late: a.late - b.late,
            merged: a.merged - b.merged,
            misarmed: a.misarmed - b.misarmed,
        })
        .collect();
    (got, late, dt)
}

ktest_smp_timing!(smp_ticks_busy_cpus_tick_idle_cpus_stop, 2, || {
    // Busy: with a hog pinned to every CPU, each CPU's tick keeps running at
    // hz over 200 ms, and idle CPUs stop theirs (nohz). What is checked on a
    // busy CPU is the kernel's part: its tick deadline advanced through
    // every period (the interrupts taken plus the periods late ticks merged,
    // less up to a period per late tick, which restarts the grid one period
    // after it, and one at each end of the window), the timer was armed for
    // every late tick (`misarmed`: a tick deadline lost or overwritten by a
    // later one fails here), and no period ticked twice (at most 1.5x + 2
    // interrupts). When an armed interrupt is delivered is the machine's:
    // the timing suite runs under QEMU -icount with vCPUs round-robin on one
    // host thread, where a vCPU waits for its turn and a tick arrives late
    // and merges the ones it covered. In the full 4-CPU x86_64 suite, after
    // `smp_equal_hogs_equal_shares` left pairs of CPUs ticking within
    // microseconds of each other, CPU 0 took 24 to 38 tick interrupts of ~50
    // to ~99 periods (every late one armed in time; one tick handler ran 52
    // ms of guest time with interrupts off, whole round-robin turns passing
    // in sections that wait for nothing), so the interrupt count itself is
    // not bounded below here.
    let n = crate::sched::nr_cpus();
    let hogs: Vec<Hog> = (0..n)
        .map(|_| Hog::spawn("tickhog", TaskParams::default()))
        .collect::<Result<_, _>>()?;
    for (c, h) in CpuId::range(n).zip(&hogs) {
        crate::sched::set_affinity(h.tid, only(c)).map_err(|e| alloc::format!("{e:?}"))?;
    }
    task::sleep_ms(20);
    let (busy, late, dt) = ticks_over(200 * MS);
    for h in hogs {
        h.stop()?;
    }
    let expect = dt / tick_ns();
    // Idle (nohz=on): CPUs other than CPU 0 stop their tick when they halt;
    // CPU 0 keeps ticking. An idle CPU may still wake for a stray wakeup or
    // a balance kick, and restarts its tick while it runs: allow a quarter.
    task::sleep_ms(20);
    let (idle, _, idt) = ticks_over(200 * MS);
    let iexpect = idt / tick_ns();
    let merged: Vec<(u64, u64)> = late.iter().map(|l| (l.late, l.merged)).collect();
    kprintln!(
        "    ticks per cpu over {} ms busy: {:?} (late, merged periods: {:?}), over {} ms idle: {:?} (expected ~{} / ~{}, nohz {})",
        dt / MS,
        busy,
        merged,
        idt / MS,
        idle,
        expect,
        iexpect,
        crate::sched::NOHZ_IDLE.load(Ordering::Relaxed)
    );
    for (c, (g, l)) in busy.iter().zip(&late).enumerate() {
        kassert!(
            l.misarmed == 0,
            "busy cpu {c}: {} late ticks the timer was not armed for",
            l.misarmed
        );
        kassert!(
            g + l.merged + l.late + 2 >= expect,
            "busy cpu {c}: {g} ticks and {} merged periods in {} late ticks, expected ~{expect} periods",
            l.merged,
            l.late
        );
        kassert!(
            *g <= expect * 3 / 2 + 2,
            "busy cpu {c}: {g} ticks, expected ~{expect}"
        );
    }
    kassert!(
        idle[0] * 2 >= iexpect,
        "cpu 0 must keep ticking: {} of ~{iexpect}",
        idle[0]
    );
    if crate::sched::NOHZ_IDLE.load(Ordering::Relaxed) {
        for (c, g) in idle.iter().enumerate().skip(1) {
            kassert!(
                *g * 4 <= iexpect,
                "idle cpu {c} ticked {g} times of ~{iexpect}: tick not stopped"
            );
        }
    }
    Ok(())
});

/// How long `smp_nohz_idle_cpu_is_kicked_to_pull` waits for a hog to leave
/// CPU 0 (see the test).
const MOVE_BOUND_NS: u64 = 5_000_000_000;

ktest_smp!(smp_nohz_idle_cpu_is_kicked_to_pull, 2, || {
    // Two hogs held on CPU 0 by affinity while the other CPUs go idle with
    // their tick stopped; then the affinity is widened. A tickless CPU does
    // not balance on its own: CPU 0's balancing tick must kick one
    // (`nohz_balance_kick`), which pulls a hog. Expected within a few
    // balance passes (a kick every BALANCE_TICKS, pulls are cache-cold after
    // a few passes), printed; the bound only catches "never" (without kicks
    // no hog moves here at all), so it is the 5 s every wait on another CPU
    // gets: a kicked vCPU that the host keeps off its core for longer than
    // the 100 ticks this used to allow does not fail it.
    if !crate::sched::NOHZ_IDLE.load(Ordering::Relaxed) {
        kskip!("NOHZ_IDLE is off, boot argument nohz=off: no CPU stops its tick");
    }
    // This thread stays on CPU 0 too: its own sleeps must not make another
    // CPU leave idle (and newidle-balance on the way back).
    let me = task::current_tid();
    crate::sched::set_affinity(me, only(CpuId::BOOT)).map_err(|e| alloc::format!("{e:?}"))?;
    crate::sched::yield_now();
    let hogs: Vec<Hog> = (0..2)
        .map(|_| Hog::spawn("nohzhog", TaskParams::default()))
        .collect::<Result<_, _>>()?;
    for h in &hogs {
        crate::sched::set_affinity(h.tid, only(CpuId::BOOT))
            .map_err(|e| alloc::format!("{e:?}"))?;
    }
    task::sleep_ms(30);
    let n = crate::sched::nr_cpus();
    let kicks = |c: CpuId| percpu::cpu(c).nohz_kicks.load(Ordering::Relaxed);
    let tickless = CpuId::range(n)
        .skip(1)
        .any(|c| percpu::cpu(c).nohz_idle.load(Ordering::Relaxed));
    let k0: u64 = CpuId::range(n).skip(1).map(kicks).sum();
    for h in &hogs {
        crate::sched::set_affinity(h.tid, all_cpus()).map_err(|e| alloc::format!("{e:?}"))?;
    }
    let t_widened = arch::now_ns();
    let deadline = t_widened + MOVE_BOUND_NS;
    let moved = loop {
        let off0 = hogs
            .iter()
            .any(|h| task::thread(h.tid.idx()).cpu().index() != 0);
        if off0 || arch::now_ns() >= deadline {
            break off0;
        }
        task::sleep_ms(2);
    };
    let took_ticks = (arch::now_ns() - t_widened) / tick_ns();
    let k1: u64 = CpuId::range(n).skip(1).map(kicks).sum();
    for h in hogs {
        h.stop()?;
    }
    crate::sched::set_affinity(me, all_cpus()).map_err(|e| alloc::format!("{e:?}"))?;
    kprintln!(
        "    tickless idle cpus seen: {tickless}; a hog left cpu 0: {moved} (after {took_ticks} ticks); kicks {}",
        k1 - k0
    );
    kassert!(tickless, "no CPU stopped its tick while idle");
    // Normally the kick moved it; a CPU that left idle for other work (a
    // background thread) may also pull on its way back (newidle), so the kick
    // count is reported, not required. Without kicks no hog moves here.
    kassert!(
        moved,
        "no hog left CPU 0 within {} ms",
        MOVE_BOUND_NS / 1_000_000
    );
    Ok(())
});

/// Kicks a tickless CPU may take, in `smp_nohz_kick_balances_when_newidle_fails`,
/// before a hog has left CPU 0.
const KICKS_TO_PULL: u64 = 8;

ktest_smp!(smp_nohz_kick_balances_when_newidle_fails, 2, || {
    // A kicked tickless CPU balances as Linux's kicked idle load balancer
    // does (`_nohz_idle_balance`: the periodic idle pass, which NI_RANDOM
    // does not skip and which counts its failures, so a cache-hot task may
    // go after MC's `cache_nice_tries` of 1), not as a newly idle CPU. Here
    // every other CPU's newidle success ratio is 0, where CPUs whose newidle
    // passes keep failing settle and NI_RANDOM runs 2 in 1024 of them; two
    // hogs start on CPU 0 and may run anywhere at once. A hog must leave
    // CPU 0 within KICKS_TO_PULL kicks: the first pass per CPU may fail on
    // a hot task, the second may take it; the rest is room for a pass not
    // due yet. Counted in kicks, not time: a loaded host makes ticks, and
    // so kicks, late. The kicks made newidle passes before, and a hog left
    // CPU 0 after none of 10 runs' first 8 kicks.
    if !crate::sched::NOHZ_IDLE.load(Ordering::Relaxed) {
        kskip!("NOHZ_IDLE is off, boot argument nohz=off: no tickless CPU to kick");
    }
    let s = crate::sched::sched();
    let n = crate::sched::nr_cpus();
    let me = task::current_tid();
    crate::sched::set_affinity(me, only(CpuId::BOOT)).map_err(|e| alloc::format!("{e:?}"))?;
    crate::sched::yield_now();
    let others = || CpuId::range(n).skip(1);
    let saved: Vec<Vec<u32>> = others()
        .map(|c| {
            (0..s.domains(c).len())
                .map(|l| s.newidle_stats(c, l).ratio)
                .collect()
        })
        .collect();
    let set_ratios = |ratio: &dyn Fn(usize, usize) -> u32| {
        for (i, c) in others().enumerate() {
            for l in 0..saved[i].len() {
                s.set_newidle_ratio(c, l, ratio(i, l));
            }
        }
    };
    set_ratios(&|_, _| 0);
    let kicks = || -> u64 {
        others()
            .map(|c| percpu::cpu(c).nohz_kicks.load(Ordering::Relaxed))
            .sum()
    };
    let k0 = kicks();
    let hogs: Vec<Hog> = (0..2)
        .map(|_| Hog::spawn_on("kickhog", TaskParams::default(), only(CpuId::BOOT)))
        .collect::<Result<_, _>>()?;
    for h in &hogs {
        crate::sched::set_affinity(h.tid, all_cpus()).map_err(|e| alloc::format!("{e:?}"))?;
    }
    let deadline = arch::now_ns() + MOVE_BOUND_NS;
    let (moved, used) = loop {
        let off0 = hogs
            .iter()
            .any(|h| task::thread(h.tid.idx()).cpu().index() != 0);
        let used = kicks() - k0;
        if off0 || used > KICKS_TO_PULL || arch::now_ns() >= deadline {
            break (off0, used);
        }
        task::sleep_ms(1);
    };
    for h in hogs {
        h.stop()?;
    }
    set_ratios(&|i, l| saved[i][l]);
    crate::sched::set_affinity(me, all_cpus()).map_err(|e| alloc::format!("{e:?}"))?;
    kprintln!(
        "    newidle ratio 0 on cpus 1..={}: a hog left cpu 0: {moved}, after {used} kicks",
        n - 1
    );
    kassert!(
        moved && used <= KICKS_TO_PULL,
        "no hog left cpu 0 after {} kicks (bound {})",
        used,
        KICKS_TO_PULL
    );
    Ok(())
});

ktest_smp_timing!(smp_equal_hogs_equal_shares, 2, || {
    // N = 2M equal hogs on M CPUs: balancing settles at two per CPU (it only
    // moves a task when the busiest CPU has two more than the puller, so 2/2
    // is stable), and EEVDF splits each CPU evenly (lag within about a tick).
    // Over a 100-tick window the per-pair error is a few percent; the test
    // thread's own short runs and TCG noise (a vCPU the host does not run
    // charges its current hog) add more. Bound: every hog within +-25% of
    // the mean, i.e. max/min <= 1.67.
    let m = crate::sched::nr_cpus();
    let nh = 2 * m;
    let hogs: Vec<CpuHog> = (0..nh)
        .map(|_| CpuHog::spawn("fairhog", all_cpus()))
        .collect::<Result<_, _>>()?;
    task::sleep_ns(25 * tick_ns());
    // Each hog's runtime is read with the time of the read, and its share is
    // its runtime over its own interval: the reads of one pass are not one
    // instant (the test thread may wait for a runqueue lock whose holder's
    // vCPU is off its turn under -icount's round-robin; seen: 120 ms in the
    // middle of a pass), and the shares must not depend on where it waited.
    let read = |h: &CpuHog| (h.runtime_ns(), arch::now_ns());
    let r0: Vec<(u64, u64)> = hogs.iter().map(read).collect();
    let window = (100 * tick_ns()).clamp(200_000_000, 400_000_000);
    task::sleep_ns(window);
    let r1: Vec<(u64, u64)> = hogs.iter().map(read).collect();
    let placed: Vec<usize> = hogs
        .iter()
        .map(|h| task::thread(h.tid.idx()).cpu().index())
        .collect();
    stop_all(hogs)?;
    // Runtime per `window` of the hog's own interval.
    let d: Vec<u64> = r0
        .iter()
        .zip(&r1)
        .map(|(&(a, ta), &(b, tb))| {
            ((b - a) as u128 * window as u128 / (tb - ta).max(1) as u128) as u64
        })
        .collect();
    let mean = d.iter().sum::<u64>() / nh as u64;
    let (min, max) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
    let spread_pct = |x: u64| (x as i64 - mean as i64) * 100 / mean.max(1) as i64;
    kprintln!(
        "    {} hogs on {} cpus over {} ms: runtimes {:?} ms, mean {} ms, spread {}%..+{}% (placed {:?})",
        nh,
        m,
        window / 1_000_000,
        d.iter().map(|x| x / 1_000_000).collect::<Vec<_>>(),
        mean / 1_000_000,
        spread_pct(min),
        spread_pct(max),
        placed
    );
    kassert!(mean > 0);
    for (i, x) in d.iter().enumerate() {
        kassert!(
            *x * 4 >= mean * 3 && *x * 4 <= mean * 5,
            "hog {} got {} ns, mean {} ns",
            i,
            x,
            mean
        );
    }
    Ok(())
});

/// How long the FIFO 50 spinner of `smp_rt_spinners_woken_on_one_cpu_spread`
/// spins at most waiting for the FIFO 40 to run beside it.
const RT_SPREAD_BOUND_NS: u64 = 5_000_000_000;

/// Sums an RT balance counter over the online CPUs.
fn rt_moves(f: fn(&sched::rq::RqStats) -> u64) -> u64 {
    all_cpus()
        .cpus()
        .map(|c| crate::sched::with_cpu_rq(c, |rq| f(&rq.stats)))
        .sum()
}

ktest_smp!(smp_rt_spinners_woken_on_one_cpu_spread, 2, || {
    // RT push: a FIFO 50 and a FIFO 40 spinner, asleep with CPU 0 as their
    // previous CPU, are woken back to back by this thread (fair) on CPU 0
    // with preemption disabled, as Linux's `task_woken_rt` case: RT
    // placement (`select_task_rq_rt`) sees a fair task running on CPU 0 and
    // queues both there, the 40 behind the 50. When CPU 0 switches to the
    // 50, it must push the 40 to another CPU, where it runs at once. The 50
    // spins until the 40 has run, at most 5 s: without a push the 40 runs
    // only after the 50 stops, on CPU 0, and the test fails. The bound only
    // catches "never" (a vCPU the host keeps off its core must not fail
    // it); the time taken and the push/pull counts are printed.
    Ok(rt_pair_on_cpu0(false)?)
});

ktest_smp!(smp_rt_waiting_spinner_is_pulled, 2, || {
    // RT pull: as `smp_rt_spinners_woken_on_one_cpu_spread`, but every
    // other CPU runs a pinned FIFO 60 spinner when the pair wakes, so CPU 0
    // has nowhere to push the 40 and stays RT-overloaded. CPU 1's spinner
    // stops 20 ms (by its own clock) after it first sees the 50 running,
    // i.e. with the 40 queued behind it, whatever the host did to the
    // vCPUs before; CPU 1 switches to something of lower rank and must
    // pull the 40 (its own reschedule IPI makes it switch to it). Same
    // bound and report.
    Ok(rt_pair_on_cpu0(true)?)
});

/// The body of the two RT push/pull ktests: a FIFO 50 and a FIFO 40
/// spinner woken together on CPU 0; with `pull`, every other CPU first
/// held by a pinned FIFO 60 spinner, CPU 1's released 20 ms after it saw
/// the 50 running.
fn rt_pair_on_cpu0(pull: bool) -> Result<(), alloc::string::String> {
    let err = |e: &dyn core::fmt::Debug| alloc::format!("{e:?}");
    let me = task::current_tid();
    crate::sched::set_affinity(me, only(CpuId::BOOT)).map_err(|e| err(&e))?;
    crate::sched::yield_now();
    let go = Arc::new((AtomicBool::new(false), crate::sync::WaitQueue::new()));
    // The 40's CPU (+1; 0 until it ran), the 50's CPU, and whether the 50
    // saw the 40 run while it was still spinning.
    let b_cpu = Arc::new(AtomicU64::new(0));
    let a_cpu = Arc::new(AtomicU64::new(0));
    let overlap = Arc::new(AtomicBool::new(false));
    let t_go = Arc::new(AtomicU64::new(0));
    let b_after_ns = Arc::new(AtomicU64::new(0));
    // With `pull`: FIFO 60 holders on every CPU but 0, running before the
    // wakeup; CPU 1's leaves 20 ms after the 50 runs (released 20 ms after
    // the wakeup, it lost the race at 16 vCPUs on 2 host cores: CPU 0's
    // vCPU had not woken the pair yet, so the idle CPU 1 had nothing to
    // pull and CPU 0 pushed the 40 there later), the others once the 40
    // ran.
    let started = Arc::new(AtomicU64::new(0));
    let mut holders = Vec::new();
    let t0 = arch::now_ns();
    for c in all_cpus().cpus().filter(|&c| pull && c != CpuId::BOOT) {
        let (b_cpu, a_cpu, started) = (b_cpu.clone(), a_cpu.clone(), started.clone());
        let hold = move || {
            started.fetch_add(1, Ordering::Relaxed);
            // When this CPU's clock first saw the 50 running (0: not yet).
            let mut seen_ns = 0;
            loop {
                let now = arch::now_ns();
                if seen_ns == 0 && a_cpu.load(Ordering::Acquire) != 0 {
                    seen_ns = now;
                }
                let released = if c.index() == 1 {
                    seen_ns != 0 && now >= seen_ns + 20 * MS
                } else {
                    b_cpu.load(Ordering::Acquire) != 0
                };
                if released || now >= t0 + 2 * RT_SPREAD_BOUND_NS {
                    break;
                }
                core::hint::spin_loop();
            }
        };
        let h = task::spawn_on("rt-hold-60", TaskParams::fifo(60), only(c), hold)
            .map_err(|e| err(&e))?;
        holders.push(h);
    }
    while (started.load(Ordering::Relaxed) as usize) < holders.len() {
        kassert!(
            arch::now_ns() < t0 + RT_SPREAD_BOUND_NS,
            "holders did not start"
        );
        task::sleep_ms(1);
    }
    let spin_a = {
        let (go, b_cpu, a_cpu, overlap) =
            (go.clone(), b_cpu.clone(), a_cpu.clone(), overlap.clone());
        move || {
            go.1.wait_event(|| go.0.load(Ordering::Acquire));
            a_cpu.store(arch::cpu_id().index() as u64 + 1, Ordering::Release);
            let deadline = arch::now_ns() + RT_SPREAD_BOUND_NS;
            while arch::now_ns() < deadline {
                if b_cpu.load(Ordering::Acquire) != 0 {
                    overlap.store(true, Ordering::Relaxed);
                    break;
                }
                core::hint::spin_loop();
            }
        }
    };
    let spin_b = {
        let (go, b_cpu, t_go, b_after) =
            (go.clone(), b_cpu.clone(), t_go.clone(), b_after_ns.clone());
        move || {
            go.1.wait_event(|| go.0.load(Ordering::Acquire));
            b_after.store(
                arch::now_ns().saturating_sub(t_go.load(Ordering::Relaxed)),
                Ordering::Relaxed,
            );
            b_cpu.store(arch::cpu_id().index() as u64 + 1, Ordering::Release);
        }
    };
    let a = task::spawn_on(
        "rt-spin-50",
        TaskParams::fifo(50),
        only(CpuId::BOOT),
        spin_a,
    )
    .map_err(|e| err(&e))?;
    let b = task::spawn_on(
        "rt-spin-40",
        TaskParams::fifo(40),
        only(CpuId::BOOT),
        spin_b,
    )
    .map_err(|e| err(&e))?;
    // Both asleep on CPU 0 (they block at once), then allowed everywhere.
    task::sleep_ms(20);
    for t in [a, b] {
        crate::sched::set_affinity(t, all_cpus()).map_err(|e| err(&e))?;
    }
    let (push0, pull0) = (rt_moves(|s| s.nr_rt_push), rt_moves(|s| s.nr_rt_pull));
    t_go.store(arch::now_ns(), Ordering::Relaxed);
    go.0.store(true, Ordering::Release);
    crate::sched::preempt_disable();
    let woken = go.1.wake_all();
    crate::sched::preempt_enable();
    for t in [a, b].into_iter().chain(holders) {
        task::join(t).map_err(|e| err(&e))?;
    }
    let (push1, pull1) = (rt_moves(|s| s.nr_rt_push), rt_moves(|s| s.nr_rt_pull));
    crate::sched::set_affinity(me, all_cpus()).map_err(|e| err(&e))?;
    let (ca, cb) = (a_cpu.load(Ordering::Relaxed), b_cpu.load(Ordering::Relaxed));
    kprintln!(
        "    woke {woken}; FIFO 50 on cpu {}, FIFO 40 on cpu {} after {} us; overlap {}; rt pushes {} pulls {}",
        ca.wrapping_sub(1) as i64,
        cb.wrapping_sub(1) as i64,
        b_after_ns.load(Ordering::Relaxed) / 1000,
        overlap.load(Ordering::Relaxed),
        push1 - push0,
        pull1 - pull0
    );
    kassert!(
        overlap.load(Ordering::Relaxed),
        "the FIFO 40 did not run while the FIFO 50 spun ({} ms)",
        RT_SPREAD_BOUND_NS / 1_000_000
    );
    kassert!(ca != cb, "both ran on cpu {}", ca.wrapping_sub(1));
    if pull {
        kassert!(
            cb == 2,
            "the FIFO 40 ran on cpu {}, not the released cpu 1",
            cb.wrapping_sub(1)
        );
        kassert!(pull1 > pull0, "the FIFO 40 was not pulled");
    } else {
        // Moved by RT balancing: pushed by CPU 0 (or pulled by another CPU).
        kassert!(
            push1 + pull1 > push0 + pull0,
            "the FIFO 40 was not moved by RT push/pull"
        );
    }
    Ok(())
}

ktest_smp!(smp_poll_kick_racing_poll_end_is_not_lost, 2, || {
    // The waker's two steps (`kick`: raise, then look at `polling`) and the
    // idle CPU's end of polling (`end`: clear `polling`, then take the kick)
    // really at once on two CPUs, ITERS times, each time on a fresh pair of
    // flags (polling set, no kick), the two threads in lockstep so that
    // every pair is raced. Whenever the waker sends no IPI, `end` must have
    // seen the kick. Each side stores its flag and then loads the other's
    // (store buffering): the store must not pass the load
    // (`crate::sched::idle`'s `poll` module says why a fence sits between).
    use alloc::vec::Vec;
    use core::sync::atomic::{AtomicBool, AtomicUsize};
    const ITERS: usize = 20_000;
    struct Race {
        /// (kick, polling) of each round.
        flags: Vec<(AtomicBool, AtomicBool)>,
        /// The waker's answer (IPI needed) and `end`'s (kick seen).
        ipi: Vec<AtomicBool>,
        seen: Vec<AtomicBool>,
        /// Rounds done by the waker and by the idle side.
        done: [AtomicUsize; 2],
        abort: AtomicBool,
    }
    let race = alloc::sync::Arc::new(Race {
        flags: (0..ITERS)
            .map(|_| (AtomicBool::new(false), AtomicBool::new(true)))
            .collect(),
        ipi: (0..ITERS).map(|_| AtomicBool::new(false)).collect(),
        seen: (0..ITERS).map(|_| AtomicBool::new(false)).collect(),
        done: [AtomicUsize::new(0), AtomicUsize::new(0)],
        abort: AtomicBool::new(false),
    });
    // Side 0 (the waker) and side 1 (the idle CPU): round i starts when the
    // other side finished round i - 1.
    let side = |me: usize| {
        let r = race.clone();
        move || {
            for i in 0..ITERS {
                while r.done[1 - me].load(Ordering::Acquire) < i {
                    if r.abort.load(Ordering::Relaxed) {
                        return;
                    }
                    core::hint::spin_loop();
                }
                let (kick, polling) = &r.flags[i];
                if me == 0 {
                    r.ipi[i].store(crate::sched::poll::kick(kick, polling), Ordering::Relaxed);
                } else {
                    r.seen[i].store(crate::sched::poll::end(kick, polling), Ordering::Relaxed);
                }
                r.done[me].store(i + 1, Ordering::Release);
            }
        }
    };
    let n = crate::sched::nr_cpus();
    let cpu = |i| CpuId::new(i).ok_or("no such CPU");
    let only = crate::cpumask::only;
    let params = ::sched::TaskParams::default();
    let waker = crate::task::spawn_on("kicker", params, only(cpu(n - 1)?), side(0))
        .map_err(|e| alloc::format!("{e:?}"))?;
    let idle = match crate::task::spawn_on("poll-end", params, only(cpu(n - 2)?), side(1)) {
        Ok(t) => t,
        Err(e) => {
            race.abort.store(true, Ordering::Relaxed);
            let _ = crate::task::join(waker);
            return Err(alloc::format!("{e:?}").into());
        }
    };
    let r = race.clone();
    let waited = super::wait_progress(
        "poll kick race",
        10,
        || crate::task::has_exited(waker) && crate::task::has_exited(idle),
        || (r.done[0].load(Ordering::Relaxed) + r.done[1].load(Ordering::Relaxed)) as u64,
    );
    race.abort.store(true, Ordering::Relaxed);
    let _ = crate::task::join(waker);
    let _ = crate::task::join(idle);
    waited?;
    let lost: Vec<usize> = (0..ITERS)
        .filter(|&i| !race.ipi[i].load(Ordering::Relaxed) && !race.seen[i].load(Ordering::Relaxed))
        .collect();
    let ipis = (0..ITERS)
        .filter(|&i| race.ipi[i].load(Ordering::Relaxed))
        .count();
    let seen = (0..ITERS)
        .filter(|&i| race.seen[i].load(Ordering::Relaxed))
        .count();
    crate::kprintln!(
        "    {} rounds: {} IPIs, {} kicks seen by end, {} lost (neither)",
        ITERS,
        ipis,
        seen,
        lost.len()
    );
    crate::kassert!(
        lost.is_empty(),
        "{} of {} rounds lost the kick (no IPI and end saw no kick), first round {:?}",
        lost.len(),
        ITERS,
        lost.first()
    );
    Ok(())
});
