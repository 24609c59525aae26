//! A byte-at-a-time line editor for a serial console.
//!
//! The UART hands the kernel one byte at a time, from a person at a terminal
//! (raw mode: Enter is CR, arrows are escape sequences) or from a script piped
//! into QEMU's stdin (Enter is LF, everything arrives at once). [`LineEditor::feed`]
//! takes one byte, writes the echo / redraw bytes through a caller-provided sink
//! and returns an [`Event`]:
//!
//! - printable ASCII is appended and echoed; TAB counts as a space;
//! - backspace (0x7f or 0x08) erases one byte, Ctrl-U (0x15) the whole line;
//! - Ctrl-C (0x03) drops the line and reports [`Event::Interrupt`] (the executor
//!   stops a running workload);
//! - CR, LF and CR LF are one Enter each (the LF of a CR LF pair is swallowed, so
//!   piped DOS text gives no extra empty lines);
//! - up / down (`ESC [ A` / `ESC [ B`, also `ESC O A` / `ESC O B`) walk a bounded
//!   history ([`HISTORY_LEN`] lines, no consecutive duplicates, the line being
//!   edited is kept and restored); every other escape sequence is swallowed
//!   whole, never inserted or executed: CSI (`ESC [` parameters, intermediates,
//!   final byte: left/right, Home, Delete, mouse and focus reports, ...), SS3
//!   (`ESC O` + one byte), the string sequences OSC / DCS / SOS / PM / APC
//!   (`ESC ]`, `ESC P`, `ESC X`, `ESC ^`, `ESC _` up to BEL or ST = `ESC \`:
//!   window titles, colour replies, clipboard), and two-byte escapes (`ESC` +
//!   one byte 0x30..=0x7e, e.g. Alt+key) with any intermediates (0x20..=0x2f)
//!   before it. A control byte inside a sequence (CR, LF, Ctrl-C, ...) ends
//!   it and is handled as usual, so an Enter or Ctrl-C is never swallowed;
//! - other control bytes are ignored.
//!
//! Nothing is truncated silently: a line longer than [`MAX_LINE`] bytes keeps
//! being consumed (the excess is neither stored nor echoed) and Enter reports
//! [`LineError::TooLong`]; a byte >= 0x80 is stored and echoed as `?` (so
//! backspace stays one byte = one column) and Enter reports
//! [`LineError::NonAscii`]. Either way the line is not executed and not added to
//! the history.
//!
//! The line lives in a fixed in-struct buffer: feeding a byte never allocates.
//! Only history (one `String` per accepted line) and saving the edited line when
//! history browsing starts allocate.

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// Longest accepted line, in bytes.
pub const MAX_LINE: usize = 1024;
/// History lines kept.
pub const HISTORY_LEN: usize = 32;
/// The prompt the shell prints before each line.
pub const PROMPT: &str = "sched> ";

const BS: u8 = 0x08;
const DEL: u8 = 0x7f;
const CTRL_C: u8 = 0x03;
const CTRL_U: u8 = 0x15;
const TAB: u8 = b'\t';
const CR: u8 = b'\r';
const LF: u8 = b'\n';
const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// Why a finished line was refused. Its `Display` is the error line without the
/// `error: ` prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineError {
    /// More than [`MAX_LINE`] bytes before Enter.
    TooLong {
        /// The limit.
        max: usize,
    },
    /// A byte >= 0x80 (UTF-8 or line noise).
    NonAscii,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LineError::TooLong { max } => write!(f, "line too long (max {max} bytes)"),
            LineError::NonAscii => f.write_str("non-ASCII input (only ASCII is accepted)"),
        }
    }
}

/// What one fed byte produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Nothing to do yet.
    None,
    /// Enter: a complete line (ASCII, without the line terminator, possibly empty).
    /// It stays valid until the next `feed`.
    Line(&'a str),
    /// Ctrl-C: the line was dropped; stop whatever is running.
    Interrupt,
    /// Enter on a line that cannot be executed.
    Error(LineError),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EscState {
    Normal,
    /// After ESC.
    Esc,
    /// After `ESC [`: parameter and intermediate bytes until a final byte.
    Csi,
    /// After `ESC O`: one final byte.
    Ss3,
    /// After `ESC` + intermediate bytes (0x20..=0x2f): more of them, then one
    /// final byte.
    EscInter,
    /// Inside a string sequence (OSC, DCS, SOS, PM, APC) until BEL or ST.
    Str,
    /// After ESC inside a string sequence: `\` ends it (ST).
    StrEsc,
}

/// The line editor. See the [module docs](self).
#[derive(Debug)]
pub struct LineEditor {
    buf: [u8; MAX_LINE],
    /// Bytes stored in `buf`: `min(total, MAX_LINE)`.
    len: usize,
    /// Bytes typed on this line (excess beyond `MAX_LINE` is counted, not kept).
    total: usize,
    esc: EscState,
    /// The previous byte was a CR: a following LF is part of the same Enter.
    after_cr: bool,
    /// `buf` holds the line last returned by [`Event::Line`]; clear on next feed.
    finished: bool,
    history: VecDeque<String>,
    /// While browsing: 0 = the newest history line.
    hist_pos: Option<usize>,
    /// The line being edited when browsing started (bytes, total length).
    saved: (Vec<u8>, usize),
    prompt: &'static str,
}

impl Default for LineEditor {
    fn default() -> Self {
        Self::new()
    }
}

impl LineEditor {
    /// An empty editor with the [`PROMPT`] prompt.
    pub fn new() -> Self {
        Self::with_prompt(PROMPT)
    }

    /// An empty editor with another prompt (used when redrawing the line).
    pub fn with_prompt(prompt: &'static str) -> Self {
        LineEditor {
            buf: [0; MAX_LINE],
            len: 0,
            total: 0,
            esc: EscState::Normal,
            after_cr: false,
            finished: false,
            history: VecDeque::new(),
            hist_pos: None,
            saved: (Vec::new(), 0),
            prompt,
        }
    }

    /// The prompt: print it before feeding the first byte of each line.
    pub fn prompt(&self) -> &'static str {
        self.prompt
    }

    /// The bytes of the line being edited (what has been stored so far);
    /// empty right after a line was returned (for redrawing the line after
    /// the shell printed something in between).
    pub fn current(&self) -> &[u8] {
        if self.finished {
            return &[];
        }
        &self.buf[..self.len]
    }

    /// The history, oldest first.
    pub fn history(&self) -> impl Iterator<Item = &str> + '_ {
        self.history.iter().map(String::as_str)
    }

    /// Feeds one input byte; echo and redraw bytes go to `out`.
    pub fn feed(&mut self, byte: u8, out: &mut dyn FnMut(&[u8])) -> Event<'_> {
        if self.finished {
            self.finished = false;
            self.clear_line();
        }
        let after_cr = core::mem::replace(&mut self.after_cr, false);
        match self.esc {
            EscState::Normal => {}
            // Control bytes end any sequence and are handled below (an Enter
            // or Ctrl-C is never swallowed); ESC starts a new one.
            _ if byte < 0x20 && byte != ESC && !(byte == BEL && self.in_string()) => {
                self.esc = EscState::Normal;
            }
            EscState::Esc => {
                self.esc = match byte {
                    b'[' => EscState::Csi,
                    b'O' => EscState::Ss3,
                    b']' | b'P' | b'X' | b'^' | b'_' => EscState::Str,
                    0x20..=0x2f => EscState::EscInter,
                    ESC => EscState::Esc,
                    // A two-byte escape (Alt+key, ...): swallowed. DEL and
                    // bytes >= 0x80 end it and are handled normally.
                    0x30..=0x7e => EscState::Normal,
                    _ => {
                        self.esc = EscState::Normal;
                        return self.feed_plain(byte, after_cr, out);
                    }
                };
                return Event::None;
            }
            EscState::EscInter => {
                match byte {
                    0x20..=0x2f => {}
                    ESC => self.esc = EscState::Esc,
                    0x30..=0x7e => self.esc = EscState::Normal,
                    _ => {
                        self.esc = EscState::Normal;
                        return self.feed_plain(byte, after_cr, out);
                    }
                }
                return Event::None;
            }
            EscState::Str => {
                self.esc = match byte {
                    BEL => EscState::Normal,
                    ESC => EscState::StrEsc,
                    _ => EscState::Str,
                };
                return Event::None;
            }
            EscState::StrEsc => {
                // ST ends the string; any other byte after ESC starts a new
                // escape sequence (the string was cut short).
                if byte == b'\\' {
                    self.esc = EscState::Normal;
                    return Event::None;
                }
                self.esc = EscState::Esc;
                return self.feed(byte, out);
            }
            EscState::Csi | EscState::Ss3 => match byte {
                ESC => {
                    self.esc = EscState::Esc;
                    return Event::None;
                }
                0x20..=0x3f if self.esc == EscState::Csi => return Event::None,
                0x40..=0x7e => {
                    self.esc = EscState::Normal;
                    match byte {
                        b'A' => self.history_up(out),
                        b'B' => self.history_down(out),
                        _ => {} // left, right, Home, End, Delete, ...: ignored
                    }
                    return Event::None;
                }
                // A broken sequence (DEL, a byte >= 0x80): abandon it, handle
                // the byte normally.
                _ => self.esc = EscState::Normal,
            },
        }
        self.feed_plain(byte, after_cr, out)
    }

    /// Whether a string sequence (OSC, ...) is open: BEL ends it there.
    fn in_string(&self) -> bool {
        matches!(self.esc, EscState::Str | EscState::StrEsc)
    }

    /// One byte outside any escape sequence.
    fn feed_plain(&mut self, byte: u8, after_cr: bool, out: &mut dyn FnMut(&[u8])) -> Event<'_> {
        match byte {
            CR => {
                self.after_cr = true;
                self.enter(out)
            }
            LF if after_cr => Event::None,
            LF => self.enter(out),
            CTRL_C => {
                out(b"^C\r\n");
                self.clear_line();
                self.hist_pos = None;
                Event::Interrupt
            }
            CTRL_U => {
                self.clear_line();
                self.redraw(out);
                Event::None
            }
            BS | DEL => {
                if self.total > 0 {
                    self.total -= 1;
                    if self.total < self.len {
                        self.len = self.total;
                        out(b"\x08 \x08");
                    }
                }
                Event::None
            }
            ESC => {
                self.esc = EscState::Esc;
                Event::None
            }
            TAB => self.insert(b' ', out),
            0x20..=0x7e | 0x80..=0xff => self.insert(byte, out),
            _ => Event::None, // other control bytes
        }
    }

    fn insert(&mut self, byte: u8, out: &mut dyn FnMut(&[u8])) -> Event<'_> {
        self.total = self.total.saturating_add(1);
        if self.len < MAX_LINE {
            self.buf[self.len] = byte;
            self.len += 1;
            out(if byte.is_ascii() {
                core::slice::from_ref(&byte)
            } else {
                b"?"
            });
        }
        Event::None
    }

    fn enter(&mut self, out: &mut dyn FnMut(&[u8])) -> Event<'_> {
        out(b"\r\n");
        self.hist_pos = None;
        if self.total > MAX_LINE {
            self.clear_line();
            return Event::Error(LineError::TooLong { max: MAX_LINE });
        }
        if !self.buf[..self.len].is_ascii() {
            self.clear_line();
            return Event::Error(LineError::NonAscii);
        }
        self.finished = true;
        let Ok(line) = core::str::from_utf8(&self.buf[..self.len]) else {
            return Event::Error(LineError::NonAscii); // unreachable: ASCII is UTF-8
        };
        if !line.trim().is_empty() && self.history.back().map(String::as_str) != Some(line) {
            if self.history.len() == HISTORY_LEN {
                self.history.pop_front();
            }
            self.history.push_back(String::from(line));
        }
        Event::Line(line)
    }

    fn clear_line(&mut self) {
        self.len = 0;
        self.total = 0;
    }

    /// Loads the history line at deque index `idx` into the buffer.
    fn load_history(&mut self, idx: usize) {
        let n = match self.history.get(idx) {
            Some(line) => {
                let n = line.len().min(MAX_LINE);
                self.buf[..n].copy_from_slice(&line.as_bytes()[..n]);
                n
            }
            None => 0,
        };
        self.len = n;
        self.total = n;
    }

    /// Restores the line that was being edited when browsing started.
    fn load_saved(&mut self) {
        let n = self.saved.0.len().min(MAX_LINE);
        self.buf[..n].copy_from_slice(&self.saved.0[..n]);
        self.len = n;
        self.total = self.saved.1.max(n);
    }

    fn history_up(&mut self, out: &mut dyn FnMut(&[u8])) {
        let n = self.history.len();
        let next = match self.hist_pos {
            None if n > 0 => 0,
            Some(p) if p + 1 < n => p + 1,
            _ => return,
        };
        if self.hist_pos.is_none() {
            self.saved.0.clear();
            self.saved.0.extend_from_slice(&self.buf[..self.len]);
            self.saved.1 = self.total;
        }
        self.hist_pos = Some(next);
        self.load_history(n - 1 - next);
        self.redraw(out);
    }

    fn history_down(&mut self, out: &mut dyn FnMut(&[u8])) {
        match self.hist_pos {
            None => return,
            Some(0) => {
                self.hist_pos = None;
                self.load_saved();
            }
            Some(p) => {
                self.hist_pos = Some(p - 1);
                let n = self.history.len();
                self.load_history(n - p);
            }
        }
        self.redraw(out);
    }

    /// Rewrites the whole line: CR, prompt, content (non-ASCII as `?`), erase
    /// to the end of the screen line.
    fn redraw(&self, out: &mut dyn FnMut(&[u8])) {
        out(b"\r");
        out(self.prompt.as_bytes());
        for chunk in self.buf[..self.len].split_inclusive(|b| !b.is_ascii()) {
            match chunk.split_last() {
                Some((last, head)) if !last.is_ascii() => {
                    out(head);
                    out(b"?");
                }
                _ => out(chunk),
            }
        }
        out(b"\x1b[K");
    }
}
