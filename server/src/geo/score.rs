//! `mirage geo score`: detection over a stored GEO run (docs/geo.md). Every edited text and
//! every original of the run's targets is judged once (cached); the judge's threshold is
//! calibrated on the originals at a false-positive rate — by default the keyword filter's
//! own rate on those originals — with equal weight per dataset (or pooled, or leave one
//! dataset out); the keyword-or-judge filter is calibrated to 10 %. Per (ranker, method):
//! AUROC of edits against the originals of the same targets (per dataset, then the
//! equal-dataset mean), the share flagged by each filter, the NRG and P@0.1 left when a
//! flagged edit is caught, and with a scoring endpoint the perplexity ratio of the edits.
//! The report is stored with the run, so the dashboard shows it.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use anyhow::Context;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::calibrate::{Calibrated, CalibrationMode, calibrate_mode};
use super::data::List;
use super::detect::{JudgeScore, equal_dataset_auroc};
use super::judge::JudgeMode;
use crate::db::Store;
use crate::detect::{Calibration, EndpointPerplexity, realised};
use crate::llm::HttpLlm;
use crate::stats::{Estimate, Obs, interval, rate_interval};
use vocab::RunId;

/// The either-filter's default rate on originals.
pub const EITHER_FPR: f64 = 0.10;

/// How a run is scored.
pub struct Settings<'a> {
    pub judge: &'a HttpLlm,
    pub judge_model: String,
    /// The judge's prompt (Mirage's own: [`super::judge::builtin`]).
    pub judge_prompt: super::template::Template,
    pub mode: JudgeMode,
    /// The judge's target rate on originals (`None`: the keyword filter's realised rate).
    pub fpr: Option<f64>,
    pub either_fpr: f64,
    pub calibration: CalibrationMode,
    /// A scoring endpoint for PPL-R (prompt log-probabilities).
    pub scorer: Option<EndpointPerplexity>,
}

impl Settings<'_> {
    /// The name the report is stored under: one per judge, mode, calibration, rate and scorer.
    pub fn label(&self) -> String {
        let fpr = self.fpr.map_or_else(|| "keyword".to_string(), |f| format!("{f}"));
        let scorer = self
            .scorer
            .as_ref()
            .map(|s| format!(" · scorer {} at {}", s.model, s.client.spec().base_url))
            .unwrap_or_default();
        format!(
            "{}/{} at {} {} · {} @ {fpr} · either @ {}{scorer}",
            self.judge_model,
            self.judge_prompt.version,
            self.judge.spec().base_url,
            self.mode,
            self.calibration,
            self.either_fpr
        )
    }
}

/// One (ranker, method) row of the detection report (equal-dataset means).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DetectionRow {
    pub ranker: String,
    pub method: String,
    pub n: usize,
    /// Orders ranked, those with a ranker call that failed after its retries (a reply
    /// naming nothing: the NRG columns include them), and the targets with at least one.
    #[serde(default)]
    pub orders: usize,
    #[serde(default)]
    pub failed_orders: usize,
    #[serde(default)]
    pub failed_targets: usize,
    pub auroc: Option<f64>,
    pub judge_flagged: f64,
    pub keyword_flagged: f64,
    pub either_flagged: f64,
    pub nrg: f64,
    pub nrg_after_judge: f64,
    pub nrg_after_keyword: f64,
    pub nrg_after_either: f64,
    pub promoted_and_passed_either: f64,
    /// The perplexity filter (at the judge's rate) and the NRG it leaves.
    pub ppl_flagged: f64,
    pub nrg_after_ppl: f64,
    /// PPL-R under the scoring endpoint (equal-dataset mean of ratios; `None` without one).
    pub ppl_r: Option<f64>,
    /// Each filter's effect with intervals: keyword, judge, either, perplexity (empty in
    /// reports stored before intervals were added).
    #[serde(default)]
    pub filters: Vec<FilterEffect>,
}

/// What one filter does to a (ranker, method): the share of edits it flags, the NRG left
/// when a flagged edit gains nothing, and the share of edits that reach P@0.1 and pass it;
/// each an equal-dataset mean with a 95 % interval over lists, stratified by dataset.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FilterEffect {
    /// `keyword`, `judge`, `either` (keyword or judge) or `perplexity`.
    pub filter: String,
    pub flagged: Estimate,
    pub nrg_after: Estimate,
    pub promoted_and_passed: Estimate,
}

/// The filters in report order.
pub const FILTERS: [&str; 4] = ["keyword", "judge", "either", "perplexity"];

/// The judge's (and scorer's) view of one text.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TextScore {
    pub p: f64,
    pub censored: bool,
    /// Perplexity under the scoring endpoint.
    pub ppl: Option<f64>,
}

/// The key of a text in [`Detection::scores`].
pub fn text_digest(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..8])
}

/// The detection report of a run under one setting.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Detection {
    pub run: String,
    /// The setting, as stored (see [`Settings::label`]).
    pub label: String,
    pub judge: String,
    pub mode: JudgeMode,
    /// The false-positive rate the judge was calibrated to.
    pub fpr: f64,
    /// The keyword-or-judge filter's target rate.
    pub either_fpr: f64,
    pub judge_calibration: Calibrated,
    pub either_calibration: Calibrated,
    /// The keyword filter's realised rate on the originals, per dataset.
    pub keyword_calibration: Calibration,
    /// The perplexity filter (the scorer's, else the built-in 4-gram model's), calibrated
    /// like the judge.
    pub ppl_calibration: Calibrated,
    /// Share of judged texts whose Yes or No side was not listed.
    pub censored: f64,
    pub texts: usize,
    /// Where PPL-R comes from: `endpoint:<model>`, or `None` without a scorer.
    pub ppl_source: Option<String>,
    pub rows: Vec<DetectionRow>,
    /// Variants with trials in no row (ended in error or unfinished), as in the run's report.
    #[serde(default)]
    pub incomplete: Vec<super::report::Incomplete>,
    /// As in the run's report: the lists differ from those the run was planned on, and
    /// stored texts of its methods were made from another original since.
    #[serde(default)]
    pub lists_changed: bool,
    #[serde(default)]
    pub stale_texts: usize,
    /// Every judged text's scores by [`text_digest`].
    pub scores: BTreeMap<String, TextScore>,
}

/// The equal-dataset mean of (dataset, value) pairs.
fn equal_mean(items: &[(String, f64)]) -> f64 {
    let mut by: BTreeMap<&str, (f64, f64)> = BTreeMap::new();
    for (d, v) in items {
        let e = by.entry(d.as_str()).or_default();
        e.0 += v;
        e.1 += 1.0;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = by.len().max(1) as f64;
    by.values().map(|(s, k)| s / k).sum::<f64>() / n
}

/// The texts of a run's scored targets: each edited text by (text key, list, target), and
/// each target's original once, with its dataset, by (list, target).
struct RunTexts {
    edited: HashMap<(String, String, usize), String>,
    originals: BTreeMap<(String, usize), (String, String)>,
}

type Results = BTreeMap<(String, String), Vec<super::Scored>>;

impl RunTexts {
    /// Each scored target's text is the one its trial ranked (`Scored::text_key`).
    async fn read(store: &dyn Store, lists: &[List], results: &Results) -> anyhow::Result<RunTexts> {
        let mut edited = HashMap::new();
        let mut originals = BTreeMap::new();
        let mut texts: HashMap<String, HashMap<(String, i64), String>> = HashMap::new();
        for s in results.values().flatten() {
            let key = &s.text_key;
            if !texts.contains_key(key) {
                let stored = store.geo_texts(key).await?.into_iter();
                let by_target = stored.map(|t| ((format!("{}|{}", t.dataset, t.category), t.target_idx), t.adv_text));
                texts.insert(key.clone(), by_target.collect());
            }
            let adv = texts[key]
                .get(&(s.list.clone(), i64::try_from(s.target)?))
                .with_context(|| format!("no text of {key}"))?;
            edited.insert((key.clone(), s.list.clone(), s.target), adv.clone());
            let list = lists.iter().find(|l| l.key() == s.list).context("a list of the run")?;
            let original = list.items[s.target - 1].text.clone();
            originals.insert((s.list.clone(), s.target), (s.dataset.clone(), original));
        }
        Ok(RunTexts { edited, originals })
    }

    /// Every text once (edited texts and originals).
    fn distinct(&self) -> Vec<&String> {
        let mut all: Vec<&String> = self.edited.values().chain(self.originals.values().map(|(_, t)| t)).collect();
        all.sort();
        all.dedup();
        all
    }
}

/// `measure` of each text, eight at a time; the first failure ends it, naming the text.
async fn measure_each<'a, T, F, Fut>(texts: &[&'a String], what: &str, measure: F) -> anyhow::Result<HashMap<String, T>>
where
    F: Fn(&'a String) -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let measured: Vec<(&String, anyhow::Result<T>)> = futures::stream::iter(texts.iter().copied())
        .map(|t| {
            let fut = measure(t);
            async move { (t, fut.await) }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    measured
        .into_iter()
        .map(|(text, v)| {
            Ok((text.clone(), v.with_context(|| format!("{what} {:?}", text.chars().take(60).collect::<String>()))?))
        })
        .collect()
}

/// What the filters read of each text: the judge's P(Yes), and its perplexity (the
/// scorer's, else the built-in 4-gram model's without the text's own list, so that an
/// original is not scored by a model that memorised it).
struct Readings<'a> {
    scores: HashMap<String, JudgeScore>,
    /// Under the scoring endpoint, when there is one.
    ppl: HashMap<String, f64>,
    ngram: super::detect::PplModel,
    lists: HashMap<String, &'a List>,
}

impl<'a> Readings<'a> {
    /// Every distinct text of the run judged (and scored for perplexity where there is a
    /// scoring endpoint), with the 4-gram model of the lists.
    async fn measure(
        store: &dyn Store,
        lists: &'a [List],
        distinct: &[&String],
        settings: &Settings<'_>,
    ) -> anyhow::Result<Readings<'a>> {
        let (client, model, mode) = (settings.judge, settings.judge_model.as_str(), settings.mode);
        let prompt = &settings.judge_prompt;
        let scores =
            measure_each(distinct, "judging", |t| super::judge::judge_as(mode, prompt, client, model, store, t))
                .await?;
        let ppl = match &settings.scorer {
            // Measured as the ranker reads it: whitespace no ranker sees moves no ratio.
            Some(scorer) => {
                measure_each(distinct, "perplexity of", |t| async move {
                    scorer.perplexity(&super::prompt::one_line(t)).await
                })
                .await?
            }
            None => HashMap::new(),
        };
        Ok(Readings {
            scores,
            ppl,
            ngram: super::detect::PplModel::new(lists),
            lists: lists.iter().map(|l| (l.key(), l)).collect(),
        })
    }

    fn p(&self, text: &str) -> f64 {
        self.scores[text].p
    }

    fn perplexity(&self, text: &str, list: &str) -> anyhow::Result<f64> {
        match self.ppl.get(text) {
            Some(v) => Ok(*v),
            None => {
                let list = self.lists.get(list).with_context(|| format!("list {list} is not loaded"))?;
                Ok(self.ngram.perplexity(text, list))
            }
        }
    }

    /// PPL-R under the scoring endpoint.
    fn endpoint_ratio(&self, adv: &str, orig: &str) -> Option<f64> {
        let (a, o) = (self.ppl.get(adv)?, self.ppl.get(orig)?);
        (a.is_finite() && o.is_finite() && *o > 0.0).then(|| a / o)
    }
}

/// The judge, keyword-or-judge and perplexity filters as calibrated on the originals.
struct Filters {
    judge: Calibrated,
    either: Calibrated,
    ppl: Calibrated,
}

/// Judges every text of a run, reports detection and stores the report with the run.
pub async fn score(
    store: &dyn Store,
    lists: &[List],
    run: &RunId,
    settings: &Settings<'_>,
) -> anyhow::Result<Detection> {
    let (_, results, tally) = super::report::results(store, lists, run).await?;
    let texts = RunTexts::read(store, lists, &results).await?;
    let (model, mode) = (settings.judge_model.as_str(), settings.mode);
    let prompt = &settings.judge_prompt;
    let readings = Readings::measure(store, lists, &texts.distinct(), settings).await?;
    let originals = &texts.originals;
    let keyword_rate = equal_mean(
        &originals.values().map(|(d, t)| (d.clone(), f64::from(u8::from(super::kvr(t))))).collect::<Vec<_>>(),
    );
    let fpr = settings.fpr.unwrap_or(keyword_rate);
    let items: Vec<(String, bool, f64)> =
        originals.values().map(|(d, t)| (d.clone(), super::kvr(t), readings.p(t))).collect();
    // The perplexity filter is held to the judge's rate.
    let ppl_items: Vec<(String, bool, f64)> = originals
        .iter()
        .map(|((list, _), (d, t))| Ok((d.clone(), false, readings.perplexity(t, list)?)))
        .collect::<anyhow::Result<_>>()?;
    let filters = Filters {
        judge: calibrate_mode(settings.calibration, "judge", &items, fpr, false)?,
        either: calibrate_mode(settings.calibration, "keyword+judge", &items, settings.either_fpr, true)?,
        ppl: calibrate_mode(settings.calibration, "perplexity", &ppl_items, fpr, false)?,
    };
    let keyword_cal = realised("keyword", &items.iter().map(|(d, k, _)| (d.clone(), *k)).collect::<Vec<_>>());
    let rows = results
        .iter()
        .map(|((ranker, method), scored)| {
            detection_row(
                ranker,
                method,
                scored,
                |s| &texts.edited[&(s.text_key.clone(), s.list.clone(), s.target)],
                &texts,
                &readings,
                &filters,
            )
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let scores = &readings.scores;
    #[allow(clippy::cast_precision_loss)]
    let censored = scores.values().filter(|s| s.censored).count() as f64 / scores.len().max(1) as f64;
    let detection = Detection {
        run: run.to_string(),
        label: settings.label(),
        judge: format!("{model}/{}", prompt.version),
        mode,
        fpr,
        either_fpr: settings.either_fpr,
        judge_calibration: filters.judge,
        either_calibration: filters.either,
        keyword_calibration: keyword_cal,
        ppl_calibration: filters.ppl,
        censored,
        texts: scores.len(),
        ppl_source: settings.scorer.as_ref().map(|s| format!("endpoint:{}", s.model)),
        rows,
        incomplete: tally.incomplete(),
        lists_changed: tally.lists_changed,
        stale_texts: tally.stale_texts,
        scores: scores
            .iter()
            .map(|(t, s)| {
                (text_digest(t), TextScore { p: s.p, censored: s.censored, ppl: readings.ppl.get(t).copied() })
            })
            .collect(),
    };
    store.put_geo_detection(run, &detection.label, &serde_json::to_string(&detection)?).await?;
    Ok(detection)
}

/// One (ranker, method)'s detection row: per target, what each filter flags and the NRG it
/// leaves, as equal-dataset means and with list-cluster intervals.
fn detection_row<'t>(
    ranker: &str,
    method: &str,
    scored: &[super::Scored],
    edited: impl Fn(&super::Scored) -> &'t String,
    texts: &RunTexts,
    readings: &Readings<'_>,
    filters: &Filters,
) -> anyhow::Result<DetectionRow> {
    let mut cols: [Vec<(String, f64)>; 10] = Default::default();
    let mut auc = Vec::new();
    let mut ratios = Vec::new();
    // Per filter: (flagged, NRG kept, promoted and passed) per target.
    let mut effects: [[Vec<Obs<'_>>; 3]; 4] = Default::default();
    let flag = |b: bool| f64::from(u8::from(b));
    for s in scored {
        let adv = edited(s);
        let orig = &texts.originals[&(s.list.clone(), s.target)].1;
        let (keyword, p) = (super::kvr(adv), readings.p(adv));
        let judge = filters.judge.flags(&s.dataset, keyword, p);
        let either = filters.either.flags(&s.dataset, keyword, p);
        let unnatural = filters.ppl.flags(&s.dataset, false, readings.perplexity(adv, &s.list)?);
        if let Some(r) = readings.endpoint_ratio(adv, orig) {
            ratios.push((s.dataset.clone(), r));
        }
        let nrg = s.result.nrg;
        let kept = |flagged: bool| if flagged { 0.0 } else { nrg };
        let values = [
            flag(judge),
            flag(keyword),
            flag(either),
            nrg,
            kept(judge),
            kept(keyword),
            kept(either),
            flag(s.result.p_at_0_1 && !either),
            flag(unnatural),
            kept(unnatural),
        ];
        for (c, v) in cols.iter_mut().zip(values) {
            c.push((s.dataset.clone(), v));
        }
        for (e, flagged) in effects.iter_mut().zip([keyword, judge, either, unnatural]) {
            let obs = |v: f64| Obs::value(&s.dataset, &s.list, v);
            e[0].push(obs(flag(flagged)));
            e[1].push(obs(kept(flagged)));
            e[2].push(obs(flag(s.result.p_at_0_1 && !flagged)));
        }
        auc.push((s.dataset.clone(), p, true));
        auc.push((s.dataset.clone(), readings.p(orig), false));
    }
    let m = |i: usize| equal_mean(&cols[i]);
    Ok(DetectionRow {
        ranker: ranker.to_string(),
        method: method.to_string(),
        n: scored.len(),
        orders: scored.iter().map(|s| s.result.ranks_a.len()).sum(),
        failed_orders: scored.iter().map(|s| s.failed_orders).sum(),
        failed_targets: scored.iter().filter(|s| s.failed_orders > 0).count(),
        auroc: equal_dataset_auroc(&auc),
        judge_flagged: m(0),
        keyword_flagged: m(1),
        either_flagged: m(2),
        nrg: m(3),
        nrg_after_judge: m(4),
        nrg_after_keyword: m(5),
        nrg_after_either: m(6),
        promoted_and_passed_either: m(7),
        ppl_flagged: m(8),
        nrg_after_ppl: m(9),
        ppl_r: (!ratios.is_empty()).then(|| equal_mean(&ratios)),
        filters: filter_effects(&effects),
    })
}

/// Each filter's effect with its interval, from its per-target (flagged, NRG kept,
/// promoted and passed) observations, in the order of [`FILTERS`].
fn filter_effects(effects: &[[Vec<Obs<'_>>; 3]; 4]) -> Vec<FilterEffect> {
    FILTERS
        .iter()
        .zip(effects)
        .filter_map(|(name, [flagged, kept, passed])| {
            Some(FilterEffect {
                filter: (*name).to_string(),
                flagged: rate_interval(flagged)?,
                nrg_after: interval(kept)?,
                promoted_and_passed: rate_interval(passed)?,
            })
        })
        .collect()
}
