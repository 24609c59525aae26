//! Sync primitives under contention: no lost wakeup, mutual exclusion, FIFO
//! order through the channel.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use sched::{PreemptMode, TaskParams};

use super::{set_preempt, tick_ns};
use crate::sync::{Channel, Mutex, Semaphore, WaitQueue};
use crate::task;
use crate::{kassert, kassert_eq, ktest};

fn spawn_n(
    n: usize,
    f: impl Fn(usize) + Send + Sync + Clone + 'static,
) -> Result<Vec<task::Tid>, alloc::string::String> {
    (0..n)
        .map(|i| {
            let f = f.clone();
            task::spawn("worker", TaskParams::default(), move || f(i))
                .map_err(|e| alloc::format!("{e:?}"))
        })
        .collect()
}

fn join_all(tids: Vec<task::Tid>) -> Result<(), alloc::string::String> {
    for t in tids {
        task::join(t).map_err(|e| alloc::format!("{e:?}"))?;
    }
    Ok(())
}

ktest!(sync_mutex_contention, || {
    // 4 threads x 1000 lock/unlock around a non-atomic read-modify-write that
    // sometimes yields while holding the lock (so the others block on it).
    set_preempt(PreemptMode::Full);
    let m = Arc::new(Mutex::new(0u64));
    let tids = spawn_n(4, {
        let m = m.clone();
        move |i| {
            for k in 0..1000 {
                let mut g = m.lock();
                let v = *g;
                if (k + i) % 64 == 0 {
                    crate::sched::yield_now();
                }
                *g = v + 1;
            }
        }
    })?;
    join_all(tids)?;
    kassert_eq!(*m.lock(), 4000);
    Ok(())
});

ktest!(sync_semaphore_limit, || {
    // A semaphore of 2 units, 4 threads x 300 down/up: never more than 2
    // holders at once, every unit comes back.
    let sem = Arc::new(Semaphore::new(2));
    let inside = Arc::new(AtomicI64::new(0));
    let max_inside = Arc::new(AtomicI64::new(0));
    let tids = spawn_n(4, {
        let (sem, inside, max_inside) = (sem.clone(), inside.clone(), max_inside.clone());
        move |i| {
            for k in 0..300 {
                sem.down();
                let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                max_inside.fetch_max(n, Ordering::SeqCst);
                if (k + i) % 16 == 0 {
                    crate::sched::yield_now();
                }
                inside.fetch_sub(1, Ordering::SeqCst);
                sem.up();
            }
        }
    })?;
    join_all(tids)?;
    kassert!(
        max_inside.load(Ordering::SeqCst) <= 2,
        "{} holders at once",
        max_inside.load(Ordering::SeqCst)
    );
    kassert_eq!(sem.count(), 2);
    Ok(())
});

ktest!(sync_channel_in_order, || {
    // One producer, one consumer, 10k messages through an 8-slot channel: all
    // arrive, in order; both sides block many times.
    const N: u64 = 10_000;
    let ch = Arc::new(Channel::new(8));
    let c = ch.clone();
    let producer = task::spawn("producer", TaskParams::default(), move || {
        for i in 0..N {
            c.send(i);
        }
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let c = ch.clone();
    let bad = Arc::new(AtomicU64::new(u64::MAX));
    let b = bad.clone();
    let consumer = task::spawn("consumer", TaskParams::default(), move || {
        for i in 0..N {
            let v = c.recv();
            if v != i && b.load(Ordering::Relaxed) == u64::MAX {
                b.store(i, Ordering::Relaxed);
            }
        }
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    task::join(producer).map_err(|e| alloc::format!("{e:?}"))?;
    task::join(consumer).map_err(|e| alloc::format!("{e:?}"))?;
    kassert!(
        bad.load(Ordering::Relaxed) == u64::MAX,
        "message {} out of order",
        bad.load(Ordering::Relaxed)
    );
    kassert!(ch.is_empty());
    Ok(())
});

ktest!(sync_channel_many_producers, || {
    // 4 producers x 2500 into a 4-slot channel, 2 consumers: the sum arrives,
    // and each producer's messages stay in order.
    const PER: u64 = 2500;
    let ch = Arc::new(Channel::new(4));
    let sum = Arc::new(AtomicU64::new(0));
    let disorder = Arc::new(AtomicU64::new(0));
    let producers = spawn_n(4, {
        let ch = ch.clone();
        move |p| {
            for i in 0..PER {
                ch.send((p as u64) << 32 | i);
            }
        }
    })?;
    let consumers = spawn_n(2, {
        let (ch, sum, disorder) = (ch.clone(), sum.clone(), disorder.clone());
        move |_| {
            let mut last = [None::<u64>; 4];
            for _ in 0..2 * PER {
                let v = ch.recv();
                let (p, i) = ((v >> 32) as usize, v & 0xffff_ffff);
                if last[p].is_some_and(|l| i <= l) {
                    disorder.fetch_add(1, Ordering::Relaxed);
                }
                last[p] = Some(i);
                sum.fetch_add(i, Ordering::Relaxed);
            }
        }
    })?;
    join_all(producers)?;
    join_all(consumers)?;
    kassert_eq!(sum.load(Ordering::Relaxed), 4 * (PER * (PER - 1) / 2));
    kassert_eq!(disorder.load(Ordering::Relaxed), 0);
    Ok(())
});

ktest!(sync_waitqueue_wake_all, || {
    // 8 sleepers on one queue; one wake_all releases every one of them, and a
    // wakeup sent between prepare_to_wait and schedule is not lost.
    let wq = Arc::new(WaitQueue::new());
    let go = Arc::new(AtomicU64::new(0));
    let woke = Arc::new(AtomicU64::new(0));
    let tids = spawn_n(8, {
        let (wq, go, woke) = (wq.clone(), go.clone(), woke.clone());
        move |_| {
            wq.wait_event(|| go.load(Ordering::SeqCst) != 0);
            woke.fetch_add(1, Ordering::SeqCst);
        }
    })?;
    task::sleep_ns(2 * tick_ns());
    kassert_eq!(woke.load(Ordering::SeqCst), 0);
    go.store(1, Ordering::SeqCst);
    let n = wq.wake_all();
    join_all(tids)?;
    kassert_eq!(woke.load(Ordering::SeqCst), 8);
    kassert_eq!(n, 8);
    // Early wakeup: mark sleeping, get woken before calling schedule().
    wq.prepare_to_wait();
    let me = task::current().idx();
    kassert!(
        crate::sched::try_to_wake_up(me, sched::WakeFlags::empty()),
        "the current thread was not sleeping"
    );
    crate::sched::schedule(); // must return at once: the state is running again
    wq.finish_wait();
    Ok(())
});

ktest!(sync_semaphore_wakeup_not_spent_on_satisfied_waiter, || {
    // The interleaving behind the `make ab` hang, step by step: this thread
    // is a semaphore waiter whose condition already held (it took the one
    // unit) but has not reached finish_wait yet, so it is still queued and
    // marked sleeping, at the head. A second waiter queues behind it. An
    // `up` then picks this thread (it looks asleep); finish_wait must pass
    // that wakeup on, or the second waiter sleeps on with a unit free.
    let sem = Arc::new(Semaphore::new(1));
    let q = sem.wait_queue();
    q.prepare_to_wait();
    kassert!(sem.try_down(), "the unit was not free");
    let b = task::spawn("sem-waiter", TaskParams::default(), {
        let sem = sem.clone();
        move || sem.down()
    })
    .map_err(|e| alloc::format!("{e:?}"))?;
    let bt = task::thread(b.idx());
    // Wait (yielding: a sleeping state is allowed to yield) until the second
    // waiter is queued and asleep. It only has to run a few instructions; the
    // bound is there to fail instead of hanging if it never gets there.
    let t0 = crate::arch::now_ns();
    while bt.wq_owner.load(Ordering::SeqCst) == 0
        || bt.state.load(Ordering::SeqCst) != task::ThreadState::Sleeping
    {
        if crate::arch::now_ns() - t0 > super::STALL_NS {
            q.finish_wait();
            return Err("the second waiter never went to sleep on the semaphore".into());
        }
        crate::sched::yield_now();
    }
    sem.up();
    // The wakeup went to this thread (head of the queue, state sleeping).
    kassert!(
        bt.wq_owner.load(Ordering::SeqCst) != 0,
        "up() woke the second waiter, not the satisfied head: setup wrong"
    );
    q.finish_wait_exclusive();
    // Passed on, synchronously: the second waiter is off the queue and woken.
    let passed_on = bt.wq_owner.load(Ordering::SeqCst) == 0;
    if !passed_on {
        // Release it so the test ends either way.
        sem.up();
    }
    task::join(b).map_err(|e| alloc::format!("{e:?}"))?;
    kassert!(passed_on, "the wakeup was spent on the satisfied waiter");
    kassert_eq!(sem.count(), 0);
    Ok(())
});
