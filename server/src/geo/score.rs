//! `mirage geo score`: the judge filter over a stored GEO run (GEO.md §4.4). Every edited
//! text and every original of the run's targets is judged once (cached); the judge's
//! threshold is calibrated on the originals at a false-positive rate — by default the
//! keyword filter's own rate on those originals — with equal weight per dataset; the
//! keyword-or-judge filter is calibrated to 10 %. Per (ranker, method): AUROC of edits
//! against the originals of the same targets (per dataset, then the equal-dataset mean),
//! the share flagged by each filter, and the NRG and P@0.1 left when a flagged edit is
//! caught.

use std::collections::{BTreeMap, HashMap};

use anyhow::Context;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::data::List;
use super::detect::{JudgeScore, equal_dataset_auroc};
use super::methods::text_key;
use crate::db::Store;
use crate::detect::{Calibration, calibrate, calibrate_union};
use crate::llm::HttpLlm;

/// The either-filter's rate on originals.
pub const EITHER_FPR: f64 = 0.10;

/// One (ranker, method) row of the detection report (equal-dataset means).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DetectionRow {
    pub ranker: String,
    pub method: String,
    pub n: usize,
    pub auroc: Option<f64>,
    pub judge_flagged: f64,
    pub keyword_flagged: f64,
    pub either_flagged: f64,
    pub nrg: f64,
    pub nrg_after_judge: f64,
    pub nrg_after_keyword: f64,
    pub nrg_after_either: f64,
    pub promoted_and_passed_either: f64,
}

/// The detection report of a run under one judge.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Detection {
    pub run: String,
    pub judge: String,
    /// The false-positive rate the judge was calibrated to.
    pub fpr: f64,
    pub judge_calibration: Calibration,
    pub either_calibration: Calibration,
    /// Share of judged texts whose Yes or No side was not listed.
    pub censored: f64,
    pub texts: usize,
    pub rows: Vec<DetectionRow>,
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

/// Judges every text of a run and reports detection. `fpr`: the judge's target rate on
/// originals (`None`: the keyword filter's realised rate).
pub async fn score(
    store: &dyn Store,
    lists: &[List],
    run: &str,
    client: &HttpLlm,
    model: &str,
    fpr: Option<f64>,
) -> anyhow::Result<Detection> {
    let (_, results, _) = super::report::results(store, lists, run).await?;
    // The edited text of every scored target, and the original of each target once.
    let mut edited: HashMap<(String, String, usize), String> = HashMap::new();
    let mut originals: BTreeMap<(String, usize), (String, String)> = BTreeMap::new();
    for ((ranker, method), scored) in &results {
        let key = text_key(method, ranker);
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
    let judged: Vec<(String, anyhow::Result<JudgeScore>)> = futures::stream::iter(distinct)
        .map(|t| async move { (t.clone(), super::judge::judge(client, model, store, t).await) })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut scores: HashMap<String, JudgeScore> = HashMap::new();
    for (text, s) in judged {
        let s = s.with_context(|| format!("judging {:?}", text.chars().take(60).collect::<String>()))?;
        scores.insert(text, s);
    }
    let p = |t: &str| scores[t].p;
    let orig_scores: Vec<(String, f64)> = originals.values().map(|(d, t)| (d.clone(), p(t))).collect();
    let keyword_rate = equal_mean(
        &originals.values().map(|(d, t)| (d.clone(), f64::from(u8::from(super::kvr(t))))).collect::<Vec<_>>(),
    );
    let fpr = fpr.unwrap_or(keyword_rate);
    let judge_cal = calibrate("judge", &orig_scores, fpr);
    let either_items: Vec<(String, bool, f64)> =
        originals.values().map(|(d, t)| (d.clone(), super::kvr(t), p(t))).collect();
    let either_cal = calibrate_union(&either_items, EITHER_FPR);
    let (tau, tau_either) =
        (judge_cal.threshold.unwrap_or(f64::INFINITY), either_cal.threshold.unwrap_or(f64::INFINITY));
    let mut rows = Vec::new();
    for ((ranker, method), scored) in &results {
        let key = text_key(method, ranker);
        let mut cols: [Vec<(String, f64)>; 8] = Default::default();
        let mut auc = Vec::new();
        for s in scored {
            let adv = &edited[&(key.clone(), s.list.clone(), s.target)];
            let (judge, keyword) = (p(adv) > tau, super::kvr(adv));
            let either = keyword || p(adv) > tau_either;
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
            ];
            for (c, v) in cols.iter_mut().zip(values) {
                c.push((s.dataset.clone(), v));
            }
            auc.push((s.dataset.clone(), p(adv), true));
            auc.push((s.dataset.clone(), p(&originals[&(s.list.clone(), s.target)].1), false));
        }
        let m = |i: usize| equal_mean(&cols[i]);
        rows.push(DetectionRow {
            ranker: ranker.clone(),
            method: method.clone(),
            n: scored.len(),
            auroc: equal_dataset_auroc(&auc),
            judge_flagged: m(0),
            keyword_flagged: m(1),
            either_flagged: m(2),
            nrg: m(3),
            nrg_after_judge: m(4),
            nrg_after_keyword: m(5),
            nrg_after_either: m(6),
            promoted_and_passed_either: m(7),
        });
    }
    #[allow(clippy::cast_precision_loss)]
    let censored = scores.values().filter(|s| s.censored).count() as f64 / scores.len().max(1) as f64;
    Ok(Detection {
        run: run.to_string(),
        judge: format!("{model}/{}", super::judge::JUDGE_PROMPT),
        fpr,
        judge_calibration: judge_cal,
        either_calibration: either_cal,
        censored,
        texts: scores.len(),
        rows,
    })
}
