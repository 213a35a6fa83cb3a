//! The dashboard's addresses, one function per page, so that every link to a page is built
//! the way its route reads it. Query values are percent-encoded and left out when empty;
//! ids in paths are Mirage's own (run and trial ids, task ids) and go in as they are.

use crate::LabelKind;

/// `?a=1&b=2` from pairs, leaving out absent and empty values (percent-encoded).
pub fn query(pairs: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_deref().filter(|v| !v.is_empty()).map(|v| format!("{k}={}", urlencoding::encode(v))))
        .collect();
    if parts.is_empty() { String::new() } else { format!("?{}", parts.join("&")) }
}

fn of_run(page: &str, run: &str) -> String {
    format!("{page}{}", query(&[("run", Some(run.to_string()))]))
}

/// A run's page.
pub fn run(run: &str) -> String {
    format!("/runs/{run}")
}

/// A run's page, its trials narrowed to one task.
pub fn run_task(run: &str, task: &str) -> String {
    format!("/runs/{run}{}", query(&[("task", Some(task.to_string()))]))
}

/// A trial's trajectory, `filters` (a query string, possibly empty) kept for stepping through
/// the list it was opened from.
pub fn trial(run: &str, trial: &str, filters: &str) -> String {
    format!("/runs/{run}/trials/{trial}{filters}")
}

/// A GEO ranking trial's page.
pub fn geo_trial(trial: &str) -> String {
    format!("/geo/trials/{trial}")
}

/// A task of the corpus.
pub fn task(task: &str) -> String {
    format!("/tasks/{task}")
}

/// The page about what trial `trial` worked on: its task's page for a Mirage task, the
/// trial's own ranking view for a GEO target, none for another harness's sample.
pub fn task_of(task: &crate::TaskRef, trial: &str) -> Option<String> {
    match task {
        crate::TaskRef::Mirage(id) => Some(self::task(id)),
        crate::TaskRef::Geo(_) => Some(geo_trial(trial)),
        crate::TaskRef::Foreign { .. } => None,
    }
}

/// The reasoning and decision grading form of a trial.
pub fn grade(trial: &str) -> String {
    format!("/grade/{trial}")
}

/// The labelling page of one label of a trial, without a queue filter.
pub fn label(trial: &str, kind: LabelKind) -> String {
    format!("/annotate/{trial}/{kind}")
}

/// The leaderboard of a run.
pub fn leaderboard(run: &str) -> String {
    of_run("/leaderboard", run)
}

/// The robustness plot of a run.
pub fn robustness(run: &str) -> String {
    of_run("/robustness", run)
}

/// The level-wise heatmaps of a run.
pub fn heatmaps(run: &str) -> String {
    of_run("/heatmaps", run)
}

/// The labelling queue of a run.
pub fn annotate(run: &str) -> String {
    of_run("/annotate", run)
}

/// The GEO ranking report of a run.
pub fn geo(run: &str) -> String {
    of_run("/geo", run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_encode_their_queries_and_leave_out_empty_values() {
        assert_eq!(leaderboard("run-1"), "/leaderboard?run=run-1");
        assert_eq!(robustness("a&b"), "/robustness?run=a%26b");
        assert_eq!(run_task("r", "inspect:x/y"), "/runs/r?task=inspect%3Ax%2Fy");
        assert_eq!(query(&[("a", None), ("b", Some(String::new()))]), "");
        assert_eq!(trial("r", "t", &query(&[("state", Some("done".into()))])), "/runs/r/trials/t?state=done");
        assert_eq!(label("t-1", LabelKind::Adoption), "/annotate/t-1/adoption");
    }
}
