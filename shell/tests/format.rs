//! Output helpers.

use sched::CpuMask;
use sched::{Policy, PreemptMode};
use shell::{CpuList, Ms, PreemptLine, PsRow, SignedMs, PS_HEADER};

#[test]
fn preempt_line() {
    assert_eq!(
        PreemptLine(PreemptMode::Full).to_string(),
        "none voluntary (full) lazy"
    );
    assert_eq!(
        PreemptLine(PreemptMode::None).to_string(),
        "(none) voluntary full lazy"
    );
    assert_eq!(
        PreemptLine(PreemptMode::Lazy).to_string(),
        "none voluntary full (lazy)"
    );
}

#[test]
fn milliseconds() {
    assert_eq!(Ms(0).to_string(), "0.000");
    assert_eq!(Ms(1_234_567).to_string(), "1.234");
    assert_eq!(Ms(u64::MAX).to_string(), "18446744073709.551");
    assert_eq!(format!("{:>8}", Ms(700_000)), "   0.700");
    assert_eq!(SignedMs(-1_500_000).to_string(), "-1.500");
    assert_eq!(SignedMs(i64::MIN).to_string(), "-9223372036854.775");
    assert_eq!(format!("{:>8}", SignedMs(-2_000)), "  -0.002");
}

#[test]
fn cpu_lists() {
    let m = CpuMask::from_u64;
    assert_eq!(CpuList(m(0)).to_string(), "");
    assert_eq!(CpuList(m(0b100111)).to_string(), "0-2,5");
    assert_eq!(CpuList(m(u64::MAX)).to_string(), "0-63");
    assert_eq!(CpuList(m(1 << 63 | 1)).to_string(), "0,63");
    // Beyond 64 CPUs: runs across word boundaries, up to CPU 255.
    assert_eq!(CpuList(CpuMask::first_n(100)).to_string(), "0-99");
    assert_eq!(CpuList(CpuMask::all()).to_string(), "0-255");
    let sparse = CpuMask::from_cpus(&[5, 63, 64, 65, 127, 200, 255]);
    assert_eq!(CpuList(sparse).to_string(), "5,63-65,127,200,255");
    // Round trip through the taskset parser.
    for mask in [
        m(1),
        m(0b1010),
        m(0xff00_ff00),
        m(u64::MAX),
        m(1 << 63),
        sparse,
        CpuMask::all(),
    ] {
        let line = format!("taskset -cp {} 1", CpuList(mask));
        assert_eq!(
            shell::parse(&line),
            Ok(Some(shell::Command::Taskset { mask, pid: 1 }))
        );
    }
}

#[test]
fn ps_rows_line_up_with_the_header() {
    let row = PsRow {
        pid: 12,
        name: "spin-a-very-long-name",
        cpu: sched::CpuId::wrapping(1),
        policy: Policy::Normal,
        nice: -5,
        rt_prio: 0,
        state: "R",
        vruntime_ns: 123_456_789,
        deadline_ns: 126_256_789,
        lag_ns: -700_000,
        slice_ns: 2_800_000,
        runtime_ns: 5_000_000_000,
        switches: 42,
    };
    let line = row.to_string();
    assert_eq!(line.len(), PS_HEADER.len(), "\n{PS_HEADER}\n{line}");
    assert!(
        line.starts_with("   12 spin-a-very-lon   1 NORMAL    -5 R "),
        "{line}"
    );
    assert!(line.ends_with("        42"), "{line}");
    let rt = PsRow {
        policy: Policy::Fifo,
        rt_prio: 50,
        ..row
    }
    .to_string();
    assert_eq!(rt.len(), PS_HEADER.len(), "\n{PS_HEADER}\n{rt}");
    assert!(rt.contains(" FIFO/50    - R "), "{rt}");
    // Right-aligned columns end where their header ends.
    for r in [&line, &rt] {
        for word in [
            "PID", "CPU", "NICE", "VRUNTIME", "DEADLINE", "LAG", "SLICE", "RUNTIME",
        ] {
            let e = PS_HEADER
                .find(&format!(" {word} "))
                .map(|i| i + word.len())
                .unwrap_or(4);
            let b = r.as_bytes();
            assert!(
                b[e] != b' ' && b[e + 1] == b' ',
                "{word}:\n{PS_HEADER}\n{r}"
            );
        }
    }
}

#[test]
fn thread_id_lists() {
    use shell::IdList;
    assert_eq!(IdList(&[]).to_string(), "");
    assert_eq!(IdList(&[9]).to_string(), "9");
    assert_eq!(IdList(&[9, 10, 11, 12]).to_string(), "9-12");
    assert_eq!(IdList(&[9, 10, 12, 14, 15]).to_string(), "9-10,12,14-15");
    assert_eq!(
        IdList(&[u32::MAX - 1, u32::MAX]).to_string(),
        "4294967294-4294967295"
    );
    // Unsorted input: runs as given.
    assert_eq!(IdList(&[5, 6, 1, 2]).to_string(), "5-6,1-2");
}
