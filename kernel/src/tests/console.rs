//! The console's receive ring and its flow control (`console::Rx`), driven by
//! a fake UART: nothing may be lost, duplicated or reordered when the source
//! holds more than the ring, and the receive interrupt is masked exactly when
//! the ring fills and unmasked by the read that makes room.

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use crate::console::{Rx, RX_RING_BYTES};
use crate::{kassert, kassert_eq, ktest};

ktest!(console_rx_ring_holds_back_and_loses_nothing, || {
    // A "UART" holding 1.5 rings' worth of a pattern.
    let total = RX_RING_BYTES + RX_RING_BYTES / 2;
    let mut uart: VecDeque<u8> = (0..total).map(|i| (i * 7 % 251) as u8).collect();
    let mut rx = alloc::boxed::Box::new(Rx::new());
    let mut got: Vec<u8> = Vec::with_capacity(total);
    let mut masked = false;
    let mut masks = 0;
    let mut unmasks = 0;

    // The first interrupt fills the ring and must mask the source.
    let (moved, mask) = rx.fill(|| uart.pop_front());
    kassert_eq!(moved, RX_RING_BYTES);
    kassert!(mask);
    masked |= mask;
    masks += usize::from(mask);
    kassert_eq!(uart.len(), total - RX_RING_BYTES);
    // Filling again while full takes nothing and does not mask twice.
    let (moved, mask) = rx.fill(|| uart.pop_front());
    kassert_eq!((moved, mask), (0, false));

    // Reader and "interrupts" interleave: an interrupt only comes while
    // unmasked, and every unmask is followed by one.
    let mut rounds = 0;
    while got.len() < total {
        rounds += 1;
        kassert!(rounds < 10 * total);
        let (b, unmask) = rx.pop();
        let Some(b) = b else {
            kassert!(!masked);
            let (moved, mask) = rx.fill(|| uart.pop_front());
            kassert!(!mask || moved > 0);
            masked |= mask;
            masks += usize::from(mask);
            continue;
        };
        got.push(b);
        if unmask {
            kassert!(masked);
            masked = false;
            unmasks += 1;
            let (_, mask) = rx.fill(|| uart.pop_front());
            masked |= mask;
            masks += usize::from(mask);
        }
    }
    let want: Vec<u8> = (0..total).map(|i| (i * 7 % 251) as u8).collect();
    kassert!(got == want);
    kassert!(uart.is_empty());
    kassert_eq!(rx.len(), 0);
    kassert_eq!(masks, unmasks + usize::from(masked));
    kassert!(masks >= 2);
    Ok(())
});

ktest!(console_held_log_keeps_whole_lines_in_order, || {
    use crate::console::{HeldLog, HELD_LOG_BYTES};
    let mut h = alloc::boxed::Box::new(HeldLog::new());
    // Not holding: nothing is kept, the caller prints.
    kassert!(!h.push(b"early\n"));
    h.set_holding(true);
    kassert!(h.push(b"one\n"));
    kassert!(h.push(b"two two\n"));
    // A line that does not fit is refused whole; the others stay.
    let big = alloc::vec![b'x'; HELD_LOG_BYTES];
    kassert!(!h.push(&big));
    // Taken in order, whole lines only when the buffer is short.
    let mut out = [0u8; 10];
    let n = h.take(&mut out);
    kassert_eq!(&out[..n], b"one\n");
    kassert!(h.push(b"three\n"));
    let mut out = [0u8; 64];
    let n = h.take(&mut out);
    kassert_eq!(&out[..n], b"two two\nthree\n");
    kassert_eq!(h.take(&mut out), 0);
    // Full to the byte, then nothing more.
    let line = alloc::vec![b'y'; HELD_LOG_BYTES / 2 - 1]
        .into_iter()
        .chain(core::iter::once(b'\n'))
        .collect::<Vec<u8>>();
    kassert!(h.push(&line));
    kassert!(h.push(&line));
    kassert!(!h.push(b"\n"));
    // Stopped: further lines are the caller's to print; held ones stay.
    h.set_holding(false);
    kassert!(!h.push(b"late\n"));
    let mut all = alloc::vec![0u8; HELD_LOG_BYTES];
    kassert_eq!(h.take(&mut all), HELD_LOG_BYTES);
    Ok(())
});
