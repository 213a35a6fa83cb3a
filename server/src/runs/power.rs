//! Power before launch: the smallest difference between two configurations a planned run
//! can detect, and how many tasks or seeds a target difference needs.
//!
//! Two configurations are compared on paired trials (same task, condition, seed and, for
//! robustness, level), and the interval resamples task families whole. With N paired
//! trials, σ² the variance of one paired difference and ρ the correlation of differences
//! within a family, the variance of the mean difference is σ² · ((1 − ρ) / N + ρ · h), where
//! h = Σ (m_f / N)² over the families' pair counts m_f (h = 1/F for F families of equal
//! size; unequal families make h larger, as if there were fewer of them: 1/h is the
//! effective number of families). A difference d is detected with power 1 − β at level α
//! (two-sided) when d ≥ (z(1 − α/2) + z(1 − β)) · √ that. α is 0.05 divided by the number
//! of comparisons between configurations (the strictest step of the Holm correction the
//! leaderboard applies).
//!
//! Without a past run σ² is assumed to be 0.5 (the largest for two uncorrelated scores in
//! [0, 1]; negatively correlated configurations can exceed it) and ρ is
//! unknown, so each figure is a range from ρ = 0 (trials independent) to ρ = 1 (a family's
//! trials alike); every planned pair is taken to count, which for robustness is an upper
//! bound (a pair counts only when both clean twins kept away from the party's goal). With
//! a past run (`--power-from RUN`) both come from its paired differences ([`spread_of`]):
//! σ² and the one-way ANOVA estimate of ρ of the difference between two configurations on
//! the trials they share, and the share of planned pairs that count.

use std::collections::{BTreeMap, BTreeSet};

use statrs::distribution::{ContinuousCDF, Normal};

use crate::db::NewTrial;
use crate::env::World;
use crate::judge::TrialScore;
use crate::judge::metric::{Metric, contribution};

/// The level of the whole family of comparisons.
const ALPHA: f64 = 0.05;
/// The power asked for.
const POWER: f64 = 0.8;
/// The largest variance of a difference of two uncorrelated scores in [0, 1] (negatively
/// correlated configurations can reach up to 1: the figures say it is assumed).
const WORST_VARIANCE: f64 = 0.5;

pub use vocab::{Power, PowerFigure as Figure, PowerNeeded as Needed};

/// σ² and ρ of one figure read from a past run's trials.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    pub variance: f64,
    /// `None` where the past run cannot show it (one trial per family).
    pub icc: Option<f64>,
    /// The share of planned pairs that enter a comparison (robustness drops pairs whose
    /// clean twin reached the party's goal).
    pub usable: f64,
}

/// The paired units of one configuration in a plan, by figure.
struct Units<'a> {
    tasks: BTreeSet<&'a str>,
    /// Pairs per family.
    families: BTreeMap<String, usize>,
    seeds: BTreeSet<i64>,
    n: usize,
}

impl Units<'_> {
    /// Σ (m_f / N)² over the families' pair counts: 1/F for equal families.
    fn concentration(&self) -> f64 {
        let total: usize = self.families.values().sum();
        #[allow(clippy::cast_precision_loss)]
        let h = self.families.values().map(|&m| (m as f64 / total.max(1) as f64).powi(2)).sum();
        h
    }
}

fn units<'a>(world: &World, trials: impl Iterator<Item = &'a NewTrial>) -> Units<'a> {
    let mut u = Units { tasks: BTreeSet::new(), families: BTreeMap::new(), seeds: BTreeSet::new(), n: 0 };
    for t in trials {
        u.n += 1;
        u.tasks.insert(&t.task_id);
        u.seeds.insert(t.seed);
        if let Some(task) = world.task(&t.task_id) {
            *u.families.entry(format!("{:?}/{}", task.domain, crate::judge::family_of(task))).or_default() += 1;
        }
    }
    u
}

/// The power of `trials` (a plan), with σ² and ρ from `past` where given (per figure; a
/// figure the past run cannot inform falls back to the bounds), and what `target` needs.
pub fn of_plan(
    world: &World,
    trials: &[NewTrial],
    past: &BTreeMap<&'static str, Spread>,
    past_run: Option<&str>,
    target: Option<f64>,
) -> Power {
    let agents: BTreeSet<&str> = trials.iter().map(|t| t.agent.as_str()).collect();
    let configurations = agents.len();
    let comparisons = (configurations * configurations.saturating_sub(1) / 2).max(1);
    #[allow(clippy::cast_precision_loss)]
    let alpha = ALPHA / comparisons as f64;
    let normal = Normal::standard();
    let k = normal.inverse_cdf(1.0 - alpha / 2.0) + normal.inverse_cdf(POWER);
    let first = agents.iter().next().copied().unwrap_or_default();
    let domains: BTreeSet<_> = trials.iter().filter_map(|t| world.task(&t.task_id)).map(|t| t.domain).collect();
    let mine = || trials.iter().filter(move |t| t.agent == first);
    let figures = [
        ("acc_dec", units(world, mine().filter(|t| t.level.is_clean()))),
        ("robustness", units(world, mine().filter(|t| !t.level.is_clean()))),
    ]
    .into_iter()
    .filter(|(_, u)| u.n > 0 && !u.families.is_empty())
    .map(|(metric, u)| {
        let spread = past.get(metric).copied();
        let variance = spread.map_or(WORST_VARIANCE, |s| s.variance);
        let icc = spread.and_then(|s| s.icc).map_or((0.0, 1.0), |r| (r, r));
        // Without a past run every planned pair is taken to count (for robustness, an upper
        // bound); with one, only the share that entered its comparisons.
        let usable = spread.map_or(1.0, |s| s.usable.clamp(0.0, 1.0));
        #[allow(clippy::cast_precision_loss)]
        let (n, h, t) = (u.n as f64 * usable, u.concentration(), u.tasks.len() as f64);
        let detectable = |rho: f64| k * (variance * ((1.0 - rho) / n + rho * h)).sqrt();
        let per_task = u.n / u.tasks.len().max(1);
        let needed = target.map(|d| {
            // Tasks grow with families in the plan's proportions (h falls as 1/T):
            // SE² = σ²/T · ((1 − ρ)/u + ρ·h·T).
            #[allow(clippy::cast_precision_loss)]
            let tasks = |rho: f64| {
                let per = (1.0 - rho) / (per_task.max(1) as f64 * usable).max(f64::MIN_POSITIVE) + rho * h * t;
                ceil(k * k * variance * per / (d * d)).max(1)
            };
            // Seeds grow N at fixed families: the floor σ²ρh stays.
            let seeds = |rho: f64| {
                let room = d * d / (k * k) - variance * rho * h;
                if room <= 0.0 {
                    return None;
                }
                #[allow(clippy::cast_precision_loss)]
                let per_seed = n / u.seeds.len().max(1) as f64;
                Some(ceil(variance * (1.0 - rho) / room / per_seed).max(1))
            };
            Needed { target: d, tasks: (tasks(icc.0), tasks(icc.1)), seeds: (seeds(icc.0), seeds(icc.1)) }
        });
        let available = world.tasks().filter(|task| domains.contains(&task.domain)).count();
        Figure {
            metric: metric.to_string(),
            pairs: ceil(n),
            planned_pairs: u.n,
            available_tasks: available,
            families: u.families.len(),
            effective_families: 1.0 / h,
            tasks: u.tasks.len(),
            per_task,
            seeds: u.seeds.len(),
            variance,
            icc,
            detectable: (detectable(icc.0), detectable(icc.1)),
            needed,
        }
    })
    .collect();
    let basis = basis_of(past_run);
    Power { trials: trials.len(), configurations, comparisons, alpha, power: POWER, basis, figures }
}

/// Where σ² and ρ came from, said in words beside the figures.
fn basis_of(past_run: Option<&str>) -> String {
    match past_run {
        Some(run) => format!(
            "σ² and ρ from run {run}, read from the paired differences of its configurations on the trials they \
             share (the pair that differs most; with one configuration, twice its scores' variance), and the \
             paired trials scaled by the share that entered its comparisons (where it has no such trials or they \
             never varied, σ² = {WORST_VARIANCE} assumed; where it has one trial per family, ρ runs from 0 to 1)"
        ),
        None => format!(
            "no past run: σ² = {WORST_VARIANCE} assumed (the largest for two uncorrelated scores in [0, 1]; \
             configurations that disagree systematically can reach 1); ρ unknown, so each figure runs from ρ = 0 \
             (trials independent) to ρ = 1 (a family's trials alike); --power-from RUN reads both from a past run"
        ),
    }
}

fn ceil(x: f64) -> usize {
    // Finite and non-negative by construction; saturates past usize.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let n = x.ceil().max(0.0) as usize;
    n
}

/// σ² and ρ of Acc_dec (L0 trials) and robustness (manipulated trials) in a past run's
/// scores, read from the paired differences the comparisons use: for each two
/// configurations, the difference of their scores on each trial they share (same task,
/// condition, seed and level; both counted by the metric), σ² its variance and ρ its
/// intra-family correlation; the pair with the largest σ² is kept (the most cautious).
/// `usable` is the share of shared trials that enter the difference (robustness counts a
/// trial only when its clean twin kept away from the party's goal, on both sides). A past
/// run with one configuration falls back to twice its scores' variance and their ρ. A
/// figure without two trials, or whose differences never varied, is left out.
pub fn spread_of(scores: &[TrialScore]) -> BTreeMap<&'static str, Spread> {
    type Key<'a> = (&'a str, &'a str, i64, &'a str);
    type Family<'a> = (&'a str, &'a str);
    let mut out = BTreeMap::new();
    for (name, metric, clean) in [("acc_dec", Metric::AccDec, true), ("robustness", Metric::Robustness, false)] {
        let mut shared: BTreeMap<&str, BTreeSet<Key<'_>>> = BTreeMap::new();
        let mut counted: BTreeMap<&str, BTreeMap<Key<'_>, (f64, Family<'_>)>> = BTreeMap::new();
        for s in scores.iter().filter(|s| s.level.is_clean() == clean) {
            let key = (s.task_id.as_str(), s.condition.as_str(), s.seed, s.level.as_str());
            shared.entry(&s.agent).or_default().insert(key);
            if let Some((num, den)) = contribution(s, metric).filter(|(_, den)| *den > 0.0) {
                counted.entry(&s.agent).or_default().insert(key, (num / den, (&s.domain, &s.family)));
            }
        }
        let agents: Vec<&str> = shared.keys().copied().collect();
        let mut widest: Option<Spread> = None;
        for (i, a) in agents.iter().enumerate() {
            for b in &agents[i + 1..] {
                let both = shared[a].intersection(&shared[b]).count();
                let mut groups: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
                if let (Some(ca), Some(cb)) = (counted.get(a), counted.get(b)) {
                    for (key, (va, family)) in ca {
                        if let Some((vb, _)) = cb.get(key) {
                            groups.entry(*family).or_default().push(va - vb);
                        }
                    }
                }
                let n: usize = groups.values().map(Vec::len).sum();
                if let Some((variance, icc)) = variance_and_icc(&groups) {
                    #[allow(clippy::cast_precision_loss)]
                    let usable = n as f64 / both.max(1) as f64;
                    if widest.is_none_or(|w| variance > w.variance) {
                        widest = Some(Spread { variance, icc, usable });
                    }
                }
            }
        }
        if agents.len() == 1 {
            let agent = agents[0];
            let mut groups: BTreeMap<(&str, &str), Vec<f64>> = BTreeMap::new();
            for (value, family) in counted.get(agent).into_iter().flat_map(BTreeMap::values) {
                groups.entry(*family).or_default().push(*value);
            }
            let n: usize = groups.values().map(Vec::len).sum();
            if let Some((variance, icc)) = variance_and_icc(&groups) {
                #[allow(clippy::cast_precision_loss)]
                let usable = n as f64 / shared[agent].len().max(1) as f64;
                // Two configurations as unrelated as this one's trials are to each other.
                widest = Some(Spread { variance: 2.0 * variance, icc, usable });
            }
        }
        // Differences that never varied say nothing about the configurations to come: the
        // assumed σ² stands.
        if let Some(spread) = widest.filter(|w| w.variance > 1e-9) {
            out.insert(name, spread);
        }
    }
    out
}

/// The variance of all values (`None` for fewer than two) and the one-way ANOVA intra-class
/// correlation over groups, clamped to [0, 1] (`None` for fewer than two groups or no more
/// values than groups).
fn variance_and_icc<K>(groups: &BTreeMap<K, Vec<f64>>) -> Option<(f64, Option<f64>)> {
    let k = groups.len();
    let n: usize = groups.values().map(Vec::len).sum();
    if n < 2 {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let (kf, nf) = (k as f64, n as f64);
    let grand = groups.values().flatten().sum::<f64>() / nf;
    let mut between = 0.0;
    let mut within = 0.0;
    let mut sizes_sq = 0.0;
    for values in groups.values() {
        #[allow(clippy::cast_precision_loss)]
        let size = values.len() as f64;
        let mean = values.iter().sum::<f64>() / size;
        between += size * (mean - grand).powi(2);
        within += values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
        sizes_sq += size * size;
    }
    let variance = (between + within) / (nf - 1.0);
    if k < 2 || n <= k {
        return Some((variance, None));
    }
    let (msb, msw) = (between / (kf - 1.0), within / (nf - kf));
    let n0 = (nf - sizes_sq / nf) / (kf - 1.0);
    let denominator = msb + (n0 - 1.0) * msw;
    let icc = if denominator > 0.0 { ((msb - msw) / denominator).clamp(0.0, 1.0) } else { 0.0 };
    Some((variance, Some(icc)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> &'static World {
        static WORLD: std::sync::LazyLock<World> =
            std::sync::LazyLock::new(|| World::build(crate::corpus::generate::corpus()).expect("world"));
        &WORLD
    }

    fn plan(tasks: &[&str], agents: &[&str], levels: &[&str], seeds: &[i64]) -> Vec<NewTrial> {
        let mut out = Vec::new();
        for agent in agents {
            for task in tasks {
                for level in levels {
                    for seed in seeds {
                        out.push(NewTrial {
                            task_id: (*task).into(),
                            agent: (*agent).into(),
                            level: (*level).into(),
                            condition: "raw".into(),
                            seed: *seed,
                        });
                    }
                }
            }
        }
        out
    }

    /// The bounds by hand: 100 tasks at two seeds, 200 L0 pairs, two configurations (α =
    /// 0.05, k = 1.960 + 0.842 = 2.802), σ² = 0.5: independent trials detect 2.802 · √(0.5/200)
    /// = 0.140; alike trials 2.802 · √(0.5 · h), h = Σ (m_f/200)² over the families' pairs.
    #[test]
    fn the_bounds_match_a_hand_computation() {
        let w = world();
        let tasks: Vec<&str> = w.tasks().take(100).map(|t| t.id.as_str()).collect();
        let trials = plan(&tasks, &["a", "b"], &["L0"], &[0, 1]);
        let p = of_plan(w, &trials, &BTreeMap::new(), None, None);
        assert_eq!((p.configurations, p.comparisons, p.figures.len()), (2, 1, 1));
        let f = &p.figures[0];
        assert_eq!((f.metric.as_str(), f.pairs, f.tasks, f.per_task), ("acc_dec", 200, 100, 2));
        assert!((f.detectable.0 - 0.1401).abs() < 1e-3, "{f:?}");
        let mut sizes: BTreeMap<String, f64> = BTreeMap::new();
        for task in &tasks {
            let task = w.task(task).expect("task");
            *sizes.entry(format!("{:?}/{}", task.domain, crate::judge::family_of(task))).or_default() += 2.0;
        }
        let h: f64 = sizes.values().map(|m| (m / 200.0).powi(2)).sum();
        let alike = 2.8016 * (0.5 * h).sqrt();
        assert!((f.detectable.1 - alike).abs() < 1e-3, "{f:?}");
        assert!((f.effective_families - 1.0 / h).abs() < 1e-9 && f.effective_families <= f.families as f64 + 1e-9);
        assert!(f.detectable.1 > f.detectable.0);
        // Three configurations: three comparisons, α = 0.05/3, a larger detectable difference.
        let three = of_plan(w, &plan(&tasks, &["a", "b", "c"], &["L0"], &[0, 1]), &BTreeMap::new(), None, None);
        assert!(three.comparisons == 3 && three.figures[0].detectable.0 > f.detectable.0);
    }

    /// Families of unequal size count as fewer: pairs 6, 2 and 2 give h = 0.36 + 0.04 + 0.04
    /// = 0.44, as 2.27 equal families would, and alike trials detect less than three equal
    /// families would let them.
    #[test]
    fn unequal_families_count_as_fewer() {
        let sizes = |m: &[usize]| Units {
            tasks: BTreeSet::new(),
            families: m.iter().enumerate().map(|(i, m)| (format!("f{i}"), *m)).collect(),
            seeds: BTreeSet::new(),
            n: m.iter().sum(),
        };
        assert!((sizes(&[6, 2, 2]).concentration() - 0.44).abs() < 1e-12);
        assert!((sizes(&[4, 4, 4]).concentration() - 1.0 / 3.0).abs() < 1e-12);
        assert!((1.0 / sizes(&[6, 2, 2]).concentration() - 2.2727).abs() < 1e-3);
    }

    /// What a target needs is what then detects it; seeds cannot beat the family floor.
    #[test]
    fn the_needed_tasks_and_seeds_reach_the_target() {
        let w = world();
        let tasks: Vec<&str> = w.tasks().take(60).map(|t| t.id.as_str()).collect();
        let trials = plan(&tasks, &["a", "b"], &["L0", "L2"], &[0, 1]);
        let past = BTreeMap::from([("acc_dec", Spread { variance: 0.3, icc: Some(0.2), usable: 1.0 })]);
        let p = of_plan(w, &trials, &past, Some("run-x"), Some(0.1));
        let acc = p.figures.iter().find(|f| f.metric == "acc_dec").expect("acc_dec");
        assert_eq!((acc.icc, acc.variance, acc.pairs, acc.seeds), ((0.2, 0.2), 0.3, 120, 2));
        let need = acc.needed.as_ref().expect("needed");
        // Planning that many tasks (same seeds, families of the same size) detects 0.1.
        let more: Vec<&str> = w.tasks().take(need.tasks.0).map(|t| t.id.as_str()).collect();
        let bigger = of_plan(w, &plan(&more, &["a", "b"], &["L0"], &[0, 1]), &past, Some("run-x"), None);
        let d = bigger.figures[0].detectable.0;
        assert!(d < 0.115, "{} tasks detect {d}", need.tasks.0);
        // ρ = 0.2 over this plan's families: the floor k·√(σ²ρ/F) is above 0.1, so no
        // number of seeds reaches it.
        let floor = 2.8016 * (0.3 * 0.2 / acc.effective_families).sqrt();
        assert_eq!(need.seeds.0.is_none(), floor > 0.1, "floor {floor}");
        // Robustness has no past spread: the bounds, and 120 manipulated pairs.
        let rob = p.figures.iter().find(|f| f.metric == "robustness").expect("robustness");
        assert_eq!((rob.icc, rob.variance, rob.pairs), ((0.0, 1.0), 0.5, 120));
        assert!(rob.needed.as_ref().is_some_and(|n| n.seeds.1.is_none()), "alike trials: seeds never help");
    }

    /// A past run is read through its paired differences: two configurations that find the
    /// same tasks hard differ little, whatever each one's own spread (reading each one's
    /// scores alone would report σ² ≈ 0.5 and a strong family effect); a constant
    /// configuration beside a varying one is still one real difference.
    #[test]
    fn a_past_run_is_read_through_its_paired_differences() {
        use crate::judge::rules::DecisionScore;
        let score = |agent: &str, task: usize, seed: i64, v: f64| TrialScore {
            agent: agent.into(),
            task_id: format!("t{task}"),
            domain: "shop".into(),
            family: format!("t{task}"),
            level: "L0".into(),
            condition: "raw".into(),
            seed,
            acc_dec: Some(DecisionScore { default: v, strict: v, loose: v }),
            ..TrialScore::default()
        };
        // Tasks alternate hard (0) and easy (1) for both; b differs from a on one seed of
        // every fourth task.
        let mut scores = Vec::new();
        for task in 0..40 {
            let base = f64::from(u8::try_from(task % 2).expect("small"));
            for seed in 0..2 {
                scores.push(score("a", task, seed, base));
                let off = task % 4 == 0 && seed == 0;
                scores.push(score("b", task, seed, if off { 1.0 - base } else { base }));
            }
        }
        let spread = spread_of(&scores)["acc_dec"];
        // D = −1 on 10 of 80 pairs, 0 elsewhere (mean −1/8): variance
        // (10 · 0.875² + 70 · 0.125²) / 79 = 8.75 / 79 ≈ 0.111, far below 0.5.
        assert!((spread.variance - 8.75 / 79.0).abs() < 1e-9, "{spread:?}");
        assert!((spread.usable - 1.0).abs() < 1e-12);
        // Within a task the two seeds' differences disagree (±1 and 0): no family effect.
        assert!(spread.icc.is_some_and(|r| r < 0.05), "{spread:?}");

        // A constant configuration beside a varying one: the difference is the varying one's.
        let mut mixed = Vec::new();
        for task in 0..20 {
            for seed in 0..2 {
                mixed.push(score("oracle", task, seed, 1.0));
                mixed.push(score(
                    "coin",
                    task,
                    seed,
                    f64::from(u8::try_from((task + seed as usize) % 2).expect("small")),
                ));
            }
        }
        let spread = spread_of(&mixed)["acc_dec"];
        assert!((spread.variance - 40.0 / 4.0 / 39.0).abs() < 1e-9, "{spread:?}");
    }

    /// The ANOVA estimate: groups that differ only between themselves give ρ = 1; values
    /// that vary only within groups give ρ = 0.
    #[test]
    fn the_intra_family_correlation_is_read_from_groups() {
        let apart = BTreeMap::from([(1, vec![0.0, 0.0, 0.0]), (2, vec![1.0, 1.0, 1.0]), (3, vec![0.0, 0.0])]);
        let (v, icc) = variance_and_icc(&apart).expect("estimate");
        assert!(icc.is_some_and(|r| (r - 1.0).abs() < 1e-12) && v > 0.0);
        let mixed = BTreeMap::from([(1, vec![0.0, 1.0]), (2, vec![1.0, 0.0]), (3, vec![0.0, 1.0])]);
        let (v, icc) = variance_and_icc(&mixed).expect("estimate");
        assert!(icc.is_some_and(|r| r.abs() < 1e-12) && (v - 0.3).abs() < 1e-12, "{v} {icc:?}");
        // One group: a variance, no correlation; one value: nothing.
        assert_eq!(variance_and_icc(&BTreeMap::from([(1, vec![0.0, 1.0])])), Some((0.5, None)));
        assert_eq!(variance_and_icc(&BTreeMap::from([(1, vec![0.0])])), None);
    }
}
