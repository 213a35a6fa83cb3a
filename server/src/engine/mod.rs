//! The scoring engine behind the dashboard: a run's scores (people's labels applied) and
//! its aggregates and report, cached in memory and keyed by the run's finished-trial count
//! and the newest label event, so that a finished trial or a person's label invalidates
//! them and nothing else recomputes on a page view. One scoring of a run at a time; cold
//! computations run as background jobs ([`Jobs`]), and a page that must not wait gets the
//! figures from before (or none) with the job's progress until they are ready. The
//! services' ports (insights, compare, annotation) are thin layers over it.

pub mod as_of;
pub mod error;
pub mod jobs;
mod report;
pub mod score;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use vocab::{Pending, RunId};

pub use as_of::Fingerprint;
pub use error::{EngineError, fail};
use jobs::Jobs;
pub use report::report_view;

use crate::db::Store;
use crate::env::World;
use crate::judge::TrialScore;
use crate::judge::aggregate::{Aggregate, Metric, Options, aggregate};
use crate::judge::aside::Keep;
use crate::judge::rsn::ModelJudge;

/// A run's cache slot: the current figures (`None`), or those of one pinned generation.
/// At most one pinned generation of a run is kept (see [`Engine::keep_pinned`]).
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
async fn first_finished(store: &dyn Store, ids: &[RunId]) -> Result<Option<RunId>, EngineError> {
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
pub async fn default_run(store: &dyn Store) -> Result<Option<RunId>, EngineError> {
    let runs = store.runs().await.map_err(fail)?;
    first_finished(store, &crate::runs::agent_runs(&runs)).await
}

/// Values cached per slot, with the state they were computed at.
type SlotMap<T> = HashMap<Slot, (Fingerprint, Arc<T>)>;

#[derive(Default)]
struct Cache {
    scores: SlotMap<Vec<TrialScore>>,
    /// Each aggregate with the state it was computed at and when (ms since the epoch).
    aggregates: HashMap<AggregateKey, (Fingerprint, Arc<Aggregate>, i64)>,
    reports: SlotMap<vocab::ReportView>,
}

/// Scores, aggregates and reports of runs, cached.
pub struct Engine {
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
    me: Weak<Engine>,
}

impl Engine {
    /// The engine; a page waits up to `wait` for a cold computation before answering with
    /// what is ready.
    pub fn new(store: Arc<dyn Store>, world: Arc<World>, judge: Arc<ModelJudge>, wait: Duration) -> Arc<Self> {
        Arc::new_cyclic(|me| Engine {
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
    pub async fn pick(&self, run: Option<String>) -> Result<(RunId, Vec<RunId>), EngineError> {
        let runs = self.store.runs().await.map_err(fail)?;
        // GEO ranking runs have their own pages; these read agent runs.
        let ids = crate::runs::agent_runs(&runs);
        if let Some(run) = run.filter(|r| !r.is_empty()).map(RunId::from) {
            if !ids.contains(&run) {
                return Err(EngineError::NotFound(format!("run {run}")));
            }
            return Ok((run, ids));
        }
        match first_finished(self.store.as_ref(), &ids).await? {
            Some(id) => Ok((id, ids)),
            None => Err(EngineError::NotFound("a run with finished trials (launch one on the Runs page)".into())),
        }
    }

    /// The run's state as the caches see it. A request reads it once and hands it to every
    /// [`Self::scores_at`] / [`Self::aggregate_at`] it makes (two queries, one of them a
    /// count over the run's trials).
    pub async fn fingerprint(&self, run: &RunId) -> Result<Fingerprint, EngineError> {
        let p = self.store.progress(run).await.map_err(fail)?;
        Ok((p.done + p.error, self.store.label_generation().await.map_err(fail)?, false))
    }

    /// [`Self::fingerprint`] at the point a page's `as_of=` names (the current one when it
    /// names none). A generation past the newest is refused.
    pub async fn fingerprint_as_of(&self, run: &RunId, as_of: Option<&str>) -> Result<Fingerprint, EngineError> {
        let (finished, newest, _) = self.fingerprint(run).await?;
        let Some(value) = as_of.filter(|v| !v.trim().is_empty()) else { return Ok((finished, newest, false)) };
        let generation = match as_of::parse(value)? {
            Ok(g) if g > newest => {
                return Err(EngineError::Invalid {
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
    pub async fn as_of_view(&self, runs: &[&RunId], key: Fingerprint) -> Result<vocab::AsOf, EngineError> {
        as_of::view(self.store.as_ref(), runs, key).await
    }

    /// The run's scores with human labels applied, scoring new trials first.
    pub async fn scores(&self, run: &RunId) -> Result<Arc<Vec<TrialScore>>, EngineError> {
        self.scores_at(run, self.fingerprint(run).await?).await
    }

    /// [`Self::scores`] for a fingerprint already read.
    pub async fn scores_at(&self, run: &RunId, key: Fingerprint) -> Result<Arc<Vec<TrialScore>>, EngineError> {
        let slot = slot_of(run, key);
        if let Some((k, s)) = self.lock_cache().scores.get(&slot)
            && *k == key
        {
            return Ok(s.clone());
        }
        let gate = self.scoring_gate(run);
        let _scoring = gate.lock().await;
        // Someone may have scored while this request waited.
        if let Some((k, s)) = self.lock_cache().scores.get(&slot)
            && *k == key
        {
            return Ok(s.clone());
        }
        let running = || self.progress.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let progress = |done: usize, total: usize| {
            running().insert(run.clone(), (done, total));
        };
        // People's labels up to the generation of the key, pinned or not: labels added while
        // the run is scored wait for the next key. The pages read figures only (a trial's
        // page reads its own stored score, claims and all), so the detail is not kept.
        let scored =
            score::score_run_as_of(&self.store, &self.world, run, &self.judge, &progress, (Some(key.1), Keep::Figures))
                .await;
        running().remove(run);
        let scores = Arc::new(scored.map_err(fail)?.0);
        self.keep_pinned(run, key);
        self.lock_cache().scores.insert(slot, (key, scores.clone()));
        Ok(scores)
    }

    /// The gate a run's scoring goes through, one scoring at a time: while someone holds it,
    /// the run is not scored and its pages answer with their progress line.
    pub fn scoring_gate(&self, run: &RunId) -> Arc<tokio::sync::Mutex<()>> {
        self.scoring.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(run.clone()).or_default().clone()
    }

    /// Before figures of a pinned generation are cached, those of the run's other pinned
    /// generations go: links to many generations cost a scoring each, not memory.
    fn keep_pinned(&self, run: &RunId, key: Fingerprint) {
        if !key.2 {
            return;
        }
        let other = |(r, g): &Slot| r == run && g.is_some_and(|g| g != key.1);
        let mut cache = self.lock_cache();
        cache.scores.retain(|s, _| !other(s));
        cache.aggregates.retain(|k, _| !other(&k.0));
        cache.reports.retain(|s, _| !other(s));
    }

    fn lock_cache(&self) -> std::sync::MutexGuard<'_, Cache> {
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
        work: impl Future<Output = Result<(), EngineError>> + Send + 'static,
        empty: impl FnOnce() -> Result<T, EngineError>,
    ) -> Result<(T, Option<Pending>), EngineError> {
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
    ) -> Result<(Arc<Aggregate>, Option<Pending>), EngineError> {
        let ck = aggregate_key(run, key, by, utility, metrics);
        let me = self.me.upgrade().ok_or(EngineError::Internal)?;
        let (job_run, job_by, job_metrics) = (run.clone(), ck.1.clone(), ck.3.clone());
        let work = async move {
            let by: Vec<&str> = job_by.iter().map(String::as_str).collect();
            me.aggregate_at(&job_run, key, &by, utility, &job_metrics).await.map(|_| ())
        };
        let cached = |fresh: bool| {
            self.lock_cache().aggregates.get(&ck).filter(|(k, ..)| !fresh || *k == key).map(|(_, a, _)| a.clone())
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
    ) -> Result<(Arc<Vec<TrialScore>>, Option<Pending>), EngineError> {
        let (me, job_run) = (self.me.upgrade().ok_or(EngineError::Internal)?, run.clone());
        let work = async move { me.scores_at(&job_run, key).await.map(|_| ()) };
        self.slot_ready("scores", run, key, |c| &c.scores, work, || Ok(Arc::default())).await
    }

    /// [`Self::report_at`] for a page: the report at `key`, or while it is computed the one
    /// from before (else an empty one) with the progress.
    pub async fn report_ready(
        &self,
        run: &RunId,
        key: Fingerprint,
    ) -> Result<(Arc<vocab::ReportView>, Option<Pending>), EngineError> {
        let (me, job_run) = (self.me.upgrade().ok_or(EngineError::Internal)?, run.clone());
        let work = async move { me.report_at(&job_run, key).await.map(|_| ()) };
        self.slot_ready("report", run, key, |c| &c.reports, work, || report_view(&[], run).map(Arc::new)).await
    }

    /// A value cached per slot (a run's scores or report) for a page, by [`Self::ready`]:
    /// `cache` picks its map.
    async fn slot_ready<T>(
        &self,
        what: &str,
        run: &RunId,
        key: Fingerprint,
        cache: fn(&Cache) -> &SlotMap<T>,
        work: impl Future<Output = Result<(), EngineError>> + Send + 'static,
        empty: impl FnOnce() -> Result<Arc<T>, EngineError>,
    ) -> Result<(Arc<T>, Option<Pending>), EngineError> {
        let slot = slot_of(run, key);
        let cached = |fresh: bool| {
            cache(&self.lock_cache()).get(&slot).filter(|(k, _)| !fresh || *k == key).map(|(_, v)| v.clone())
        };
        self.ready(format!("{what} {run} at {key:?}"), run, cached, work, empty).await
    }

    /// When the aggregate of these arguments was computed (ms since the epoch), if it is
    /// cached.
    pub fn computed_at(
        &self,
        run: &RunId,
        key: Fingerprint,
        by: &[&str],
        utility: Metric,
        metrics: &[Metric],
    ) -> Option<i64> {
        self.lock_cache().aggregates.get(&aggregate_key(run, key, by, utility, metrics)).map(|(.., at)| *at)
    }

    /// The scores cached for `run` in the slot of `key` at any state (none when never
    /// computed).
    pub fn scores_cached(&self, run: &RunId, key: Fingerprint) -> Arc<Vec<TrialScore>> {
        self.lock_cache().scores.get(&slot_of(run, key)).map(|(_, s)| s.clone()).unwrap_or_default()
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
    ) -> Result<Arc<Aggregate>, EngineError> {
        let ck = aggregate_key(run, key, by, utility, metrics);
        if let Some((k, a, _)) = self.lock_cache().aggregates.get(&ck)
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
        self.lock_cache().aggregates.insert(ck, (key, agg.clone(), crate::db::now_ms()));
        Ok(agg)
    }
}

impl Engine {
    /// The run's report at the fingerprint `key`, computed (and cached) when cold.
    pub async fn report_at(&self, run: &RunId, key: Fingerprint) -> Result<Arc<vocab::ReportView>, EngineError> {
        let slot = slot_of(run, key);
        if let Some((k, v)) = self.lock_cache().reports.get(&slot)
            && *k == key
        {
            return Ok(v.clone());
        }
        let scores = self.scores_at(run, key).await?;
        let run_id = run.clone();
        // The aggregate is CPU work: keep it off the async workers.
        let view = tokio::task::spawn_blocking(move || report_view(&scores, &run_id)).await.map_err(fail)??;
        let view = Arc::new(view);
        self.lock_cache().reports.insert(slot, (key, view.clone()));
        Ok(view)
    }
}
