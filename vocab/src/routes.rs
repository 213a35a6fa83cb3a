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

/// The leaderboard of a run at a decision tier, pinned `as_of` a label generation if given.
pub fn leaderboard_at(run: &str, tier: &str, as_of: Option<String>) -> String {
    format!(
        "/leaderboard{}",
        query(&[("run", Some(run.to_string())), ("tier", Some(tier.to_string())), ("as_of", as_of)])
    )
}

/// The leaderboard under its view's choices (each left out when absent).
pub fn leaderboard_view(
    run: Option<String>,
    tier: Option<String>,
    by: Option<String>,
    sort: Option<String>,
    as_of: Option<String>,
) -> String {
    format!("/leaderboard{}", query(&[("run", run), ("tier", tier), ("by", by), ("sort", sort), ("as_of", as_of)]))
}

/// The team page of a run at a decision tier, pinned `as_of` a label generation if given.
pub fn team_at(run: &str, tier: &str, as_of: Option<String>) -> String {
    format!("/team{}", query(&[("run", Some(run.to_string())), ("tier", Some(tier.to_string())), ("as_of", as_of)]))
}

/// The heatmap of a run for a metric by a field, pinned `as_of` a label generation if given.
pub fn heatmaps_at(run: &str, metric: &str, by: &str, as_of: Option<String>) -> String {
    let pairs = [
        ("run", Some(run.to_string())),
        ("metric", Some(metric.to_string())),
        ("by", Some(by.to_string())),
        ("as_of", as_of),
    ];
    format!("/heatmaps{}", query(&pairs))
}

/// A run's page under its trial list's filters (query pairs, the page among them).
pub fn run_view(run: &str, filters: &[(&str, Option<String>)]) -> String {
    format!("/runs/{run}{}", query(filters))
}

/// A trial's trajectory opened at a turn, on the page of turns that holds it.
pub fn trial_turn(run: &str, trial: &str, page: usize, turn: usize) -> String {
    self::trial(run, trial, &query(&[("page", Some(page.to_string())), ("turn", Some(turn.to_string()))]))
}

/// The robustness plot of a run at one level, pinned `as_of` a label generation if given.
pub fn robustness_at(run: &str, level: &str, as_of: Option<String>) -> String {
    format!(
        "/robustness{}",
        query(&[("run", Some(run.to_string())), ("level", Some(level.to_string())), ("as_of", as_of)])
    )
}

/// The report of a run, pinned `as_of` a label generation if given.
pub fn report(run: &str, as_of: Option<String>) -> String {
    format!("/report{}", query(&[("run", Some(run.to_string())), ("as_of", as_of)]))
}

/// The labelling queue under a filter (its query pairs, the run among them).
pub fn annotate_queue(filter: &[(&str, Option<String>)]) -> String {
    format!("/annotate{}", query(filter))
}

/// The GEO ranking report of a run, one variant's targets open (both names given) and the
/// detection of a judge shown (`judge` given).
pub fn geo_at(run: &str, variant: Option<(&str, &str)>, judge: Option<String>) -> String {
    let (ranker, method) = variant.map_or((None, None), |(r, m)| (Some(r.to_string()), Some(m.to_string())));
    format!(
        "/geo{}",
        query(&[("run", Some(run.to_string())), ("ranker", ranker), ("method", method), ("judge", judge)])
    )
}

/// The comparison of two runs or configurations (`RUN` or `RUN:CONFIG`), pinned `as_of`.
pub fn compare(a: &str, b: &str, as_of: Option<String>) -> String {
    format!("/compare{}", query(&[("a", Some(a.to_string())), ("b", Some(b.to_string())), ("as_of", as_of)]))
}

/// Two trials side by side, at a page of their turns.
pub fn compare_trials(a: &str, b: &str, page: Option<usize>) -> String {
    let page = page.map(|p| p.to_string());
    format!("/compare/trials{}", query(&[("a", Some(a.to_string())), ("b", Some(b.to_string())), ("page", page)]))
}

/// The task list under a filter (its query pairs).
pub fn tasks(filter: &[(&str, Option<String>)]) -> String {
    format!("/tasks{}", query(filter))
}

/// A metric's or label's entry on the definitions page.
pub fn definition(key: &str) -> String {
    format!("/definitions#{key}")
}

/// A download (`/api/export/FILE`) under a page's query (as [`query`] writes it).
pub fn export(file: &str, query: &str) -> String {
    format!("/api/export/{file}{query}")
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
        assert_eq!(compare_trials("a", "b", None), "/compare/trials?a=a&b=b");
        assert_eq!(geo_at("g", Some(("bm25", "tap@m>r")), None), "/geo?run=g&ranker=bm25&method=tap%40m%3Er");
        assert_eq!(leaderboard_at("r", "default", Some("7".into())), "/leaderboard?run=r&tier=default&as_of=7");
    }
}
