//! lcbench's schbench (`sim run ... lcschbench`): the program `make
//! linux-compare` runs in Linux and in our kernel, one step a syscall
//! (sim/src/workloads.rs, "lcbench's schbench").

mod common;
use common::{metric, run, same_run_twice};

/// `qemu:N`'s measured null syscall, ns (sim/src/machine.rs, `qemu_costs`).
const QEMU_SYSCALL_NS: f64 = 1_379.0;

#[test]
fn a_lone_workers_request_is_its_sleep_and_its_walk() {
    // One worker: nothing else wants its CPU while it sleeps and walks, so
    // a request is its 100 us sleep, its 50 us walk (+-10%) and the timer
    // wakeup's switch back in (under 25 us on these machines: a switch
    // and, on qemu:4, the vCPU's turn), and a round adds the posts' and
    // waits' syscalls and their wakeups and switches.
    for machine in ["flat:1", "flat:4", "qemu:4"] {
        let r = run(&format!(
            "--machine {machine} --ms 200 --seed 1 lcschbench t=1 sleep_us=100 work_us=50"
        ));
        let (p50, p99) = (metric(&r, "request_p50_us"), metric(&r, "request_p99_us"));
        assert!(p50 >= 100.0 + 45.0, "{machine}: request p50 {p50} us");
        assert!(
            p99 <= 100.0 + 55.0 + 25.0,
            "{machine}: request p99 {p99} us"
        );
        let rps = metric(&r, "rps");
        assert!(rps <= 1e6 / 145.0, "{machine}: {rps} requests a second");
        assert!(rps >= 1e6 / 300.0, "{machine}: {rps} requests a second");
    }
}

#[test]
fn the_wakeup_latency_starts_before_the_posts_syscall() {
    // lcbench stamps the post's time, then makes its FUTEX_WAKE syscall:
    // every latency holds at least that syscall's entry (-10% jitter).
    let r = run("--machine qemu:4 --ms 300 --seed 2 lcschbench t=1");
    let p50 = metric(&r, "wakeup_p50_us");
    assert!(
        p50 * 1000.0 >= 0.9 * QEMU_SYSCALL_NS,
        "wakeup p50 {p50} us below the post's syscall"
    );
}

#[test]
fn the_message_thread_serves_every_worker() {
    // Four workers on four CPUs (flat:4: CPUs that do not share a host
    // thread, as qemu:4's vCPUs do): their sleeps and walks overlap, so the
    // requests a second grow well past one worker's (a message thread that
    // posted only its first listed worker would leave them at one's).
    let one = run("--machine flat:4 --ms 300 --seed 3 lcschbench t=1");
    let four = run("--machine flat:4 --ms 300 --seed 3 lcschbench t=4");
    let (r1, r4) = (metric(&one, "rps"), metric(&four, "rps"));
    assert!(r4 >= 2.0 * r1, "t=4: {r4} against t=1: {r1}");
    // Two groups of two: the same work as one group of four, each message
    // thread serving its own.
    let two = run("--machine flat:4 --ms 300 --seed 3 lcschbench m=2 t=2");
    let r2 = metric(&two, "rps");
    assert!(r2 >= 2.0 * r1, "m=2 t=2: {r2} against t=1: {r1}");
}

#[test]
fn a_request_wakes_at_most_its_worker_and_its_message_thread() {
    // A post wakes a sleeper only: per request at most the message
    // thread's post of the worker and the worker's post of the message
    // thread wake anyone (and each timed sleep ends in one timer wakeup).
    for w in ["t=4 sleep_us=0 work_us=10", "t=8 sleep_us=50 work_us=20"] {
        let r = run(&format!(
            "--machine qemu:4 --ms 200 --seed 4 lcschbench {w}"
        ));
        let requests = metric(&r, "rps") * r.sim_ns as f64 / 1e9;
        let sleeps = if w.contains("sleep_us=0") {
            0.0
        } else {
            requests
        };
        let bound = 2.0 * requests + sleeps + 16.0;
        assert!(requests > 100.0, "{w}: {requests} requests");
        assert!(
            (r.ctr.wakeups as f64) <= bound,
            "{w}: {} wakeups for {requests} requests",
            r.ctr.wakeups
        );
    }
}

#[test]
fn the_same_seed_gives_the_same_run() {
    let a = same_run_twice("--machine qemu:4 --ms 200 --seed 5 lcschbench");
    let names = ["wakeup_p99_us", "request_p99_us", "rps"];
    let c = run("--machine qemu:4 --ms 200 --seed 6 lcschbench");
    assert!(
        names.iter().any(|n| metric(&a, n) != metric(&c, n)),
        "seeds 5 and 6 gave the same run"
    );
}

#[test]
fn lcbenchs_counters_add_up() {
    // lcbench's counters, as Linux's and ours' runs print them: every
    // latency is in one place (not asleep yet, same CPU, another), the
    // message thread's rounds that slept are the workers' posts that woke
    // it, and on one CPU every such round runs on the posting CPU and
    // every worker that slept runs on its poster's.
    for machine in ["flat:1", "qemu:4"] {
        let r = run(&format!(
            "--machine {machine} --ms 300 --seed 7 lcschbench t=3"
        ));
        let m = |n: &str| metric(&r, n);
        let requests = (m("rps") * r.sim_ns as f64 / 1e9).round();
        let placed = m("wk_awake") + m("wk_same") + m("wk_other");
        // Each request follows one recorded wakeup; the last posts of the
        // run may have been taken with no request after them.
        assert!(
            placed >= requests && placed <= requests + 3.0,
            "{machine}: {placed} wakeups for {requests} requests"
        );
        // (the run may end between a post's wakeup and the round it starts)
        let (slept, woke) = (m("msg_slept"), m("wk_posts_woke"));
        assert!(
            slept <= woke && woke <= slept + 1.0,
            "{machine}: {slept}, {woke}"
        );
        assert!(
            m("msg_slept") > 0.0 && m("msg_slept") <= m("msg_rounds"),
            "{machine}"
        );
        assert!(m("msg_wake_sum_us") > 0.0, "{machine}");
        // Each of the message thread's placed wakeups once by rule and once
        // by pick (a wakeup of a thread still queued, DELAY_DEQUEUE's, is
        // not placed).
        let by = |prefix: &str| -> f64 {
            r.metrics
                .iter()
                .filter(|x| x.name.starts_with(prefix))
                .map(|x| x.value)
                .sum()
        };
        let (rule, pick) = (by("msg_wa_"), by("msg_sis_"));
        assert_eq!(rule, pick, "{machine}");
        assert!(
            rule > 0.0 && rule <= woke,
            "{machine}: {rule} placed of {woke}"
        );
        if machine == "flat:1" {
            assert_eq!(m("msg_same"), m("msg_slept"), "{machine}");
            assert_eq!(m("wk_other"), 0.0, "{machine}");
        } else {
            assert!(m("msg_same") < m("msg_slept"), "{machine}");
        }
    }
}
