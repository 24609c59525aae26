//! The arch layer's generic parts, tested from outside `arch/`: the boot
//! line's count of the CPUs the kernel cannot use.

use crate::arch::{IgnoredCpus, BEYOND_MAX_CPUS};
use crate::{kassert_eq, ktest};

ktest!(ignored_cpus_line_names_every_reason, || {
    use alloc::string::ToString;
    kassert_eq!(IgnoredCpus(&[(0, BEYOND_MAX_CPUS)]).to_string(), "");
    kassert_eq!(
        IgnoredCpus(&[(2, BEYOND_MAX_CPUS), (0, "x")]).to_string(),
        " (2 more ignored: 2 beyond MAX_CPUS (256))"
    );
    kassert_eq!(
        IgnoredCpus(&[(1, "a"), (0, "b"), (3, "c")]).to_string(),
        " (4 more ignored: 1 a, 3 c)"
    );
    Ok(())
});
