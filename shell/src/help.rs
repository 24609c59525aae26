//! The command table: one place for every command's name, usage line, summary,
//! examples and numeric limits. `help` prints it, error messages quote the usage
//! line from it, the parser takes its names as the command words (and no
//! others), the fuzzer and the property tests draw command words from it, and
//! a test parses every example in it.

use alloc::format;
use alloc::string::String;
use core::fmt::Write;

use crate::error::{quote, ArgError, Error};
use crate::parse::{
    Compare, Cyclictest, Dlperiodic, Hackbench, Limit, Perfpipe, Pgbench, Schbench, Soak, Spin,
    Wakelat, YieldPp, CPU_WEIGHT, HOTPLUG_CPU, JOB, MAX_JOBS, NICE, PID, SCHED_RUNTIME,
};

/// One command's help.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandHelp {
    /// The command word.
    pub name: &'static str,
    /// The usage line (`|` separates alternative forms).
    pub usage: &'static str,
    /// One line on what it does.
    pub summary: &'static str,
    /// Further lines for `help CMD`.
    pub notes: &'static [&'static str],
    /// Numeric arguments with their ranges and defaults.
    pub limits: &'static [Limit],
    /// Example lines; each parses.
    pub examples: &'static [&'static str],
}

const fn cmd(
    name: &'static str,
    usage: &'static str,
    summary: &'static str,
    notes: &'static [&'static str],
    limits: &'static [Limit],
    examples: &'static [&'static str],
) -> CommandHelp {
    CommandHelp {
        name,
        usage,
        summary,
        notes,
        limits,
        examples,
    }
}

const PRIO: Limit = Limit {
    name: "PRIO",
    min: 0,
    max: 99,
    default: None,
    doc: "1..99 for -f/-r, 0 (or left out) for -o/-b/-i",
};

/// Every command, in `help` order.
pub const COMMANDS: &[CommandHelp] = &[
    cmd(
        "help",
        "help [CMD]",
        "list the commands, or show one command's usage",
        &[],
        &[],
        &["help", "help spin"],
    ),
    cmd(
        "features",
        "features [NAME|NO_NAME]",
        "print the SCHED_FEAT flags (disabled: NO_NAME), or flip one",
        &["names are upper case, as in /sys/kernel/debug/sched/features"],
        &[],
        &[
            "features",
            "features NEXT_BUDDY",
            "features NO_RUN_TO_PARITY",
        ],
    ),
    cmd(
        "sysctl",
        "sysctl -a | sysctl KEY | sysctl [-w] KEY=VALUE",
        "list, read or write the scheduler tunables",
        &[
            "KEY=VALUE is one word (no spaces around '='); out-of-range values are refused",
            "kernel.sched_features reads the feature line and takes NAME or NO_NAME",
            "debug.fail_alloc=PERCENT,SEED fails spawns' allocations at random; off: never",
            "kernel.sched_schedstats=1 counts ttwu, wkl_*, wa_*, sis_* and schedstat's",
            "fields; 0 (default): not",
            "(compare counts them for its runs unless booted with schedstats=disable)",
        ],
        &[],
        &[
            "sysctl -a",
            "sysctl kernel.sched_base_slice_ns",
            "sysctl kernel.sched_base_slice_ns=3000000",
            "sysctl -w kernel.sched_features=NO_PLACE_LAG",
            "sysctl debug.fail_alloc=10,1",
            "sysctl kernel.sched_schedstats=1",
        ],
    ),
    cmd(
        "preempt",
        "preempt [none|voluntary|full|lazy]",
        "show the preemption model (current one in parentheses) or switch",
        &[],
        &[],
        &["preempt", "preempt lazy"],
    ),
    cmd(
        "ps",
        "ps",
        "one line per thread: pid, name, cpu, policy, nice, state, ...",
        &[
            "columns: pid, name, cpu, policy, nice, state, vruntime, deadline, lag, slice,",
            "total runtime, switches; times in ms",
        ],
        &[],
        &["ps"],
    ),
    cmd(
        "sched_debug",
        "sched_debug",
        "per-CPU runqueues: clock, load, avg_vruntime, queue, buddies, ...",
        &[
            "per CPU: clock, nr_running, load, avg_vruntime, current, the queued",
            "entities in deadline order with eligibility, buddies, counters",
        ],
        &[],
        &["sched_debug"],
    ),
    cmd(
        "schedstat",
        "schedstat",
        "per-CPU, per-domain load-balance counters, as /proc/schedstat",
        &[
            "per CPU one line per domain level, in the order and naming of",
            "Linux's /proc/schedstat domain lines (v17), with only the fields",
            "counted here (the header names them): lb_* for the idle types",
            "busy, idle, newly idle, then alb_count alb_failed alb_pushed, then",
            "ttwu_wake_remote ttwu_move_affine ttwu_migrate; all counted only while",
            "kernel.sched_schedstats=1 (0 by default, as in Linux)",
        ],
        &[],
        &["schedstat"],
    ),
    cmd(
        "stat",
        "stat",
        "uptime, per-CPU idle and busy time, context switches, interrupts",
        &[],
        &[],
        &["stat"],
    ),
    cmd(
        "nice",
        "nice PID N | nice %JOB N",
        "set a thread's nice value, or every thread's of a background job",
        &[
            "PID: a thread id from ps, or from a background job's reply:",
            "'spin -d 20000 0 0 &' prints '[1] 9 (threads 10-11)'; then 'nice 10 5'",
            "and ps shows nice 5 (sched_debug: weight 335); idle threads refuse",
            "%JOB: every workload thread of the job (not its leader job/N)",
        ],
        &[PID, JOB, NICE],
        &["nice 10 5", "nice 10 -5", "nice %1 5"],
    ),
    cmd(
        "chrt",
        "chrt [-f|-r|-o|-b|-i] [-T NS] [-p] [PRIO] PID|%JOB | chrt -p PID|%JOB",
        "set policy, priority and slice of a thread or job, or show them",
        &[
            "-f SCHED_FIFO, -r SCHED_RR (the default), -o SCHED_NORMAL,",
            "-b SCHED_BATCH, -i SCHED_IDLE; PRIO may be left out for -o/-b/-i",
            "-T, --sched-runtime NS: the custom slice of a SCHED_NORMAL or",
            "SCHED_BATCH thread (sched_attr.sched_runtime, as util-linux 2.41+",
            "and Linux 6.12+): a shorter slice means an earlier deadline, so its",
            "wakeups preempt sooner; 0 goes back to the base slice; without -T",
            "the thread keeps its slice. chrt -p shows it as the runtime parameter",
            "PID: a thread from ps or a background job ('hackbench -l 100000 &'",
            "prints '[1] 9 (threads 10-49)'); %JOB: every workload thread of job",
            "N (not its leader job/N). A FIFO thread that never sleeps keeps its",
            "CPU, except that the fair server runs fair threads (the shell too)",
            "50 ms of every 1 s on each CPU (sysctl",
            "kernel.sched_fair_server_runtime_ns / _period_ns; runtime 0: off)",
            "-d SCHED_DEADLINE: -T/--sched-runtime, -D/--sched-deadline and",
            "-P/--sched-period in ns (runtime <= deadline <= period; one of the",
            "last two may be left out), PRIO 0; refused when the deadline tasks'",
            "runtime/period sum would pass 100% of the CPUs minus the fair servers",
            "(Linux: EBUSY), and for a thread not allowed on every online CPU",
            "(Linux: EPERM); for %JOB a refusal stops at that thread",
        ],
        &[PRIO, SCHED_RUNTIME, PID, JOB],
        &[
            "chrt -p 10",
            "chrt -f 50 10",
            "chrt -r -p 10 10",
            "chrt -o 0 10",
            "chrt -b 0 10",
            "chrt -b -p %1",
            "chrt -o -T 100000 -p 0 10",
            "chrt --other --sched-runtime 0 -p %2",
            "chrt -d --sched-runtime 2000000 --sched-deadline 10000000 0 10",
        ],
    ),
    cmd(
        "taskset",
        "taskset -p [MASK] PID | taskset -cp [LIST] PID | taskset -p MASK %JOB",
        "set a thread's CPU affinity, or show it",
        &[
            "MASK is hex with or without 0x (bit n = CPU n); LIST is like 0-2,5 or 0-7:2",
            "the mask must be non-zero and fit 256 CPUs; a running thread moves at once",
            "PID: a thread from ps or a background job ('spin -d 20000 0 &' prints",
            "'[1] 9 (threads 10)'); then 'taskset -p 1 10' keeps it on CPU 0",
            "%JOB: every workload thread of the job, in order; a refusal stops there",
            "(the threads before it keep their new mask, as separate calls would)",
            "a SCHED_DEADLINE thread must stay allowed on every online CPU (as in Linux:",
            "EBUSY)",
        ],
        &[PID, JOB],
        &[
            "taskset -p 10",
            "taskset -p 0x3 10",
            "taskset -p 1 10",
            "taskset -cp 0-2,5 10",
            "taskset -p 1 %1",
        ],
    ),
    cmd(
        "kill",
        "kill PID | kill %JOB",
        "stop a background job, by job number or by any of its threads",
        &[
            "a workload's threads depend on each other (a receiver waits for its",
            "senders), so killing one thread stops its whole job: every thread",
            "stops at its next check, partners are released, all are joined and",
            "their memory freed; kill waits for that and prints the job's report",
            "PID: a workload thread or a job's leader (job/N in ps); the idle",
            "threads, the shell and other kernel threads refuse",
        ],
        &[JOB, PID],
        &["kill %1", "kill 10"],
    ),
    cmd(
        "jobs",
        "jobs [-l]",
        "list the background jobs (WORKLOAD &) and their state",
        &[
            "Running, or Done / Killed / Failed with the job's report (each",
            "finished job is reported once: here, by wait / fg, or at the prompt)",
            "-l: the leader's and the workload threads' ids too",
        ],
        &[],
        &["jobs", "jobs -l"],
    ),
    cmd(
        "wait",
        "wait [%JOB]",
        "wait for a background job (or all of them) and print its report",
        &["Ctrl-C stops waiting; the job keeps running"],
        &[JOB],
        &["wait", "wait %1"],
    ),
    cmd(
        "fg",
        "fg [%JOB]",
        "wait for a job (default: the newest); Ctrl-C kills it",
        &["Ctrl-C kills the job, as it stops a foreground workload"],
        &[JOB],
        &["fg", "fg %2"],
    ),
    cmd(
        "spin",
        "spin -d MS [-c CPU] SPEC [SPEC ...]",
        "one CPU-bound thread per SPEC for MS milliseconds; CPU shares",
        &[
            "SPEC: N (nice N), batch:N (SCHED_BATCH at nice N), idle (SCHED_IDLE),",
            "slice:US (nice 0 with a custom slice of US us, 100..100000),",
            "duty:RUN_US:SLEEP_US (nice 0; runs RUN_US of CPU time, then sleeps",
            "SLEEP_US, again and again; each 1..10000000)",
            "each line gives the thread's SPEC, CPU time and share of the threads'",
            "-h prints this; Ctrl-C stops it early; with a final '&' it runs in the",
            "background (jobs, kill %N, wait %N; nice/taskset/chrt its threads)",
        ],
        Spin::LIMITS,
        &[
            "spin -d 1000 0",
            "spin -d 2000 -c 0 0 5 -5",
            "spin -d 1000 -c 0 batch:0 idle 0",
            "spin -d 1000 -c 0 duty:1000:3000 0",
            "spin -d 1000 -c 0 slice:100 0",
            "spin -d 20000 0 0 &",
        ],
    ),
    cmd(
        "hackbench",
        "hackbench [-pMR] [-T|-P] [-g N] [-l N] [-f N] [-s N] [-C C] [-K K] [-W N]",
        "senders and receivers passing messages, 2 x GROUPS x FDS threads",
        &[
            "-p, --pipe: pipes (fs/pipe.c: 16 x 4 KiB, a sync wakeup when empty)",
            "default: unix stream sockets (208 KiB sndbuf, a sync wakeup per send)",
            "-T, --threads / -P, --process (default): accepted and reported; every",
            "task is a kernel thread here (processes would add an mm switch)",
            "-C, --syscall-cost linux|NS: each send and receive also burns NS ns of",
            "kernel time (linux: Linux 7.2's write/read on this QEMU machine, as",
            "measured: pipes 4358/3883 ns, sockets 9618/7773 ns); default: none",
            "-K, --sched-cost linux|SW,WK: each context switch of a task also burns",
            "SW ns when it runs again, each wakeup WK ns of the waker (linux: Linux",
            "7.2's less ours', as measured: 4924 (-T: 4426) and 1202 ns); default: none",
            "-M, --pipe-mutex (with -p -C linux): each copy runs under the pipe's",
            "sleeping lock (Linux's pipe->mutex; a waiter spins while the owner runs)",
            "-R, --roles: also count what ends senders' and receivers' runs and the",
            "receivers' wakeups (roles: lines); costs time per message; default: off",
            "-W, --wakee-flips FLIPS: the run's parent starts with FLIPS wakee_flips,",
            "which its tasks copy (Linux's hackbench inherits init's); default: the shell's",
            "long options too: --groups --loops --fds --datasize; -h prints this",
            "Ctrl-C stops it early; 'hackbench ... &' runs it in the background",
        ],
        Hackbench::LIMITS,
        &[
            "hackbench",
            "hackbench -g 4 -l 100000 &",
            "hackbench -p -g 2 -l 50 -f 5",
            "hackbench --pipe --threads --groups 4",
            "hackbench -g 2 -C linux",
            "hackbench -g 2 -C linux -K linux",
            "hackbench -g 2 -C linux -W 6",
        ],
    ),
    cmd(
        "schbench",
        "schbench [-m MSG_THREADS] [-t WORKERS] [-r SECONDS] [-F KB] [-s USEC]",
        "message threads waking request workers; latency percentiles, RPS",
        &[
            "a worker posts to its message thread and sleeps; the message thread",
            "wakes it (wakeup latency); a request sleeps -s us, touches -F KiB",
            "(request latency). -h prints this; Ctrl-C stops it early",
        ],
        Schbench::LIMITS,
        &["schbench", "schbench -m 2 -t 4 -r 10 -F 64 -s 50"],
    ),
    cmd(
        "pgbench",
        "pgbench [-c CLIENTS] [-t TX] [-S]",
        "clients sending transactions to backends; TPS, latency",
        &[
            "one backend thread per client; request and reply are socket sends",
            "(sync wakeups). -S: select-only (short backend work); default:",
            "read-write (longer work plus a 200 us sleep as the WAL flush)",
            "-h prints this; Ctrl-C stops it early",
        ],
        Pgbench::LIMITS,
        &["pgbench", "pgbench -c 8 -t 100 -S"],
    ),
    cmd(
        "cyclictest",
        "cyclictest [-t THREADS] [-i US] [-l LOOPS] [-p PRIO] [-L GROUPS] [-a CPU]",
        "periodic timer threads measuring wakeup latency (min/avg/max)",
        &[
            "-L, --load GROUPS: under load, as 'hackbench -T -p -g GROUPS -l 1000000 &",
            "cyclictest ...; kill %1' would run it: the hackbench starts first, runs",
            "beside the measurement and is stopped when it ends (compare can run it)",
            "long options too: --threads --interval --loops --priority --load --affinity",
            "-h prints this; Ctrl-C stops it early",
        ],
        Cyclictest::HELP_LIMITS,
        &[
            "cyclictest",
            "cyclictest -t 2 -i 500 -l 10000 -p 80",
            "cyclictest -t 1 -i 500 -l 1000 -p 50 -L 1",
            "cyclictest -t 1 -i 500 -l 1000 -p 50 -L 1 -a 0",
        ],
    ),
    cmd(
        "wakelat",
        "wakelat [-d MS] [-c CPU] [-n HOGS] [-p US] [-P POLICY] [-s US] [-f PRIO]",
        "a periodic sleeper among CPU hogs: wakeup latency avg/p50/p99",
        &[
            "HOGS nice-0 spinners and one sleeper, all pinned to CPU -c; the sleeper",
            "wakes at absolute times PERIOD_US apart (a late wakeup skips the periods",
            "it missed) and records how late it runs. -P, --policy normal|batch|idle:",
            "the sleeper's policy (SCHED_BATCH does not preempt on wakeup);",
            "-s, --slice SLICE_US: its custom slice (sched_runtime; default: the",
            "base slice); -f, --fifo PRIO: the hogs are SCHED_FIFO at PRIO, so the",
            "sleeper runs only when the fair server lends it time (sysctl",
            "kernel.sched_fair_server_*). The same shape as 'lcbench wakelat'",
            "long options too: --duration --cpu --hogs --period; -h prints this",
        ],
        Wakelat::HELP_LIMITS,
        &[
            "wakelat",
            "wakelat -d 1000 -c 0 -n 2 -p 2000",
            "wakelat -d 1000 -n 2 -p 2000 -P batch",
            "wakelat -d 1000 -n 2 -p 2000 -s 100",
            "wakelat -d 5000 -n 1 -p 100000 -f 50",
        ],
    ),
    cmd(
        "dlperiodic",
        "dlperiodic [-n TASKS] [-r US] [-D US] [-p US] [-w US] [-d MS]",
        "periodic SCHED_DEADLINE threads: missed deadlines, response times",
        &[
            "TASKS threads, each SCHED_DEADLINE with runtime -r, deadline -D (default:",
            "the period) and period -p (us), allowed every online CPU, released",
            "together and then every period; each job burns -w us of the thread's",
            "own CPU time; its response time is its end minus its release, and it",
            "missed if that is over the deadline (a late job delays the next, which",
            "starts at once). Needs runtime <= deadline <= period and work <=",
            "runtime; refused (Linux: EBUSY) when admission control refuses a thread.",
            "The shape of 'lcbench dl periodic'; long options too: --tasks",
            "--runtime --deadline --period --work --duration; -h prints this",
        ],
        Dlperiodic::LIMITS,
        &[
            "dlperiodic",
            "dlperiodic -n 6 -r 20000 -D 50000 -p 100000 -w 10000 -d 3000",
        ],
    ),
    cmd(
        "perfpipe",
        "perfpipe [-x|-s] [-l LOOPS]",
        "two threads ping-ponging over a pipe; time per round trip",
        &[
            "-x, --cross: pin the two threads to the first and the last online CPU",
            "(every wakeup crosses CPUs); -s, --same: pin both to the first online",
            "CPU; without either the scheduler places them; the placement line says",
            "where they ran",
            "-h prints this; Ctrl-C stops it early",
        ],
        Perfpipe::LIMITS,
        &[
            "perfpipe",
            "perfpipe -l 10000",
            "perfpipe --cross -l 2000",
            "perfpipe -s -l 2000",
        ],
    ),
    cmd(
        "yield",
        "yield [-l LOOPS]",
        "two threads on one CPU yielding to each other; time per yield",
        &[
            "both threads are pinned to the first online CPU; the report says how",
            "many yields handed the CPU to the other thread",
            "-h prints this; Ctrl-C stops it early",
        ],
        YieldPp::LIMITS,
        &["yield", "yield -l 10000"],
    ),
    cmd(
        "soak",
        "soak [-t THREADS] [-s SECS] [-r SEED]",
        "SMP soak: random scheduler actions with invariant checks",
        &[
            "THREADS workers sleep, wait and wake each other, yield, change nice,",
            "policy and affinity, spin with preemption off, exit (and are respawned),",
            "while features and the preemption model flip. Every 250 ms and at the",
            "end: sched's invariants on every runqueue, no task on two runqueues, no",
            "lost wakeup, progress; at the end runtime + idle = elapsed x CPUs (1%).",
            "-r, --seed: the actions' seed (printed; rerun with it to reproduce)",
            "-h prints this; Ctrl-C stops it early (the final checks still run)",
        ],
        Soak::LIMITS,
        &["soak", "soak -t 200 -s 10", "soak -t 1000 -s 60 --seed 42"],
    ),
    cmd(
        "compare",
        "compare [-n RUNS] [-w WARMUP] -c CONFIG [-c CONFIG ...] -- WORKLOAD ARGS",
        "A/B: a workload under configs, interleaved runs, mmtests table",
        &[
            "CONFIG: settings separated by spaces or commas (quote it): NAME / NO_NAME",
            "features, KEY=VALUE sysctls, preempt=MODE; '' or default = boot defaults.",
            "Everything a config does not name is reset to the boot defaults, so each",
            "config is exactly what it says. Every config is checked before any run.",
            "Order is rotated per round (A B C, B C A, C A B, ...); the first WARMUP",
            "rounds are printed as 'warmup' and dropped. Each run prints its metrics",
            "and counter deltas: switches, wakeups, wakeup decisions per row (wk_*),",
            "wakeup preemptions, tick reschedules, buddy picks, migrations, ticks.",
            "The table: A is the baseline; Amean (times) or Hmean (rates), Stddev, CoV;",
            "% change with better positive; *x.xx%*: Welch's t-test p < 0.05; under",
            "each mean, CI95: the change's 95% interval (excludes 0 exactly where *).",
            "Ctrl-C stops it; features, sysctls and preempt model are restored always.",
            "Refused while background jobs run (they would disturb the runs).",
        ],
        Compare::LIMITS,
        &[
            "compare -c '' -c NEXT_BUDDY -- hackbench -g 2",
            "compare -n 10 -w 2 -c '' -c 'NEXT_BUDDY NO_PICK_BUDDY' -- perfpipe -l 900",
            "compare -c preempt=full -c preempt=lazy -- schbench -r 1",
        ],
    ),
    cmd(
        "trace",
        "trace start|stop|dump",
        "record scheduler events, stop recording, print them",
        &[],
        &[],
        &["trace start", "trace stop", "trace dump"],
    ),
    cmd(
        "cpu",
        "cpu offline N | cpu online N",
        "take a CPU out of scheduling and park it, or bring it back",
        &[
            "offline: nothing is placed on N any more; its threads move to the other",
            "CPUs, sleepers that last ran there wake elsewhere, a thread allowed only",
            "on N has its affinity widened to every CPU (logged, as Linux does); then",
            "N stops its timer and parks (x86_64: halted, restarted by INIT/SIPI;",
            "aarch64: PSCI CPU_OFF / CPU_ON). CPU 0 stays online.",
        ],
        &[HOTPLUG_CPU],
        &["cpu offline 1", "cpu online 1"],
    ),
    cmd(
        "cgroup",
        "cgroup create NAME [PARENT]|weight NAME W|attach NAME PID|rm NAME|ls",
        "task groups: create, set cpu.weight, attach a thread, list, rm",
        &[
            "A group's threads share the group's weight against its siblings, as",
            "Linux's cgroup v2 cpu controller (cpu.weight; CONFIG_FAIR_GROUP_SCHED):",
            "two groups at weight 100 get half the CPU each, whatever their thread",
            "counts. create: at weight 100, under PARENT (a group's name; default the",
            "root). attach: NAME 'root' moves the thread back to the root group.",
            "rm: removes a group with no threads and no child groups (refused",
            "while it has either; 'root' cannot be removed).",
            "At most 63 groups, 8 deep. Bad input is an error and changes nothing.",
        ],
        &[CPU_WEIGHT, PID],
        &[
            "cgroup create a",
            "cgroup create b",
            "cgroup create b1 b",
            "cgroup weight b 300",
            "cgroup attach a 5",
            "cgroup ls",
            "cgroup rm b1",
        ],
    ),
    cmd(
        "poweroff",
        "poweroff",
        "power the machine off",
        &[],
        &[],
        &["poweroff"],
    ),
];

/// The literal words of the usage lines: every option (`-p`, `-cp`, `--`)
/// and every fixed keyword (`lazy`, `start`), without the placeholders
/// (upper case, `%JOB`, `KEY=VALUE`). Derived from [`COMMANDS`], so the
/// fuzzer and the property tests, which draw from it, cannot drift from the
/// parser's vocabulary. Each word once, in table order.
pub fn usage_words() -> impl Iterator<Item = &'static str> {
    let all = || {
        COMMANDS.iter().flat_map(|c| {
            c.usage
                .split(|ch: char| ch.is_whitespace() || matches!(ch, '[' | ']' | '|'))
                .filter(move |w| {
                    *w != c.name
                        && (w.starts_with('-')
                            || (!w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase())))
                })
        })
    };
    all()
        .enumerate()
        .filter(move |&(i, w)| all().position(|v| v == w) == Some(i))
        .map(|(_, w)| w)
}

/// Words that probe the parsers' edges: numbers at and past the limits of
/// their types, signs, hex, CPU lists and ranges, feature and sysctl
/// fragments. The fuzzer and the property tests draw from these beside
/// [`usage_words`] and the command words.
pub const PROBE_WORDS: &[&str] = &[
    "-",
    "=",
    "==",
    ",",
    ":0",
    "0",
    "1",
    "-1",
    "-0",
    "+",
    "+5",
    "19",
    "-20",
    "99",
    "100",
    "1e3",
    "0x",
    "0x3",
    "0xff",
    "ffffffffffffffffff",
    "0-3",
    "0-2,5",
    "3-1",
    "1,2",
    "0-7:2",
    "4294967296",
    "18446744073709551616",
    "-9223372036854775809",
    "--fifo",
    "--pid=1",
    "NEXT_BUDDY",
    "NO_PLACE_LAG",
    "NO_",
    "kernel.sched_features",
    "kernel.sched_nr_migrate=8",
    "kernel.sched_preempt",
    "kernel.sched_base_slice_ns=",
];

/// The table entry for a command word.
pub fn lookup(name: &str) -> Option<&'static CommandHelp> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// The text of `help` (`None`) or `help CMD`: lines ending in `\n`.
/// An unknown command is an [`Error`] (`help: unknown command 'x'`).
pub fn help_text(topic: Option<&str>) -> Result<String, Error> {
    let mut s = String::new();
    match topic {
        None => {
            s.push_str("commands ('help CMD' for details; Ctrl-C stops a workload):\n");
            let _ = writeln!(
                s,
                "  (WORKLOAD ... & runs a workload in the background, up to {MAX_JOBS} jobs)"
            );
            let w = COMMANDS.iter().map(|c| c.name.len()).max().unwrap_or(0);
            for c in COMMANDS {
                let _ = writeln!(s, "  {:<w$}  {}", c.name, c.summary);
            }
        }
        Some(t) => {
            let Some(c) = lookup(t) else {
                return Err(Error::arg("help", ArgError::UnknownTopic(quote(t))));
            };
            let _ = writeln!(s, "usage: {}", c.usage);
            let _ = writeln!(s, "  {}", c.summary);
            for n in c.notes {
                let _ = writeln!(s, "  {n}");
            }
            let range = |l: &Limit| match l.default {
                Some(d) => format!("[{}, {}], default {d}", l.min, l.max),
                None => format!("[{}, {}]", l.min, l.max),
            };
            let w = c.limits.iter().map(|l| l.name.len()).max().unwrap_or(0);
            let rw = c.limits.iter().map(|l| range(l).len()).max().unwrap_or(0);
            for l in c.limits {
                let _ = writeln!(s, "  {:<w$}  {:<rw$}  {}", l.name, range(l), l.doc);
            }
            for e in c.examples {
                let _ = writeln!(s, "  e.g. {e}");
            }
        }
    }
    Ok(s)
}
