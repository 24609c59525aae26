//! Every command's good and bad forms, with the exact error lines.

use sched::{CpuId, Feature, Policy, PreemptMode};
use shell::{
    help_text, parse, Command, Cyclictest, Error, Hackbench, Perfpipe, Pgbench, Schbench,
    SchedCost, Soak, Spin, SpinThread, SyscallCost, SysctlCmd, Target, TraceCmd, Wakelat, YieldPp,
    COMMANDS, MAX_JOBS, MAX_LINE,
};

fn ok(line: &str) -> Command {
    match parse(line) {
        Ok(Some(c)) => c,
        other => panic!("{line:?}: {other:?}"),
    }
}

/// The error line as the executor prints it, minus `error: `.
fn err(line: &str) -> String {
    match parse(line) {
        Err(e) => e.to_string(),
        other => panic!("{line:?} should fail: {other:?}"),
    }
}

#[track_caller]
fn err_is(line: &str, want: &str) {
    assert_eq!(err(line), want, "{line:?}");
}

#[track_caller]
fn err_starts(line: &str, want: &str) {
    let e = err(line);
    assert!(
        e.starts_with(want),
        "{line:?}: {e:?} does not start with {want:?}"
    );
}

#[test]
fn blank_lines_are_nothing() {
    for l in ["", " ", "\t \t", "\r", "\n", "  \r\n"] {
        assert_eq!(parse(l), Ok(None), "{l:?}");
    }
}

#[test]
fn comment_lines_are_nothing() {
    for l in [
        "#",
        "# a note",
        "   #ps",
        "#!/bin/sched",
        "# features NO_NEXT_BUDDY",
    ] {
        assert_eq!(parse(l), Ok(None), "{l:?}");
    }
    // Only a leading `#` comments: inside a line it is an argument.
    err_is("nice 1 #5", "nice: N must be a decimal integer, got '#5'");
    assert!(parse("ps #").is_err());
}

#[test]
fn bad_bytes_and_unknown_commands() {
    err_is("foo", "unknown command 'foo' (try 'help')");
    err_is("  FOO bar", "unknown command 'FOO' (try 'help')");
    err_is("ps\x01", "control character 0x01 in line");
    err_is("ps\x7f", "control character 0x7f in line");
    err_is("ps é", "non-ASCII input (only ASCII is accepted)");
    err_is(
        &"x".repeat(10_000),
        &format!("line too long (max {MAX_LINE} bytes)"),
    );
    // Long tokens are quoted cut short.
    let long = "y".repeat(500);
    assert_eq!(
        err(&long),
        format!("unknown command '{}...' (try 'help')", "y".repeat(40))
    );
}

#[test]
fn simple_commands() {
    assert_eq!(ok("ps"), Command::Ps);
    assert_eq!(ok("  ps  "), Command::Ps);
    assert_eq!(ok("sched_debug"), Command::SchedDebug);
    assert_eq!(ok("schedstat"), Command::Schedstat);
    assert_eq!(ok(" schedstat "), Command::Schedstat);
    assert_eq!(ok("stat"), Command::Stat);
    assert_eq!(ok("poweroff"), Command::Poweroff);
    err_is("ps aux", "ps: unexpected argument 'aux' (usage: ps)");
    err_is("ps -e", "ps: unknown option '-e' (usage: ps)");
    err_is("stat 1", "stat: unexpected argument '1' (usage: stat)");
    err_is(
        "poweroff now",
        "poweroff: unexpected argument 'now' (usage: poweroff)",
    );
    err_is(
        "schedstat 0",
        "schedstat: unexpected argument '0' (usage: schedstat)",
    );
    err_is(
        "schedstat -v",
        "schedstat: unknown option '-v' (usage: schedstat)",
    );
    err_is(
        "sched_debug x",
        "sched_debug: unexpected argument 'x' (usage: sched_debug)",
    );
}

#[test]
fn help() {
    assert_eq!(ok("help"), Command::Help(None));
    assert_eq!(ok("help spin"), Command::Help(Some("spin")));
    err_is("help nope", "help: unknown command 'nope'");
    err_starts("help ps stat", "help: unexpected argument 'stat'");
    let all = help_text(None).unwrap();
    for c in COMMANDS {
        assert!(all.contains(c.name), "{}", c.name);
        let one = help_text(Some(c.name)).unwrap();
        assert!(one.starts_with(&format!("usage: {}\n", c.usage)), "{one}");
        assert!(one.contains(c.summary));
    }
    assert_eq!(
        help_text(Some("nope")).unwrap_err().to_string(),
        "help: unknown command 'nope'"
    );
    let spin = help_text(Some("spin")).unwrap();
    assert!(
        spin.contains("-d MS") && spin.contains("[1, 60000]"),
        "{spin}"
    );
    // Everything fits an 80-column serial terminal.
    for t in std::iter::once(None).chain(COMMANDS.iter().map(|c| Some(c.name))) {
        for l in help_text(t).unwrap().lines() {
            assert!(l.len() <= 80, "{t:?}: {l:?} is {} columns", l.len());
        }
    }
    let hb = help_text(Some("hackbench")).unwrap();
    assert!(hb.contains("[1, 256], default 1"), "{hb}");
}

/// The fuzzer's and the property tests' vocabulary comes from the usage
/// lines: every option and keyword, once, and no placeholder.
#[test]
fn usage_words_are_the_options_and_keywords() {
    let w: Vec<&str> = shell::usage_words().collect();
    for want in [
        "-a", "-w", "-cp", "-T", "-P", "-L", "-x", "--", "lazy", "none", "start", "dump",
    ] {
        assert!(w.contains(&want), "{want} missing from {w:?}");
    }
    for not in ["PID", "%JOB", "KEY=VALUE", "help", "hackbench", "", "MASK"] {
        assert!(!w.contains(&not), "{not:?} in {w:?}");
    }
    let mut sorted = w.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), w.len(), "a word twice: {w:?}");
    // Every option word is accepted by some command's parser in some
    // position: a line of the command, the option and a plausible value
    // parses, or fails on something other than the option itself.
    for opt in w.iter().filter(|o| o.starts_with('-') && **o != "--") {
        let known = COMMANDS.iter().any(|c| {
            c.usage.split(['[', ']', '|', ' ']).any(|t| t == *opt)
                && match parse(&format!("{} {opt} 1 1", c.name)) {
                    Ok(_) => true,
                    Err(e) => !e.to_string().contains(&format!("unknown option '{opt}'")),
                }
        });
        assert!(known, "{opt}: no command takes it");
    }
}

#[test]
fn every_help_example_parses_to_its_command() {
    for c in COMMANDS {
        assert!(!c.examples.is_empty(), "{} has no example", c.name);
        for e in c.examples {
            assert_eq!(ok(e).name(), c.name, "{e}");
            assert!(e.starts_with(c.name));
        }
    }
}

#[test]
fn features() {
    assert_eq!(ok("features"), Command::Features(None));
    assert_eq!(
        ok("features NEXT_BUDDY"),
        Command::Features(Some((Feature::NextBuddy, true)))
    );
    assert_eq!(
        ok("features NO_RUN_TO_PARITY"),
        Command::Features(Some((Feature::RunToParity, false)))
    );
    for f in Feature::ALL {
        assert_eq!(
            ok(&format!("features {}", f.name())),
            Command::Features(Some((*f, true)))
        );
        assert_eq!(
            ok(&format!("features NO_{}", f.name())),
            Command::Features(Some((*f, false)))
        );
    }
    err_is("features FOO", "features: unknown feature 'FOO'");
    err_is(
        "features next_buddy",
        "features: unknown feature 'next_buddy'",
    );
    err_is(
        "features NO_NO_PLACE_LAG",
        "features: unknown feature 'NO_NO_PLACE_LAG'",
    );
    err_starts(
        "features PLACE_LAG NEXT_BUDDY",
        "features: unexpected argument 'NEXT_BUDDY'",
    );
    err_starts("features -a", "features: unknown option '-a'");
}

#[test]
fn sysctl() {
    assert_eq!(ok("sysctl -a"), Command::Sysctl(SysctlCmd::All));
    assert_eq!(
        ok("sysctl kernel.sched_base_slice_ns"),
        Command::Sysctl(SysctlCmd::Get("kernel.sched_base_slice_ns"))
    );
    assert_eq!(
        ok("sysctl kernel.sched_features"),
        Command::Sysctl(SysctlCmd::Get("kernel.sched_features"))
    );
    assert_eq!(
        ok("sysctl kernel.sched_nr_migrate=8"),
        Command::Sysctl(SysctlCmd::Set {
            key: "kernel.sched_nr_migrate",
            value: "8".into()
        })
    );
    // Values are checked by sched when written, not here (except features).
    assert_eq!(
        ok("sysctl -w kernel.sched_nr_migrate=abc"),
        Command::Sysctl(SysctlCmd::Set {
            key: "kernel.sched_nr_migrate",
            value: "abc".into()
        })
    );
    assert_eq!(
        ok("sysctl kernel.sched_features=NO_PLACE_LAG"),
        Command::Sysctl(SysctlCmd::Set {
            key: "kernel.sched_features",
            value: "NO_PLACE_LAG".into()
        })
    );
    // The kernel's own keys: values checked by the kernel when written.
    assert_eq!(
        ok("sysctl kernel.sched_schedstats"),
        Command::Sysctl(SysctlCmd::Get(shell::SCHEDSTATS_KEY))
    );
    assert_eq!(
        ok("sysctl -w kernel.sched_schedstats=2"),
        Command::Sysctl(SysctlCmd::Set {
            key: "kernel.sched_schedstats",
            value: "2".into()
        })
    );
    err_is(
        "sysctl kernel.sched_schedstats=",
        "sysctl: missing VALUE in 'kernel.sched_schedstats='",
    );
    for t in sched::tunables::TUNABLES {
        assert_eq!(
            ok(&format!("sysctl {}", t.key)),
            Command::Sysctl(SysctlCmd::Get(t.key))
        );
    }
    err_starts(
        "sysctl",
        "sysctl: missing KEY, KEY=VALUE or -a (usage: sysctl -a |",
    );
    err_is(
        "sysctl kernel.nope",
        "sysctl: unknown key 'kernel.nope' (see 'sysctl -a')",
    );
    err_is(
        "sysctl kernel.nope=1",
        "sysctl: unknown key 'kernel.nope' (see 'sysctl -a')",
    );
    err_is(
        "sysctl kernel.sched_nr_migrate=",
        "sysctl: missing VALUE in 'kernel.sched_nr_migrate='",
    );
    err_is(
        "sysctl kernel.sched_features=BOGUS",
        "sysctl: unknown feature 'BOGUS'",
    );
    let spaced = "sysctl: write KEY=VALUE as one word, without spaces around '='";
    err_is("sysctl kernel.sched_nr_migrate = 8", spaced);
    err_is("sysctl kernel.sched_nr_migrate= 8", spaced);
    err_is("sysctl kernel.sched_nr_migrate =8", spaced);
    err_starts("sysctl -a -a", "sysctl: unexpected argument '-a'");
    err_starts("sysctl -x", "sysctl: unknown option '-x'");
    err_starts("sysctl -w", "sysctl: missing KEY=VALUE");
    err_starts("sysctl -w -a", "sysctl: unknown option '-a'");
    err_starts(
        "sysctl -w kernel.sched_nr_migrate",
        "sysctl: missing =VALUE",
    );
    err_starts(
        "sysctl kernel.sched_nr_migrate kernel.sched_preempt",
        "sysctl: unexpected argument 'kernel.sched_preempt'",
    );
}

#[test]
fn preempt() {
    assert_eq!(ok("preempt"), Command::Preempt(None));
    for m in PreemptMode::ALL {
        assert_eq!(
            ok(&format!("preempt {}", m.name())),
            Command::Preempt(Some(m))
        );
    }
    err_is(
        "preempt rt",
        "preempt: unknown mode 'rt' (expected none, voluntary, full or lazy)",
    );
    err_starts("preempt full lazy", "preempt: unexpected argument 'lazy'");
    err_starts("preempt FULL", "preempt: unknown mode 'FULL'");
}

#[test]
fn nice_and_kill() {
    assert_eq!(
        ok("nice 7 -5"),
        Command::Nice {
            target: Target::Pid(7),
            nice: -5
        }
    );
    assert_eq!(
        ok("nice 7 +19"),
        Command::Nice {
            target: Target::Pid(7),
            nice: 19
        }
    );
    assert_eq!(
        ok("nice 0 -20"),
        Command::Nice {
            target: Target::Pid(0),
            nice: -20
        }
    );
    err_is("nice 7 20", "nice: N must be in [-20, 19], got '20'");
    err_is("nice 7 -21", "nice: N must be in [-20, 19], got '-21'");
    err_is(
        "nice 7 99999999999999999999999",
        "nice: N must be in [-20, 19], got '99999999999999999999999'",
    );
    err_is("nice 7 x", "nice: N must be a decimal integer, got 'x'");
    err_is("nice 7 0x5", "nice: N must be a decimal integer, got '0x5'");
    err_is("nice x 1", "nice: PID must be a decimal integer, got 'x'");
    err_is(
        "nice -1 1",
        "nice: PID must be in [0, 4294967295], got '-1'",
    );
    err_is(
        "nice 4294967296 1",
        "nice: PID must be in [0, 4294967295], got '4294967296'",
    );
    err_is(
        "nice",
        "nice: missing PID or %JOB (usage: nice PID N | nice %JOB N)",
    );
    err_is(
        "nice 7",
        "nice: missing N (usage: nice PID N | nice %JOB N)",
    );
    err_is(
        "nice 7 1 2",
        "nice: unexpected argument '2' (usage: nice PID N | nice %JOB N)",
    );
    err_is(
        "nice -n 1 7",
        "nice: unknown option '-n' (usage: nice PID N | nice %JOB N)",
    );
    // A job: every workload thread of it.
    assert_eq!(
        ok("nice %1 5"),
        Command::Nice {
            target: Target::Job(1),
            nice: 5
        }
    );
    err_is("nice %9 5", "nice: %JOB must be in [1, 8], got '9'");
    err_is("nice %x 5", "nice: %JOB must be a decimal integer, got 'x'");
    err_is("nice %1 20", "nice: N must be in [-20, 19], got '20'");

    assert_eq!(ok("kill 12"), Command::Kill { pid: 12 });
    assert_eq!(ok("kill 4294967295"), Command::Kill { pid: u32::MAX });
    err_is(
        "kill",
        "kill: missing PID or %JOB (usage: kill PID | kill %JOB)",
    );
    err_is(
        "kill 1 2",
        "kill: unexpected argument '2' (usage: kill PID | kill %JOB)",
    );
    err_is("kill -9", "kill: PID must be in [0, 4294967295], got '-9'");
    err_is(
        "kill -s 1",
        "kill: unknown option '-s' (usage: kill PID | kill %JOB)",
    );
    err_is("kill abc", "kill: PID must be a decimal integer, got 'abc'");
    err_is("kill -", "kill: PID must be a decimal integer, got '-'");
}

#[test]
fn chrt_policies_and_priorities() {
    let set = |policy, prio, pid| Command::Chrt {
        policy,
        prio,
        runtime_ns: None,
        target: Target::Pid(pid),
    };
    assert_eq!(ok("chrt -f 50 3"), set(Policy::Fifo, 50, 3));
    assert_eq!(ok("chrt -r 1 3"), set(Policy::RoundRobin, 1, 3));
    assert_eq!(
        ok("chrt 99 3"),
        set(Policy::RoundRobin, 99, 3),
        "Linux default: RR"
    );
    assert_eq!(ok("chrt -o 0 3"), set(Policy::Normal, 0, 3));
    assert_eq!(ok("chrt -b 0 3"), set(Policy::Batch, 0, 3));
    assert_eq!(ok("chrt -i 0 3"), set(Policy::Idle, 0, 3));
    // Linux's form for an existing pid, clustered flags, long options.
    assert_eq!(ok("chrt -f -p 10 3"), set(Policy::Fifo, 10, 3));
    assert_eq!(ok("chrt -fp 10 3"), set(Policy::Fifo, 10, 3));
    assert_eq!(ok("chrt -p -o 0 3"), set(Policy::Normal, 0, 3));
    assert_eq!(ok("chrt --fifo --pid 10 3"), set(Policy::Fifo, 10, 3));
    assert_eq!(ok("chrt --batch 0 3"), set(Policy::Batch, 0, 3));
    let show = |target| Command::ChrtShow { target };
    assert_eq!(ok("chrt -p 3"), show(Target::Pid(3)));
    assert_eq!(ok("chrt --pid 3"), show(Target::Pid(3)));
    assert_eq!(ok("chrt -p %2"), show(Target::Job(2)));

    err_is(
        "chrt -f 0 3",
        "chrt: PRIO for SCHED_FIFO must be in [1, 99], got '0'",
    );
    err_is(
        "chrt -r 100 3",
        "chrt: PRIO for SCHED_RR must be in [1, 99], got '100'",
    );
    err_is(
        "chrt 0 3",
        "chrt: PRIO for SCHED_RR must be in [1, 99], got '0'",
    );
    err_is(
        "chrt -o 5 3",
        "chrt: PRIO for SCHED_NORMAL must be 0, got '5'",
    );
    err_is(
        "chrt -b 1 3",
        "chrt: PRIO for SCHED_BATCH must be 0, got '1'",
    );
    err_is(
        "chrt -i -1 3",
        "chrt: PRIO for SCHED_IDLE must be 0, got '-1'",
    );
    err_is(
        "chrt -f 99999999999999999999 3",
        "chrt: PRIO for SCHED_FIFO must be in [1, 99], got '99999999999999999999'",
    );
    err_is(
        "chrt -f x 3",
        "chrt: PRIO must be a decimal integer, got 'x'",
    );
    err_is("chrt -f -r 5 3", "chrt: more than one policy option given");
    err_is("chrt -fr 5 3", "chrt: more than one policy option given");
    err_starts("chrt -f -f 5 3", "chrt: option '-f' given twice");
    err_starts("chrt -x 5 3", "chrt: unknown option '-x' (usage: chrt ");
    err_starts("chrt --deadline 5 3", "chrt: missing --sched-runtime");
    // SCHED_DEADLINE, util-linux's syntax.
    assert_eq!(
        parse("chrt -d --sched-runtime 2000000 --sched-deadline 10000000 0 3"),
        Ok(Some(Command::ChrtDeadline {
            runtime_ns: 2_000_000,
            deadline_ns: 10_000_000,
            period_ns: 0,
            target: Target::Pid(3)
        }))
    );
    assert_eq!(
        parse("chrt -d -T 1000000 -P 20000000 0 3"),
        Ok(Some(Command::ChrtDeadline {
            runtime_ns: 1_000_000,
            deadline_ns: 20_000_000,
            period_ns: 20_000_000,
            target: Target::Pid(3)
        }))
    );
    err_starts(
        "chrt -T 1000000 -D 2000000 0 3",
        "chrt: --sched-deadline and --sched-period need -d (SCHED_DEADLINE)",
    );
    err_starts(
        "chrt -d -f -T 1000 -D 2000 0 3",
        "chrt: more than one policy option given",
    );
    err_starts(
        "chrt -d -T 1ms -D 2000000 0 3",
        "chrt: --sched-runtime must be",
    );
    err_starts(
        "chrt -d -T 1000000 -D 2000000 5 3",
        "chrt: PRIO for SCHED_DEADLINE must be 0, got '5'",
    );
    err_starts("chrt -d -D 2000000 0 3", "chrt: missing --sched-runtime");
    err_starts(
        "chrt --fifo=1 5 3",
        "chrt: option '--fifo=1' takes no value",
    );
    err_starts("chrt", "chrt: missing PRIO");
    err_starts("chrt -p", "chrt: missing PID");
    err_starts("chrt -f 5", "chrt: missing PID");
    err_starts("chrt -f -p 3", "chrt: missing PID");
    err_starts("chrt -f 5 3 4", "chrt: unexpected argument '4'");
    err_is(
        "chrt -f 5 x",
        "chrt: PID must be a decimal integer, got 'x'",
    );
}

/// util-linux 2.41+'s `-T/--sched-runtime` (the custom slice of a
/// SCHED_OTHER or SCHED_BATCH thread), 2.42's optional priority for the
/// non-RT policies, and a job (`%N`) as the target.
#[test]
fn chrt_slices_and_jobs() {
    let set = |policy, runtime_ns, target| Command::Chrt {
        policy,
        prio: 0,
        runtime_ns,
        target,
    };
    assert_eq!(
        ok("chrt -o -T 100000 -p 0 3"),
        set(Policy::Normal, Some(100_000), Target::Pid(3))
    );
    assert_eq!(
        ok("chrt --batch --sched-runtime 3000000 --pid 3"),
        set(Policy::Batch, Some(3_000_000), Target::Pid(3)),
        "the priority may be left out for a fair policy"
    );
    assert_eq!(
        ok("chrt -o --sched-runtime=0 3"),
        set(Policy::Normal, Some(0), Target::Pid(3)),
        "0: back to the base slice"
    );
    assert_eq!(
        ok("chrt -o -T 100000000 %1"),
        set(Policy::Normal, Some(100_000_000), Target::Job(1))
    );
    assert_eq!(
        ok("chrt -b -p %3"),
        set(Policy::Batch, None, Target::Job(3))
    );
    assert_eq!(ok("chrt -i 0 %8"), set(Policy::Idle, None, Target::Job(8)));
    assert_eq!(
        ok("chrt -f 50 %1"),
        Command::Chrt {
            policy: Policy::Fifo,
            prio: 50,
            runtime_ns: None,
            target: Target::Job(1)
        }
    );
    for bad in ["99999", "1", "100000001", "-1"] {
        err_is(
            &format!("chrt -o -T {bad} 3"),
            &format!("chrt: -T NS must be in [100000, 100000000], got '{bad}'"),
        );
    }
    err_is(
        "chrt -o -T 1ms 3",
        "chrt: -T NS must be a decimal integer, got '1ms'",
    );
    for bad in [
        "chrt -T 100000 -p 3",
        "chrt -f -T 100000 5 3",
        "chrt -r -T 100000 5 3",
        "chrt -i -T 100000 3",
    ] {
        err_is(
            bad,
            "chrt: -T/--sched-runtime (the custom slice) needs -o or -b (SCHED_OTHER or SCHED_BATCH)",
        );
    }
    err_starts("chrt -o -T", "chrt: option '-T' needs a value");
    err_starts("chrt -o -T 100000", "chrt: missing PID or %JOB");
    err_starts("chrt -b", "chrt: missing PID or %JOB");
    err_starts("chrt -f 5 %0", "chrt: %JOB must be in [1, 8], got '0'");
    err_starts(
        "chrt -o %1 3",
        "chrt: PRIO must be a decimal integer, got '%1'",
    );
    err_starts("chrt -f %1", "chrt: missing PID or %JOB");
}

#[test]
fn taskset_masks_and_lists() {
    let set = |mask, pid| Command::Taskset {
        mask: sched::CpuMask::from_u64(mask),
        pid,
    };
    let wide = |cpus: &[usize], pid| Command::Taskset {
        mask: sched::CpuMask::from_cpus(cpus),
        pid,
    };
    assert_eq!(ok("taskset -p 3 9"), set(0x3, 9));
    assert_eq!(ok("taskset -p 0x3 9"), set(0x3, 9));
    assert_eq!(ok("taskset -p 0XfF 9"), set(0xff, 9));
    assert_eq!(ok("taskset -p ffffffffffffffff 9"), set(u64::MAX, 9));
    assert_eq!(ok("taskset -p 0x0000000000000000001 9"), set(1, 9));
    assert_eq!(ok("taskset -p 8000000000000000 9"), set(1 << 63, 9));
    assert_eq!(ok("taskset -cp 0-2,5 9"), set(0b100111, 9));
    assert_eq!(ok("taskset -pc 0-2,5 9"), set(0b100111, 9));
    assert_eq!(ok("taskset -c -p 63 9"), set(1 << 63, 9));
    assert_eq!(ok("taskset --cpu-list --pid 1,1,1 9"), set(0b10, 9));
    assert_eq!(ok("taskset -cp 0-7:2 9"), set(0b0101_0101, 9));
    assert_eq!(ok("taskset -cp 0-63 9"), set(u64::MAX, 9));
    // Up to 256 CPUs (MAX_CPUS).
    assert_eq!(ok("taskset -p 10000000000000000 9"), wide(&[64], 9));
    assert_eq!(ok("taskset -cp 64,255 9"), wide(&[64, 255], 9));
    assert_eq!(ok("taskset -cp 62-65 9"), wide(&[62, 63, 64, 65], 9));
    let all = "f".repeat(64);
    assert_eq!(
        ok(&format!("taskset -p 0x{all} 9")),
        Command::Taskset {
            mask: sched::CpuMask::all(),
            pid: 9
        }
    );
    assert_eq!(
        ok("taskset -p 9"),
        Command::TasksetShow {
            pid: 9,
            list: false
        }
    );
    assert_eq!(
        ok("taskset -cp 9"),
        Command::TasksetShow { pid: 9, list: true }
    );

    err_is("taskset -p 0 9", "taskset: mask must not be empty (zero)");
    err_is("taskset -p 0x 9", "taskset: invalid hex mask '0x'");
    err_is("taskset -p 0xg 9", "taskset: invalid hex mask '0xg'");
    err_is("taskset -p 1,2 9", "taskset: invalid hex mask '1,2'");
    // 257 bits (the quote is cut at 40 characters).
    err_is(
        &format!("taskset -p 1{all} 9"),
        &format!("taskset: '1{}...' does not fit 256 CPUs", &all[..39]),
    );
    err_is("taskset -cp 256 9", "taskset: '256' does not fit 256 CPUs");
    err_is(
        "taskset -cp 0-99999999999 9",
        "taskset: '0-99999999999' does not fit 256 CPUs",
    );
    err_is(
        "taskset -cp 3-1 9",
        "taskset: invalid CPU list '3-1': range end below its start",
    );
    let items = "expected N or N-M items separated by commas";
    err_is(
        "taskset -cp 0,,1 9",
        &format!("taskset: invalid CPU list '0,,1': {items}"),
    );
    err_is(
        "taskset -cp 1- 9",
        &format!("taskset: invalid CPU list '1-': {items}"),
    );
    err_is(
        "taskset -cp a 9",
        &format!("taskset: invalid CPU list 'a': {items}"),
    );
    err_is(
        "taskset -cp 0x3 9",
        &format!("taskset: invalid CPU list '0x3': {items}"),
    );
    err_is(
        "taskset -cp 0-3:0 9",
        "taskset: invalid CPU list '0-3:0': stride must be in [1, 255]",
    );
    err_starts(
        "taskset 3 9",
        "taskset: only 'taskset -p' is supported (usage: taskset -p",
    );
    err_starts("taskset -c 0 9", "taskset: only 'taskset -p' is supported");
    err_starts("taskset -p", "taskset: missing PID");
    err_starts("taskset -p 3 9 1", "taskset: unexpected argument '1'");
    err_starts("taskset -a -p 3 9", "taskset: unknown option '-a'");
    err_is(
        "taskset -p 3 x",
        "taskset: PID must be a decimal integer, got 'x'",
    );
}

#[test]
fn spin() {
    let spin = |duration_ms, cpu, nices: &[i32]| {
        Command::Spin(Spin {
            duration_ms,
            cpu,
            threads: nices.iter().map(|&n| SpinThread::nice(n)).collect(),
        })
    };
    assert_eq!(ok("spin -d 1000 0"), spin(1000, None, &[0]));
    assert_eq!(ok("spin -d 100 -5 0 5"), spin(100, None, &[-5, 0, 5]));
    assert_eq!(
        ok("spin 0 -d 100 5"),
        spin(100, None, &[0, 5]),
        "options anywhere"
    );
    assert_eq!(ok("spin -d100 -c1 19"), spin(100, CpuId::new(1), &[19]));
    assert_eq!(ok("spin -d 5 -c 255 0"), spin(5, CpuId::new(255), &[0]));
    assert_eq!(
        ok("spin -c 63 -d 60000 -- -20"),
        spin(60000, CpuId::new(63), &[-20])
    );
    let sixteen = vec!["0"; 16].join(" ");
    assert_eq!(ok(&format!("spin -d 1 {sixteen}")), spin(1, None, &[0; 16]));

    err_is(
        "spin 0",
        "spin: missing -d MS (usage: spin -d MS [-c CPU] SPEC [SPEC ...])",
    );
    err_starts("spin -d 100", "spin: missing SPEC");
    err_starts("spin -d", "spin: option '-d' needs a value");
    err_is("spin -d 0 0", "spin: -d MS must be in [1, 60000], got '0'");
    err_is(
        "spin -d 60001 0",
        "spin: -d MS must be in [1, 60000], got '60001'",
    );
    err_is(
        "spin -d 1s 0",
        "spin: -d MS must be a decimal integer, got '1s'",
    );
    err_is(
        "spin -d 10 -c 256 0",
        "spin: -c CPU must be in [0, 255], got '256'",
    );
    err_is(
        "wakelat -c 256",
        "wakelat: -c CPU must be in [0, 255], got '256'",
    );
    err_is(
        "wakelat -c 99999999999999999999",
        "wakelat: -c CPU must be in [0, 255], got '99999999999999999999'",
    );
    err_is("spin -d 10 20", "spin: NICE must be in [-20, 19], got '20'");
    err_starts(
        "spin -d 10 0 x",
        "spin: bad SPEC 'x' (expected NICE, batch:NICE, idle, slice:US or duty:RUN_US:SLEEP_US)",
    );
    err_is(
        &format!("spin -d 1 {sixteen} 0"),
        "spin: at most 16 SPEC values",
    );
    err_starts("spin -d 1 -d 2 0", "spin: option '-d' given twice");
    err_starts("spin -x 1 0", "spin: unknown option '-x'");
}

/// The SPECs beyond a nice value: the words `lcbench spin` takes.
#[test]
fn spin_specs() {
    let th = |w: &str| match ok(&format!("spin -d 10 {w}")) {
        Command::Spin(s) => s.threads[0],
        other => panic!("{other:?}"),
    };
    let n = SpinThread::nice;
    assert_eq!(
        th("batch:5"),
        SpinThread {
            policy: Policy::Batch,
            ..n(5)
        }
    );
    assert_eq!(
        th("batch:-20"),
        SpinThread {
            policy: Policy::Batch,
            ..n(-20)
        }
    );
    assert_eq!(
        th("idle"),
        SpinThread {
            policy: Policy::Idle,
            ..n(0)
        }
    );
    assert_eq!(
        th("slice:100"),
        SpinThread {
            slice_us: 100,
            ..n(0)
        }
    );
    assert_eq!(
        th("duty:1000:3000"),
        SpinThread {
            duty_us: Some((1000, 3000)),
            ..n(0)
        }
    );
    // Display gives the word back.
    for w in ["batch:5", "idle", "slice:100", "duty:1000:3000", "-3"] {
        assert_eq!(th(w).to_string(), w);
    }
    match ok("spin -d 10 -c 0 duty:1:2 0 idle") {
        Command::Spin(s) => assert_eq!(s.threads.len(), 3),
        other => panic!("{other:?}"),
    }
    err_is(
        "spin -d 10 batch:20",
        "spin: NICE must be in [-20, 19], got '20'",
    );
    err_is(
        "spin -d 10 batch:",
        "spin: NICE must be a decimal integer, got ''",
    );
    err_is(
        "spin -d 10 slice:99",
        "spin: slice:US must be in [100, 100000], got '99'",
    );
    err_is(
        "spin -d 10 slice:100001",
        "spin: slice:US must be in [100, 100000], got '100001'",
    );
    err_is(
        "spin -d 10 duty:0:10",
        "spin: duty:RUN_US:SLEEP_US must be in [1, 10000000], got '0'",
    );
    err_is(
        "spin -d 10 duty:10:x",
        "spin: duty:RUN_US:SLEEP_US must be a decimal integer, got 'x'",
    );
    for bad in ["duty:10", "idle:0", "Batch:0", "fifo", "slice", "duty"] {
        err_starts(
            &format!("spin -d 10 {bad}"),
            &format!("spin: bad SPEC '{bad}'"),
        );
    }
}

#[test]
fn wakelat() {
    assert_eq!(ok("wakelat"), Command::Wakelat(Wakelat::default()));
    assert_eq!(
        Wakelat::default(),
        Wakelat {
            duration_ms: 1000,
            cpu: CpuId::BOOT,
            hogs: 2,
            period_us: 1000,
            policy: Policy::Normal,
            slice_us: 0,
            hog_fifo_prio: 0
        }
    );
    assert_eq!(
        ok("wakelat -d 500 -c 1 -n 0 -p 2000 -P batch -s 100"),
        Command::Wakelat(Wakelat {
            duration_ms: 500,
            cpu: CpuId::new(1).unwrap(),
            hogs: 0,
            period_us: 2000,
            policy: Policy::Batch,
            slice_us: 100,
            hog_fifo_prio: 0
        })
    );
    assert_eq!(
        ok("wakelat -d 5000 -n 1 -p 100000 -f 50"),
        Command::Wakelat(Wakelat {
            duration_ms: 5000,
            hogs: 1,
            period_us: 100_000,
            hog_fifo_prio: 50,
            ..Wakelat::default()
        })
    );
    assert_eq!(
        ok("wakelat --fifo 99"),
        Command::Wakelat(Wakelat {
            hog_fifo_prio: 99,
            ..Wakelat::default()
        })
    );
    assert_eq!(
        ok("wakelat --policy idle --slice 100000 --hogs 15"),
        Command::Wakelat(Wakelat {
            hogs: 15,
            policy: Policy::Idle,
            slice_us: 100_000,
            ..Wakelat::default()
        })
    );
    assert_eq!(ok("wakelat -h"), Command::Help(Some("wakelat")));
    err_is(
        "wakelat -P fifo",
        "wakelat: unknown policy 'fifo' (expected normal, batch or idle)",
    );
    err_is(
        "wakelat -s 99",
        "wakelat: -s SLICE_US must be in [100, 100000], got '99'",
    );
    err_is(
        "wakelat -n 16",
        "wakelat: -n HOGS must be in [0, 15], got '16'",
    );
    err_is(
        "wakelat -p 99",
        "wakelat: -p PERIOD_US must be in [100, 1000000], got '99'",
    );
    err_is(
        "wakelat -d 0",
        "wakelat: -d MS must be in [1, 60000], got '0'",
    );
    err_is(
        "wakelat -f 0",
        "wakelat: -f PRIO must be in [1, 99], got '0'",
    );
    err_is(
        "wakelat -f 100",
        "wakelat: -f PRIO must be in [1, 99], got '100'",
    );
    err_starts("wakelat -f", "wakelat: option '-f' needs a value");
    err_starts("wakelat -P", "wakelat: option '-P' needs a value");
    err_starts("wakelat 5", "wakelat: unexpected argument '5'");
    err_starts("wakelat -x", "wakelat: unknown option '-x'");
    err_starts(
        "wakelat -P batch -P idle",
        "wakelat: option '-P' given twice",
    );
}

#[test]
fn workloads_defaults_and_ranges() {
    assert_eq!(ok("hackbench"), Command::Hackbench(Hackbench::default()));
    assert_eq!(
        Hackbench::default(),
        Hackbench {
            groups: 1,
            loops: 100,
            fds: 20,
            datasize: 100,
            pipe: false,
            threads: false,
            syscall_cost: None,
            sched_cost: None,
            pipe_mutex: false,
            roles: false,
            wakee_flips: None,
        }
    );
    assert_eq!(
        ok("hackbench -g 256 -l 1000000 -f 2048 -s 4096"),
        Command::Hackbench(Hackbench {
            groups: 256,
            loops: 1_000_000,
            fds: 2048,
            datasize: 4096,
            ..Default::default()
        })
    );
    assert_eq!(
        ok("hackbench -f 1"),
        Command::Hackbench(Hackbench {
            fds: 1,
            ..Default::default()
        })
    );
    err_is(
        "hackbench -g 257",
        "hackbench: -g GROUPS must be in [1, 256], got '257'",
    );
    err_is(
        "hackbench -f 0",
        "hackbench: -f FDS must be in [1, 2048], got '0'",
    );
    err_is(
        "hackbench -s 4097",
        "hackbench: -s DATASIZE must be in [1, 4096], got '4097'",
    );
    err_starts(
        "hackbench 5",
        "hackbench: unexpected argument '5' (usage: hackbench [-pMR] [-T|-P]",
    );
    err_starts("hackbench -x", "hackbench: unknown option '-x'");
    err_starts("hackbench -g", "hackbench: option '-g' needs a value");
    err_starts(
        "hackbench -g x",
        "hackbench: -g GROUPS must be a decimal integer, got 'x'",
    );

    assert_eq!(ok("schbench"), Command::Schbench(Schbench::default()));
    assert_eq!(
        Schbench::default(),
        Schbench {
            message_threads: 1,
            workers: 4,
            runtime_s: 5,
            footprint_kb: 256,
            sleep_us: 100,
        }
    );
    assert_eq!(
        ok("schbench -m 2 -t 64 -r 600 -F 0 -s 0"),
        Command::Schbench(Schbench {
            message_threads: 2,
            workers: 64,
            runtime_s: 600,
            footprint_kb: 0,
            sleep_us: 0,
        })
    );
    err_is(
        "schbench -r 0",
        "schbench: -r SECONDS must be in [1, 600], got '0'",
    );
    err_is(
        "schbench -t 4096",
        "schbench: -t WORKERS must be in [1, 4095], got '4096'",
    );
    err_is(
        "schbench -F 65537",
        "schbench: -F KB must be in [0, 65536], got '65537'",
    );
    err_starts(
        "schbench -s -1",
        "schbench: -s USEC must be in [0, 1000000]",
    );
    assert_eq!(ok("cyclictest"), Command::Cyclictest(Cyclictest::default()));
    assert_eq!(
        Cyclictest::default(),
        Cyclictest {
            threads: 1,
            interval_us: 1000,
            loops: 1000,
            prio: 0,
            load_groups: 0,
            cpu: None,
        }
    );
    assert_eq!(
        ok("cyclictest -t 4 -i 100 -l 5 -p 99"),
        Command::Cyclictest(Cyclictest {
            threads: 4,
            interval_us: 100,
            loops: 5,
            prio: 99,
            load_groups: 0,
            cpu: None,
        })
    );
    assert_eq!(
        ok("cyclictest --threads 1 --interval 500 --loops 1000 --priority 50 --load 1"),
        Command::Cyclictest(Cyclictest {
            threads: 1,
            interval_us: 500,
            loops: 1000,
            prio: 50,
            load_groups: 1,
            cpu: None,
        })
    );
    assert_eq!(ok("cyclictest -L 8"), ok("cyclictest --load=8"));
    assert_eq!(
        ok("cyclictest -p 50 -L 1 -a 1"),
        Command::Cyclictest(Cyclictest {
            threads: 1,
            interval_us: 1000,
            loops: 1000,
            prio: 50,
            load_groups: 1,
            cpu: CpuId::new(1),
        })
    );
    assert_eq!(ok("cyclictest -a 0"), ok("cyclictest --affinity=0"));
    err_starts("cyclictest -a -1", "cyclictest: -a CPU must be in [0, ");
    err_starts("cyclictest -a x", "cyclictest: -a CPU");
    err_is(
        "cyclictest -L 9",
        "cyclictest: -L GROUPS must be in [0, 8], got '9'",
    );
    err_is(
        "cyclictest -i 99",
        "cyclictest: -i INTERVAL_US must be in [100, 1000000], got '99'",
    );
    err_is(
        "cyclictest -p 100",
        "cyclictest: -p PRIO must be in [0, 99], got '100'",
    );

    assert_eq!(
        ok("perfpipe"),
        Command::Perfpipe(Perfpipe {
            loops: 100_000,
            cross: false,
            same: false
        })
    );
    assert_eq!(
        ok("perfpipe --same -l 3"),
        Command::Perfpipe(Perfpipe {
            loops: 3,
            cross: false,
            same: true
        })
    );
    err_is("perfpipe -x -s", "perfpipe: -x and -s exclude each other");
    assert_eq!(
        ok("perfpipe -l 1"),
        Command::Perfpipe(Perfpipe {
            loops: 1,
            cross: false,
            same: false
        })
    );
    err_is(
        "perfpipe -l 0",
        "perfpipe: -l LOOPS must be in [1, 10000000], got '0'",
    );
    err_is(
        "perfpipe -l 10000001",
        "perfpipe: -l LOOPS must be in [1, 10000000], got '10000001'",
    );

    assert_eq!(ok("yield"), Command::Yield(YieldPp { loops: 100_000 }));
    assert_eq!(ok("yield -l 7"), Command::Yield(YieldPp { loops: 7 }));
    err_is(
        "yield -l 0",
        "yield: -l LOOPS must be in [1, 10000000], got '0'",
    );
    err_starts("yield -x", "yield: unknown option '-x'");
    err_starts("yield 5", "yield: unexpected argument '5'");
}

#[test]
fn cpu_hotplug() {
    let c = |n| CpuId::new(n).unwrap();
    assert_eq!(
        ok("cpu offline 1"),
        Command::Cpu {
            cpu: c(1),
            online: false
        }
    );
    assert_eq!(
        ok("cpu online 255"),
        Command::Cpu {
            cpu: c(255),
            online: true
        }
    );
    // CPU 0 parses: the kernel refuses it (it stays online).
    assert_eq!(
        ok("cpu offline 0"),
        Command::Cpu {
            cpu: c(0),
            online: false
        }
    );
    err_is(
        "cpu",
        "cpu: missing offline|online (usage: cpu offline N | cpu online N)",
    );
    err_is(
        "cpu offline",
        "cpu: missing N (usage: cpu offline N | cpu online N)",
    );
    err_is(
        "cpu down 1",
        "cpu: unknown action 'down' (expected offline or online)",
    );
    err_is("cpu offline 256", "cpu: N must be in [0, 255], got '256'");
    err_is("cpu offline -1", "cpu: N must be in [0, 255], got '-1'");
    err_starts("cpu offline x", "cpu: ");
    err_starts("cpu offline 1 2", "cpu: unexpected argument '2'");
    err_starts("cpu -f offline 1", "cpu: ");
}

#[test]
fn cgroup() {
    use shell::CgroupCmd;
    let c = |l: &str| match ok(l) {
        Command::Cgroup(c) => c,
        other => panic!("{l}: {other:?}"),
    };
    assert_eq!(
        c("cgroup create a"),
        CgroupCmd::Create {
            name: "a".into(),
            parent: None
        }
    );
    assert_eq!(
        c("cgroup create b1 b"),
        CgroupCmd::Create {
            name: "b1".into(),
            parent: Some("b".into())
        }
    );
    assert_eq!(
        c("cgroup create x root"),
        CgroupCmd::Create {
            name: "x".into(),
            parent: None
        }
    );
    assert_eq!(
        c("cgroup weight b 300"),
        CgroupCmd::Weight {
            name: "b".into(),
            weight: 300
        }
    );
    assert_eq!(
        c("cgroup attach a 5"),
        CgroupCmd::Attach {
            name: "a".into(),
            pid: 5
        }
    );
    assert_eq!(
        c("cgroup attach root 5"),
        CgroupCmd::Attach {
            name: "root".into(),
            pid: 5
        }
    );
    assert_eq!(c("cgroup ls"), CgroupCmd::Ls);
    err_starts("cgroup", "cgroup: missing create|weight|attach|ls|rm");
    err_is(
        "cgroup make a",
        "cgroup: unknown action 'make' (expected create, weight, attach, ls or rm)",
    );
    err_starts("cgroup create", "cgroup: missing NAME");
    err_starts("cgroup create root", "cgroup: bad group name 'root'");
    err_starts("cgroup create a/b", "cgroup: bad group name 'a/b'");
    err_starts(
        "cgroup create abcdefghijklmnopqrstuvwxyz0123456",
        "cgroup: bad group name",
    );
    err_starts("cgroup create a b c", "cgroup: unexpected argument 'c'");
    err_starts("cgroup weight a", "cgroup: missing W");
    err_is(
        "cgroup weight a 0",
        "cgroup: W must be in [1, 10000], got '0'",
    );
    err_is(
        "cgroup weight a 10001",
        "cgroup: W must be in [1, 10000], got '10001'",
    );
    err_starts("cgroup weight a x", "cgroup: ");
    err_starts("cgroup weight root 100", "cgroup: bad group name 'root'");
    err_starts("cgroup attach a", "cgroup: missing PID");
    err_starts("cgroup attach a -1", "cgroup: ");
    err_starts("cgroup ls -l", "cgroup: ");
    err_starts("cgroup ls x", "cgroup: unexpected argument 'x'");
}

#[test]
fn trace() {
    assert_eq!(ok("trace start"), Command::Trace(TraceCmd::Start));
    assert_eq!(ok("trace stop"), Command::Trace(TraceCmd::Stop));
    assert_eq!(ok("trace dump"), Command::Trace(TraceCmd::Dump));
    err_is(
        "trace",
        "trace: missing start|stop|dump (usage: trace start|stop|dump)",
    );
    err_is(
        "trace go",
        "trace: unknown action 'go' (expected start, stop or dump)",
    );
    err_starts("trace start now", "trace: unexpected argument 'now'");
}

#[test]
fn command_names_match_the_help_table() {
    for c in COMMANDS {
        assert!(shell::lookup(c.name).is_some());
    }
    assert_eq!(COMMANDS.len(), 30);
}

/// Every word of the help table reaches its own parser: alone it parses to
/// that command (or its help), or is refused for its arguments, never as an
/// unknown command. (The other way round, that the parser takes no word
/// outside the table, is `props.rs`'s `only_table_words_are_commands`.)
#[test]
fn every_table_word_is_a_command() {
    for c in COMMANDS {
        for line in [c.name.to_string(), format!("{} --no-such-option", c.name)] {
            match parse(&line) {
                Ok(Some(cmd)) => assert!(
                    cmd.name() == c.name || cmd == Command::Help(Some(c.name)),
                    "{line:?} parsed as {cmd:?}"
                ),
                Err(Error::Arg { cmd, .. }) => assert_eq!(cmd, c.name, "{line:?}"),
                other => panic!("{line:?}: {other:?}"),
            }
        }
    }
    // Words that are not in the table are not commands, however close.
    for w in ["Help", "ps2", "sched-debug", "pgbenc", "yields", "compare2"] {
        assert!(shell::lookup(w).is_none());
        assert_eq!(
            parse(w).unwrap_err().to_string(),
            format!("unknown command '{w}' (try 'help')"),
        );
    }
}

#[test]
fn hackbench_ipc_and_task_flags() {
    let hb = |l: &str| match ok(l) {
        Command::Hackbench(h) => h,
        c => panic!("{l}: {c:?}"),
    };
    // Sockets and process mode by default, as Linux hackbench.
    assert!(!hb("hackbench").pipe && !hb("hackbench").threads);
    assert!(hb("hackbench -p").pipe);
    assert!(hb("hackbench --pipe").pipe);
    assert!(hb("hackbench -T").threads);
    assert!(hb("hackbench --threads").threads);
    assert!(!hb("hackbench -P").threads);
    // Of -T and -P the last one counts.
    assert!(!hb("hackbench -T -P").threads);
    assert!(hb("hackbench -P -T").threads);
    assert!(hb("hackbench -pT").pipe && hb("hackbench -pT").threads);
    assert_eq!(
        hb("hackbench --pipe --threads --groups 4 --loops=7 --fds 3 --datasize 1"),
        Hackbench {
            groups: 4,
            loops: 7,
            fds: 3,
            datasize: 1,
            pipe: true,
            threads: true,
            syscall_cost: None,
            sched_cost: None,
            pipe_mutex: false,
            roles: false,
            wakee_flips: None,
        }
    );
    err_starts("hackbench -p 3", "hackbench: unexpected argument '3'");
    err_starts(
        "hackbench --pipe=1",
        "hackbench: option '--pipe=1' takes no value",
    );
    err_starts("hackbench -p -p", "hackbench: option '-p' given twice");
    err_starts(
        "hackbench --sockets",
        "hackbench: unknown option '--sockets'",
    );
}

#[test]
fn hackbench_syscall_cost() {
    let hb = |l: &str| match ok(l) {
        Command::Hackbench(h) => h,
        c => panic!("{l}: {c:?}"),
    };
    // Without -C nothing is charged.
    assert_eq!(hb("hackbench").syscall_cost, None);
    assert_eq!(hb("hackbench -p").syscall_cost_ns(), (0, 0));
    // linux: the measured figures of the run's channel (lcbench costs,
    // docs/results/linux/sim-costs.md "The simulator's qemu:N costs").
    let linux = hb("hackbench -C linux");
    assert_eq!(linux.syscall_cost, Some(SyscallCost::Linux));
    assert_eq!(linux.syscall_cost_ns(), (9_618, 7_773));
    assert_eq!(
        hb("hackbench -p -C linux").syscall_cost_ns(),
        (4_358, 3_883)
    );
    // The pipe flag may come after -C: the figures follow it all the same.
    assert_eq!(
        hb("hackbench --syscall-cost=linux -g 2 -p").syscall_cost_ns(),
        (4_358, 3_883)
    );
    assert_eq!(
        hb("hackbench --syscall-cost linux -T").syscall_cost,
        Some(SyscallCost::Linux)
    );
    // NS: the same for a send and a receive, attached or not, 0 allowed.
    assert_eq!(hb("hackbench -C 5000").syscall_cost_ns(), (5_000, 5_000));
    assert_eq!(hb("hackbench -pC5000").syscall_cost_ns(), (5_000, 5_000));
    assert_eq!(hb("hackbench -C 0").syscall_cost, Some(SyscallCost::Ns(0)));
    assert_eq!(
        hb("hackbench -C 1000000 -g 3"),
        Hackbench {
            groups: 3,
            syscall_cost: Some(SyscallCost::Ns(1_000_000)),
            ..Hackbench::default()
        }
    );
    // Printed back as given.
    assert_eq!(SyscallCost::Linux.to_string(), "linux");
    assert_eq!(SyscallCost::Ns(42).to_string(), "42");
    // Bad values: an error naming the option, nothing parsed.
    err_is(
        "hackbench -C 1000001",
        "hackbench: -C NS must be in [0, 1000000], got '1000001'",
    );
    err_is(
        "hackbench -C -5",
        "hackbench: -C NS must be in [0, 1000000], got '-5'",
    );
    err_starts(
        "hackbench -C Linux",
        "hackbench: -C expects 'linux' or NS (a decimal integer), got 'Linux'",
    );
    err_starts(
        "hackbench -C 5us",
        "hackbench: -C expects 'linux' or NS (a decimal integer), got '5us'",
    );
    err_starts(
        "hackbench --syscall-cost=",
        "hackbench: -C expects 'linux' or NS (a decimal integer), got ''",
    );
    err_starts("hackbench -C", "hackbench: option '-C' needs a value");
    err_starts(
        "hackbench -C linux -C 5",
        "hackbench: option '-C' given twice",
    );
    err_starts(
        "hackbench -C linux -g 0",
        "hackbench: -g GROUPS must be in [1, 256], got '0'",
    );
    // Inside compare and in the background, the same.
    match ok("compare -c default -c NEXT_BUDDY -- hackbench -g 2 -C linux") {
        Command::Compare(c) => assert_eq!(
            *c.workload,
            Command::Hackbench(Hackbench {
                groups: 2,
                syscall_cost: Some(SyscallCost::Linux),
                ..Hackbench::default()
            })
        ),
        c => panic!("{c:?}"),
    }
    assert_eq!(
        ok("hackbench -C 100 &"),
        Command::Background(Box::new(Command::Hackbench(Hackbench {
            syscall_cost: Some(SyscallCost::Ns(100)),
            ..Hackbench::default()
        })))
    );
}

#[test]
fn hackbench_sched_cost() {
    let hb = |l: &str| match ok(l) {
        Command::Hackbench(h) => h,
        c => panic!("{l}: {c:?}"),
    };
    // Without -K nothing is charged, with or without -C.
    assert_eq!(hb("hackbench").sched_cost, None);
    assert_eq!(hb("hackbench -C linux").sched_cost_ns(), (0, 0));
    // linux: Linux's switch and local wakeup less ours' (lcbench costs and
    // the ktest workload_hackbench_switch_and_wake_costs): a process
    // switch by default, a thread switch with -T; pipes and sockets alike.
    let linux = hb("hackbench -K linux");
    assert_eq!(linux.sched_cost, Some(SchedCost::Linux));
    assert_eq!(linux.sched_cost_ns(), (9_221 - 4_297, 6_150 - 4_948));
    assert_eq!(hb("hackbench -p -K linux").sched_cost_ns(), (4_924, 1_202));
    assert_eq!(
        hb("hackbench --sched-cost linux -p -T").sched_cost_ns(),
        (8_723 - 4_297, 1_202)
    );
    // -T after -K, and -P after -T: the last mode word counts.
    assert_eq!(hb("hackbench -K linux -T").sched_cost_ns(), (4_426, 1_202));
    assert_eq!(
        hb("hackbench -T -K linux -P").sched_cost_ns(),
        (4_924, 1_202)
    );
    // Independent of -C: both given, both kept.
    let both = hb("hackbench -p -C linux -K linux");
    assert_eq!(both.syscall_cost_ns(), (4_358, 3_883));
    assert_eq!(both.sched_cost_ns(), (4_924, 1_202));
    // SWITCH_NS,WAKE_NS, attached or not, 0 allowed, printed back as given.
    assert_eq!(hb("hackbench -K 5000,2000").sched_cost_ns(), (5_000, 2_000));
    assert_eq!(hb("hackbench -pK0,7").sched_cost_ns(), (0, 7));
    assert_eq!(
        hb("hackbench --sched-cost=1000000,0 -g 3"),
        Hackbench {
            groups: 3,
            sched_cost: Some(SchedCost::Ns {
                switch_ns: 1_000_000,
                wake_ns: 0
            }),
            ..Hackbench::default()
        }
    );
    assert_eq!(SchedCost::Linux.to_string(), "linux");
    assert_eq!(
        SchedCost::Ns {
            switch_ns: 4,
            wake_ns: 2
        }
        .to_string(),
        "4,2"
    );
    // Bad values: an error naming the option, nothing parsed.
    for bad in ["Linux", "5000", "5000,", ",2", "1,2,3", "5us,2", "1,2us"] {
        err_starts(
            &format!("hackbench -K {bad}"),
            &format!(
                "hackbench: -K expects 'linux' or SWITCH_NS,WAKE_NS (decimal integers), got '{bad}'"
            ),
        );
    }
    err_is(
        "hackbench -K 1000001,0",
        "hackbench: -K NS must be in [0, 1000000], got '1000001'",
    );
    err_is(
        "hackbench -K 1,-2",
        "hackbench: -K NS must be in [0, 1000000], got '-2'",
    );
    err_is(
        "hackbench -K 0,1000001",
        "hackbench: -K NS must be in [0, 1000000], got '1000001'",
    );
    err_starts("hackbench -K", "hackbench: option '-K' needs a value");
    err_starts(
        "hackbench -K linux -K 1,2",
        "hackbench: option '-K' given twice",
    );
    // Inside compare, the same.
    match ok("compare -c default -c NEXT_BUDDY -- hackbench -g 2 -C linux -K linux") {
        Command::Compare(c) => assert_eq!(
            *c.workload,
            Command::Hackbench(Hackbench {
                groups: 2,
                syscall_cost: Some(SyscallCost::Linux),
                sched_cost: Some(SchedCost::Linux),
                ..Hackbench::default()
            })
        ),
        c => panic!("{c:?}"),
    }
}

#[test]
fn hackbench_pipe_mutex() {
    let hb = |l: &str| match ok(l) {
        Command::Hackbench(h) => h,
        c => panic!("{l}: {c:?}"),
    };
    assert!(!hb("hackbench -p -C linux").pipe_mutex);
    assert!(hb("hackbench -p -C linux -M").pipe_mutex);
    assert!(hb("hackbench --pipe-mutex -C linux -p -K linux").pipe_mutex);
    assert!(hb("hackbench -pM -C linux").pipe_mutex);
    // The copy's share of -C linux is what runs under the mutex.
    assert_eq!(Hackbench::LINUX_NULL_SYSCALL_NS, 1_379);
    // Only for pipes with Linux's syscall costs.
    for bad in [
        "hackbench -M",
        "hackbench -p -M",
        "hackbench -M -C linux",
        "hackbench -p -C 5000 -M",
    ] {
        err_starts(bad, "hackbench: -M (the pipe mutex) needs -p and -C linux");
    }
    err_starts(
        "hackbench -p -C linux -M -M",
        "hackbench: option '-M' given twice",
    );
}

#[test]
fn hackbench_roles() {
    let hb = |l: &str| match ok(l) {
        Command::Hackbench(h) => h,
        c => panic!("{l}: {c:?}"),
    };
    // Off by default: the counting costs time per message.
    assert!(!hb("hackbench").roles);
    assert!(hb("hackbench -R").roles);
    assert!(hb("hackbench --roles -p -g 2").roles);
    assert!(hb("hackbench -pR").roles && hb("hackbench -pR").pipe);
    // Any channel and any charge: it only counts.
    assert!(hb("hackbench -p -C linux -K linux -M -R").roles);
    err_starts("hackbench -R -R", "hackbench: option '-R' given twice");
    err_starts(
        "hackbench --roles=1",
        "hackbench: option '--roles=1' takes no value",
    );
    err_starts("hackbench -R 1", "hackbench: unexpected argument '1'");
}

#[test]
fn hackbench_wakee_flips() {
    let hb = |l: &str| match ok(l) {
        Command::Hackbench(h) => h,
        c => panic!("{l}: {c:?}"),
    };
    // Off by default: the parent's flips are the shell's.
    assert_eq!(hb("hackbench").wakee_flips, None);
    assert_eq!(hb("hackbench -W 6").wakee_flips, Some(6));
    assert_eq!(hb("hackbench -W 0").wakee_flips, Some(0));
    assert_eq!(
        hb("hackbench --wakee-flips 1000000").wakee_flips,
        Some(1_000_000)
    );
    assert_eq!(hb("hackbench --wakee-flips=7 -p -g 2").wakee_flips, Some(7));
    assert_eq!(
        hb("hackbench -p -g 2 -l 100 -C linux -K linux -W 6"),
        Hackbench {
            groups: 2,
            pipe: true,
            syscall_cost: Some(SyscallCost::Linux),
            sched_cost: Some(SchedCost::Linux),
            wakee_flips: Some(6),
            ..Hackbench::default()
        }
    );
    err_is(
        "hackbench -W -1",
        "hackbench: -W FLIPS must be in [0, 1000000], got '-1'",
    );
    err_is(
        "hackbench -W 1000001",
        "hackbench: -W FLIPS must be in [0, 1000000], got '1000001'",
    );
    err_is(
        "hackbench -W six",
        "hackbench: -W FLIPS must be a decimal integer, got 'six'",
    );
    err_starts("hackbench -W", "hackbench: option '-W' needs a value");
    err_starts("hackbench -W 1 -W 2", "hackbench: option '-W' given twice");
    // Inside compare, the same.
    match ok("compare -n 3 -c default -c preempt=lazy -- hackbench -g 2 -C linux -W 6") {
        Command::Compare(c) => assert_eq!(
            *c.workload,
            Command::Hackbench(Hackbench {
                groups: 2,
                syscall_cost: Some(SyscallCost::Linux),
                wakee_flips: Some(6),
                ..Hackbench::default()
            })
        ),
        c => panic!("{c:?}"),
    }
    err_is(
        "compare -c default -c NEXT_BUDDY -- hackbench -W x",
        "hackbench: -W FLIPS must be a decimal integer, got 'x'",
    );
}

#[test]
fn workload_dash_h_prints_usage() {
    for (c, opt) in [
        ("hackbench", "-l 5"),
        ("schbench", "-r 5"),
        ("pgbench", "-t 5"),
        ("cyclictest", "-l 5"),
        ("perfpipe", "-l 5"),
        ("yield", "-l 5"),
        ("spin", "-d 5"),
        ("soak", "-t 5"),
    ] {
        assert_eq!(ok(&format!("{c} -h")), Command::Help(Some(c)), "{c}");
        assert_eq!(ok(&format!("{c} --help")), Command::Help(Some(c)), "{c}");
        // -h wins over other options, as with getopt programs that exit on it.
        assert_eq!(ok(&format!("{c} {opt} -h")), Command::Help(Some(c)), "{c}");
        let usage = help_text(Some(c)).unwrap();
        assert!(usage.starts_with(&format!("usage: {c}")), "{usage}");
    }
    // Still an error: an unknown option before -h.
    err_starts("hackbench -x -h", "hackbench: unknown option '-x'");
}

#[test]
fn pgbench() {
    assert_eq!(ok("pgbench"), Command::Pgbench(Pgbench::default()));
    assert_eq!(
        Pgbench::default(),
        Pgbench {
            clients: 1,
            transactions: 10,
            select_only: false,
        }
    );
    assert_eq!(
        ok("pgbench -c 1000 -t 5 -S"),
        Command::Pgbench(Pgbench {
            clients: 1000,
            transactions: 5,
            select_only: true,
        })
    );
    assert_eq!(
        ok("pgbench --client=3 --select-only"),
        Command::Pgbench(Pgbench {
            clients: 3,
            select_only: true,
            ..Default::default()
        })
    );
    err_is(
        "pgbench -c 0",
        "pgbench: -c CLIENTS must be in [1, 1000], got '0'",
    );
    err_is(
        "pgbench -c 1001",
        "pgbench: -c CLIENTS must be in [1, 1000], got '1001'",
    );
    err_is(
        "pgbench -t 0",
        "pgbench: -t TX must be in [1, 1000000], got '0'",
    );
    err_starts("pgbench -s 1", "pgbench: unknown option '-s'");
    err_starts("pgbench -S -S", "pgbench: option '-S' given twice");
    err_starts("pgbench db", "pgbench: unexpected argument 'db'");
}

#[test]
fn soak() {
    assert_eq!(
        ok("soak"),
        Command::Soak(Soak {
            threads: 1000,
            secs: 60,
            seed: None
        })
    );
    assert_eq!(ok("soak"), Command::Soak(Soak::default()));
    let want = Command::Soak(Soak {
        threads: 200,
        secs: 5,
        seed: Some(42),
    });
    assert_eq!(ok("soak -t 200 -s 5 -r 42"), want);
    assert_eq!(ok("soak --seed 42 --threads 200 --secs=5"), want);
    assert_eq!(ok("soak -s5 -t200 --seed=42"), want);
    // Seed 0 is a seed, not "none".
    assert_eq!(
        ok("soak -r 0"),
        Command::Soak(Soak {
            seed: Some(0),
            ..Soak::default()
        })
    );
    assert_eq!(
        ok("soak -r 4294967295"),
        Command::Soak(Soak {
            seed: Some(u32::MAX),
            ..Soak::default()
        })
    );
    err_is(
        "soak -t 0",
        "soak: -t THREADS must be in [1, 4000], got '0'",
    );
    err_is(
        "soak -t 4001",
        "soak: -t THREADS must be in [1, 4000], got '4001'",
    );
    err_is("soak -s 0", "soak: -s SECS must be in [1, 86400], got '0'");
    err_starts(
        "soak -r 4294967296",
        "soak: -r SEED must be in [0, 4294967295]",
    );
    err_starts("soak -r -1", "soak: -r SEED must be in [0, 4294967295]");
    err_starts("soak --seed", "soak: ");
    err_starts("soak extra", "soak: ");
    err_starts("soak -x", "soak: unknown option '-x'");
    err_starts("soak -t 5 -t 6", "soak: ");
}

#[test]
fn background_workloads() {
    let bg = |c: Command| Command::Background(Box::new(c));
    let hb = Hackbench {
        groups: 4,
        loops: 100_000,
        ..Hackbench::default()
    };
    assert_eq!(ok("hackbench -g 4 -l 100000 &"), bg(Command::Hackbench(hb)));
    // Attached, extra blanks, tabs: the same.
    assert_eq!(ok("hackbench -g 4 -l 100000&"), bg(Command::Hackbench(hb)));
    assert_eq!(
        ok("  hackbench -g 4 -l 100000 \t&  "),
        bg(Command::Hackbench(hb))
    );
    assert_eq!(ok("hackbench -g 4 -l 100000 &").name(), "hackbench");
    assert_eq!(
        ok("spin -d 100 0 5 &"),
        bg(Command::Spin(Spin {
            duration_ms: 100,
            cpu: None,
            threads: vec![SpinThread::nice(0), SpinThread::nice(5)],
        }))
    );
    for l in [
        "schbench &",
        "pgbench -c 2 &",
        "cyclictest -t 2 &",
        "perfpipe -l 10 &",
    ] {
        let c = ok(l);
        assert!(
            matches!(&c, Command::Background(w) if w.is_workload()),
            "{l}: {c:?}"
        );
    }
    // The workload's own checks still apply.
    err_is(
        "spin -d 0 0 &",
        "spin: -d MS must be in [1, 60000], got '0'",
    );
    // A comment with '&' in it is still a comment.
    assert_eq!(parse("# a & b"), Ok(None));
}

#[test]
fn misplaced_ampersands_are_refused() {
    err_is(
        "&",
        "'&' needs a workload before it (usage: WORKLOAD ARGS &)",
    );
    err_is(
        "  & ",
        "'&' needs a workload before it (usage: WORKLOAD ARGS &)",
    );
    err_is("& foo", "'&' must end the line (usage: WORKLOAD ARGS &)");
    err_is(
        "& hackbench",
        "'&' must end the line (usage: WORKLOAD ARGS &)",
    );
    err_is(
        "hackbench & ps",
        "'&' must end the line (usage: WORKLOAD ARGS &)",
    );
    err_is(
        "hackbench & spin -d 1 0 &",
        "'&' must end the line (usage: WORKLOAD ARGS &)",
    );
    err_is(
        "hackbench &&",
        "'&&' is not supported: one command per line",
    );
    err_is(
        "hackbench && ps",
        "'&&' is not supported: one command per line",
    );
    err_is(
        "hackbench & &",
        "'&' must end the line (usage: WORKLOAD ARGS &)",
    );
    let only = "only workloads (spin, hackbench, schbench, pgbench, cyclictest, wakelat, perfpipe) run in the background";
    err_is("ps &", &format!("ps: {only}"));
    err_is("kill %1 &", &format!("kill: {only}"));
    err_is("jobs &", &format!("jobs: {only}"));
    err_is("compare -c '' -- hackbench &", &format!("compare: {only}"));
    err_is("hackbench -h &", &format!("help: {only}"));
    // An argument with '&' inside is no background marker either.
    err_is(
        "hackbench -g 4& -l 2",
        "'&' must end the line (usage: WORKLOAD ARGS &)",
    );
    err_is("bogus &", "unknown command 'bogus' (try 'help')");
}

#[test]
fn job_control_commands() {
    assert_eq!(ok("jobs"), Command::Jobs { long: false });
    assert_eq!(ok("jobs -l"), Command::Jobs { long: true });
    assert_eq!(ok("jobs --long"), Command::Jobs { long: true });
    err_is("jobs -x", "jobs: unknown option '-x' (usage: jobs [-l])");
    err_is("jobs 1", "jobs: unexpected argument '1' (usage: jobs [-l])");

    assert_eq!(ok("wait"), Command::Wait(None));
    assert_eq!(ok("wait %1"), Command::Wait(Some(1)));
    assert_eq!(
        ok(&format!("wait %{MAX_JOBS}")),
        Command::Wait(Some(MAX_JOBS))
    );
    assert_eq!(ok("fg"), Command::Fg(None));
    assert_eq!(ok("fg %3"), Command::Fg(Some(3)));
    err_is(
        "wait x",
        "wait: expected %JOB (a job number from 'jobs', e.g. %1), got 'x' (usage: wait [%JOB])",
    );
    err_is(
        "wait 5",
        "wait: expected %JOB (a job number from 'jobs', e.g. %1), got '5' (usage: wait [%JOB])",
    );
    err_is("wait %99", "wait: %JOB must be in [1, 8], got '99'");
    err_is("wait %0", "wait: %JOB must be in [1, 8], got '0'");
    err_is("wait %", "wait: %JOB must be a decimal integer, got ''");
    err_is("wait %x", "wait: %JOB must be a decimal integer, got 'x'");
    err_is(
        "wait %1 %2",
        "wait: unexpected argument '%2' (usage: wait [%JOB])",
    );
    err_is(
        "fg -1",
        "fg: expected %JOB (a job number from 'jobs', e.g. %1), got '-1' (usage: fg [%JOB])",
    );
    err_is("fg %9", "fg: %JOB must be in [1, 8], got '9'");

    assert_eq!(ok("kill %1"), Command::KillJob { job: 1 });
    assert_eq!(ok("kill %8"), Command::KillJob { job: 8 });
    err_is("kill %99", "kill: %JOB must be in [1, 8], got '99'");
    err_is("kill %0", "kill: %JOB must be in [1, 8], got '0'");
    err_is("kill %", "kill: %JOB must be a decimal integer, got ''");
    err_is("kill %-1", "kill: %JOB must be in [1, 8], got '-1'");
    err_is("kill %1x", "kill: %JOB must be a decimal integer, got '1x'");
    err_is(
        "kill %1 %2",
        "kill: unexpected argument '%2' (usage: kill PID | kill %JOB)",
    );
}

#[test]
fn taskset_of_a_job() {
    assert_eq!(
        ok("taskset -p 1 %1"),
        Command::TasksetJob {
            mask: sched::CpuMask::from_u64(1),
            job: 1
        }
    );
    assert_eq!(
        ok("taskset -cp 0-3 %2"),
        Command::TasksetJob {
            mask: sched::CpuMask::from_u64(0xf),
            job: 2
        }
    );
    err_starts("taskset -p 1 %0", "taskset: ");
    err_starts("taskset -p 1 %x", "taskset: ");
    err_is("taskset -p 0 %1", "taskset: mask must not be empty (zero)");
}

#[test]
fn dlperiodic() {
    let d = |tasks, runtime_us, deadline_us, period_us, work_us, duration_ms| {
        Command::Dlperiodic(shell::Dlperiodic {
            tasks,
            runtime_us,
            deadline_us,
            period_us,
            work_us,
            duration_ms,
        })
    };
    // defaults: 4 tasks of 10 ms every 100 ms (deadline = period), 5 ms of work, 1 s
    assert_eq!(
        ok("dlperiodic"),
        d(4, 10_000, 100_000, 100_000, 5_000, 1000)
    );
    assert_eq!(
        ok("dlperiodic -n 6 -r 20000 -D 50000 -p 100000 -w 10000 -d 3000"),
        d(6, 20_000, 50_000, 100_000, 10_000, 3000)
    );
    assert_eq!(
        ok("dlperiodic --tasks 7 --runtime 45000 --period 100000 --work 30000 --duration 3000"),
        d(7, 45_000, 100_000, 100_000, 30_000, 3000)
    );
    // -D 0 is the period; runtime = deadline = period and work = runtime are allowed
    assert_eq!(
        ok("dlperiodic -r 100 -D 0 -p 100 -w 100"),
        d(4, 100, 100, 100, 100, 1000)
    );
    assert_eq!(ok("dlperiodic -h"), Command::Help(Some("dlperiodic")));
    err_is(
        "dlperiodic -r 60000 -D 50000",
        "dlperiodic: the runtime (-r) must be at most the deadline (-D)",
    );
    err_is(
        "dlperiodic -D 200000 -p 100000",
        "dlperiodic: the deadline (-D) must be at most the period (-p)",
    );
    err_is(
        "dlperiodic -r 10000 -w 10001",
        "dlperiodic: the work (-w) must be at most the runtime (-r): a longer job is throttled every period",
    );
    err_starts("dlperiodic -n 0", "dlperiodic: -n TASKS must be");
    err_starts("dlperiodic -n 33", "dlperiodic: -n TASKS must be");
    err_starts("dlperiodic -p 99", "dlperiodic: -p PERIOD_US must be");
    err_starts("dlperiodic -r 1", "dlperiodic: -r RUNTIME_US must be");
    err_starts("dlperiodic -x 1", "dlperiodic: ");
    err_starts("dlperiodic 5", "dlperiodic: ");
    err_starts("dlperiodic -n", "dlperiodic: ");
    // foreground only
    err_starts("dlperiodic &", "dlperiodic: ");
}
