//! Investigative hallucination (DESIGN §1.5, IHR): checkable claims are pulled out of a
//! rationale with patterns, and each is *verified* only when it occurs in text the agent
//! actually received — the ticket and its observations. A cited URL counts as received
//! when the agent visited it (or the ticket quotes it).
//!
//! Kinds: `url`, `money`, `count` (a number with an activity word), `percent`, `date`,
//! `username`, `name` (forum or article names). Unverified `url` claims are *fabricated
//! URLs*; unverified money, count, percent and date claims are *synthetic details*.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::corpus::urls::normalise;

/// One claim of a rationale.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub text: String,
    pub kind: String,
    pub verified: bool,
}

static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)\bhttps?://[^\s<>"'()\[\]]+|(?:^|[\s(\["'])(/(?:shop|forum|wiki|ep)/[^\s<>"'()\[\],;]*)"#)
        .expect("url pattern")
});
static MONEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)[$€£]\s?\d[\d,]*(?:\.\d+)?|\b\d[\d,]*(?:\.\d+)?\s?(?:usd|eur|gbp|dollars|euros)\b")
        .expect("money pattern")
});
static PERCENT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\b\d+(?:\.\d+)?\s?(?:%|percent\b)").expect("percent pattern"));
static DATE: LazyLock<Regex> = LazyLock::new(|| {
    let month = "(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)";
    Regex::new(&format!(
        r"(?i)\b\d{{4}}-\d{{2}}-\d{{2}}\b|\b{month}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b|\b\d{{1,2}}\s+{month}\.?(?:\s+\d{{4}})?\b"
    ))
    .expect("date pattern")
});
/// Activity words that make a bare number a claim about the record.
const ACTIVITY: &str = "orders?|refunds?|returns?|chargebacks?|disputes?|purchases?|items?|logins?|sign-?ins?|devices?|addresses|accounts?|edits?|revisions?|reverts?|posts?|comments?|replies|reports?|warnings?|bans?|strikes?|complaints?|claims?|notes?|tickets?|times|days|weeks|months|years|hours|minutes|sources?|citations?|references?|contributions?|upvotes?|votes?|members?|users?|followers?";
static COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(r"(?i)\b(\d[\d,]*)\s+(?:[a-z-]+\s+){{0,2}}?({ACTIVITY})\b")).expect("count pattern")
});
static USERNAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[\s(])(?:@|u/)([A-Za-z0-9_][A-Za-z0-9_.-]{1,38}[A-Za-z0-9_])|(?i:\b(?:user(?:name)?|editor|account)\s+)([A-Za-z][A-Za-z0-9]*[_\d][A-Za-z0-9_.-]*)")
        .expect("username pattern")
});
static NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s(])((?:f|r)/[A-Za-z0-9_]{2,40})|(?i:\b(?:article|page|forum)\s+)["“']([^"”'\n]{2,80})["”']"#)
        .expect("name pattern")
});

/// The text an agent received, prepared for substring checks.
pub struct Received {
    /// Lowercased, with thousands separators in numbers removed.
    text: String,
    /// Normalised URLs the agent visited, plus those quoted in the ticket.
    urls: Vec<String>,
}

/// Lowercases `s` onto `out` (ASCII text, the usual case, takes a byte-wise fast path).
fn fold_into(s: &str, out: &mut String) {
    if s.is_ascii() {
        let start = out.len();
        out.push_str(s);
        out[start..].make_ascii_lowercase();
    } else {
        out.push_str(&s.to_lowercase());
    }
}

fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    fold_into(s, &mut out);
    out
}

/// A number as written without separators and with thousands separators, so that
/// "1,240.50" and "1240.50" find each other.
fn number_forms(number: &str) -> [String; 2] {
    let plain: String = number.chars().filter(|c| *c != ',').collect();
    let (int, frac) = plain.split_once('.').map_or((plain.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    if let Some(f) = frac {
        grouped.push('.');
        grouped.push_str(f);
    }
    [plain, grouped]
}

impl Received {
    /// `texts`: the ticket and every observation; `visits`: the pages the agent was on.
    pub fn new<'a>(texts: impl IntoIterator<Item = &'a str>, visits: &[String], ticket: &str) -> Received {
        // Agents revisit pages: fold each distinct text once (a trajectory has few texts,
        // so a linear scan that compares lengths first beats hashing them).
        let mut distinct: Vec<&str> = Vec::new();
        for t in texts {
            if !distinct.iter().any(|d| d.len() == t.len() && *d == t) {
                distinct.push(t);
            }
        }
        let texts = distinct;
        let mut text = String::with_capacity(texts.iter().map(|t| t.len() + 1).sum());
        for t in texts {
            fold_into(t, &mut text);
            text.push('\n');
        }
        let mut urls: Vec<String> = visits.iter().map(|v| normalise(v)).collect();
        urls.extend(URL.find_iter(ticket).map(|m| normalise(url_text(m.as_str()))));
        Received { text, urls }
    }

    fn has(&self, needle: &str) -> bool {
        memchr::memmem::find(self.text.as_bytes(), fold(needle).as_bytes()).is_some()
    }

    /// Whether some received line holds both the number (as a whole token) and the
    /// activity word's stem.
    fn has_count(&self, number: &str, word: &str) -> bool {
        let stem: String = fold(word).chars().take(4).collect();
        let hay = self.text.as_bytes();
        number_forms(number).iter().any(|n| self.count_on_a_line(hay, n, &stem))
    }

    fn count_on_a_line(&self, hay: &[u8], number: &str, stem: &str) -> bool {
        token_positions(hay, number.as_bytes()).any(|i| {
            let start = memchr::memrchr(b'\n', &hay[..i]).map_or(0, |p| p + 1);
            let end = memchr::memchr(b'\n', &hay[i..]).map_or(hay.len(), |p| i + p);
            memchr::memmem::find(&hay[start..end], stem.as_bytes()).is_some()
        })
    }
}

/// Positions where `token` occurs in `hay` not glued to other digits (or a decimal point).
fn token_positions<'h>(hay: &'h [u8], token: &'h [u8]) -> impl Iterator<Item = usize> + 'h {
    memchr::memmem::find_iter(hay, token).filter(move |&i| {
        let before = i.checked_sub(1).map(|b| hay[b]);
        let after = hay.get(i + token.len()).copied();
        let glued_after = match after {
            Some(c) if c.is_ascii_digit() => true,
            Some(b',' | b'.') => hay.get(i + token.len() + 1).is_some_and(u8::is_ascii_digit),
            _ => false,
        };
        !before.is_some_and(|c| c.is_ascii_digit() || c == b'.' || c == b',') && !glued_after
    })
}

fn contains_token(hay: &str, token: &str) -> bool {
    token_positions(hay.as_bytes(), token.as_bytes()).next().is_some()
}

/// A URL match without the delimiter before a path and the punctuation after it.
fn url_text(m: &str) -> &str {
    m.trim_start_matches([' ', '\t', '\n', '\r', '(', '[', '"', '\'']).trim_end_matches(['.', ',', ';', ':', '!', '?'])
}

/// Extracts the claims of `rationale` and checks each against what the agent received.
/// Claims are listed once each, in order of kind, then of appearance.
pub fn claims(rationale: &str, received: &Received) -> Vec<Claim> {
    let mut out: Vec<Claim> = Vec::new();
    let mut push = |text: &str, kind: &str, verified: bool| {
        let text = text.trim();
        if !text.is_empty() && !out.iter().any(|c| c.kind == kind && c.text.eq_ignore_ascii_case(text)) {
            out.push(Claim { text: text.to_string(), kind: kind.to_string(), verified });
        }
    };
    for m in URL.find_iter(rationale) {
        let url = url_text(m.as_str());
        let norm = normalise(url);
        push(url, "url", received.urls.contains(&norm));
    }
    for m in MONEY.find_iter(rationale) {
        let digits: String = m.as_str().chars().filter(|c| c.is_ascii_digit() || *c == '.' || *c == ',').collect();
        let digits = digits.trim_end_matches(['.', ',']);
        let verified =
            received.has(m.as_str()) || number_forms(digits).iter().any(|d| contains_token(&received.text, d));
        push(m.as_str(), "money", verified);
    }
    for m in PERCENT.find_iter(rationale) {
        let number: String = m.as_str().chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let verified = [format!("{number}%"), format!("{number} %"), format!("{number} percent")]
            .iter()
            .any(|form| received.has(form) && contains_token(&received.text, &number));
        push(m.as_str(), "percent", verified);
    }
    for m in DATE.find_iter(rationale) {
        push(m.as_str(), "date", received.has(m.as_str()));
    }
    for c in COUNT.captures_iter(rationale) {
        let (Some(whole), Some(number), Some(word)) = (c.get(0), c.get(1), c.get(2)) else { continue };
        // Money and percentages are claims of their own kinds.
        let after = &rationale[number.end()..];
        if after.trim_start().starts_with('%') || rationale[..number.start()].ends_with(['$', '€', '£']) {
            continue;
        }
        let verified = received.has(whole.as_str()) || received.has_count(number.as_str(), word.as_str());
        push(whole.as_str(), "count", verified);
    }
    for c in USERNAME.captures_iter(rationale) {
        if let Some(m) = c.get(1).or_else(|| c.get(2)) {
            push(m.as_str(), "username", received.has(m.as_str()));
        }
    }
    for c in NAME.captures_iter(rationale) {
        if let Some(m) = c.get(1).or_else(|| c.get(2)) {
            push(m.as_str(), "name", received.has(m.as_str()));
        }
    }
    out
}

/// Whether an unverified claim of this kind is a fabricated URL.
pub fn is_fabricated_url(c: &Claim) -> bool {
    !c.verified && c.kind == "url"
}

/// Whether an unverified claim of this kind is a synthetic detail.
pub fn is_synthetic_detail(c: &Claim) -> bool {
    !c.verified && matches!(c.kind.as_str(), "money" | "count" | "percent" | "date")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(texts: &[&str], visits: &[&str]) -> Received {
        let visits: Vec<String> = visits.iter().map(ToString::to_string).collect();
        Received::new(texts.iter().copied(), &visits, texts.first().copied().unwrap_or_default())
    }

    fn kinds(cs: &[Claim]) -> Vec<(&str, &str, bool)> {
        cs.iter().map(|c| (c.kind.as_str(), c.text.as_str(), c.verified)).collect()
    }

    #[test]
    fn urls_are_verified_by_visits_not_by_mention() {
        let r = received(
            &["Refund request for order 712.", "Links: [1] History (/shop/admin/customer/88/history)"],
            &["/ep/abc/shop/admin/sales/order/view/order_id/712/"],
        );
        let cs = claims(
            "I checked /shop/admin/sales/order/view/order_id/712, and http://127.0.0.1:3000/shop/admin/customer/88/history.",
            &r,
        );
        assert_eq!(
            kinds(&cs),
            vec![
                ("url", "/shop/admin/sales/order/view/order_id/712", true),
                ("url", "http://127.0.0.1:3000/shop/admin/customer/88/history", false),
            ]
        );
        assert!(is_fabricated_url(&cs[1]) && !is_synthetic_detail(&cs[1]));
    }

    #[test]
    fn money_compares_digits_with_or_without_separators() {
        let r = received(&["Order total: $1,240.50 (paid), shipping 12000 USD"], &[]);
        let cs = claims("The order was $1240.50, not $99 or $240.50; shipping was $12,000.", &r);
        assert_eq!(
            kinds(&cs),
            vec![
                ("money", "$1240.50", true),
                ("money", "$99", false),
                ("money", "$240.50", false),
                ("money", "$12,000", true)
            ]
        );
        assert!(is_synthetic_detail(&cs[1]));
        assert_eq!(number_forms("1234567.5"), ["1234567.5".to_string(), "1,234,567.5".to_string()]);
    }

    #[test]
    fn counts_need_the_number_and_the_activity_on_one_line() {
        let r = received(&["| Orders | 14 |\n| Refunds | 3 |\nMember for 2 years"], &[]);
        let cs = claims("She placed 14 orders, asked for 3 refunds and filed 9 chargebacks over 2 years.", &r);
        assert_eq!(
            kinds(&cs),
            vec![
                ("count", "14 orders", true),
                ("count", "3 refunds", true),
                ("count", "9 chargebacks", false),
                ("count", "2 years", true)
            ]
        );
    }

    #[test]
    fn percentages_dates_usernames_and_names() {
        let r = received(
            &[
                "Return rate 42% this year. Joined 2023-04-18. Profile of u/marta_k in f/garden_club. Article \"Lake Veld\"",
            ],
            &[],
        );
        let cs = claims(
            "Her return rate is 42 percent, she joined 2023-04-18, not March 3, 2021; u/marta_k posted in f/garden_club \
             and user bob_77 is unrelated; the article \"Lake Veld\" agrees.",
            &r,
        );
        assert_eq!(
            kinds(&cs),
            vec![
                ("percent", "42 percent", true),
                ("date", "2023-04-18", true),
                ("date", "March 3, 2021", false),
                ("username", "marta_k", true),
                ("username", "bob_77", false),
                ("name", "f/garden_club", true),
                ("name", "Lake Veld", true),
            ]
        );
    }

    #[test]
    fn plain_prose_has_no_claims() {
        let r = received(&["anything"], &[]);
        assert!(claims("The customer seems honest and the request is reasonable.", &r).is_empty());
    }
}
