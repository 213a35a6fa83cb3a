//! An episode's view of the world at a manipulation level: the edits that replace an
//! interested party's text on its page, and the spans they leave in observations.

use serde::{Deserialize, Serialize};

use vocab::Segment;

use crate::corpus::urls::{is_normal, normalise};

/// One manipulated text: where it goes and what replaces what.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    pub fn edits_for<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a Edit> {
        // Most paths asked about are normal already: those are compared as they are.
        let norm =
            if is_normal(path) { std::borrow::Cow::Borrowed(path) } else { std::borrow::Cow::Owned(normalise(path)) };
        self.edits.iter().filter(move |e| e.url == *norm)
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

/// Segments of an observation cut at its manipulated spans (byte offsets, checked).
pub fn segments(text: &str, spans: &[Span]) -> Vec<Segment> {
    let mut cuts: Vec<(usize, usize, &str)> = spans
        .iter()
        .filter_map(|s| {
            let (start, end) = (s.start?, s.end?);
            (start < end && end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end))
                .then_some((start, end, s.injection.as_str()))
        })
        .collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut at = 0;
    for (start, end, injection) in cuts {
        if start < at {
            continue;
        }
        if start > at {
            out.push(Segment { text: text[at..start].to_string(), injection: None });
        }
        out.push(Segment { text: text[start..end].to_string(), injection: Some(injection.to_string()) });
        at = end;
    }
    if at < text.len() || out.is_empty() {
        out.push(Segment { text: text[at..].to_string(), injection: None });
    }
    out
}

/// The first `max` bytes of a text (cut back to a character boundary) and how many bytes
/// were left out.
pub fn clip(text: &str, max: usize) -> (&str, usize) {
    if text.len() <= max {
        return (text, 0);
    }
    let cut = (0..=max).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    (&text[..cut], text.len() - cut)
}

/// [`segments`] of at most the first `max` bytes of the text, a span that runs past the cut
/// marked up to it, and a last plain segment saying how much was left out.
pub fn segments_clipped(text: &str, spans: &[Span], max: usize) -> Vec<Segment> {
    let (head, left) = clip(text, max);
    if left == 0 {
        return segments(text, spans);
    }
    let cut = head.len();
    // A span `segments` would refuse on the whole text stays refused.
    let valid = |s: &&Span| match (s.start, s.end) {
        (Some(a), Some(b)) => a < b && b <= text.len() && text.is_char_boundary(a) && text.is_char_boundary(b),
        _ => false,
    };
    let spans: Vec<Span> = spans
        .iter()
        .filter(valid)
        .filter(|s| s.start.is_some_and(|start| start < cut))
        .map(|s| Span { end: s.end.map(|e| e.min(cut)), ..s.clone() })
        .collect();
    let mut out = segments(head, &spans);
    out.push(Segment {
        text: format!("\n[… {left} more bytes not shown; `mirage runs export` writes the whole step]"),
        injection: None,
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(start: usize, end: usize) -> Span {
        Span { id: "s".into(), injection: "review".into(), text: String::new(), start: Some(start), end: Some(end) }
    }

    #[test]
    fn segments_cut_at_spans_and_skip_bad_offsets() {
        let text = "ab€cdef";
        let s = segments(text, &[span(2, 5), span(3, 4), span(6, 99)]);
        let parts: Vec<(&str, bool)> = s.iter().map(|x| (x.text.as_str(), x.injection.is_some())).collect();
        assert_eq!(parts, vec![("ab", false), ("€", true), ("cdef", false)]);
        assert_eq!(segments("", &[]).len(), 1);
    }

    #[test]
    fn a_clipped_page_keeps_its_marks_up_to_the_cut_and_says_what_it_left_out() {
        let span = |start, end| Span {
            id: "s".into(),
            injection: "note".into(),
            text: String::new(),
            start: Some(start),
            end: Some(end),
        };
        let text = "abcdéfghij";
        assert_eq!(clip(text, 4), ("abcd", 7), "é is two bytes");
        assert_eq!(clip(text, 5), ("abcd", 7), "never inside a character");
        assert_eq!(clip(text, 100), (text, 0));
        let out = segments_clipped(text, &[span(2, 9), span(9, 10)], 6);
        assert_eq!(out[0].text, "ab");
        assert_eq!((out[1].text.as_str(), out[1].injection.as_deref()), ("cdé", Some("note")));
        assert_eq!(out.len(), 3, "the span after the cut is gone: {out:?}");
        assert!(out[2].text.contains("5 more bytes not shown") && out[2].injection.is_none());
        assert_eq!(segments_clipped(text, &[span(2, 9)], 100), segments(text, &[span(2, 9)]));
        let broken = segments_clipped(text, &[span(2, 99), span(5, 8)], 6);
        assert!(broken.iter().all(|s| s.injection.is_none()), "past the end, or inside é: never marked {broken:?}");
    }
}
