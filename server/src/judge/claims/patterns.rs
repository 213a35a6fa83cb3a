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
