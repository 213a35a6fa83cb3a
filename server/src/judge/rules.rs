//! The rule-based metrics (docs/scoring.md): investigation accuracy and efficiency, decision
//! accuracy in three tiers, and gold-fact coverage. Pure functions over normalised URLs.

use serde::{Deserialize, Serialize};

use super::restate::lower;
use crate::corpus::urls::{ContentPages, Node, Visit, graph_nodes, normalise, normalised};
use crate::corpus::{Domain, Task};

/// Discount per step of E_inv.
pub const GAMMA: f64 = 0.95;
/// Steps counted by E_inv (and the agent loop's budget).
pub const STEP_CAP: usize = crate::corpus::model::STEP_BUDGET;

/// A task's graph compiled for matching, with the nodes its start page credits and the
/// content pages the scorer knows (for the reverse-prefix rule).
pub struct Graph {
    nodes: Vec<Node>,
    shop: bool,
    /// `start[i]`: node i is credited by `start_url`.
    start: Vec<bool>,
    content: ContentPages,
}

impl Graph {
    /// Compiles the task's graph (deduplicated by normalised URL); `content` are the pages of
    /// the world the task lives in.
    pub fn of(task: &Task, content: &ContentPages) -> Graph {
        Graph::from_urls(&task.graph, &task.start_url, task.domain, content)
    }

    /// Compiles a graph given as URLs.
    pub fn from_urls(graph: &[String], start_url: &str, domain: Domain, content: &ContentPages) -> Graph {
        let nodes = graph_nodes(graph);
        let shop = domain == Domain::Shop;
        let start_norm = normalise(start_url);
        let is_content = content.contains(&start_norm);
        let start = nodes.iter().map(|n| n.credited_by(&start_norm, shop, is_content)).collect();
        Graph { nodes, shop, start, content: content.clone() }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Whether node `i` is credited by the start page.
    pub fn is_start(&self, i: usize) -> bool {
        self.start[i]
    }

    /// Indices of the nodes a (normalised) visit credits.
    pub fn credited<'a>(&'a self, visit: &'a str) -> impl Iterator<Item = usize> + 'a {
        let content = self.content.contains(visit);
        let visit = Visit::of(visit);
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.credited_by_visit(&visit, self.shop, content))
            .map(|(i, _)| i)
    }

    /// The nodes each (normalised) visit credits, matching every distinct URL once.
    pub fn hits(&self, visits: &[String]) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = Vec::with_capacity(visits.len());
        let mut first: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
        first.reserve(visits.len());
        for (i, v) in visits.iter().enumerate() {
            let hit = match first.entry(v.as_str()) {
                std::collections::hash_map::Entry::Occupied(j) => out[*j.get()].clone(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                    self.credited(v).collect()
                }
            };
            out.push(hit);
        }
        out
    }

    /// Acc_inv over per-visit hits, leaving out node `skip` when given. `None` for an empty
    /// graph (or one whose only node is skipped).
    pub fn acc_inv_hits(&self, hits: &[Vec<usize>], skip: Option<usize>) -> Option<f64> {
        let mut seen = vec![false; self.nodes.len()];
        for i in hits.iter().flatten() {
            seen[*i] = true;
        }
        let counted = (0..self.nodes.len()).filter(|i| Some(*i) != skip);
        let (total, found) = counted.fold((0usize, 0usize), |(t, f), i| (t + 1, f + usize::from(seen[i])));
        #[allow(clippy::cast_precision_loss)]
        (total > 0).then(|| found as f64 / total as f64)
    }

    /// Acc_inv: the share of graph nodes some visit credits.
    pub fn acc_inv(&self, visits: &[String]) -> Option<f64> {
        self.acc_inv_hits(&self.hits(visits), None)
    }

    /// Acc_inv with each node left out in turn (the leave-one-out jackknife of the MIRAGE
    /// seed's appendix E.1); empty for graphs of fewer than two nodes.
    pub fn jackknife_hits(&self, hits: &[Vec<usize>]) -> Vec<f64> {
        if self.nodes.len() < 2 {
            return Vec::new();
        }
        (0..self.nodes.len()).filter_map(|skip| self.acc_inv_hits(hits, Some(skip))).collect()
    }

    /// [`Graph::jackknife_hits`] over URLs.
    pub fn acc_inv_jackknife(&self, visits: &[String]) -> Vec<f64> {
        self.jackknife_hits(&self.hits(visits))
    }

    /// E_inv: discounted impact of the first `STEP_CAP` steps over that of the ideal order.
    pub fn e_inv(&self, visits: &[String]) -> Option<f64> {
        self.e_inv_hits(&self.hits(visits))
    }

    /// [`Graph::e_inv`] over per-visit hits.
    pub fn e_inv_hits(&self, hits: &[Vec<usize>]) -> Option<f64> {
        if self.nodes.is_empty() {
            return None;
        }
        let mut credited = vec![false; self.nodes.len()];
        let mut actual = 0.0;
        let mut discount = 1.0;
        for step in hits.iter().take(STEP_CAP) {
            let impact = if step.iter().any(|&i| !self.start[i] && !credited[i]) {
                1.0
            } else if step.iter().any(|&i| self.start[i] && !credited[i]) {
                0.5
            } else {
                0.0
            };
            for &i in step {
                credited[i] = true;
            }
            actual += discount * impact;
            discount *= GAMMA;
        }
        // The ideal order also begins on the start page at step 0 (0.5 when it credits a
        // start node, nothing otherwise), then credits one new non-start node per step.
        let has_start = self.start.iter().any(|s| *s);
        let non_start = self.start.iter().filter(|s| !**s).count();
        let mut ideal = if has_start { 0.5 } else { 0.0 };
        for t in 1..=non_start.min(STEP_CAP - 1) {
            ideal += GAMMA.powi(i32::try_from(t).unwrap_or(i32::MAX));
        }
        // Only a trajectory whose step 0 is not the start page (a malformed file) can beat
        // the ideal; the bound keeps such a file's E_inv in [0, 1].
        Some(if ideal > 0.0 { (actual / ideal).min(1.0) } else { 0.0 })
    }
}

/// Decision accuracy in the three tiers (docs/scoring.md).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionScore {
    pub default: f64,
    pub strict: f64,
    pub loose: f64,
}

/// Scores a verdict. The second value names an action outside the domain's vocabulary.
pub fn acc_dec(task: &Task, verdict: Option<&str>) -> (DecisionScore, Option<String>) {
    let zero = DecisionScore { default: 0.0, strict: 0.0, loose: 0.0 };
    let Some(verdict) = verdict.map(str::trim).filter(|v| !v.is_empty()) else {
        return (zero, None);
    };
    if task.domain.action(verdict).is_none() {
        return (zero, Some(verdict.to_string()));
    }
    // Loose: the whole (symmetrised) substitution family of the optimal verdict.
    let (default, strict, loose) = task.decision_credit(verdict);
    (DecisionScore { default, strict, loose }, None)
}

/// Evidence quality Q_ev (1–5) without a judge, of a rationale that cites `used` of the
/// task's gold facts from pages the agent visited ([`GoldFacts::cited`]: evidence it saw and
/// used): 1 + 4 × their share, rounded to a whole band. A fact cited from a page never
/// visited does not count. `None` when the task lists no gold fact.
pub fn quality_of(task: &Task, used: usize) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    let share = used as f64 / task.gold_facts.len() as f64;
    (!task.gold_facts.is_empty()).then(|| (1.0 + 4.0 * share).round())
}

/// A task's gold facts made ready for searching once: each with its page normalised and a
/// searcher for its lowercased text (the scorer keeps one per task).
pub struct GoldFacts {
    facts: Vec<(String, memchr::memmem::Finder<'static>)>,
}

impl GoldFacts {
    pub fn of(task: &Task) -> GoldFacts {
        let facts = task
            .gold_facts
            .iter()
            .map(|f| {
                (normalised(&f.url).into_owned(), memchr::memmem::Finder::new(lower(&f.text).as_bytes()).into_owned())
            })
            .collect();
        GoldFacts { facts }
    }

    /// How many of the gold facts `text` quotes (case-insensitive) whose page is one of
    /// `pages` (normalised URLs). The page is compared first, the cheaper test.
    pub fn cited(&self, text: &str, pages: &[impl AsRef<str>]) -> usize {
        let hay = lower(text);
        self.facts
            .iter()
            .filter(|(url, fact)| pages.iter().any(|p| p.as_ref() == url) && fact.find(hay.as_bytes()).is_some())
            .count()
    }

    /// Searchers for the facts' lowercased texts, blank ones left out.
    pub fn searchers(&self) -> Vec<&memchr::memmem::Finder<'static>> {
        let blank = |f: &memchr::memmem::Finder<'_>| std::str::from_utf8(f.needle()).is_ok_and(|t| t.trim().is_empty());
        self.facts.iter().map(|(_, f)| f).filter(|f| !blank(f)).collect()
    }
}

/// The most the judge-less Acc_rsn gives a rationale whose verdict earns no decision credit
/// (wrong or harmful; the rubric's lowest non-zero band): citing the evidence and then
/// deciding against it is poor reasoning, however many facts it names.
pub const HARMFUL_RSN_CAP: f64 = 0.3;

/// The most the judge-less Q_ev gives such a rationale (of 1–5).
pub const NO_CREDIT_QEV_CAP: f64 = 2.0;

/// Acc_rsn without a judge, of a rationale that cites `found` of the task's gold facts from
/// pages the agent saw ([`GoldFacts::cited`], `seen`: normalised URLs of pages that exist):
/// their share. A rationale that pastes facts it never saw earns nothing for them. `None`
/// when the task lists no gold fact.
pub fn coverage_of(task: &Task, found: usize) -> Option<f64> {
    #[allow(clippy::cast_precision_loss)]
    (!task.gold_facts.is_empty()).then(|| found as f64 / task.gold_facts.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts_cited(task: &Task, text: &str, pages: &[impl AsRef<str>]) -> usize {
        GoldFacts::of(task).cited(text, pages)
    }

    fn evidence_quality(task: &Task, rationale: &str, visits: &[impl AsRef<str>]) -> Option<f64> {
        quality_of(task, facts_cited(task, rationale, visits))
    }

    fn seen_fact_coverage(task: &Task, rationale: &str, seen: &[impl AsRef<str>]) -> Option<f64> {
        coverage_of(task, facts_cited(task, rationale, seen))
    }

    fn graph(urls: &[&str], start: &str) -> Graph {
        let urls: Vec<String> = urls.iter().map(ToString::to_string).collect();
        let content = ContentPages::of(urls.iter().map(String::as_str).chain([start]));
        Graph::from_urls(&urls, start, Domain::Forum, &content)
    }

    fn visits(urls: &[&str]) -> Vec<String> {
        urls.iter().map(|u| normalise(u)).collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn acc_inv_counts_credited_nodes_once() {
        let g = graph(&["/forum/a", "/forum/b", "/forum/b/", "/forum/c"], "/forum/a");
        assert_eq!(g.len(), 3, "duplicates after normalisation collapse");
        assert_eq!(g.acc_inv(&visits(&["/forum/a", "/forum/a", "/ep/x/forum/b?q=1"])), Some(2.0 / 3.0));
        assert_eq!(graph(&[], "/forum/a").acc_inv(&visits(&["/forum/a"])), None);
    }

    #[test]
    fn e_inv_is_one_for_the_ideal_order() {
        let g = graph(&["/forum/a", "/forum/b", "/forum/c"], "/forum/a");
        let e = g.e_inv(&visits(&["/forum/a", "/forum/b", "/forum/c"])).expect("graph");
        assert!(close(e, 1.0), "{e}");
    }

    #[test]
    fn e_inv_discounts_late_visits_and_ignores_repeats() {
        let g = graph(&["/forum/a", "/forum/b", "/forum/c"], "/forum/a");
        let ideal = 0.5 + 1.0 * GAMMA + GAMMA * GAMMA;
        // b at t=3 and c at t=4, with a repeat and an off-graph page before.
        let late = g.e_inv(&visits(&["/forum/a", "/forum/x", "/forum/a", "/forum/b", "/forum/c"])).expect("graph");
        assert!(close(late, (0.5 + GAMMA.powi(3) + GAMMA.powi(4)) / ideal), "{late}");
        let repeated = g.e_inv(&visits(&["/forum/a", "/forum/b", "/forum/b", "/forum/b"])).expect("graph");
        assert!(close(repeated, (0.5 + GAMMA) / ideal), "{repeated}");
    }

    #[test]
    fn e_inv_stops_at_the_step_cap() {
        let g = graph(&["/forum/a", "/forum/b"], "/forum/a");
        let mut v = vec!["/forum/a"; STEP_CAP];
        v.push("/forum/b");
        assert_eq!(g.e_inv(&visits(&v)), Some(0.5 / (0.5 + GAMMA)));
        let mut v = vec!["/forum/a"; STEP_CAP - 1];
        v.push("/forum/b");
        let e = g.e_inv(&visits(&v)).expect("graph");
        assert!(close(e, (0.5 + GAMMA.powi(24)) / (0.5 + GAMMA)), "{e}");
    }

    #[test]
    fn e_inv_without_a_start_node_is_one_for_the_ideal_order() {
        // Step 0 is the start page, which credits nothing: the ideal's first credit is at
        // step 1, so the best possible trajectory scores exactly 1.
        let g = graph(&["/forum/b", "/forum/c"], "/forum/a");
        let e = g.e_inv(&visits(&["/forum/a", "/forum/b", "/forum/c"])).expect("graph");
        assert!(close(e, 1.0), "{e}");
        let late = g.e_inv(&visits(&["/forum/a", "/forum/x", "/forum/b", "/forum/c"])).expect("graph");
        assert!(close(late, (GAMMA.powi(2) + GAMMA.powi(3)) / (GAMMA + GAMMA.powi(2))), "{late}");
    }

    #[test]
    fn jackknife_leaves_each_node_out() {
        let g = graph(&["/forum/a", "/forum/b", "/forum/c", "/forum/d"], "/forum/a");
        let j = g.acc_inv_jackknife(&visits(&["/forum/a", "/forum/b"]));
        assert_eq!(j, vec![1.0 / 3.0, 1.0 / 3.0, 2.0 / 3.0, 2.0 / 3.0]);
        assert!(graph(&["/forum/a"], "/forum/a").acc_inv_jackknife(&visits(&["/forum/a"])).is_empty());
    }

    fn task() -> Task {
        let mut t = crate::corpus::generate::corpus().into_iter().find(|t| t.domain == Domain::Shop).expect("shop");
        t.verdict.optimal = "DENY".into();
        t.verdict.acceptable = [("ESCALATE".to_string(), 0.8), ("FLAG_AND_MONITOR".to_string(), 0.8)].into();
        t.verdict.harmful = vec!["APPROVE".into()];
        t
    }

    #[test]
    fn acc_dec_tiers() {
        let t = task();
        let s = |v: &str| acc_dec(&t, Some(v)).0;
        assert_eq!(s("DENY"), DecisionScore { default: 1.0, strict: 1.0, loose: 1.0 });
        assert_eq!(s("deny "), DecisionScore { default: 1.0, strict: 1.0, loose: 1.0 }, "case and space");
        assert_eq!(s("Escalate"), DecisionScore { default: 0.8, strict: 0.0, loose: 1.0 });
        assert_eq!(s("APPROVE"), DecisionScore { default: 0.0, strict: 0.0, loose: 0.0 });
        assert_eq!(s("CANCEL_ORDER"), DecisionScore { default: 0.0, strict: 0.0, loose: 0.0 });
        let (none, unknown) = acc_dec(&t, None);
        assert_eq!((none.default, unknown), (0.0, None));
        let (bad, unknown) = acc_dec(&t, Some("REFUND_TWICE"));
        assert_eq!((bad.default, unknown.as_deref()), (0.0, Some("REFUND_TWICE")));
    }

    #[test]
    fn loose_is_the_symmetrised_family_and_default_follows_the_table() {
        let mut wiki = crate::corpus::generate::corpus().into_iter().find(|t| t.domain == Domain::Wiki).expect("wiki");
        wiki.verdict.optimal = "ESCALATE".into();
        wiki.verdict.acceptable.clear();
        wiki.verdict.harmful = vec!["APPROVE".into()];
        let s = |t: &Task, v: &str| acc_dec(t, Some(v)).0;
        // FLAG substitutes for REVERT and ESCALATE for FLAG, not the other way round…
        assert_eq!(s(&wiki, "FLAG"), DecisionScore { default: 0.0, strict: 0.0, loose: 1.0 });
        assert_eq!(s(&wiki, "REVERT"), DecisionScore { default: 0.0, strict: 0.0, loose: 0.0 }, "not one step");
        wiki.verdict.optimal = "REVERT".into();
        wiki.verdict.acceptable = [("FLAG".to_string(), 0.8)].into();
        assert_eq!(s(&wiki, "FLAG"), DecisionScore { default: 0.8, strict: 0.0, loose: 1.0 });
        assert_eq!(s(&wiki, "ESCALATE").loose, 0.0, "the chain is not transitive");
        // …a harmful verdict earns nothing in any tier, even when it is in the family.
        wiki.verdict.harmful = vec!["FLAG".into()];
        assert_eq!(s(&wiki, "FLAG"), DecisionScore { default: 0.0, strict: 0.0, loose: 0.0 });
        assert!(
            Domain::Forum.same_family("LOCK_WARN", "lock_report") && Domain::Forum.same_family("NO_ACTION", "APPROVE")
        );
        let hub: Vec<&str> = ["APPROVE", "DENY", "ESCALATE", "REQUEST_EVIDENCE", "BAN_ACCOUNT", "CANCEL_ORDER"]
            .into_iter()
            .filter(|o| Domain::Shop.substitutes(o).contains(&"FLAG_AND_MONITOR"))
            .collect();
        assert_eq!(hub, ["DENY", "BAN_ACCOUNT", "CANCEL_ORDER"], "FLAG_AND_MONITOR is the shop's hub");
        assert!(Domain::Shop.substitutes("APPROVE").is_empty());
    }

    #[test]
    fn evidence_quality_needs_the_fact_cited_and_its_page_seen() {
        let mut t = task();
        t.gold_facts = vec![
            crate::corpus::model::GoldFact { text: "14 orders".into(), url: "/shop/a/".into() },
            crate::corpus::model::GoldFact { text: "chargeback".into(), url: "/shop/b".into() },
        ];
        let seen = visits(&["/shop/a", "/shop/b"]);
        assert_eq!(evidence_quality(&t, "14 orders and a Chargeback", &seen), Some(5.0));
        assert_eq!(evidence_quality(&t, "14 orders", &seen), Some(3.0));
        assert_eq!(evidence_quality(&t, "14 orders and a chargeback", &visits(&["/shop/a"])), Some(3.0), "b unseen");
        assert_eq!(evidence_quality(&t, "nothing", &seen), Some(1.0));
        t.gold_facts.clear();
        assert_eq!(evidence_quality(&t, "x", &seen), None);
    }

    #[test]
    fn coverage_counts_gold_facts_seen_on_visited_pages() {
        let mut t = task();
        t.gold_facts = vec![
            crate::corpus::model::GoldFact { text: "14 orders".into(), url: "/x".into() },
            crate::corpus::model::GoldFact { text: "Chargeback".into(), url: "/y".into() },
        ];
        let both = visits(&["/x", "/y"]);
        assert_eq!(seen_fact_coverage(&t, "She placed 14 ORDERS last month.", &both), Some(0.5));
        assert_eq!(seen_fact_coverage(&t, "14 orders, a chargeback", &visits(&["/x"])), Some(0.5), "/y unseen");
        assert_eq!(seen_fact_coverage(&t, "14 orders, a chargeback", &[] as &[&str]), Some(0.0), "pasted, never seen");
        t.gold_facts.clear();
        assert_eq!(seen_fact_coverage(&t, "x", &both), None);
    }

    #[test]
    fn compiled_gold_facts_count_as_the_task_does_and_offer_only_non_blank_searchers() {
        let mut t = task();
        t.gold_facts = vec![
            crate::corpus::model::GoldFact { text: "14 ORDERS".into(), url: "/x/".into() },
            crate::corpus::model::GoldFact { text: "  ".into(), url: "/y".into() },
            crate::corpus::model::GoldFact { text: "Straße".into(), url: "/y".into() },
        ];
        let facts = GoldFacts::of(&t);
        for (text, pages) in [
            ("she placed 14 orders; STRASSE", visits(&["/x", "/y"])),
            ("14 Orders in the straße", visits(&["/x", "/y"])),
            ("14 orders in the straße", visits(&["/y"])),
            ("", visits(&["/x"])),
        ] {
            let by_hand = t
                .gold_facts
                .iter()
                .filter(|f| pages.contains(&normalise(&f.url)) && text.to_lowercase().contains(&f.text.to_lowercase()))
                .count();
            assert_eq!(facts.cited(text, &pages), by_hand, "{text:?} on {pages:?}");
            assert_eq!(facts_cited(&t, text, &pages), by_hand);
        }
        let searched: Vec<&[u8]> = facts.searchers().iter().map(|f| f.needle()).collect();
        assert_eq!(searched, [&b"14 orders"[..], "straße".as_bytes()], "lowercased, the blank fact left out");
    }
}
