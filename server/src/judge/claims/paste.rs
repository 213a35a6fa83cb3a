//! Pasting is not reasoning: which words of a rationale stand in runs copied word for word
//! from what the agent received, and what a judge without a model reads of it.

use std::borrow::Cow;
use std::ops::Range;

use super::Received;

/// Words in a row that, found word for word in what the agent received, make a pasted run
/// (see [`Received::reasoning_text`]).
pub const PASTE_RUN: usize = 10;

/// The share of a rationale's words (outside the gold facts it quotes) in pasted runs from
/// which it counts as a paste of pages (see [`Received::reasoning_text`]).
pub const PASTE_SHARE: f64 = 0.8;

/// Copied words in a row (besides the gold facts among them) from which a stretch is a dump
/// of its page, left out however much the rationale says besides (a quoted sentence is
/// shorter).
pub const LONG_PASTE: usize = 25;

// A text with fewer than two runs of its own words holds no long stretch either (see
// [`Received::reasoning_text`]).
const _: () = assert!(LONG_PASTE >= 2 * PASTE_RUN);

/// Which words stand in a stretch of copied words in a row holding at least [`LONG_PASTE`]
/// words besides the gold facts it quotes (words that are only punctuation neither count
/// nor break a stretch; facts quoted one after another are no dump).
fn long_stretches(pasted: &[bool], keys: &[Cow<'_, str>], in_fact: &[bool]) -> Vec<bool> {
    let mut long = vec![false; pasted.len()];
    let mut stretch: Vec<usize> = Vec::new();
    let close = |stretch: &mut Vec<usize>, long: &mut Vec<bool>| {
        if stretch.iter().filter(|&&i| !in_fact[i]).count() >= LONG_PASTE {
            for &i in stretch.iter() {
                long[i] = true;
            }
        }
        stretch.clear();
    };
    for i in 0..pasted.len() {
        if keys[i].is_empty() {
            continue;
        }
        if pasted[i] {
            stretch.push(i);
        } else {
            close(&mut stretch, &mut long);
        }
    }
    close(&mut stretch, &mut long);
    long
}

impl Received<'_> {
    /// What a judge without a model reads of a rationale: the rationale itself, or, when it
    /// is a paste of what the agent received, only the words it wrote itself. A rationale is
    /// a paste when, outside the gold facts it quotes, at least [`PASTE_SHARE`] of its words
    /// (and at least two runs' worth) stand in runs of [`PASTE_RUN`] or more words found word
    /// for word in a page, the ticket or the manipulated text. Whatever the share, a stretch
    /// of [`LONG_PASTE`] or more copied words is left out. Quoting a fact, or a sentence, is
    /// reasoning; dumping pages is not. `facts` search for the gold facts' lowercased texts
    /// ([`crate::judge::rules::GoldFacts::searchers`]).
    pub fn reasoning_text<'a>(&self, text: &'a str, facts: &[&memchr::memmem::Finder<'_>]) -> Cow<'a, str> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let keys: Vec<Cow<'_, str>> = words.iter().map(|w| key(w)).collect();
        let lower = text.to_lowercase();
        // Where each word stands in the lowercased text, in which the facts are found: a
        // letter's lower case may take more or fewer bytes (the Kelvin sign, `İ`), never
        // another place among the words (no letter lowercases to a space, nor a space to
        // anything else).
        let places: Vec<Range<usize>> = lower
            .split_whitespace()
            .map(|w| {
                let start = w.as_ptr() as usize - lower.as_ptr() as usize;
                start..start + w.len()
            })
            .collect();
        let mut in_fact = vec![false; words.len()];
        for fact in facts {
            let len = fact.needle().len();
            for at in fact.find_iter(lower.as_bytes()) {
                for (i, place) in places.iter().enumerate() {
                    if place.start < at + len && at < place.end {
                        in_fact[i] = true;
                    }
                }
            }
        }
        let own: Vec<usize> = (0..words.len()).filter(|&i| !in_fact[i] && !keys[i].is_empty()).collect();
        // Fewer words than two runs besides the facts: neither a paste (it needs two runs'
        // worth copied) nor a long stretch (it needs more), so nothing received is read.
        if own.len() < 2 * PASTE_RUN {
            return Cow::Borrowed(text);
        }
        let pasted = self.pasted(&keys);
        let copied = own.iter().filter(|&&i| pasted[i]).count();
        #[allow(clippy::cast_precision_loss)]
        let dump = copied >= 2 * PASTE_RUN && copied as f64 >= PASTE_SHARE * own.len() as f64;
        // A long copied stretch is a dump of its page whatever surrounds it: padding a paste
        // with words of one's own does not make the pasted facts reasoning.
        let long = long_stretches(&pasted, &keys, &in_fact);
        let drop = |i: usize| if dump { pasted[i] } else { long[i] };
        if !(0..words.len()).any(drop) {
            return Cow::Borrowed(text);
        }
        Cow::Owned((0..words.len()).filter(|&i| !drop(i)).map(|i| words[i]).collect::<Vec<_>>().join(" "))
    }

    /// Which of `keys` (a text's words, lowercased, punctuation trimmed) stand in a run of
    /// [`PASTE_RUN`] or more words found word for word in what the agent received (its pages
    /// and ticket, or the manipulated text; the gold facts that came with visits are the
    /// scorer's, not text the agent could paste).
    ///
    /// The text's runs are few and the received words many, so the received words are read
    /// once, as hashes, with a rolling hash of the last [`PASTE_RUN`] (pages of the sites
    /// bring their words' hashes with them, made once per page); a run whose hash is one of
    /// the text's is pasted.
    fn pasted(&self, keys: &[Cow<'_, str>]) -> Vec<bool> {
        let mut pasted = vec![false; keys.len()];
        let at: Vec<usize> = (0..keys.len()).filter(|&i| !keys[i].is_empty()).collect();
        if at.len() < PASTE_RUN {
            return pasted;
        }
        let mut runs: Vec<(u64, usize)> = Vec::with_capacity(at.len() - PASTE_RUN + 1);
        let mut rolling = Rolling::default();
        for (j, &i) in at.iter().enumerate() {
            rolling.push(word_hash(&keys[i]));
            if j + 1 >= PASTE_RUN {
                runs.push((rolling.hash, j + 1 - PASTE_RUN));
            }
        }
        runs.sort_unstable();
        let mut found = Found::new(&runs);
        // The received text in stretches between the gold facts that came with visits (a
        // table's rows run on into each other, as a paste of them does).
        let mut stretches: Vec<Range<usize>> = Vec::with_capacity(self.evidence.len() + 1);
        let mut from = 0;
        for e in &self.evidence {
            stretches.push(from..e.start);
            from = e.end;
        }
        stretches.push(from..self.text.len());
        let mut hashed = self.hashed.iter().peekable();
        for stretch in stretches {
            let mut rolling = Rolling::default();
            let mut pos = stretch.start;
            while let Some((r, words)) = hashed.next_if(|(r, _)| r.end <= stretch.end) {
                found.words(&self.text[pos..r.start], &mut rolling);
                for &w in words.iter() {
                    found.push(w, &mut rolling);
                }
                pos = r.end;
            }
            found.words(&self.text[pos..stretch.end], &mut rolling);
            if found.left == 0 {
                break;
            }
        }
        found.words(&self.injected, &mut Rolling::default());
        for (k, (_, start)) in runs.iter().enumerate() {
            if found.found[k] {
                for &i in &at[*start..start + PASTE_RUN] {
                    pasted[i] = true;
                }
            }
        }
        pasted
    }
}

/// The hash of each word of `folded` (lowercased text), as the paste check reads it.
pub(super) fn word_hashes(folded: &str) -> Vec<u64> {
    let mut out = Vec::with_capacity(folded.len() / 6);
    each_word(folded, |w| out.push(word_hash(w)));
    out
}

/// Calls `f` with every word of `text` as the paste check compares it (empty ones left out).
fn each_word(text: &str, mut f: impl FnMut(&str)) {
    // ASCII whitespace leaves out the vertical tab, which `split_whitespace` splits at.
    if text.is_ascii() && memchr::memchr(0x0B, text.as_bytes()).is_none() {
        text.split_ascii_whitespace().map(key).filter(|w| !w.is_empty()).for_each(|w| f(&w));
    } else {
        text.split_whitespace().map(key).filter(|w| !w.is_empty()).for_each(|w| f(&w));
    }
}

/// Which of a text's runs of words have been found in what the agent received.
struct Found<'a> {
    /// The text's runs: their rolling hash and first word, sorted.
    runs: &'a [(u64, usize)],
    /// A sieve on the hashes' top bits: most received runs are none of the text's.
    sieve: [u64; 64],
    found: Vec<bool>,
    left: usize,
}

impl<'a> Found<'a> {
    fn new(runs: &'a [(u64, usize)]) -> Found<'a> {
        let mut sieve = [0u64; 64];
        for (h, _) in runs {
            sieve[(h >> 58) as usize] |= 1 << ((h >> 52) & 63);
        }
        Found { runs, sieve, found: vec![false; runs.len()], left: runs.len() }
    }

    fn words(&mut self, text: &str, rolling: &mut Rolling) {
        if self.left > 0 {
            each_word(text, |w| self.push(word_hash(w), rolling));
        }
    }

    fn push(&mut self, word: u64, rolling: &mut Rolling) {
        rolling.push(word);
        let h = rolling.hash;
        if rolling.n < PASTE_RUN || self.sieve[(h >> 58) as usize] & (1 << ((h >> 52) & 63)) == 0 {
            return;
        }
        let from = self.runs.partition_point(|(r, _)| *r < h);
        for k in from..self.runs.len() {
            if self.runs[k].0 != h {
                break;
            }
            if !self.found[k] {
                self.found[k] = true;
                self.left -= 1;
            }
        }
    }
}

/// A word as the paste check compares it: punctuation trimmed, lowercased (borrowed when it
/// is already).
fn key(w: &str) -> Cow<'_, str> {
    if w.is_ascii() {
        let b = w.as_bytes();
        let from = b.iter().position(u8::is_ascii_alphanumeric).unwrap_or(b.len());
        let to = b.iter().rposition(u8::is_ascii_alphanumeric).map_or(from, |p| p + 1);
        let t = &w[from..to];
        return if t.bytes().any(|c| c.is_ascii_uppercase()) {
            Cow::Owned(t.to_ascii_lowercase())
        } else {
            Cow::Borrowed(t)
        };
    }
    let t = w.trim_matches(|c: char| !c.is_alphanumeric());
    if t.bytes().any(|b| b.is_ascii_uppercase() || !b.is_ascii()) {
        Cow::Owned(t.to_lowercase())
    } else {
        Cow::Borrowed(t)
    }
}

fn word_hash(w: &str) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = rustc_hash::FxBuildHasher.build_hasher();
    h.write(w.as_bytes());
    h.finish()
}

/// A hash of the last [`PASTE_RUN`] words, kept as words come (a polynomial in the words'
/// hashes, the oldest taken out as a new one comes in).
#[derive(Default)]
struct Rolling {
    hash: u64,
    window: [u64; PASTE_RUN],
    n: usize,
}

impl Rolling {
    const BASE: u64 = 0x9E37_79B9_7F4A_7C15;

    fn push(&mut self, word: u64) {
        // BASE^PASTE_RUN: what the oldest word's hash has been multiplied by when it leaves.
        const OUT: u64 = {
            let mut p = 1u64;
            let mut i = 0;
            while i < PASTE_RUN {
                p = p.wrapping_mul(Rolling::BASE);
                i += 1;
            }
            p
        };
        let slot = self.n % PASTE_RUN;
        let old = if self.n >= PASTE_RUN { self.window[slot] } else { 0 };
        self.hash = self.hash.wrapping_mul(Self::BASE).wrapping_add(word).wrapping_sub(old.wrapping_mul(OUT));
        self.window[slot] = word;
        self.n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::{PASTE_RUN, Received};

    #[test]
    fn a_fact_is_found_in_its_own_words_whatever_lowercasing_does_to_the_words_before_it() {
        let ticket: Vec<String> = (0..60).map(|i| format!("word{i}")).collect();
        let received = Received::new(&ticket.join(" "), &[]);
        // A gold fact the rationale quotes (the ticket holds it too) after 100 Kelvin signs,
        // each 3 bytes that lowercase to one: with the fact read 200 bytes too early, its
        // last 28 words would count as copied words of the agent's own, a long stretch.
        let fact = ticket.join(" ");
        let finder = memchr::memmem::Finder::new(fact.as_bytes());
        for before in ["\u{212a} ", "\u{130} ", "x "] {
            let rationale = format!("{}{fact}", before.repeat(100));
            assert_eq!(received.reasoning_text(&rationale, &[&finder]), rationale, "{before:?}");
        }
    }

    #[test]
    fn two_runs_copied_word_for_word_are_a_paste_and_fewer_words_are_not() {
        let ticket: Vec<String> = (0..40).map(|i| format!("word{i}")).collect();
        let received = Received::new(&ticket.join(" "), &[]);
        for n in [2 * PASTE_RUN - 1, 2 * PASTE_RUN, 2 * PASTE_RUN + 3] {
            let copied = ticket[5..5 + n].join(" ");
            let read = received.reasoning_text(&copied, &[]);
            if n < 2 * PASTE_RUN {
                assert_eq!(read, copied, "{n} words");
            } else {
                assert_eq!(read, "", "{n} copied words are all left out");
            }
            // As many words of its own, none copied, are reasoning.
            let own: Vec<String> = copied.split(' ').enumerate().map(|(i, w)| format!("{w}{}", i % 5)).collect();
            assert_eq!(received.reasoning_text(&own.join(" "), &[]), own.join(" "));
        }
    }

    #[test]
    fn words_split_where_split_whitespace_splits_them() {
        for text in ["a\u{b}b c", "A,  b\u{c}c\td\r\ne", "x\u{a0}y z", "(one) two. \u{b}three"] {
            let mut words = Vec::new();
            super::each_word(text, |w| words.push(w.to_string()));
            let expected: Vec<String> =
                text.split_whitespace().map(|w| super::key(w).into_owned()).filter(|w| !w.is_empty()).collect();
            assert_eq!(words, expected, "{text:?}");
        }
    }
}
