//! The claim patterns, and the parts of a match the checker reads.

use std::sync::LazyLock;

use regex::Regex;

pub(super) static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)\bhttps?://[^\s<>"'()\[\]]+|(?:^|[\s(\["'])(/[a-z][\w.-]*/[^\s<>"'()\[\],;]*|/(?:shop|forum|wiki)\b|//[a-z0-9-]+(?:\.[a-z0-9-]+)+[^\s<>"'()\[\],;]*|(?:shop|forum|wiki)/[a-z][^\s<>"'()\[\],;]*|(?:www\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}/[^\s<>"'()\[\],;]*)"#,
    )
    .expect("url pattern")
});
pub(super) static MONEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?[km]\b)?|\b(?:usd|eur|gbp|us\$)\s?\d[\d,]*(?:\.\d+)?(?:\s?[km]\b)?|\b\d[\d,]*(?:\.\d+)?\s?(?:usd|eur|gbp|dollars|euros|pounds)\b|\b\d[\d,]*(?:\.\d+)?\s?[$€£]")
        .expect("money pattern")
});
pub(super) static PERCENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b\d+(?:\.\d+)?\s?(?:%|per\s?cent\b|pct\b|pc\b|percentage points?\b)").expect("percent pattern")
});
pub(super) static DATE: LazyLock<Regex> = LazyLock::new(|| {
    let month = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
    Regex::new(&format!(
        r"(?i)\b\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}\b|\b\d{{1,2}}[-/.]\d{{1,2}}[-/.](?:\d{{4}}|\d{{2}})\b|\b(?:19|20)\d{{2}}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\b|\b{month}\.?\s+(?:19|20)\d{{2}}\b|\b{month}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b|\b\d{{1,2}}\s+{month}\.?(?:\s+\d{{4}})?\b"
    ))
    .expect("date pattern")
});
/// Activity words that make a bare number a claim about the record.
const ACTIVITY: &str = "orders?|refunds?|returns?|charge-?backs?|disputes?|purchases?|items?|logins?|sign-?ins?|devices?|addresses|accounts?|edits?|revisions?|reverts?|posts?|comments?|replies|reports?|warnings?|bans?|strikes?|complaints?|claims?|notes?|tickets?|times|days|weeks|months|years|hours|minutes|sources?|citations?|references?|contributions?|upvotes?|votes?|members?|users?|followers?";
pub(super) static COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b(\d(?:[\d,]*\d)?)\s+(?:[a-z-]+\s+){{0,3}}?({ACTIVITY})\b")).expect("count pattern")
});
/// A record's number: an order, customer, case or post named with its number.
pub(super) static ID: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:order|customer|case|ticket|rma|dispute|post|comment|revision|account)\s+(?:(?:no\.?|number|id)\s*)?#?\s?(\d{3,})\b")
        .expect("id pattern")
});
pub(super) static USERNAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(])(?:@|u/)([A-Za-z0-9_][A-Za-z0-9_.-]{1,38}[A-Za-z0-9_])|(?i:\b(?:user(?:name)?|editor|account)\s+)([A-Za-z][A-Za-z0-9]*[_\d][A-Za-z0-9_.-]*)")
        .expect("username pattern")
});
pub(super) static NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s(])((?:f|r)/[A-Za-z0-9_]{2,40})|(?i:\b(?:article|page|forum)\s+)["“']([^"”'\n]{2,80})["”']"#)
        .expect("name pattern")
});

// Cheap tests that a pattern cannot match, so its scan is skipped (each is exact: it fails
// only where the pattern finds nothing). Texts beyond ASCII are always scanned: Unicode
// case folding maps some of their letters (the Kelvin sign, the long s) onto ASCII ones.

/// Whether `hay` holds `needle` (lowercase ASCII) in any ASCII case.
fn holds(hay: &[u8], needle: &[u8]) -> bool {
    let first = needle[0];
    let mut at = 0;
    while let Some(i) = memchr::memchr2(first, first.to_ascii_uppercase(), &hay[at..]) {
        let start = at + i;
        if hay.get(start..start + needle.len()).is_some_and(|w| w.eq_ignore_ascii_case(needle)) {
            return true;
        }
        at = start + 1;
    }
    false
}

/// Whether [`USERNAME`] may match `text`: it needs `@`, `u/`, or the word user, editor or
/// account.
pub(super) fn may_name_users(text: &str) -> bool {
    let b = text.as_bytes();
    !text.is_ascii()
        || memchr::memchr(b'@', b).is_some()
        || memchr::memmem::find(b, b"u/").is_some()
        || [&b"user"[..], b"editor", b"account"].into_iter().any(|w| holds(b, w))
}

/// Whether [`NAME`] may match `text`: it needs `f/` or `r/` at the start or after a space or
/// `(`, or a quote and the word article, page or forum.
pub(super) fn may_name_places(text: &str) -> bool {
    let b = text.as_bytes();
    let forum = |i: usize| {
        i + 1 < b.len()
            && matches!(b[i], b'f' | b'r')
            && b[i + 1] == b'/'
            && (i == 0 || b[i - 1].is_ascii_whitespace() || b[i - 1] == b'\x0B' || b[i - 1] == b'(')
    };
    !text.is_ascii()
        || memchr::memchr_iter(b'/', b).any(|j| j > 0 && forum(j - 1))
        || memchr::memchr2(b'"', b'\'', b).is_some()
            && [&b"article"[..], b"page", b"forum"].into_iter().any(|w| holds(b, w))
}

/// Whether [`MONEY`] may match `text`: it needs a currency sign or code.
pub(super) fn may_be_money(text: &str) -> bool {
    let b = text.as_bytes();
    !text.is_ascii()
        || memchr::memchr(b'$', b).is_some()
        || [&b"usd"[..], b"eur", b"gbp", b"dollars", b"pounds"].into_iter().any(|w| holds(b, w))
}

/// Whether [`PERCENT`] may match `text`: it needs `%`, per (cent, centage) or pc(t).
pub(super) fn may_be_percent(text: &str) -> bool {
    let b = text.as_bytes();
    !text.is_ascii() || memchr::memchr(b'%', b).is_some() || holds(b, b"per") || holds(b, b"pc")
}

/// Whether a digit of `text` lies outside every range of `urls` (the numeric patterns'
/// matches all hold a digit, and a match that overlaps a URL is dropped).
pub(super) fn digit_outside(text: &str, urls: &[std::ops::Range<usize>]) -> bool {
    !text.is_ascii()
        || text.bytes().enumerate().any(|(i, c)| c.is_ascii_digit() && !urls.iter().any(|u| u.contains(&i)))
}

// The patterns' parts are read off their matches (a search for the groups would run a
// slower engine over each match again); each follows from the pattern's shape.

/// A match of [`COUNT`]: its number (up to the first space) and activity word (after the
/// last).
pub(super) fn count_parts(m: &str) -> (&str, &str) {
    let number = m.split(char::is_whitespace).next().unwrap_or(m);
    let word = m.rsplit(char::is_whitespace).next().unwrap_or(m);
    (number, word)
}

/// A match of [`ID`]: its number, the digits at its end (what comes before them is a space,
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

/// A match of [`USERNAME`]: the name after `@` or `u/`, or after `user`, `editor` or
/// `account` and the spaces that follow.
pub(super) fn username_of(m: &str) -> &str {
    let t = after_delimiter(m);
    if let Some(name) = t.strip_prefix('@').or_else(|| t.strip_prefix("u/")) {
        return name;
    }
    m.rsplit(char::is_whitespace).next().unwrap_or(m)
}

/// A match of [`NAME`]: an `f/` or `r/` name, or the quoted name after `article`, `page` or
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
    /// separator the patterns read (a vertical tab included), beside the live digits.
    fn texts() -> Vec<String> {
        const PIECES: [&str; 40] = [
            "u/",
            "@",
            "user",
            "UserName",
            "editor",
            "ACCOUNT",
            "f/",
            "r/",
            "(",
            "\"",
            "'",
            "article",
            "Page",
            "forum",
            "$",
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
            "42",
            "2024-03-02",
            "1,200",
            "/shop/admin/order/7",
            "https://x.example/a",
            "kim_42",
            "orders",
            "ban",
            ".",
            ",",
            "k",
            "M",
            "x",
            "é",
        ];
        const GAPS: [&str; 7] = ["", " ", "  ", "\t", "\n", "\u{b}", "/"];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        (0..60_000)
            .map(|_| {
                let n = rng.random_range(1..7);
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
    fn a_closed_gate_hides_no_match() {
        let mut closed = [0usize; 5];
        for text in texts() {
            let urls: Vec<std::ops::Range<usize>> = URL.find_iter(&text).map(|m| m.range()).collect();
            let numeric_overlap_free =
                |re: &Regex| re.find_iter(&text).all(|m| urls.iter().any(|u| u.start < m.end() && m.start() < u.end));
            let gates = [
                (may_name_users(&text), USERNAME.is_match(&text)),
                (may_name_places(&text), NAME.is_match(&text)),
                (may_be_money(&text), MONEY.is_match(&text)),
                (may_be_percent(&text), PERCENT.is_match(&text)),
                (
                    digit_outside(&text, &urls),
                    ![&*MONEY, &*PERCENT, &*DATE, &*COUNT, &*ID].into_iter().all(numeric_overlap_free),
                ),
            ];
            for (k, (open, matches)) in gates.into_iter().enumerate() {
                assert!(open || !matches, "gate {k} closed on {text:?}, which the pattern matches");
                closed[k] += usize::from(!open);
            }
        }
        // Each gate does close on some texts (a gate always open would pass the above).
        assert!(closed.iter().all(|&c| c > 1_000), "{closed:?}");
    }
}
