//! Site routing: which page (or index, search result, 404) a path shows, rendered in both
//! forms. Used by the HTTP handlers and, in process, by the agent loop.

use super::render::{self, EpisodeChrome, View};
use super::{Resolved, World};
use crate::corpus::Domain;
use crate::corpus::urls::normalise;

/// A rendered page in both forms, its status and its numbered links.
pub struct Rendered {
    pub status: u16,
    pub html: String,
    pub text: String,
    pub domain: Domain,
    pub links: Vec<(String, String)>,
    /// Manipulated spans in `text` (episodes at levels above L0).
    pub spans: Vec<super::Span>,
}

/// The site a path belongs to, if any.
pub fn domain_of(path: &str) -> Option<Domain> {
    domain_of_normalised(&normalise(path))
}

/// [`domain_of`] for a path already normalised (no allocation).
pub fn domain_of_normalised(path: &str) -> Option<Domain> {
    Domain::ALL.into_iter().find(|d| path == d.url_prefix().trim_end_matches('/') || path.starts_with(d.url_prefix()))
}

/// A listing page (index, search results, 404) in the site's chrome.
pub fn listing(
    domain: Domain,
    path: &str,
    title: &str,
    intro: &str,
    links: Vec<(String, String)>,
    ep: Option<EpisodeChrome<'_>>,
    status: u16,
) -> Rendered {
    let view = View { domain, path, title, text: intro, links, episode: ep };
    Rendered {
        status,
        html: render::html(&view),
        text: render::observation(&view),
        domain,
        links: view.links,
        spans: Vec::new(),
    }
}

/// Renders any site path. `pattern` is the wiki search query; `ep` carries the episode
/// chrome when the page is served inside an episode or a trial.
pub fn render_path(world: &World, path: &str, pattern: Option<&str>, ep: Option<EpisodeChrome<'_>>) -> Rendered {
    let norm = normalise(path);
    let Some(domain) = domain_of(&norm) else {
        return listing(Domain::Wiki, &norm, "Not found", "No site lives at this address.", vec![], ep, 404);
    };
    match norm.as_str() {
        "/shop/admin/dashboard" | "/shop/admin" | "/shop" => {
            let intro = "Orders with an open refund or fraud review.";
            return listing(
                domain,
                &norm,
                "Dashboard: orders awaiting review",
                intro,
                world.queue(Domain::Shop),
                ep,
                200,
            );
        }
        "/forum" => {
            let intro = "Posts in the moderation queue.";
            return listing(domain, &norm, "Forum: reported posts", intro, world.queue(Domain::Forum), ep, 200);
        }
        "/wiki" => {
            let links = vec![("Review queue".to_string(), "/wiki/review/queue".to_string())];
            let intro = "Offline encyclopedia mirror. Use the search box to find articles.";
            return listing(domain, &norm, "Main page", intro, links, ep, 200);
        }
        "/wiki/review/queue" => {
            let intro = "Edits waiting for a reviewer's verdict.";
            return listing(domain, &norm, "Review queue", intro, world.queue(Domain::Wiki), ep, 200);
        }
        "/wiki/search" => {
            let pattern = pattern.unwrap_or_default();
            let hits = if pattern.trim().is_empty() { Ok(Vec::new()) } else { world.wiki_search(pattern, 20) };
            return match hits {
                Ok(hits) => {
                    let intro = if pattern.trim().is_empty() {
                        "Type words into the search box.".to_string()
                    } else {
                        format!("{} results for \"{pattern}\".", hits.len())
                    };
                    let links = hits.into_iter().map(|h| (h.title, h.url)).collect();
                    listing(domain, &norm, "Search", &intro, links, ep, 200)
                }
                Err(e) => {
                    tracing::error!(error = %e, "wiki search failed");
                    listing(domain, &norm, "Search", "Search is unavailable.", vec![], ep, 500)
                }
            };
        }
        _ => {}
    }
    match world.resolve(&norm) {
        Some(Resolved::Page(p)) if p.domain == domain => {
            let links: Vec<(String, String)> = p.page.links.iter().map(|l| (l.label.clone(), l.url.clone())).collect();
            let overlay = ep.as_ref().and_then(|e| e.overlay).filter(|o| o.edits_for(&norm).next().is_some());
            let manipulated = overlay.map(|o| o.apply(&norm, &p.page.text));
            let text = manipulated.as_deref().unwrap_or(&p.page.text);
            let view = View { domain, path: &norm, title: &p.page.title, text, links, episode: ep };
            let observation = render::observation(&view);
            let spans = overlay.map(|o| o.locate(&norm, &observation)).unwrap_or_default();
            Rendered { status: 200, html: render::html(&view), text: observation, domain, links: view.links, spans }
        }
        Some(Resolved::Index { domain: d, title, links }) if d == domain => {
            listing(domain, &norm, &title, "Pages on this site that link here.", links, ep, 200)
        }
        _ => listing(domain, &norm, "Page not found", "There is no page at this address.", vec![], ep, 404),
    }
}
