//! The GEO ranking pages' port: a GEO run's report (cached until the run gains finished
//! trials) and one trial's target view.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use app::error::AppError;
use app::model::{
    GeoCell, GeoDetectRow, GeoDetectionView, GeoJudged, GeoOrderView, GeoRate, GeoRow, GeoTargetRow, GeoTargetView,
    GeoView, RunId, TrialId,
};

use super::fail;
use crate::db::{Store, TrialState};
use crate::geo::methods::Method;
use crate::geo::plan::{GeoTrial, target_of};
use crate::geo::report::{Report, report};
use crate::geo::score::{Detection, text_digest};
use crate::geo::{OrderRecord, result_of};
use crate::runs::{GeoRun, RunKind};

/// The GEO port.
pub struct GeoService {
    pub store: Arc<dyn Store>,
    /// Reports by run, with the finished-trial count they were computed at.
    cache: Mutex<HashMap<RunId, (i64, Arc<Report>)>>,
}

/// The original against the edit, word by word, neighbouring words of one kind joined.
pub fn word_diff(orig: &str, adv: &str) -> Vec<(String, String)> {
    use similar::{ChangeTag, TextDiff};
    let mut out: Vec<(String, String)> = Vec::new();
    for change in TextDiff::from_words(orig, adv).iter_all_changes() {
        let kind = match change.tag() {
            ChangeTag::Equal => "same",
            ChangeTag::Delete => "del",
            ChangeTag::Insert => "ins",
        };
        match out.last_mut() {
            Some((k, text)) if k == kind => text.push_str(change.value()),
            _ => out.push((kind.to_string(), change.value().to_string())),
        }
    }
    out
}

/// The detection scatter: each (ranker, method)'s NRG against its judge AUROC, the points
/// that keep a gain after the judge accented.
fn detection_scatter(d: &Detection, r: &Report) -> anyhow::Result<String> {
    let rankers: std::collections::BTreeSet<&str> = d.rows.iter().map(|x| x.ranker.as_str()).collect();
    let dots: Vec<crate::charts::Dot> = d
        .rows
        .iter()
        .filter_map(|x| {
            let auroc = x.auroc?;
            let nrg = r.rows.iter().find(|row| row.ranker == x.ranker && row.method == x.method)?.summary.nrg;
            let label = if rankers.len() > 1 { format!("{} @ {}", x.method, x.ranker) } else { x.method.clone() };
            Some(crate::charts::Dot {
                title: format!(
                    "{label}: NRG {:.3} {} (n={}), judge AUROC {auroc:.3}, flagged {:.3}",
                    nrg.mean,
                    nrg.bracket(3),
                    nrg.n,
                    x.judge_flagged
                ),
                label,
                x: app::model::Est { mean: auroc, lo: auroc, hi: auroc, n: x.n, no_interval: true, coverage: None },
                y: nrg,
                accent: x.nrg_after_judge > 0.0,
            })
        })
        .collect();
    let caption = format!("{}: NRG against judge AUROC", d.run);
    crate::charts::scatter_svg(
        &dots,
        &crate::charts::Axes {
            caption: &caption,
            x_desc: "judge AUROC (edits against originals)",
            y_desc: "NRG (rank gain)",
            x_bounds: (0.0, 1.0),
            y_bounds: (-1.0, 1.0),
            accent_line: None,
        },
    )
}

/// The dashboard's view of a stored detection report, with the NRG-against-AUROC scatter
/// (NRG intervals from the run's report).
fn detection_view(d: &Detection, r: &Report) -> anyhow::Result<GeoDetectionView> {
    let scatter = detection_scatter(d, r)?;
    let rate =
        |c: &crate::geo::calibrate::Calibrated, dataset: &str| c.per_dataset.get(dataset).copied().unwrap_or(0.0);
    Ok(GeoDetectionView {
        label: d.label.clone(),
        mode: d.mode.to_string(),
        calibration: d.judge_calibration.mode.to_string(),
        fpr: d.fpr,
        either_fpr: d.either_fpr,
        censored: d.censored,
        texts: d.texts,
        ppl_source: d.ppl_source.clone(),
        rates: d
            .keyword_calibration
            .per_domain
            .iter()
            .map(|(dataset, k)| GeoRate {
                dataset: dataset.clone(),
                keyword: *k,
                judge: rate(&d.judge_calibration, dataset),
                either: rate(&d.either_calibration, dataset),
                perplexity: rate(&d.ppl_calibration, dataset),
            })
            .collect(),
        rows: d
            .rows
            .iter()
            .map(|x| GeoDetectRow {
                ranker: x.ranker.clone(),
                method: x.method.clone(),
                auroc: x.auroc,
                judge_flagged: x.judge_flagged,
                either_flagged: x.either_flagged,
                nrg_after_judge: x.nrg_after_judge,
                nrg_after_either: x.nrg_after_either,
                ppl_flagged: x.ppl_flagged,
                nrg_after_ppl: x.nrg_after_ppl,
                ppl_r: x.ppl_r,
                failed_orders: x.failed_orders,
                filters: x
                    .filters
                    .iter()
                    .map(|f| app::model::GeoFilterEffect {
                        filter: f.filter.clone(),
                        flagged: f.flagged,
                        nrg_after: f.nrg_after,
                        promoted_and_passed: f.promoted_and_passed,
                    })
                    .collect(),
            })
            .collect(),
        scatter,
    })
}

impl GeoService {
    /// The targets of `method` (under `ranker`, or every ranker), best NRG first.
    async fn targets(&self, run: &RunId, ranker: Option<&str>, method: &str) -> anyhow::Result<Vec<GeoTargetRow>> {
        let mut targets = Vec::new();
        let lists = crate::geo::import::stored_lists(self.store.as_ref()).await?;
        let (_, results, _) = crate::geo::report::results(self.store.as_ref(), &lists, run).await?;
        let trials = self.store.trials(run).await?;
        let ids: HashMap<(&str, &str, &str), &str> =
            trials.iter().map(|t| ((t.ranker(), t.method(), t.target_id()), t.trial_id.as_str())).collect();
        for ((rk, m), scored) in &results {
            if m != method || ranker.is_some_and(|k| k != rk) {
                continue;
            }
            for s in scored {
                let (dataset, category) = s.list.split_once('|').unwrap_or_default();
                let target = vocab::GeoTarget { dataset: dataset.into(), list: category.into(), index: s.target };
                let task = target.to_string();
                let name = lists
                    .iter()
                    .find(|l| l.key() == s.list)
                    .and_then(|l| l.items.get(s.target - 1))
                    .map(|i| i.name.clone())
                    .unwrap_or_default();
                targets.push(GeoTargetRow {
                    trial: ids
                        .get(&(rk.as_str(), m.as_str(), task.as_str()))
                        .copied()
                        .unwrap_or_default()
                        .to_string()
                        .into(),
                    ranker: rk.clone(),
                    method: m.clone(),
                    target: format!("{dataset}/{category}/{}", s.target),
                    name,
                    r_b: s.result.r_b,
                    r_a: s.result.r_a,
                    nrg: s.result.nrg,
                    kvr: s.kvr,
                });
            }
        }
        targets.sort_by(|a, b| b.nrg.total_cmp(&a.nrg));
        Ok(targets)
    }

    pub fn new(store: Arc<dyn Store>) -> GeoService {
        GeoService { store, cache: Mutex::default() }
    }

    /// The GEO runs (newest first) and the one asked for, or the newest with finished trials.
    async fn pick(&self, run: Option<String>) -> Result<(RunId, Vec<RunId>), AppError> {
        let all = self.store.runs().await.map_err(fail)?;
        let runs = crate::runs::runs_of_kind(&all, |kind| matches!(kind, RunKind::Geo(_)));
        if let Some(run) = run.filter(|r| !r.is_empty()).map(RunId::from) {
            return if runs.contains(&run) {
                Ok((run, runs))
            } else {
                Err(AppError::NotFound(format!("GEO run {run}")))
            };
        }
        for id in &runs {
            if self.store.progress(id).await.map_err(fail)?.done > 0 {
                return Ok((id.clone(), runs));
            }
        }
        Err(AppError::NotFound("a GEO run with finished trials (start one with `mirage geo run`)".into()))
    }

    /// A run's report, from the cache while no trial has finished since.
    pub async fn report(&self, run: &RunId) -> Result<Arc<Report>, AppError> {
        let p = self.store.progress(run).await.map_err(fail)?;
        let key = p.done + p.error;
        if let Some((k, r)) =
            self.cache.lock().map_err(|_| fail(anyhow::anyhow!("the GEO report cache is poisoned")))?.get(run)
            && *k == key
        {
            return Ok(r.clone());
        }
        let lists = crate::geo::import::stored_lists(self.store.as_ref()).await.map_err(fail)?;
        let fresh = Arc::new(report(self.store.as_ref(), &lists, run).await.map_err(fail)?);
        self.cache
            .lock()
            .map_err(|_| fail(anyhow::anyhow!("the GEO report cache is poisoned")))?
            .insert(run.clone(), (key, fresh.clone()));
        Ok(fresh)
    }
}

#[async_trait::async_trait]
impl app::ssr::Geo for GeoService {
    async fn board(
        &self,
        run: Option<String>,
        ranker: Option<String>,
        method: Option<String>,
        judge: Option<String>,
    ) -> Result<GeoView, AppError> {
        let (run, runs) = self.pick(run).await?;
        let stored = self.store.geo_detections(&run).await.map_err(fail)?;
        let detections: Vec<String> = stored.iter().map(|(l, _)| l.clone()).collect();
        let detection = match judge.filter(|j| !j.is_empty()) {
            Some(label) => Some(
                stored
                    .iter()
                    .find(|(l, _)| *l == label)
                    .ok_or_else(|| AppError::NotFound(format!("a detection report {label:?} of run {run}")))?,
            ),
            None => stored.first(),
        }
        .map(|(_, body)| serde_json::from_str::<Detection>(body))
        .transpose()
        .map_err(fail)?;
        let r = self.report(&run).await?;
        let mut rows: Vec<GeoRow> = r.rows.iter().map(geo_row).collect();
        rows.sort_by(|a, b| (&a.ranker, &a.group, a.band, &a.method).cmp(&(&b.ranker, &b.group, b.band, &b.method)));
        let cells = r
            .datasets
            .iter()
            .map(|d| GeoCell {
                ranker: d.ranker.clone(),
                method: d.method.clone(),
                dataset: d.dataset.clone(),
                nrg: d.summary.nrg,
                failed_orders: d.summary.failed_orders,
                incomplete: d.incomplete,
            })
            .collect();
        let mut datasets: Vec<String> = Vec::new();
        for d in &r.datasets {
            if !datasets.contains(&d.dataset) {
                datasets.push(d.dataset.clone());
            }
        }
        let targets = match method.filter(|m| !m.is_empty()) {
            Some(method) => self.targets(&run, ranker.as_deref(), &method).await.map_err(fail)?,
            None => Vec::new(),
        };
        Ok(GeoView {
            runs: runs.into_iter().collect(),
            run: run.clone(),
            prompt_version: r.prompt_version.clone(),
            k: r.k,
            trials: r.trials,
            errors: r.errors,
            unfinished: r.unfinished,
            failed_orders: r.failed_orders,
            failed_trials: r.failed_trials,
            lists_changed: r.lists_changed,
            stale_texts: r.stale_texts,
            single_list_datasets: r.single_list_datasets.clone(),
            parser: r.parser.clone(),
            compared_parser: r.compared_parser.clone(),
            lines_read_differently: r.lines_read_differently,
            lines: r.lines,
            replies: r.replies,
            target_read_differently: r.target_read_differently,
            rho_methods: r.rho_methods.clone(),
            incomplete: r.incomplete.clone(),
            datasets,
            rows,
            cells,
            pairs: r.pairs.clone(),
            spearman: r.spearman.iter().chain(&r.spearman_datasets).cloned().collect(),
            targets,
            detections,
            detection: detection.map(|d| detection_view(&d, &r)).transpose().map_err(fail)?,
        })
    }

    async fn target(&self, trial: TrialId) -> Result<GeoTargetView, AppError> {
        let row = self.store.trial(&trial).await?;
        let run = self.store.run(&row.run_id).await.map_err(|e| fail(e.dangling()))?;
        let geo = match RunKind::of(&run).map_err(fail)? {
            RunKind::Geo(GeoRun { geo, .. }) => geo,
            RunKind::Agent(_) | RunKind::Imported(_) => {
                return Err(AppError::NotFound(format!("GEO trial {trial} (it belongs to an agent run)")));
            }
        };
        let lists = crate::geo::import::stored_lists(self.store.as_ref()).await.map_err(fail)?;
        let (list, target) = target_of(&lists, row.target_id()).map_err(fail)?;
        let index = i64::try_from(target + 1).map_err(fail)?;
        let tap: Vec<crate::geo::tap::Node> =
            parse_all(&self.store.tap_nodes(&trial).await.map_err(fail)?, &trial, "search node")?;
        let records: Vec<OrderRecord> = parse_all(&self.store.steps(&trial).await.map_err(fail)?, &trial, "order")?;
        // The text the trial ranked (a later run may have stored another for a new original).
        let planned = crate::geo::plan::text_key(&geo, row.method(), row.ranker());
        let key = crate::geo::texts::ranked_key(&records, &planned);
        let text = self.store.geo_text(key, &list.dataset, &list.category, index).await.map_err(fail)?;
        let result = (!records.is_empty() && row.state == TrialState::Done)
            .then(|| result_of(&records, list.items.len(), geo.protocol.agg));
        let adv = text.as_ref().map(|t| t.adv_text.clone()).unwrap_or_default();
        // The original the text was made from (the list's may have been adopted since).
        let original = text.as_ref().map_or_else(|| list.items[target].text.clone(), |t| t.orig_text.clone());
        let detections = self.store.geo_detections(&row.run_id).await.map_err(fail)?;
        let judged = detections.first().map(|(label, body)| judged_of(label, body, &list.dataset, &original, &adv));
        Ok(GeoTargetView {
            run: row.run_id.clone(),
            trial: trial.clone(),
            ranker: row.ranker().to_string(),
            method: row.method().to_string(),
            instance: list.instance_key(target + 1),
            query: list.query(),
            items: list.items.iter().map(|i| (i.name.clone(), i.text.clone())).collect(),
            target,
            keyword_hits: crate::detect::KeywordFilter::shipped().check_geobench(&adv).matched,
            diff: word_diff(&original, &adv),
            orig_text: original,
            adv_text: adv,
            edit_kind: text.as_ref().map(|t| t.edit_kind.clone()).unwrap_or_default(),
            source: text.map(|t| t.source).unwrap_or_else(|| "no text stored yet".into()),
            state: row.state,
            error: row.error.clone(),
            orders: records
                .iter()
                .enumerate()
                .map(|(i, o)| GeoOrderView {
                    order: i + 1,
                    shown_at: o.order.iter().position(|&x| x == target).map_or(0, |p| p + 1),
                    clean_rank: o.clean_rank,
                    edited_rank: o.edited_rank,
                    clean_reply: o.clean_reply.clone(),
                    edited_reply: o.edited_reply.clone(),
                })
                .collect(),
            tap: tap
                .into_iter()
                .map(|n| app::model::GeoTapNode {
                    id: n.id,
                    parent: n.parent,
                    depth: n.depth,
                    score: n.score,
                    suffix: n.suffix,
                })
                .collect(),
            r_b: result.as_ref().map(|r| r.r_b),
            r_a: result.as_ref().map(|r| r.r_a),
            nrg: result.map(|r| r.nrg),
            judged: judged.transpose()?,
        })
    }
}

/// Stored JSON bodies of a trial (its orders or search nodes), read back; an unreadable one
/// names the trial.
fn parse_all<T: serde::de::DeserializeOwned>(bodies: &[String], trial: &str, what: &str) -> Result<Vec<T>, AppError> {
    bodies
        .iter()
        .map(|b| serde_json::from_str(b))
        .collect::<Result<_, _>>()
        .map_err(|e| fail(anyhow::anyhow!("trial {trial}: a stored {what} is unreadable: {e}")))
}

/// What a stored detection report (`label`, `body`) says of a target's original and edited
/// texts: the judge's score and perplexity of each, and whether the edit is flagged.
fn judged_of(label: &str, body: &str, dataset: &str, original: &str, adv: &str) -> Result<GeoJudged, AppError> {
    let d: Detection = serde_json::from_str(body).map_err(fail)?;
    let orig = d.scores.get(&text_digest(original));
    let edit = d.scores.get(&text_digest(adv)).filter(|_| !adv.is_empty());
    Ok(GeoJudged {
        label: label.to_string(),
        p_orig: orig.map(|s| s.p),
        p_adv: edit.map(|s| s.p),
        flagged: edit.map(|s| d.judge_calibration.flags(dataset, crate::geo::kvr(adv), s.p)),
        ppl_orig: orig.and_then(|s| s.ppl),
        ppl_adv: edit.and_then(|s| s.ppl),
    })
}

/// A row of the GEO board: one ranker and method, with its group (the method's family) for
/// the board's order.
fn geo_row(row: &crate::geo::report::Row) -> GeoRow {
    let s = &row.summary;
    GeoRow {
        ranker: row.ranker.clone(),
        method: row.method.clone(),
        group: Method::parse(&row.method).map_or("other", |m| m.group()).to_string(),
        band: row.band,
        n: s.n,
        nrg: s.nrg,
        s_at_0_1: s.s_at_0_1,
        p_at_0_1: s.p_at_0_1,
        kvr: s.kvr,
        nrg_after_keyword: s.nrg_after_keyword,
        promoted_and_passed: s.promoted_and_passed,
        missing: s.missing,
        missing_clean: s.missing_clean,
        orders: s.orders,
        failed_orders: s.failed_orders,
        failed_targets: s.failed_targets,
        nrg_target_weighted: s.nrg_target_weighted,
        ppl_r: s.ppl_r,
        incomplete: row.incomplete,
        replies: s.replies,
        fallback_replies: s.fallback_replies,
        mostly_fallback: s.mostly_fallback(),
        tap: row.tap.clone(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_word_diff_marks_what_the_edit_removed_and_added() {
        let d = super::word_diff("A sturdy tent for two.", "A sturdy tent for two. Best tent ever!");
        let kinds: Vec<&str> = d.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(kinds.first(), Some(&"same"));
        assert!(d.iter().any(|(k, t)| k == "ins" && t.contains("Best")), "{d:?}");
        let joined: String = d.iter().filter(|(k, _)| k != "del").map(|(_, t)| t.as_str()).collect();
        assert_eq!(joined, "A sturdy tent for two. Best tent ever!", "same + ins rebuild the edit");
        let removed = super::word_diff("cheap and quick", "quick");
        assert!(removed.iter().any(|(k, t)| k == "del" && t.contains("cheap")), "{removed:?}");
    }
}
