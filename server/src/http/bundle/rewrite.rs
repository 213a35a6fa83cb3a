//! A rendered dashboard page made static: scripts out, forms disabled, links pointed at the
//! copy's files (or made plain text), and each turn's observation moved to a file of its own.

use scraper::{Html, Node};

use super::{POLICY, Place, place_of};

/// A page made static: its HTML, the bundle files its links reach, and how many of its
/// links pointed at pages the copy does not hold.
pub(super) struct Rewritten {
    pub(super) html: String,
    pub(super) links: Vec<Place>,
    pub(super) outside: usize,
    /// The texts the page's turns saw: (file in the copy, the observation's HTML).
    pub(super) seen: Vec<(String, String)>,
}

/// Removes scripts and preloads, disables forms, declares the bundle's policy and points
/// every link at its file (relative to `file`), or makes it plain text. `first`: the file
/// of the first page when `file` is a later page of a trajectory's turns; the summary it
/// repeats becomes a link there.
pub(super) fn rewrite(html: &str, run: &str, geo: bool, file: &str, first: Option<&str>) -> Rewritten {
    use html5ever::{QualName, local_name, ns};
    let up = "../".repeat(file.matches('/').count());
    let mut doc = Html::parse_document(html);
    let mut links = Vec::new();
    let mut outside = 0;
    let ids: Vec<_> = doc.tree.nodes().map(|n| n.id()).collect();
    // The run picker offers only this run: the copy holds no other. Found before the loop
    // changes any attribute.
    let other_runs: std::collections::HashSet<_> = doc
        .tree
        .nodes()
        .filter(|n| {
            let option = n.value().as_element().filter(|e| &*e.name.local == "option");
            let picker = n.parent().and_then(|p| p.value().as_element().map(|e| e.attr("name") == Some("run")));
            option.is_some_and(|o| o.attr("value") != Some(run)) && picker == Some(true)
        })
        .map(|n| n.id())
        .collect();
    for id in ids {
        let in_nav = doc
            .tree
            .get(id)
            .and_then(|n| n.parent())
            .is_some_and(|p| p.value().as_element().is_some_and(|e| &*e.name.local == "nav"));
        let Some(mut node) = doc.tree.get_mut(id) else { continue };
        let Node::Element(el) = node.value() else { continue };
        let tag = el.name.local.to_string();
        let rel = el.attr("rel").unwrap_or_default().to_string();
        let drop = match tag.as_str() {
            "option" => other_runs.contains(&id),
            "script" => true,
            "link" => rel != "stylesheet",
            "form" => el.has_class("whoami", scraper::CaseSensitivity::CaseSensitive),
            _ => false,
        };
        if drop {
            node.detach();
            continue;
        }
        match tag.as_str() {
            "link" => {
                for (name, value) in &mut el.attrs {
                    if &*name.local == "href" {
                        *value = format!("{up}mirage.css").into();
                    }
                }
                continue;
            }
            "button" | "input" | "select" | "textarea" => {
                el.attrs.push((QualName::new(None, ns!(), local_name!("disabled")), "".into()));
            }
            "form" => el.attrs.retain(|(name, _)| !matches!(&*name.local, "action" | "method")),
            _ => {}
        }
        let inert = retarget(el, (run, geo), (file, &up), &mut links);
        if inert && in_nav {
            // The main menu keeps only what the copy holds.
            if let Some(mut node) = doc.tree.get_mut(id) {
                node.detach();
            }
            continue;
        }
        if inert {
            outside += 1;
            make_inert(el);
        }
    }
    let seen = link_observations(&mut doc, &up);
    if let Some(first) = first {
        summary_on_first_page(&mut doc, &up, first);
    }
    frame(&mut doc, run);
    Rewritten { html: doc.html(), links, outside, seen }
}

/// Points an element's `href` at its file in the copy (relative to `file`, `up` leading back
/// to the copy's root) and adds the place to `links`; true when it leads outside the copy.
fn retarget(
    el: &mut scraper::node::Element,
    (run, geo): (&str, bool),
    (file, up): (&str, &str),
    links: &mut Vec<Place>,
) -> bool {
    let mut inert = false;
    for (name, value) in &mut el.attrs {
        if &*name.local != "href" {
            continue;
        }
        let target = value.to_string();
        match link_of(run, geo, &target) {
            Link::Keep => {}
            // A link to a turn of this very page needs only its fragment.
            Link::To(place, fragment) if place.file == file && !fragment.is_empty() => {
                *value = fragment.into();
            }
            Link::To(place, fragment) => {
                *value = format!("{up}{}{fragment}", place.file).into();
                links.push(place);
            }
            Link::Outside => {
                tracing::debug!(href = %target, page = file, "a link outside the bundle");
                inert = true;
            }
        }
    }
    inert
}

/// Replaces each turn's "What the agent saw" (a `details` holding a `pre.observation`)
/// with a link to the file of that text, named by its hash so that equal texts share one
/// file; the buttons that open and close them all go too. Returns (file, observation HTML)
/// for each turn.
fn link_observations(doc: &mut Html, up: &str) -> Vec<(String, String)> {
    use sha2::Digest;
    let observation = scraper::Selector::parse("details > pre.observation").expect("a valid selector");
    let buttons = scraper::Selector::parse("div.open-all").expect("a valid selector");
    let found: Vec<_> = doc
        .select(&observation)
        .filter_map(|pre| {
            let details = pre.parent()?.id();
            let lines = pre.text().collect::<String>().lines().count();
            Some((details, pre.html(), lines))
        })
        .collect();
    let drop: Vec<_> = doc.select(&buttons).map(|b| b.id()).collect();
    let mut seen = Vec::new();
    for (details, pre, lines) in found {
        let hash = sha2::Sha256::digest(pre.as_bytes());
        let file = format!("seen/{}.html", &hex::encode(hash)[..16]);
        let Some(mut node) = doc.tree.get_mut(details) else { continue };
        let mut link = node.insert_before(element("p", &[("class", "seen-link")]));
        link.append(element("a", &[("href", &format!("{up}{file}"))])).append(text("What the agent saw"));
        link.append(text(&format!(" ({lines} lines)")));
        node.detach();
        seen.push((file, pre));
    }
    for id in drop {
        if let Some(mut node) = doc.tree.get_mut(id) {
            node.detach();
        }
    }
    seen
}

/// Replaces a later page's copy of the trajectory's summary (ticket, verdict, scores,
/// claims) with a link to the first page, which holds it.
fn summary_on_first_page(doc: &mut Html, up: &str, first: &str) {
    let summary = scraper::Selector::parse("section.summary-grid").expect("a valid selector");
    let found: Vec<_> = doc.select(&summary).map(|s| s.id()).collect();
    for id in found {
        let Some(mut node) = doc.tree.get_mut(id) else { continue };
        let mut p = node.insert_before(element("p", &[("class", "summary-elsewhere")]));
        p.append(element("a", &[("href", &format!("{up}{first}"))]))
            .append(text("The ticket, verdict, scores and claims are on the first page of turns"));
        node.detach();
    }
}

/// A new element of the page, with its attributes.
fn element(tag: &str, attrs: &[(&str, &str)]) -> Node {
    use html5ever::{Attribute, LocalName, QualName, ns};
    let attrs = attrs
        .iter()
        .map(|(name, value)| Attribute {
            name: QualName::new(None, ns!(), LocalName::from(*name)),
            value: (*value).into(),
        })
        .collect();
    Node::Element(scraper::node::Element::new(QualName::new(None, ns!(html), LocalName::from(tag)), attrs))
}

/// A new text node.
fn text(t: &str) -> Node {
    Node::Text(scraper::node::Text { text: t.into() })
}

/// A link to a page the copy does not hold becomes plain text that says so.
fn make_inert(el: &mut scraper::node::Element) {
    use html5ever::{QualName, local_name, ns};
    el.attrs.retain(|(name, _)| &*name.local != "href" && &*name.local != "download");
    el.attrs.push((
        QualName::new(None, ns!(), local_name!("title")),
        "Not in this copy: open it on the Mirage server".into(),
    ));
    match el.attrs.iter_mut().find(|(name, _)| &*name.local == "class") {
        Some((_, class)) => *class = format!("{class} outside-bundle").into(),
        None => el.attrs.push((QualName::new(None, ns!(), local_name!("class")), "outside-bundle".into())),
    }
}

/// Declares the bundle's content policy in the head and puts the note saying what the copy
/// is at the top of the body.
fn frame(doc: &mut Html, run: &str) {
    let find = |doc: &Html, tag: &str| {
        doc.tree.nodes().find(|n| n.value().as_element().is_some_and(|e| &*e.name.local == tag)).map(|n| n.id())
    };
    let (head, body) = (find(doc, "head"), find(doc, "body"));
    if let Some(mut h) = head.and_then(|head| doc.tree.get_mut(head)) {
        h.prepend(element("meta", &[("http-equiv", "Content-Security-Policy"), ("content", POLICY)]));
    }
    if let Some(mut b) = body.and_then(|body| doc.tree.get_mut(body)) {
        b.prepend(element("p", &[("class", "bundle-note"), ("role", "note")])).append(text(&format!(
            "A static copy of run {run} (mirage runs bundle): the pages and downloads of this run only; \
             links to anything else are plain text and forms are disabled."
        )));
    }
}

/// What a link in a bundled page becomes.
pub(super) enum Link {
    /// Left as it is: a fragment on the same page, or an address outside the dashboard.
    Keep,
    /// A file of the copy, with the fragment to keep.
    To(Place, String),
    /// A dashboard page the copy does not hold.
    Outside,
}

pub(super) fn link_of(run: &str, geo: bool, href: &str) -> Link {
    let base = url::Url::parse("http://dashboard.invalid/").expect("a valid base");
    let Ok(target) = base.join(href) else { return Link::Outside };
    if href.starts_with('#') || target.host_str() != Some("dashboard.invalid") || target.scheme() != "http" {
        return Link::Keep;
    }
    let turn = target.query_pairs().find(|(k, _)| k == "turn").map(|(_, v)| v.into_owned());
    let query: Vec<(String, String)> =
        target.query_pairs().filter(|(k, _)| k != "turn").map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let trajectory = target.path().contains("/trials/") && target.path().starts_with("/runs/");
    // A trajectory link keeps only its page of turns; its list filters and turn do not
    // change what the page holds enough to earn a file of their own.
    let query: Vec<(String, String)> =
        if trajectory { query.into_iter().filter(|(k, _)| k == "page").collect() } else { query };
    let mut url = target.path().to_string();
    if !query.is_empty() {
        url.push('?');
        url.push_str(&url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&query).finish());
    }
    let fragment = match (target.fragment(), turn) {
        (Some(f), _) => format!("#{f}"),
        (None, Some(t)) if trajectory => format!("#turn-{t}"),
        _ => String::new(),
    };
    match place_of(run, geo, &url) {
        Some(place) => Link::To(place, fragment),
        None => Link::Outside,
    }
}

/// The page of one text an agent saw: `pre` is the observation as the trajectory page
/// rendered it (escaped, its manipulated spans marked), so it is copied as it is.
pub(super) fn seen_page(run: &str, pre: &str) -> String {
    let run = run.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;");
    let note = format!(
        "A static copy of run {run} (mirage runs bundle): a page as an agent of the run saw it; \
         every turn that saw the same text links here."
    );
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">\
         <meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"stylesheet\" href=\"../mirage.css\"><title>What the agent saw · Mirage</title></head>\
         <body><p class=\"bundle-note\" role=\"note\">{note}</p><main class=\"content\">\
         <h1>What the agent saw</h1>{pre}</main></body></html>"
    )
}
