//! Searchers for the parties' texts, built once per thread and text. A party's text is
//! looked for in page after page of trajectory after trajectory, and memchr's searcher
//! for a long needle costs more to build (its two-way factorisation reads the whole
//! needle several times) than a search of a page.

use std::cell::RefCell;

use memchr::memmem::Finder;
use rustc_hash::FxHashMap;

/// Needles shorter than this are built each time: their searchers are cheap.
const LONG: usize = 64;

/// Bytes of needles kept per thread (each kept twice: key and searcher); past them the
/// store starts over.
const KEPT_BYTES: usize = 4 << 20;

#[derive(Default)]
struct Kept {
    finders: FxHashMap<Box<str>, Finder<'static>>,
    bytes: usize,
}

thread_local! {
    static KEPT: RefCell<Kept> = RefCell::default();
}

/// Calls `search` with a searcher for `needle`: kept for this thread when the needle is
/// long, built now otherwise (or when `search` itself asks for one).
pub fn with_finder<R>(needle: &str, search: impl FnOnce(&Finder<'_>) -> R) -> R {
    if needle.len() < LONG {
        return search(&Finder::new(needle));
    }
    KEPT.with(|kept| {
        let Ok(mut kept) = kept.try_borrow_mut() else {
            return search(&Finder::new(needle));
        };
        if !kept.finders.contains_key(needle) {
            if kept.bytes + 2 * needle.len() > KEPT_BYTES {
                *kept = Kept::default();
            }
            kept.bytes += 2 * needle.len();
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
    }
}
