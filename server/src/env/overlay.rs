//! An episode's view of the world at a manipulation level: the edits that replace an
//! interested party's text on its page, and the spans they leave in observations.

use serde::{Deserialize, Serialize};

use crate::corpus::urls::normalise;

/// One manipulated text: where it goes and what replaces what.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Edit {
    /// The span id (stable per trial: `<injection id>@<level>`).
    pub span: String,
    /// The injection point it manipulates.
    pub injection: String,
    /// Normalised path of the page holding the text.
    pub url: String,
    pub original: String,
    pub text: String,
}

/// A manipulated span as it appears in one observation: `start..end` are byte offsets
/// into that observation's text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Span {
    pub id: String,
    #[serde(default)]
    pub injection: String,
    #[serde(default)]
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<usize>,
}

/// The edits of one episode (empty at L0).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Overlay {
    pub edits: Vec<Edit>,
}

impl Overlay {
    /// The edits that apply to the page at `path`.
    pub fn edits_for<'a>(&'a self, path: &str) -> impl Iterator<Item = &'a Edit> + 'a {
        let norm = normalise(path);
        self.edits.iter().filter(move |e| e.url == norm)
    }

    pub fn is_empty(&self) -> bool {
        self.edits.is_empty()
    }

    /// `text` with every edit for `path` applied (the first occurrence of each original).
    pub fn apply(&self, path: &str, text: &str) -> String {
        let mut out = text.to_string();
        for e in self.edits_for(path) {
            out = out.replacen(&e.original, &e.text, 1);
        }
        out
    }

    /// Where the edits for `path` show in a rendered observation. An edit that removes its
    /// original (empty text, as a replay that strips the manipulated spans makes) shows
    /// nothing.
    pub fn locate(&self, path: &str, observation: &str) -> Vec<Span> {
        self.edits_for(path)
            .filter(|e| !e.text.is_empty())
            .filter_map(|e| {
                let start = observation.find(&e.text)?;
                Some(Span {
                    id: e.span.clone(),
                    injection: e.injection.clone(),
                    text: e.text.clone(),
                    start: Some(start),
                    end: Some(start + e.text.len()),
                })
            })
            .collect()
    }
}
