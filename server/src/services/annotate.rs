//! The annotation port: the queue of disputed labels, locks while an item is open, labels
//! by annotators, conflicts between them, and adjudication by an operator. Every label is a
//! `label_event`; [`crate::judge::aggregate::settle`] decides what overrides the automatic
//! label in every aggregate.

use std::collections::HashMap;
use std::sync::Arc;

use app::error::AppError;
use app::model::{GradeView, Identity, NewGrade, NewLabel, OpenItem, QUEUE_PAGE, Queue, QueueItem, Vote};

use super::insights::InsightsService;
use super::internal;
use super::runs::{score_of, trial_row};
use crate::db::{DecisionClass, LabelEvent, LabelLock, ReasoningGrade, Store, now_ms};
use crate::env::World;
use crate::judge::TrialScore;
use crate::judge::aggregate::{Metric, contribution};
use crate::judge::labels::{Label, LabelKind, QUEUE_ORDER};
use crate::runs::export::parse_steps;

/// How long an opened item stays locked to its annotator.
pub const LOCK_MS: i64 = 10 * 60 * 1000;

/// The queue, locks and labels.
pub struct AnnotateService {
    pub store: Arc<dyn Store>,
    pub world: Arc<World>,
    pub insights: Arc<InsightsService>,
}

fn check_kind(kind: &str) -> Result<LabelKind, AppError> {
    LabelKind::parse(kind).map_err(|e| AppError::Invalid { field: "kind".into(), message: e.to_string() })
}

fn item(
    s: &TrialScore,
    run: &str,
    kind: LabelKind,
    l: &Label,
    votes: Vec<Vote>,
    lock: Option<(String, i64)>,
) -> QueueItem {
    QueueItem {
        trial_id: s.trial_id.clone(),
        run: run.to_string(),
        task_id: s.task_id.clone(),
        agent: s.agent.clone(),
        level: s.level.clone(),
        kind: kind.as_str().to_string(),
        value: l.value,
        turn: l.turn,
        source: l.source.clone(),
        confidence: l.confidence,
        reason: l.reason.clone(),
        second_opinion: l.second_opinion.as_ref().map(|o| (o.value, o.reason.clone())),
        conflict: l.conflict,
        votes,
        locked_by: lock,
    }
}

fn vote(e: &LabelEvent) -> Option<Vote> {
    (e.source == "human" || e.source == "adjudication").then(|| Vote {
        author: e.author.clone().unwrap_or_else(|| "annotator".into()),
        value: e.value.0,
        note: e.reason.clone(),
        source: e.source.clone(),
    })
}

/// Label metrics whose per-configuration mean people's labels changed: (agent, metric,
/// automatic-only mean, settled mean). Plain means; the leaderboard has the intervals.
fn effects(scores: &[TrialScore]) -> Vec<(String, String, f64, f64)> {
    const METRICS: [Metric; 5] =
        [Metric::Exposure, Metric::Adoption, Metric::Verification, Metric::Recovery, Metric::GoalRate];
    let automatic: Vec<TrialScore> = scores
        .iter()
        .map(|s| {
            let mut s = s.clone();
            if let Some(ls) = s.labels.as_mut() {
                for kind in QUEUE_ORDER {
                    let l = ls.get_mut(kind);
                    if let Some(a) = l.automatic.take() {
                        *l = *a;
                    }
                }
            }
            s
        })
        .collect();
    let mean = |set: &[TrialScore], agent: &str, metric: Metric| {
        let (n, d) = set
            .iter()
            .filter(|s| s.agent == agent)
            .filter_map(|s| contribution(s, metric))
            .fold((0.0, 0.0), |(n, d), (a, b)| (n + a, d + b));
        (d > 0.0).then(|| n / d)
    };
    let agents: std::collections::BTreeSet<&str> = scores.iter().map(|s| s.agent.as_str()).collect();
    let mut out = Vec::new();
    for agent in agents {
        for metric in METRICS {
            if let (Some(before), Some(after)) = (mean(&automatic, agent, metric), mean(scores, agent, metric))
                && (before - after).abs() > 1e-12
            {
                out.push((agent.to_string(), metric.as_str().to_string(), before, after));
            }
        }
    }
    out
}

impl AnnotateService {
    async fn lock(&self, trial: &str, kind: LabelKind, who: &Identity) -> Result<i64, AppError> {
        let now = now_ms();
        let until = now + LOCK_MS;
        match self.store.lock_label(trial, kind, &who.name, now, until).await.map_err(internal)? {
            None => Ok(until),
            Some((holder, expires)) => Err(AppError::Conflict(format!(
                "{holder} has this {kind} label open (for about {} more minutes)",
                ((expires - now) / 60_000).max(1)
            ))),
        }
    }

    async fn item_of(&self, trial_id: &str, kind: LabelKind) -> Result<(QueueItem, bool), AppError> {
        let trial = trial_row(self.store.as_ref(), trial_id).await?;
        let steps = parse_steps(&self.store.steps(trial_id).await.map_err(internal)?).map_err(internal)?;
        let score = score_of(self.store.as_ref(), &self.world, &trial, &steps)
            .await?
            .ok_or_else(|| AppError::Invalid { field: "trial".into(), message: "the trial has not finished".into() })?;
        let label = score
            .labels
            .as_ref()
            .map(|l| l.get(kind))
            .ok_or_else(|| AppError::NotFound(format!("{kind} label of {trial_id}")))?;
        let votes = self
            .store
            .trial_label_events(trial_id)
            .await
            .map_err(internal)?
            .iter()
            .filter(|e| e.kind == kind)
            .filter_map(vote)
            .collect();
        // The label people see is the automatic one; `settled`: a person's label replaced it.
        let settled = label.automatic.is_some();
        let shown = label.automatic.as_deref().unwrap_or(label);
        let mut it = item(&score, &trial.run_id, kind, shown, votes, None);
        it.conflict = label.conflict;
        Ok((it, settled))
    }
}

#[async_trait::async_trait]
impl app::ssr::Annotate for AnnotateService {
    async fn queue(&self, run: Option<String>, page: usize) -> Result<Queue, AppError> {
        let runs: Vec<String> = self
            .store
            .runs()
            .await
            .map_err(internal)?
            .into_iter()
            .filter(|r| !crate::runs::geo::is_geo(r))
            .map(|r| r.run_id)
            .collect();
        let run = match run.filter(|r| !r.is_empty()) {
            Some(r) if runs.contains(&r) => r,
            Some(r) => return Err(AppError::NotFound(format!("run {r}"))),
            None => runs.first().cloned().ok_or_else(|| AppError::NotFound("a run (launch one first)".into()))?,
        };
        let key = self.insights.fingerprint(&run).await?;
        let (scores, pending) = self.insights.scores_ready(&run, key).await?;
        let mut votes: HashMap<(String, LabelKind), Vec<Vote>> = HashMap::new();
        for e in self.store.people_label_events(&run).await.map_err(internal)? {
            if let Some(v) = vote(&e) {
                votes.entry((e.trial_id.clone(), e.kind)).or_default().push(v);
            }
        }
        let locks: HashMap<(String, LabelKind), (String, i64)> = self
            .store
            .label_locks(now_ms())
            .await
            .map_err(internal)?
            .into_iter()
            .map(|LabelLock { trial_id, kind, holder, expires_at }| ((trial_id, kind), (holder, expires_at)))
            .collect();
        let mut items = Vec::new();
        let mut settled = 0;
        for s in scores.iter() {
            let Some(ls) = &s.labels else { continue };
            for kind in QUEUE_ORDER {
                let l = ls.get(kind);
                if l.automatic.is_some() {
                    settled += 1;
                }
                if !l.disputed {
                    continue;
                }
                let key = (s.trial_id.clone(), kind);
                items.push(item(s, &run, kind, l, votes.remove(&key).unwrap_or_default(), locks.get(&key).cloned()));
            }
        }
        let rank = |k: &str| QUEUE_ORDER.iter().position(|x| x.as_str() == k).unwrap_or(QUEUE_ORDER.len());
        items.sort_by(|a, b| {
            b.conflict.cmp(&a.conflict).then(rank(&a.kind).cmp(&rank(&b.kind))).then(a.trial_id.cmp(&b.trial_id))
        });
        let total = items.len();
        let pages = total.div_ceil(QUEUE_PAGE).max(1);
        let page = page.min(pages - 1);
        let items: Vec<_> = items.into_iter().skip(page * QUEUE_PAGE).take(QUEUE_PAGE).collect();
        let (agg, waiting) =
            self.insights.aggregate_ready(&run, key, &["agent"], Metric::AccDec, &[Metric::AccDec]).await?;
        let effects = effects(&scores);
        Ok(Queue {
            run,
            runs,
            items,
            total,
            page,
            pages,
            settled,
            agreement: agg.agreement.iter().map(|a| (a.kind.as_str().to_string(), a.n, a.kappa)).collect(),
            effects,
            pending: pending.or(waiting),
        })
    }

    async fn open(&self, who: Identity, trial: String, kind: String) -> Result<OpenItem, AppError> {
        let kind = check_kind(&kind)?;
        let (mut item, settled) = self.item_of(&trial, kind).await?;
        let until = self.lock(&trial, kind, &who).await?;
        item.locked_by = Some((who.name, until));
        Ok(OpenItem { item, locked_until: until, settled })
    }

    async fn label(&self, who: Identity, label: NewLabel, adjudicate: bool) -> Result<(), AppError> {
        let kind = check_kind(&label.kind)?;
        let value = match label.value.as_str() {
            "yes" => true,
            "no" => false,
            other => {
                return Err(AppError::Invalid {
                    field: "value".into(),
                    message: format!("{other:?}: choose yes or no"),
                });
            }
        };
        let turn = match label.turn.trim() {
            "" => None,
            t => Some(t.parse::<i64>().ok().filter(|t| *t >= 0).ok_or_else(|| AppError::Invalid {
                field: "turn".into(),
                message: format!("{t:?} is not a turn number"),
            })?),
        };
        if label.note.trim().is_empty() {
            return Err(AppError::Invalid {
                field: "note".into(),
                message: "say why (the note is kept with the label)".into(),
            });
        }
        // The item must exist and be finished; the caller must hold (or be able to take) the lock.
        self.item_of(&label.trial, kind).await?;
        self.lock(&label.trial, kind, &who).await?;
        let event = LabelEvent {
            event_id: 0,
            trial_id: label.trial.clone(),
            kind,
            value: value.into(),
            turn,
            source: if adjudicate { "adjudication" } else { "human" }.to_string(),
            confidence: 1.0,
            reason: label.note.trim().to_string(),
            author: Some(who.name.clone()),
            judge_version: None,
            created_at: now_ms(),
        };
        self.store.add_label(&event).await.map_err(internal)?;
        self.store.unlock_label(&label.trial, kind, &who.name).await.map_err(internal)
    }

    async fn grade_view(&self, who: Identity, trial: String) -> Result<GradeView, AppError> {
        let row = trial_row(self.store.as_ref(), &trial).await?;
        let task = self.world.task(&row.task_id).ok_or_else(|| AppError::NotFound(format!("task {}", row.task_id)))?;
        let grades: Vec<ReasoningGrade> = self
            .store
            .grades(&row.run_id)
            .await
            .map_err(internal)?
            .into_iter()
            .filter(|g| g.trial_id == trial)
            .collect();
        let authors: std::collections::BTreeSet<&str> = grades.iter().map(|g| g.author.as_str()).collect();
        let mine = grades
            .iter()
            .filter(|g| g.author == who.name)
            .max_by_key(|g| g.grade_id)
            .map(|g| (g.acc_rsn, g.decision.as_str().to_string(), g.note.clone()));
        Ok(GradeView {
            graded_by: authors.len(),
            trial_id: row.trial_id,
            run: row.run_id,
            task_id: row.task_id,
            agent: row.agent,
            verdict: row.verdict,
            rationale: row.rationale.unwrap_or_default(),
            gold_facts: task.gold_facts.iter().map(|f| f.text.clone()).collect(),
            justification: task.justification.clone(),
            optimal: task.verdict.optimal.clone(),
            mine,
        })
    }

    async fn grade(&self, who: Identity, grade: NewGrade) -> Result<(), AppError> {
        let invalid = |field: &str, message: String| AppError::Invalid { field: field.into(), message };
        let text = grade.acc_rsn.trim();
        let acc_rsn = text
            .parse::<f64>()
            .ok()
            .filter(|v| (0.0..=1.0).contains(v) && ((v * 10.0).round() - v * 10.0).abs() < 1e-9)
            .ok_or_else(|| invalid("acc_rsn", format!("{text:?}: choose a value from 0.0 to 1.0 in tenths")))?;
        let decision = DecisionClass::parse(grade.decision.trim())
            .map_err(|e| invalid("decision", format!("{:?}: choose one of {}", e.name, e.known)))?;
        if grade.note.trim().is_empty() {
            return Err(invalid("note", "say why (the note is kept with the grade)".into()));
        }
        let row = trial_row(self.store.as_ref(), &grade.trial).await?;
        if row.state != crate::db::TrialState::Done {
            return Err(invalid("trial", "only a finished trial with a verdict can be graded".into()));
        }
        let g = ReasoningGrade {
            grade_id: 0,
            trial_id: row.trial_id,
            author: who.name,
            acc_rsn,
            decision,
            note: grade.note.trim().to_string(),
            created_at: now_ms(),
        };
        self.store.add_grade(&g).await.map_err(internal)?;
        Ok(())
    }

    async fn release(&self, who: Identity, trial: String, kind: String) -> Result<(), AppError> {
        let kind = check_kind(&kind)?;
        self.store.unlock_label(&trial, kind, &who.name).await.map_err(internal)
    }
}
