//! The runs port: list, launch, cancel and follow runs, and read single trajectories.

use std::collections::BTreeMap;
use std::sync::Arc;

use app::error::AppError;
use app::model::{
    ClaimView, Counts, CoverageCell, LabelView, NewRun, NodeView, Progress, RunDetail, RunId, RunSummary, TURN_PAGE,
    TrajectoryView, TrialId, TrialPage, TrialQuery, TurnView,
};

use super::fail;
use crate::agent::Step;
use crate::config::Config;
use crate::corpus::urls::{graph_nodes, normalise};
use crate::db::{Store, TrialFilter, TrialRow, TrialState};
use crate::env::World;
use crate::judge::aggregate::apply_overrides;
use crate::judge::labels::{Label, LabelKind};
use crate::judge::{Scorer, TrialScore};
use crate::runs::export::{parse_steps, trajectory};
use crate::runs::{PoolOptions, RunKind, RunSpec};

/// Trials per page of a run's trial table.
pub const TRIAL_PAGE: usize = 50;
/// Label kinds in the order a trial lives them.
const TIMELINE: [LabelKind; 4] =
    [LabelKind::Exposure, LabelKind::Adoption, LabelKind::Verification, LabelKind::Recovery];
/// Most workers one launched run may use.
pub const MAX_CONCURRENCY: usize = 64;

/// Runs, trials and trajectories from the store; launched runs execute in this process.
pub struct RunsService {
    pub store: Arc<dyn Store>,
    pub world: Arc<World>,
    pub config: Arc<Config>,
    pub corpus_version: String,
    /// Where launched runs execute; `None` where pages are only rendered (a bundle).
    pub executor: Option<Arc<super::execution::Executor>>,
}

fn counts(p: crate::db::Progress) -> Counts {
    Counts { queued: p.queued, running: p.running, done: p.done, error: p.error, cancelled: p.cancelled }
}

/// A run's live progress (counts, throughput, ETA).
pub async fn progress(store: &dyn Store, run_id: &RunId) -> Result<Progress, AppError> {
    let run = store.run(run_id).await?;
    let report = crate::runs::progress_report(store, run_id).await.map_err(fail)?;
    Ok(Progress {
        run_id: run_id.to_string().into(),
        status: run.status,
        total: report.total,
        counts: counts(report.counts),
        per_minute: report.per_minute,
        eta_secs: report.eta_secs,
    })
}

use vocab::form_list as list;

fn invalid(field: &str, message: impl Into<String>) -> AppError {
    AppError::Invalid { field: field.to_string(), message: message.into() }
}

/// A count from a form field: `default` when empty, else a whole number from 1 to `most`.
fn count_field(text: &str, default: usize, most: usize) -> Result<usize, String> {
    match text.trim() {
        "" => Ok(default),
        text => text
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=most).contains(n))
            .ok_or_else(|| format!("{text:?} is not a number from 1 to {most}")),
    }
}

/// Reads the launch form into a run spec; a mistake names the field it came from.
pub fn spec_from_form(form: &NewRun, config: &Config) -> Result<(RunSpec, usize), AppError> {
    // Every field is checked, and every fault named at once.
    let mut faults: Vec<(String, String)> = Vec::new();
    let mut fault = |field: &str, message: String| faults.push((field.to_string(), message));
    let tasks = form.tasks.trim();
    if tasks.is_empty() {
        fault("tasks", "name `all`, a site, a category or task ids".into());
    }
    let agents = list(&form.agents);
    let endpoints = if agents.is_empty() {
        fault("agents", "choose at least one agent configuration".into());
        BTreeMap::new()
    } else {
        crate::runs::configured_endpoints(&agents, &config.endpoints).unwrap_or_else(|e| {
            fault("agents", e.to_string());
            BTreeMap::new()
        })
    };
    let levels = list(&form.levels);
    if levels.is_empty() {
        fault("levels", "choose at least one level".into());
    }
    let conditions = list(&form.conditions);
    if conditions.is_empty() {
        fault("conditions", "choose at least one condition".into());
    }
    if let Some(e) = conditions.iter().find_map(|c| vocab::Condition::parse(c).err()) {
        fault("conditions", format!("{:?} is not one of {}", e.name, e.known));
    }
    let (seeds, bad_seeds): (Vec<_>, Vec<_>) = list(&form.seeds).into_iter().partition(|s| s.parse::<i64>().is_ok());
    if let Some(s) = bad_seeds.first() {
        fault("seeds", format!("{s:?} is not a whole number"));
    } else if seeds.is_empty() {
        fault("seeds", "give at least one seed, e.g. 0".into());
    }
    let seeds: Vec<i64> = seeds.iter().filter_map(|s| s.parse().ok()).collect();
    let concurrency = count_field(&form.concurrency, PoolOptions::default().concurrency, MAX_CONCURRENCY)
        .unwrap_or_else(|message| {
            fault("concurrency", message);
            1
        });
    let annotators =
        count_field(&form.annotators, crate::judge::aggregate::DEFAULT_ANNOTATORS, 20).unwrap_or_else(|message| {
            fault("annotators", message);
            1
        });
    let mut replay = Vec::new();
    for p in form.replay.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match p.parse::<crate::runs::replay::ReplayPlan>() {
            Ok(plan) => replay.push(plan),
            Err(e) => fault("replay", e.to_string()),
        }
    }
    AppError::from_fields(faults)?;
    let spec = RunSpec {
        tasks: tasks.to_string(),
        agents,
        levels,
        conditions,
        seeds,
        endpoints,
        appeal: form.appeal.is_some(),
        strategy: None,
        tap: crate::manip::adaptive::TapOptions::default(),
        attacker: config.attacker().map(|(_, s)| s.clone()),
        judge: config.judge().map(|(_, s)| s.clone()),
        agent_prompt: crate::agent::llm::PROMPT_VERSION.to_string(),
        agent_protocol: crate::agent::protocol::PROTOCOL_VERSION.to_string(),
        episode_lease_secs: None,
        origin: None,
        geo: None,
        replay,
        clean_twins: 0,
        annotators,
        concurrency: Some(concurrency),
    };
    Ok((spec, concurrency))
}

/// What a trial's trajectory view shows of its score: the Acc_dec tiers, Acc_inv, the
/// outcome, the labels on the timeline and the claims.
type ScoreParts = (Vec<(String, f64)>, Option<f64>, Option<String>, Vec<LabelView>, Vec<ClaimView>);

fn score_parts(s: &TrialScore) -> ScoreParts {
    (
        s.acc_dec
            .map(|d| vec![("Default".into(), d.default), ("Strict".into(), d.strict), ("Loose".into(), d.loose)])
            .unwrap_or_default(),
        s.acc_inv,
        Some(s.outcome.clone()),
        s.labels
            .as_ref()
            .map(|ls| TIMELINE.iter().map(|&k| label_view(&s.trial_id, k, ls.get(k))).collect())
            .unwrap_or_default(),
        s.claims
            .iter()
            .map(|c| ClaimView {
                text: c.text.clone(),
                kind: c.kind.to_string(),
                verified: c.verified,
                from: c.from.to_string(),
                turn: c.turn,
                source: c.source.to_string(),
            })
            .collect(),
    )
}

/// The task's evidence graph with the turn each node was first credited at, if any.
fn graph_view(world: &World, task: &crate::corpus::Task, steps: &[Step]) -> Vec<NodeView> {
    let visits: Vec<String> = steps.iter().map(|s| normalise(&s.url)).collect();
    let content = world.content();
    let shop = task.domain == crate::corpus::Domain::Shop;
    graph_nodes(&task.graph)
        .iter()
        .map(|node| {
            let turn = visits.iter().position(|v| node.credited_by(v, shop, content.contains(v)));
            NodeView { url: node.norm().to_string(), visited: turn.is_some(), turn }
        })
        .collect()
}

/// One turn as the trajectory page shows it, manipulated spans marked in the observation.
/// At most this many bytes of one turn's page, and of its thought, go to a browser.
const TURN_TEXT_MAX: usize = 64 << 10;
/// A trial whose steps hold more text than this is not read for a page at all.
const SERVED_STEPS_MAX: i64 = 64 << 20;

fn turn_view(s: &Step) -> TurnView {
    let thought = match crate::env::clip(&s.thought, TURN_TEXT_MAX) {
        (all, 0) => all.to_string(),
        (head, left) => format!("{head}\n[… {left} more bytes not shown]"),
    };
    TurnView {
        t: s.t,
        thought,
        action: s.action.describe(),
        url: (!s.url.is_empty()).then(|| s.url.clone()),
        status: None,
        observation: crate::env::segments_clipped(&s.observation, &s.spans, TURN_TEXT_MAX),
        tokens: s.usage.map(|u| u.prompt_tokens + u.completion_tokens),
        latency_ms: (s.latency_ms > 0).then_some(s.latency_ms),
    }
}

fn label_view(trial_id: &str, kind: LabelKind, l: &Label) -> LabelView {
    LabelView {
        kind,
        value: l.value,
        turn: l.turn,
        source: l.source.to_string(),
        confidence: l.confidence,
        reason: l.reason.to_string(),
        disputed: l.disputed,
        // Waiting for people because the audit drew it (and not settled yet).
        audit: l.automatic.is_none() && l.in_audit(trial_id, kind),
        automatic: l.automatic.as_ref().map(|a| Box::new(LabelView { audit: false, ..label_view(trial_id, kind, a) })),
        hidden: false,
    }
}

/// A finished trial's score: the stored one, else computed by the rules (no model call on
/// a page view); people's labels applied.
pub async fn score_of(
    store: &dyn Store,
    world: &World,
    trial: &TrialRow,
    steps: &[Step],
) -> Result<Option<TrialScore>, AppError> {
    if !trial.state.is_finished() {
        return Ok(None);
    }
    if world.task(&trial.task_id).is_none() {
        // An imported sample that is not a Mirage task: its harness's labels, which people
        // may correct; no metrics.
        let Some(origin) = super::origin::origin_of(store, &trial.trial_id).await? else { return Ok(None) };
        let mut score = crate::foreign::labels::score_of(trial, &origin, steps);
        let events = store.trial_label_events(&trial.trial_id).await.map_err(fail)?;
        apply_overrides(std::slice::from_mut(&mut score), &events, super::annotators(store, &trial.run_id).await?);
        return Ok(Some(score));
    }
    let Some(mut score) = rule_score(store, world, trial, steps).await? else { return Ok(None) };
    if !trial.level.is_clean() {
        // The clean twin, for the paired reading of this trial (adoption, outcome).
        let filter = TrialFilter {
            agent: Some(trial.agent.clone()),
            level: Some(crate::manip::Level::L0.as_str().to_string()),
            state: None,
            task: Some(trial.task_id.clone()),
            condition: Some(trial.condition.to_string()),
        };
        let (candidates, _) = store.trial_page(&trial.run_id, &filter, 0, 1_000).await.map_err(fail)?;
        let mut pair = Vec::with_capacity(2);
        if let Some(twin) = candidates.iter().find(|t| t.condition == trial.condition && t.seed == trial.seed) {
            let twin_steps = parse_steps(&store.steps(&twin.trial_id).await.map_err(fail)?).map_err(fail)?;
            if let Some(s) = rule_score(store, world, twin, &twin_steps).await? {
                pair.push(s);
            }
        }
        pair.push(score);
        crate::judge::twins::attach(&mut pair);
        score = pair.pop().expect("the trial itself");
        let replays = store.replays_of(&trial.trial_id).await.map_err(fail)?;
        crate::runs::replay::attach_caused(world, std::slice::from_mut(&mut score), &replays);
    }
    let events = store.trial_label_events(&trial.trial_id).await.map_err(fail)?;
    apply_overrides(std::slice::from_mut(&mut score), &events, super::annotators(store, &trial.run_id).await?);
    Ok(Some(score))
}

/// A finished Mirage trial's stored score, else the rules' (no people's labels, no twin).
async fn rule_score(
    store: &dyn Store,
    world: &World,
    trial: &TrialRow,
    steps: &[Step],
) -> Result<Option<TrialScore>, AppError> {
    if !trial.state.is_finished() {
        return Ok(None);
    }
    Ok(Some(match store.trial_score(&trial.trial_id).await.map_err(fail)? {
        Some(stored) => serde_json::from_str::<TrialScore>(&stored.body).map_err(fail)?,
        None => {
            let traj = trajectory(trial, steps).map_err(fail)?;
            let Some(score) = Scorer::new(world).score(&traj) else { return Ok(None) };
            score
        }
    }))
}

/// A stored run's spec as every kind of run has it (see [`RunKind::into_envelope`]), or an error
/// naming the run (logged with the reason).
pub fn spec_of(run: &crate::db::RunRow) -> Result<RunSpec, AppError> {
    match RunKind::of(run) {
        Ok(kind) => Ok(kind.into_envelope()),
        Err(e) => {
            tracing::error!("{e}");
            Err(AppError::Corrupt(format!("the stored spec of run {}", run.run_id)))
        }
    }
}

impl RunsService {
    /// The run's summary, from its spec as already read.
    async fn summary_of(&self, run: crate::db::RunRow, spec: &RunSpec) -> Result<RunSummary, AppError> {
        Ok(RunSummary {
            progress: progress(self.store.as_ref(), &run.run_id).await?,
            id: run.run_id,
            created_at: run.created_at,
            tasks: spec.tasks.clone(),
            agents: spec.agents.clone(),
            levels: spec.levels.iter().map(Into::into).collect(),
            unreadable: None,
        })
    }
}

#[async_trait::async_trait]
impl app::ssr::Runs for RunsService {
    async fn list(&self) -> Result<Vec<RunSummary>, AppError> {
        // One query for every run and its counts.
        let since = crate::db::now_ms() - crate::runs::RATE_WINDOW_MS;
        let mut out = Vec::new();
        for o in self.store.run_overview(since, None).await.map_err(fail)? {
            // A run whose spec does not read is listed as such; the others stay usable.
            let (spec, unreadable) = match spec_of(&o.run) {
                Ok(spec) => (spec, None),
                Err(e) => (RunSpec::basic("", &[], &[], &[], Vec::new()), Some(e.to_string())),
            };
            let report = crate::runs::ProgressReport::new(o.run.trials_total, o.progress, o.recent);
            out.push(RunSummary {
                progress: Progress {
                    run_id: o.run.run_id.clone(),
                    status: o.run.status,
                    total: report.total,
                    counts: counts(report.counts),
                    per_minute: report.per_minute,
                    eta_secs: report.eta_secs,
                },
                id: o.run.run_id,
                created_at: o.run.created_at,
                tasks: spec.tasks,
                agents: spec.agents,
                levels: spec.levels.iter().map(Into::into).collect(),
                unreadable,
            });
        }
        Ok(out)
    }

    async fn get(&self, id: RunId) -> Result<RunDetail, AppError> {
        let run = self.store.run(&id).await?;
        let spec = spec_of(&run)?;
        let corpus_version = run.corpus_version.clone();
        let mut cells: BTreeMap<(String, vocab::TrialLevel, vocab::TrialCondition), Counts> = BTreeMap::new();
        for row in self.store.coverage(&id).await.map_err(fail)? {
            let c = cells.entry((row.agent, row.level, row.condition)).or_default();
            match row.state {
                TrialState::Queued => c.queued += row.n,
                TrialState::Running => c.running += row.n,
                TrialState::Done => c.done += row.n,
                TrialState::Error => c.error += row.n,
                TrialState::Cancelled => c.cancelled += row.n,
            }
        }
        let judges = self.store.score_judges(&id).await.map_err(fail)?;
        let replays = crate::runs::replay_use(self.store.as_ref(), &id).await.map_err(fail)?;
        let costs = crate::runs::cost_rows(
            &spec,
            (&self.store.token_use(&id).await.map_err(fail)?, &replays),
            &self.store.model_use(&id).await.map_err(fail)?,
            &self.store.judge_use(&id).await.map_err(fail)?,
        );
        let agent_setup =
            spec.agents.iter().map(|a| (a.clone(), crate::runs::agent_setup(a, &spec.endpoints))).collect();
        Ok(RunDetail {
            costs,
            agent_setup,
            clean_twins: spec.clean_twins,
            summary: self.summary_of(run, &spec).await?,
            conditions: spec.conditions.iter().map(Into::into).collect(),
            seeds: spec.seeds,
            appeal: spec.appeal,
            strategy: spec.strategy,
            agent_prompt: spec.agent_prompt,
            agent_protocol: spec.agent_protocol,
            corpus_version,
            judges,
            coverage: cells
                .into_iter()
                .map(|((agent, level, condition), counts)| CoverageCell { agent, level, condition, counts })
                .collect(),
        })
    }

    async fn trials(&self, q: TrialQuery) -> Result<TrialPage, AppError> {
        let run = RunId::from(&q.run);
        self.store.run(&run).await?;
        let (filter, outcome) = super::siblings::filter_of(&q)?;
        let offset = q.page.checked_mul(TRIAL_PAGE).and_then(|o| i64::try_from(o).ok()).ok_or_else(|| {
            AppError::Invalid { field: "page".into(), message: format!("page {} is past any run's trials", q.page) }
        })?;
        let (rows, total) = match outcome {
            Some(o) => {
                let all = super::siblings::with_outcome(self.store.as_ref(), &self.world, &run, &filter, &o).await?;
                let total = i64::try_from(all.len()).map_err(fail)?;
                (all.into_iter().skip(q.page * TRIAL_PAGE).take(TRIAL_PAGE).collect(), total)
            }
            None => self.store.trial_page(&run, &filter, offset, TRIAL_PAGE as i64).await.map_err(fail)?,
        };
        Ok(TrialPage {
            rows: rows.iter().map(|t| super::siblings::summary(&self.world, t)).collect(),
            total: usize::try_from(total).unwrap_or(0),
            page: q.page,
            page_size: TRIAL_PAGE,
        })
    }

    async fn task_trials(&self, task: String) -> Result<app::model::TaskTrials, AppError> {
        super::siblings::of_task(self.store.as_ref(), &self.world, &task).await
    }

    async fn start(&self, form: NewRun) -> Result<String, AppError> {
        let Some(executor) = &self.executor else {
            return Err(AppError::Conflict(
                "launching a run needs a server (`mirage serve`); these pages were only rendered".into(),
            ));
        };
        let (spec, concurrency) = spec_from_form(&form, &self.config)?;
        let run_id = crate::runs::create_run(self.store.as_ref(), &self.world, &spec, &self.corpus_version)
            .await
            .map_err(|e| match e.downcast_ref::<crate::runs::PlanError>() {
                Some(p) => invalid(p.field.into(), p.message.clone()),
                None => fail(e),
            })?;
        executor.spawn(run_id.clone(), concurrency);
        Ok(run_id.into())
    }

    async fn power(&self, form: NewRun) -> Result<app::model::Power, AppError> {
        let (spec, _) = spec_from_form(&form, &self.config)?;
        let trials = crate::runs::plan(&self.world, &spec).map_err(|p| invalid(p.field.into(), p.message.clone()))?;
        Ok(crate::runs::power::of_plan(&self.world, &trials, &std::collections::BTreeMap::new(), None, None))
    }

    async fn endpoints(&self) -> Result<Vec<(String, String)>, AppError> {
        Ok(self.config.endpoints.iter().map(|(name, e)| (name.clone(), e.model.clone())).collect())
    }

    async fn cancel(&self, id: RunId) -> Result<(), AppError> {
        self.store.run(&id).await?;
        self.store.cancel_run(&id).await.map_err(fail)
    }

    async fn replays(&self, trial: TrialId) -> Result<app::model::ReplaysView, AppError> {
        super::replays::view(self.store.as_ref(), &self.world, trial).await
    }

    async fn start_replay(&self, request: app::model::NewReplay) -> Result<(), AppError> {
        super::replays::start(self.store.clone(), self.world.clone(), request).await
    }

    async fn trajectory(&self, trial_id: TrialId, page: usize, within: TrialQuery) -> Result<TrajectoryView, AppError> {
        let trial = self.store.trial(&trial_id).await?;
        let origin = super::origin::origin_of(self.store.as_ref(), &trial_id).await?;
        let task = self.world.task(&trial.task_id);
        if task.is_none() && origin.is_none() {
            return Err(AppError::NotFound(format!("task {}", trial.task_id)));
        }
        // Steps are read whole (the score and the graph need them all): a trial stored before
        // imports were bounded could hold more than a page should ever make the server read.
        let size = self.store.steps_length(&trial_id).await.map_err(fail)?;
        if size > SERVED_STEPS_MAX {
            return Err(AppError::Invalid {
                field: "trial".into(),
                message: format!(
                    "{trial_id}'s steps hold {} MiB of text, more than the 64 MiB a page reads; `mirage runs export {}` writes it whole",
                    size >> 20,
                    trial.run_id
                ),
            });
        }
        let steps = parse_steps(&self.store.steps(&trial_id).await.map_err(fail)?).map_err(fail)?;
        let score = score_of(self.store.as_ref(), &self.world, &trial, &steps).await?;
        let graph = task.map_or_else(Vec::new, |task| graph_view(&self.world, task, &steps));
        let turn_count = steps.len();
        let pages = turn_count.div_ceil(TURN_PAGE).max(1);
        let page = page.min(pages - 1);
        let turns = steps.iter().skip(page * TURN_PAGE).take(TURN_PAGE).map(turn_view).collect();
        let appeal = trial.appeal.as_deref().and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok()).map(|v| {
            v.as_object()
                .map(|o| {
                    o.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().map_or_else(|| v.to_string(), ToString::to_string)))
                        .collect()
                })
                .unwrap_or_default()
        });
        let (tiers, acc_inv, outcome, labels, claims) = score.as_ref().map(score_parts).unwrap_or_default();
        Ok(TrajectoryView {
            run: trial.run_id.clone(),
            ticket: match task {
                Some(task) => {
                    task.ticket.for_condition(trial.condition.as_str()).unwrap_or(&task.ticket.raw).to_string()
                }
                None => origin.as_ref().and_then(|o| o.input.clone()).unwrap_or_default(),
            },
            rationale: trial.rationale.clone(),
            optimal: task.map(|t| t.verdict.optimal.clone()).unwrap_or_default(),
            trial: super::siblings::summary(&self.world, &trial),
            around: super::siblings::around(self.store.as_ref(), &self.world, &trial, &within).await?,
            tiers,
            acc_inv,
            tap: self
                .store
                .tap_nodes(&trial_id)
                .await
                .map_err(fail)?
                .iter()
                .map(|b| serde_json::from_str(b))
                .collect::<Result<_, _>>()
                .map_err(fail)?,
            acc_rsn: score.as_ref().and_then(|s| s.acc_rsn),
            q_ev: score.as_ref().and_then(|s| s.q_ev),
            rsn_judge: score.as_ref().and_then(|s| s.rsn_judge.clone()),
            outcome,
            labels,
            claims,
            graph,
            appeal,
            turns,
            turn_count,
            page,
            page_size: TURN_PAGE,
            origin: match &origin {
                Some(o) => Some(super::origin::view_of(self.store.as_ref(), &trial.run_id, o).await?),
                None => None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_form_names_the_field_at_fault() {
        let config = Config::default();
        let good = NewRun {
            tasks: "shop".into(),
            agents: "explorer, surface".into(),
            levels: "L0,L1".into(),
            conditions: vocab::Condition::Raw.as_str().into(),
            seeds: "0 1".into(),
            concurrency: "4".into(),
            appeal: None,
            replay: String::new(),
            annotators: "3".into(),
        };
        let (spec, n) = spec_from_form(&good, &config).expect("valid");
        assert_eq!((spec.agents.len(), spec.seeds, n, spec.annotators), (2, vec![0, 1], 4, 3));
        for (field, bad) in [
            ("seeds", NewRun { seeds: "x".into(), ..good.clone() }),
            ("concurrency", NewRun { concurrency: "0".into(), ..good.clone() }),
            ("conditions", NewRun { conditions: "sideways".into(), ..good.clone() }),
            ("agents", NewRun { agents: String::new(), ..good.clone() }),
            ("tasks", NewRun { tasks: " ".into(), ..good.clone() }),
            ("replay", NewRun { replay: "strip-spans:0".into(), ..good.clone() }),
            ("replay", NewRun { replay: "rewind".into(), ..good.clone() }),
            ("annotators", NewRun { annotators: "0".into(), ..good.clone() }),
            ("annotators", NewRun { annotators: "999".into(), ..good.clone() }),
        ] {
            match spec_from_form(&bad, &config) {
                Err(AppError::Invalid { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{field}: {other:?}"),
            }
        }
    }
}
