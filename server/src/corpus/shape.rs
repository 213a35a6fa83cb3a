//! The shape of a corpus, domain by domain: how many pages each investigation needs and how
//! deep they lie, the category, difficulty and verdict mix, what a constant answer earns,
//! and how tasks group into scenario families. [`paper_findings`] holds the built-in corpus
//! to the MIRAGE paper's profile; a task file of one's own is only described.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt::Write as _;

use super::model::{Difficulty, Domain, Task};
use super::urls::{Node, graph_nodes, normalise};
use super::validate::Finding;

/// What a constant answer earns on one domain, on the three tiers (means over its tasks).
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    pub verdict: &'static str,
    pub default: f64,
    pub strict: f64,
    pub loose: f64,
}

/// One domain's shape.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DomainShape {
    pub tasks: usize,
    /// Required pages (the start page included) → tasks.
    pub nodes: BTreeMap<usize, usize>,
    /// Difficulty band → (tasks, fewest nodes, most nodes).
    pub bands: BTreeMap<&'static str, (usize, usize, usize)>,
    /// Category → (tasks, fewest nodes, most nodes).
    pub categories: BTreeMap<String, (usize, usize, usize)>,
    /// The link hops from the start page to the farthest required page → tasks.
    pub depth: BTreeMap<usize, usize>,
    /// Optimal verdict → tasks.
    pub optimal: BTreeMap<String, usize>,
    /// Every verdict of the site answered on every task, best first (Default tier).
    pub constant: Vec<Constant>,
    /// Scenario families and how many of them hold only one task.
    pub families: usize,
    pub lone_families: usize,
    /// Families whose tasks all mislead, or all do not.
    pub one_sided_families: usize,
}

/// The family a task belongs to: its `family` field, else its own id.
pub fn family(task: &Task) -> String {
    task.extra.get("family").and_then(serde_json::Value::as_str).map_or_else(|| task.id.clone(), ToString::to_string)
}

/// Link hops from the start page to each page of the task (pages it cannot reach are absent).
fn hops(task: &Task) -> HashMap<String, usize> {
    let links: HashMap<String, Vec<String>> = task
        .pages
        .iter()
        .map(|(url, p)| (normalise(url), p.links.iter().map(|l| normalise(&l.url)).collect()))
        .collect();
    let start = normalise(&task.start_url);
    let mut seen = HashMap::from([(start.clone(), 0)]);
    let mut queue = VecDeque::from([start]);
    while let Some(url) = queue.pop_front() {
        let d = seen[&url];
        for next in links.get(&url).into_iter().flatten() {
            if !seen.contains_key(next) {
                seen.insert(next.clone(), d + 1);
                queue.push_back(next.clone());
            }
        }
    }
    seen
}

/// The hops to the farthest required page (`None` when one cannot be reached by links).
pub fn depth(task: &Task) -> Option<usize> {
    let hops = hops(task);
    graph_nodes(&task.graph).iter().map(|n| hops.get(n.norm()).copied()).collect::<Option<Vec<_>>>()?.into_iter().max()
}

fn band(d: Difficulty) -> &'static str {
    match d {
        Difficulty::Easy => "easy",
        Difficulty::Medium => "medium",
        Difficulty::Hard => "hard",
    }
}

/// The shape of each domain `tasks` cover.
pub fn shape(tasks: &[Task]) -> BTreeMap<Domain, DomainShape> {
    let mut out: BTreeMap<Domain, DomainShape> = BTreeMap::new();
    let mut families: BTreeMap<(Domain, String), Vec<&Task>> = BTreeMap::new();
    for t in tasks {
        let s = out.entry(t.domain).or_default();
        let n = graph_nodes(&t.graph).len();
        s.tasks += 1;
        *s.nodes.entry(n).or_default() += 1;
        let widen = |e: &mut (usize, usize, usize)| {
            *e = if e.0 == 0 { (1, n, n) } else { (e.0 + 1, e.1.min(n), e.2.max(n)) };
        };
        widen(s.bands.entry(band(t.difficulty)).or_default());
        widen(s.categories.entry(t.category.clone()).or_default());
        if let Some(d) = depth(t) {
            *s.depth.entry(d).or_default() += 1;
        }
        *s.optimal.entry(t.verdict.optimal.clone()).or_default() += 1;
        families.entry((t.domain, family(t))).or_default().push(t);
    }
    for (domain, s) in &mut out {
        let mine: Vec<&Task> = tasks.iter().filter(|t| t.domain == *domain).collect();
        s.constant = constant_answers(*domain, &mine);
        let fams: Vec<&Vec<&Task>> = families.iter().filter(|((d, _), _)| d == domain).map(|(_, v)| v).collect();
        s.families = fams.len();
        s.lone_families = fams.iter().filter(|f| f.len() == 1).count();
        s.one_sided_families = fams
            .iter()
            .filter(|f| f.len() > 1)
            .filter(|f| f.iter().map(|t| t.surface_contradiction).collect::<BTreeSet<_>>().len() == 1)
            .count();
    }
    out
}

/// What each verdict of `domain`, given on every task, earns on the three tiers.
fn constant_answers(domain: Domain, tasks: &[&Task]) -> Vec<Constant> {
    #[allow(clippy::cast_precision_loss)]
    let n = tasks.len().max(1) as f64;
    let mut out: Vec<Constant> = domain
        .actions()
        .iter()
        .map(|v| {
            let (mut default, mut strict, mut loose) = (0.0, 0.0, 0.0);
            for t in tasks {
                let c = t.decision_credit(v);
                default += c.0;
                strict += c.1;
                loose += c.2;
            }
            Constant { verdict: v, default: default / n, strict: strict / n, loose: loose / n }
        })
        .collect();
    out.sort_by(|a, b| b.default.total_cmp(&a.default).then(a.verdict.cmp(b.verdict)));
    out
}

/// The shape as text tables, one section per domain.
pub fn table(shape: &BTreeMap<Domain, DomainShape>) -> String {
    let mut out = String::new();
    for (domain, s) in shape {
        let _ = writeln!(out, "## {} ({} tasks)\n", domain.as_str(), s.tasks);
        let sizes: Vec<String> = s.nodes.iter().map(|(n, k)| format!("{n}: {k}")).collect();
        let _ = writeln!(out, "required pages (start included) → tasks: {}", sizes.join(", "));
        let depths: Vec<String> = s.depth.iter().map(|(n, k)| format!("{n}: {k}")).collect();
        let _ = writeln!(out, "hops from the start page to the farthest required page → tasks: {}", depths.join(", "));
        let bands: Vec<String> = s.bands.iter().map(|(b, (k, lo, hi))| format!("{b} {k} ({lo}–{hi} pages)")).collect();
        let _ = writeln!(out, "difficulty: {}", bands.join(", "));
        let _ = writeln!(out, "categories:");
        for (c, (k, lo, hi)) in &s.categories {
            let _ = writeln!(out, "  {c}: {k} tasks, {lo}–{hi} pages");
        }
        let optimal: Vec<String> = s.optimal.iter().map(|(v, k)| format!("{v} {k}")).collect();
        let _ = writeln!(out, "optimal verdicts: {}", optimal.join(", "));
        let _ = writeln!(out, "a constant answer's Acc_dec (Default / Strict / Loose):");
        for c in &s.constant {
            let _ = writeln!(out, "  {}: {:.3} / {:.3} / {:.3}", c.verdict, c.default, c.strict, c.loose);
        }
        let _ = writeln!(
            out,
            "families: {} ({} of one task, {} whose tasks all mislead or all do not)\n",
            s.families, s.lone_families, s.one_sided_families
        );
    }
    out
}

/// The paper's profile: limits per domain (see the corpus chapter of the book).
pub struct Profile {
    pub nodes: (usize, usize),
    /// Fewest required pages of a hard-band task.
    pub hard_nodes: usize,
    /// Hops from the start page to the farthest required page.
    pub depth: (usize, usize),
    /// Category → its share of the domain's tasks.
    pub categories: &'static [(&'static str, f64)],
    /// The band that makes up `band_share` of the domain's tasks (the rest is the other).
    pub band: (Difficulty, f64),
    /// The most a constant answer may earn (Default).
    pub constant: f64,
}

/// How far a share may stray from the profile's.
pub const SHARE_SLACK: f64 = 0.03;

/// The profile of one domain.
pub fn profile(domain: Domain) -> Profile {
    match domain {
        Domain::Shop => Profile {
            nodes: (5, 10),
            hard_nodes: 6,
            depth: (1, 3),
            categories: &[],
            band: (Difficulty::Medium, 0.5),
            constant: 0.40,
        },
        Domain::Forum => Profile {
            nodes: (2, 6),
            hard_nodes: 2,
            depth: (1, 3),
            categories: &[],
            band: (Difficulty::Easy, 0.68),
            constant: 0.40,
        },
        Domain::Wiki => Profile {
            nodes: (3, 4),
            hard_nodes: 3,
            depth: (2, 3),
            categories: &[
                ("CONFLICT_OF_INTEREST", 0.24),
                ("CROSS_REFERENCE_REQUIRED", 0.26),
                ("FALSE_ALARM", 0.24),
                ("COORDINATED_EDITING", 0.16),
                ("HARD_DISINFORMATION", 0.10),
            ],
            band: (Difficulty::Medium, 0.56),
            // FLAG earns 0.8 on every REVERT task, so FLAG + APPROVE ≥ 0.92 whatever the mix
            // while REVERT stays at or under 0.40: the paper's 0.40 cannot hold here.
            constant: 0.48,
        },
    }
}

/// Where the built-in corpus leaves the paper's profile: each finding names the domain's
/// first task as the place and says what is off.
pub fn paper_findings(tasks: &[Task]) -> Vec<Finding> {
    let mut out = Vec::new();
    let shape = shape(tasks);
    for t in tasks {
        let p = profile(t.domain);
        let n = graph_nodes(&t.graph).len();
        let lo = if t.difficulty == Difficulty::Hard { p.hard_nodes.max(p.nodes.0) } else { p.nodes.0 };
        if n < lo || n > p.nodes.1 {
            out.push(finding(t, "graph", format!("{n} required pages; the profile has {lo}–{}", p.nodes.1)));
        }
        if t.domain == Domain::Forum {
            forum_findings(t, &mut out);
        }
        match depth(t) {
            Some(d) if (p.depth.0..=p.depth.1).contains(&d) => {}
            Some(d) => out.push(finding(
                t,
                "graph",
                format!(
                    "the farthest required page is {d} hops from the start page; the profile has {}–{}",
                    p.depth.0, p.depth.1
                ),
            )),
            None => {
                out.push(finding(t, "graph", "a required page cannot be reached by links from the start page".into()))
            }
        }
    }
    for (domain, s) in &shape {
        let p = profile(*domain);
        let first = tasks.iter().find(|t| t.domain == *domain).expect("a domain with a shape has tasks");
        #[allow(clippy::cast_precision_loss)]
        let share = |k: usize| k as f64 / s.tasks.max(1) as f64;
        for (category, want) in p.categories {
            let got = share(s.categories.get(*category).map_or(0, |c| c.0));
            if (got - want).abs() > SHARE_SLACK {
                out.push(finding(
                    first,
                    "category",
                    format!("{category} is {got:.3} of {}; the profile has {want:.2}", domain.as_str()),
                ));
            }
        }
        let (b, want) = p.band;
        let got = share(s.bands.get(band(b)).map_or(0, |x| x.0));
        if (got - want).abs() > SHARE_SLACK {
            out.push(finding(
                first,
                "difficulty",
                format!("{} is {got:.3} of {}; the profile has {want:.2}", band(b), domain.as_str()),
            ));
        }
        if let Some(best) = s.constant.first().filter(|c| c.default > p.constant) {
            out.push(finding(
                first,
                "verdict",
                format!(
                    "always {} earns Acc_dec {:.3} on {}; the profile allows {:.2}",
                    best.verdict,
                    best.default,
                    domain.as_str(),
                    p.constant
                ),
            ));
        }
        if s.lone_families > 0 || s.one_sided_families > 0 {
            out.push(finding(
                first,
                "family",
                format!(
                    "{} families of one task and {} whose tasks all mislead or all do not on {}",
                    s.lone_families,
                    s.one_sided_families,
                    domain.as_str()
                ),
            ));
        }
    }
    out
}

/// A forum case reads a user (profile, submissions or comments), and a user-history case
/// a history of five to ten posts.
fn forum_findings(t: &Task, out: &mut Vec<Finding>) {
    const USER_PAGES: [&str; 3] = ["/forum/user/", "/forum/submissions/", "/forum/comments/"];
    let user_nodes: Vec<String> = graph_nodes(&t.graph)
        .into_iter()
        .map(Node::into_norm)
        .filter(|u| USER_PAGES.iter().any(|p| u.starts_with(p)))
        .collect();
    if user_nodes.is_empty() {
        out.push(finding(t, "graph", "no user profile or history page is required".into()));
    }
    if t.category == "USER_HISTORY_CONTEXT" {
        let posts = t
            .pages
            .iter()
            .filter(|(u, _)| normalise(u).starts_with("/forum/comments/") && user_nodes.contains(&normalise(u)))
            .map(|(_, p)| p.text.lines().filter(|l| l.starts_with('|')).count().saturating_sub(1))
            .max()
            .unwrap_or(0);
        if !(5..=10).contains(&posts) {
            out.push(finding(t, "graph", format!("the user's history shows {posts} posts; the profile has 5–10")));
        }
    }
}

fn finding(task: &Task, field: &str, message: String) -> Finding {
    Finding { task_id: task.id.clone(), field: field.to_string(), message }
}

#[cfg(test)]
mod tests;
