//! The claim patterns, and the parts of a match the checker reads.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;
use regex_automata::nfa::thompson::{self, State};
use regex_automata::util::primitives::StateID;
use regex_automata::{Anchored, Input, PatternID, meta};

/// The kinds of claim the patterns find; the scanner's patterns are numbered in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Url,
    Money,
    Percent,
    Date,
    Count,
    Id,
    Username,
    Name,
}

/// How many kinds there are.
const KINDS: usize = 8;

/// Activity words that make a bare number a claim about the record.
const ACTIVITY: &str = "orders?|refunds?|returns?|charge-?backs?|disputes?|purchases?|items?|logins?|sign-?ins?|devices?|addresses|accounts?|edits?|revisions?|reverts?|posts?|comments?|replies|reports?|warnings?|bans?|strikes?|complaints?|claims?|notes?|tickets?|times|days|weeks|months|years|hours|minutes|sources?|citations?|references?|contributions?|upvotes?|votes?|members?|users?|followers?";

/// The patterns, one for each [`Kind`] in its order.
///
/// - `Url`: an absolute URL, or after a space, bracket or quote a path, a site's name
///   with a path, a protocol-relative or a bare-domain address.
/// - `Money`: an amount with a currency sign or code before or after it (`$5K`, `EUR 4m`).
/// - `Percent`: a number with `%`, per cent, pct, pc or percentage points.
/// - `Date`: ISO, day-month-year, compact and written dates (`March 2, 2024`, `2 Mar`).
/// - `Count`: a number, up to three words, then an activity word (group 1: the number,
///   group 2: the word).
/// - `Id`: a record's number named with its kind (an order, customer, case or post...),
///   group 1 the number.
/// - `Username`: `@name`, `u/name`, or a name with a digit or `_` after user, editor or
///   account.
/// - `Name`: an `f/` or `r/` forum, or a quoted article, page or forum name.
static SOURCES: LazyLock<[String; KINDS]> = LazyLock::new(|| {
    let month = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
    [
        r#"(?i)\bhttps?://[^\s<>"'()\[\]]+|(?:^|[\s(\["'])(/[a-z][\w.-]*/[^\s<>"'()\[\],;]*|/(?:shop|forum|wiki)\b|//[a-z0-9-]+(?:\.[a-z0-9-]+)+[^\s<>"'()\[\],;]*|(?:shop|forum|wiki)/[a-z][^\s<>"'()\[\],;]*|(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/[^\s<>"'()\[\],;]*)"#.to_string(),
        r"(?i)[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?[km]\b)?|\b(?:usd|eur|gbp|us\$)\s?\d[\d,]*(?:\.\d+)?(?:\s?[km]\b)?|\b\d[\d,]*(?:\.\d+)?\s?(?:usd|eur|gbp|dollars|euros|pounds)\b|\b\d[\d,]*(?:\.\d+)?\s?[$€£]".to_string(),
        r"(?i)\b\d+(?:\.\d+)?\s?(?:%|per\s?cent\b|pct\b|pc\b|percentage points?\b)".to_string(),
        format!(
            r"(?i)\b\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}\b|\b\d{{1,2}}[-/.]\d{{1,2}}[-/.](?:\d{{4}}|\d{{2}})\b|\b(?:19|20)\d{{2}}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\b|\b{month}\.?\s+(?:19|20)\d{{2}}\b|\b{month}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b|\b\d{{1,2}}\s+{month}\.?(?:\s+\d{{4}})?\b"
        ),
        format!(r"(?i)\b(\d(?:[\d,]*\d)?)\s+(?:[a-z-]+\s+){{0,3}}?({ACTIVITY})\b"),
        r"(?i)\b(?:order|customer|case|ticket|rma|dispute|post|comment|revision|account)\s+(?:(?:no\.?|number|id)\s*)?#?\s?(\d{3,})\b".to_string(),
        r"(?:^|[\s(])(?:@|u/)([A-Za-z0-9_][A-Za-z0-9_.-]{1,38}[A-Za-z0-9_])|(?i:\b(?:user(?:name)?|editor|account)\s+)([A-Za-z][A-Za-z0-9]*[_\d][A-Za-z0-9_.-]*)".to_string(),
        r#"(?:^|[\s(])((?:f|r)/[A-Za-z0-9_]{2,40})|(?i:\b(?:article|page|forum)\s+)["“']([^"”'\n]{2,80})["”']"#.to_string(),
    ]
});

/// Each kind's pattern on its own: for the addresses a ticket quotes, and for a text the one
/// scan would read too often (see [`scan`]).
static ALONE: LazyLock<[Regex; KINDS]> =
    LazyLock::new(|| std::array::from_fn(|k| Regex::new(&SOURCES[k]).expect("claim pattern")));

/// The pattern of `kind` on its own.
pub(super) fn alone(kind: Kind) -> &'static Regex {
    &ALONE[kind as usize]
}

/// Every pattern in one automaton (a search finds the leftmost start of any kind's match),
/// and for each kind the bytes its matches can begin with.
struct Scanner {
    regex: meta::Regex,
    starts: [[bool; 256]; KINDS],
}

static SCANNER: LazyLock<Scanner> = LazyLock::new(|| {
    // Room for the lazy DFA of eight patterns over varied text (2 MiB by default): a cache
    // that fills is cleared and its states built again.
    let regex = meta::Regex::builder()
        .configure(meta::Config::new().hybrid_cache_capacity(16 << 20))
        .build_many(&*SOURCES)
        .expect("claim patterns");
    let nfa = thompson::NFA::new_many(&*SOURCES).expect("claim patterns");
    let starts = std::array::from_fn(|k| first_bytes(&nfa, PatternID::must(k)));
    Scanner { regex, starts }
});

/// The bytes a match of pattern `pid` of `nfa` can begin with (a look-around counts as met,
/// so the set may hold more than the pattern ever starts with, never less).
fn first_bytes(nfa: &thompson::NFA, pid: PatternID) -> [bool; 256] {
    let mut can = [false; 256];
    let mut todo: Vec<StateID> = nfa.start_pattern(pid).into_iter().collect();
    let mut seen = vec![false; nfa.states().len()];
    while let Some(id) = todo.pop() {
        if std::mem::replace(&mut seen[id.as_usize()], true) {
            continue;
        }
        let mut mark = |r: &thompson::Transition| can[usize::from(r.start)..=usize::from(r.end)].fill(true);
        match nfa.state(id) {
            State::ByteRange { trans } => mark(trans),
            State::Sparse(sparse) => sparse.transitions.iter().for_each(mark),
            State::Dense(dense) => {
                for (b, next) in dense.transitions.iter().enumerate() {
                    can[b] |= *next != StateID::ZERO;
                }
            }
            State::Look { next, .. } | State::Capture { next, .. } => todo.push(*next),
            State::Union { alternates } => todo.extend(alternates.iter().copied()),
            State::BinaryUnion { alt1, alt2 } => todo.extend([*alt1, *alt2]),
            State::Fail => {}
            // An empty match begins anywhere.
            State::Match { .. } => can = [true; 256],
        }
    }
    can
}

/// The matches of every kind in one text, as each kind's pattern alone finds them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Found([Vec<Range<usize>>; KINDS]);

impl Found {
    /// The matches of `kind`, in order.
    pub(super) fn of(&self, kind: Kind) -> &[Range<usize>] {
        &self.0[kind as usize]
    }
}

/// Texts longer than this are searched kind by kind (see [`scan`]).
const SCAN_BYTES: usize = 2048;

/// The matches of every kind in `text`. Each kind's matches are what its own pattern finds
/// searching left to right (leftmost-first, without overlaps among themselves), so matches
/// of different kinds may overlap: a date inside a count, a name inside a URL.
///
/// Found in one scan (see [`scan_once`]) unless the text is long or the scan would read it
/// many times over; then each kind's pattern searches it on its own, in time linear in it.
pub(super) fn scan(text: &str) -> Found {
    (text.len() <= SCAN_BYTES).then(|| scan_once(text)).flatten().unwrap_or_else(|| kind_by_kind(text))
}

/// Each kind's pattern run over `text` on its own.
fn kind_by_kind(text: &str) -> Found {
    Found(std::array::from_fn(|k| ALONE[k].find_iter(text).map(|m| m.range()).collect()))
}

/// [`scan`] in one pass, or `None` once its searches have read about four times the text.
///
/// One search finds the leftmost start `s` where any pattern matches and reports the
/// first kind matching there; each later kind that is not still inside its previous match
/// is then tried anchored at `s` (where its pattern can begin with the byte there), and the
/// search goes on from `s + 1`. No kind can match earlier than `s`, so each kind's next
/// match is found where its own search finds it. A search from `s + 1` reads to the end of
/// the match it finds, so a text whose matches start again and again inside a long one (a
/// run of numbers joined by commas, addresses joined together) would be read once per
/// start: the budget stops that.
fn scan_once(text: &str) -> Option<Found> {
    let budget = 4 * text.len() + 256;
    let mut read = 0;
    let mut found = Found::default();
    // Where each kind's previous match ended (its own search goes on from there).
    let mut free = [0usize; KINDS];
    let mut at = 0;
    while at <= text.len() {
        let Some(m) = SCANNER.regex.search(&Input::new(text).range(at..)) else { break };
        let (s, first) = (m.start(), m.pattern().as_usize());
        read += m.end() - at;
        if free[first] <= s {
            found.0[first].push(s..m.end());
            free[first] = m.end();
        }
        // A kind before `first` does not match at `s`: it would have been reported.
        for (k, (free, found)) in free.iter_mut().zip(&mut found.0).enumerate().skip(first + 1) {
            if *free > s || !SCANNER.starts[k][usize::from(text.as_bytes()[s])] {
                continue;
            }
            let anchored = Input::new(text).range(s..).anchored(Anchored::Pattern(PatternID::must(k)));
            if let Some(m) = SCANNER.regex.search(&anchored) {
                read += m.end() - s;
                found.push(s..m.end());
                *free = m.end();
            }
        }
        if read > budget {
            return None;
        }
        at = s + 1;
    }
    Some(found)
}

// The patterns' parts are read off their matches (a search for the groups would run a
// slower engine over each match again); each follows from the pattern's shape.

/// A match of [`Kind::Count`]: its number (up to the first space) and activity word (after the
/// last).
pub(super) fn count_parts(m: &str) -> (&str, &str) {
    let number = m.split(char::is_whitespace).next().unwrap_or(m);
    let word = m.rsplit(char::is_whitespace).next().unwrap_or(m);
    (number, word)
}

/// A match of [`Kind::Id`]: its number, the digits at its end (what comes before them is a space,
/// `#`, `.` or a letter).
pub(super) fn id_number(m: &str) -> &str {
    let start = m
        .rfind(|c: char| c.is_whitespace() || c == '#' || c == '.' || c.is_alphabetic())
        .map_or(0, |i| i + m[i..].chars().next().map_or(1, char::len_utf8));
    &m[start..]
}

/// A match without the space or `(` it may start with (the patterns' `(?:^|[\s(])`).
fn after_delimiter(m: &str) -> &str {
    match m.chars().next() {
        Some(c) if c.is_whitespace() || c == '(' => &m[c.len_utf8()..],
        _ => m,
    }
}

/// A match of [`Kind::Username`]: the name after `@` or `u/`, or after `user`, `editor` or
/// `account` and the spaces that follow.
pub(super) fn username_of(m: &str) -> &str {
    let t = after_delimiter(m);
    if let Some(name) = t.strip_prefix('@').or_else(|| t.strip_prefix("u/")) {
        return name;
    }
    m.rsplit(char::is_whitespace).next().unwrap_or(m)
}

/// A match of [`Kind::Name`]: an `f/` or `r/` name, or the quoted name after `article`, `page` or
/// `forum`, without its quotes.
pub(super) fn name_of(m: &str) -> &str {
    let t = after_delimiter(m);
    if t.starts_with("f/") || t.starts_with("r/") {
        return t;
    }
    let open = m.find(['"', '“', '\'']).map_or(0, |i| i + m[i..].chars().next().map_or(1, char::len_utf8));
    let close = m.char_indices().next_back().map_or(m.len(), |(i, _)| i);
    m.get(open..close).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;

    /// Texts built from pieces near each pattern's literals, in every case and with every
    /// separator the patterns read (a vertical tab and Unicode spaces included), beside
    /// digits of several scripts and letters that fold onto ASCII ones (the Kelvin sign, the
    /// long s), so that matches of different kinds meet, overlap and share starts.
    fn texts() -> Vec<String> {
        const PIECES: [&str; 63] = [
            "u/",
            "@",
            "user",
            "UserName",
            "editor",
            "ACCOUNT",
            "f/",
            "r/",
            "(",
            "[",
            "\"",
            "'",
            "“",
            "”",
            "article",
            "Page",
            "forum",
            "$",
            "€",
            "usd",
            "Eur",
            "gbp",
            "dollars",
            "pounds",
            "%",
            "per",
            "Cent",
            "pct",
            "pc",
            "Order",
            "case No. ",
            "42",
            "7",
            "2024-03-02",
            "12 May",
            "March 3, 2024",
            "20240302",
            "1,200",
            "/shop/admin/order/7",
            "https://x.example/a",
            "www.x.org/p",
            "shop/x",
            "kim_42",
            "\u{212a}",
            "\u{17f}ep 3",
            "\u{ff13}",
            "\u{661}\u{662}\u{663}\u{664}",
            "\u{2003}",
            "\u{3000}",
            "\u{85}",
            "order 1234",
            "Post #5521",
            "page \"Dog care\"",
            "forum 'Cats'",
            "orders",
            "new",
            "ban",
            ".",
            ",",
            "k",
            "M",
            "x",
            "é",
        ];
        const GAPS: [&str; 8] = ["", " ", "  ", "\t", "\n", "\u{b}", "/", "\u{a0}"];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        (0..40_000)
            .map(|_| {
                let n = rng.random_range(1..10);
                (0..n)
                    .map(|_| {
                        let piece = PIECES[rng.random_range(0..PIECES.len())];
                        let piece = if rng.random_bool(0.2) { piece.to_uppercase() } else { piece.to_string() };
                        format!("{piece}{}", GAPS[rng.random_range(0..GAPS.len())])
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn one_scan_finds_what_each_pattern_finds_alone() {
        let mut seen = [0usize; KINDS];
        let (mut overlaps, mut read_too_often) = (0, 0);
        for text in texts() {
            let want = kind_by_kind(&text);
            match scan_once(&text) {
                Some(got) => assert_eq!(got, want, "{text:?}"),
                None => read_too_often += 1,
            }
            for (k, m) in want.0.iter().enumerate() {
                seen[k] += m.len();
            }
            let all: Vec<&Range<usize>> = want.0.iter().flatten().collect();
            overlaps +=
                all.iter().enumerate().any(|(i, a)| all[i + 1..].iter().any(|b| a.start < b.end && b.start < a.end))
                    as usize;
        }
        // Every kind matched, and matches of different kinds met often (a scan that let one
        // kind's match hide another's would fail above).
        assert!(seen.iter().all(|&n| n > 300), "{seen:?}");
        assert!(overlaps > 2_000, "{overlaps}");
        assert!(read_too_often < 40, "{read_too_often} of the texts were left to the patterns one by one");
    }

    #[test]
    fn a_text_whose_matches_start_inside_each_other_is_searched_kind_by_kind() {
        let numbers = format!("{}1 orders", "1,".repeat(400));
        let addresses = format!("see {} end", "http://a,".repeat(100));
        for text in [&numbers, &addresses] {
            assert!(text.len() <= SCAN_BYTES && scan_once(text).is_none(), "{} bytes", text.len());
            assert_eq!(scan(text), kind_by_kind(text));
        }
        let long = format!("Paid $120.50 on 2024-03-02 for 14 orders. {}", "x ".repeat(SCAN_BYTES));
        assert!(scan_once(&long).is_some());
        assert_eq!(scan(&long), kind_by_kind(&long));
    }

    #[test]
    fn each_kind_is_tried_only_where_its_pattern_can_begin() {
        let ascii = |k: Kind| -> String {
            (0u8..128).filter(|&b| SCANNER.starts[k as usize][usize::from(b)]).map(char::from).collect()
        };
        assert_eq!(ascii(Kind::Count), "0123456789");
        assert_eq!(ascii(Kind::Id), "ACDOPRTacdoprt");
        assert_eq!(ascii(Kind::Money), "$0123456789EGUegu");
        // Unicode spaces begin with 0xE2 (a URL may come after one); no id begins with it.
        assert!(SCANNER.starts[Kind::Url as usize][0xE2] && !SCANNER.starts[Kind::Id as usize][0xE2]);
    }
}
