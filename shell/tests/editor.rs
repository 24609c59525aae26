//! The line editor: echo, editing keys, history, line endings, bad lines.

use shell::{Event, LineEditor, LineError, HISTORY_LEN, MAX_LINE};

/// An owned copy of an [`Event`] (minus `None`).
#[derive(Debug, PartialEq, Eq)]
enum Ev {
    Line(String),
    Interrupt,
    Error(LineError),
}

fn line(s: &str) -> Ev {
    Ev::Line(s.to_string())
}

/// Feeds `input`, returns the events and everything echoed.
fn run(ed: &mut LineEditor, input: &[u8]) -> (Vec<Ev>, Vec<u8>) {
    let mut out = Vec::new();
    let mut evs = Vec::new();
    for &b in input {
        let ev = match ed.feed(b, &mut |bytes: &[u8]| out.extend_from_slice(bytes)) {
            Event::None => None,
            Event::Line(l) => Some(Ev::Line(l.to_string())),
            Event::Interrupt => Some(Ev::Interrupt),
            Event::Error(e) => Some(Ev::Error(e)),
        };
        evs.extend(ev);
    }
    (evs, out)
}

fn lines(input: &[u8]) -> Vec<Ev> {
    run(&mut LineEditor::new(), input).0
}

#[test]
fn plain_line_is_echoed() {
    let mut ed = LineEditor::new();
    let (evs, out) = run(&mut ed, b"ps\r");
    assert_eq!(evs, vec![line("ps")]);
    assert_eq!(out, b"ps\r\n");
    assert_eq!(ed.prompt(), "sched> ");
}

#[test]
fn cr_lf_and_crlf_are_one_enter_each() {
    assert_eq!(lines(b"a\nb\n"), vec![line("a"), line("b")]);
    assert_eq!(lines(b"a\rb\r"), vec![line("a"), line("b")]);
    assert_eq!(lines(b"a\r\nb\r\n"), vec![line("a"), line("b")]);
    // Empty lines are still lines (the executor reprints the prompt).
    assert_eq!(lines(b"\n\n"), vec![line(""), line("")]);
    assert_eq!(lines(b"\r\n\r\n"), vec![line(""), line("")]);
    assert_eq!(lines(b"\r\r"), vec![line(""), line("")]);
    // A CR LF pair split by nothing else only swallows the one LF.
    assert_eq!(lines(b"a\r\n\nb\n"), vec![line("a"), line(""), line("b")]);
}

#[test]
fn backspace_both_codes() {
    let mut ed = LineEditor::new();
    let (evs, out) = run(&mut ed, b"psx\x7f\n");
    assert_eq!(evs, vec![line("ps")]);
    assert_eq!(out, b"psx\x08 \x08\r\n");
    assert_eq!(lines(b"statt\x08\n"), vec![line("stat")]);
    // Backspace on an empty line does nothing, echoes nothing.
    let (evs, out) = run(&mut LineEditor::new(), b"\x7f\x7f\x08ps\n");
    assert_eq!(evs, vec![line("ps")]);
    assert_eq!(out, b"ps\r\n");
}

#[test]
fn ctrl_u_kills_the_line() {
    let mut ed = LineEditor::new();
    let (evs, out) = run(&mut ed, b"kill 1\x15ps\n");
    assert_eq!(evs, vec![line("ps")]);
    assert_eq!(out, b"kill 1\rsched> \x1b[Kps\r\n");
}

#[test]
fn ctrl_c_interrupts_and_drops_the_line() {
    let mut ed = LineEditor::new();
    let (evs, out) = run(&mut ed, b"spin -d\x03ps\n");
    assert_eq!(evs, vec![Ev::Interrupt, line("ps")]);
    assert_eq!(out, b"spin -d^C\r\nps\r\n");
    // Ctrl-C also aborts an escape sequence in progress.
    assert_eq!(lines(b"\x1b[\x03x\n"), vec![Ev::Interrupt, line("x")]);
    // A dropped line is not history.
    let mut ed = LineEditor::new();
    run(&mut ed, b"stat\x03");
    assert_eq!(ed.history().count(), 0);
}

#[test]
fn tab_is_a_space_other_controls_are_ignored() {
    assert_eq!(
        lines(b"nice\t1\x00\x01\x02 2\x07\n"),
        vec![line("nice 1 2")]
    );
}

#[test]
fn history_up_down() {
    let mut ed = LineEditor::new();
    run(&mut ed, b"ps\nstat\nstat\n  \nfeatures\n");
    // No consecutive duplicates, no blank lines.
    assert_eq!(ed.history().collect::<Vec<_>>(), ["ps", "stat", "features"]);
    // Up twice -> "stat"; Enter runs it.
    let (evs, out) = run(&mut ed, b"\x1b[A\x1b[A\r");
    assert_eq!(evs, vec![line("stat")]);
    assert_eq!(out, b"\rsched> features\x1b[K\rsched> stat\x1b[K\r\n");
    // SS3 arrows (application cursor mode) work too; up past the oldest stays.
    let (evs, _) = run(&mut ed, b"\x1bOA\x1bOA\x1bOA\x1bOA\x1bOA\n");
    assert_eq!(evs, vec![line("ps")]);
    // Down past the newest restores the line being typed.
    let (evs, _) = run(&mut ed, b"kil\x1b[A\x1b[A\x1b[B\x1b[B\x1b[Bl 1\n");
    assert_eq!(evs, vec![line("kill 1")]);
    // Down without browsing does nothing.
    let (evs, out) = run(&mut ed, b"\x1b[Bx\n");
    assert_eq!(evs, vec![line("x")]);
    assert_eq!(out, b"x\r\n");
}

#[test]
fn history_is_bounded() {
    let mut ed = LineEditor::new();
    for i in 0..HISTORY_LEN + 10 {
        run(&mut ed, format!("kill {i}\n").as_bytes());
    }
    let h: Vec<_> = ed.history().collect();
    assert_eq!(h.len(), HISTORY_LEN);
    assert_eq!(h[0], "kill 10");
    assert_eq!(*h.last().unwrap(), format!("kill {}", HISTORY_LEN + 9));
    // Up from the oldest stays at the oldest.
    let ups = b"\x1b[A".repeat(HISTORY_LEN + 5);
    let (evs, _) = run(&mut ed, &[ups.as_slice(), b"\n"].concat());
    assert_eq!(evs, vec![line("kill 10")]);
}

#[test]
fn left_right_and_other_sequences_are_swallowed() {
    assert_eq!(
        lines(b"ab\x1b[D\x1b[Cc\x1b[3~\x1b[1;5D\x1bOH\n"),
        vec![line("abc")]
    );
    // A two-byte escape (Alt+x sends ESC x) is swallowed whole.
    assert_eq!(lines(b"a\x1bxb\n"), vec![line("ab")]);
    // A broken CSI does not swallow Enter.
    assert_eq!(lines(b"ps\x1b[12\n"), vec![line("ps")]);
    assert_eq!(lines(b"ps\x1bO\n"), vec![line("ps")]);
}

#[test]
fn overlong_line_is_reported_not_truncated() {
    let mut ed = LineEditor::new();
    let mut input = vec![b'x'; 10_000];
    input.push(b'\n');
    let (evs, out) = run(&mut ed, &input);
    assert_eq!(evs, vec![Ev::Error(LineError::TooLong { max: MAX_LINE })]);
    assert_eq!(out.len(), MAX_LINE + 2, "echo stops at the limit");
    assert_eq!(
        LineError::TooLong { max: MAX_LINE }.to_string(),
        "line too long (max 1024 bytes)"
    );
    // Exactly MAX_LINE bytes is fine; one more is not; backspacing below helps.
    let mut ok = vec![b'y'; MAX_LINE];
    ok.push(b'\n');
    assert!(matches!(&run(&mut ed, &ok).0[..], [Ev::Line(l)] if l.len() == MAX_LINE));
    let mut over = vec![b'y'; MAX_LINE + 1];
    over.push(b'\n');
    assert_eq!(
        run(&mut ed, &over).0,
        vec![Ev::Error(LineError::TooLong { max: MAX_LINE })]
    );
    let mut back = vec![b'y'; MAX_LINE + 3];
    back.extend_from_slice(b"\x7f\x7f\x7f\n");
    assert!(matches!(&run(&mut ed, &back).0[..], [Ev::Line(l)] if l.len() == MAX_LINE));
    // The next line is clean; bad lines are not history.
    assert_eq!(run(&mut ed, b"ps\n").0, vec![line("ps")]);
    assert_eq!(ed.history().count(), 2);
}

#[test]
fn non_ascii_is_an_error_for_that_line_only() {
    let mut ed = LineEditor::new();
    let (evs, out) = run(&mut ed, "ps é\nps\n".as_bytes());
    assert_eq!(evs, vec![Ev::Error(LineError::NonAscii), line("ps")]);
    assert_eq!(out, b"ps ??\r\nps\r\n");
    // Backspacing over the bad bytes saves the line.
    assert_eq!(run(&mut ed, b"ps\xff\x7f\n").0, vec![line("ps")]);
    // Ctrl-U too.
    assert_eq!(run(&mut ed, b"\xc3\xa9\x15stat\n").0, vec![line("stat")]);
}

#[test]
fn line_stays_valid_until_next_feed() {
    let mut ed = LineEditor::new();
    let mut sink = |_: &[u8]| {};
    for &b in b"features" {
        ed.feed(b, &mut sink);
    }
    match ed.feed(b'\n', &mut sink) {
        Event::Line(l) => assert_eq!(l, "features"),
        e => panic!("{e:?}"),
    }
    // Nothing typed on the next line yet: the shell's redraw (after a
    // background job's report) must not show the old line again.
    assert_eq!(ed.current(), b"");
    ed.feed(b'x', &mut sink);
    assert_eq!(ed.current(), b"x");
}

#[test]
fn string_sequences_are_swallowed_up_to_bel_or_st() {
    // OSC (window title; a colour query reply), ended by BEL or ST.
    assert_eq!(
        lines(b"p\x1b]0;rm -rf /\x07s\x1b]11;rgb:0000/0000/0000\x1b\\\n"),
        vec![line("ps")]
    );
    // DCS, SOS, PM and APC are strings too.
    for intro in [b'P', b'X', b'^', b'_'] {
        let mut input = b"p".to_vec();
        input.extend_from_slice(&[0x1b, intro]);
        input.extend_from_slice(b"kill 1\x1b\\s\n");
        assert_eq!(lines(&input), vec![line("ps")], "ESC {}", intro as char);
    }
    // Nothing of the payload is echoed.
    let (_, out) = run(&mut LineEditor::new(), b"\x1b]2;stat\x07");
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn enter_and_ctrl_c_end_any_sequence() {
    // An unterminated OSC does not swallow Enter (nor the line before it).
    assert_eq!(lines(b"ps\x1b]0;title\n"), vec![line("ps")]);
    assert_eq!(
        lines(b"ps\x1b]0;title\r\nstat\n"),
        vec![line("ps"), line("stat")]
    );
    assert_eq!(lines(b"x\x1b]0;t\x03ps\n"), vec![Ev::Interrupt, line("ps")]);
    assert_eq!(lines(b"ps\x1b[1;\n"), vec![line("ps")]);
    assert_eq!(lines(b"ps\x1b(\n"), vec![line("ps")]);
    // ESC inside a string without `\\` starts a new sequence.
    assert_eq!(lines(b"p\x1b]0;t\x1b[Ds\n"), vec![line("ps")]);
}

#[test]
fn intermediates_and_csi_variants_are_swallowed() {
    // ESC ( B (charset), ESC # 8, bracketed paste markers, focus in/out,
    // an SGR mouse report, a cursor position report.
    assert_eq!(
        lines(b"p\x1b(B\x1b#8\x1b[200~s\x1b[201~\x1b[I\x1b[O\x1b[<0;12;5M\x1b[24;80R\n"),
        vec![line("ps")]
    );
    // History still works through the same parser.
    let mut ed = LineEditor::new();
    run(&mut ed, b"stat\n");
    assert_eq!(run(&mut ed, b"\x1b]0;x\x07\x1b[A\n").0, vec![line("stat")]);
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// A well-formed escape sequence other than up / down.
    fn sequence() -> impl Strategy<Value = Vec<u8>> {
        let csi = (
            proptest::collection::vec(0x30u8..=0x3f, 0..6),
            proptest::collection::vec(0x20u8..=0x2f, 0..2),
            (0x40u8..=0x7e).prop_filter("not up/down", |b| *b != b'A' && *b != b'B'),
        )
            .prop_map(|(p, i, f)| [&[0x1b, b'['][..], &p, &i, &[f]].concat());
        let string = (
            prop_oneof![Just(b']'), Just(b'P'), Just(b'X'), Just(b'^'), Just(b'_')],
            proptest::collection::vec(0x20u8..=0x7e, 0..20),
            any::<bool>(),
        )
            .prop_map(|(intro, body, bel)| {
                let end: &[u8] = if bel { &[0x07] } else { &[0x1b, b'\\'] };
                [&[0x1b, intro][..], &body, end].concat()
            });
        let two = (
            proptest::collection::vec(0x20u8..=0x2f, 0..2),
            (0x30u8..=0x7e).prop_filter("introducers", |b| {
                !matches!(b, b'[' | b'O' | b']' | b'P' | b'X' | b'^' | b'_')
            }),
        )
            .prop_map(|(i, f)| [&[0x1b][..], &i, &[f]].concat());
        prop_oneof![csi, string, two]
    }

    proptest! {
        /// Printable text with escape sequences anywhere in it: the line is
        /// the text alone, and nothing of a sequence is echoed.
        #[test]
        fn sequences_never_reach_the_line(
            parts in proptest::collection::vec(("[a-z ]{0,6}", sequence()), 0..8),
            tail in "[a-z]{0,4}",
        ) {
            let mut input = Vec::new();
            let mut text = String::new();
            for (t, seq) in &parts {
                input.extend_from_slice(t.as_bytes());
                text.push_str(t);
                input.extend_from_slice(seq);
            }
            input.extend_from_slice(tail.as_bytes());
            text.push_str(&tail);
            input.push(b'\n');
            let (evs, out) = run(&mut LineEditor::new(), &input);
            prop_assert_eq!(evs, vec![line(&text)]);
            // Echo: the text, then CR LF; never a byte of a sequence.
            let mut want = text.clone().into_bytes();
            want.extend_from_slice(b"\r\n");
            prop_assert_eq!(out, want);
        }
    }
}
