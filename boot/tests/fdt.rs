//! `boot::fdt::strip_nops` on devicetrees built here: the NOPs a libfdt
//! loader leaves go, every other token stays in order, the kernel's parser
//! (the `fdt` crate) finds nodes it missed before, and a blob it cannot walk
//! is left byte for byte as it was.

// The module itself, not the `boot` crate: that links only into a kernel
// (its entry code needs the kernel's symbols), as kernel-hal's addr test.
#[path = "../src/fdt.rs"]
#[allow(dead_code)]
mod fixup;

use fixup::{strip_nops, FdtError, FDT_MAGIC};

const BEGIN_NODE: u32 = 1;
const END_NODE: u32 = 2;
const PROP: u32 = 3;
const NOP: u32 = 4;
const END: u32 = 9;

/// A token of the structure block, as the builder takes it.
#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Begin(&'static str),
    Prop(&'static str, Vec<u8>),
    EndNode,
    Nop,
    End,
}

/// A version-17 blob: header, one empty reservation, structure, strings.
fn build(toks: &[Tok]) -> Vec<u8> {
    let mut strings: Vec<u8> = Vec::new();
    let mut st: Vec<u8> = Vec::new();
    let pad = |v: &mut Vec<u8>| {
        while !v.len().is_multiple_of(4) {
            v.push(0)
        }
    };
    for t in toks {
        match t {
            Tok::Begin(name) => {
                st.extend(BEGIN_NODE.to_be_bytes());
                st.extend(name.as_bytes());
                st.push(0);
                pad(&mut st);
            }
            Tok::Prop(name, val) => {
                let off = strings.len() as u32;
                strings.extend(name.as_bytes());
                strings.push(0);
                st.extend(PROP.to_be_bytes());
                st.extend((val.len() as u32).to_be_bytes());
                st.extend(off.to_be_bytes());
                st.extend(val);
                pad(&mut st);
            }
            Tok::EndNode => st.extend(END_NODE.to_be_bytes()),
            Tok::Nop => st.extend(NOP.to_be_bytes()),
            Tok::End => st.extend(END.to_be_bytes()),
        }
    }
    let off_rsv = 40;
    let off_struct = off_rsv + 16;
    let off_strings = off_struct + st.len();
    let total = off_strings + strings.len();
    let mut b = Vec::new();
    for v in [
        FDT_MAGIC,
        total as u32,
        off_struct as u32,
        off_strings as u32,
        off_rsv as u32,
        17,
        16,
        0,
        strings.len() as u32,
        st.len() as u32,
    ] {
        b.extend(v.to_be_bytes());
    }
    b.extend([0u8; 16]);
    b.extend(st);
    b.extend(strings);
    b
}

fn cell(v: u32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}

/// A small `virt`-like tree; `nops` puts NOPs where QEMU's `-dtb` loading
/// left them: between the root's children (deleted nodes) and inside a
/// node (a deleted property).
fn tree(nops: bool) -> Vec<Tok> {
    let n = |t: Tok| if nops { vec![t] } else { vec![] };
    let mut v = vec![
        Tok::Begin(""),
        Tok::Prop("#address-cells", cell(2)),
        Tok::Begin("psci"),
        Tok::Prop("method", b"hvc\0".to_vec()),
        Tok::EndNode,
    ];
    v.extend(n(Tok::Nop));
    v.extend(n(Tok::Nop));
    v.extend([Tok::Begin("cpus"), Tok::Prop("#address-cells", cell(1))]);
    v.extend(n(Tok::Nop));
    v.extend([
        Tok::Prop("#size-cells", cell(0)),
        Tok::Begin("cpu@0"),
        Tok::Prop("reg", cell(0)),
        Tok::Prop("capacity-dmips-mhz", cell(530)),
        Tok::EndNode,
        Tok::Begin("cpu@1"),
        Tok::Prop("reg", cell(1)),
        Tok::Prop("capacity-dmips-mhz", cell(1024)),
        Tok::EndNode,
        Tok::EndNode,
    ]);
    v.extend(n(Tok::Nop));
    v.extend([
        Tok::Begin("chosen"),
        Tok::Prop("bootargs", b"hz=100\0".to_vec()),
        Tok::EndNode,
        Tok::EndNode,
        Tok::End,
    ]);
    v
}

#[test]
fn nops_go_and_everything_else_stays() {
    let clean = build(&tree(false));
    let mut blob = build(&tree(true));
    let before = blob.len();
    assert_eq!(strip_nops(&mut blob), Ok(4));
    assert_eq!(blob.len(), before, "totalsize and the strings block stay");
    let size_struct = |b: &[u8]| u32::from_be_bytes(b[36..40].try_into().unwrap()) as usize;
    assert_eq!(size_struct(&blob), size_struct(&clean));
    // The structure block is now the clean tree's, token for token.
    let s = 56;
    assert_eq!(
        &blob[s..s + size_struct(&blob)],
        &clean[s..s + size_struct(&clean)]
    );
    // Nothing left to do a second time.
    assert_eq!(strip_nops(&mut blob), Ok(0));
}

#[test]
fn the_kernels_parser_finds_nodes_after_a_nop_only_once_they_are_gone() {
    let mut blob = build(&tree(true));
    {
        let f = fdt::Fdt::new(&blob).unwrap();
        // The bug this works around (fdt 0.1.5's path lookup).
        assert!(f.find_node("/cpus").is_none());
        assert!(f.find_node("/chosen").is_none());
    }
    strip_nops(&mut blob).unwrap();
    let f = fdt::Fdt::new(&blob).unwrap();
    let cpus = f.find_node("/cpus").expect("/cpus");
    let caps: Vec<usize> = cpus
        .children()
        .map(|c| {
            c.property("capacity-dmips-mhz")
                .unwrap()
                .as_usize()
                .unwrap()
        })
        .collect();
    assert_eq!(caps, [530, 1024]);
    assert_eq!(f.chosen().bootargs(), Some("hz=100"));
}

#[test]
fn a_blob_it_cannot_walk_is_left_as_it_was() {
    let good = build(&tree(true));
    let mut cases: Vec<(Vec<u8>, FdtError)> = Vec::new();
    // Bad magic; version 16; totalsize beyond the buffer.
    let mut b = good.clone();
    b[0] ^= 1;
    cases.push((b, FdtError::BadHeader));
    let mut b = good.clone();
    b[20..24].copy_from_slice(&16u32.to_be_bytes());
    cases.push((b, FdtError::BadHeader));
    let mut b = good.clone();
    b[4..8].copy_from_slice(&(good.len() as u32 + 1).to_be_bytes());
    cases.push((b, FdtError::BadHeader));
    // The structure block past totalsize.
    let mut b = good.clone();
    b[36..40].copy_from_slice(&(good.len() as u32).to_be_bytes());
    cases.push((b, FdtError::BadStructBlock));
    // An unknown token where a second NOP was: the root node's token is 8
    // bytes (the empty name padded), so the NOPs are at 64 and 68.
    let mut b = build(&[Tok::Begin(""), Tok::Nop, Tok::Nop, Tok::EndNode, Tok::End]);
    assert_eq!(b[64..72], [0, 0, 0, 4, 0, 0, 0, 4]);
    b[68..72].copy_from_slice(&7u32.to_be_bytes());
    cases.push((b, FdtError::BadToken(68)));
    // A property whose length runs past the block.
    let toks = vec![
        Tok::Begin(""),
        Tok::Nop,
        Tok::Prop("x", cell(1)),
        Tok::EndNode,
        Tok::End,
    ];
    let mut b = build(&toks);
    let prop_len_at = 56 + 8 + 4 + 4;
    b[prop_len_at..prop_len_at + 4].copy_from_slice(&4096u32.to_be_bytes());
    cases.push((b, FdtError::BadToken(56 + 8 + 4)));
    // No FDT_END: the block stops after the root's END_NODE.
    let mut b = build(&toks[..4]);
    cases.push((b.clone(), FdtError::NoEnd));
    b.clear();
    for (mut blob, want) in cases {
        let copy = blob.clone();
        assert_eq!(strip_nops(&mut blob), Err(want));
        assert_eq!(blob, copy, "{want:?}: the blob changed");
    }
}
