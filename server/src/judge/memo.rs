//! What a scorer of many trajectories keeps across them: the pages of the sites and the
//! parties' texts come back in trajectory after trajectory, in every configuration and
//! condition, so what the judges compute from a page or a text alone is computed once.
//! Each store is bounded in bytes; past its bound a page or text is computed each time.

use std::sync::{Arc, RwLock};

use super::bounded::Kept;
use super::restate::KeptPairs;
use crate::env::Span;
use crate::env::overlay::Edit;

/// Everything kept across trajectories.
#[derive(Default)]
pub struct Memo {
    /// The word pairs of pages read, for the adoption rule.
    pub pairs: KeptPairs,
    /// The manipulated spans of pages rendered under a manipulation, for the span check.
    pub spans: KeptSpans,
    /// The detection filters' verdicts on manipulated texts.
    pub flags: KeptFlags,
}

/// The keyword and perplexity filters' verdicts on a manipulated text, by text: a party's
/// text comes back in every agent configuration and condition of its task and level.
#[derive(Default)]
pub struct KeptFlags {
    texts: RwLock<Kept<Box<str>, (bool, bool)>>,
}

impl KeptFlags {
    /// Whether the keyword and the perplexity filter flag `text`, as `check` says (called
    /// only when the verdicts are not kept).
    pub fn flags(&self, text: &str, check: impl FnOnce() -> (bool, bool)) -> (bool, bool) {
        // The entry (24 bytes) and the text's own allocation with its header.
        super::bounded::kept_or(&self.texts, text, || (check(), 24 + text.len() + 16))
    }
}

/// The spans a page shows under a manipulation, by page and manipulation.
#[derive(Default)]
pub struct KeptSpans {
    pages: RwLock<Kept<SpansKey, Arc<[Span]>>>,
}

/// A page's site and address, and every edit of its manipulation (compared whole: a line's
/// own texts are part of it at L4), shared by the steps of a trajectory.
type SpansKey = (String, String, Arc<[Edit]>);

impl KeptSpans {
    /// The spans of the page at `norm` on `site`, rendered under the manipulation of `edits`
    /// by `render` (which is called only when they are not kept).
    pub fn spans(
        &self,
        site: &str,
        norm: &str,
        edits: &Arc<[Edit]>,
        render: impl FnOnce() -> Vec<Span>,
    ) -> Arc<[Span]> {
        let key: SpansKey = (site.to_string(), norm.to_string(), edits.clone());
        if let Some(spans) = self.pages.read().ok().and_then(|p| p.get(&key).cloned()) {
            return spans;
        }
        let spans: Arc<[Span]> = render().into();
        let size = |s: &str| s.len() + 24;
        // The edits are counted with each page they are kept for: they are shared, so this
        // overstates the store, never understates it.
        let bytes = size(&key.0)
            + size(&key.1)
            + key
                .2
                .iter()
                .map(|e| [&e.span, &e.injection, &e.url, &e.original, &e.text].map(|f| size(f)).iter().sum::<usize>())
                .sum::<usize>()
            + spans.iter().map(|s| size(&s.id) + size(&s.injection) + size(&s.text) + 32).sum::<usize>();
        if let Ok(mut pages) = self.pages.write() {
            pages.insert(key, spans.clone(), bytes);
        }
        spans
    }
}
