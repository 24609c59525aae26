//! Property tests: nothing a serial line can deliver makes the shell panic, and
//! what the editor accepts is what the parser sees.

use proptest::prelude::*;
use shell::{
    parse, usage_words, BgError, Command, Error, Event, LineEditor, COMMANDS, MAX_LINE, PROBE_WORDS,
};

/// The command words: the help table's, the one list the parser takes.
fn command_words() -> Vec<&'static str> {
    COMMANDS.iter().map(|c| c.name).collect()
}

/// The command words, the usage lines' option and keyword words (both from
/// the help table, the list the parser itself takes) and the edge-probing
/// words, to get past the command dispatch and the option checks often.
fn words() -> Vec<&'static str> {
    command_words()
        .into_iter()
        .chain(usage_words())
        .chain(PROBE_WORDS.iter().copied())
        .collect()
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(words()).prop_map(String::from),
        1 => "[ -~]{0,12}",
        1 => any::<String>().prop_map(|s| s.chars().take(8).collect()),
    ]
}

fn feed_all(ed: &mut LineEditor, bytes: &[u8]) -> Vec<Result<String, String>> {
    let mut results = Vec::new();
    let mut sink = |_: &[u8]| {};
    for &b in bytes {
        match ed.feed(b, &mut sink) {
            Event::Line(l) => {
                assert!(l.len() <= MAX_LINE && l.is_ascii());
                assert!(!l.contains(['\r', '\n']));
                results.push(match parse(l) {
                    Ok(c) => Ok(format!("{c:?}")),
                    Err(e) => Err(e.to_string()),
                });
            }
            Event::Error(e) => results.push(Err(e.to_string())),
            Event::None | Event::Interrupt => {}
        }
    }
    results
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..3000)) {
        let mut ed = LineEditor::new();
        for r in feed_all(&mut ed, &bytes) {
            if let Err(e) = r {
                prop_assert!(!e.is_empty() && !e.contains('\n'));
            }
        }
        prop_assert!(ed.history().count() <= shell::HISTORY_LEN);
    }

    #[test]
    fn random_keyboard_bytes_never_panic(
        bytes in proptest::collection::vec(
            prop_oneof![
                Just(0x1bu8), Just(b'['), Just(b'O'), Just(b'A'), Just(b'B'), Just(0x7f),
                Just(0x08), Just(0x03), Just(0x15), Just(b'\r'), Just(b'\n'), Just(b' '),
                Just(0xc3), b'a'..=b'z', b'0'..=b'9',
            ],
            0..2000,
        )
    ) {
        let mut ed = LineEditor::new();
        feed_all(&mut ed, &bytes);
    }

    #[test]
    fn random_token_lines_never_panic(tokens in proptest::collection::vec(token(), 0..8)) {
        let line = tokens.join(" ");
        match parse(&line) {
            Ok(_) => {}
            Err(e) => {
                let s = e.to_string();
                prop_assert!(!s.is_empty() && !s.contains('\n'), "{s:?}");
                prop_assert!(!s.starts_with("error:"));
            }
        }
    }

    #[test]
    fn command_word_plus_random_tokens(cmd in proptest::sample::select(command_words()),
                                       tokens in proptest::collection::vec(token(), 0..6)) {
        let line = format!("{cmd} {}", tokens.join(" "));
        if let Ok(Some(c)) = parse(&line) {
            // The command itself, or its help (`CMD -h`).
            prop_assert!(c.name() == cmd || c == Command::Help(Some(cmd)), "{line:?}: {c:?}");
        }
    }

    /// The parser takes no command word outside the help table: any other
    /// first word, whatever follows it, is an unknown command.
    #[test]
    fn only_table_words_are_commands(
        word in prop_oneof![
            "[a-z_]{1,12}",
            "[!-~]{1,12}",
            // Table words with a letter dropped or changed.
            (proptest::sample::select(command_words()), any::<proptest::sample::Index>(), "[a-z_]?")
                .prop_map(|(w, i, c)| {
                    let mut w = w.to_string();
                    let at = i.index(w.len());
                    w.replace_range(at..=at, &c);
                    w
                }),
        ],
        tokens in proptest::collection::vec(token(), 0..4),
    ) {
        prop_assume!(!word.starts_with('#') && !word.contains('&'));
        let line = format!("{word} {}", tokens.join(" "));
        let known = shell::lookup(&word).is_some();
        match parse(&line) {
            Ok(Some(c)) => prop_assert!(known, "{line:?} parsed as {c:?}"),
            Err(Error::UnknownCommand(_)) => prop_assert!(!known, "{line:?}"),
            // Refused before the dispatch: control bytes or non-ASCII from
            // the tokens, a misplaced `&`.
            Err(Error::ControlChar(_) | Error::Line(_)) => {}
            Err(Error::Background(b)) if !matches!(b, BgError::NotAWorkload(_)) => {}
            Err(e) => prop_assert!(known, "{line:?}: {e}"),
            Ok(None) => prop_assert!(false, "{line:?} is not blank"),
        }
    }

    #[test]
    fn typed_lines_reach_the_parser_unchanged(line in "[ -~]{0,200}") {
        let mut ed = LineEditor::new();
        let mut input = line.clone().into_bytes();
        input.push(b'\n');
        let got = feed_all(&mut ed, &input);
        let want = match parse(&line) {
            Ok(c) => Ok(format!("{c:?}")),
            Err(e) => Err(e.to_string()),
        };
        prop_assert_eq!(got, vec![want]);
    }

    #[test]
    fn hex_masks_round_trip(mask in 1u64.., pid in any::<u32>()) {
        let c = shell::Command::Taskset { mask: sched::CpuMask::from_u64(mask), pid };
        prop_assert_eq!(parse(&format!("taskset -p {mask:x} {pid}")), Ok(Some(c.clone())));
        prop_assert_eq!(parse(&format!("taskset -p 0x{mask:X} {pid}")), Ok(Some(c)));
    }
}
