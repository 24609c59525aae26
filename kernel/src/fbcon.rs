//! The framebuffer text console: what the serial console prints, drawn on
//! the linear framebuffer the loader set up (x86_64: the Multiboot2
//! framebuffer tag), for PCs without a serial port to read.
//!
//! - Glyphs: Noto Sans Mono, 16 px high, pre-rasterised with 8-bit
//!   coverage (the `noto-sans-mono-bitmap` crate, `no_std`, no allocation,
//!   no floating point: a well-kept font crate instead of a font table of our
//!   own). Characters outside Basic Latin are drawn as `?`.
//! - Pixels: direct RGB at 32, 24 or 16 bits per pixel, with the field
//!   positions and sizes the loader reports; the 256 coverage levels are
//!   turned into pixel values once, at [`init`]. Indexed colour (8 bpp) and
//!   EGA text mode are not drawn (the loader's tag is ignored, serial only).
//! - Control: `\n` (new line), `\r`, `\t` (to a multiple of 8), backspace;
//!   ANSI escape sequences (`ESC [ ... letter`) are skipped, not drawn.
//! - Scrolling: with the text grid kept in RAM ([`FbCon::with_shadow`], one
//!   byte per cell, allocated once when the console starts), the rows move
//!   up in the grid and only the cells whose character changed are redrawn:
//!   the framebuffer is only written, never read (reads of video memory are
//!   very slow on real PCs: uncached or write-combining). Without it (no
//!   memory), a `memmove` of the framebuffer. The last line is cleared.
//!
//! The write path allocates nothing and takes one spin lock, inside the
//! console's own lock; the fault path only tries it ([`write_str`] with
//! `wait` false), so a fault while drawing still reaches the serial port.

use ::sched::SpinMutex as Mutex;
use noto_sans_mono_bitmap::{get_raster, get_raster_width, FontWeight, RasterHeight};

/// Glyph size.
const WEIGHT: FontWeight = FontWeight::Regular;
const HEIGHT: RasterHeight = RasterHeight::Size16;
const CELL_H: usize = HEIGHT.val();
const CELL_W: usize = get_raster_width(WEIGHT, HEIGHT);
/// Text colour (light grey) on black; the GRUB test looks for it.
pub const FG_RGB: (u8, u8, u8) = (0xd0, 0xd0, 0xd0);
/// Tab stops.
const TAB: usize = 8;

/// The memory a console draws into.
enum Pixels {
    /// The loader's framebuffer ([`crate::arch::framebuffer_memory`]).
    Screen(&'static mut [u8]),
    /// Heap memory standing in for one (the tests).
    Memory(alloc::boxed::Box<[u8]>),
}

impl Pixels {
    fn view(&self) -> &[u8] {
        match self {
            Pixels::Screen(m) => m,
            Pixels::Memory(m) => m,
        }
    }

    fn bytes(&mut self) -> &mut [u8] {
        match self {
            Pixels::Screen(m) => m,
            Pixels::Memory(m) => m,
        }
    }
}

/// The console's state: where the next character goes.
pub struct FbCon {
    fb: boot::Framebuffer,
    mem: Pixels,
    /// Bytes per pixel (2, 3 or 4).
    bytes_pp: usize,
    cols: usize,
    rows: usize,
    col: usize,
    row: usize,
    /// Pixel value per coverage level 0..=255 (text colour blended on black).
    lut: [u32; 256],
    /// Inside an escape sequence: 1 after ESC, 2 after `ESC [`.
    escape: u8,
    /// The character in each cell (`cols * rows`, row-major), when kept.
    shadow: Option<alloc::boxed::Box<[u8]>>,
}

static CON: Mutex<Option<FbCon>> = Mutex::named("fbcon", None);

/// Packs an 8-bit channel into a field of `size` bits at `pos`.
fn field(v: u8, (pos, size): (u8, u8)) -> u32 {
    if size == 0 || size > 8 || pos >= 32 {
        return 0;
    }
    (u32::from(v) >> (8 - size)) << pos
}

/// Bytes per pixel and text columns and rows of `fb`, or `None` if its
/// format is not one drawn here.
pub fn layout(fb: &boot::Framebuffer) -> Option<(usize, usize, usize)> {
    let bytes_pp = match fb.bpp {
        16 => 2,
        24 => 3,
        32 => 4,
        _ => return None,
    };
    let (cols, rows) = (fb.width / CELL_W, fb.height / CELL_H);
    let fits = fb
        .width
        .checked_mul(bytes_pp)
        .is_some_and(|row| fb.pitch >= row);
    (cols > 0 && rows > 0 && fits).then_some((bytes_pp, cols, rows))
}

impl FbCon {
    /// A console on `fb` drawing into `mem` (at least `fb.bytes()` long), or
    /// `None` if the format is not one drawn here or `mem` is too short.
    fn new(fb: boot::Framebuffer, mut mem: Pixels) -> Option<FbCon> {
        let (bytes_pp, cols, rows) = layout(&fb)?;
        if mem.bytes().len() < fb.bytes() {
            return None;
        }
        let mut lut = [0u32; 256];
        for (level, px) in lut.iter_mut().enumerate() {
            let scale = |c: u8| (u32::from(c) * level as u32 / 255) as u8;
            *px = field(scale(FG_RGB.0), fb.red)
                | field(scale(FG_RGB.1), fb.green)
                | field(scale(FG_RGB.2), fb.blue);
        }
        Some(FbCon {
            fb,
            mem,
            bytes_pp,
            cols,
            rows,
            col: 0,
            row: 0,
            lut,
            escape: 0,
            shadow: None,
        })
    }

    /// Keeps the text grid in RAM from now on (scrolling then never reads
    /// the framebuffer); the grid starts blank, like the screen after
    /// [`init`]. Unchanged if the memory cannot be had.
    pub fn with_shadow(mut self) -> FbCon {
        let mut grid = alloc::vec::Vec::new();
        if grid.try_reserve_exact(self.cols * self.rows).is_ok() {
            grid.resize(self.cols * self.rows, b' ');
            self.shadow = Some(grid.into_boxed_slice());
        }
        self
    }

    /// Whether the text grid is kept in RAM.
    pub fn has_shadow(&self) -> bool {
        self.shadow.is_some()
    }

    /// Text columns and rows.
    pub fn size(&self) -> (usize, usize) {
        (self.cols, self.rows)
    }

    /// Writes pixel value `px` at (x, y), which must lie inside the
    /// visible rectangle.
    fn put(&mut self, x: usize, y: usize, px: u32) {
        debug_assert!(x < self.fb.width && y < self.fb.height);
        let at = y * self.fb.pitch + x * self.bytes_pp;
        let n = self.bytes_pp;
        // Inside: (x, y) is visible and pitch >= width * bytes_pp (`layout`).
        if let Some(dst) = self.mem.bytes().get_mut(at..at + n) {
            dst.copy_from_slice(&px.to_le_bytes()[..n]);
        }
    }

    /// Draws `c` in the cell at (col, row).
    fn draw(&mut self, c: char, col: usize, row: usize) {
        let glyph = get_raster(c, WEIGHT, HEIGHT).or_else(|| get_raster('?', WEIGHT, HEIGHT));
        let Some(glyph) = glyph else { return };
        let (x0, y0) = (col * CELL_W, row * CELL_H);
        for (dy, line) in glyph.rows().enumerate().take(CELL_H) {
            for (dx, &level) in line.iter().enumerate().take(CELL_W) {
                self.put(x0 + dx, y0 + dy, self.lut[usize::from(level)]);
            }
        }
    }

    /// Clears text rows `from..to` (to black).
    fn clear_rows(&mut self, from: usize, to: usize) {
        let line = CELL_H * self.fb.pitch;
        // Inside: rows * CELL_H <= height.
        if let Some(rows) = self.mem.bytes().get_mut(from * line..to * line) {
            rows.fill(0);
        }
    }

    /// Moves every text row up by one and clears the last.
    fn scroll(&mut self) {
        if let Some(mut grid) = self.shadow.take() {
            let cols = self.cols;
            for row in 0..self.rows - 1 {
                for col in 0..cols {
                    let (old, new) = (grid[row * cols + col], grid[(row + 1) * cols + col]);
                    if old != new {
                        self.draw(char::from(new), col, row);
                        grid[row * cols + col] = new;
                    }
                }
            }
            grid[(self.rows - 1) * cols..].fill(b' ');
            self.shadow = Some(grid);
            self.clear_rows(self.rows - 1, self.rows);
            return;
        }
        let line = CELL_H * self.fb.pitch;
        let rows = self.rows;
        self.mem.bytes().copy_within(line..rows * line, 0);
        self.clear_rows(rows - 1, rows);
    }

    fn newline(&mut self) {
        self.col = 0;
        if self.row + 1 < self.rows {
            self.row += 1;
        } else {
            self.scroll();
        }
    }

    /// Handles one character.
    pub fn put_char(&mut self, c: char) {
        match (self.escape, c) {
            (0, '\x1b') => self.escape = 1,
            (1, '[') => self.escape = 2,
            (1, _) => self.escape = 0,
            // Parameters and intermediates until the final byte (@..~).
            (2, '@'..='~') => self.escape = 0,
            (2, _) => {}
            (_, '\n') => self.newline(),
            (_, '\r') => self.col = 0,
            (_, '\t') => {
                self.col = (self.col / TAB + 1) * TAB;
                if self.col >= self.cols {
                    self.newline();
                }
            }
            (_, '\x08') => self.col = self.col.saturating_sub(1),
            (_, c) if c.is_control() => {}
            (_, c) => {
                if self.col >= self.cols {
                    self.newline();
                }
                // Drawn as '?' when the font lacks it; kept so in the grid.
                let c = if get_raster(c, WEIGHT, HEIGHT).is_some() && c.is_ascii() {
                    c
                } else {
                    '?'
                };
                self.draw(c, self.col, self.row);
                let at = self.row * self.cols + self.col;
                if let Some(cell) = self.shadow.as_mut().and_then(|g| g.get_mut(at)) {
                    *cell = c as u8;
                }
                self.col += 1;
            }
        }
    }
}

/// A console drawing into heap memory instead of a framebuffer (32 bpp,
/// `pitch_px` pixels from one row to the next), for the tests.
pub struct MemoryConsole {
    pitch_px: usize,
    con: FbCon,
}

impl MemoryConsole {
    /// `None` if the size holds no text cell or the pitch is too small.
    /// `shadow`: keep the text grid in RAM ([`FbCon::with_shadow`]).
    pub fn new(
        width: usize,
        pitch_px: usize,
        height: usize,
        shadow: bool,
    ) -> Option<MemoryConsole> {
        let buf = alloc::vec![0u8; pitch_px.checked_mul(height)?.checked_mul(4)?];
        let fb = boot::Framebuffer {
            addr: 0,
            pitch: pitch_px * 4,
            width,
            height,
            bpp: 32,
            red: (16, 8),
            green: (8, 8),
            blue: (0, 8),
        };
        let con = FbCon::new(fb, Pixels::Memory(buf.into_boxed_slice()))?;
        let con = if shadow { con.with_shadow() } else { con };
        Some(MemoryConsole { pitch_px, con })
    }

    /// The console.
    pub fn con(&mut self) -> &mut FbCon {
        &mut self.con
    }

    /// The pixel at (x, y) as 0x00RRGGBB (0 outside the buffer).
    pub fn pixel(&self, x: usize, y: usize) -> u32 {
        let at = (y * self.pitch_px + x) * 4;
        match self.con.mem.view().get(at..at + 4) {
            Some(b) => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            None => 0,
        }
    }
}

/// Starts the console on `fb`, whose bytes are `mem`
/// ([`crate::arch::framebuffer_memory`]), and clears the screen; false (and
/// nothing drawn) if its format is not supported. Call once, on the boot
/// CPU, with the heap up (the text grid comes from it).
pub fn init(fb: boot::Framebuffer, mem: &'static mut [u8]) -> bool {
    let Some(con) = FbCon::new(fb, Pixels::Screen(mem)) else {
        return false;
    };
    let mut con = con.with_shadow();
    con.clear_rows(0, con.rows);
    *CON.lock() = Some(con);
    true
}

/// Whether the running console keeps its text grid in RAM.
pub fn has_shadow() -> bool {
    CON.lock().as_ref().is_some_and(FbCon::has_shadow)
}

/// The console's text columns and rows, when it runs.
pub fn size() -> Option<(usize, usize)> {
    CON.lock().as_ref().map(FbCon::size)
}

/// Draws `s` if the console runs. With `wait` false (fault paths) it only
/// tries the lock and draws nothing when another CPU holds it.
pub fn write_str(s: &str, wait: bool) {
    let guard = if wait {
        Some(CON.lock())
    } else {
        CON.try_lock()
    };
    if let Some(mut guard) = guard {
        if let Some(con) = guard.as_mut() {
            s.chars().for_each(|c| con.put_char(c));
        }
    }
}
