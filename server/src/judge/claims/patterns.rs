//! The claim patterns, one regular expression per kind, and the set of all of them that a
//! text is scanned with once.

use std::sync::LazyLock;

use regex::{Regex, RegexSet};

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
pub(super) const ACTIVITY: &str = "orders?|refunds?|returns?|charge-?backs?|disputes?|purchases?|items?|logins?|sign-?ins?|devices?|addresses|accounts?|edits?|revisions?|reverts?|posts?|comments?|replies|reports?|warnings?|bans?|strikes?|complaints?|claims?|notes?|tickets?|times|days|weeks|months|years|hours|minutes|sources?|citations?|references?|contributions?|upvotes?|votes?|members?|users?|followers?";
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

/// Every pattern at once, in the order of [`Pattern`]: one scan of a text says which of
/// them match anywhere in it, and only those are run to find where (most thoughts match one
/// or two, and a search's fixed cost, not its bytes, dominates on texts this short).
pub(super) static ALL: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new([&*URL, &*MONEY, &*ID, &*PERCENT, &*DATE, &*COUNT, &*USERNAME, &*NAME].map(Regex::as_str))
        .expect("the patterns together")
});

/// `make()`'s items when `on`, else none (without calling `make`).
pub(super) fn when<I: Iterator>(on: bool, make: impl FnOnce() -> I) -> impl Iterator<Item = I::Item> {
    on.then(make).into_iter().flatten()
}

/// The patterns' places in [`ALL`].
#[derive(Clone, Copy)]
pub(super) enum Pattern {
    Url,
    Money,
    Id,
    Percent,
    Date,
    Count,
    Username,
    Name,
}
