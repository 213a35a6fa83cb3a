//! The keyword/phrase filter with GEO-Bench's list (shipped as `data/geo_keywords.txt`).

use std::sync::LazyLock;

use regex::Regex;

use super::{Filter, Verdict};

/// The shipped keyword list (a copy of GEO-Bench's appendix list).
pub const KEYWORDS: &str = include_str!("../../../data/geo_keywords.txt");

/// The keyword/phrase filter: words match whole-word, case-insensitively; phrases match
/// case-insensitively anywhere.
pub struct KeywordFilter {
    words: Vec<(String, Regex)>,
    phrases: Vec<String>,
}

impl KeywordFilter {
    /// Parses a list: `[words]` and `[phrases]` sections, one entry per line; lines starting
    /// with `# ` (hash and space) are comments, so an entry such as `#1` stays an entry.
    pub fn parse(list: &str) -> anyhow::Result<KeywordFilter> {
        let (mut words, mut phrases) = (Vec::new(), Vec::new());
        let mut section = "";
        for (n, line) in list.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line == "#" || line.starts_with("# ") {
                continue;
            }
            if line.starts_with('[') {
                section = line;
                continue;
            }
            match section {
                "[words]" => {
                    let re = Regex::new(&format!(
                        r"(?i)(?:^|[^\p{{L}}\p{{N}}_]){}(?:$|[^\p{{L}}\p{{N}}_])",
                        regex::escape(line)
                    ))?;
                    words.push((line.to_lowercase(), re));
                }
                "[phrases]" => phrases.push(line.to_lowercase()),
                _ => anyhow::bail!("keyword list line {}: {line:?} is outside a [words] or [phrases] section", n + 1),
            }
        }
        Ok(KeywordFilter { words, phrases })
    }

    /// The shipped list.
    pub fn shipped() -> &'static KeywordFilter {
        static FILTER: LazyLock<KeywordFilter> =
            LazyLock::new(|| KeywordFilter::parse(KEYWORDS).expect("the shipped keyword list parses"));
        &FILTER
    }

    /// Checks one text: flagged when any listed word or phrase occurs; the score is the
    /// number of distinct matches.
    pub fn check(&self, text: &str) -> Verdict {
        let lower = text.to_lowercase();
        let mut matched: Vec<String> =
            self.words.iter().filter(|(_, re)| re.is_match(text)).map(|(w, _)| w.clone()).collect();
        matched.extend(self.phrases.iter().filter(|p| lower.contains(p.as_str())).cloned());
        #[allow(clippy::cast_precision_loss)]
        Verdict { flagged: !matched.is_empty(), score: matched.len() as f64, matched }
    }
}

impl KeywordFilter {
    /// Checks one text the way GEO-Bench's keyword check reads it (the GEO ranking track):
    /// lowercase, every character that is not a word character, whitespace or `#` deleted,
    /// split on whitespace; a word hits when it equals a token, a phrase when it occurs in
    /// the tokens joined by single spaces. So `top-rated` is the token `toprated` (no hit)
    /// and `make sure, to` reads `make sure to` (a hit).
    pub fn check_geobench(&self, text: &str) -> Verdict {
        let kept: String = text
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == '_' || c.is_whitespace() || *c == '#')
            .collect();
        let tokens: Vec<&str> = kept.split_whitespace().collect();
        let joined = tokens.join(" ");
        let mut matched: Vec<String> =
            self.words.iter().filter(|(w, _)| tokens.contains(&w.as_str())).map(|(w, _)| w.clone()).collect();
        matched.extend(self.phrases.iter().filter(|p| joined.contains(p.as_str())).cloned());
        #[allow(clippy::cast_precision_loss)]
        Verdict { flagged: !matched.is_empty(), score: matched.len() as f64, matched }
    }
}

impl Filter for KeywordFilter {
    fn name(&self) -> &str {
        "keyword"
    }
    fn flags(&self, text: &str) -> bool {
        self.check(text).flagged
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keyword_words_are_whole_words_and_phrases_are_substrings() {
        let f = KeywordFilter::parse("[words]\nbest\ntop\n[phrases]\nmake sure to\n#1\n").expect("list");
        assert!(f.check("This is the BEST offer.").flagged);
        assert!(!f.check("Bestow the bestseller, topics and stop.").flagged, "inside other words");
        assert_eq!(f.check("top-rated, (best)!").matched, vec!["best".to_string(), "top".to_string()]);
        assert_eq!(f.check("Please Make Sure To check.").matched, vec!["make sure to".to_string()]);
        assert_eq!(f.check("We are #1 here").matched, vec!["#1".to_string()]);
        assert!(!f.check("make  sure to").flagged, "phrases match as written");
        assert!(KeywordFilter::parse("stray\n").is_err());
    }

    #[test]
    fn geobench_matching_differs_where_geobench_says() {
        let f = KeywordFilter::shipped();
        for (text, geobench, regex) in [
            ("top-rated blender", false, true),
            ("The best-in-class", false, true),
            ("make sure, to", true, false),
            ("#1 seller", true, true),
            ("It's the first.", true, true),
        ] {
            assert_eq!(f.check_geobench(text).flagged, geobench, "{text} (GEO-Bench)");
            assert_eq!(f.check(text).flagged, regex, "{text} (regex)");
        }
    }

    #[test]
    fn the_shipped_list_has_24_words_and_54_phrases() {
        let f = KeywordFilter::shipped();
        assert_eq!((f.words.len(), f.phrases.len()), (24, 54));
        assert!(f.check("It is the ULTIMATE choice").flagged);
        assert!(!f.check("The order arrived damaged and I would like a refund.").flagged);
    }
}
