//! The insights port: leaderboard, robustness plot and heatmaps of a run, from its scores.
//!
//! Scores and aggregates are cached in memory, keyed by the run's finished-trial count and
//! the newest label event: a finished trial or a person's label invalidates them, nothing
//! else recomputes an aggregate on a page view. A page never waits long for a cold cache:
//! the computation runs as a background job ([`Jobs`]) and the page shows the numbers from
//! before (or none) with the job's progress until it is done.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use app::error::AppError;
use app::model::{BoardQuery, HeatCell, HeatQuery, Heatmap, Leaderboard, ParetoPoint, Pending, Robustness, RunId};

use super::board::{board_metrics, board_rows, breakdown_rows, columns, pair_view};
use super::fail;
use super::jobs::Jobs;
use crate::db::Store;
use crate::env::World;
use crate::judge::TrialScore;
use crate::judge::aggregate::{Aggregate, Metric, Options, aggregate};
use crate::judge::rsn::ModelJudge;
use crate::manip::Level;

/// Metrics a heatmap may show.
pub const HEAT_METRICS: [Metric; 10] = [
    Metric::ManipulationEffect,
    Metric::Robustness,
    Metric::Susceptibility,
    Metric::GoalRate,
    Metric::FlipRate,
    Metric::HarmFlip,
    Metric::AccDec,
    Metric::Exposure,
    Metric::Verification,
    Metric::Recovery,
];
/// Heatmap cells with fewer observations are greyed.
pub const MIN_N: usize = 10;
/// Heatmap cells whose interval is wider than this are greyed too.
const MAX_WIDTH: f64 = 0.5;

pub use super::as_of::Fingerprint;
/// A run's cache slot: the current figures (`None`), or those of one pinned generation.
/// At most one pinned generation of a run is kept (see [`InsightsService::keep_pinned`]).
type Slot = (RunId, Option<i64>);

/// The cache slot of `key`.
fn slot_of(run: &RunId, key: Fingerprint) -> Slot {
    (run.clone(), key.2.then_some(key.1))
}
/// (run and slot, group fields, utility metric, group metrics).
type AggregateKey = (Slot, Vec<String>, Metric, Vec<Metric>);

/// The cache key of an aggregate (shared by the page path and the computing path).
fn aggregate_key(run: &RunId, key: Fingerprint, by: &[&str], utility: Metric, metrics: &[Metric]) -> AggregateKey {
    (slot_of(run, key), by.iter().map(ToString::to_string).collect(), utility, metrics.to_vec())
}

/// The first of these runs with a finished trial.
async fn first_finished(store: &dyn Store, ids: &[RunId]) -> Result<Option<RunId>, AppError> {
    for id in ids {
        if store.progress(id).await.map_err(fail)?.done > 0 {
            return Ok(Some(id.clone()));
        }
    }
    Ok(None)
}

/// The run a figure or labelling page shows when its URL names none: the newest agent run
/// with a finished trial (GEO runs have pages of their own). Every page follows this one
/// rule, and the server puts the run into such a page's URL.
pub async fn default_run(store: &dyn Store) -> Result<Option<RunId>, AppError> {
    let runs = store.runs().await.map_err(fail)?;
    first_finished(store, &crate::runs::geo::agent_runs(&runs)).await
}

#[derive(Default)]
struct Cache {
    scores: HashMap<Slot, (Fingerprint, Arc<Vec<TrialScore>>)>,
    /// Each aggregate with the state it was computed at and when (ms since the epoch).
    aggregates: HashMap<AggregateKey, (Fingerprint, Arc<Aggregate>, i64)>,
    reports: HashMap<Slot, (Fingerprint, Arc<app::model::ReportView>)>,
}

/// Aggregates of runs for the dashboard pages and their exports.
pub struct InsightsService {
    pub store: Arc<dyn Store>,
    pub world: Arc<World>,
    pub judge: Arc<ModelJudge>,
    cache: Mutex<Cache>,
    /// One scoring of a run at a time (two requests, or a request and a finished run, must
    /// not score it twice); runs are scored side by side.
    scoring: Mutex<HashMap<RunId, Arc<tokio::sync::Mutex<()>>>>,
    /// The runs being scored now, with their progress: (trials handled, trials finished).
    progress: Mutex<HashMap<RunId, (usize, usize)>>,
    /// Cold computations pages asked for.
    jobs: Jobs,
    /// Itself, for the jobs it starts.
    me: Weak<InsightsService>,
}

/// The metric behind a tier name.
pub fn tier_metric(tier: &str) -> Result<Metric, AppError> {
    match tier {
        "default" => Ok(Metric::AccDec),
        "strict" => Ok(Metric::AccDecStrict),
        "loose" => Ok(Metric::AccDecLoose),
        other => Err(AppError::Invalid {
            field: "tier".into(),
            message: format!("{other:?} is not one of default, strict, loose"),
        }),
    }
}

impl InsightsService {
    /// The service; a page waits up to `wait` for a cold computation before answering with
    /// what is ready.
    pub fn new(store: Arc<dyn Store>, world: Arc<World>, judge: Arc<ModelJudge>, wait: Duration) -> Arc<Self> {
        Arc::new_cyclic(|me| InsightsService {
            store,
            world,
            judge,
            cache: Mutex::default(),
            scoring: Mutex::default(),
            progress: Mutex::default(),
            jobs: Jobs::new(wait),
            me: me.clone(),
        })
    }

    /// The runs that can be chosen (newest first) and the one asked for, or the newest with
    /// finished trials.
    async fn pick(&self, run: Option<String>) -> Result<(RunId, Vec<RunId>), AppError> {
        let runs = self.store.runs().await.map_err(fail)?;
        // GEO ranking runs have their own pages; these read agent runs.
        let ids = crate::runs::geo::agent_runs(&runs);
        if let Some(run) = run.filter(|r| !r.is_empty()).map(RunId::from) {
            if !ids.contains(&run) {
                return Err(AppError::NotFound(format!("run {run}")));
            }
            return Ok((run, ids));
        }
        match first_finished(self.store.as_ref(), &ids).await? {
            Some(id) => Ok((id, ids)),
            None => Err(AppError::NotFound("a run with finished trials (launch one on the Runs page)".into())),
        }
    }

    /// The run's state as the caches see it. A request reads it once and hands it to every
    /// [`Self::scores_at`] / [`Self::aggregate_at`] it makes (two queries, one of them a
    /// count over the run's trials).
    pub async fn fingerprint(&self, run: &RunId) -> Result<Fingerprint, AppError> {
        let p = self.store.progress(run).await.map_err(fail)?;
        Ok((p.done + p.error, self.store.label_generation().await.map_err(fail)?, false))
    }

    /// [`Self::fingerprint`] at the point a page's `as_of=` names (the current one when it
    /// names none). A generation past the newest is refused.
    pub async fn fingerprint_as_of(&self, run: &RunId, as_of: Option<&str>) -> Result<Fingerprint, AppError> {
        let (finished, newest, _) = self.fingerprint(run).await?;
        let Some(value) = as_of.filter(|v| !v.trim().is_empty()) else { return Ok((finished, newest, false)) };
        let generation = match super::as_of::parse(value)? {
            Ok(g) if g > newest => {
                return Err(AppError::Invalid {
                    field: "as_of".into(),
                    message: format!("label generation {g} is not recorded yet (the newest is {newest})"),
                });
            }
            Ok(g) => g,
            Err(ms) => self.store.label_generation_at(ms).await.map_err(fail)?,
        };
        Ok((finished, generation, true))
    }

    /// What a page says of the point its figures stand at.
    pub async fn as_of_view(&self, runs: &[&RunId], key: Fingerprint) -> Result<app::model::AsOf, AppError> {
        super::as_of::view(self.store.as_ref(), runs, key).await
    }

    /// The run's scores with human labels applied, scoring new trials first.
    pub async fn scores(&self, run: &RunId) -> Result<Arc<Vec<TrialScore>>, AppError> {
        self.scores_at(run, self.fingerprint(run).await?).await
    }

    /// [`Self::scores`] for a fingerprint already read.
    pub async fn scores_at(&self, run: &RunId, key: Fingerprint) -> Result<Arc<Vec<TrialScore>>, AppError> {
        let slot = slot_of(run, key);
        if let Some((k, s)) = self.lock().scores.get(&slot)
            && *k == key
        {
            return Ok(s.clone());
        }
        let gate = self
            .scoring
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(run.clone())
            .or_default()
            .clone();
        let _scoring = gate.lock().await;
        // Someone may have scored while this request waited.
        if let Some((k, s)) = self.lock().scores.get(&slot)
            && *k == key
        {
            return Ok(s.clone());
        }
        let running = || self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let progress = |done: usize, total: usize| {
            running().insert(run.clone(), (done, total));
        };
        // People's labels up to the generation of the key, pinned or not: labels added while
        // the run is scored wait for the next key.
        let scored =
            crate::runs::score::score_run_as_of(&self.store, &self.world, run, &self.judge, &progress, Some(key.1))
                .await;
        running().remove(run);
        let scores = Arc::new(scored.map_err(fail)?.0);
        self.keep_pinned(run, key);
        self.lock().scores.insert(slot, (key, scores.clone()));
        Ok(scores)
    }

    /// Before figures of a pinned generation are cached, those of the run's other pinned
    /// generations go: links to many generations cost a scoring each, not memory.
    fn keep_pinned(&self, run: &RunId, key: Fingerprint) {
        if !key.2 {
            return;
        }
        let other = |(r, g): &Slot| r == run && g.is_some_and(|g| g != key.1);
        let mut cache = self.lock();
        cache.scores.retain(|s, _| !other(s));
        cache.aggregates.retain(|k, _| !other(&k.0));
        cache.reports.retain(|s, _| !other(s));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What a page waiting on `run` is told: the scoring's progress, or the aggregate.
    fn pending(&self, run: &RunId, stale: bool) -> Pending {
        let progress = self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(run).copied();
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        match progress {
            Some((done, total)) => {
                Pending { what: "Scoring the run's trials".into(), done: count(done), total: count(total), stale }
            }
            None => Pending { what: "Computing the intervals".into(), done: 0, total: 0, stale },
        }
    }

    /// A value for a page that must not wait long: `cached(true)` when it is fresh, else the
    /// job `name` runs `work` (which fills the cache) and, if that takes longer than the
    /// page's wait, the page gets `cached(false)` (the value from before the latest trials
    /// or labels) or `empty()`, with the progress.
    async fn ready<T>(
        &self,
        name: String,
        run: &RunId,
        cached: impl Fn(bool) -> Option<T>,
        work: impl Future<Output = Result<(), AppError>> + Send + 'static,
        empty: impl FnOnce() -> Result<T, AppError>,
    ) -> Result<(T, Option<Pending>), AppError> {
        if let Some(v) = cached(true) {
            return Ok((v, None));
        }
        if self.jobs.run_or_wait(&name, work).await?
            && let Some(v) = cached(true)
        {
            return Ok((v, None));
        }
        match cached(false) {
            Some(v) => Ok((v, Some(self.pending(run, true)))),
            None => Ok((empty()?, Some(self.pending(run, false)))),
        }
    }

    /// [`Self::aggregate_at`] for a page: the aggregate at `key`, or while it is computed the
    /// one from before (else an empty one) with the progress.
    pub async fn aggregate_ready(
        &self,
        run: &RunId,
        key: Fingerprint,
        by: &[&str],
        utility: Metric,
        metrics: &[Metric],
    ) -> Result<(Arc<Aggregate>, Option<Pending>), AppError> {
        let ck = aggregate_key(run, key, by, utility, metrics);
        let me = self.me.upgrade().ok_or(AppError::Internal)?;
        let (job_run, job_by, job_metrics) = (run.clone(), ck.1.clone(), ck.3.clone());
        let work = async move {
            let by: Vec<&str> = job_by.iter().map(String::as_str).collect();
            me.aggregate_at(&job_run, key, &by, utility, &job_metrics).await.map(|_| ())
        };
        let cached = |fresh: bool| {
            self.lock().aggregates.get(&ck).filter(|(k, ..)| !fresh || *k == key).map(|(_, a, _)| a.clone())
        };
        let empty = || {
            let options = Options { by: ck.1.clone(), utility, metrics: ck.3.clone(), ..Options::default() };
            aggregate(&[], run, &options).map(Arc::new).map_err(fail)
        };
        self.ready(format!("aggregate {ck:?} at {key:?}"), run, cached, work, empty).await
    }

    /// [`Self::scores_at`] for a page: the scores at `key`, or while they are computed the
    /// ones from before (else none) with the progress.
    pub async fn scores_ready(
        &self,
        run: &RunId,
        key: Fingerprint,
    ) -> Result<(Arc<Vec<TrialScore>>, Option<Pending>), AppError> {
        let me = self.me.upgrade().ok_or(AppError::Internal)?;
        let job_run = run.clone();
        let work = async move { me.scores_at(&job_run, key).await.map(|_| ()) };
        let slot = slot_of(run, key);
        let cached =
            |fresh: bool| self.lock().scores.get(&slot).filter(|(k, _)| !fresh || *k == key).map(|(_, s)| s.clone());
        self.ready(format!("scores {run} at {key:?}"), run, cached, work, || Ok(Arc::default())).await
    }

    /// The scores cached for `run` in the slot of `key` at any state (none when never
    /// computed).
    fn scores_cached(&self, run: &RunId, key: Fingerprint) -> Arc<Vec<TrialScore>> {
        self.lock().scores.get(&slot_of(run, key)).map(|(_, s)| s.clone()).unwrap_or_default()
    }

    /// The run's aggregate grouped by `by`, with utility on `utility`, estimating `metrics`
    /// for the groups, at the fingerprint `key`.
    pub async fn aggregate_at(
        &self,
        run: &RunId,
        key: Fingerprint,
        by: &[&str],
        utility: Metric,
        metrics: &[Metric],
    ) -> Result<Arc<Aggregate>, AppError> {
        let ck = aggregate_key(run, key, by, utility, metrics);
        if let Some((k, a, _)) = self.lock().aggregates.get(&ck)
            && *k == key
        {
            return Ok(a.clone());
        }
        let scores = self.scores_at(run, key).await?;
        let options = Options { by: ck.1.clone(), utility, metrics: ck.3.clone(), ..Options::default() };
        let run_id = run.clone();
        // The aggregate is CPU work: keep it off the async workers.
        let agg = tokio::task::spawn_blocking(move || aggregate(&scores, &run_id, &options))
            .await
            .map_err(fail)?
            .map_err(fail)?;
        let agg = Arc::new(agg);
        self.lock().aggregates.insert(ck, (key, agg.clone(), crate::db::now_ms()));
        Ok(agg)
    }
}

impl InsightsService {
    /// The run's report at the fingerprint `key`, computed (and cached) when cold.
    async fn report_at(&self, run: &RunId, key: Fingerprint) -> Result<Arc<app::model::ReportView>, AppError> {
        let slot = slot_of(run, key);
        if let Some((k, v)) = self.lock().reports.get(&slot)
            && *k == key
        {
            return Ok(v.clone());
        }
        let scores = self.scores_at(run, key).await?;
        let run_id = run.clone();
        // The aggregate is CPU work: keep it off the async workers.
        let view =
            tokio::task::spawn_blocking(move || super::board::report_view(&scores, &run_id)).await.map_err(fail)??;
        let view = Arc::new(view);
        self.lock().reports.insert(slot, (key, view.clone()));
        Ok(view)
    }
}

#[async_trait::async_trait]
impl app::ssr::Insights for InsightsService {
    async fn report(&self, run: Option<String>, as_of: Option<String>) -> Result<app::model::ReportView, AppError> {
        let (run, runs) = self.pick(run).await?;
        let key = self.fingerprint_as_of(&run, as_of.as_deref()).await?;
        let me = self.me.upgrade().ok_or(AppError::Internal)?;
        let job_run = run.clone();
        let work = async move { me.report_at(&job_run, key).await.map(|_| ()) };
        let slot = slot_of(&run, key);
        let cached =
            |fresh: bool| self.lock().reports.get(&slot).filter(|(k, _)| !fresh || *k == key).map(|(_, v)| v.clone());
        let empty = || super::board::report_view(&[], &run).map(Arc::new);
        let (view, pending) = self.ready(format!("report {run} at {key:?}"), &run, cached, work, empty).await?;
        let frozen = self.as_of_view(&[&run], key).await?;
        let mut view = app::model::ReportView { runs: runs.into_iter().collect(), pending, frozen, ..(*view).clone() };
        // Grades are not part of the cache key: their checks are read fresh.
        let grades = self.store.grades(&run).await.map_err(fail)?;
        let validation = crate::judge::validation::validate(&self.scores_cached(&run, key), &grades);
        view.report.checks.extend(crate::judge::validity::grade_checks(&validation));
        Ok(view)
    }

    async fn leaderboard(&self, q: BoardQuery) -> Result<Leaderboard, AppError> {
        let tier = q.tier.clone().filter(|t| !t.is_empty()).unwrap_or_else(|| "default".into());
        let utility = tier_metric(&tier)?;
        let by = q.by.clone().filter(|b| !b.is_empty());
        if let Some(b) = &by
            && !["domain", "condition", "level"].contains(&b.as_str())
        {
            return Err(AppError::Invalid {
                field: "by".into(),
                message: format!("{b:?} is not one of domain, condition, level"),
            });
        }
        let (run, runs) = self.pick(q.run.clone()).await?;
        let metrics = board_metrics(utility);
        let key = self.fingerprint_as_of(&run, q.as_of.as_deref()).await?;
        let (agg, mut pending) = self.aggregate_ready(&run, key, &["agent"], utility, &metrics).await?;
        let rows = board_rows(&agg, utility);
        let mut breakdown = Vec::new();
        if let Some(field) = &by {
            let (split, waiting) =
                self.aggregate_ready(&run, key, &[field.as_str(), "agent"], utility, &metrics).await?;
            pending = pending.or(waiting);
            breakdown = breakdown_rows(&split, field, utility);
        }
        // A label a person settled keeps its automatic one: exactly the pairs κ is computed on.
        let human_labels = agg.agreement.iter().map(|a| a.n).sum();
        let grades = self.store.grades(&run).await.map_err(fail)?;
        let validation = crate::judge::validation::validate(&self.scores_cached(&run, key), &grades);
        // When the figures shown were computed.
        let as_of =
            self.lock().aggregates.get(&aggregate_key(&run, key, &["agent"], utility, &metrics)).map(|(.., at)| *at);
        let frozen = self.as_of_view(&[&run], key).await?;
        Ok(Leaderboard {
            run,
            runs: runs.into_iter().collect(),
            tier,
            columns: columns().into_iter().map(ToString::to_string).collect(),
            rows,
            by,
            breakdown,
            pairs: agg.comparisons.iter().map(pair_view).collect(),
            judges: agg.judges.clone(),
            as_of,
            human_labels,
            agreement: agg.agreement.iter().map(|a| (a.kind.as_str().to_string(), a.n, a.kappa)).collect(),
            causal: agg
                .causal
                .iter()
                .map(|c| app::model::CausalView {
                    agent: c.agent.clone(),
                    replayed: c.replayed,
                    caused: c.caused,
                    precision: c.precision,
                    recall: c.recall,
                })
                .collect(),
            checks: agg.checks.iter().cloned().chain(crate::judge::validity::grade_checks(&validation)).collect(),
            validation,
            pending,
            frozen,
        })
    }

    async fn robustness(
        &self,
        run: Option<String>,
        level: Option<String>,
        as_of: Option<String>,
    ) -> Result<Robustness, AppError> {
        let (run, runs) = self.pick(run).await?;
        let key = self.fingerprint_as_of(&run, as_of.as_deref()).await?;
        let (agg, pending) =
            self.aggregate_ready(&run, key, &["agent"], Metric::AccDec, &board_metrics(Metric::AccDec)).await?;
        let level = level.filter(|l| !l.is_empty()).unwrap_or_else(|| "pooled".into());
        let mut levels: Vec<String> =
            agg.levels.iter().map(|l| l.level.clone()).filter(|l| !Level::is_clean(l)).collect();
        levels.sort();
        levels.dedup();
        if level != "pooled" && !levels.contains(&level) && pending.is_none() {
            return Err(AppError::Invalid {
                field: "level".into(),
                message: format!("{level:?} is not pooled or a manipulated level of this run ({})", levels.join(", ")),
            });
        }
        let mut points = Vec::new();
        let mut missing = Vec::new();
        for s in &agg.leaderboard {
            let robustness = if level == "pooled" {
                s.robustness
            } else {
                agg.levels.iter().find(|l| l.agent == s.agent && l.level == level).and_then(|l| l.robustness)
            };
            match (s.utility, robustness) {
                (Some(u), Some(r)) => {
                    points.push(ParetoPoint { agent: s.agent.clone(), utility: u, robustness: r, frontier: false });
                }
                _ => missing.push(s.agent.clone()),
            }
        }
        crate::charts::mark_frontier(&mut points);
        let svg = crate::charts::pareto_svg(&points, &format!("{run}, {level}")).map_err(fail)?;
        // Utility against cost, for the configurations whose cost is known.
        let mut costs = crate::judge::cost::points(&agg);
        crate::charts::mark_cost_frontier(&mut costs);
        let cost_svg = (!costs.is_empty())
            .then(|| crate::charts::cost_svg(&costs, &format!("{run}: utility against cost")))
            .transpose()
            .map_err(fail)?;
        let frozen = self.as_of_view(&[&run], key).await?;
        Ok(Robustness {
            frozen,
            run,
            runs: runs.into_iter().collect(),
            level,
            levels,
            points,
            missing,
            svg,
            pending,
            costs,
            cost_svg,
        })
    }

    async fn heatmap(&self, q: HeatQuery) -> Result<Heatmap, AppError> {
        let metric = match q.metric.as_deref().filter(|m| !m.is_empty()) {
            None => Metric::ManipulationEffect,
            Some(name) => Metric::parse_among(name, &HEAT_METRICS)
                .map_err(|message| AppError::Invalid { field: "metric".into(), message })?,
        };
        let by = q.by.clone().filter(|b| !b.is_empty()).unwrap_or_else(|| "agent".into());
        if !["agent", "domain", "category"].contains(&by.as_str()) {
            return Err(AppError::Invalid {
                field: "by".into(),
                message: format!("{by:?} is not one of agent, domain, category"),
            });
        }
        let (run, runs) = self.pick(q.run.clone()).await?;
        let key = self.fingerprint_as_of(&run, q.as_of.as_deref()).await?;
        let (agg, pending) =
            self.aggregate_ready(&run, key, &["level", by.as_str()], Metric::AccDec, &[metric]).await?;
        let mut levels: Vec<String> = agg.groups.iter().filter_map(|g| g.key.get("level").cloned()).collect();
        levels.sort();
        levels.dedup();
        let mut columns: Vec<String> = agg.groups.iter().filter_map(|g| g.key.get(by.as_str()).cloned()).collect();
        columns.sort();
        columns.dedup();
        let cells = agg
            .groups
            .iter()
            .map(|g| {
                let e = g.metrics.get(metric.as_str()).copied().flatten();
                HeatCell {
                    level: g.key.get("level").cloned().unwrap_or_default(),
                    column: g.key.get(by.as_str()).cloned().unwrap_or_default(),
                    est: e,
                    underpowered: e.is_none_or(|e| e.n < MIN_N || e.no_interval || e.hi - e.lo > MAX_WIDTH),
                    trials: g.trials,
                    errors: g.errors,
                }
            })
            .collect();
        let frozen = self.as_of_view(&[&run], key).await?;
        Ok(Heatmap {
            frozen,
            run,
            runs: runs.into_iter().collect(),
            metric: metric.as_str().to_string(),
            by,
            levels,
            columns,
            cells,
            min_n: MIN_N,
            pending,
        })
    }
}
