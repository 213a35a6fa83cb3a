//! One kind of run per product, read once from a run's stored spec.
//!
//! The store keeps every run's spec as one JSON shape ([`RunSpec`]); what the run *is* —
//! agents through tasks, rankers over GEO lists, or trials read from a file — is decided
//! here, once, and every caller matches on the answer instead of re-reading the JSON.

use vocab::RunId;

use super::RunSpec;
use crate::db::RunRow;
use crate::geo::plan::GeoSpec;

/// What a stored run is.
#[derive(Clone, Debug, PartialEq)]
pub enum RunKind {
    /// Agents (built-in, model endpoints, or outside agents over HTTP) through Mirage tasks.
    Agent(RunSpec),
    /// Rankers over GEO lists: its trials rank a list once per method and target.
    Geo(GeoRun),
    /// Trials read from a file (`mirage runs import`): stored, never executed.
    Imported(ImportedRun),
}

/// A GEO ranking run.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoRun {
    /// What the run ranks, with which rankers and methods (boxed: it is most of the run).
    pub geo: Box<GeoSpec>,
    /// The envelope every run has (rankers as its agents, methods as its levels), read by
    /// the run lists and the cost table.
    pub run: RunSpec,
}

/// A run read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct ImportedRun {
    /// `imported:FORMAT`, or `imported` for imports from before the format was stamped.
    pub origin: String,
    pub run: RunSpec,
}

/// A stored spec that reads as no kind of run.
#[derive(Debug, thiserror::Error)]
#[error("run {run}: its stored spec is unreadable: {reason}")]
pub struct Unreadable {
    pub run: RunId,
    pub reason: String,
}

impl RunKind {
    /// The kind of a stored run, or an error naming it when its spec does not read (never
    /// taken for one kind or another).
    pub fn of(run: &RunRow) -> Result<RunKind, Unreadable> {
        RunKind::parse(&run.spec).map_err(|e| Unreadable { run: run.run_id.clone(), reason: e.to_string() })
    }

    /// The kind a spec's JSON describes.
    pub fn parse(spec: &str) -> Result<RunKind, serde_json::Error> {
        let mut run: RunSpec = serde_json::from_str(spec)?;
        if let Some(geo) = run.geo.take() {
            return Ok(RunKind::Geo(GeoRun { geo: Box::new(geo), run }));
        }
        match run.origin.take() {
            Some(origin) => Ok(RunKind::Imported(ImportedRun { origin, run })),
            // Imports from before the origin was stamped said so only in their task filter.
            None if run.tasks.starts_with("imported from") => {
                Ok(RunKind::Imported(ImportedRun { origin: "imported".to_string(), run }))
            }
            None => Ok(RunKind::Agent(run)),
        }
    }

    /// The spec every kind of run has (for a GEO run: rankers as agents, methods as levels).
    pub fn envelope(&self) -> &RunSpec {
        match self {
            RunKind::Agent(run) | RunKind::Geo(GeoRun { run, .. }) | RunKind::Imported(ImportedRun { run, .. }) => run,
        }
    }

    /// The kind of a stored run, or `None` with its error logged: for the loops over every
    /// run (resuming, working, settling imports), which leave a run they cannot read alone
    /// rather than guess what it is.
    pub fn logged(run: &RunRow) -> Option<RunKind> {
        RunKind::of(run).map_err(|e| tracing::error!("{e}; left alone")).ok()
    }

    /// [`RunKind::envelope`], owned.
    pub fn into_envelope(self) -> RunSpec {
        match self {
            RunKind::Agent(run) | RunKind::Geo(GeoRun { run, .. }) | RunKind::Imported(ImportedRun { run, .. }) => run,
        }
    }

    /// The kind of the stored run `run_id`.
    pub async fn load(store: &dyn crate::db::Store, run_id: &RunId) -> anyhow::Result<RunKind> {
        Ok(RunKind::of(&store.run(run_id).await?)?)
    }

    /// The run, if its trials are agent trajectories (executed or imported); a GEO ranking
    /// run is refused, naming the command that reads it.
    pub fn agent_only(self, run_id: &RunId) -> anyhow::Result<RunKind> {
        match self {
            RunKind::Geo(_) => Err(geo_refused(run_id)),
            agent => Ok(agent),
        }
    }

    /// The spec of a run whose trials are agent trajectories; a GEO ranking run is refused.
    pub fn into_agent(self, run_id: &RunId) -> anyhow::Result<RunSpec> {
        match self {
            RunKind::Agent(run) | RunKind::Imported(ImportedRun { run, .. }) => Ok(run),
            RunKind::Geo(_) => Err(geo_refused(run_id)),
        }
    }

    /// Whether workers execute the run's trials (an import's trials are stored, not run).
    pub fn is_executed(&self) -> bool {
        match self {
            RunKind::Agent(_) | RunKind::Geo(_) => true,
            RunKind::Imported(_) => false,
        }
    }

    /// Where a trial of this run by `agent` came from (see `TrialScore::provenance`): an
    /// imported file is self-reported whatever its lines call their agents (an `external:`
    /// name included).
    pub fn provenance(&self, agent: &str) -> String {
        match self {
            RunKind::Imported(ImportedRun { origin, .. }) => origin.clone(),
            RunKind::Agent(_) if super::external::is_external(agent) => "http".to_string(),
            RunKind::Agent(_) | RunKind::Geo(_) => "executed".to_string(),
        }
    }

    /// Trials at once the run was launched with from the dashboard, if it says.
    pub fn concurrency(&self) -> Option<usize> {
        match self {
            RunKind::Agent(run) | RunKind::Geo(GeoRun { run, .. }) => run.concurrency.filter(|n| *n > 0),
            RunKind::Imported(_) => None,
        }
    }

    /// How many annotators must agree before a disputed label overrides the automatic one.
    pub fn annotators(&self) -> usize {
        match self {
            RunKind::Agent(run) | RunKind::Imported(ImportedRun { run, .. }) if run.annotators > 0 => run.annotators,
            RunKind::Agent(_) | RunKind::Imported(_) | RunKind::Geo(_) => super::default_annotators(),
        }
    }
}

/// The ids of the agent runs among `runs` (GEO ranking runs left out), in order.
pub fn agent_runs(runs: &[RunRow]) -> Vec<RunId> {
    runs_of_kind(runs, |kind| !matches!(kind, RunKind::Geo(_)))
}

/// The ids of the runs among `runs` whose kind `keep` accepts, in order. A run whose spec is
/// unreadable is left out of such lists and logged by name, so one broken run does not take
/// every page down; its own pages and commands fail naming it.
pub fn runs_of_kind(runs: &[RunRow], keep: impl Fn(&RunKind) -> bool) -> Vec<RunId> {
    let mut ids = Vec::with_capacity(runs.len());
    for r in runs {
        match RunKind::of(r) {
            Ok(kind) if keep(&kind) => ids.push(r.run_id.clone()),
            Ok(_) => {}
            Err(e) => tracing::error!("{e}; left out of the run lists"),
        }
    }
    ids
}

fn geo_refused(run_id: &RunId) -> anyhow::Error {
    anyhow::anyhow!("run {run_id} is a GEO ranking run: `mirage geo report --run {run_id}` reads it")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(spec: &RunSpec) -> String {
        serde_json::to_string(spec).expect("json")
    }

    #[test]
    fn each_stored_shape_reads_as_its_kind() {
        let agent = RunSpec::basic("all", &["surface"], &["L0"], &["baseline"], vec![0]);
        assert!(matches!(RunKind::parse(&json(&agent)), Ok(RunKind::Agent(_))));
        let imported = RunSpec { origin: Some("imported:mirage".into()), ..agent.clone() };
        let kind = RunKind::parse(&json(&imported)).expect("reads");
        assert!(!kind.is_executed());
        assert_eq!(kind.provenance("external:x"), "imported:mirage");
        let old = RunSpec::basic("imported from a.jsonl", &["a"], &["L0"], &["baseline"], vec![0]);
        assert_eq!(RunKind::parse(&json(&old)).expect("reads").provenance("a"), "imported");
        let offline = GeoSpec::offline(&["cseo"], &["bm25"], &["clean"]);
        let geo = RunSpec {
            geo: Some(offline.clone()),
            ..RunSpec::basic("geo:cseo", &["bm25"], &["clean"], &["geo"], vec![0])
        };
        let kind = RunKind::parse(&json(&geo)).expect("reads");
        let RunKind::Geo(GeoRun { geo, run }) = &kind else { panic!("a GEO run: {kind:?}") };
        assert_eq!((geo.as_ref(), run.geo.as_ref()), (&offline, None), "the GEO part is held once");
        assert!(kind.clone().into_agent(&"run-g".into()).unwrap_err().to_string().contains("GEO ranking run"));
    }

    #[test]
    fn an_imported_run_is_self_reported_whatever_its_agents_are_called() {
        let spec = RunSpec::basic("all", &["external:x", "explorer"], &["L0"], &["raw"], vec![0]);
        let planned = RunKind::parse(&json(&spec)).expect("reads");
        assert_eq!(
            (planned.provenance("external:x"), planned.provenance("explorer")),
            ("http".into(), "executed".into())
        );
        let imported =
            RunKind::parse(&json(&RunSpec { origin: Some("imported:mirage".into()), ..spec })).expect("reads");
        assert_eq!(imported.provenance("external:x"), "imported:mirage");
    }

    #[test]
    fn a_spec_that_is_no_run_is_an_error_naming_the_run_and_left_out_of_lists() {
        let row = |spec: &str| RunRow {
            run_id: "run-broken".into(),
            spec: spec.into(),
            status: vocab::RunStatus::Active,
            corpus_version: String::new(),
            trials_total: 0,
            created_at: 0,
        };
        for spec in ["{not json", "{}", ""] {
            let e = RunKind::of(&row(spec)).expect_err(spec).to_string();
            assert!(e.contains("run-broken") && e.contains("unreadable"), "{e}");
        }
        let agent = json(&RunSpec::basic("shop", &["surface"], &["L0"], &["raw"], vec![0]));
        let good = RunRow { run_id: "a".into(), ..row(&agent) };
        assert_eq!(agent_runs(&[good, row("{}"), row("")]), ["a"], "the others stay");
    }

    #[test]
    fn pace_and_annotators_read_from_the_spec_or_default() {
        let spec = RunSpec::basic("all", &["surface"], &["L0"], &["baseline"], vec![0]);
        let kind = RunKind::parse(&json(&spec)).expect("reads");
        assert_eq!((kind.concurrency(), kind.annotators()), (None, super::super::default_annotators()));
        let paced = RunSpec { concurrency: Some(8), annotators: 3, ..spec.clone() };
        let kind = RunKind::parse(&json(&paced)).expect("reads");
        assert_eq!((kind.concurrency(), kind.annotators()), (Some(8), 3));
        let zero = RunSpec { concurrency: Some(0), ..spec };
        assert_eq!(RunKind::parse(&json(&zero)).expect("reads").concurrency(), None);
    }
}
