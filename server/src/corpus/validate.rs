//! The corpus validator: the rules every task must satisfy before it is stored or served.
//!
//! Pure functions over tasks. Each finding names the task and the field so that import can
//! report `file:line:field`. Runs on every import and in the tests over the built-in corpus.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::model::{Domain, Task};
use super::site_index::SiteIndex;
use super::urls::{Node, SITE_LISTINGS, graph_nodes, is_listing, normalise};

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub task_id: String,
    /// JSON path of the offending field, e.g. `gold_facts[2].text`.
    pub field: String,
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "task {}: {}: {}", self.task_id, self.field, self.message)
    }
}

fn finding(task: &Task, field: impl Into<String>, message: impl Into<String>) -> Finding {
    Finding { task_id: task.id.clone(), field: field.into(), message: message.into() }
}

/// Pages of a task keyed by normalised URL.
fn normalised_pages(task: &Task) -> HashMap<String, &super::model::PageSpec> {
    task.pages.iter().map(|(url, page)| (normalise(url), page)).collect()
}

/// Checks one task on its own: vocabulary, graph, facts, layers, injection points.
pub fn validate_task(task: &Task) -> Vec<Finding> {
    let mut out = Vec::new();
    let domain = task.domain;
    if task.id.trim().is_empty() {
        out.push(finding(task, "id", "must not be empty"));
    }
    if task.category.trim().is_empty() {
        out.push(finding(task, "category", "must not be empty"));
    }
    for (name, text) in [
        ("ticket.raw", &task.ticket.raw),
        ("ticket.hint", &task.ticket.hint),
        ("ticket.evidence_anchored", &task.ticket.evidence_anchored),
    ] {
        if text.trim().is_empty() {
            out.push(finding(task, name, "must not be empty"));
        }
    }
    check_verdicts(task, domain, &mut out);

    let pages = normalised_pages(task);
    for url in task.pages.keys() {
        if !normalise(url).starts_with(domain.url_prefix()) {
            out.push(finding(
                task,
                format!("pages[{url:?}]"),
                format!("page URL must start with {} for a {} task", domain.url_prefix(), domain.as_str()),
            ));
        }
    }
    let start = normalise(&task.start_url);
    let Some(start_page) = pages.get(&start) else {
        out.push(finding(task, "start_url", format!("{} is not one of the task's pages", task.start_url)));
        return out;
    };

    check_graph(task, domain, &pages, &mut out);

    check_gold_facts(task, &pages, &start, start_page, &mut out);
    check_injection_points(task, domain, &pages, &mut out);
    out
}

/// Each gold fact is on its page, off the start page and not visible on it.
fn check_gold_facts(
    task: &Task,
    pages: &HashMap<String, &super::model::PageSpec>,
    start: &str,
    start_page: &super::model::PageSpec,
    out: &mut Vec<Finding>,
) {
    for (i, fact) in task.gold_facts.iter().enumerate() {
        let field = format!("gold_facts[{i}]");
        if fact.text.trim().is_empty() {
            out.push(finding(task, format!("{field}.text"), "must not be empty"));
            continue;
        }
        match pages.get(&normalise(&fact.url)) {
            None => {
                out.push(finding(task, format!("{field}.url"), format!("{} is not one of the task's pages", fact.url)))
            }
            Some(page) if !page.text.contains(&fact.text) && !page.title.contains(&fact.text) => out.push(finding(
                task,
                format!("{field}.text"),
                format!("{:?} does not occur on {}", fact.text, fact.url),
            )),
            Some(_) => {}
        }
        if normalise(&fact.url) == start {
            out.push(finding(task, format!("{field}.url"), "gold facts must sit off the start page (hidden layer)"));
        } else if start_page.text.contains(&fact.text) || start_page.title.contains(&fact.text) {
            out.push(finding(
                task,
                format!("{field}.text"),
                format!("hidden evidence {:?} is visible on the start page", fact.text),
            ));
        }
    }
}

/// Each injection point's text is on its page, its goal is an action of the domain other
/// than the optimal verdict, and it carries no gold fact.
fn check_injection_points(
    task: &Task,
    domain: Domain,
    pages: &HashMap<String, &super::model::PageSpec>,
    out: &mut Vec<Finding>,
) {
    for (i, point) in task.injection_points.iter().enumerate() {
        let field = format!("injection_points[{i}]");
        match pages.get(&normalise(&point.url)) {
            None => {
                out.push(finding(task, format!("{field}.url"), format!("{} is not one of the task's pages", point.url)))
            }
            Some(page) if point.text.is_empty() || !page.text.contains(&point.text) => out.push(finding(
                task,
                format!("{field}.text"),
                format!("injection text does not occur on {}", point.url),
            )),
            Some(_) => {}
        }
        if domain.action(&point.goal).is_none() {
            out.push(finding(
                task,
                format!("{field}.goal"),
                format!("{:?} is not a {} action", point.goal, domain.as_str()),
            ));
        } else if point.goal.eq_ignore_ascii_case(&task.verdict.optimal) {
            out.push(finding(task, format!("{field}.goal"), "the party's goal cannot be the optimal verdict"));
        }
        for fact in &task.gold_facts {
            if point.text.contains(&fact.text) {
                out.push(finding(
                    task,
                    format!("{field}.text"),
                    format!("manipulable text must not carry the gold fact {:?}", fact.text),
                ));
            }
        }
    }
}

fn check_verdicts(task: &Task, domain: Domain, out: &mut Vec<Finding>) {
    let v = &task.verdict;
    if domain.action(&v.optimal).is_none() {
        out.push(finding(task, "verdict.optimal", format!("{:?} is not a {} action", v.optimal, domain.as_str())));
    } else {
        // Every task of a domain follows the domain's equivalence table.
        let expected: BTreeMap<String, f64> = domain
            .substitutes(&v.optimal)
            .iter()
            .map(|a| ((*a).to_string(), super::model::SUBSTITUTE_CREDIT))
            .collect();
        let given: BTreeMap<String, f64> = v.acceptable.iter().map(|(a, c)| (a.to_ascii_uppercase(), *c)).collect();
        if given != expected {
            let show = |m: &BTreeMap<String, f64>| {
                let items: Vec<String> = m.iter().map(|(a, c)| format!("{a} {c}")).collect();
                if items.is_empty() { "none".to_string() } else { items.join(", ") }
            };
            out.push(finding(
                task,
                "verdict.acceptable",
                format!(
                    "the {} equivalence table gives {} the alternatives {}; the task lists {}",
                    domain.as_str(),
                    v.optimal,
                    show(&expected),
                    show(&given)
                ),
            ));
        }
    }
    for (name, credit) in &v.acceptable {
        if domain.action(name).is_none() {
            out.push(finding(
                task,
                format!("verdict.acceptable.{name}"),
                format!("{name:?} is not a {} action", domain.as_str()),
            ));
        }
        if !(*credit > 0.0 && *credit < 1.0) {
            out.push(finding(
                task,
                format!("verdict.acceptable.{name}"),
                "partial credit must lie strictly between 0 and 1",
            ));
        }
        if name.eq_ignore_ascii_case(&v.optimal) {
            out.push(finding(
                task,
                format!("verdict.acceptable.{name}"),
                "the optimal verdict cannot also be an acceptable alternative",
            ));
        }
    }
    for (i, name) in v.harmful.iter().enumerate() {
        if domain.action(name).is_none() {
            out.push(finding(
                task,
                format!("verdict.harmful[{i}]"),
                format!("{name:?} is not a {} action", domain.as_str()),
            ));
        }
        if name.eq_ignore_ascii_case(&v.optimal) {
            out.push(finding(task, format!("verdict.harmful[{i}]"), "the optimal verdict is listed as harmful"));
        }
        if v.acceptable.keys().any(|a| a.eq_ignore_ascii_case(name)) {
            out.push(finding(task, format!("verdict.harmful[{i}]"), "an action cannot be both acceptable and harmful"));
        }
    }
}

fn check_graph(task: &Task, domain: Domain, pages: &HashMap<String, &super::model::PageSpec>, out: &mut Vec<Finding>) {
    if task.graph.is_empty() {
        out.push(finding(task, "graph", "must name at least one required page"));
    }
    let nodes = graph_nodes(&task.graph);
    let shop = domain == Domain::Shop;
    for (i, url) in task.graph.iter().enumerate() {
        let node = Node::new(url);
        let resolved = if url.contains("<id>") {
            pages.keys().any(|p| node.credited_by(p, shop, true))
        } else {
            pages.contains_key(node.norm())
        };
        if !resolved {
            out.push(finding(task, format!("graph[{i}]"), format!("{url} does not resolve to a page of the task")));
        }
    }
    for url in task.pages.keys() {
        let norm = normalise(url);
        let content = !is_listing(&norm);
        check_page_credits(task, &nodes, &norm, (shop, content), format!("pages[{url:?}]"), out);
    }
}

/// A page may credit at most one graph node, and only the node it is. `content`: the page
/// is a content page (not a listing), which the reverse-prefix rule requires.
fn check_page_credits(
    task: &Task,
    nodes: &[Node],
    url: &str,
    (shop, content): (bool, bool),
    field: String,
    out: &mut Vec<Finding>,
) {
    let credited: Vec<&Node> = nodes.iter().filter(|n| n.credited_by(url, shop, content)).collect();
    if credited.len() > 1 {
        let names: Vec<&str> = credited.iter().map(|n| n.norm()).collect();
        out.push(finding(
            task,
            field,
            format!("this page credits {} graph nodes: {}", credited.len(), names.join(", ")),
        ));
        return;
    }
    if let Some(node) = credited.first() {
        let is_node = node.norm() == url || (node.norm().contains("<id>") && node.credited_by(url, shop, content));
        if !is_node {
            out.push(finding(
                task,
                field,
                format!("out-of-graph page {url} is credited to graph node {}", node.norm()),
            ));
        }
    }
}

/// Checks a whole corpus: each task, unique ids, one consistent world per site (a URL
/// shared by two tasks must carry the same page), and that no page anywhere on a task's
/// site is credited to that task's graph nodes unless it is one of them.
pub fn validate_corpus(tasks: &[Task]) -> Vec<Finding> {
    let mut out: Vec<Finding> = tasks.iter().flat_map(validate_task).collect();
    let mut seen = HashSet::new();
    for task in tasks {
        if !seen.insert(task.id.as_str()) {
            out.push(finding(task, "id", "duplicate task id"));
        }
    }
    let mut world: BTreeMap<(Domain, String), (&str, &super::model::PageSpec)> = BTreeMap::new();
    for task in tasks {
        for (url, page) in &task.pages {
            let key = (task.domain, normalise(url));
            match world.get(&key) {
                Some((owner, existing)) if *existing != page => out.push(finding(
                    task,
                    format!("pages[{url:?}]"),
                    format!("task {owner} defines the same URL with different content"),
                )),
                Some(_) => {}
                None => {
                    world.insert(key, (task.id.as_str(), page));
                }
            }
        }
    }
    // Every page of every site is reachable from an episode, so none may be credited to a
    // task's nodes unless it is one of them: the pages tasks define, the listings each site
    // serves (homes, queues, search), and the index pages that exist because pages link to
    // them. Each node only meets the pages that one of the lenient rules could match, found
    // through the site's index.
    let site_pages = every_site_page(tasks, &world);
    let mut indexes: HashMap<Domain, SiteIndex<'_>> = HashMap::new();
    for (domain, url) in &site_pages {
        indexes.entry(*domain).or_default().add(url);
    }
    for task in tasks {
        let Some(index) = indexes.get(&task.domain) else {
            continue;
        };
        let own: HashSet<String> = task.pages.keys().map(|u| normalise(u)).collect();
        let nodes = graph_nodes(&task.graph);
        let shop = task.domain == Domain::Shop;
        let mut candidates: Vec<&str> = nodes.iter().flat_map(|n| index.candidates(n, shop)).collect();
        candidates.sort_unstable();
        candidates.dedup();
        for url in candidates {
            let content = world.contains_key(&(task.domain, url.to_string())) && !is_listing(url);
            if !own.contains(url) && nodes.iter().any(|n| n.credited_by(url, shop, content)) {
                check_page_credits(task, &nodes, url, (shop, content), format!("site page {url}"), &mut out);
            }
        }
        // Neighbours a walker would invent: a non-page earns nothing (the scorer's page
        // check), a page of the site must not earn the node.
        for node in &nodes {
            for near in super::urls::neighbours(node.norm()) {
                if own.contains(&near) || !site_pages.contains(&(task.domain, near.clone())) {
                    continue;
                }
                let content = world.contains_key(&(task.domain, near.clone())) && !is_listing(&near);
                if node.credited_by(&near, shop, content) {
                    out.push(finding(
                        task,
                        format!("graph[{:?}]", node.norm()),
                        format!("{near}, a page next to this node on the site, earns credit for it"),
                    ));
                }
            }
        }
    }
    out
}

/// Every page the sites serve for these tasks, by site: the pages tasks define (`world`),
/// the fixed listings, and every page a link points to (an index page when no task
/// defines it).
fn every_site_page<V>(tasks: &[Task], world: &BTreeMap<(Domain, String), V>) -> BTreeSet<(Domain, String)> {
    let site_of = |url: &str| Domain::ALL.into_iter().find(|d| format!("{url}/").starts_with(d.url_prefix()));
    let mut pages: BTreeSet<(Domain, String)> = world.keys().cloned().collect();
    pages.extend(SITE_LISTINGS.iter().filter_map(|l| Some((site_of(l)?, (*l).to_string()))));
    for page in tasks.iter().flat_map(|t| t.pages.values()) {
        for link in &page.links {
            let url = normalise(&link.url);
            if let Some(domain) = site_of(&url) {
                pages.insert((domain, url));
            }
        }
    }
    pages
}

#[cfg(test)]
mod tests;
