//! The investigation loop: one trial of one agent on one task, in process.
//!
//! The loop renders each page through the same site code the HTTP server uses (with the
//! verdict tools of an episode), asks the agent for one action, persists the step through
//! a [`StepSink`] before doing anything else, and stops at a verdict or after [`BUDGET`]
//! steps. Handing it the steps persisted earlier resumes a trial where it stopped.

use std::time::Instant;

use async_trait::async_trait;

use super::{Action, Agent, AgentError, Observation, Step, TrialContext};
use crate::corpus::urls::normalise;
use crate::corpus::{Domain, Task};
use crate::env::World;
use crate::env::render::EpisodeChrome;
use crate::env::site::{domain_of, listing, render_path};

/// Steps an agent may take, the start page included.
pub const BUDGET: usize = crate::corpus::model::STEP_BUDGET;

/// Where the persisted steps go. `record` returns only once the step is durable.
#[async_trait]
pub trait StepSink: Send {
    async fn record(&mut self, step: &Step) -> anyhow::Result<()>;
}

/// A sink that keeps steps in memory (scoring trajectories, tests).
#[derive(Default)]
pub struct MemorySink(pub Vec<Step>);

#[async_trait]
impl StepSink for MemorySink {
    async fn record(&mut self, step: &Step) -> anyhow::Result<()> {
        self.0.push(step.clone());
        Ok(())
    }
}

/// How a trial ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Verdict {
        verdict: String,
        rationale: String,
    },
    /// The budget ran out before a verdict: scored as no verdict.
    BudgetExhausted,
}

/// Why a trial could not finish.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error("could not persist a step: {0:#}")]
    Persist(anyhow::Error),
    #[error("unknown condition {0:?}")]
    Condition(String),
    #[error("{0}")]
    Site(String),
}

/// A site the loop browses: the in-process world, or a live one over HTTP.
#[async_trait]
pub trait Site: Send {
    /// The current page as the agent sees it.
    async fn observe(&mut self) -> Observation;
    /// Moves as the action says; impossible moves leave the agent in place with a note.
    fn apply(&mut self, action: &Action, current: &Observation);
    /// Why the last observation is not what the agent should have seen, if it is not (the
    /// trial then ends in the error state).
    fn failure(&mut self) -> Option<String> {
        None
    }
}

/// What a trial shows beyond the clean site: its manipulated texts, and the filter of a
/// defended configuration that reads every observation before the agent does.
#[derive(Clone, Copy)]
pub struct Setting<'a> {
    pub overlay: &'a crate::env::Overlay,
    pub defense: Option<&'a dyn crate::detect::Defense>,
}

impl Setting<'_> {
    /// Clean pages, no filter (L0, undefended).
    pub fn clean() -> Setting<'static> {
        static EMPTY: crate::env::Overlay = crate::env::Overlay { edits: Vec::new() };
        Setting { overlay: &EMPTY, defense: None }
    }
}

/// The agent's position on the site: a trail of (path, search words) for `back`.
pub struct Browser<'w> {
    world: &'w World,
    overlay: Option<&'w crate::env::Overlay>,
    defense: Option<&'w dyn crate::detect::Defense>,
    /// Why the last observation could not be made (a defense's endpoint failed).
    failure: Option<String>,
    domain: Domain,
    trail: Vec<(String, Option<String>)>,
    note: Option<String>,
}

impl<'w> Browser<'w> {
    /// Starts on `start` of the world's `domain` site.
    pub fn new(world: &'w World, domain: Domain, start: &str) -> Browser<'w> {
        Browser {
            world,
            overlay: None,
            defense: None,
            failure: None,
            domain,
            trail: vec![(normalise(start), None)],
            note: None,
        }
    }

    /// Shows the trial's manipulated texts (levels above L0) through its defense, if any.
    pub fn with_setting(mut self, setting: Setting<'w>) -> Browser<'w> {
        self.overlay = (!setting.overlay.is_empty()).then_some(setting.overlay);
        self.defense = setting.defense;
        self
    }

    async fn render(&mut self) -> Observation {
        let (path, pattern) = self.trail.last().cloned().unwrap_or_else(|| ("/".to_string(), None));
        let chrome = EpisodeChrome {
            id: "trial",
            actions: self.domain.actions(),
            closed: false,
            overlay: self.overlay,
            over_http: false,
        };
        let page = if domain_of(&path) == Some(self.domain) {
            render_path(self.world, &path, pattern.as_deref(), Some(chrome))
        } else {
            listing(
                self.domain,
                &path,
                "Page not found",
                "This address is outside the site of this case.",
                vec![],
                Some(chrome),
                404,
            )
        };
        let mut text = page.text;
        let mut spans = page.spans;
        if let Some(filter) = self.defense {
            match crate::detect::defend(&text, filter).await {
                Ok(defended) => text = defended,
                Err(e) => self.failure = Some(format!("the {} defense failed: {e:#}", filter.name())),
            }
            spans = self.overlay.map(|o| o.locate(&path, &text)).unwrap_or_default();
        }
        if let Some(note) = self.note.take() {
            let prefix = format!("Note: {note}\n\n");
            for s in &mut spans {
                s.start = s.start.map(|x| x + prefix.len());
                s.end = s.end.map(|x| x + prefix.len());
            }
            text = format!("{prefix}{text}");
        }
        Observation { url: normalise(&path), status: page.status, text, links: page.links, spans }
    }

    fn step(&mut self, action: &Action, current: &Observation) {
        // A link number written where an address is expected is that link (the protocol).
        match &super::protocol::canonical(action.clone()) {
            Action::Goto { url } => self.trail.push((normalise(url), None)),
            Action::Click { link } => match link.checked_sub(1).and_then(|i| current.links.get(i)) {
                Some((_, url)) => self.trail.push((normalise(url), None)),
                None => self.note = Some(format!("there is no link number {link} on this page")),
            },
            Action::Search { query } => {
                if self.domain == Domain::Wiki {
                    self.trail.push(("/wiki/search".to_string(), Some(query.clone())));
                } else {
                    self.note = Some("this site has no search".to_string());
                }
            }
            Action::Back => {
                if self.trail.len() > 1 {
                    self.trail.pop();
                } else {
                    self.note = Some("there is no previous page".to_string());
                }
            }
            Action::Verdict { .. } => {}
            Action::Tool { name, .. } => self.note = Some(format!("this site has no tool {name:?}")),
            Action::Answer { .. } => self.note = Some("answer with a verdict".to_string()),
        }
    }
}

#[async_trait]
impl Site for Browser<'_> {
    async fn observe(&mut self) -> Observation {
        self.render().await
    }

    fn failure(&mut self) -> Option<String> {
        self.failure.take()
    }

    fn apply(&mut self, action: &Action, current: &Observation) {
        self.step(action, current);
    }
}

/// Runs (or resumes, given the steps persisted so far) one trial on the in-process world,
/// with the trial's manipulated texts and defense ([`Setting::clean`] at L0, undefended).
pub async fn run_trial(
    world: &World,
    setting: Setting<'_>,
    task: &Task,
    condition: &str,
    agent: &dyn Agent,
    prior: Vec<Step>,
    sink: &mut dyn StepSink,
) -> Result<(Vec<Step>, Outcome), TrialError> {
    let mut browser = Browser::new(world, task.domain, &task.start_url).with_setting(setting);
    run_trial_on(&mut browser, task, condition, agent, prior, sink).await
}

/// Runs (or resumes) one trial on any site.
pub async fn run_trial_on(
    browser: &mut dyn Site,
    task: &Task,
    condition: &str,
    agent: &dyn Agent,
    prior: Vec<Step>,
    sink: &mut dyn StepSink,
) -> Result<(Vec<Step>, Outcome), TrialError> {
    let ticket = task.ticket.for_condition(condition).ok_or_else(|| TrialError::Condition(condition.to_string()))?;
    let ctx = TrialContext { domain: task.domain, ticket, task };
    let mut steps = prior;
    for step in &steps {
        if let Action::Verdict { verdict, rationale } = &step.action {
            let outcome = Outcome::Verdict { verdict: verdict.clone(), rationale: rationale.clone() };
            return Ok((steps, outcome));
        }
        let obs = browser.observe().await;
        browser.apply(&step.action, &obs);
    }
    let budget = agent.step_budget().min(BUDGET);
    while steps.len() < budget {
        let obs = browser.observe().await;
        if let Some(reason) = browser.failure() {
            return Err(TrialError::Site(reason));
        }
        let started = Instant::now();
        let decision = agent.act(&ctx, &steps, &obs).await?;
        let step = Step {
            t: steps.len(),
            url: obs.url.clone(),
            status: Some(obs.status),
            observation: obs.text.clone(),
            thought: decision.thought,
            action: decision.action,
            usage: decision.usage,
            latency_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            spans: obs.spans.clone(),
        };
        sink.record(&step).await.map_err(TrialError::Persist)?;
        let action = step.action.clone();
        steps.push(step);
        if let Action::Verdict { verdict, rationale } = action {
            return Ok((steps, Outcome::Verdict { verdict, rationale }));
        }
        browser.apply(&action, &obs);
    }
    Ok((steps, Outcome::BudgetExhausted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::baselines::{Explorer, Oracle, Surface};
    use crate::corpus::generate::corpus;
    use crate::corpus::urls::graph_nodes;

    fn world_and_tasks() -> (World, Vec<Task>) {
        let tasks = corpus();
        (World::build(tasks.clone()).expect("world"), tasks)
    }

    async fn play(world: &World, task: &Task, agent: &dyn Agent) -> (Vec<Step>, Outcome) {
        let mut sink = MemorySink::default();
        let (steps, outcome) =
            run_trial(world, Setting::clean(), task, "raw", agent, vec![], &mut sink).await.expect("trial");
        assert_eq!(sink.0, steps, "every step was handed to the sink");
        (steps, outcome)
    }

    #[tokio::test]
    async fn oracle_visits_every_graph_node_and_is_optimal_on_every_task() {
        let (world, tasks) = world_and_tasks();
        for task in &tasks {
            let (steps, outcome) = play(&world, task, &Oracle).await;
            let shop = task.domain == Domain::Shop;
            for node in graph_nodes(&task.graph) {
                let credited = |url: &str| node.credited_by(url, shop, world.content().contains(url));
                assert!(steps.iter().any(|s| credited(&s.url)), "{}: {} not visited", task.id, node.norm());
            }
            assert!(steps.iter().all(|s| s.observation.contains("Actions:")), "{}: observations list actions", task.id);
            match outcome {
                Outcome::Verdict { verdict, .. } => assert_eq!(task.credit(&verdict), 1.0, "{}", task.id),
                Outcome::BudgetExhausted => panic!("{}: oracle ran out of budget", task.id),
            }
        }
    }

    #[tokio::test]
    async fn surface_fails_where_the_surface_misleads_and_succeeds_where_it_does_not() {
        let (world, tasks) = world_and_tasks();
        let (mut misled, mut aligned) = (Vec::new(), Vec::new());
        for task in &tasks {
            let (steps, outcome) = play(&world, task, &Surface).await;
            assert_eq!(steps.len(), 1, "surface decides at step 0");
            let Outcome::Verdict { verdict, .. } = outcome else { panic!("no verdict") };
            let credit = task.credit(&verdict);
            if task.surface_contradiction { misled.push(credit) } else { aligned.push(credit) }
        }
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(mean(&misled) <= 0.2, "surface on misleading tasks: {}", mean(&misled));
        assert!(mean(&aligned) >= 0.8, "surface on aligned tasks: {}", mean(&aligned));
    }

    #[tokio::test]
    async fn explorer_reads_linked_pages_within_the_budget_and_then_decides() {
        let (world, tasks) = world_and_tasks();
        for task in tasks.iter().step_by(25) {
            let (steps, outcome) = play(&world, task, &Explorer).await;
            assert!(steps.len() > 1 && steps.len() <= BUDGET, "{}: {} steps", task.id, steps.len());
            assert!(matches!(outcome, Outcome::Verdict { .. }), "{}", task.id);
            let pages: Vec<&str> = steps.iter().map(|s| s.url.as_str()).collect();
            let unique: std::collections::HashSet<&str> = pages.iter().copied().collect();
            assert_eq!(unique.len(), pages.len(), "{}: explorer never revisits", task.id);
        }
    }

    #[tokio::test]
    async fn a_trial_resumes_from_its_persisted_steps() {
        let (world, tasks) = world_and_tasks();
        let task = &tasks[0];
        let (full, outcome) = play(&world, task, &Oracle).await;
        assert!(full.len() >= 3);
        let mut sink = MemorySink::default();
        let (steps, resumed) = run_trial(&world, Setting::clean(), task, "raw", &Oracle, full[..2].to_vec(), &mut sink)
            .await
            .expect("trial");
        assert_eq!(steps.iter().map(|s| &s.url).collect::<Vec<_>>(), full.iter().map(|s| &s.url).collect::<Vec<_>>());
        assert_eq!(sink.0.len(), full.len() - 2, "only the missing steps are recorded again");
        assert_eq!(resumed, outcome);
    }

    #[tokio::test]
    async fn impossible_moves_keep_the_agent_in_place_with_a_note() {
        let (world, tasks) = world_and_tasks();
        let task = tasks.iter().find(|t| t.domain == Domain::Shop).expect("shop task");
        let mut b = Browser::new(&world, Domain::Shop, &task.start_url);
        let obs = b.render().await;
        b.step(&Action::Click { link: 99 }, &obs);
        let again = b.render().await;
        assert_eq!(again.url, obs.url);
        assert!(again.text.starts_with("Note: there is no link number 99"));
        b.step(&Action::Goto { url: "/wiki/A/Anything".into() }, &again);
        let outside = b.render().await;
        assert_eq!(outside.status, 404);
        b.step(&Action::Back, &outside);
        assert_eq!(b.render().await.url, obs.url);
    }
}
