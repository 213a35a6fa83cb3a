//! Cold computations behind pages (scoring a run's new trials, an aggregate) run as
//! background jobs. A page waits a moment for its job, then answers with what is ready and
//! a progress line; the browser asks again and finds the result in the cache. Two pages
//! asking for the same thing share one job.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::EngineError;
use futures::FutureExt;
use tokio::sync::watch;

type Outcome = Option<Result<(), EngineError>>;

/// The jobs running now, by name.
pub struct Jobs {
    running: Arc<Mutex<HashMap<String, watch::Receiver<Outcome>>>>,
    /// Jobs that failed when no page was waiting: the next page asking gets the error
    /// (once; the one after that starts the job again).
    failed: Arc<Mutex<HashMap<String, EngineError>>>,
    /// How long a page waits for a job before answering without its result.
    wait: Duration,
}

/// Takes a finished (or panicked) job off the list, whatever way its task ends.
struct Leave {
    running: Arc<Mutex<HashMap<String, watch::Receiver<Outcome>>>>,
    name: String,
}

impl Drop for Leave {
    fn drop(&mut self) {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.name);
    }
}

impl Jobs {
    pub fn new(wait: Duration) -> Jobs {
        Jobs { running: Arc::default(), failed: Arc::default(), wait }
    }

    /// Starts `work` under `name` unless a job of that name is running, then waits for
    /// that job up to the page's wait. `Ok(true)`: it finished (its result is in whatever
    /// cache it fills); `Ok(false)`: still running; `Err`: it failed, with its error.
    pub async fn run_or_wait<F>(&self, name: &str, work: F) -> Result<bool, EngineError>
    where
        F: Future<Output = Result<(), EngineError>> + Send + 'static,
    {
        if let Some(e) = self.failed.lock().unwrap_or_else(PoisonError::into_inner).remove(name) {
            return Err(e);
        }
        let (mut outcome, job) = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(rx) = running.get(name) {
                (rx.clone(), None)
            } else {
                let (tx, rx) = watch::channel(None);
                running.insert(name.to_string(), rx.clone());
                let leave = Leave { running: self.running.clone(), name: name.to_string() };
                let failed = self.failed.clone();
                let job = async move {
                    // A panic is a failure like any other (the panic hook has printed it).
                    let result =
                        std::panic::AssertUnwindSafe(work).catch_unwind().await.unwrap_or(Err(EngineError::Internal));
                    if let Err(e) = &result
                        && tx.receiver_count() <= 1
                    {
                        // Nobody waits but the list's own receiver: keep it for the next.
                        failed.lock().unwrap_or_else(PoisonError::into_inner).insert(leave.name.clone(), e.clone());
                    }
                    drop(leave);
                    let _ = tx.send(Some(result));
                };
                (rx, Some(job))
            }
        };
        // Spawned once the list is unlocked: a runtime shutting down drops the job at once,
        // and its `Leave` takes the lock.
        if let Some(job) = job {
            tokio::spawn(job);
        }
        // No wait means none: a job that happens to finish at once on another thread is
        // still read from the cache by the next request, so a page's answer does not hang
        // on a race.
        if self.wait.is_zero() {
            return Ok(false);
        }
        match tokio::time::timeout(self.wait, outcome.wait_for(Option::is_some)).await {
            Err(_) => Ok(false),
            Ok(Ok(done)) => done.clone().unwrap_or(Err(EngineError::Internal)).map(|()| true),
            // The task ended without sending a result (the runtime shut down).
            Ok(Err(_)) => Err(EngineError::Internal),
        }
    }

    /// Whether a job of this name is running.
    pub fn is_running(&self, name: &str) -> bool {
        self.running.lock().unwrap_or_else(PoisonError::into_inner).contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_slow_job_answers_later_and_is_shared_then_cleared() {
        let jobs = Jobs::new(Duration::from_millis(20));
        let (go, gate) = tokio::sync::oneshot::channel::<()>();
        let starts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = starts.clone();
        let work = async move {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            gate.await.map_err(|_| EngineError::Internal)
        };
        assert_eq!(jobs.run_or_wait("a", work).await, Ok(false), "not done within the wait");
        assert!(jobs.is_running("a"));
        // A second page asking joins the running job instead of starting another.
        let again = async { Err(EngineError::Conflict("must not run".into())) };
        assert_eq!(jobs.run_or_wait("a", again).await, Ok(false));
        go.send(()).expect("send");
        let jobs = Jobs { wait: Duration::from_secs(5), ..jobs };
        let joined = jobs.run_or_wait("a", async { Ok(()) }).await;
        assert!(joined.is_ok());
        assert_eq!(starts.load(std::sync::atomic::Ordering::SeqCst), 1);
        while jobs.is_running("a") {
            tokio::task::yield_now().await;
        }
    }

    // On a paused clock: the job's 50 ms and the page's 10 ms wait never race, however
    // loaded the machine.
    #[tokio::test(start_paused = true)]
    async fn a_job_failing_after_the_page_left_tells_the_next_page() {
        let jobs = Jobs::new(Duration::from_millis(10));
        let slow_failure = async {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Err(EngineError::NotFound("task t".into()))
        };
        assert_eq!(jobs.run_or_wait("s", slow_failure).await, Ok(false));
        while jobs.is_running("s") {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Not started again in a loop: the next page sees the failure.
        let again = async { Ok(()) };
        assert_eq!(jobs.run_or_wait("s", again).await, Err(EngineError::NotFound("task t".into())));
        let jobs = Jobs { wait: Duration::from_secs(5), ..jobs };
        assert_eq!(jobs.run_or_wait("s", async { Ok(()) }).await, Ok(true), "then it is tried again");
    }

    #[tokio::test]
    async fn a_failing_job_reports_its_error_and_a_panic_is_internal() {
        let jobs = Jobs::new(Duration::from_secs(5));
        let failed = jobs.run_or_wait("f", async { Err(EngineError::NotFound("run x".into())) }).await;
        assert_eq!(failed, Err(EngineError::NotFound("run x".into())));
        let panicked = jobs.run_or_wait("p", async { panic!("boom") }).await;
        assert_eq!(panicked, Err(EngineError::Internal));
        assert!(!jobs.is_running("p"), "a panicked job leaves the list");
        assert_eq!(jobs.run_or_wait("p", async { Ok(()) }).await, Ok(true), "and can run again");
    }
}
