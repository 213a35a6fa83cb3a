//! The live adapter: the same loop browsing any HTTP site (a self-hosted WebArena, or
//! Mirage's own sites), by fetching HTML and turning it into the observation format:
//! readable text, numbered links, available actions.
//!
//! Navigation stays on the start URL's origin; the verdict is recorded by the loop, not
//! posted to the site.

use async_trait::async_trait;
use reqwest::Url;
use scraper::{ElementRef, Html, Node, Selector};

use super::episode::Site;
use super::{Action, Observation};
use crate::corpus::Domain;

/// HTML reduced to what an agent reads.
#[derive(Clone, Debug, PartialEq)]
pub struct Readable {
    pub title: String,
    pub text: String,
    /// (label, absolute URL) in document order.
    pub links: Vec<(String, String)>,
}

const SKIP: &[&str] = &["script", "style", "noscript", "template", "head", "svg", "iframe", "form"];
const BLOCK: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "nav",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "li",
    "ul",
    "ol",
    "table",
    "tr",
    "br",
    "dt",
    "dd",
    "pre",
    "blockquote",
];

fn walk(el: ElementRef<'_>, base: &Url, out: &mut String, links: &mut Vec<(String, String)>) {
    for child in el.children() {
        match child.value() {
            Node::Text(t) => {
                let piece = t.split_whitespace().collect::<Vec<_>>().join(" ");
                if !piece.is_empty() {
                    let glued = piece.starts_with(['.', ',', ';', ':', '!', '?', ')']);
                    if !glued && !out.is_empty() && !out.ends_with(['\n', ' ', '|']) {
                        out.push(' ');
                    }
                    out.push_str(&piece);
                }
            }
            Node::Element(e) => {
                let Some(child_el) = ElementRef::wrap(child) else { continue };
                let name = e.name();
                if SKIP.contains(&name) {
                    continue;
                }
                if name == "a"
                    && let Some(href) = e.attr("href")
                    && let Ok(url) = base.join(href)
                    && matches!(url.scheme(), "http" | "https")
                {
                    let label =
                        child_el.text().collect::<Vec<_>>().join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
                    links.push((label.clone(), url.to_string()));
                    if !out.is_empty() && !out.ends_with(['\n', ' ']) {
                        out.push(' ');
                    }
                    out.push_str(&format!("{label} [{}]", links.len()));
                    continue;
                }
                if matches!(name, "td" | "th") {
                    out.push_str(" | ");
                }
                walk(child_el, base, out, links);
                if BLOCK.contains(&name) && !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            _ => {}
        }
    }
}

/// Reduces an HTML document fetched from `base` to readable text and numbered links.
pub fn readable(html: &str, base: &Url) -> Readable {
    let doc = Html::parse_document(html);
    let title = Selector::parse("title")
        .ok()
        .and_then(|s| doc.select(&s).next())
        .map(|t| t.text().collect::<String>().trim().to_string())
        .unwrap_or_default();
    let body = Selector::parse("body").ok().and_then(|s| doc.select(&s).next()).unwrap_or_else(|| doc.root_element());
    let (mut text, mut links) = (String::new(), Vec::new());
    walk(body, base, &mut text, &mut links);
    let text = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("\n");
    Readable { title, text, links }
}

/// A site on the network, browsed over HTTP.
pub struct LiveSite {
    client: reqwest::Client,
    domain: Domain,
    trail: Vec<Url>,
    note: Option<String>,
}

impl LiveSite {
    /// Starts at `start` (absolute). `domain` picks the verdict vocabulary shown.
    pub fn new(client: reqwest::Client, domain: Domain, start: Url) -> LiveSite {
        LiveSite { client, domain, trail: vec![start], note: None }
    }

    fn current(&self) -> &Url {
        self.trail.last().expect("the trail always holds the start page")
    }

    /// Resolves a link target against the current page; other origins are refused.
    fn resolve(&self, target: &str) -> Result<Url, String> {
        let url = self.current().join(target).map_err(|e| format!("{target:?} is not a URL: {e}"))?;
        if url.origin() == self.current().origin() { Ok(url) } else { Err(format!("{url} is on another site")) }
    }

    fn shown(&self, url: &str) -> String {
        match Url::parse(url) {
            Ok(u) if u.origin() == self.current().origin() => {
                let mut s = u.path().to_string();
                if let Some(q) = u.query() {
                    s.push('?');
                    s.push_str(q);
                }
                s
            }
            _ => url.to_string(),
        }
    }
}

#[async_trait]
impl Site for LiveSite {
    async fn observe(&mut self) -> Observation {
        let url = self.current().clone();
        let (status, page) = match self.client.get(url.clone()).send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                match resp.text().await {
                    Ok(html) => (status, readable(&html, &url)),
                    Err(e) => (
                        status,
                        Readable {
                            title: "Unreadable page".into(),
                            text: format!("The body could not be read: {e}"),
                            links: vec![],
                        },
                    ),
                }
            }
            Err(e) => (
                0,
                Readable {
                    title: "Unreachable".into(),
                    text: format!("The page could not be fetched: {e}"),
                    links: vec![],
                },
            ),
        };
        let links: Vec<(String, String)> = page.links.iter().map(|(l, u)| (l.clone(), self.shown(u))).collect();
        let mut text = String::new();
        if let Some(note) = self.note.take() {
            text.push_str(&format!("Note: {note}\n\n"));
        }
        text.push_str(&format!(
            "[live] {}\nURL: {}\nStatus: {status}\n\n{}\n",
            page.title,
            self.shown(url.as_str()),
            page.text
        ));
        if !links.is_empty() {
            text.push_str("\nLinks:\n");
            for (i, (label, u)) in links.iter().enumerate() {
                text.push_str(&format!("[{}] {label} -> {u}\n", i + 1));
            }
        }
        text.push_str(&crate::agent::protocol::footer(self.domain, false, None));
        Observation { url: crate::corpus::urls::normalise(url.as_str()), status, text, links, spans: vec![] }
    }

    fn apply(&mut self, action: &Action, current: &Observation) {
        let target = match &crate::agent::protocol::canonical(action.clone()) {
            Action::Goto { url } => Some(url.clone()),
            Action::Click { link } => match link.checked_sub(1).and_then(|i| current.links.get(i)) {
                Some((_, url)) => Some(url.clone()),
                None => {
                    self.note = Some(format!("there is no link number {link} on this page"));
                    None
                }
            },
            Action::Search { query } => Some(format!("/wiki/search?pattern={}", urlencoding::encode(query))),
            Action::Back => {
                if self.trail.len() > 1 {
                    self.trail.pop();
                } else {
                    self.note = Some("there is no previous page".to_string());
                }
                None
            }
            Action::Verdict { .. } => None,
            Action::Tool { name, .. } => {
                self.note = Some(format!("this site has no tool {name:?}"));
                None
            }
            Action::Answer { .. } => {
                self.note = Some("answer with a verdict".to_string());
                None
            }
        };
        if let Some(target) = target {
            match self.resolve(&target) {
                Ok(url) => self.trail.push(url),
                Err(e) => self.note = Some(e),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_becomes_text_with_numbered_links_and_no_scripts() {
        let base = Url::parse("http://h.example/a/b").expect("url");
        let html = r#"<html><head><title> T </title><script>alert(1)</script></head><body>
            <h1>Order</h1><p>Hello <b>there</b>, see <a href="/c/d">the customer</a>.</p>
            <table><tr><th>K</th><th>V</th></tr><tr><td>a</td><td>1</td></tr></table>
            <a href="javascript:alert(1)">bad</a><script>evil()</script><form><input name=x></form></body></html>"#;
        let r = readable(html, &base);
        assert_eq!(r.title, "T");
        assert_eq!(r.links, vec![("the customer".to_string(), "http://h.example/c/d".to_string())]);
        assert!(r.text.contains("Hello there, see the customer [1]"), "{}", r.text);
        assert!(r.text.contains("| K | V"), "{}", r.text);
        assert!(!r.text.contains("alert") && !r.text.contains("evil"));
    }
}
