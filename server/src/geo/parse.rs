//! A ranker's reply into ranks. GEO-Bench's reading with two fixes on by default
//! ([`Parser::Fixed`]); [`Parser::GeoBench`] reads exactly as published, for conformance.
//!
//! Names and reply are normalised (lowercase; `* _ \` " ' “ ” ‘ ’` deleted; whitespace
//! collapsed). Numbered lines (`1. …`, `2) …`, `**3. …`) are walked in order: the longest
//! name a line contains gets the next rank (the printed number is ignored); a line whose
//! longest name is already ranked is a duplicate and consumes nothing (fix 1: GEO-Bench
//! falls through to a shorter name, so a repeated `document10` line ranks `document1`).
//! Only when no numbered line ranked anything, names are ranked by their first occurrence
//! in the whole reply, longest first with each found occurrence masked (fix 2: GEO-Bench
//! does not mask, so `document1` is found inside `document10`). A name never found is
//! missing: rank L + 1.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Which reading of replies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Parser {
    /// GEO-Bench's parser with the duplicate-line and substring fixes.
    #[default]
    Fixed,
    /// GEO-Bench's parser as published.
    #[value(name = "geobench")]
    #[serde(rename = "geobench")]
    GeoBench,
}

static NUMBERED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:\*\*)?(\d+)[.)]\s*(.+?)\s*$").expect("numbered-line pattern"));

/// Lowercase, quotes, stars, underscores and backticks deleted, whitespace collapsed.
pub fn normalise(text: &str) -> String {
    let kept: String = text
        .to_lowercase()
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`' | '"' | '\'' | '“' | '”' | '‘' | '’'))
        .collect();
    kept.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The 1-based rank of each name (by index), `None` when the reply never names it.
pub fn ranks(reply: &str, names: &[String], parser: Parser) -> Vec<Option<usize>> {
    let norm: Vec<String> = names.iter().map(|n| normalise(n)).collect();
    // Name indices, longest normalised name first (ties in list order).
    let mut by_length: Vec<usize> = (0..names.len()).collect();
    by_length.sort_by_key(|&i| std::cmp::Reverse(norm[i].chars().count()));
    let mut out = vec![None; names.len()];
    let mut next = 1;
    for line in reply.lines() {
        let Some(caps) = NUMBERED.captures(line) else { continue };
        let body = normalise(&caps[2]);
        let contained = by_length.iter().copied().filter(|&i| !norm[i].is_empty() && body.contains(&norm[i]));
        let pick = match parser {
            Parser::Fixed => contained.take(1).find(|&i| out[i].is_none()),
            Parser::GeoBench => contained.into_iter().find(|&i| out[i].is_none()),
        };
        if let Some(i) = pick {
            out[i] = Some(next);
            next += 1;
        }
    }
    if next > 1 {
        return out;
    }
    // Fallback: first occurrence in the whole reply.
    let mut text = normalise(reply);
    let mut found: Vec<(usize, usize)> = Vec::new();
    for &i in &by_length {
        if norm[i].is_empty() {
            continue;
        }
        if let Some(pos) = text.find(&norm[i]) {
            found.push((pos, i));
            if parser == Parser::Fixed {
                // Every occurrence is masked, so a shorter name is not found inside one.
                text = text.replace(&norm[i], &"\u{1}".repeat(norm[i].len()));
            }
        }
    }
    found.sort_unstable();
    for (rank, (_, i)) in found.into_iter().enumerate() {
        out[i] = Some(rank + 1);
    }
    out
}

/// The target's rank: its parsed rank, or L + 1 when missing (`true` in the second place).
pub fn target_rank(reply: &str, names: &[String], target: usize, parser: Parser) -> (usize, bool) {
    match ranks(reply, names, parser)[target] {
        Some(r) => (r.min(names.len() + 1), false),
        None => (names.len() + 1, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_string()).collect()
    }

    fn ranked(reply: &str, list: &[&str], parser: Parser) -> Vec<(String, usize)> {
        let n = names(list);
        let mut out: Vec<(String, usize)> =
            ranks(reply, &n, parser).into_iter().zip(n).filter_map(|(r, name)| r.map(|r| (name, r))).collect();
        out.sort_by_key(|(_, r)| *r);
        out
    }

    fn pairs(list: &[(&str, usize)]) -> Vec<(String, usize)> {
        list.iter().map(|(n, r)| ((*n).to_string(), *r)).collect()
    }

    const DOCS: [&str; 4] = ["document1", "document10", "Alpha", "Beta"];

    #[test]
    fn the_specification_table() {
        let f = Parser::Fixed;
        assert_eq!(
            ranked("1. document10\n2. document1\n3. Alpha", &DOCS, f),
            pairs(&[("document10", 1), ("document1", 2), ("Alpha", 3)])
        );
        let dup = "1. document10\n2. document10 again\n3. Beta";
        assert_eq!(ranked(dup, &DOCS, f), pairs(&[("document10", 1), ("Beta", 2)]));
        assert_eq!(ranked(dup, &DOCS, Parser::GeoBench), pairs(&[("document10", 1), ("document1", 2), ("Beta", 3)]));
        assert_eq!(
            ranked("**1. Alpha**\n2) beta\n   7. \"Document1\": text", &DOCS, f),
            pairs(&[("Alpha", 1), ("Beta", 2), ("document1", 3)])
        );
        assert_eq!(ranked("I recommend Beta, then Alpha.", &DOCS, f), pairs(&[("Beta", 1), ("Alpha", 2)]));
        assert_eq!(target_rank("1. Alpha\n2. Beta", &names(&DOCS), 0, f), (5, true));
    }

    #[test]
    fn more_reply_shapes() {
        let list = ["Quincy Compressor", "Makita", "“Smart” Pump", "B"];
        let f = Parser::Fixed;
        assert_eq!(ranked("1) Makita", &list, f), pairs(&[("Makita", 1)]));
        assert_eq!(ranked("   1. Makita\n  2. B", &list, f), pairs(&[("Makita", 1), ("B", 2)]));
        assert_eq!(ranked("**3. Makita**", &list, f), pairs(&[("Makita", 1)]));
        assert_eq!(ranked("1. \u{201c}smart\u{201d} pump", &list, f), pairs(&[("“Smart” Pump", 1)]));
        let n = names(&list);
        assert!(ranks("", &n, f).iter().all(Option::is_none), "an empty reply ranks nothing");
        assert_eq!(target_rank("", &n, 2, f), (5, true));
        assert_eq!(
            ranked("1. Makita\n3. B", &list, f),
            pairs(&[("Makita", 1), ("B", 2)]),
            "line count, not the number"
        );
        let eight: Vec<String> = (1..=8).map(|i| format!("item{i}x")).collect();
        let reply: String = (1..=5).map(|i| format!("{i}. item{i}x\n")).collect();
        let r = ranks(&reply, &eight, f);
        assert_eq!(r.iter().filter(|x| x.is_none()).count(), 3);
        assert_eq!(target_rank(&reply, &eight, 7, f), (9, true));
    }

    #[test]
    fn the_fallback_masks_longer_names_unless_reading_as_published() {
        let reply = "Top pick: document10. Then Alpha.";
        assert_eq!(ranked(reply, &DOCS, Parser::Fixed), pairs(&[("document10", 1), ("Alpha", 2)]));
        let published = ranked(reply, &DOCS, Parser::GeoBench);
        assert!(published.contains(&("document1".to_string(), 1)), "{published:?}");
    }
}
