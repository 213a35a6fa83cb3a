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
    /// A character that may stand beside a word: no letter, digit or `_`, in any case.
    boundary: Regex,
    phrases: Vec<String>,
}

/// [`KeywordFilter::boundary`]. A word is looked for alone and the characters around it
/// are checked with this one class: a pattern that carried the class on both sides of
/// each word took 1.5 ms a word to compile (the case-folded Unicode classes), and the
/// first manipulated text a scorer read waited for all of them.
const BOUNDARY: &str = r"^(?i)[^\p{L}\p{N}_]$";

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
                "[words]" => words.push((line.to_lowercase(), Regex::new(&format!("(?i){}", regex::escape(line)))?)),
                "[phrases]" => phrases.push(line.to_lowercase()),
                _ => anyhow::bail!("keyword list line {}: {line:?} is outside a [words] or [phrases] section", n + 1),
            }
        }
        Ok(KeywordFilter { words, boundary: Regex::new(BOUNDARY)?, phrases })
    }

    /// Whether `word` occurs in `text` with no letter, digit or `_` right before or after
    /// it: each place it starts is tried, overlapping ones included.
    fn whole_word(&self, word: &Regex, text: &str) -> bool {
        // Whether the character beside a match (none at either end of the text) lets it be
        // a whole word.
        let apart = |c: Option<char>| c.is_none_or(|c| self.boundary.is_match(c.encode_utf8(&mut [0; 4])));
        let mut from = 0;
        while let Some(m) = word.find_at(text, from) {
            if apart(text[..m.start()].chars().next_back()) && apart(text[m.end()..].chars().next()) {
                return true;
            }
            // One character on: matches may overlap ("aa" in "aaa").
            match text[m.start()..].chars().next() {
                Some(c) => from = m.start() + c.len_utf8(),
                None => return false,
            }
        }
        false
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
            self.words.iter().filter(|(_, re)| self.whole_word(re, text)).map(|(w, _)| w.clone()).collect();
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

    /// A word is found where one pattern carrying the boundary class on both sides finds
    /// it (the way the filter was first written): over texts mixing the shipped words, in
    /// other cases and with characters that fold into their letters (`K` Kelvin, long `ſ`,
    /// U+0345), next to letters, digits, marks, `_`, punctuation and each other.
    #[test]
    fn whole_words_are_found_where_one_pattern_with_the_boundaries_finds_them() {
        let f = KeywordFilter::shipped();
        let pattern = |w: &str| {
            Regex::new(&format!(r"(?i)(?:^|[^\p{{L}}\p{{N}}_]){}(?:$|[^\p{{L}}\p{{N}}_])", regex::escape(w)))
                .expect("pattern")
        };
        let patterns: Vec<Regex> = f.words.iter().map(|(w, _)| pattern(w)).collect();
        let beside: Vec<char> = "aZé1٣_ -.,!'\n#\u{345}\u{301}\u{200d}ⓐⅠßſK".chars().collect();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut draw = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % n as u64).expect("small")
        };
        for _ in 0..4_000 {
            let mut text = String::new();
            for _ in 0..3 {
                (0..draw(3)).for_each(|_| text.push(beside[draw(beside.len())]));
                let (word, _) = &f.words[draw(f.words.len())];
                let cased = word.chars().map(|c| match (draw(4), c) {
                    (0, _) => c.to_ascii_uppercase(),
                    (1, 'k') => '\u{212a}',
                    (1, 's') => 'ſ',
                    _ => c,
                });
                text.extend(cased);
            }
            for ((w, re), one) in f.words.iter().zip(&patterns) {
                assert_eq!(f.whole_word(re, &text), one.is_match(&text), "{w} in {text:?}");
            }
        }
        // "--" first found at 1 (after a letter), then at 2, overlapping it (after a dash).
        assert!(pattern("--").is_match("a--- "));
        assert!(f.whole_word(&Regex::new("--").expect("re"), "a--- "), "overlapping places are tried");
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
