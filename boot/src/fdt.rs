//! Flattened devicetree fix-ups done once at boot, on the blob in place.
//!
//! **`FDT_NOP` tokens.** A loader that edits the tree with libfdt (QEMU with
//! `-dtb`, U-Boot's fix-ups) leaves `FDT_NOP` tokens where it deleted a node
//! or a property (`fdt_nop_node`, `fdt_nop_property`). They are valid (the
//! devicetree specification, "Structure Block": a parser ignores them), but
//! the `fdt` crate's path lookup (0.1.5) stops at a `FDT_NOP` between two
//! nodes, so `/cpus` or `/chosen` after one is not found and the kernel
//! cannot boot. [`strip_nops`] removes them: every later token moves down,
//! the structure block's size shrinks, nothing else changes (the strings
//! block keeps its offset). A blob it cannot walk is left as it is.

/// The devicetree's magic number.
pub const FDT_MAGIC: u32 = 0xd00d_feed;
const BEGIN_NODE: u32 = 1;
const END_NODE: u32 = 2;
const PROP: u32 = 3;
const NOP: u32 = 4;
const END: u32 = 9;
/// Header fields (byte offsets).
const OFF_TOTALSIZE: usize = 4;
const OFF_DT_STRUCT: usize = 8;
const OFF_VERSION: usize = 20;
const OFF_SIZE_DT_STRUCT: usize = 36;
/// The header's size from version 17 on (`size_dt_struct` is its last field).
const HEADER_V17_BYTES: usize = 40;

/// Why a blob was left as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FdtError {
    /// No magic, a version below 17, or a header beyond the blob.
    BadHeader,
    /// The structure block lies outside the blob.
    BadStructBlock,
    /// A token that is not one of the five, or one running past the block
    /// (the byte offset).
    BadToken(usize),
    /// The block ends without `FDT_END`.
    NoEnd,
}

fn be32(blob: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_be_bytes(blob.get(off..off + 4)?.try_into().ok()?))
}

fn put_be32(blob: &mut [u8], off: usize, v: u32) {
    blob[off..off + 4].copy_from_slice(&v.to_be_bytes());
}

/// The length in bytes of the token at `off` (with its payload, 4-aligned),
/// within `block_end`; `None` for a bad or truncated token.
fn token_len(blob: &[u8], off: usize, block_end: usize) -> Option<(u32, usize)> {
    let tok = be32(blob, off)?;
    let len = match tok {
        BEGIN_NODE => {
            let name = blob.get(off + 4..block_end)?;
            let nul = name.iter().position(|&b| b == 0)?;
            4 + (nul + 1).next_multiple_of(4)
        }
        PROP => 12 + (be32(blob, off + 4)? as usize).next_multiple_of(4),
        END_NODE | NOP | END => 4,
        _ => return None,
    };
    (off + len <= block_end).then_some((tok, len))
}

/// Removes the `FDT_NOP` tokens of the devicetree `blob` (its whole
/// `totalsize`) in place and returns how many there were. Checks the whole
/// structure block first: on an error nothing is changed.
pub fn strip_nops(blob: &mut [u8]) -> Result<usize, FdtError> {
    if blob.len() < HEADER_V17_BYTES
        || be32(blob, 0) != Some(FDT_MAGIC)
        || be32(blob, OFF_VERSION).is_none_or(|v| v < 17)
    {
        return Err(FdtError::BadHeader);
    }
    let total = be32(blob, OFF_TOTALSIZE).ok_or(FdtError::BadHeader)? as usize;
    if total > blob.len() || total < HEADER_V17_BYTES {
        return Err(FdtError::BadHeader);
    }
    let blob = &mut blob[..total];
    let start = be32(blob, OFF_DT_STRUCT).ok_or(FdtError::BadHeader)? as usize;
    let size = be32(blob, OFF_SIZE_DT_STRUCT).ok_or(FdtError::BadHeader)? as usize;
    let end = start
        .checked_add(size)
        .filter(|&e| e <= total && start >= HEADER_V17_BYTES)
        .ok_or(FdtError::BadStructBlock)?;
    // Pass 1: walk, count.
    let (mut off, mut nops) = (start, 0);
    loop {
        let (tok, len) = token_len(blob, off, end).ok_or(FdtError::BadToken(off))?;
        nops += usize::from(tok == NOP);
        off += len;
        if tok == END {
            break;
        }
        if off >= end {
            return Err(FdtError::NoEnd);
        }
    }
    if nops == 0 {
        return Ok(0);
    }
    // Pass 2: move every other token down over the NOPs.
    let (mut r, mut w) = (start, start);
    loop {
        let (tok, len) = token_len(blob, r, end).expect("checked by the first pass");
        if tok != NOP {
            blob.copy_within(r..r + len, w);
            w += len;
        }
        r += len;
        if tok == END {
            break;
        }
    }
    blob[w..r].fill(0);
    put_be32(blob, OFF_SIZE_DT_STRUCT, (w - start) as u32);
    Ok(nops)
}
