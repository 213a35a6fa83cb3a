//! The runs this process executes in the background: launched from the dashboard or left
//! active by an earlier process, supervised, and drained when the process stops.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::db::{RunStatus, Store, now_ms};
use crate::env::World;
use crate::runs::PoolOptions;

/// Starts runs in the background and stops them together.
pub struct Executor {
    pub store: Arc<dyn Store>,
    pub world: Arc<World>,
    pub insights: Arc<super::insights::InsightsService>,
    pub pulse: Arc<super::pulse::Pulse>,
    /// How long a claim on a trial lasts without a heartbeat.
    pub lease: Duration,
    stop: CancellationToken,
    tracker: TaskTracker,
}

impl Executor {
    pub fn new(
        store: Arc<dyn Store>,
        world: Arc<World>,
        insights: Arc<super::insights::InsightsService>,
        pulse: Arc<super::pulse::Pulse>,
        lease: Duration,
    ) -> Executor {
        Executor { store, world, insights, pulse, lease, stop: CancellationToken::new(), tracker: TaskTracker::new() }
    }

    /// Executes a run's queued trials in the background of this process, then replays its
    /// exposed trials and scores it, so that its first leaderboard view finds the scores.
    pub fn spawn(&self, run_id: app::model::RunId, concurrency: usize) {
        let (store, world, insights, pulse) =
            (self.store.clone(), self.world.clone(), self.insights.clone(), self.pulse.clone());
        let options = PoolOptions { concurrency, lease: self.lease, stop: self.stop.clone(), slice: None };
        let stop = self.stop.clone();
        self.tracker.spawn(async move {
            // Each finished trial wakes the progress hub.
            let poke = pulse.clone();
            let finished = Arc::new(move |_: &crate::db::TrialRow, _: &crate::db::TrialEnd| poke.poke());
            if let Err(e) = crate::runs::execute(store.clone(), world.clone(), &run_id, options, finished).await {
                tracing::error!(run = %run_id, "run stopped: {e:#}");
                return;
            }
            if stop.is_cancelled() {
                return;
            }
            if let Err(e) = crate::runs::replay::replay_exposed(store, &world, &run_id).await {
                tracing::error!(run = %run_id, "replaying exposed trials: {e:#}");
            }
            if let Err(e) = insights.scores(&run_id).await {
                tracing::warn!(run = %run_id, "scoring the finished run: {e}");
            }
        });
    }

    /// Picks up what an earlier process left: in every active run, trials whose lease
    /// expired go back to the queue, and a run with trials left (queued, or running under
    /// a lease that has yet to expire) is executed here. Another live process on the same
    /// database may be working on it too: the queue hands each trial to one worker.
    pub async fn resume(&self, concurrency: usize) -> anyhow::Result<()> {
        // Never a reason not to start: a failure here is named and tried again next start.
        match crate::runs::import::settle_interrupted_imports(&*self.store, now_ms()).await {
            Ok(settled) => {
                for run_id in settled {
                    tracing::warn!(run = %run_id, "cancelled a run its import left half-stored");
                }
            }
            Err(e) => tracing::warn!("looking for runs left by interrupted imports: {e:#}"),
        }
        // Runs whose spec does not read are left alone (their pages and commands name them).
        let active = self.store.runs().await?.into_iter().filter(|r| r.status == RunStatus::Active);
        let resumable = active.filter_map(|r| crate::runs::RunKind::logged(&r).map(|kind| (r, kind)));
        for (run, kind) in resumable.filter(|(_, kind)| kind.is_executed()) {
            let requeued = self.store.requeue_expired(&run.run_id, now_ms()).await?;
            let p = self.store.progress(&run.run_id).await?;
            if p.executable_left() > 0 {
                tracing::info!(run = %run.run_id, queued = p.queued, running = p.running, requeued, "resuming a run");
                // At the pace it was launched with, where the run says.
                let pace = kind.concurrency().unwrap_or(concurrency);
                self.spawn(run.run_id, pace);
            } else {
                // Every trial finished (the last one's process died before it closed the
                // run, or an expired lease gave the trial up): the run is done.
                crate::runs::close_finished(self.store.as_ref(), &run.run_id).await;
            }
        }
        Ok(())
    }

    /// Stops every run of this process: no new claims, and each running trial goes back to
    /// the queue. Waits at most `within`; `false` when some worker had not stopped by then.
    pub async fn drain(&self, within: Duration) -> bool {
        self.stop.cancel();
        self.tracker.close();
        tokio::time::timeout(within, self.tracker.wait()).await.is_ok()
    }
}
