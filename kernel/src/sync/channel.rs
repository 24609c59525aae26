//! A bounded FIFO channel between threads: `send` sleeps while the buffer is
//! full, `recv` while it is empty. The message ring is allocated once, at
//! creation; sending and receiving never allocate.
//!
//! # Models
//! How much a channel buffers, when a sender blocks and whom a send or a
//! receive wakes (and with which wake flags) follows one of three models
//! ([`Model`]):
//!
//! - [`Model::Slots`]: `capacity` messages; every `send` wakes one receiver
//!   (plain), `send_sync` with WF_SYNC; every `recv` wakes one blocked sender.
//! - [`Model::Pipe`]: an anonymous pipe, as Linux 6.x `fs/pipe.c`
//!   (`anon_pipe_write` / `anon_pipe_read`):
//!   - capacity: `PIPE_DEF_BUFFERS` = 16 page slots of 4 KiB (64 KiB). A write
//!     smaller than a page is merged into the last page if it fits there
//!     (`PIPE_BUF_FLAG_CAN_MERGE`), else it takes a new slot; a write never
//!     straddles pages. A page slot is freed when its last byte is read.
//!   - readers and writers sleep *exclusively*
//!     (`wait_event_interruptible_exclusive` on `rd_wait` / `wr_wait`).
//!   - a write wakes a reader only if the pipe **was empty** before it
//!     (`was_empty`; the epoll-only `poll_usage` case does not arise here), with
//!     `wake_up_interruptible_sync_poll`: one exclusive waiter, **WF_SYNC**.
//!   - a writer that finds the pipe full sleeps on `wr_wait`; a read that frees
//!     a page slot of a full pipe wakes one writer (sync); a woken writer that
//!     leaves room wakes the next writer (`wake_next_writer`), and a woken
//!     reader that leaves data wakes the next reader (`wake_next_reader`).
//! - [`Model::Socket`]: a unix stream socket, as `net/unix/af_unix.c`
//!   `unix_stream_sendmsg` and `net/core/sock.c`:
//!   - capacity: the sender's `sk_sndbuf` (`SK_WMEM_DEFAULT` = 212992 bytes):
//!     each message is charged its skb truesize (≈ data rounded to 64 bytes +
//!     576 bytes of `sk_buff` and `skb_shared_info`) to `sk_wmem_alloc` until the
//!     receiver consumes it. `sock_alloc_send_pskb` allocates while
//!     `wmem_alloc < sndbuf` (so it may overshoot by one message), else sleeps
//!     in `sock_wait_for_wmem` (`prepare_to_wait`: **non-exclusive**).
//!   - **every** send calls `sk_data_ready` = `sock_def_readable`, which wakes
//!     the receiver's queue when it has a sleeper, with
//!     `wake_up_interruptible_sync_poll` (**WF_SYNC**; the receiver waits in
//!     `unix_stream_data_wait` with `prepare_to_wait`, non-exclusive, so every
//!     sleeper is woken).
//!   - consuming a message frees the skb (`sock_wfree`), whose
//!     `sk_write_space` = `unix_write_space` wakes every blocked sender (sync)
//!     once the socket is writable again: `wmem_alloc * 4 <= sndbuf`. That
//!     queue is the sending socket's only one, so it also wakes a thread
//!     reading on that socket; a channel is one direction, and a workload
//!     that uses a socket both ways says so with
//!     [`Channel::wake_readers_sync`] on the reverse channel.
//!
//! Every thread a channel wakes is counted, by wake flags ([`ChannelStats`]).

use alloc::collections::VecDeque;
use core::sync::atomic::{AtomicU64, Ordering};

use super::{SpinLock, WaitQueue};

/// Linux `PIPE_DEF_BUFFERS`: page slots of a new pipe.
pub const PIPE_SLOTS: usize = 16;
/// The page size of a pipe slot.
pub const PIPE_PAGE: usize = 4096;
/// Linux `SK_WMEM_DEFAULT` (`net.core.wmem_default`): a socket's `sk_sndbuf`.
pub const SOCK_SNDBUF: usize = 212_992;
/// `SKB_DATA_ALIGN(sizeof(struct sk_buff)) + SKB_DATA_ALIGN(sizeof(struct
/// skb_shared_info))` on 64-bit Linux (256 + 320): what an skb costs beyond
/// its data.
pub const SKB_OVERHEAD: usize = 576;

/// How a channel buffers and wakes (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// Up to this many messages (at least 1).
    Slots(usize),
    /// An anonymous pipe carrying writes of this many bytes (1..=4096).
    Pipe {
        /// Bytes per write.
        msg_bytes: usize,
    },
    /// A unix stream socket carrying sends of this many bytes.
    Socket {
        /// Bytes per send.
        msg_bytes: usize,
    },
}

impl Model {
    /// Most messages the channel can hold (the ring it preallocates).
    pub fn max_msgs(self) -> usize {
        match self {
            Model::Slots(n) => n.max(1),
            Model::Pipe { msg_bytes } => PIPE_SLOTS * (PIPE_PAGE / msg_bytes.clamp(1, PIPE_PAGE)),
            Model::Socket { msg_bytes } => SOCK_SNDBUF.div_ceil(skb_truesize(msg_bytes)) + 1,
        }
    }

    /// Bytes the channel allocates for messages of type `T`.
    pub fn ring_bytes<T>(self) -> usize {
        self.max_msgs() * core::mem::size_of::<T>()
    }
}

/// What a message of `bytes` costs a socket's `sk_wmem_alloc` (≈ `skb->truesize`).
pub fn skb_truesize(bytes: usize) -> usize {
    bytes.div_ceil(64) * 64 + SKB_OVERHEAD
}

/// Counters of one channel (snapshot).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Messages queued.
    pub sent: u64,
    /// Messages taken.
    pub received: u64,
    /// Threads woken with WF_SYNC (receivers and blocked senders).
    pub woken_sync: u64,
    /// Threads woken without WF_SYNC.
    pub woken_plain: u64,
    /// Times a sender found the channel full and slept.
    pub sender_waits: u64,
}

impl core::ops::AddAssign for ChannelStats {
    fn add_assign(&mut self, o: Self) {
        self.sent += o.sent;
        self.received += o.received;
        self.woken_sync += o.woken_sync;
        self.woken_plain += o.woken_plain;
        self.sender_waits += o.sender_waits;
    }
}

#[derive(Default)]
struct Counters {
    sent: AtomicU64,
    received: AtomicU64,
    woken_sync: AtomicU64,
    woken_plain: AtomicU64,
    sender_waits: AtomicU64,
}

/// The buffer: the messages, plus the pipe's page slots or the socket's
/// charged bytes.
struct State<T> {
    msgs: VecDeque<T>,
    /// Pipe: (end offset of the written data, messages left) per page slot,
    /// oldest first; `pages.len()` page slots are in use.
    pages: VecDeque<(u16, u16)>,
    /// Socket: `sk_wmem_alloc` of the sending socket.
    wmem: usize,
}

/// A bounded multi-producer multi-consumer channel.
pub struct Channel<T> {
    model: Model,
    st: SpinLock<State<T>>,
    /// Receivers wait here (Linux `rd_wait` / the receiver socket's `sk_wq`).
    readers: WaitQueue,
    /// Blocked senders wait here (`wr_wait` / the sender socket's `sk_wq`).
    writers: WaitQueue,
    n: Counters,
}

impl<T: Send> Channel<T> {
    /// A channel that buffers up to `capacity` (at least 1) messages
    /// ([`Model::Slots`]).
    pub fn new(capacity: usize) -> Self {
        Self::with_model(Model::Slots(capacity))
    }

    /// A channel that buffers and wakes like `model`.
    pub fn with_model(model: Model) -> Self {
        let model = match model {
            Model::Pipe { msg_bytes } => Model::Pipe {
                msg_bytes: msg_bytes.clamp(1, PIPE_PAGE),
            },
            m => m,
        };
        Channel {
            model,
            st: SpinLock::named(
                "channel",
                State {
                    msgs: VecDeque::with_capacity(model.max_msgs()),
                    pages: VecDeque::with_capacity(PIPE_SLOTS),
                    wmem: 0,
                },
            ),
            readers: WaitQueue::new(),
            writers: WaitQueue::new(),
            n: Counters::default(),
        }
    }

    /// The model the channel follows.
    pub fn model(&self) -> Model {
        self.model
    }

    /// Counters so far.
    pub fn stats(&self) -> ChannelStats {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ChannelStats {
            sent: l(&self.n.sent),
            received: l(&self.n.received),
            woken_sync: l(&self.n.woken_sync),
            woken_plain: l(&self.n.woken_plain),
            sender_waits: l(&self.n.sender_waits),
        }
    }

    fn count_woken(&self, n: usize, sync: bool) {
        if n > 0 {
            let c = if sync {
                &self.n.woken_sync
            } else {
                &self.n.woken_plain
            };
            c.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    fn wake_one(&self, q: &WaitQueue, sync: bool) {
        let woke = if sync {
            q.wake_one_sync()
        } else {
            q.wake_one()
        };
        self.count_woken(usize::from(woke), sync);
    }

    fn wake_all_sync(&self, q: &WaitQueue) {
        if !q.is_empty() {
            self.count_woken(q.wake_all_sync(), true);
        }
    }

    /// Whether one more message fits now.
    fn writable(&self, st: &State<T>) -> bool {
        match self.model {
            Model::Slots(n) => st.msgs.len() < n.max(1),
            Model::Pipe { msg_bytes } => {
                let merge = st
                    .pages
                    .back()
                    .is_some_and(|&(end, _)| end as usize + msg_bytes <= PIPE_PAGE);
                merge || st.pages.len() < PIPE_SLOTS
            }
            Model::Socket { .. } => st.wmem < SOCK_SNDBUF,
        }
    }

    /// Queues `v` (the caller checked [`Self::writable`]).
    fn push(&self, st: &mut State<T>, v: T) {
        match self.model {
            Model::Slots(_) => {}
            Model::Pipe { msg_bytes } => match st.pages.back_mut() {
                Some((end, n)) if *end as usize + msg_bytes <= PIPE_PAGE => {
                    *end += msg_bytes as u16;
                    *n += 1;
                }
                _ => st.pages.push_back((msg_bytes as u16, 1)),
            },
            Model::Socket { msg_bytes } => st.wmem += skb_truesize(msg_bytes),
        }
        st.msgs.push_back(v);
        self.n.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the oldest message; the flag says whether a blocked sender is
    /// to be woken (the model's rule).
    fn pop(&self, st: &mut State<T>) -> Option<(T, bool)> {
        let full_before = !self.writable(st);
        let v = st.msgs.pop_front()?;
        self.n.received.fetch_add(1, Ordering::Relaxed);
        let wake_writer = match self.model {
            Model::Slots(_) => true,
            Model::Pipe { .. } => {
                // A page slot freed while the pipe was full (6.x `wake_writer`).
                let freed = match st.pages.front_mut() {
                    Some((_, n)) if *n > 1 => {
                        *n -= 1;
                        false
                    }
                    _ => {
                        st.pages.pop_front();
                        true
                    }
                };
                freed && full_before
            }
            Model::Socket { msg_bytes } => {
                st.wmem = st.wmem.saturating_sub(skb_truesize(msg_bytes));
                // unix_write_space: writable again at a quarter of sndbuf.
                st.wmem * 4 <= SOCK_SNDBUF
            }
        };
        Some((v, wake_writer))
    }

    /// Queues `v`, sleeping while the channel is full. Wakes receivers as the
    /// model says: [`Model::Slots`] one receiver, plain; pipes and sockets
    /// with Linux's flags (WF_SYNC).
    pub fn send(&self, v: T) {
        self.send_flags(v, false);
    }

    /// [`Self::send`] for a sender that blocks right after (a request/reply
    /// pair): with [`Model::Slots`] the receiver is woken with WF_SYNC (pipes
    /// and sockets always wake with WF_SYNC).
    pub fn send_sync(&self, v: T) {
        self.send_flags(v, true);
    }

    fn send_flags(&self, v: T, sync: bool) {
        match self.model {
            Model::Slots(_) => {
                self.send_wait(v);
                self.wake_one(&self.readers, sync);
            }
            Model::Pipe { .. } => self.pipe_write(v),
            Model::Socket { .. } => {
                self.send_wait(v);
                // sock_def_readable, on every send.
                self.wake_all_sync(&self.readers);
            }
        }
    }

    /// Waits (on `writers`) until the message fits and queues it.
    fn send_wait(&self, v: T) {
        let mut v = Some(v);
        let mut waited = false;
        self.writers.wait_event(|| {
            let mut st = self.st.lock();
            if self.writable(&st) {
                if let Some(v) = v.take() {
                    self.push(&mut st, v);
                }
                true
            } else {
                if !waited {
                    waited = true;
                    self.n.sender_waits.fetch_add(1, Ordering::Relaxed);
                }
                false
            }
        });
    }

    /// `anon_pipe_write` for one write.
    fn pipe_write(&self, v: T) {
        let mut st = self.st.lock();
        let mut was_empty = st.msgs.is_empty();
        let mut wake_next_writer = false;
        while !self.writable(&st) {
            drop(st);
            self.n.sender_waits.fetch_add(1, Ordering::Relaxed);
            if was_empty {
                self.wake_one(&self.readers, true);
            }
            self.writers.wait_event(|| self.writable(&self.st.lock()));
            st = self.st.lock();
            was_empty = st.msgs.is_empty();
            wake_next_writer = true;
        }
        self.push(&mut st, v);
        if !self.writable(&st) {
            wake_next_writer = false;
        }
        drop(st);
        if was_empty {
            self.wake_one(&self.readers, true);
        }
        if wake_next_writer {
            self.wake_one(&self.writers, true);
        }
    }

    /// Takes the oldest message, sleeping while the channel is empty.
    pub fn recv(&self) -> T {
        let mut st = self.st.lock();
        let mut woken = false;
        let (v, wake_writer) = loop {
            if let Some(r) = self.pop(&mut st) {
                break r;
            }
            drop(st);
            self.readers.wait_event(|| !self.st.lock().msgs.is_empty());
            woken = true;
            st = self.st.lock();
        };
        // Pipes: a woken reader that leaves data wakes the next reader.
        let wake_next_reader =
            woken && matches!(self.model, Model::Pipe { .. }) && !st.msgs.is_empty();
        drop(st);
        self.after_pop(wake_writer);
        if wake_next_reader {
            self.wake_one(&self.readers, true);
        }
        v
    }

    /// Takes the oldest message if there is one.
    pub fn try_recv(&self) -> Option<T> {
        let r = self.pop(&mut self.st.lock());
        let (v, wake_writer) = r?;
        self.after_pop(wake_writer);
        Some(v)
    }

    /// Wakes blocked senders after a message was taken, as the model says.
    fn after_pop(&self, wake_writer: bool) {
        if !wake_writer {
            return;
        }
        match self.model {
            Model::Slots(_) => self.wake_one(&self.writers, false),
            Model::Pipe { .. } => self.wake_one(&self.writers, true),
            Model::Socket { .. } => self.wake_all_sync(&self.writers),
        }
    }

    /// Wakes every thread sleeping in [`Self::recv`] here, with WF_SYNC,
    /// whether or not a message is there (each re-checks and sleeps again
    /// if not). For a socket used in both directions: a unix stream socket
    /// has one wait queue (`sk_sleep`) for its reader and its writer, so
    /// when the peer consumes a message this end sent, `sock_wfree` →
    /// `unix_write_space` (`wake_up_interruptible_sync_poll` on that queue)
    /// also wakes this end's thread sleeping in `unix_stream_data_wait` for
    /// its reply, before the reply exists. A channel models one direction,
    /// so the consumer calls this on the reverse channel; counted as a
    /// sync wakeup of that channel.
    pub fn wake_readers_sync(&self) {
        self.wake_all_sync(&self.readers);
    }

    /// Messages buffered now (a snapshot).
    pub fn len(&self) -> usize {
        self.st.lock().msgs.len()
    }

    /// Whether nothing is buffered (a snapshot).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
