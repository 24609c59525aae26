//! Nice levels to load weights, and virtual-time scaling (`calc_delta_fair`).
//!
//! A task's share of the CPU is proportional to its weight. Nice 0 weighs
//! [`NICE_0_LOAD`] = 1024 and every nice step multiplies the weight by about 1.25,
//! so that one step moves roughly 10% of CPU between two competing tasks. The two
//! tables are Linux's `sched_prio_to_weight` and `sched_prio_to_wmult`
//! (`kernel/sched/core.c`); the second holds 2^32 / weight so that scaling by a
//! weight is a multiply and a shift instead of a division.

/// The weight of a nice-0 task (Linux's `scale_load_down(NICE_0_LOAD)`).
pub const NICE_0_LOAD: u64 = 1024;
/// Lowest nice value (highest weight).
pub const MIN_NICE: i32 = -20;
/// Highest nice value (lowest weight).
pub const MAX_NICE: i32 = 19;
/// The weight of a SCHED_IDLE task (`WEIGHT_IDLEPRIO`).
pub const WEIGHT_IDLEPRIO: u32 = 3;
/// 2^32 / [`WEIGHT_IDLEPRIO`] (`WMULT_IDLEPRIO`).
pub const WMULT_IDLEPRIO: u32 = 1_431_655_765;

/// Weight of each nice level, nice -20 first.
pub const SCHED_PRIO_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, // -20
    29154, 23254, 18705, 14949, 11916, // -15
    9548, 7620, 6100, 4904, 3906, // -10
    3121, 2501, 1991, 1586, 1277, // -5
    1024, 820, 655, 526, 423, // 0
    335, 272, 215, 172, 137, // 5
    110, 87, 70, 56, 45, // 10
    36, 29, 23, 18, 15, // 15
];

/// 2^32 / weight for each nice level, nice -20 first.
pub const SCHED_PRIO_TO_WMULT: [u32; 40] = [
    48388, 59856, 76040, 92818, 118348, // -20
    147320, 184698, 229616, 287308, 360437, // -15
    449829, 563644, 704093, 875809, 1099582, // -10
    1376151, 1717300, 2157191, 2708050, 3363326, // -5
    4194304, 5237765, 6557202, 8165337, 10153587, // 0
    12820798, 15790321, 19976592, 24970740, 31350126, // 5
    39045157, 49367440, 61356676, 76695844, 95443717, // 10
    119304647, 148102320, 186737708, 238609294, 286331153, // 15
];

/// A load weight and its precomputed inverse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadWeight {
    /// The weight (1024 at nice 0).
    pub weight: u32,
    /// 2^32 / weight.
    pub inv_weight: u32,
}

impl LoadWeight {
    /// The weight of a nice level; out-of-range values are clamped to -20..=19.
    pub const fn from_nice(nice: i32) -> Self {
        let n = if nice < MIN_NICE {
            MIN_NICE
        } else if nice > MAX_NICE {
            MAX_NICE
        } else {
            nice
        };
        let i = (n - MIN_NICE) as usize;
        LoadWeight {
            weight: SCHED_PRIO_TO_WEIGHT[i],
            inv_weight: SCHED_PRIO_TO_WMULT[i],
        }
    }

    /// The weight of SCHED_IDLE tasks.
    pub const IDLE: LoadWeight = LoadWeight {
        weight: WEIGHT_IDLEPRIO,
        inv_weight: WMULT_IDLEPRIO,
    };

    /// The weight of a nice-0 task.
    pub const NICE_0: LoadWeight = LoadWeight::from_nice(0);
}

impl Default for LoadWeight {
    fn default() -> Self {
        LoadWeight::NICE_0
    }
}

/// Converts `delta_exec_ns` of real time into virtual time for an entity of
/// weight `lw`: `delta * NICE_0_LOAD / weight`.
///
/// Like Linux's `__calc_delta` this multiplies by the inverse weight and shifts
/// right by 32; the 128-bit product cannot overflow, so no normalisation loop is
/// needed. A nice-0 entity takes the exact fast path.
#[inline]
pub fn calc_delta_fair(delta_ns: u64, lw: LoadWeight) -> u64 {
    if lw.weight as u64 == NICE_0_LOAD {
        return delta_ns;
    }
    ((delta_ns as u128 * NICE_0_LOAD as u128 * lw.inv_weight as u128) >> 32) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_are_about_ten_percent() {
        for i in 0..39 {
            let r = SCHED_PRIO_TO_WEIGHT[i] as f64 / SCHED_PRIO_TO_WEIGHT[i + 1] as f64;
            assert!((1.20..1.30).contains(&r), "step {i} ratio {r}");
        }
    }

    #[test]
    fn wmult_is_inverse_of_weight() {
        for i in 0..40 {
            let w = SCHED_PRIO_TO_WEIGHT[i] as u64;
            let exact = (1u64 << 32) / w;
            let got = SCHED_PRIO_TO_WMULT[i] as u64;
            assert!(
                got.abs_diff(exact) <= 1,
                "nice {} wmult {} vs {}",
                i as i32 - 20,
                got,
                exact
            );
        }
        assert_eq!((1u64 << 32) / 3, WMULT_IDLEPRIO as u64);
    }

    #[test]
    fn calc_delta_fair_scales_by_inverse_weight() {
        assert_eq!(calc_delta_fair(1_000_000, LoadWeight::NICE_0), 1_000_000);
        // nice 5 (335): 1 ms of real time is 1024/335 ms of virtual time.
        let v = calc_delta_fair(1_000_000, LoadWeight::from_nice(5));
        let exact = 1_000_000u64 * 1024 / 335;
        assert!(v.abs_diff(exact) <= 1, "{v} vs {exact}");
        // nice -20 runs virtual time slowest.
        let v = calc_delta_fair(88_761_000, LoadWeight::from_nice(-20));
        assert!(v.abs_diff(1_024_000) <= 1, "{v}");
        // Clamping of out-of-range nice values.
        assert_eq!(LoadWeight::from_nice(-100), LoadWeight::from_nice(-20));
        assert_eq!(LoadWeight::from_nice(100), LoadWeight::from_nice(19));
    }
}
