//! A bounded FIFO channel between threads, like a pipe: `send` sleeps while the
//! buffer is full, `recv` while it is empty. The ring is allocated once, at
//! creation; sending and receiving never allocate.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::{SpinLock, WaitQueue};

struct Ring<T> {
    buf: Box<[Option<T>]>,
    head: usize,
    len: usize,
}

impl<T> Ring<T> {
    fn push(&mut self, v: T) {
        let cap = self.buf.len();
        self.buf[(self.head + self.len) % cap] = Some(v);
        self.len += 1;
    }

    fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head].take();
        self.head = (self.head + 1) % self.buf.len();
        self.len -= 1;
        v
    }
}

/// A bounded multi-producer multi-consumer channel.
pub struct Channel<T> {
    ring: SpinLock<Ring<T>>,
    not_empty: WaitQueue,
    not_full: WaitQueue,
}

impl<T: Send> Channel<T> {
    /// A channel that buffers up to `capacity` (at least 1) messages.
    pub fn new(capacity: usize) -> Self {
        let mut buf = Vec::with_capacity(capacity.max(1));
        buf.resize_with(capacity.max(1), || None);
        Channel {
            ring: SpinLock::new(Ring {
                buf: buf.into_boxed_slice(),
                head: 0,
                len: 0,
            }),
            not_empty: WaitQueue::new(),
            not_full: WaitQueue::new(),
        }
    }

    /// Queues `v`, sleeping while the channel is full.
    pub fn send(&self, v: T) {
        self.push_wait(v);
        self.not_empty.wake_one();
    }

    /// [`Self::send`] for a sender that blocks right after (a request/reply
    /// pair): wakes the receiver with WF_SYNC, as Linux's pipe writes do.
    pub fn send_sync(&self, v: T) {
        self.push_wait(v);
        self.not_empty.wake_one_sync();
    }

    fn push_wait(&self, v: T) {
        let mut v = Some(v);
        self.not_full.wait_event(|| {
            let mut r = self.ring.lock();
            if r.len < r.buf.len() {
                if let Some(v) = v.take() {
                    r.push(v);
                }
                true
            } else {
                false
            }
        });
    }

    /// Takes the oldest message, sleeping while the channel is empty.
    pub fn recv(&self) -> T {
        let mut out = None;
        self.not_empty.wait_event(|| {
            out = self.ring.lock().pop();
            out.is_some()
        });
        self.not_full.wake_one();
        match out {
            Some(v) => v,
            None => unreachable!("wait_event returned without a message"),
        }
    }

    /// Takes the oldest message if there is one.
    pub fn try_recv(&self) -> Option<T> {
        let v = self.ring.lock().pop();
        if v.is_some() {
            self.not_full.wake_one();
        }
        v
    }

    /// Messages buffered now (a snapshot).
    pub fn len(&self) -> usize {
        self.ring.lock().len
    }

    /// Whether nothing is buffered (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
