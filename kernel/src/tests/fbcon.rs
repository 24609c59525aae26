//! The framebuffer console (`fbcon::FbCon`) drawing into heap memory that
//! stands in for a framebuffer (`fbcon::MemoryConsole`): glyphs land in the
//! right cells in the text colour, control characters and escape sequences
//! draw nothing, long lines wrap, the pitch padding is never written, and
//! the screen scrolls by one text row when the last row is full, the same
//! with the text grid kept in RAM (redrawing changed cells) and without it
//! (moving the framebuffer's rows). Runs in
//! every boot (no framebuffer needed); the GRUB boot checks a real one
//! through a QEMU screendump.

use alloc::vec::Vec;

use crate::fbcon::{layout, MemoryConsole, FG_RGB};
use crate::{kassert, kassert_eq, ktest};

/// The text colour as 0x00RRGGBB.
const FG: u32 = (FG_RGB.0 as u32) << 16 | (FG_RGB.1 as u32) << 8 | FG_RGB.2 as u32;

/// Drawn (non-black) pixels in text cell (col, row).
fn lit(m: &MemoryConsole, cell_w: usize, col: usize, row: usize) -> usize {
    (0..16)
        .flat_map(|y| (0..cell_w).map(move |x| (x, y)))
        .filter(|&(x, y)| m.pixel(col * cell_w + x, row * 16 + y) != 0)
        .count()
}

ktest!(fbcon_draws_wraps_and_scrolls, || {
    draws_wraps_and_scrolls(false)?;
    draws_wraps_and_scrolls(true)?;
    // Both ways of scrolling leave the same picture.
    let (mut a, mut b) = match (
        MemoryConsole::new(80, 96, 48, false),
        MemoryConsole::new(80, 96, 48, true),
    ) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err("memory consoles".into()),
    };
    kassert!(b.con().has_shadow() && !a.con().has_shadow());
    for c in "one\ntwo words\nthree\n\tfour\nfive and more than a row\nsix".chars() {
        a.con().put_char(c);
        b.con().put_char(c);
    }
    kassert!((0..48).all(|y| (0..96).all(|x| a.pixel(x, y) == b.pixel(x, y))));
    Ok(())
});

fn draws_wraps_and_scrolls(shadow: bool) -> crate::ktest::TestResult {
    let (width, pitch_px, height) = (80, 96, 48); // 3 text rows
    let Some(mut m) = MemoryConsole::new(width, pitch_px, height, shadow) else {
        return Err("a 32 bpp RGB framebuffer must be accepted".into());
    };
    let (cols, rows) = m.con().size();
    kassert_eq!(rows, 3);
    kassert!((8..=12).contains(&cols), "{} columns", cols);
    let cell_w = width / cols;
    // "H" in cell 0; an escape sequence and a tab draw nothing.
    "H\x1b[1;31m\tX".chars().for_each(|c| m.con().put_char(c));
    let (h, x) = (lit(&m, cell_w, 0, 0), lit(&m, cell_w, 8, 0));
    kassert!(h > 5, "'H' drew {} pixels", h);
    kassert!(x > 3, "'X' after the tab drew {} pixels at column 8", x);
    for col in 1..8 {
        kassert_eq!(lit(&m, cell_w, col, 0), 0);
    }
    // Glyphs are the text colour blended on black by coverage: grey levels
    // up to the text colour (antialiased 'H' stems stay a little below it).
    let px: Vec<u32> = (0..16)
        .flat_map(|y| (0..cell_w).map(move |x| (x, y)))
        .map(|(x, y)| m.pixel(x, y))
        .collect();
    kassert!(px.iter().all(|&p| {
        let [b, g, r, _] = p.to_le_bytes();
        r == g && g == b && r <= FG_RGB.0
    }));
    let brightest = px.iter().max().copied().unwrap_or(0) & 0xff;
    kassert!(
        brightest * 4 >= u32::from(FG_RGB.2) * 3,
        "brightest {:#x}",
        brightest
    );
    // Wrap: a full row of 'M' then one more character goes to the next row.
    m.con().put_char('\n');
    (0..=cols).for_each(|_| m.con().put_char('M'));
    kassert!(lit(&m, cell_w, cols - 1, 1) > 0);
    kassert!(lit(&m, cell_w, 0, 2) > 0, "the wrapped 'M' is on row 2");
    // Full coverage gives exactly the text colour (the screendump test
    // looks for it).
    let full = (0..3 * 16).any(|y| (0..width).any(|x| m.pixel(x, y) == FG));
    kassert!(full, "no pixel has the full text colour");
    // Row 2 is the last: a newline scrolls, the 'M' row comes up to row 0
    // and the new last row is blank.
    let row1: Vec<usize> = (0..cols).map(|c| lit(&m, cell_w, c, 1)).collect();
    m.con().put_char('\n');
    let row0: Vec<usize> = (0..cols).map(|c| lit(&m, cell_w, c, 0)).collect();
    kassert_eq!(row0, row1);
    kassert!((0..cols).all(|c| lit(&m, cell_w, c, 2) == 0));
    // Nothing was drawn in the pitch padding right of the visible width.
    kassert!((0..height).all(|y| (width..pitch_px).all(|x| m.pixel(x, y) == 0)));
    // Unsupported depths and too-small pitches are refused, not drawn wrongly.
    let fb = |bpp, pitch| boot::Framebuffer {
        addr: 0x1000,
        pitch,
        width: 64,
        height: 64,
        bpp,
        red: (0, 0),
        green: (0, 0),
        blue: (0, 0),
    };
    kassert!(layout(&fb(8, 64)).is_none());
    kassert!(layout(&fb(32, 255)).is_none());
    kassert!(layout(&fb(24, 192)).is_some());
    Ok(())
}
