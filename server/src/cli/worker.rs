//! `mirage worker`: executes the queued trials of active runs from the shared queue, pass
//! after pass, beside other workers and servers.

use std::sync::Arc;

use crate::db::{RunStatus, Store};
use vocab::RunId;

/// `mirage worker`.
#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    /// Only this run (default: every active run).
    #[arg(long)]
    pub run: Option<RunId>,
    /// Trials executed at once by this process.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Stop when no active run has work left instead of waiting for new runs.
    #[arg(long)]
    pub once: bool,
    /// Seconds between looks for new work.
    #[arg(long, default_value_t = 2)]
    pub poll_secs: u64,
    /// Seconds a claimed trial stays reserved without a heartbeat.
    #[arg(long, default_value_t = 30, hide = true)]
    pub lease_secs: u64,
    /// How the worker shares itself between active runs: `round-robin` takes `--slice`
    /// trials of each run with work in turn (a small run launched from the dashboard is not
    /// held up behind a large one); `oldest-first` finishes each run before the next.
    #[arg(long, value_enum, default_value_t = RunOrder::RoundRobin)]
    pub order: RunOrder,
    /// Trials taken from one run before the next run's turn (`--order round-robin`).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..))]
    pub slice: u64,
}

/// See [`WorkerArgs::order`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RunOrder {
    RoundRobin,
    OldestFirst,
}

/// Executes the queued trials of active runs until none is left (`once`) or forever.
pub(super) async fn worker(store: Arc<dyn Store>, args: WorkerArgs) -> anyhow::Result<()> {
    let WorkerArgs { run: only, concurrency, once, poll_secs, lease_secs, order, slice } = args;
    let stop = super::serve::stop_on_signal();
    let options = crate::runs::PoolOptions {
        concurrency,
        lease: std::time::Duration::from_secs(lease_secs.max(1)),
        stop: stop.clone(),
        slice: (order == RunOrder::RoundRobin).then(|| usize::try_from(slice).unwrap_or(usize::MAX)),
    };
    let poll = std::time::Duration::from_secs(poll_secs.max(1));

    if let Some(id) = &only {
        store.run(id).await?;
    }
    let on_finish: crate::runs::OnFinish = Arc::new(|trial, end| match end {
        crate::db::TrialEnd::Error(reason) => tracing::warn!(trial.id = %trial.trial_id, %reason, "trial errored"),
        crate::db::TrialEnd::Done { .. } => tracing::info!(trial.id = %trial.trial_id, "trial done"),
        crate::db::TrialEnd::Cancelled => tracing::info!(trial.id = %trial.trial_id, "trial cancelled with its run"),
    });
    let mut worker = Worker { store, only, options, on_finish, world: None, skipped: Default::default() };
    loop {
        worker.settle_imports().await;
        let Some(worked) = worker.pass().await? else { return Ok(()) };
        if (once && worked == 0) || stop.is_cancelled() {
            return Ok(());
        }
        if worked == 0 {
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                () = stop.cancelled() => return Ok(()),
            }
        }
    }
}

/// What `mirage worker` keeps from one pass over the runs to the next.
struct Worker {
    store: Arc<dyn Store>,
    /// The one run it works on (`--run`), if any.
    only: Option<RunId>,
    options: crate::runs::PoolOptions,
    on_finish: crate::runs::OnFinish,
    /// The world at a task count: rebuilt when tasks were imported since.
    world: Option<(i64, Arc<crate::env::World>)>,
    /// Runs this worker cannot execute (an agent it cannot build, say): named once, then left
    /// to the workers that can, instead of ending this one.
    skipped: std::collections::HashSet<RunId>,
}

impl Worker {
    /// Cancels the runs that interrupted imports left half-stored. Never a reason to stop: a
    /// failure is named and tried again on the next pass.
    async fn settle_imports(&self) {
        match crate::runs::import::settle_interrupted_imports(&*self.store, crate::db::now_ms()).await {
            Ok(settled) => {
                for run_id in settled {
                    eprintln!(
                        "worker: run {run_id} was left half-stored by an interrupted import; it is now cancelled"
                    );
                }
            }
            Err(e) => eprintln!("worker: looking for runs left by interrupted imports: {e:#}"),
        }
    }

    /// One pass over the active runs it may execute, oldest first (the store lists newest
    /// first); returns how many made progress, or `None` when it is told to stop.
    async fn pass(&mut self) -> anyhow::Result<Option<usize>> {
        let mut worked = 0;
        for run in self.store.runs().await?.into_iter().rev() {
            if self.options.stop.is_cancelled() {
                return Ok(None);
            }
            if run.status != RunStatus::Active
                || self.only.as_ref().is_some_and(|id| *id != run.run_id)
                || self.skipped.contains(&run.run_id)
            {
                continue;
            }
            match crate::runs::RunKind::of(&run) {
                Ok(kind) if kind.is_executed() => {}
                Ok(_) => continue,
                // Named once, then left alone: what it is cannot be told.
                Err(e) => {
                    eprintln!("worker: {e}; skipped");
                    self.skipped.insert(run.run_id.clone());
                    continue;
                }
            }
            let p = self.store.progress(&run.run_id).await?;
            if p.executable_left() == 0 {
                // Finished already (its last trial's process died before closing it, or an
                // expired lease gave the trial up): done, if nothing is queued or running.
                crate::runs::close_finished(self.store.as_ref(), &run.run_id).await;
                continue;
            }
            let world = self.world().await?;
            eprintln!("worker: run {} ({} queued)", run.run_id, p.queued);
            let executed = crate::runs::execute(
                self.store.clone(),
                world,
                &run.run_id,
                self.options.clone(),
                self.on_finish.clone(),
            )
            .await;
            if let Err(e) = executed {
                if self.only.is_some() {
                    return Err(e);
                }
                eprintln!("worker: run {} skipped: {e:#}", run.run_id);
                self.skipped.insert(run.run_id.clone());
                continue;
            }
            // Worked only if trials finished meanwhile (here or elsewhere): a turn that found
            // nothing to claim (trials waiting out a backoff, or held by others) lets the
            // worker sleep before it looks again.
            if self.store.progress(&run.run_id).await?.finished() > p.finished() {
                worked += 1;
            }
        }
        Ok(Some(worked))
    }

    /// The world of the stored tasks (tasks may have been imported since the last pass).
    async fn world(&mut self) -> anyhow::Result<Arc<crate::env::World>> {
        let count = self.store.task_count().await?;
        match &self.world {
            Some((n, w)) if *n == count => Ok(w.clone()),
            _ => {
                let w = Arc::new(crate::env::World::build(self.store.all_tasks().await?)?);
                self.world = Some((count, w.clone()));
                Ok(w)
            }
        }
    }
}
