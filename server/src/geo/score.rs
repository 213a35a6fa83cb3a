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

use anyhow::Context;
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::calibrate::{Calibrated, CalibrationMode, calibrate_mode};
use super::data::List;
use super::detect::{JudgeScore, equal_dataset_auroc};
use super::judge::JudgeMode;
use super::plan::text_key;
use crate::db::Store;
use crate::detect::{Calibration, EndpointPerplexity, realised};
use crate::llm::HttpLlm;
use crate::stats::{Estimate, Obs, bootstrap};

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
        let scorer = self.scorer.as_ref().map(|s| format!(" · scorer {}", s.model)).unwrap_or_default();
        format!(
            "{}/{} {} · {} @ {fpr} · either @ {}{scorer}",
            self.judge_model, self.judge_prompt.version, self.mode, self.calibration, self.either_fpr
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
/// each an equal-dataset mean with a 95 % list-cluster bootstrap interval stratified by
/// dataset ([`RESAMPLES`] resamples, seed 0).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FilterEffect {
    /// `keyword`, `judge`, `either` (keyword or judge) or `perplexity`.
    pub filter: String,
    pub flagged: Estimate,
    pub nrg_after: Estimate,
    pub promoted_and_passed: Estimate,
}

/// Bootstrap resamples of the filters' intervals.
pub const RESAMPLES: usize = 5_000;

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

/// Judges every text of a run, reports detection and stores the report with the run.
pub async fn score(store: &dyn Store, lists: &[List], run: &str, settings: &Settings<'_>) -> anyhow::Result<Detection> {
    let (geo, results, tally) = super::report::results(store, lists, run).await?;
    // The edited text of every scored target, and the original of each target once.
    let mut edited: HashMap<(String, String, usize), String> = HashMap::new();
    let mut originals: BTreeMap<(String, usize), (String, String)> = BTreeMap::new();
    for ((ranker, method), scored) in &results {
        let key = text_key(&geo, method, ranker);
        let texts: HashMap<(String, i64), String> = store
            .geo_texts(&key)
            .await?
            .into_iter()
            .map(|t| ((format!("{}|{}", t.dataset, t.category), t.target_idx), t.adv_text))
            .collect();
        for s in scored {
            let adv =
                texts.get(&(s.list.clone(), i64::try_from(s.target)?)).with_context(|| format!("no text of {key}"))?;
            edited.insert((key.clone(), s.list.clone(), s.target), adv.clone());
            let list = lists.iter().find(|l| l.key() == s.list).context("a list of the run")?;
            originals.insert((s.list.clone(), s.target), (s.dataset.clone(), list.items[s.target - 1].text.clone()));
        }
    }
    let mut distinct: Vec<&String> = edited.values().chain(originals.values().map(|(_, t)| t)).collect();
    distinct.sort();
    distinct.dedup();
    let (client, model, mode) = (settings.judge, settings.judge_model.as_str(), settings.mode);
    let prompt = &settings.judge_prompt;
    let judged: Vec<(String, anyhow::Result<JudgeScore>)> = futures::stream::iter(distinct.iter().copied())
        .map(|t| async move { (t.clone(), super::judge::judge_as(mode, prompt, client, model, store, t).await) })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut scores: HashMap<String, JudgeScore> = HashMap::new();
    for (text, s) in judged {
        let s = s.with_context(|| format!("judging {:?}", text.chars().take(60).collect::<String>()))?;
        scores.insert(text, s);
    }
    let mut ppl: HashMap<String, f64> = HashMap::new();
    if let Some(scorer) = &settings.scorer {
        let measured: Vec<(String, anyhow::Result<f64>)> = futures::stream::iter(distinct.iter().copied())
            // Scored as the ranker reads it: whitespace no ranker sees moves no ratio.
            .map(|t| async move { (t.clone(), scorer.perplexity(&super::prompt::one_line(t)).await) })
            .buffer_unordered(8)
            .collect()
            .await;
        for (text, v) in measured {
            let v = v.with_context(|| format!("perplexity of {:?}", text.chars().take(60).collect::<String>()))?;
            ppl.insert(text, v);
        }
    }
    let ratio = |adv: &str, orig: &str| -> Option<f64> {
        let (a, o) = (ppl.get(adv)?, ppl.get(orig)?);
        (a.is_finite() && o.is_finite() && *o > 0.0).then(|| a / o)
    };
    let p = |t: &str| scores[t].p;
    let keyword_rate = equal_mean(
        &originals.values().map(|(d, t)| (d.clone(), f64::from(u8::from(super::kvr(t))))).collect::<Vec<_>>(),
    );
    let fpr = settings.fpr.unwrap_or(keyword_rate);
    let items: Vec<(String, bool, f64)> = originals.values().map(|(d, t)| (d.clone(), super::kvr(t), p(t))).collect();
    let judge_cal = calibrate_mode(settings.calibration, "judge", &items, fpr, false)?;
    let either_cal = calibrate_mode(settings.calibration, "keyword+judge", &items, settings.either_fpr, true)?;
    // The perplexity filter at the judge's rate: the scorer's perplexity, else the built-in
    // 4-gram model's without the text's own list (so an original is not scored by a model
    // that memorised it).
    let ngram = super::detect::PplModel::new(lists);
    let by_key: HashMap<String, &List> = lists.iter().map(|l| (l.key(), l)).collect();
    let perplexity = |t: &str, list: &str| -> anyhow::Result<f64> {
        match ppl.get(t) {
            Some(v) => Ok(*v),
            None => Ok(ngram.perplexity(t, by_key.get(list).with_context(|| format!("list {list} is not loaded"))?)),
        }
    };
    let ppl_items: Vec<(String, bool, f64)> = originals
        .iter()
        .map(|((list, _), (d, t))| Ok((d.clone(), false, perplexity(t, list)?)))
        .collect::<anyhow::Result<_>>()?;
    let ppl_cal = calibrate_mode(settings.calibration, "perplexity", &ppl_items, fpr, false)?;
    let keyword_cal = realised("keyword", &items.iter().map(|(d, k, _)| (d.clone(), *k)).collect::<Vec<_>>());
    let mut rows = Vec::new();
    for ((ranker, method), scored) in &results {
        let key = text_key(&geo, method, ranker);
        let mut cols: [Vec<(String, f64)>; 10] = Default::default();
        let mut auc = Vec::new();
        let mut ratios = Vec::new();
        // Per filter: (flagged, NRG kept, promoted and passed) per target.
        let mut effects: [[Vec<Obs>; 3]; 4] = Default::default();
        for s in scored {
            let adv = &edited[&(key.clone(), s.list.clone(), s.target)];
            let orig = &originals[&(s.list.clone(), s.target)].1;
            let keyword = super::kvr(adv);
            let judge = judge_cal.flags(&s.dataset, keyword, p(adv));
            let either = either_cal.flags(&s.dataset, keyword, p(adv));
            let unnatural = ppl_cal.flags(&s.dataset, false, perplexity(adv, &s.list)?);
            if let Some(r) = ratio(adv, orig) {
                ratios.push((s.dataset.clone(), r));
            }
            let nrg = s.result.nrg;
            let kept = |flag: bool| if flag { 0.0 } else { nrg };
            let values = [
                f64::from(u8::from(judge)),
                f64::from(u8::from(keyword)),
                f64::from(u8::from(either)),
                nrg,
                kept(judge),
                kept(keyword),
                kept(either),
                f64::from(u8::from(s.result.p_at_0_1 && !either)),
                f64::from(u8::from(unnatural)),
                kept(unnatural),
            ];
            for (c, v) in cols.iter_mut().zip(values) {
                c.push((s.dataset.clone(), v));
            }
            for (e, flag) in effects.iter_mut().zip([keyword, judge, either, unnatural]) {
                let obs = |v: f64| Obs::value(&s.dataset, &s.list, v);
                e[0].push(obs(f64::from(u8::from(flag))));
                e[1].push(obs(kept(flag)));
                e[2].push(obs(f64::from(u8::from(s.result.p_at_0_1 && !flag))));
            }
            auc.push((s.dataset.clone(), p(adv), true));
            auc.push((s.dataset.clone(), p(orig), false));
        }
        let m = |i: usize| equal_mean(&cols[i]);
        rows.push(DetectionRow {
            ranker: ranker.clone(),
            method: method.clone(),
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
            filters: FILTERS
                .iter()
                .zip(&effects)
                .filter_map(|(name, [flagged, kept, passed])| {
                    let b = |obs: &[Obs]| bootstrap(obs, RESAMPLES, 0);
                    Some(FilterEffect {
                        filter: (*name).to_string(),
                        flagged: b(flagged)?,
                        nrg_after: b(kept)?,
                        promoted_and_passed: b(passed)?,
                    })
                })
                .collect(),
        });
    }
    #[allow(clippy::cast_precision_loss)]
    let censored = scores.values().filter(|s| s.censored).count() as f64 / scores.len().max(1) as f64;
    let detection = Detection {
        run: run.to_string(),
        label: settings.label(),
        judge: format!("{model}/{}", prompt.version),
        mode,
        fpr,
        either_fpr: settings.either_fpr,
        judge_calibration: judge_cal,
        either_calibration: either_cal,
        keyword_calibration: keyword_cal,
        ppl_calibration: ppl_cal,
        censored,
        texts: scores.len(),
        ppl_source: settings.scorer.as_ref().map(|s| format!("endpoint:{}", s.model)),
        rows,
        incomplete: tally.incomplete(),
        scores: scores
            .iter()
            .map(|(t, s)| (text_digest(t), TextScore { p: s.p, censored: s.censored, ppl: ppl.get(t).copied() }))
            .collect(),
    };
    store.put_geo_detection(run, &detection.label, &serde_json::to_string(&detection)?).await?;
    Ok(detection)
}
