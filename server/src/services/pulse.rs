//! One progress hub for the whole server: a single task looks at the store once a second —
//! at once when this process finishes a trial — and broadcasts the runs whose progress
//! changed. Every progress stream (SSE) and the search follower subscribe to it, so the
//! store is read once however many pages are open. Trials finished by other processes
//! (`mirage run`, `mirage worker`) are seen the same way, through the store: a cheap probe
//! (the latest finish, one index seek, and the runs' statuses) decides whether the counts
//! are read again (one query for every run). A run seen to finish is scored in the
//! background, wherever it ran, and so is, at start, a finished run never scored.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use app::model::{Counts, Progress, RunId};
use tokio::sync::{Notify, broadcast};

use crate::db::{RunStatus, Store};

/// How often the store is looked at when nothing wakes the hub earlier.
pub const TICK: Duration = Duration::from_secs(1);

/// The hub.
pub struct Pulse {
    tx: broadcast::Sender<Arc<Vec<Progress>>>,
    latest: RwLock<HashMap<RunId, Progress>>,
    wake: Notify,
}

impl Pulse {
    /// Starts the hub's task. `on_finished` is called (in the background) for each run seen
    /// to finish after the first look.
    pub fn start(store: Arc<dyn Store>, on_finished: Arc<dyn Fn(RunId) + Send + Sync>) -> Arc<Pulse> {
        let (tx, _) = broadcast::channel(64);
        let pulse = Arc::new(Pulse { tx, latest: RwLock::default(), wake: Notify::new() });
        let hub = pulse.clone();
        tokio::spawn(async move {
            let mut watch = Watch::default();
            loop {
                if let Err(e) = hub.tick(store.as_ref(), &mut watch, on_finished.as_ref()).await {
                    tracing::warn!("progress hub: {e:#}");
                }
                let _ = tokio::time::timeout(TICK, hub.wake.notified()).await;
            }
        });
        pulse
    }

    /// Changes from now on, as batches of the runs whose progress changed.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Vec<Progress>>> {
        self.tx.subscribe()
    }

    /// The last progress seen of every run.
    pub fn latest(&self) -> Vec<Progress> {
        self.latest.read().map(|l| l.values().cloned().collect()).unwrap_or_default()
    }

    /// A trial finished in this process: look at the store now rather than at the next tick.
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    async fn tick(
        &self,
        store: &dyn Store,
        watch: &mut Watch,
        on_finished: &(dyn Fn(RunId) + Send + Sync),
    ) -> anyhow::Result<()> {
        let runs = store.runs().await?;
        let statuses: HashMap<RunId, RunStatus> = runs.iter().map(|r| (r.run_id.clone(), r.status)).collect();
        let last = store.last_finish().await?;
        let active = runs.iter().any(|r| r.status == RunStatus::Active);
        if watch.looked && !active && last == watch.last && statuses == watch.statuses {
            return Ok(());
        }
        let since = crate::db::now_ms() - crate::runs::RATE_WINDOW_MS;
        // Only runs whose counts can have moved: active ones, new ones or ones whose status
        // changed, and ones last seen with trials still queued or running (a cancelled run's
        // running trials end later) or with a rate still decaying. A store of finished runs
        // is not grouped every second.
        let moving: Option<Vec<RunId>> = watch.looked.then(|| {
            let latest = self.latest.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            runs.iter()
                .filter(|r| {
                    r.status == RunStatus::Active
                        || watch.statuses.get(&r.run_id) != Some(&r.status)
                        || latest
                            .get(&r.run_id)
                            .is_none_or(|p| p.counts.queued + p.counts.running > 0 || p.per_minute > 0.0)
                })
                .map(|r| r.run_id.clone())
                .collect()
        });
        let overview = store.run_overview(since, moving.as_deref()).await?;
        let mut changed = Vec::new();
        {
            let mut latest = self.latest.write().map_err(|_| anyhow::anyhow!("progress hub poisoned"))?;
            for o in overview {
                let report = crate::runs::ProgressReport::new(o.run.trials_total, o.progress, o.recent);
                let c = report.counts;
                let p = Progress {
                    run_id: o.run.run_id.clone(),
                    status: o.run.status,
                    total: report.total,
                    counts: Counts {
                        queued: c.queued,
                        running: c.running,
                        done: c.done,
                        error: c.error,
                        cancelled: c.cancelled,
                    },
                    per_minute: report.per_minute,
                    eta_secs: report.eta_secs,
                };
                if latest.get(&p.run_id) != Some(&p) {
                    latest.insert(p.run_id.clone(), p.clone());
                    changed.push(p);
                }
            }
        }
        for run in runs.iter().filter(|r| r.status == RunStatus::Done) {
            match crate::runs::RunKind::of(run) {
                Ok(crate::runs::RunKind::Agent(_) | crate::runs::RunKind::Imported(_)) => {}
                Ok(crate::runs::RunKind::Geo(_)) => continue,
                Err(e) => {
                    tracing::error!("{e}");
                    continue;
                }
            }
            let finished_now = watch.looked && watch.statuses.get(&run.run_id) != Some(&RunStatus::Done);
            // At the first look: runs that finished while no server watched and were never scored.
            if finished_now || (!watch.looked && store.score_judges(&run.run_id).await?.is_empty()) {
                on_finished(run.run_id.clone());
            }
        }
        *watch = Watch { looked: true, last, statuses };
        if !changed.is_empty() {
            // Nobody listening is not an error.
            let _ = self.tx.send(Arc::new(changed));
        }
        Ok(())
    }
}

/// What the hub saw last time.
#[derive(Default)]
struct Watch {
    looked: bool,
    last: Option<(i64, String)>,
    statuses: HashMap<RunId, RunStatus>,
}
