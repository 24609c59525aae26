//! SCHED_DEADLINE admission on a machine of unequal CPUs: the root
//! domain's limit is 95% of its *capacity* (Linux's `dl_bw_capacity`, the
//! sum of `arch_scale_cpu_capacity` over the span when capacities differ),
//! less the fair servers' 5% per CPU. A little CPU of capacity 512 holds
//! half the bandwidth of a big one; counting it as a whole CPU would admit
//! sets that no placement can run in time. Equal CPUs are unchanged.

mod common;
use common::cpu_id;
use common::plat::{machine, Plat};

use sched::smp::{HotplugError, LifecycleError, Scheduler};
use sched::task::ParamsError;
use sched::{SchedTask, TaskId, TaskParams, Topology};

const MS: u64 = 1_000_000;

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
    // 4 equal CPUs: 4 x 0.95 - 4 x 0.05 = 3.6 -> seven halves.
    let s = machine(Topology::flat(4));
    assert_eq!(s.dl_capacity(None), (4, 4096));
    assert_eq!(admitted_halves(&s), 7);
    // 2 big + 2 little (512): 0.95 x 3 - 0.2 = 2.65 -> five halves (2.5);
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
    // Without CPU 3: 0.95 x 2.5 - 0.15 = 2.225 < 2.5 admitted: refused,
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
