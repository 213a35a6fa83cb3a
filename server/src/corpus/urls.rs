//! URL normalisation and the five-rule matcher (docs/scoring.md).
//!
//! The same rules decide which graph node a visit credits (judges) and which pages the
//! corpus validator forbids from crediting graph nodes, so both live here, free of IO.

use std::collections::HashSet;
use std::sync::Arc;

use regex::Regex;

/// Strips scheme and host, an episode prefix (`/ep/<id>`), query, fragment and trailing
/// slashes, and decodes percent-escapes (as the HTTP server decodes a path before routing).
/// The result always starts with `/` (the root is `/`).
///
/// Case is kept: the sites serve paths case-sensitively, so `/Shop/...` is another address
/// (a 404), not the page `/shop/...`. Dot segments are kept too: `/a/../b` is no page.
pub fn normalise(url: &str) -> String {
    // A normal URL has no space at either end to trim.
    if is_normal(url) {
        return url.to_string();
    }
    let s = url.trim();
    // Most of the others are a normal path with a trailing slash (the shop writes its
    // addresses so): one more scan says so.
    // (`/ep/` itself is an episode prefix, not the path `/ep`.)
    let bare = s.trim_end_matches('/');
    if is_normal(bare) && !s.starts_with("/ep/") {
        return bare.to_string();
    }
    by_steps(s)
}

/// [`normalise`] of a trimmed URL, step by step: what its shortcuts must agree with.
fn by_steps(mut s: &str) -> String {
    if let Some(i) = s.find('#') {
        s = &s[..i];
    }
    if let Some(i) = s.find('?') {
        s = &s[..i];
    }
    if let Some(rest) = split_scheme(s).map(|(_, rest)| rest) {
        s = rest.find('/').map_or("", |i| &rest[i..]);
    }
    // An escaped slash is data, not a separator (the sites route on the raw path, so
    // `/forum%2Fimage%2F1` is one segment and no page): it stays escaped.
    let mut path = if s.contains('%') {
        let guarded = s.replace("%2F", "\u{0}").replace("%2f", "\u{0}");
        let decoded = urlencoding::decode(&guarded).map_or_else(|_| guarded.clone(), std::borrow::Cow::into_owned);
        decoded.replace('\u{0}', "%2F")
    } else {
        s.to_string()
    };
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    if let Some(rest) = path.strip_prefix("/ep/") {
        path = rest.find('/').map_or_else(|| "/".to_string(), |i| rest[i..].to_string());
    }
    while path.len() > 1 && path.ends_with('/') {
        path.pop();
    }
    path
}

/// `url` split at its first `://` (the scheme before, the rest after), as
/// `str::split_once` does, with a searcher built once: URLs are split by the million.
pub fn split_scheme(url: &str) -> Option<(&str, &str)> {
    static SEPARATOR: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new("://"));
    let i = SEPARATOR.find(url.as_bytes())?;
    Some((&url[..i], &url[i + 3..]))
}

/// `url` normalised, borrowed when it is already (task files write their URLs that way).
pub fn normalised(url: &str) -> std::borrow::Cow<'_, str> {
    if is_normal(url) { std::borrow::Cow::Borrowed(url) } else { std::borrow::Cow::Owned(normalise(url)) }
}

/// Whether `url` is normal already (a path with nothing to take off, so [`normalise`]
/// gives it back as it is): one scan says so, and most URLs are.
pub fn is_normal(url: &str) -> bool {
    url.starts_with('/')
        && !url.starts_with("/ep/")
        && (url.len() == 1 || !url.ends_with('/'))
        && !url.ends_with(char::is_whitespace)
        && !url.bytes().any(|b| matches!(b, b'#' | b'?' | b'%' | b':'))
}

/// The listing pages every site serves besides its content: homes, queues and search.
/// They show other pages' titles, never a case's evidence.
pub const SITE_LISTINGS: [&str; 7] =
    ["/shop", "/shop/admin", "/shop/admin/dashboard", "/forum", "/wiki", "/wiki/review/queue", "/wiki/search"];

/// Whether a normalised path is a site's home, listing, search or queue page: the fixed
/// ones above, a forum's listing (`/forum/f/<name>`), or the root.
pub fn is_listing(norm: &str) -> bool {
    norm == "/"
        || SITE_LISTINGS.contains(&norm)
        || norm.strip_prefix("/forum/f/").is_some_and(|name| !name.is_empty() && !name.contains('/'))
}

/// The content pages a scorer knows (pages of the built-in sites, or pages a task file
/// defines), by normalised URL, listings left out. Only a visit to one of these may credit
/// a graph node below it (the reverse-prefix rule): a bare parent path, a listing or an
/// unknown URL credits nothing that way. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct ContentPages(Arc<HashSet<String>>);

impl ContentPages {
    /// The content pages among `urls` (any URL form).
    pub fn of<'a>(urls: impl IntoIterator<Item = &'a str>) -> ContentPages {
        ContentPages(Arc::new(urls.into_iter().map(normalise).filter(|u| !is_listing(u)).collect()))
    }

    /// Whether a normalised path is a known content page.
    pub fn contains(&self, norm: &str) -> bool {
        self.0.contains(norm)
    }
}

/// A visited (normalised) path with its [`tail`], to match against every node of a graph.
#[derive(Clone, Copy)]
pub struct Visit<'a> {
    path: &'a str,
    tail: Tail<'a>,
}

impl Visit<'_> {
    pub fn of(path: &str) -> Visit<'_> {
        Visit { path, tail: tail(path) }
    }
}

/// The last two non-empty segments of a path, the last first (`None` where it has fewer).
fn tail(path: &str) -> Tail<'_> {
    let mut segments = path.rsplit('/').filter(|s| !s.is_empty());
    Tail([segments.next(), segments.next()])
}

/// A path's last two segments ([`tail`]), to compare with other paths' without splitting
/// either again.
#[derive(Clone, Copy)]
struct Tail<'a>([Option<&'a str>; 2]);

impl Tail<'_> {
    /// Whether both paths have at least `n` segments and their last `n` are equal (`n` is 1
    /// or 2: a tail holds two).
    fn ends_alike(&self, other: &Tail<'_>, n: usize) -> bool {
        let n = n.min(self.0.len());
        self.0[..n].iter().zip(&other.0[..n]).all(|(a, b)| matches!((a, b), (Some(x), Some(y)) if x == y))
    }
}

/// URLs a walker could invent next to a graph node (normalised): a segment below it, its
/// last number shifted by ±1–3, a dot segment in front, and the same path in upper case.
/// None of them is a page unless some task defines it; the scorer credits nothing on a
/// page that does not exist, and the validator checks the ones that do.
pub fn neighbours(norm: &str) -> Vec<String> {
    let mut out = vec![format!("{norm}/zzz"), format!("{norm}/1"), format!("/x/..{norm}"), norm.to_uppercase()];
    let segments: Vec<&str> = norm.split('/').collect();
    if let Some(i) = segments.iter().rposition(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        && let Ok(id) = segments[i].parse::<i64>()
    {
        for k in [-3, -2, -1, 1, 2, 3] {
            let mut shifted: Vec<String> = segments.iter().map(ToString::to_string).collect();
            shifted[i] = (id + k).max(0).to_string();
            out.push(shifted.join("/"));
        }
    }
    out.iter().map(|u| normalise(u)).filter(|u| u != norm).collect()
}

/// A compiled graph node: its normalised form and, when it holds `<id>` tokens, the pattern.
#[derive(Clone, Debug)]
pub struct Node {
    /// Private, so that the segments found in it below stay true.
    norm: String,
    template: Option<Regex>,
    /// Where the last two segments of `norm` stand in it.
    tail: [Option<std::ops::Range<usize>>; 2],
}

impl Node {
    /// Compiles a graph URL.
    pub fn new(url: &str) -> Node {
        let norm = normalise(url);
        let template = norm.contains("<id>").then(|| {
            let pattern = norm.split("<id>").map(regex::escape).collect::<Vec<_>>().join("[^/]+");
            Regex::new(&format!("^{pattern}$")).expect("escaped literal pieces form a valid regex")
        });
        let range = |seg: &str| {
            let start = seg.as_ptr() as usize - norm.as_ptr() as usize;
            start..start + seg.len()
        };
        let Tail([last, before]) = tail(&norm);
        let tail = [last.map(range), before.map(range)];
        Node { norm, template, tail }
    }

    /// The node's normalised URL.
    pub fn norm(&self) -> &str {
        &self.norm
    }

    /// The node's normalised URL, owned.
    pub fn into_norm(self) -> String {
        self.norm
    }

    /// The last two segments of the node's path.
    fn tail(&self) -> Tail<'_> {
        Tail(self.tail.clone().map(|r| r.map(|r| &self.norm[r])))
    }

    /// Whether a visit to `visit` (already normalised) credits this node. `shop` turns on
    /// the shop-only rule; `content` says whether the visit is a known content page (see
    /// [`ContentPages`]), which the reverse-prefix rule requires.
    pub fn credited_by(&self, visit: &str, shop: bool, content: bool) -> bool {
        self.credited_by_visit(&Visit::of(visit), shop, content)
    }

    /// [`Node::credited_by`] for a visit split once for every node.
    pub fn credited_by_visit(&self, visit: &Visit<'_>, shop: bool, content: bool) -> bool {
        let Visit { path: visit, tail: visit_tail } = *visit;
        let u = self.norm.as_str();
        let v = visit;
        if u == v {
            return true;
        }
        // Prefix, forward: the visit is below the node.
        if v.starts_with(u) && v[u.len()..].starts_with('/') {
            return true;
        }
        // Prefix, reverse: the visit is an ancestor of the node. Only a content page
        // credits this way; otherwise the site's logo (or any parent path, even a 404)
        // would credit the whole graph.
        if content && u.starts_with(v) && u[v.len()..].starts_with('/') && !is_listing(v) {
            return true;
        }
        let own = self.tail();
        if own.ends_alike(&visit_tail, 2) {
            return true;
        }
        if shop && own.ends_alike(&visit_tail, 1) && (v.contains("order") || v.contains("customer")) {
            return true;
        }
        self.template.as_ref().is_some_and(|re| re.is_match(v))
    }
}

/// Graph nodes deduplicated after normalisation, in first-seen order.
pub fn graph_nodes(graph: &[String]) -> Vec<Node> {
    let mut nodes: Vec<Node> = Vec::new();
    for url in graph {
        let node = Node::new(url);
        if !nodes.iter().any(|n| n.norm == node.norm) {
            nodes.push(node);
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_strips_host_episode_query_fragment_and_slash() {
        assert_eq!(normalise("http://127.0.0.1:3000/ep/abc/shop/admin/x/12/?a=1#f"), "/shop/admin/x/12");
        assert_eq!(normalise("/wiki/A/Foo/"), "/wiki/A/Foo");
        assert_eq!(normalise("https://host"), "/");
        assert_eq!(normalise("/ep/abc"), "/");
    }

    #[test]
    fn the_shortcuts_normalise_as_the_steps_do() {
        use rand::{Rng, SeedableRng};
        let pieces = [
            "/", "//", "shop", "a", "12", "ep", "/ep/", "ep/", "%2F", "%2f", "%41", "%", "?q=1", "#f", ":", "://",
            "http", "h:80", " ", "\t", "é", ".", "..",
        ];
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..50_000 {
            let n = rng.random_range(0..9);
            let url: String = (0..n).map(|_| pieces[rng.random_range(0..pieces.len())]).collect();
            assert_eq!(normalise(&url), by_steps(url.trim()), "{url:?}");
            assert_eq!(normalised(&url), by_steps(url.trim()), "{url:?}");
            assert_eq!(split_scheme(&url), url.split_once("://"), "{url:?}");
        }
    }

    #[test]
    fn normalise_decodes_percent_escapes_and_keeps_case_and_dot_segments() {
        assert_eq!(
            normalise("/shop/admin/sales/order/view/order%5Fid/712"),
            "/shop/admin/sales/order/view/order_id/712"
        );
        assert_eq!(
            normalise("/ep/abc/forum/user/ada%2Fcomments/"),
            "/forum/user/ada%2Fcomments",
            "an escaped slash is no separator"
        );
        assert_eq!(normalise("/forum%2Fimage%2F5009"), "/forum%2Fimage%2F5009");
        assert_eq!(normalise("/wiki/A/%E2%82%AC"), "/wiki/A/€");
        assert_eq!(normalise("/wiki/A/%FF"), "/wiki/A/%FF", "an escape that is no UTF-8 stays as written");
        assert_eq!(normalise("/Shop/Admin"), "/Shop/Admin", "paths are case-sensitive, as the sites serve them");
        assert_eq!(normalise("/x/../shop/a"), "/x/../shop/a", "dot segments are not resolved: no page has one");
    }

    #[test]
    fn exact_and_prefix_rules_credit_both_directions() {
        let n = Node::new("/forum/user/ada");
        assert!(n.credited_by("/forum/user/ada", false, false));
        assert!(n.credited_by("/forum/user/ada/more", false, false));
        assert!(Node::new("/forum/user/ada/more").credited_by("/forum/user/ada", false, true));
        assert!(!n.credited_by("/forum/user/adam", false, true));
    }

    #[test]
    fn a_paths_tail_compares_as_its_last_segments_split_each_time() {
        let by_splitting = |a: &str, b: &str, n: usize| {
            let mut sa = a.rsplit('/').filter(|s| !s.is_empty());
            let mut sb = b.rsplit('/').filter(|s| !s.is_empty());
            (0..n).all(|_| matches!((sa.next(), sb.next()), (Some(x), Some(y)) if x == y))
        };
        let paths = ["", "/", "//", "/a", "a", "/a/", "/b/a", "/a/b", "/x/a/b", "/x/a/b/", "/a//b", "b/a/b", "/é/b"];
        for a in paths {
            let node = Node::new(a);
            for b in paths {
                for n in [1, 2] {
                    assert_eq!(tail(a).ends_alike(&tail(b), n), by_splitting(a, b, n), "{a:?} {b:?} {n}");
                    let norm = node.norm.as_str();
                    assert_eq!(node.tail().ends_alike(&tail(b), n), by_splitting(norm, b, n), "{norm:?} {b:?} {n}");
                }
            }
        }
    }

    #[test]
    fn last_two_segments_rule_needs_both_segments() {
        let n = Node::new("/wiki/A/Foo");
        assert!(n.credited_by("/mirror/A/Foo", false, false));
        assert!(!n.credited_by("/wiki/history/Foo", false, true));
    }

    #[test]
    fn shop_rule_needs_order_or_customer_in_visit() {
        let n = Node::new("/shop/admin/sales/order/view/order_id/712");
        assert!(n.credited_by("/shop/admin/customer/index/edit/id/712", true, false));
        assert!(!n.credited_by("/shop/admin/customer/index/edit/id/712", false, true));
        assert!(!n.credited_by("/shop/admin/rma/712", true, true));
    }

    #[test]
    fn template_tokens_match_one_segment() {
        let n = Node::new("/shop/admin/customer/index/edit/id/<id>/");
        assert!(n.credited_by("/shop/admin/customer/index/edit/id/88", false, false));
        assert!(!n.credited_by("/shop/admin/customer/index/edit/id/88/x/y", false, true));
    }

    #[test]
    fn ancestors_credit_only_when_they_are_content_pages() {
        let n = Node::new("/forum/user/ada/comments");
        let pages = ContentPages::of(["/forum/user/ada/", "/forum/post/1", "/forum/f/localnews", "/forum"]);
        assert!(pages.contains("/forum/user/ada") && pages.contains("/forum/post/1"));
        assert!(!pages.contains("/forum/f/localnews") && !pages.contains("/forum"), "listings are not content");
        let credits = |v: &str| n.credited_by(v, false, pages.contains(v));
        assert!(credits("/forum/user/ada"), "a profile page is the parent of its comments");
        for bare in ["/forum", "/forum/user", "/", "/forum/f/localnews"] {
            assert!(!credits(bare), "{bare} is no content page");
        }
        // Even a listing that a task file defines as a page credits nothing upwards.
        assert!(!Node::new("/forum/f/localnews/x").credited_by("/forum/f/localnews", false, true));
        assert!(is_listing("/wiki/review/queue") && is_listing("/shop/admin") && !is_listing("/forum/f/a/b"));
    }
}
