//! SCHED_DEADLINE admission on a machine of unequal CPUs: the root
//! domain's limit is 100% of its *capacity* (Linux 7.2's default
//! `sched_rt_runtime_us` = `sched_rt_period_us`) (Linux's `dl_bw_capacity`, the
//! sum of `arch_scale_cpu_capacity` over the span when capacities differ),
//! less the fair servers' 5% per CPU. A little CPU of capacity 512 holds
//! half the bandwidth of a big one; counting it as a whole CPU would admit
//! sets that no placement can run in time. Equal CPUs are unchanged.

use crate::common;
use common::cpu_id;
use common::plat::{machine, Plat};

use sched::smp::{HotplugError, LifecycleError, Scheduler};
use sched::task::ParamsError;
use sched::{SchedTask, TaskId, TaskParams, Topology};

use crate::common::MS;

fn half() -> SchedTask {
    SchedTask::new(TaskParams::deadline(50 * MS, 100 * MS, 100 * MS))
}

/// How many tasks of bandwidth 0.5 the machine admits before the first
/// refusal, which must be the bandwidth's.
fn admitted_halves(s: &Scheduler<Plat>) -> u32 {
    for id in 1..64 {
        match s.spawn(TaskId(id), half(), cpu_id(0)) {
            Ok(_) => {}
            Err(e) => {
                assert_eq!(e, LifecycleError::Params(ParamsError::DlBandwidthExceeded));
                return id - 1;
            }
        }
    }
    panic!("no refusal");
}

#[test]
fn admission_counts_capacity_not_cpus() {
    // 4 equal CPUs: 4 x 1.0 - 4 x 0.05 = 3.8 -> seven halves.
    let s = machine(Topology::flat(4));
    assert_eq!(s.dl_capacity(None), (4, 4096));
    assert_eq!(admitted_halves(&s), 7);
    // 2 big + 2 little (512): 1.0 x 3 - 0.2 = 2.8 -> five halves (2.5);
    // as four whole CPUs it admitted seven, 3.5 CPUs of work on 3.
    let s = machine(
        Topology::flat(4)
            .with_capacities(&[1024, 1024, 512, 512])
            .unwrap(),
    );
    assert_eq!(s.dl_capacity(None), (4, 3072));
    let before = s.cpu_rq(cpu_id(0)).config().dl_bw.total_bw();
    assert_eq!(before, 0);
    assert_eq!(admitted_halves(&s), 5);
}

#[test]
fn a_little_cpu_going_offline_frees_only_its_capacity() {
    let s = machine(
        Topology::flat(4)
            .with_capacities(&[1024, 1024, 512, 512])
            .unwrap(),
    );
    assert_eq!(admitted_halves(&s), 5);
    // Without CPU 3: 1.0 x 2.5 - 0.15 = 2.35 < 2.5 admitted: refused,
    // nothing changes.
    assert_eq!(s.dl_capacity(Some(cpu_id(3))), (3, 2560));
    assert_eq!(
        s.sched_cpu_deactivate(cpu_id(3), cpu_id(0)),
        Err(HotplugError::DlBandwidth)
    );
    assert!(s.cpu_active(cpu_id(3)));
    // With one half gone (2.0 admitted) it fits.
    s.set_params(TaskId(5), TaskParams::default(), cpu_id(0))
        .unwrap();
    s.sched_cpu_deactivate(cpu_id(3), cpu_id(0)).unwrap();
    assert!(!s.cpu_active(cpu_id(3)));
    assert_eq!(s.dl_capacity(None), (3, 2560));
}

/// Linux 7.2's limit, as `make linux-compare`'s `dl_admit_25of100` row
/// measured it (Debian's 7.2.13 at 4 vCPUs: `sched_rt_runtime_us` 1000000,
/// `.dl_bw->bw` 1048576, `.dl_bw->total_bw` 209712 = the four fair servers
/// before any task): 4 x 1.0 - 4 x 0.05 = 3.8 admits fifteen 25/100 ms tasks
/// (3.75), where 95% per CPU (3.6) admitted fourteen.
#[test]
fn four_cpus_admit_fifteen_quarter_tasks_as_linux_7_2() {
    let s = machine(Topology::flat(4));
    let quarter = || SchedTask::new(TaskParams::deadline(25 * MS, 100 * MS, 100 * MS));
    let mut admitted = 0;
    for id in 1..=16 {
        match s.spawn(TaskId(id), quarter(), cpu_id(0)) {
            Ok(_) => admitted += 1,
            Err(e) => {
                assert_eq!(e, LifecycleError::Params(ParamsError::DlBandwidthExceeded));
                break;
            }
        }
    }
    assert_eq!(admitted, 15);
}
