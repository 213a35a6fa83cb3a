//! What one caller sees of the annotation queue: an item as its role and labels allow
//! (blind while people's labels are wanted), the filters and their counts, agreement rows.

use std::collections::BTreeMap;

use app::model::{AgreementRow, Identity, QueueFilter, QueueItem, Role, Vote};

use crate::db::LabelEvent;
use crate::judge::TrialScore;
use crate::judge::aggregate::Agreement;
use crate::judge::labels::{Label, LabelKind};

pub(super) fn vote(e: &LabelEvent) -> Option<Vote> {
    (e.source == "human" || e.source == "adjudication").then(|| Vote {
        author: e.author.clone().unwrap_or_else(|| "annotator".into()),
        value: e.value.0,
        note: e.reason.clone(),
        source: e.source.clone(),
        turn: e.turn.and_then(|t| usize::try_from(t).ok()),
        at: e.created_at,
    })
}

/// What the caller may see of an item, from its label and people's labels.
pub(super) struct ItemParts<'a> {
    pub(super) score: &'a TrialScore,
    pub(super) run: &'a str,
    pub(super) kind: LabelKind,
    /// The automatic label (before people's labels replaced it).
    pub(super) automatic: &'a Label,
    pub(super) conflict: bool,
    /// Drawn into the audit sample (undisputed).
    pub(super) audit: bool,
    pub(super) votes: Vec<Vote>,
    pub(super) needed: usize,
    pub(super) lock: Option<(String, i64)>,
    /// Whether the item still waits for people's labels (disputed, in conflict or audited,
    /// and not settled): only then are annotators blind to it.
    pub(super) waiting: bool,
}

pub(super) fn item(parts: ItemParts<'_>, who: Option<&Identity>) -> QueueItem {
    let ItemParts { score: s, run, kind, automatic: l, conflict, audit, votes, needed, lock, waiting } = parts;
    let name = who.map(|w| w.name.as_str());
    // The caller's first label: a person's label is final once given.
    let mine = votes.iter().find(|v| v.source == "human" && Some(v.author.as_str()) == name).map(|v| v.value);
    let operator = who.is_some_and(|w| w.role >= Role::Operator);
    // Blind only while people's labels are still wanted: a settled item (or one no one
    // disputes) shows everything, as its trajectory page does.
    let blind = !operator && mine.is_none() && waiting;
    let labels = votes
        .iter()
        .filter(|v| v.source == "human")
        .map(|v| v.author.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    QueueItem {
        trial_id: s.trial_id.clone().into(),
        run: run.to_string().into(),
        // Agent runs only: a stored id is a Mirage task or another harness's sample.
        task: vocab::TaskRef::parse(&s.task_id).unwrap_or_else(|_| vocab::TaskRef::Mirage(s.task_id.clone())),
        agent: s.agent.clone(),
        level: s.level.clone(),
        kind,
        value: (!blind).then_some(l.value),
        // While blind, whether the label points to a turn would tell its value: the item
        // points to the trial's first exposure instead, and hides how sure the rule was.
        // For an exposure label that turn is the label's own, so it points nowhere.
        turn: match (blind, kind) {
            (false, _) => l.turn,
            (true, LabelKind::Exposure) => None,
            (true, _) => s.labels.as_ref().and_then(|ls| ls.get(LabelKind::Exposure).turn),
        },
        source: if blind { "hidden".into() } else { l.source.to_string() },
        confidence: if blind { 0.0 } else { l.confidence },
        reason: (!blind).then(|| l.reason.to_string()),
        second_opinion: if blind { None } else { l.second_opinion.as_ref().map(|o| (o.value, o.reason.to_string())) },
        conflict,
        audit,
        labels,
        needed,
        mine,
        votes: if blind { Vec::new() } else { votes },
        blind,
        locked_by: lock,
    }
}

/// Whether an item passes the filter for the caller.
pub(super) fn passes(i: &QueueItem, f: &QueueFilter) -> bool {
    let eq = |want: &str, have: &str| want.is_empty() || want == have;
    eq(&f.kind, i.kind.as_str())
        && eq(&f.agent, &i.agent)
        && eq(&f.level, i.level.as_str())
        && (f.task.trim().is_empty() || f.task.trim() == i.task.to_string())
        && (f.state.is_empty() || states(i).contains(&f.state.as_str()))
}

/// The filter states an item is in for the caller (see [`app::model::QUEUE_STATES`]).
pub(super) fn states(i: &QueueItem) -> Vec<&'static str> {
    let mut out = Vec::new();
    if i.conflict {
        out.push("conflict");
    } else {
        if i.mine.is_none() {
            out.push("todo");
        }
        if i.labels > 0 {
            out.push("waiting");
        }
    }
    if i.mine.is_some() {
        out.push("mine");
    }
    if i.audit {
        out.push("audit");
    }
    out
}

/// The choices of one filter with their counts; the current choice stays listed (at 0)
/// when the other filters leave it nothing.
pub(super) fn facet<'a>(values: impl Iterator<Item = &'a str>, current: &str) -> Vec<(String, usize)> {
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for v in values {
        *by.entry(v.to_string()).or_default() += 1;
    }
    if !current.is_empty() {
        by.entry(current.to_string()).or_default();
    }
    by.into_iter().collect()
}

pub(super) fn row(a: &Agreement) -> AgreementRow {
    AgreementRow { kind: a.kind, n: a.n, kappa: a.kappa, lo: a.lo, hi: a.hi, raw: a.raw, note: a.note.clone() }
}
