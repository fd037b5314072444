//! The terminal renderer on a real run's summary (`make run`'s default scenario, its four
//! sides over 300 s; `deltas` left out): what `make run` and `stratum-bench show` print.

use analysis::Summary;
use report::terminal::{render, Terminal};
use std::collections::BTreeMap;

fn summary() -> Summary {
    serde_json::from_str(include_str!("fixtures/summary-four-sides.json")).unwrap()
}

fn pools() -> BTreeMap<String, String> {
    BTreeMap::from([("sv1".to_string(), "the built-in SV1 pool".to_string())])
}

fn assert_fits(text: &str, width: usize) {
    for line in text.lines() {
        assert!(
            line.chars().count() <= width,
            "{} columns: {line:?}\n{text}",
            line.chars().count()
        );
    }
}

/// How many of the side table's header lines (those underlined, naming only sides) name
/// `side`.
fn columns_headed(text: &str, s: &Summary, side: &str) -> usize {
    (text.lines().zip(text.lines().skip(1)))
        .filter(|(_, under)| under.starts_with("---"))
        .map(|(head, _)| head.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.iter().all(|w| s.sides.contains_key(*w)))
        .filter(|words| words.contains(&side))
        .count()
}

#[test]
fn the_conclusions_come_first_and_every_line_fits_100_columns() {
    let s = summary();
    let text = render(&s, &pools(), &Terminal::default());
    assert_fits(&text, 100);
    let first = text.lines().next().unwrap();
    let conclusion = &s.conclusions.values().next().unwrap().text;
    assert!(
        conclusion.starts_with(first),
        "{first:?} is not the start of {conclusion:?}"
    );
    // Every side heads one column of the table (two to a block here), the verdict of each
    // SV2 side is a table with readings, the worth's assumptions are said once.
    for side in s.sides.keys() {
        assert_eq!(columns_headed(&text, &s, side), 1, "{side}: {text}");
    }
    assert_eq!(text.matches("verdict, ").count(), s.verdict.len());
    // The farm node's relay costs sv2-a download: worse for the operator, and marked as
    // partly a model's.
    assert!(text.contains("worse *"), "{text}");
    assert!(
        text.contains("* farm rx bytes/s: partly modelled"),
        "{text}"
    );
    assert_eq!(text.matches("worth for a 1 PH/s farm").count(), 1, "{text}");
    // What the pool judged adds up to what the miners sent, or a line says why not (sv2-a's
    // JDC sends upstream only shares that meet the pool's target).
    for (name, side) in &s.sides {
        let c = &side.shares;
        assert!(text.contains(&format!(
            "{} / {} / {}",
            c.accepted, c.pool_stale, c.rejected
        )));
        let judged = c.accepted + c.pool_stale + c.rejected;
        let why = format!("{name}: the pool judged {judged} of the {}", c.submitted);
        assert_eq!(judged < c.submitted, text.contains(&why), "{name}: {text}");
    }
    // sv2-a reaches new-block work sooner: better; the stale-work row too.
    assert!(text.contains("better"), "{text}");
    // No colour codes off a terminal; the relays' own lateness only when asked.
    assert!(!text.contains('\x1b'));
    assert!(!text.contains("relay lateness"));
    let verbose = render(
        &s,
        &pools(),
        &Terminal {
            verbose: true,
            ..Terminal::default()
        },
    );
    assert_fits(&verbose, 100);
    assert!(verbose.contains("relay lateness"), "{verbose}");
}

#[test]
fn many_sides_wrap_into_blocks_and_a_narrow_terminal_still_fits() {
    let mut s = summary();
    for extra in ["sv2-b", "sv2-e", "sv1-nomp"] {
        let side = s.sides["sv2-a"].clone();
        s.sides.insert(extra.to_string(), side);
    }
    let text = render(&s, &pools(), &Terminal::default());
    assert_fits(&text, 100);
    // Seven sides in blocks: each side heads one column of the table, once.
    for side in s.sides.keys() {
        assert_eq!(columns_headed(&text, &s, side), 1, "{side}: {text}");
    }
    let narrow = render(
        &s,
        &pools(),
        &Terminal {
            width: 72,
            ..Terminal::default()
        },
    );
    assert_fits(&narrow, 72);
}

#[test]
fn readings_are_coloured_only_when_asked() {
    let text = render(
        &summary(),
        &pools(),
        &Terminal {
            colour: true,
            ..Terminal::default()
        },
    );
    assert!(text.contains("\x1b["), "{text}");
    // Each bottom line starts with its side's name in bold.
    for side in summary().conclusions.keys() {
        assert!(
            (text.lines()).any(|l| l.starts_with(&format!("\x1b[1m{side}\x1b[0m: "))),
            "{side}: {text}"
        );
    }
}
