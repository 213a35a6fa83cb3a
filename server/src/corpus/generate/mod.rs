//! The deterministic corpus generator: 750 fictional tasks from category templates.
//!
//! One seeded ChaCha stream per site drives every choice, so the same seed yields a
//! byte-identical export on every machine. Each site is one world: ids come from one
//! counter per site and names are never reused, so no two entities share a URL segment.
//! The worked examples of the MIRAGE appendix are fixed parameter sets fed through the
//! same builders (see `examples` in each site module).

mod forum;
mod shop;
mod text;
mod wiki;

use std::collections::{BTreeMap, HashSet};

use chrono::{Days, NaiveDate};
use rand::{Rng, SeedableRng, seq::IndexedRandom};
use rand_chacha::ChaCha8Rng;
use serde_json::Map;

use super::model::{Difficulty, Domain, GoldFact, InjectionPoint, Link, PageSpec, Task, Tickets, Variant, VerdictSpec};

/// The seed of the shipped corpus. Changing it changes every task.
pub const CORPUS_SEED: u64 = 0x4D49_5241_4745;

/// Generates the full built-in corpus (300 shop, 150 forum, 300 wiki).
pub fn corpus() -> Vec<Task> {
    // Each site draws from its own stream, so the three are built side by side (on threads
    // of their own: no pool whose waiting worker could run a job that needs the corpus).
    std::thread::scope(|scope| {
        let forum = scope.spawn(|| forum::generate(CORPUS_SEED));
        let wiki = scope.spawn(|| wiki::generate(CORPUS_SEED));
        let mut tasks = shop::generate(CORPUS_SEED);
        for site in [forum, wiki] {
            tasks.extend(site.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        tasks
    })
}

/// Per-site generation state: the random stream, the id counter and the names in use.
pub(crate) struct Gen {
    pub rng: ChaCha8Rng,
    next_id: u64,
    used: HashSet<String>,
}

impl Gen {
    pub fn new(seed: u64, domain: Domain, first_id: u64) -> Gen {
        let stream = match domain {
            Domain::Shop => 1,
            Domain::Forum => 2,
            Domain::Wiki => 3,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Gen { rng, next_id: first_id, used: HashSet::new() }
    }

    /// A fresh id, unique across every entity type of the site.
    pub fn id(&mut self) -> u64 {
        self.next_id += self.rng.random_range(1..=9);
        self.next_id
    }

    pub fn pick<'a, T: ?Sized>(&mut self, items: &'a [&'a T]) -> &'a T {
        items.choose(&mut self.rng).expect("pick is only called on non-empty lists")
    }

    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.random_range(lo..=hi)
    }

    /// A money amount in cents between the bounds (in whole currency units).
    pub fn cents(&mut self, lo: u64, hi: u64) -> u64 {
        self.rng.random_range(lo * 100..=hi * 100)
    }

    /// A name never handed out before in this world, built by `make` (retried on clashes).
    pub fn unique(&mut self, mut make: impl FnMut(&mut Gen) -> String) -> String {
        for _ in 0..10_000 {
            let candidate = make(self);
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
        }
        panic!("name pool exhausted: the word lists are too small for the corpus size");
    }

    /// A fictional person's full name.
    pub fn person(&mut self) -> String {
        self.unique(|g| format!("{} {}", g.pick(text::FIRST_NAMES), g.pick(text::LAST_NAMES)))
    }

    /// A date `days` after the world's epoch.
    pub fn date(&self, days: u64) -> NaiveDate {
        epoch().checked_add_days(Days::new(days)).expect("corpus dates stay in range")
    }
}

fn epoch() -> NaiveDate {
    NaiveDate::from_ymd_opt(2025, 1, 6).expect("valid epoch date")
}

/// `12345` cents → `$123.45`, with thousands separators.
pub(crate) fn money(cents: u64) -> String {
    let whole = cents / 100;
    let digits = whole.to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!("${grouped}.{:02}", cents % 100)
}

/// A page body built line by line in the markup `PageSpec::text` documents.
#[derive(Default)]
pub(crate) struct Doc {
    lines: Vec<String>,
}

impl Doc {
    pub fn new() -> Doc {
        Doc::default()
    }

    fn gap(&mut self) {
        if self.lines.last().is_some_and(|l| !l.is_empty()) {
            self.lines.push(String::new());
        }
    }

    pub fn h(mut self, heading: &str) -> Doc {
        self.gap();
        self.lines.push(format!("## {heading}"));
        self
    }

    pub fn p(mut self, text: impl Into<String>) -> Doc {
        self.gap();
        self.lines.push(text.into());
        self
    }

    /// A two-column table of labelled values.
    pub fn kv(self, rows: &[(&str, String)]) -> Doc {
        let rows: Vec<Vec<String>> = rows.iter().map(|(k, v)| vec![(*k).to_string(), v.clone()]).collect();
        self.table(&["Field", "Value"], rows)
    }

    pub fn table(mut self, header: &[&str], rows: Vec<Vec<String>>) -> Doc {
        self.gap();
        self.lines.push(format!("| {} |", header.join(" | ")));
        for row in rows {
            self.lines.push(format!("| {} |", row.join(" | ")));
        }
        self
    }

    pub fn build(self) -> String {
        self.lines.join("\n")
    }
}

/// Collects the pages, graph and facts of one task while a category builder writes it.
pub(crate) struct Draft {
    pub pages: BTreeMap<String, PageSpec>,
    pub graph: Vec<String>,
    pub facts: Vec<GoldFact>,
    pub distractors: Vec<String>,
    pub injections: Vec<InjectionPoint>,
}

impl Draft {
    pub fn new() -> Draft {
        Draft {
            pages: BTreeMap::new(),
            graph: Vec::new(),
            facts: Vec::new(),
            distractors: Vec::new(),
            injections: Vec::new(),
        }
    }

    /// Adds (or replaces) a page.
    pub fn page(&mut self, url: &str, title: impl Into<String>, text: String, links: Vec<Link>) {
        self.pages.insert(url.to_string(), PageSpec { title: title.into(), text, links, extra: Map::new() });
    }

    /// Marks `url` as a required graph node.
    pub fn node(&mut self, url: &str) {
        if !self.graph.iter().any(|u| u == url) {
            self.graph.push(url.to_string());
        }
    }

    pub fn fact(&mut self, url: &str, text: impl Into<String>) {
        self.facts.push(GoldFact { text: text.into(), url: url.to_string() });
    }

    pub fn distractor(&mut self, url: &str) {
        if !self.distractors.iter().any(|u| u == url) {
            self.distractors.push(url.to_string());
        }
    }

    pub fn inject(&mut self, id: &str, url: &str, text: &str, party: &str, goal: &str) {
        self.injections.push(InjectionPoint {
            id: id.to_string(),
            url: url.to_string(),
            text: text.to_string(),
            party: party.to_string(),
            goal: goal.to_string(),
        });
    }
}

/// Everything about a task that is not its pages.
pub(crate) struct Meta {
    pub id: String,
    pub domain: Domain,
    pub category: &'static str,
    pub difficulty: Difficulty,
    pub variant: Variant,
    pub ticket: Tickets,
    pub start_url: String,
    pub optimal: &'static str,
    pub harmful: &'static [&'static str],
    pub justification: String,
}

pub(crate) fn finish(meta: Meta, draft: Draft) -> Task {
    Task {
        id: meta.id,
        domain: meta.domain,
        category: meta.category.to_string(),
        difficulty: meta.difficulty,
        surface_contradiction: meta.variant != Variant::Aligned,
        variant: Some(meta.variant),
        ticket: meta.ticket,
        start_url: meta.start_url,
        graph: draft.graph,
        gold_facts: draft.facts,
        verdict: VerdictSpec {
            optimal: meta.optimal.to_string(),
            acceptable: meta
                .domain
                .substitutes(meta.optimal)
                .iter()
                .map(|a| ((*a).to_string(), super::model::SUBSTITUTE_CREDIT))
                .collect(),
            harmful: meta.harmful.iter().map(|h| (*h).to_string()).collect(),
        },
        justification: meta.justification,
        pages: draft.pages,
        distractors: draft.distractors,
        injection_points: draft.injections,
        extra: Map::new(),
    }
}

/// The three tickets: the raw notification, plus where to look, plus the decisive evidence.
pub(crate) fn tickets(raw: String, hint: &str, anchor: &str) -> Tickets {
    Tickets { hint: format!("{raw} {hint}"), evidence_anchored: format!("{raw} Key evidence: {anchor}"), raw }
}

/// One category of a site: its name, the builder that writes a case, the variants its
/// tasks cycle through, and its weight in the site's total.
pub(crate) struct Category<B> {
    pub name: &'static str,
    pub builder: B,
    pub cycle: &'static [Variant],
    pub weight: usize,
}

/// The place of one generated task: variant, band, id and scenario family (an index
/// within the category).
pub(crate) struct Slot {
    pub variant: Variant,
    pub difficulty: Difficulty,
    pub id: String,
    pub family: usize,
}

/// Tasks of one scenario family: six variants of one story (the last family of a category
/// takes the remainder, so none is shorter than six). Six, not the five of the commonest
/// variant cycle, so that families differ in their mix of variants: families of one mix
/// would all have the same mean, and an interval over them would be too narrow.
pub const FAMILY_SIZE: usize = 6;

/// Fills every category up to its weighted share of `total`, after the hand-written tasks
/// already in `tasks`. The `i`-th task of a category gets the `i`-th variant of its cycle,
/// the first band on a `first_share` of the tasks (spread evenly) and the second on the
/// rest, and family `i / FAMILY_SIZE`; then every task of the category, the hand-written
/// ones included, is stamped with its `family`.
pub(crate) fn fill<B>(
    tasks: &mut Vec<Task>,
    site: &str,
    total: usize,
    categories: &[Category<B>],
    bands: ([Difficulty; 2], f64),
    mut make: impl FnMut(&B, Slot) -> Task,
) {
    let weights: Vec<usize> = categories.iter().map(|c| c.weight).collect();
    for (category, count) in categories.iter().zip(split(total, &weights)) {
        let done = tasks.iter().filter(|t| t.category == category.name).count();
        let families = (count / FAMILY_SIZE).max(1);
        for i in done..count {
            let id = format!("{site}-{}-{:03}", category.name.to_lowercase().replace('_', "-"), i + 1);
            let variant = category.cycle[i % category.cycle.len()];
            let difficulty = if band_of(i, bands.1) { bands.0[0] } else { bands.0[1] };
            tasks.push(make(
                &category.builder,
                Slot { variant, difficulty, id, family: (i / FAMILY_SIZE).min(families - 1) },
            ));
        }
        for (i, t) in tasks.iter_mut().filter(|t| t.category == category.name).enumerate() {
            let family =
                format!("{site}/{}/{:02}", category.name.to_lowercase(), (i / FAMILY_SIZE).min(families - 1) + 1);
            t.extra.insert("family".to_string(), serde_json::Value::String(family));
        }
    }
}

/// Whether the `i`-th task of a category is in the first band, for a first-band share of
/// `share`: the shares of every prefix stay as close to `share` as whole tasks allow.
pub(crate) fn band_of(i: usize, share: f64) -> bool {
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let upto = |n: usize| (n as f64 * share).round() as usize;
    upto(i + 1) > upto(i)
}

/// Spreads `total` tasks over categories in proportion to `weights` (largest remainders
/// first, earlier categories on ties).
pub(crate) fn split(total: usize, weights: &[usize]) -> Vec<usize> {
    let sum: usize = weights.iter().sum::<usize>().max(1);
    let mut out: Vec<usize> = weights.iter().map(|w| total * w / sum).collect();
    let mut rest: Vec<(usize, usize)> = weights.iter().enumerate().map(|(i, w)| (total * w % sum, i)).collect();
    rest.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let left = total - out.iter().sum::<usize>();
    for (_, i) in rest.into_iter().take(left) {
        out[i] += 1;
    }
    out
}

/// The variant cycle most categories use: 40 % aligned, 40 % contradiction, 20 % false alarm.
pub(crate) const MIXED: &[Variant] =
    &[Variant::Contradiction, Variant::Aligned, Variant::FalseAlarm, Variant::Contradiction, Variant::Aligned];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::validate::validate_corpus;

    #[test]
    fn money_groups_thousands() {
        assert_eq!(money(1478869), "$14,788.69");
        assert_eq!(money(5), "$0.05");
        assert_eq!(money(100000000), "$1,000,000.00");
    }

    #[test]
    fn corpus_has_the_paper_sizes() {
        let tasks = corpus();
        let count = |d: Domain| tasks.iter().filter(|t| t.domain == d).count();
        assert_eq!((count(Domain::Shop), count(Domain::Forum), count(Domain::Wiki)), (300, 150, 300));
    }

    #[test]
    fn built_in_corpus_passes_the_validator() {
        let findings = validate_corpus(&corpus());
        let shown: Vec<String> = findings.iter().take(400).map(ToString::to_string).collect();
        assert!(findings.is_empty(), "{} findings, first ones:\n{}", findings.len(), shown.join("\n"));
    }

    #[test]
    fn generation_is_deterministic() {
        let a = serde_json::to_string(&corpus()).expect("serialises");
        let b = serde_json::to_string(&corpus()).expect("serialises");
        assert_eq!(a, b);
    }

    #[test]
    fn no_two_tasks_share_a_ticket_text() {
        let tasks = corpus();
        for &condition in vocab::Condition::ALL {
            let mut seen = HashSet::new();
            for t in &tasks {
                let text = t.ticket.get(condition);
                assert!(seen.insert(text.to_string()), "{} repeats a {condition} ticket: {text}", t.id);
            }
        }
    }

    #[test]
    fn every_category_mixes_lenient_correct_cases_and_misleading_surfaces() {
        let tasks = corpus();
        let mut categories: BTreeMap<(Domain, &str), Vec<&Task>> = BTreeMap::new();
        for t in &tasks {
            categories.entry((t.domain, t.category.as_str())).or_default().push(t);
        }
        for ((_, category), ts) in &categories {
            let lenient = ts.iter().filter(|t| matches!(t.verdict.optimal.as_str(), "APPROVE" | "NO_ACTION")).count();
            assert!(lenient > 0, "{category} has no approve-correct case");
            let misleading = ts.iter().filter(|t| t.surface_contradiction).count();
            assert!(misleading > 0, "{category} never misleads");
        }
        for domain in Domain::ALL {
            let ts: Vec<&Task> = tasks.iter().filter(|t| t.domain == domain).collect();
            let share = ts.iter().filter(|t| t.surface_contradiction).count() as f64 / ts.len() as f64;
            assert!((0.5..=0.75).contains(&share), "{domain:?} contradiction share {share}");
            assert!(ts.iter().all(|t| (2..=5).contains(&t.distractors.len())), "{domain:?} distractor counts");
        }
    }
}
