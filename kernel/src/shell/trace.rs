//! `trace start|stop|dump`: the shell's face of the scheduler's event
//! tracer ([`crate::trace`], which records): it starts and stops recording
//! and prints the rings in ftrace's text format:
//! `<comm>-<pid> [<cpu>] <secs>.<usecs>: sched_switch: prev_comm=...`, idle
//! threads as `<idle>` in the line prefix.

use core::fmt::Write;

use ::shell::TraceCmd;

use super::{CmdResult, Sh};
use crate::trace::{self, is_idle, pid, Comm, Kind, RING_LEN};

fn start(sh: &mut Sh) -> CmdResult {
    trace::start()?;
    let _ = writeln!(
        sh,
        "trace: recording sched_switch, sched_wakeup, sched_wakeup_new, sched_migrate_task ({RING_LEN} events per CPU)"
    );
    Ok(())
}

fn dump(sh: &mut Sh) -> CmdResult {
    let recs = trace::snapshot();
    let _ = writeln!(sh, "# tracer: nop");
    let _ = writeln!(sh, "#");
    let _ = writeln!(
        sh,
        "# entries-in-buffer/entries-written: {}/{}   #P:{}",
        recs.len(),
        recs.len() as u64 + trace::overwritten(),
        crate::sched::nr_cpus()
    );
    let _ = writeln!(sh, "#");
    let _ = writeln!(sh, "#           TASK-PID     CPU#     TIMESTAMP  FUNCTION");
    let _ = writeln!(sh, "#              | |         |         |         |");
    for r in &recs {
        let us = r.ts / 1000;
        if is_idle(r.cur) {
            let _ = write!(sh, "{:>16}-{:<7}", "<idle>", 0);
        } else {
            let _ = write!(sh, "{:>16}-{:<7}", r.cur_comm, r.cur);
        }
        let _ = write!(
            sh,
            " [{:03}] {:>5}.{:06}: ",
            r.cpu,
            us / 1_000_000,
            us % 1_000_000
        );
        let _ = match r.kind {
            Kind::Switch { state } => writeln!(
                sh,
                "sched_switch: prev_comm={} prev_pid={} prev_prio={} prev_state={} ==> next_comm={} next_pid={} next_prio={}",
                Comm(r.a, r.a_comm),
                pid(r.a),
                r.a_prio,
                state,
                Comm(r.b, r.b_comm),
                pid(r.b),
                r.b_prio
            ),
            Kind::Wakeup { new, target } => writeln!(
                sh,
                "{}: comm={} pid={} prio={} target_cpu={:03}",
                if new { "sched_wakeup_new" } else { "sched_wakeup" },
                Comm(r.a, r.a_comm),
                pid(r.a),
                r.a_prio,
                target
            ),
            Kind::Migrate { orig, dest } => writeln!(
                sh,
                "sched_migrate_task: comm={} pid={} prio={} orig_cpu={} dest_cpu={}",
                Comm(r.a, r.a_comm),
                pid(r.a),
                r.a_prio,
                orig,
                dest
            ),
        };
    }
    Ok(())
}

/// `trace start` (clears the rings and records), `trace stop`, `trace dump`.
pub fn command(sh: &mut Sh, c: TraceCmd) -> CmdResult {
    match c {
        TraceCmd::Start => start(sh),
        TraceCmd::Stop => {
            let n = trace::stop();
            let _ = writeln!(
                sh,
                "trace: stopped; {n} events in the buffer ({} overwritten)",
                trace::overwritten()
            );
            Ok(())
        }
        TraceCmd::Dump => dump(sh),
    }
}
