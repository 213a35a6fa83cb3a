//! Searchers for the parties' texts, built once per thread and text. A party's text is
//! looked for in page after page of trajectory after trajectory, and memchr's searcher
//! for a long needle costs more to build (its two-way factorisation reads the whole
//! needle several times) than a search of a page.

use std::cell::RefCell;

use memchr::memmem::Finder;
use rustc_hash::FxHashMap;

/// Needles shorter than this are built each time: their searchers are cheap.
const LONG: usize = 64;

/// Needles longer than this are built each time: one would take a large share of the
/// store, and its search costs more than its searcher anyway.
const LONGEST: usize = 64 << 10;

/// Bytes kept per thread, counted as [`size`] does; past them the store starts over. The
/// threads that score live as long as the process where it serves, so this stays small.
const KEPT_BYTES: usize = 4 << 20;

/// What a kept needle takes: its text twice (the key and the searcher's own copy), the
/// searcher's tables and the map's entry (about 1 KiB measured together for short needles).
fn size(needle: &str) -> usize {
    2 * needle.len() + 1024
}

#[derive(Default)]
struct Kept {
    finders: FxHashMap<Box<str>, Finder<'static>>,
    bytes: usize,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::default();
}

/// Calls `search` with a searcher for `needle`: kept for this thread when the needle is
/// long (but not huge), built now otherwise (or when `search` itself asks for one).
pub fn with_finder<R>(needle: &str, search: impl FnOnce(&Finder<'_>) -> R) -> R {
    if !(LONG..=LONGEST).contains(&needle.len()) {
        return search(&Finder::new(needle));
    }
    KEPT.with(|kept| {
        let Ok(mut kept) = kept.try_borrow_mut() else {
            return search(&Finder::new(needle));
        };
        if !kept.finders.contains_key(needle) {
            if kept.bytes + size(needle) > KEPT_BYTES {
                *kept = Kept::default();
            }
            kept.bytes += size(needle);
            kept.finders.insert(needle.into(), Finder::new(needle).into_owned());
        }
        search(&kept.finders[needle])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_searcher_finds_what_a_new_one_finds() {
        let long = "a party's text that is long enough to be kept by the store, ".repeat(3);
        let page = format!("before {long} between {long} after");
        for needle in [long.as_str(), "between", "", "absent from the page and long enough to be kept by the store too"]
        {
            for _ in 0..2 {
                let kept: Vec<usize> = with_finder(needle, |f| f.find_iter(page.as_bytes()).collect());
                let fresh: Vec<usize> = Finder::new(needle).find_iter(page.as_bytes()).collect();
                assert_eq!(kept, fresh, "{needle:?}");
            }
        }
        // A search that asks for another searcher gets one.
        let nested = with_finder(&long, |f| with_finder(&long, |g| (f.find(page.as_bytes()), g.find(page.as_bytes()))));
        assert_eq!(nested, (Some(7), Some(7)));
        // Neither a huge needle nor a short one is kept; many long ones stay within the bound.
        for i in 0..20_000 {
            with_finder(&format!("{i:>80}"), |f| f.find(page.as_bytes()));
        }
        let huge = "x".repeat(LONGEST + 1);
        let haystack = format!("{huge}{huge}");
        assert_eq!(with_finder(&huge, |f| f.find_iter(haystack.as_bytes()).count()), 2);
        assert_eq!(with_finder("between", |f| f.find(page.as_bytes())), page.find("between"));
        KEPT.with(|kept| {
            let kept = kept.borrow();
            assert!(
                kept.bytes <= KEPT_BYTES
                    && !kept.finders.contains_key(huge.as_str())
                    && !kept.finders.contains_key("between")
            );
            assert_eq!(kept.bytes, kept.finders.keys().map(|k| size(k)).sum::<usize>());
        });
    }
}
