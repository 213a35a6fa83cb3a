//! A stored GEO run's results: every finished trial's target result from its stored
//! orders, and per (ranker, method) the equal-dataset summaries with 95 % intervals over
//! lists, per dataset, paired comparisons of the methods under each ranker (t tests, Holm
//! over the family, tie bands on NRG) and Spearman's ρ between rankers over the methods'
//! mean NRG.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

pub use super::Weighting;
use super::data::List;
use super::methods::Method;
use super::plan::GeoSpec;
pub use super::results::{Tally, results};
use super::{Scored, Summary, summarise, summarise_weighted};
use crate::db::Store;
use crate::stats::{Obs, Weight, holm, paired_weighted, spearman, tie_groups};
use vocab::RunId;

/// One (ranker, method) row: its summary and its tie band among the ranker's methods.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Row {
    pub ranker: String,
    pub method: String,
    #[serde(flatten)]
    pub summary: Summary,
    /// 1 = the top band of NRG under this ranker (methods in one band do not differ
    /// significantly, Holm-adjusted); 0 outside a declared `--family` (no adjusted p).
    pub band: usize,
    /// For TAP: how its searches went.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap: Option<TapStats>,
    /// Targets the row lacks (marked ‡, "n of N"): trials that ended in error or are
    /// unfinished (the report's incomplete list names the datasets left out), or targets
    /// the widest row under the same ranker has and this one was never planned on (an
    /// imported variant with texts for a few targets).
    #[serde(default)]
    pub incomplete: usize,
    /// How a row narrower than the widest under its ranker falls short, in words
    /// (`3 of 28 targets, 1 of 2 datasets, 1 of 7 lists`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub narrower: Option<String>,
}

/// How a TAP variant's searches went (see [`vocab::GeoTapStats`]).
pub use vocab::GeoTapStats as TapStats;

fn tap_stats(scored: &[Scored]) -> Option<TapStats> {
    let searches: Vec<(super::Search, f64)> = scored.iter().filter_map(|s| Some((s.search?, s.result.r_a))).collect();
    if searches.is_empty() {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let share = |k: usize, n: usize| k as f64 / n as f64;
    let reached: Vec<f64> = searches.iter().filter(|s| s.0.reached).map(|s| s.1).collect();
    Some(TapStats {
        searched: searches.len(),
        nodes: share(searches.iter().map(|s| s.0.nodes).sum(), searches.len()),
        calls: searches.iter().map(|s| s.0.calls).sum(),
        failed_calls: searches.iter().map(|s| s.0.failed_calls).sum(),
        failed_searches: searches.iter().filter(|s| s.0.failed_calls > 0).count(),
        dead_searches: searches.iter().filter(|s| s.0.calls > 0 && s.0.failed_calls == s.0.calls).count(),
        reached: share(reached.len(), searches.len()),
        still_first: (!reached.is_empty()).then(|| share(reached.iter().filter(|r| **r <= 1.0).count(), reached.len())),
    })
}

/// A (ranker, method, dataset) row.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DatasetRow {
    pub ranker: String,
    pub method: String,
    pub dataset: String,
    #[serde(flatten)]
    pub summary: Summary,
    /// Trials of this dataset in error or unfinished (marked ‡).
    #[serde(default)]
    pub incomplete: usize,
}

/// A paired comparison of two methods' NRG under one ranker, over shared targets; p (Holm)
/// adjusted within its ranker's family, `None` for a pair outside the family.
pub use vocab::GeoPair as Pair;

/// Spearman's ρ between two rankers' method means (NRG), or between two datasets' under
/// one ranker (`ranker` set).
pub use vocab::GeoRho as Rho;

/// ρ between two columns of method means over the methods both have.
fn rho_between(
    ranker: Option<&str>,
    a: &str,
    b: &str,
    methods: &[&String],
    mean: impl Fn(&str, &str) -> Option<f64>,
) -> Rho {
    let shared: Vec<(f64, f64)> = methods.iter().filter_map(|m| Some((mean(a, m)?, mean(b, m)?))).collect();
    let (xa, xb): (Vec<f64>, Vec<f64>) = shared.iter().copied().unzip();
    Rho {
        ranker: ranker.map(str::to_string),
        a: a.to_string(),
        b: b.to_string(),
        rho: spearman(&xa, &xb),
        methods: shared.len(),
        paired: Vec::new(),
    }
}

/// ρ between two rankers over the methods both ran. A TAP text is searched on each ranker,
/// so where the run re-ranked one ranker's TAP texts under the other (`tap>A` under B), the
/// two columns pair `tap` under A with `tap>A` under B: both then rank the same texts.
fn rho_rankers(a: &str, b: &str, methods: &[&String], mean: impl Fn(&str, &str) -> Option<f64>) -> Rho {
    let mut shared = Vec::new();
    let mut paired = Vec::new();
    for m in methods {
        // A transfer row from one of the two rankers is counted through its TAP row.
        if matches!(Method::parse(m), Ok(Method::Transfer(_)))
            && m.rsplit_once('>')
                .is_some_and(|(searched, r)| (r == a || r == b) && methods.iter().any(|x| x.as_str() == searched))
        {
            continue;
        }
        let from = |src: &str, dst: &str| {
            let moved = format!("{m}>{src}");
            Some(((mean(src, m)?, mean(dst, &moved)?), format!("{m}@{src} ~ {moved}@{dst}")))
        };
        let transfers: Vec<((f64, f64), String)> = if Method::parse(m).is_ok_and(|x| x == Method::Tap) {
            let ab = from(a, b);
            let ba = from(b, a).map(|((y, x), label)| ((x, y), label));
            ab.into_iter().chain(ba).collect()
        } else {
            Vec::new()
        };
        if transfers.is_empty() {
            shared.extend(mean(a, m).zip(mean(b, m)));
        }
        for (pair, label) in transfers {
            shared.push(pair);
            paired.push(label);
        }
    }
    let (xa, xb): (Vec<f64>, Vec<f64>) = shared.iter().copied().unzip();
    Rho { ranker: None, a: a.to_string(), b: b.to_string(), rho: spearman(&xa, &xb), methods: shared.len(), paired }
}

/// The whole report of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub run: String,
    pub prompt_version: String,
    pub k: usize,
    pub trials: usize,
    pub errors: usize,
    pub unfinished: usize,
    pub rows: Vec<Row>,
    pub datasets: Vec<DatasetRow>,
    pub pairs: Vec<Pair>,
    pub spearman: Vec<Rho>,
    /// Spearman's ρ between datasets under each ranker, over the methods' NRG.
    #[serde(default)]
    pub spearman_datasets: Vec<Rho>,
    /// Orders, and trials, in which a ranker call failed after its retries (each counted as
    /// a reply naming nothing: the target missing there, the trial kept in every mean).
    #[serde(default)]
    pub failed_orders: usize,
    #[serde(default)]
    pub failed_trials: usize,
    /// Variants with trials in no mean (failed or unfinished; all of them: no scored target): listed so that
    /// no row disappears without a word.
    #[serde(default)]
    #[serde(alias = "empty")]
    pub incomplete: Vec<Incomplete>,
    /// The run's reading of replies, the other reading compared with it (strict against
    /// the run's; fixed when the run reads strictly), and how many numbered reply lines the
    /// two attribute to different names.
    #[serde(default)]
    pub parser: String,
    #[serde(default)]
    pub compared_parser: String,
    #[serde(default)]
    pub lines_read_differently: usize,
    #[serde(default)]
    pub lines: usize,
    /// Replies read, and those in which the compared reading gives the target another rank
    /// (replies without numbered lines included).
    #[serde(default)]
    pub replies: usize,
    #[serde(default)]
    pub target_read_differently: usize,
    /// The methods declared with `--family`: Holm's family under each ranker and the
    /// methods Spearman's ρ is taken over. Empty (the default): Holm over every pair of
    /// methods under each ranker, and ρ over every method but the baselines.
    #[serde(default)]
    pub family: Vec<String>,
    /// The methods ρ was taken over.
    #[serde(default)]
    pub rho_methods: Vec<String>,
    /// The lists (with any adopted originals) differ from those the run was planned on:
    /// its replies ranked other originals than the ones its figures now read.
    #[serde(default)]
    pub lists_changed: bool,
    /// Stored texts of the run's methods made from another original than the list's now
    /// (adopted since): their PPL-R is left out, and a new run writes them again.
    #[serde(default)]
    pub stale_texts: usize,
    /// Datasets of the run holding a single list: their lists cannot be resampled, so every
    /// interval leaves out their spread and no paired test is possible (p is 1).
    #[serde(default)]
    pub single_list_datasets: Vec<String>,
    /// How the rows and pairs weight targets (per-dataset rows are per dataset either way).
    #[serde(default)]
    pub weighting: Weighting,
}

/// The baselines left out of the default family: the offline writers, which anchor the
/// scale (no edit, a crude stuffing, a deletion) and would make any two rankers look alike.
pub const BASELINES: [&str; 3] = super::writers::WRITERS;

/// A (ranker, method) with trials in no mean (ended in error or unfinished), and why.
pub use vocab::GeoIncomplete as Incomplete;

/// The report of a stored run, over the default family.
pub async fn report(store: &dyn Store, lists: &[List], run_id: &RunId) -> anyhow::Result<Report> {
    report_with(store, lists, run_id, &[], Weighting::Dataset).await
}

/// The report of a stored run with Holm's families and Spearman's ρ over `family` (empty:
/// every method but the [`BASELINES`]); a declared method the run lacks is an error.
pub async fn report_with(
    store: &dyn Store,
    lists: &[List],
    run_id: &RunId,
    family: &[String],
    weighting: Weighting,
) -> anyhow::Result<Report> {
    let (geo, results, tally) = results(store, lists, run_id).await?;
    let methods: BTreeSet<&String> = results.keys().map(|(_, m)| m).collect();
    if let Some(m) = family.iter().find(|m| !methods.contains(m)) {
        anyhow::bail!(
            "--family: {m:?} is not a method of run {run_id} ({})",
            methods.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
        );
    }
    let (holm_family, rho_methods): (Vec<String>, Vec<String>) = if family.is_empty() {
        let all: Vec<String> = methods.iter().map(|m| (*m).clone()).collect();
        let rho = all.iter().filter(|m| !BASELINES.contains(&m.as_str())).cloned().collect();
        (all, rho)
    } else {
        (family.to_vec(), family.to_vec())
    };
    let declared = family.to_vec();
    // The summaries are CPU work: on a blocking thread, off the async workers.
    let run_id = run_id.clone();
    tokio::task::spawn_blocking(move || {
        let sets = (holm_family.as_slice(), rho_methods.as_slice());
        let mut r = summarise_run(&run_id, &geo, &results, &tally, sets, weighting)?;
        r.family = declared;
        r.weighting = weighting;
        Ok(r)
    })
    .await?
}

/// The report of a run's scored targets (see [`report`]).
fn summarise_run(
    run_id: &RunId,
    geo: &GeoSpec,
    results: &BTreeMap<(String, String), Vec<Scored>>,
    tally: &Tally,
    (family, rho_methods): (&[String], &[String]),
    weighting: Weighting,
) -> anyhow::Result<Report> {
    // Weighting by target pools the datasets into one mean; lists are still resampled
    // within their dataset (a stratified interval either way).
    let weight = if weighting == Weighting::Target { Weight::Pooled } else { Weight::Domain };
    let (mut rows, datasets) = variant_rows(results, tally, &geo.datasets, weight);
    let rankers: BTreeSet<&String> = results.keys().map(|(r, _)| r).collect();
    let mut pairs = paired_comparisons(results, tally, &rankers, weight);
    holm_and_bands(&mut pairs, &mut rows, &rankers, family);
    // Spearman between rankers, and between datasets under each ranker, over the family's
    // methods both ran.
    let mut methods: Vec<&String> = rows.iter().map(|r| &r.method).filter(|m| rho_methods.contains(m)).collect();
    methods.sort();
    methods.dedup();
    let rankers: Vec<&String> = rankers.into_iter().collect();
    let mut rhos = Vec::new();
    for (i, a) in rankers.iter().enumerate() {
        for b in &rankers[i + 1..] {
            rhos.push(rho_rankers(a, b, &methods, |r, m| {
                rows.iter().find(|row| row.ranker == r && row.method == m).map(|row| row.summary.nrg.mean)
            }));
        }
    }
    let mut by_dataset = Vec::new();
    for ranker in &rankers {
        for (i, a) in geo.datasets.iter().enumerate() {
            for b in &geo.datasets[i + 1..] {
                by_dataset.push(rho_between(Some(ranker), a, b, &methods, |d, m| {
                    datasets
                        .iter()
                        .find(|x| &x.ranker == *ranker && x.dataset == d && x.method == m)
                        .map(|x| x.summary.nrg.mean)
                }));
            }
        }
    }
    Ok(Report {
        single_list_datasets: super::single_list_datasets(results.values().flatten()),
        run: run_id.to_string(),
        prompt_version: geo.protocol.prompt.version.clone(),
        k: geo.protocol.k,
        trials: tally.trials,
        errors: tally.errors,
        unfinished: tally.unfinished,
        failed_orders: rows.iter().map(|r| r.summary.failed_orders).sum(),
        failed_trials: rows.iter().map(|r| r.summary.failed_targets).sum(),
        incomplete: tally.incomplete(),
        parser: geo.protocol.parser.name(),
        compared_parser: geo.protocol.parser.compared().name(),
        lines_read_differently: tally.readings.lines_differ,
        lines: tally.readings.lines,
        replies: tally.readings.replies,
        target_read_differently: tally.readings.target_differs,
        lists_changed: tally.lists_changed,
        stale_texts: tally.stale_texts,
        family: Vec::new(),
        rho_methods: methods.iter().map(|m| (*m).clone()).collect(),
        weighting,
        rows,
        datasets,
        pairs,
        spearman: rhos,
        spearman_datasets: by_dataset,
    })
}

/// Each (ranker, method)'s summary over all its targets, and per dataset, with how many of
/// its trials are in no mean.
fn variant_rows(
    results: &BTreeMap<(String, String), Vec<Scored>>,
    tally: &Tally,
    datasets_of_run: &[String],
    weight: Weight,
) -> (Vec<Row>, Vec<DatasetRow>) {
    let mut rows = Vec::new();
    let mut datasets = Vec::new();
    for ((ranker, method), scored) in results {
        let Some(summary) = summarise_weighted(scored, weight) else { continue };
        let incomplete = tally.by_variant.get(&(ranker.clone(), method.clone())).map_or(0, |v| v.errors + v.unfinished);
        let tap = tap_stats(scored);
        let row =
            Row { ranker: ranker.clone(), method: method.clone(), summary, band: 0, tap, incomplete, narrower: None };
        rows.push(row);
        for dataset in datasets_of_run {
            let mine: Vec<Scored> = scored.iter().filter(|s| &s.dataset == dataset).cloned().collect();
            if let Some(summary) = summarise(&mine) {
                let counts = tally.by_dataset.get(&(ranker.clone(), method.clone())).and_then(|d| d.get(dataset));
                let incomplete = counts.map_or(0, |(trials, scored)| trials - scored);
                let (ranker, method, dataset) = (ranker.clone(), method.clone(), dataset.clone());
                datasets.push(DatasetRow { ranker, method, dataset, summary, incomplete });
            }
        }
    }
    mark_narrower(&mut rows, &mut datasets, results);
    (rows, datasets)
}

/// Marks every row over fewer targets than the widest row under its ranker (and every
/// dataset row over fewer than the widest of its ranker and dataset): its `incomplete`
/// becomes the difference, so tables say "n of N" and ‡, and `narrower` says what it lacks.
fn mark_narrower(rows: &mut [Row], datasets: &mut [DatasetRow], results: &BTreeMap<(String, String), Vec<Scored>>) {
    let shape = |scored: &[Scored]| {
        let sets: (BTreeSet<&str>, BTreeSet<&str>) =
            (scored.iter().map(|s| s.dataset.as_str()).collect(), scored.iter().map(|s| s.list.as_str()).collect());
        (sets.0.len(), sets.1.len())
    };
    let mut widest: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for r in rows.iter() {
        let (d, l) = results.get(&(r.ranker.clone(), r.method.clone())).map_or((0, 0), |s| shape(s));
        let w = widest.entry(r.ranker.as_str()).or_default();
        *w = (w.0.max(r.summary.n + r.incomplete), w.1.max(d), w.2.max(l));
    }
    let widest: BTreeMap<String, (usize, usize, usize)> = widest.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    for r in rows.iter_mut() {
        let (n, d, l) = widest[&r.ranker];
        let (mine_d, mine_l) = results.get(&(r.ranker.clone(), r.method.clone())).map_or((0, 0), |s| shape(s));
        if r.summary.n + r.incomplete < n {
            r.incomplete = n - r.summary.n;
            r.narrower = Some(format!(
                "{} of {n} targets, {mine_d} of {d} datasets, {mine_l} of {l} lists: fewer than the widest row under {}",
                r.summary.n, r.ranker
            ));
        }
    }
    let mut widest: BTreeMap<(String, String), usize> = BTreeMap::new();
    for r in datasets.iter() {
        let w = widest.entry((r.ranker.clone(), r.dataset.clone())).or_default();
        *w = (*w).max(r.summary.n + r.incomplete);
    }
    for r in datasets.iter_mut() {
        let n = widest[&(r.ranker.clone(), r.dataset.clone())];
        r.incomplete = r.incomplete.max(n - r.summary.n);
    }
}

/// Paired comparisons of every two methods under each ranker, on the targets both scored.
fn paired_comparisons(
    results: &BTreeMap<(String, String), Vec<Scored>>,
    tally: &Tally,
    rankers: &BTreeSet<&String>,
    weight: Weight,
) -> Vec<Pair> {
    let mut pairs = Vec::new();
    for ranker in rankers {
        let methods: Vec<&String> = results.keys().filter(|(r, _)| r == *ranker).map(|(_, m)| m).collect();
        for (i, a) in methods.iter().enumerate() {
            for b in &methods[i + 1..] {
                let by_target = |m: &String| -> BTreeMap<(String, usize), (String, f64)> {
                    results[&((*ranker).clone(), m.clone())]
                        .iter()
                        .map(|s| ((s.list.clone(), s.target), (s.dataset.clone(), s.result.nrg)))
                        .collect()
                };
                let (ta, tb) = (by_target(a), by_target(b));
                let diffs: Vec<Obs<'_>> =
                    ta.iter().filter_map(|(k, (d, x))| tb.get(k).map(|(_, y)| Obs::value(d, &k.0, x - y))).collect();
                let incomplete = |m: &String| {
                    tally.by_variant.get(&((*ranker).clone(), m.clone())).is_some_and(|v| v.errors + v.unfinished > 0)
                };
                if let Some(p) = paired_weighted(&diffs, weight) {
                    pairs.push(Pair {
                        ranker: (*ranker).clone(),
                        a: (*a).clone(),
                        b: (*b).clone(),
                        diff: p.diff,
                        p: p.p,
                        p_holm: None,
                        untestable: super::single_list_datasets(
                            results[&((*ranker).clone(), (*a).clone())]
                                .iter()
                                .filter(|s| tb.contains_key(&(s.list.clone(), s.target))),
                        ),
                        partial: incomplete(a) || incomplete(b),
                    });
                }
            }
        }
    }
    pairs
}

/// Holm-adjusted p within each ranker's family, and the bands of the family's methods.
fn holm_and_bands(pairs: &mut [Pair], rows: &mut [Row], rankers: &BTreeSet<&String>, family: &[String]) {
    // Holm within each ranker's family: the pairs of the family's methods under it.
    for ranker in rankers {
        let members: Vec<usize> = (0..pairs.len())
            .filter(|&i| {
                let p = &pairs[i];
                &p.ranker == *ranker && family.contains(&p.a) && family.contains(&p.b)
            })
            .collect();
        let adjusted = holm(&members.iter().map(|&i| pairs[i].p).collect::<Vec<_>>());
        for (&i, q) in members.iter().zip(adjusted) {
            pairs[i].p_holm = Some(q);
        }
    }
    // Bands within the family only: a method outside it has no Holm-adjusted p, and counting
    // its pairs as "no difference" would chain every method into one band. Band 0 = none.
    for ranker in rankers {
        let idx: Vec<usize> =
            (0..rows.len()).filter(|&i| &rows[i].ranker == *ranker && family.contains(&rows[i].method)).collect();
        let means: Vec<f64> = idx.iter().map(|&i| rows[i].summary.nrg.mean).collect();
        let p_of = |x: usize, y: usize| {
            let (ma, mb) = (&rows[idx[x]].method, &rows[idx[y]].method);
            pairs
                .iter()
                .find(|p| &p.ranker == *ranker && ((&p.a == ma && &p.b == mb) || (&p.a == mb && &p.b == ma)))
                .and_then(|p| p.p_holm)
                .unwrap_or(1.0)
        };
        for (j, band) in tie_groups(&means, p_of, 0.05).into_iter().enumerate() {
            rows[idx[j]].band = band;
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn tap_pairs_with_the_same_texts_re_ranked_under_the_other_ranker() {
        let means = [("a", "stuff", 0.5), ("b", "stuff", 0.4), ("a", "tap", 0.9), ("b", "tap", 0.8)];
        let mut rows: Vec<(&str, &str, f64)> = means.to_vec();
        rows.extend([("b", "tap>a", 0.1), ("a", "zero_shot", 0.2), ("b", "zero_shot", 0.3)]);
        let mean = |r: &str, m: &str| rows.iter().find(|x| x.0 == r && x.1 == m).map(|x| x.2);
        let (stuff, tap, moved, zero) =
            ("stuff".to_string(), "tap".to_string(), "tap>a".to_string(), "zero_shot".into());
        let rho = super::rho_rankers("a", "b", &[&stuff, &tap, &moved, &zero], mean);
        // Pairs: stuff (0.5, 0.4), tap@a ~ tap>a@b (0.9, 0.1), zero_shot (0.2, 0.3).
        assert_eq!((rho.methods, rho.paired.as_slice()), (3, ["tap@a ~ tap>a@b".to_string()].as_slice()));
        assert_eq!(rho.rho, Some(-0.5));
        // Without the transfer row, each ranker's own TAP texts pair as before.
        let plain = super::rho_rankers("a", "b", &[&stuff, &tap, &zero], |r, m| mean(r, m).filter(|_| m != "tap>a"));
        assert_eq!((plain.methods, plain.paired.len(), plain.rho), (3, 0, Some(1.0)));
    }
}
