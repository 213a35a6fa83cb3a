//! The GEO ranking pages' data (`/geo`, `/geo/trials/<trial>`): the same numbers as
//! `mirage geo report --json`, built on the server by `geo::report`.

use super::{RunId, TrialId};
use serde::{Deserialize, Serialize};

use super::Est;

/// One (ranker, method) row of the leaderboard.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoRow {
    pub ranker: String,
    pub method: String,
    /// The threat-model group: baseline, offline writer, white-hat rewrite, black-box, imported.
    pub group: String,
    pub band: usize,
    pub n: usize,
    pub nrg: Est,
    pub s_at_0_1: Est,
    pub p_at_0_1: Est,
    pub kvr: Est,
    pub nrg_after_keyword: Est,
    pub promoted_and_passed: Est,
    /// Share of orders missing the target, edited and clean.
    pub missing: f64,
    pub missing_clean: f64,
    /// Orders ranked, those with a failed ranker call (counted as naming nothing), and the
    /// targets with at least one.
    pub orders: usize,
    pub failed_orders: usize,
    pub failed_targets: usize,
    pub nrg_target_weighted: f64,
    /// PPL-R under the built-in 4-gram model (equal-dataset mean of ratios).
    pub ppl_r: Option<f64>,
    /// Targets the row lacks (marked ‡ and "n of N"): its trials in error or unfinished,
    /// or targets the widest row under its ranker has and it does not.
    #[serde(default)]
    pub incomplete: usize,
    /// Replies read, and those read by the fallback; `mostly_fallback` (marked §): over
    /// half of the clean or of the edited replies were.
    #[serde(default)]
    pub replies: usize,
    #[serde(default)]
    pub fallback_replies: usize,
    #[serde(default)]
    pub mostly_fallback: bool,
    /// For TAP: how its searches went.
    #[serde(default)]
    pub tap: Option<GeoTapStats>,
}

/// One (ranker, method, dataset) cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoCell {
    pub ranker: String,
    pub method: String,
    pub dataset: String,
    pub nrg: Est,
    pub failed_orders: usize,
    /// Trials in error or unfinished (‡).
    #[serde(default)]
    pub incomplete: usize,
}

/// A (ranker, method) some of whose trials ended in error or are unfinished (or all of
/// them: no scored target). Such trials are in no mean, so the report names them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoIncomplete {
    pub ranker: String,
    pub method: String,
    pub trials: usize,
    pub errors: usize,
    pub unfinished: usize,
    /// Targets with a finished trial: those the row's figures are over.
    #[serde(default)]
    pub scored: usize,
    /// Datasets of the run none of whose trials of this variant finished: they are left out
    /// of its equal-dataset mean, so its figures are over the other datasets.
    #[serde(default)]
    pub left_out: Vec<String>,
}

impl GeoIncomplete {
    /// The report's line about it.
    pub fn describe(&self) -> String {
        if self.scored == 0 {
            format!(
                "{} / {}: no scored target ({} of {} trials failed, {} unfinished)",
                self.ranker, self.method, self.errors, self.trials, self.unfinished
            )
        } else {
            let left_out = if self.left_out.is_empty() {
                String::new()
            } else {
                format!(
                    "; no target of {} was scored, so its equal-dataset mean is over the other datasets and \
                     compares with rows over all of them only with care",
                    self.left_out.join(", ")
                )
            };
            format!(
                "{} / {} ‡: {} of {} trials ended in error and {} are unfinished; its figures are over the other {} \
                 targets only{left_out}",
                self.ranker, self.method, self.errors, self.trials, self.unfinished, self.scored
            )
        }
    }
}

/// How the compared reading of a run's replies differs from the run's own, in words.
/// `lines`: (numbered lines read differently, of all); `replies`: (replies whose target the
/// compared reading ranks differently, of all).
pub fn readings_note(parser: &str, compared: &str, lines: (usize, usize), replies: (usize, usize)) -> String {
    format!(
        "Replies read with the {parser} parser; the {compared} reading attributes {} of {} numbered lines to a \
         different name and gives the target another rank in {} of {} replies.",
        lines.0, lines.1, replies.0, replies.1
    )
}

/// How a TAP variant's searches went: targets searched, mean nodes scored, the share whose
/// best suffix reached rank 1 on the search's own orders, and the share of those still
/// first (median edited rank 1) on the K evaluation orders; with the searches' scoring
/// calls, those that failed after their retries (each ranked its candidate missing), the
/// searches with at least one such call, and those every call of which failed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoTapStats {
    pub searched: usize,
    pub nodes: f64,
    pub reached: f64,
    pub still_first: Option<f64>,
    #[serde(default)]
    pub calls: usize,
    #[serde(default)]
    pub failed_calls: usize,
    #[serde(default)]
    pub failed_searches: usize,
    #[serde(default)]
    pub dead_searches: usize,
}

impl GeoTapStats {
    /// The report's line about a row's searches (failed calls marked †).
    pub fn describe(&self, ranker: &str, method: &str) -> String {
        // A transfer row (`tap>A` under another ranker) ranks texts searched on A: the
        // searches are A's, only the evaluation is this ranker's.
        let searched_on = method.strip_prefix("tap>").unwrap_or(ranker);
        let still = self.still_first.map_or_else(String::new, |f| {
            if searched_on == ranker {
                format!(", of which {:.0} % are still first on the evaluation orders", 100.0 * f)
            } else {
                format!(", of which {:.0} % are first under {ranker} on the evaluation orders", 100.0 * f)
            }
        });
        let failed = if self.failed_calls == 0 {
            String::new()
        } else {
            format!(
                "; † {} of {} scoring calls failed after their retries, in {} of {} searches{}",
                self.failed_calls,
                self.calls,
                self.failed_searches,
                self.searched,
                if self.dead_searches == 0 {
                    String::new()
                } else {
                    format!(
                        " ({} of them measured nothing, every call failing: their texts are an outage's, and the \
                         next run searches them again)",
                        self.dead_searches
                    )
                }
            )
        };
        let searches = if searched_on == ranker {
            format!("{} searches", self.searched)
        } else {
            format!("the texts of {} searches on {searched_on}", self.searched)
        };
        format!(
            "{ranker} / {method}: {searches}, {:.1} nodes each on average, {:.0} % reached rank 1 on {searched_on}'s \
             search orders{still}{failed}",
            self.nodes,
            100.0 * self.reached
        )
    }
}

/// A paired comparison of two methods under one ranker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoPair {
    pub ranker: String,
    pub a: String,
    pub b: String,
    pub diff: Est,
    pub p: f64,
    /// `None` for a pair outside the declared family (not adjusted).
    pub p_holm: Option<f64>,
    /// Datasets holding a single list among the pair's shared targets: no paired test is
    /// possible there, so p is 1 whatever the interval says.
    #[serde(default)]
    pub untestable: Vec<String>,
    /// Either method has trials in error or unfinished (‡): the difference is over the
    /// targets both scored only.
    #[serde(default)]
    pub partial: bool,
}

impl GeoPair {
    /// The p cell: with the reason when no test was possible.
    pub fn p_text(&self) -> String {
        if self.untestable.is_empty() {
            format!("{:.4}", self.p)
        } else {
            format!("{:.4} (no test: {} has one shared list)", self.p, self.untestable.join(", "))
        }
    }

    /// "a − b", marked ‡ when it is over fewer targets than the rows.
    pub fn label(&self) -> String {
        format!("{} − {}{}", self.a, self.b, if self.partial { " ‡" } else { "" })
    }
}

/// Spearman's ρ between two rankers (`ranker` empty) or two datasets under `ranker`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoRho {
    /// Between two datasets under this ranker; `None`: between rankers `a` and `b`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ranker: Option<String>,
    pub a: String,
    pub b: String,
    /// `None` over fewer than three methods or a constant column.
    pub rho: Option<f64>,
    /// The methods both have.
    pub methods: usize,
    /// TAP rows paired with their transfer row (`tap@A ~ tap>A@B`), so both columns rank
    /// the same texts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paired: Vec<String>,
}

/// One target's outcome, for the targets table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoTargetRow {
    pub trial: TrialId,
    pub ranker: String,
    pub method: String,
    pub target: String,
    pub name: String,
    pub r_b: f64,
    pub r_a: f64,
    pub nrg: f64,
    pub kvr: bool,
}

/// The GEO leaderboard page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoView {
    /// GEO runs, newest first.
    pub runs: Vec<RunId>,
    pub run: RunId,
    pub prompt_version: String,
    pub k: usize,
    pub trials: usize,
    pub errors: usize,
    pub unfinished: usize,
    /// Orders and trials with a ranker call that failed after its retries.
    pub failed_orders: usize,
    pub failed_trials: usize,
    /// The stored lists differ from those the run was planned on (originals adopted since).
    pub lists_changed: bool,
    /// Stored texts made from another original than the list's now (PPL-R left out).
    pub stale_texts: usize,
    /// Datasets holding a single list: intervals leave out their spread, and p is 1.
    #[serde(default)]
    pub single_list_datasets: Vec<String>,
    /// Variants with no scored target.
    pub incomplete: Vec<GeoIncomplete>,
    /// The run's reading of replies, the one compared with it, and the numbered lines the
    /// two attribute differently (of all).
    pub parser: String,
    pub compared_parser: String,
    pub lines_read_differently: usize,
    pub lines: usize,
    /// Replies read, and those in which the compared reading ranks the target differently.
    #[serde(default)]
    pub replies: usize,
    #[serde(default)]
    pub target_read_differently: usize,
    /// The methods Spearman's ρ is taken over (the baselines left out unless declared).
    pub rho_methods: Vec<String>,
    pub datasets: Vec<String>,
    pub rows: Vec<GeoRow>,
    pub cells: Vec<GeoCell>,
    pub pairs: Vec<GeoPair>,
    /// Spearman's ρ over the methods' NRG between rankers, and between datasets under each
    /// ranker.
    pub spearman: Vec<GeoRho>,
    /// The targets of one (ranker, method), largest gain first (the page's `method`).
    pub targets: Vec<GeoTargetRow>,
    /// Labels of the run's stored detection reports (`mirage geo score`), newest first.
    pub detections: Vec<String>,
    /// The chosen report (the page's `judge`, else the newest).
    pub detection: Option<GeoDetectionView>,
}

/// A stored detection report of the run (`mirage geo score`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoDetectionView {
    pub label: String,
    /// `logprobs` (the paper) or `verbalized`.
    pub mode: String,
    /// `equal`, `pooled` or `lodo`.
    pub calibration: String,
    /// The judge's target rate on originals, and the keyword-or-judge filter's.
    pub fpr: f64,
    pub either_fpr: f64,
    pub censored: f64,
    pub texts: usize,
    /// Where the endpoint PPL-R comes from (`None`: no scorer).
    pub ppl_source: Option<String>,
    /// The rate each filter realises on each dataset's originals.
    pub rates: Vec<GeoRate>,
    pub rows: Vec<GeoDetectRow>,
    /// NRG against judge AUROC per (ranker, method), as an SVG document (escaped text).
    pub scatter: String,
}

/// One dataset's realised false-positive rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoRate {
    pub dataset: String,
    pub keyword: f64,
    pub judge: f64,
    pub either: f64,
    pub perplexity: f64,
}

/// The judge's columns of one (ranker, method).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoDetectRow {
    pub ranker: String,
    pub method: String,
    pub auroc: Option<f64>,
    pub judge_flagged: f64,
    pub either_flagged: f64,
    pub nrg_after_judge: f64,
    pub nrg_after_either: f64,
    pub ppl_flagged: f64,
    pub nrg_after_ppl: f64,
    pub ppl_r: Option<f64>,
    /// Orders with a ranker call that failed after its retries (the NRG figures include
    /// them as replies naming nothing).
    #[serde(default)]
    pub failed_orders: usize,
    /// Each filter's effect with intervals (empty for a report stored before them).
    pub filters: Vec<GeoFilterEffect>,
}

/// What one filter leaves of a (ranker, method), with 95 % intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoFilterEffect {
    /// `keyword`, `judge`, `either` or `perplexity`.
    pub filter: String,
    pub flagged: Est,
    pub nrg_after: Est,
    pub promoted_and_passed: Est,
}

/// One order of a target: where the target was shown and its parsed ranks and replies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoOrderView {
    pub order: usize,
    /// 1-based position the target was shown at.
    pub shown_at: usize,
    pub clean_rank: usize,
    pub edited_rank: usize,
    pub clean_reply: String,
    pub edited_reply: String,
}

/// A GEO trial: the list with the target marked, the edit, and every order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoTargetView {
    pub run: RunId,
    pub trial: TrialId,
    pub ranker: String,
    pub method: String,
    pub instance: String,
    pub query: String,
    /// (name, description) in list order; the target is `target` (0-based).
    pub items: Vec<(String, String)>,
    pub target: usize,
    pub orig_text: String,
    pub adv_text: String,
    pub edit_kind: String,
    pub source: String,
    /// Listed keywords and phrases the edited text holds.
    pub keyword_hits: Vec<String>,
    /// The original against the edit, word by word: (`same`, `del` or `ins`, text).
    pub diff: Vec<(String, String)>,
    pub state: crate::TrialState,
    pub error: Option<String>,
    pub orders: Vec<GeoOrderView>,
    /// The TAP search's scored candidates, in order (empty for other methods).
    pub tap: Vec<GeoTapNode>,
    pub r_b: Option<f64>,
    pub r_a: Option<f64>,
    pub nrg: Option<f64>,
    /// The newest detection report's view of the original and the edit.
    pub judged: Option<GeoJudged>,
}

/// What a stored detection report says of one target's original and edited text.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoJudged {
    pub label: String,
    pub p_orig: Option<f64>,
    pub p_adv: Option<f64>,
    /// Whether the judge flags the edit at the report's threshold.
    pub flagged: Option<bool>,
    pub ppl_orig: Option<f64>,
    pub ppl_adv: Option<f64>,
}

/// One scored TAP candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoTapNode {
    pub id: usize,
    pub parent: Option<usize>,
    pub depth: usize,
    /// Mean rank of the target over the scoring orders (lower is better).
    pub score: f64,
    pub suffix: String,
}
