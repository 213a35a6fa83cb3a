//! Renders a page two ways from the same data: HTML for people and external browser
//! agents (maud escapes every string), and a text observation for the built-in agent loop.

use maud::{DOCTYPE, Markup, html};

use super::markup::{Block, parse};
use crate::corpus::Domain;

/// Everything needed to show one page.
pub struct View<'a> {
    pub domain: Domain,
    /// The canonical path of the page (without episode prefix).
    pub path: &'a str,
    pub title: &'a str,
    pub text: &'a str,
    pub links: Vec<(String, String)>,
    /// Set when the page is served inside an episode.
    pub episode: Option<EpisodeChrome<'a>>,
}

/// What an episode adds to every page: the URL prefix, the verdict tools and the
/// episode's manipulated texts.
pub struct EpisodeChrome<'a> {
    pub id: &'a str,
    pub actions: &'static [&'static str],
    pub closed: bool,
    pub overlay: Option<&'a super::Overlay>,
    /// Served over HTTP to an outside agent: the text observation prints addresses under
    /// the episode's prefix and says where actions are posted. The built-in loop's pages
    /// print site paths.
    pub over_http: bool,
}

impl View<'_> {
    /// The link target as served: episode-prefixed for site paths, unchanged for http(s)
    /// URLs, and `None` for anything else (`javascript:`, `data:` …), which is shown as text.
    fn href(&self, url: &str) -> Option<String> {
        let lower = url.trim_start().to_ascii_lowercase();
        if url.starts_with('/') && !url.starts_with("//") {
            Some(match &self.episode {
                Some(ep) => format!("/ep/{}{url}", ep.id),
                None => url.to_string(),
            })
        } else if lower.starts_with("http://") || lower.starts_with("https://") {
            Some(url.to_string())
        } else {
            None
        }
    }
}

fn site_name(domain: Domain) -> &'static str {
    match domain {
        Domain::Shop => "Mirage Store Admin",
        Domain::Forum => "Mirage Forum",
        Domain::Wiki => "Mirage Wiki (offline mirror)",
    }
}

fn home(domain: Domain) -> &'static str {
    match domain {
        Domain::Shop => "/shop/admin/dashboard",
        Domain::Forum => "/forum",
        Domain::Wiki => "/wiki",
    }
}

fn verdict_label(domain: Domain) -> &'static str {
    match domain {
        Domain::Shop => "Refund and fraud decision",
        Domain::Forum => "Moderator tools",
        Domain::Wiki => "Review-queue verdict",
    }
}

/// The HTML page. Every string from the task is escaped by maud.
pub fn html(view: &View<'_>) -> String {
    let blocks = parse(view.text);
    let search_action = view.href("/wiki/search").unwrap_or_default();
    let markup: Markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (view.title) " · " (site_name(view.domain)) }
                link rel="stylesheet" href="/pkg/mirage.css";
            }
            body class={ "site site-" (view.domain.as_str()) } {
                header class="site-header" {
                    a class="site-name" href=(view.href(home(view.domain)).unwrap_or_default()) { (site_name(view.domain)) }
                    @if view.domain == Domain::Wiki {
                        form class="site-search" method="get" action=(search_action) role="search" {
                            input type="search" name="pattern" aria-label="Search the wiki" placeholder="Search";
                            button type="submit" { "Search" }
                        }
                    }
                    @if let Some(ep) = &view.episode {
                        span class="episode-badge" { "Episode " (ep.id) }
                    }
                }
                main class="site-main" {
                    h1 { (view.title) }
                    (body(&blocks))
                    @if !view.links.is_empty() {
                        nav class="site-links" aria-label="Related pages" {
                            h2 { "Related" }
                            ul {
                                @for (label, url) in &view.links {
                                    @match view.href(url) {
                                        Some(href) => li { a href=(href) { (label) } },
                                        None => li { (label) " (" (url) ")" },
                                    }
                                }
                            }
                        }
                    }
                    @if let Some(ep) = &view.episode {
                        (verdict_form(view.domain, ep))
                    }
                }
            }
        }
    };
    markup.into_string()
}

fn body(blocks: &[Block]) -> Markup {
    html! {
        @for block in blocks {
            @match block {
                Block::Heading(h) => h2 { (h) },
                Block::Para(p) => p { (p) },
                Block::Table { header, rows } => table {
                    thead { tr { @for h in header { th { (h) } } } }
                    tbody { @for row in rows { tr { @for c in row { td { (c) } } } } }
                },
            }
        }
    }
}

fn verdict_form(domain: Domain, ep: &EpisodeChrome<'_>) -> Markup {
    html! {
        section class="verdict-tools" aria-label=(verdict_label(domain)) {
            h2 { (verdict_label(domain)) }
            @if ep.closed {
                p { "This episode is closed; its verdict has been recorded." }
            } @else {
                form method="post" action={ "/ep/" (ep.id) "/verdict" } {
                    label { "Rationale" textarea name="rationale" rows="3" required {} }
                    div class="verdict-buttons" {
                        @for action in ep.actions {
                            button type="submit" name="action" value=(action) { (action) }
                        }
                    }
                }
            }
        }
    }
}

/// The text observation: title, path, readable body, numbered links and, inside an
/// episode, the actions the agent may take.
pub fn observation(view: &View<'_>) -> String {
    // Over HTTP an episode's addresses are printed under its prefix, so that a link followed
    // as printed stays inside the episode.
    let shown = |url: &str| match &view.episode {
        Some(ep) if ep.over_http => view.href(url).unwrap_or_else(|| url.to_string()),
        _ => url.to_string(),
    };
    let mut out = format!("[{}] {}\nURL: {}\n\n", site_name(view.domain), view.title, shown(view.path));
    for block in parse(view.text) {
        match block {
            Block::Heading(h) => out.push_str(&format!("\n## {h}\n")),
            Block::Para(p) => out.push_str(&format!("{p}\n")),
            Block::Table { header, rows } => {
                out.push_str(&format!("| {} |\n", header.join(" | ")));
                for row in rows {
                    out.push_str(&format!("| {} |\n", row.join(" | ")));
                }
            }
        }
    }
    if !view.links.is_empty() {
        out.push_str("\nLinks:\n");
        for (i, (label, url)) in view.links.iter().enumerate() {
            out.push_str(&format!("[{}] {label} -> {}\n", i + 1, shown(url)));
        }
    }
    if let Some(ep) = &view.episode {
        out.push_str(&super::protocol::footer(view.domain, ep.closed, ep.over_http.then_some(ep.id)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(text: &str) -> View<'_> {
        View {
            domain: Domain::Shop,
            path: "/shop/x",
            title: "T <b>",
            text,
            links: vec![("L".into(), "/shop/y".into())],
            episode: None,
        }
    }

    #[test]
    fn html_escapes_task_text() {
        let out = html(&view("<script>alert(1)</script>\n| <img src=x onerror=alert(1)> | v |"));
        assert!(!out.contains("<script>alert"));
        assert!(!out.contains("<img src=x"));
        assert!(out.contains("&lt;script&gt;"));
        assert!(out.contains("T &lt;b&gt;"));
    }

    #[test]
    fn only_site_paths_and_http_urls_become_links() {
        let mut v = view("x");
        v.links = vec![
            ("bad".into(), "javascript:alert(1)".into()),
            ("proto".into(), "//evil.example/x".into()),
            ("ok".into(), "https://example.org/".into()),
        ];
        let out = html(&v);
        assert!(!out.contains("href=\"javascript:") && !out.contains("href=\"//evil"));
        assert!(out.contains("href=\"https://example.org/\""));
    }

    #[test]
    fn observation_numbers_links_and_lists_actions_in_episodes() {
        let mut v = view("hello");
        v.episode = Some(EpisodeChrome {
            id: "e1",
            actions: &["APPROVE", "DENY"],
            closed: false,
            overlay: None,
            over_http: false,
        });
        let obs = observation(&v);
        assert!(obs.contains("[1] L -> /shop/y"));
        assert!(obs.contains(r#"{"type": "click", "link": N}"#) && !obs.contains("/ep/e1"));
        assert!(obs.contains("ACTION one of: APPROVE, DENY"));
        assert!(html(&v).contains("href=\"/ep/e1/shop/y\""));
        // Over HTTP the printed addresses stay inside the episode.
        v.episode = Some(EpisodeChrome {
            id: "e1",
            actions: &["APPROVE", "DENY"],
            closed: false,
            overlay: None,
            over_http: true,
        });
        let obs = observation(&v);
        assert!(obs.contains("URL: /ep/e1/shop/x") && obs.contains("[1] L -> /ep/e1/shop/y"), "{obs}");
        assert!(obs.contains("POST one of these objects to /ep/e1/act"));
    }
}
