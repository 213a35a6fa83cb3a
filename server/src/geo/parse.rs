//! A ranker's reply into ranks. GEO-Bench's reading as published by default
//! ([`Parser::GeoBench`], for comparability); [`Parser::Fixed`] adds two fixes.
//!
//! Names and reply are normalised (lowercase; `* _ \` " ' “ ” ‘ ’` deleted; whitespace
//! collapsed). Numbered lines (`1. …`, `2) …`, `**3. …`) are walked in order: GEO-Bench
//! gives the next rank to the longest name a line contains that is not ranked yet (the
//! printed number is ignored). The fixed reading gives it to the name the line is about —
//! the one starting earliest at the start of a word (then earliest anywhere; the longest
//! among those starting there) — and a line whose name is already ranked is a duplicate
//! that consumes nothing (fix 1: GEO-Bench falls through to a shorter name, so a repeated
//! `document10` line ranks `document1`; and a line about Beta that mentions a longer,
//! already ranked competitor is still Beta's, where taking the longest name would drop it).
//! Only when no numbered line ranked anything, names are ranked by their first occurrence
//! in the whole reply, longest first with each found occurrence masked (fix 2: GEO-Bench
//! does not mask, so `document1` is found inside `document10`). A name never found is
//! missing: rank L + 1.
//!
//! [`Parser::Strict`] matches whole words only (a name is found where neither side touches a
//! letter or digit, so `GE` is not inside `Bridge`): on a numbered line the name starting
//! earliest wins, the longest among those starting there (a name at the line's start comes
//! first); duplicates consume nothing as in the fixed reading, and the fallback masks.
//! It is not GEO-Bench's reading; the report counts the lines it attributes differently.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// Which reading of replies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Parser {
    /// GEO-Bench's parser with the duplicate-line and substring fixes.
    Fixed,
    /// GEO-Bench's parser as published.
    #[default]
    #[value(name = "geobench")]
    #[serde(rename = "geobench")]
    GeoBench,
    /// Whole words only, earliest then longest on a line (a deviation from GEO-Bench).
    Strict,
}

impl Parser {
    /// The reading compared with this one in a run's report.
    pub fn compared(self) -> Parser {
        if self == Parser::Strict { Parser::GeoBench } else { Parser::Strict }
    }

    /// The name the command line knows it by.
    pub fn name(self) -> String {
        use clap::ValueEnum;
        self.to_possible_value().map_or_else(String::new, |v| v.get_name().to_string())
    }
}

/// Where `needle` first occurs in `hay` at or after byte `from` as a whole word (no letter
/// or digit touching either end).
fn find_word(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(pos) = hay.get(at..)?.find(needle).map(|p| p + at) {
        let before = hay[..pos].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = hay[pos + needle.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return Some(pos);
        }
        at = pos + hay[pos..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// Where `needle` first occurs in `hay` at the start of a word (`true`), or else first
/// occurs at all (`false`).
fn first_at(hay: &str, needle: &str) -> Option<(bool, usize)> {
    let first = hay.find(needle)?;
    let mut at = first;
    while let Some(pos) = hay.get(at..).and_then(|h| h.find(needle)).map(|p| p + at) {
        if hay[..pos].chars().next_back().is_none_or(|c| !c.is_alphanumeric()) {
            return Some((true, pos));
        }
        at = pos + hay[pos..].chars().next().map_or(1, char::len_utf8);
    }
    Some((false, first))
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
    read(reply, names, parser).0
}

/// The name each numbered line of `reply` ranks (`None`: the line ranks nothing), in order.
pub fn line_picks(reply: &str, names: &[String], parser: Parser) -> Vec<Option<usize>> {
    read(reply, names, parser).1
}

/// How two readings of the same replies differ: numbered lines attributed to another name,
/// and replies in which the target gets another rank (this catches replies without numbered
/// lines too, read by the fallback).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readings {
    pub lines: usize,
    pub lines_differ: usize,
    pub replies: usize,
    pub target_differs: usize,
}

impl Readings {
    /// Adds one reply of the list `names` whose target is the name at `target`.
    pub fn add(&mut self, reply: &str, names: &[String], target: usize, a: Parser, b: Parser) {
        let (ranks_a, picks_a) = read(reply, names, a);
        let (ranks_b, picks_b) = read(reply, names, b);
        self.lines += picks_a.len();
        self.lines_differ += picks_a.iter().zip(&picks_b).filter(|(x, y)| x != y).count();
        self.replies += 1;
        self.target_differs += usize::from(ranks_a.get(target) != ranks_b.get(target));
    }
}

/// Whether `reply` was read by the fallback: it says something, but no numbered line of it
/// ranked a name, so names were ranked by where they first occur (a prose refusal that
/// names a product reads as ranking it first).
pub fn by_fallback(reply: &str, names: &[String], parser: Parser) -> bool {
    !reply.trim().is_empty() && read(reply, names, parser).1.iter().all(Option::is_none)
}

/// The ranks, and the name each numbered line ranked.
fn read(reply: &str, names: &[String], parser: Parser) -> (Vec<Option<usize>>, Vec<Option<usize>>) {
    let norm: Vec<String> = names.iter().map(|n| normalise(n)).collect();
    // Name indices, longest normalised name first (ties in list order).
    let mut by_length: Vec<usize> = (0..names.len()).collect();
    by_length.sort_by_key(|&i| std::cmp::Reverse(norm[i].chars().count()));
    let mut out = vec![None; names.len()];
    let mut picks = Vec::new();
    let mut next = 1;
    for line in reply.lines() {
        let Some(caps) = NUMBERED.captures(line) else { continue };
        let body = normalise(&caps[2]);
        let mut contained = by_length.iter().copied().filter(|&i| !norm[i].is_empty() && body.contains(&norm[i]));
        let pick = match parser {
            Parser::Fixed => by_length
                .iter()
                .filter(|&&i| !norm[i].is_empty())
                .filter_map(|&i| first_at(&body, &norm[i]).map(|(word, pos)| ((!word, pos), i)))
                // Word starts first, then earliest; by_length order breaks ties by length.
                .min_by_key(|&(key, _)| key)
                .map(|(_, i)| i)
                .filter(|&i| out[i].is_none()),
            Parser::GeoBench => contained.find(|&i| out[i].is_none()),
            Parser::Strict => by_length
                .iter()
                .filter(|&&i| !norm[i].is_empty())
                .filter_map(|&i| find_word(&body, &norm[i], 0).map(|pos| (pos, i)))
                // Earliest, then longest (by_length order breaks ties by length).
                .min_by_key(|&(pos, _)| pos)
                .map(|(_, i)| i)
                .filter(|&i| out[i].is_none()),
        };
        picks.push(pick);
        if let Some(i) = pick {
            out[i] = Some(next);
            next += 1;
        }
    }
    if next > 1 {
        return (out, picks);
    }
    // Fallback: first occurrence in the whole reply.
    let mut text = normalise(reply);
    let mut found: Vec<(usize, usize)> = Vec::new();
    for &i in &by_length {
        if norm[i].is_empty() {
            continue;
        }
        let pos = if parser == Parser::Strict { find_word(&text, &norm[i], 0) } else { text.find(&norm[i]) };
        if let Some(pos) = pos {
            found.push((pos, i));
            if parser != Parser::GeoBench {
                // Every occurrence is masked, so a shorter name is not found inside one.
                text = text.replace(&norm[i], &"\u{1}".repeat(norm[i].len()));
            }
        }
    }
    found.sort_unstable();
    for (rank, (_, i)) in found.into_iter().enumerate() {
        out[i] = Some(rank + 1);
    }
    (out, picks)
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

    /// (numbered lines read differently, whether the target's rank differs) between the
    /// fixed and the strict reading.
    fn differ(reply: &str, names: &[String], target: usize) -> (usize, usize) {
        let mut r = Readings::default();
        r.add(reply, names, target, Parser::Fixed, Parser::Strict);
        assert_eq!(r.replies, 1);
        (r.lines_differ, r.target_differs)
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

    /// Short names inside other words: the substring readings find `GE` in `Bridge` and
    /// `LG` in `Algae`; the strict reading takes whole words, earliest then longest.
    #[test]
    fn the_strict_reading_takes_whole_words_earliest_then_longest() {
        let list = ["GE", "LG", "Bridge Pro", "Bridge", "MAC"];
        let reply = "1. Bridge Pro by GE\n2. Algae-free LG\n3. Bridge\n4. The MAC-book, not macabre";
        let s = Parser::Strict;
        assert_eq!(
            ranked(reply, &list, s),
            pairs(&[("Bridge Pro", 1), ("LG", 2), ("Bridge", 3), ("MAC", 4)]),
            "line 1: Bridge Pro starts first; line 2: LG is a word, Algae is not; line 4: MAC-book"
        );
        assert_eq!(ranked("1. Bridge\n2. Bridge Pro", &list, Parser::Fixed)[1].0, "Bridge Pro");
        let n = names(&list);
        assert_eq!(line_picks(reply, &n, s), [Some(2), Some(1), Some(3), Some(4)]);
        // The substring reading sees LG inside "Algae-free" too, but LG is the only name on
        // the line either way; it differs on none of these lines.
        assert_eq!(differ(reply, &n, 1), (0, 0));
        let tricky = "1. Algae Bridge\n2. GE";
        // Fixed: line 1's longest contained name is Bridge; strict: also Bridge (Algae is
        // not LG); line 2 GE either way.
        assert_eq!(differ(tricky, &n, 0), (0, 0));
        let inside = "1. Bridgestone\n2. GE";
        // Fixed finds Bridge inside Bridgestone (and GE inside it); strict finds nothing.
        assert_eq!(line_picks(inside, &n, Parser::Fixed), [Some(3), Some(0)]);
        assert_eq!(line_picks(inside, &n, s), [None, Some(0)]);
        assert_eq!(differ(inside, &n, 3), (1, 1), "Bridge is ranked by one reading only");
        assert_eq!(differ(inside, &n, 0), (1, 1), "GE: second under the substring reading, first under strict");
        assert_eq!(differ(inside, &n, 1), (1, 0), "LG is missing either way");
        // No numbered line: both fall back to first occurrences, and only the target's
        // rank shows that they differ (the substring reading finds GE inside "suggestion").
        let prose = "Our suggestion: Bridge first, then GE";
        assert_eq!(differ(prose, &n, 0), (0, 1));
        assert_eq!(ranked("We like ge and Bridgestone", &list, s), pairs(&[("GE", 1)]), "fallback: whole words");
    }

    /// A line about Beta that mentions a longer, already ranked competitor stays Beta's in
    /// the fixed reading (taking the longest name dropped every such line); GEO-Bench's
    /// reading falls through to Beta here too, since the longer name is taken.
    #[test]
    fn the_fixed_reading_ranks_the_name_a_line_is_about() {
        let list = ["Beta", "Alpha Deluxe", "Gamma"];
        let reply = "1. Alpha Deluxe\n2. Beta, cheaper than Alpha Deluxe\n3. Gamma (lighter than Alpha Deluxe)";
        let all = pairs(&[("Alpha Deluxe", 1), ("Beta", 2), ("Gamma", 3)]);
        assert_eq!(ranked(reply, &list, Parser::Fixed), all);
        assert_eq!(ranked(reply, &list, Parser::GeoBench), all);
        // A name inside another word yields to one at a word's start: "Algae" holds LG.
        let list = ["LG", "Bridge"];
        assert_eq!(ranked("1. Algae Bridge\n2. LG", &list, Parser::Fixed), pairs(&[("Bridge", 1), ("LG", 2)]));
        // A duplicate line still consumes nothing.
        assert_eq!(ranked("1. document10\n2. document10 again\n3. Alpha", &DOCS, Parser::Fixed)[1].0, "Alpha");
    }

    #[test]
    fn replies_read_by_the_fallback_are_known() {
        let n = names(&["Beta", "Alpha Deluxe"]);
        assert!(by_fallback("I cannot rank these; Beta is a fine product.", &n, Parser::Fixed));
        assert!(!by_fallback("1. Beta\n2. Alpha Deluxe", &n, Parser::Fixed));
        assert!(!by_fallback("   ", &n, Parser::Fixed), "an empty reply is a failed call, not a reading");
        assert!(by_fallback("1. Neither of them", &n, Parser::GeoBench), "numbered lines that rank nothing");
    }

    #[test]
    fn the_fallback_masks_longer_names_unless_reading_as_published() {
        let reply = "Top pick: document10. Then Alpha.";
        assert_eq!(ranked(reply, &DOCS, Parser::Fixed), pairs(&[("document10", 1), ("Alpha", 2)]));
        let published = ranked(reply, &DOCS, Parser::GeoBench);
        assert!(published.contains(&("document1".to_string(), 1)), "{published:?}");
    }
}
