//! What a scorer of many trajectories keeps across them: the pages of the sites come back
//! in trajectory after trajectory, in every configuration and condition, so what the
//! judges compute from a page alone is computed once. Each store is bounded; past its
//! bound a page is computed each time.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap;

use super::restate::KeptPairs;
use crate::env::{Overlay, Span};

/// Everything kept across trajectories.
#[derive(Default)]
pub struct Memo {
    /// The word pairs of pages read, for the adoption rule.
    pub pairs: KeptPairs,
    /// The manipulated spans of pages rendered under a manipulation, for the span check.
    pub spans: KeptSpans,
}

/// The spans a page shows under a manipulation, by page and manipulation.
#[derive(Default)]
pub struct KeptSpans {
    pages: RwLock<FxHashMap<String, Arc<[Span]>>>,
}

impl KeptSpans {
    /// At most this many (page, manipulation) pairs are kept.
    const PAGES: usize = 50_000;

    /// The spans of the page at `norm` on `site`, rendered under `overlay` by `render`
    /// (which is called only when they are not kept).
    pub fn spans(&self, site: &str, norm: &str, overlay: &Overlay, render: impl FnOnce() -> Vec<Span>) -> Vec<Span> {
        // Everything the rendering reads: the site (its actions), the page, every edit.
        let mut key = format!("{site}\u{1e}{norm}");
        for e in &overlay.edits {
            for part in [&e.span, &e.injection, &e.url, &e.original, &e.text] {
                key.push('\u{1e}');
                key.push_str(part);
            }
            key.push('\u{1f}');
        }
        if let Some(spans) = self.pages.read().ok().and_then(|p| p.get(&key).cloned()) {
            return spans.to_vec();
        }
        let spans = render();
        if let Ok(mut pages) = self.pages.write()
            && pages.len() < Self::PAGES
        {
            pages.insert(key, spans.as_slice().into());
        }
        spans
    }
}
