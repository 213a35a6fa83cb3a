//! Cold computations behind pages (scoring a run's new trials, a bootstrap) run as
//! background jobs. A page waits a moment for its job, then answers with what is ready and
//! a progress line; the browser asks again and finds the result in the cache. Two pages
//! asking for the same thing share one job.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use app::error::AppError;
use tokio::sync::watch;

type Outcome = Option<Result<(), AppError>>;

/// The jobs running now, by name.
pub struct Jobs {
    running: Arc<Mutex<HashMap<String, watch::Receiver<Outcome>>>>,
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
        Jobs { running: Arc::default(), wait }
    }

    /// Starts `work` under `name` unless a job of that name is running, then waits for
    /// that job up to the page's wait. `Ok(true)`: it finished (its result is in whatever
    /// cache it fills); `Ok(false)`: still running; `Err`: it failed, with its error.
    pub async fn run_or_wait<F>(&self, name: &str, work: F) -> Result<bool, AppError>
    where
        F: Future<Output = Result<(), AppError>> + Send + 'static,
    {
        let mut outcome = {
            let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(rx) = running.get(name) {
                rx.clone()
            } else {
                let (tx, rx) = watch::channel(None);
                running.insert(name.to_string(), rx.clone());
                let leave = Leave { running: self.running.clone(), name: name.to_string() };
                tokio::spawn(async move {
                    let result = work.await;
                    drop(leave);
                    let _ = tx.send(Some(result));
                });
                rx
            }
        };
        match tokio::time::timeout(self.wait, outcome.wait_for(Option::is_some)).await {
            Err(_) => Ok(false),
            Ok(Ok(done)) => done.clone().unwrap_or(Err(AppError::Internal)).map(|()| true),
            // The task ended without a result: it panicked (logged by the runtime).
            Ok(Err(_)) => Err(AppError::Internal),
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

    #[tokio::test]
    async fn a_slow_job_answers_later_and_is_shared_then_cleared() {
        let jobs = Jobs::new(Duration::from_millis(20));
        let (go, gate) = tokio::sync::oneshot::channel::<()>();
        let starts = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = starts.clone();
        let work = async move {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            gate.await.map_err(|_| AppError::Internal)
        };
        assert_eq!(jobs.run_or_wait("a", work).await, Ok(false), "not done within the wait");
        assert!(jobs.is_running("a"));
        // A second page asking joins the running job instead of starting another.
        let again = async { Err(AppError::Conflict("must not run".into())) };
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

    #[tokio::test]
    async fn a_failing_job_reports_its_error_and_a_panic_is_internal() {
        let jobs = Jobs::new(Duration::from_secs(5));
        let failed = jobs.run_or_wait("f", async { Err(AppError::NotFound("run x".into())) }).await;
        assert_eq!(failed, Err(AppError::NotFound("run x".into())));
        let panicked = jobs.run_or_wait("p", async { panic!("boom") }).await;
        assert_eq!(panicked, Err(AppError::Internal));
        assert!(!jobs.is_running("p"), "a panicked job leaves the list");
        assert_eq!(jobs.run_or_wait("p", async { Ok(()) }).await, Ok(true), "and can run again");
    }
}
