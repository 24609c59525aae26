//! The validator on the host: one test, since its tables are global.

extern crate std;

use super::*;
use std::string::String;
use std::sync::Mutex;
use std::vec::Vec;

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn sink(args: fmt::Arguments) {
    LINES.lock().unwrap().push(std::format!("{args}"));
}

fn bugs() -> Vec<String> {
    LINES
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("lockdep: BUG: "))
        .cloned()
        .collect()
}

const OFF: Acquire = Acquire {
    trylock: false,
    nested: false,
    irqs_on: false,
};

fn take(k: &Key, addr: usize, c: usize) {
    acquire(k, addr, cpu(c), OFF);
}

fn cpu(i: usize) -> CpuId {
    CpuId::new(i).expect("a test CPU below MAX_CPUS")
}

#[test]
fn validator_finds_what_it_should_and_nothing_else() {
    set_sink(sink);
    enable();
    static A: Key = Key::new("test.a");
    static B: Key = Key::new("test.b");
    static C: Key = Key::new("test.c");
    static RQ: Key = Key::new("test.rq");
    static IRQ: Key = Key::new("test.irq");
    static UNSAFE: Key = Key::new("test.unsafe");

    // A -> B -> C on cpu 0, in order, released in any order: no report.
    take(&A, 1, 0);
    take(&B, 2, 0);
    take(&C, 3, 0);
    assert_eq!(depth(cpu(0)), 3);
    release(2, cpu(0));
    release(3, cpu(0));
    release(1, cpu(0));
    assert_eq!(depth(cpu(0)), 0);
    assert!(bugs().is_empty(), "{:?}", bugs());

    // Two runqueue locks, the second nested: no report; not nested: one.
    take(&RQ, 10, 1);
    acquire(
        &RQ,
        11,
        cpu(1),
        Acquire {
            nested: true,
            ..OFF
        },
    );
    release(11, cpu(1));
    release(10, cpu(1));
    assert!(bugs().is_empty());
    take(&RQ, 10, 1);
    take(&RQ, 11, 1);
    release(11, cpu(1));
    release(10, cpu(1));
    assert!(reported(Kind::Recursive, "test.rq", "test.rq"));
    assert_eq!(bugs().len(), 1);

    // C then A on cpu 2: closes A -> B -> C; reported once with the path.
    take(&C, 3, 2);
    take(&A, 1, 2);
    release(1, cpu(2));
    release(3, cpu(2));
    assert!(reported(Kind::Inversion, "test.a", "test.c"));
    let text = LINES.lock().unwrap().join("\n");
    assert!(
        text.contains("possible circular locking dependency: test.c"),
        "{text}"
    );
    assert!(text.contains("now: cpu 2 holding test.c"), "{text}");
    assert!(text.contains("but test.a ("), "{text}");
    assert!(text.contains("first on cpu 0 holding test.a"), "{text}");
    assert_eq!(bugs().len(), 2);
    // Again, and a trylock in the wrong order: no new report.
    take(&C, 3, 3);
    take(&A, 1, 3);
    release(1, cpu(3));
    release(3, cpu(3));
    take(&B, 2, 3);
    acquire(
        &A,
        1,
        cpu(3),
        Acquire {
            trylock: true,
            ..OFF
        },
    );
    release(1, cpu(3));
    release(2, cpu(3));
    assert_eq!(bugs().len(), 2, "{:?}", bugs());

    // A class only try-locked in an interrupt handler is not irq-used.
    static TRY: Key = Key::new("test.try");
    irq_enter(cpu(4));
    acquire(
        &TRY,
        40,
        cpu(4),
        Acquire {
            trylock: true,
            ..OFF
        },
    );
    release(40, cpu(4));
    irq_exit(cpu(4));
    acquire(
        &TRY,
        40,
        cpu(5),
        Acquire {
            irqs_on: true,
            ..OFF
        },
    );
    release(40, cpu(5));
    assert_eq!(bugs().len(), 2, "{:?}", bugs());
    // A class taken in an interrupt handler, then held with interrupts on.
    irq_enter(cpu(4));
    assert!(in_irq(cpu(4)));
    take(&IRQ, 20, 4);
    release(20, cpu(4));
    irq_exit(cpu(4));
    assert!(bugs().len() == 2);
    acquire(
        &IRQ,
        20,
        cpu(5),
        Acquire {
            irqs_on: true,
            ..OFF
        },
    );
    assert_eq!(
        depth(cpu(5)),
        0,
        "held with interrupts on: checked, not pushed"
    );
    release(20, cpu(5));
    assert!(reported(Kind::IrqUnsafe, "test.irq", "test.irq"));
    // irq-used -> irq-unsafe through a dependency.
    take(&A, 1, 6);
    take(&UNSAFE, 30, 6);
    release(30, cpu(6));
    release(1, cpu(6));
    irq_enter(cpu(6));
    take(&A, 1, 6);
    release(1, cpu(6));
    irq_exit(cpu(6));
    acquire(
        &UNSAFE,
        30,
        cpu(7),
        Acquire {
            irqs_on: true,
            ..OFF
        },
    );
    release(30, cpu(7));
    assert!(reported(Kind::IrqUnsafe, "test.a", "test.unsafe"));
    // A cycle through a third class: X -> Y on cpu 8, Y -> Z on cpu 9, then
    // Z -> X on cpu 10: both old edges are listed with their CPUs.
    static X: Key = Key::new("test.x");
    static Y: Key = Key::new("test.y");
    static Z: Key = Key::new("test.z");
    for (a, b, c) in [(&X, &Y, 8), (&Y, &Z, 9), (&Z, &X, 10)] {
        take(a, 50, c);
        take(b, 51, c);
        release(51, cpu(c));
        release(50, cpu(c));
    }
    assert!(reported(Kind::Inversion, "test.z", "test.x"));
    let text = LINES.lock().unwrap().join("\n");
    assert!(text.contains("(2 step(s))"), "{text}");
    let hop1 = text.find("first on cpu 8 holding test.x");
    let hop2 = text.find("first on cpu 9 holding test.y");
    assert!(hop1.is_some() && hop2.is_some() && hop1 < hop2, "{text}");
    assert!(text.contains("now: cpu 10 holding test.z"), "{text}");
    let s = stats();
    assert_eq!(
        (s.inversions, s.recursive, s.irq_unsafe),
        (2, 1, 2),
        "{s:?}"
    );
    assert_eq!(s.test_reports, 5);
    assert_eq!(s.overflows, 0);
    assert!(s.classes >= 6 && s.dependencies >= 3, "{s:?}");
}
