//! Detection filters (GEO-Bench) and the defenses built on them: a keyword/phrase list, a
//! perplexity score (a character n-gram model trained on the corpus's clean text, or a
//! scoring endpoint's log-probabilities), an LLM judge, and the calibration of each to a
//! fixed false-positive rate on clean originals with equal weight per domain.
//!
//! Filters read text and answer; they never change what is stored and never call the
//! agent loop. Defended agent configurations read their pages through [`defend`].

mod calibration;
mod defense;
mod flags;
mod judge;
mod keyword;
mod perplexity;

use serde::{Deserialize, Serialize};

pub use calibration::{Calibration, calibrate, calibrate_union, realised};
pub use defense::{DEFENSE_FPR, DEFENSES, Defense, MIN_WORDS, defend, defense_for};
pub use flags::FilterFlags;
pub use judge::{JUDGE_FILTER_PROMPT, JudgeDefense, JudgeFilter};
pub use keyword::{KEYWORDS, KeywordFilter};
pub use perplexity::{
    CalibratedPerplexity, EndpointPerplexity, HeldOut, NgramModel, Perplexity, PerplexityFilter, world_trained,
};

/// What a filter said about one text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub flagged: bool,
    pub score: f64,
    /// The listed words and phrases found (keyword filter).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub matched: Vec<String>,
}

/// A filter that decides, text by text, whether to withhold it from an agent (defended
/// agent configurations).
pub trait Filter: Send + Sync {
    fn name(&self) -> &str;
    fn flags(&self, text: &str) -> bool;
}

/// The clean texts of a corpus, for training and calibration: every page's text with the
/// parties' texts cut out (training), and the parties' texts by domain (calibration).
pub struct CleanCorpus {
    pub pages: Vec<String>,
    pub originals: Vec<(String, String)>,
}

impl CleanCorpus {
    pub fn of<'t>(tasks: impl IntoIterator<Item = &'t crate::corpus::Task>) -> CleanCorpus {
        let mut pages = Vec::new();
        let mut originals = Vec::new();
        for t in tasks {
            for (url, page) in &t.pages {
                let mut text = page.text.clone();
                for p in t.injection_points.iter().filter(|p| p.url == *url) {
                    text = text.replace(&p.text, " ");
                }
                pages.push(text);
            }
            for p in &t.injection_points {
                originals.push((t.domain.as_str().to_string(), p.text.clone()));
            }
        }
        CleanCorpus { pages, originals }
    }
}
