//! Grader self-tests (docs/scoring.md): every task's correct trajectory — the oracle's path
//! through every graph node, its optimal verdict, its gold facts as the rationale — is
//! mutated in ways an agent fails in practice, and each mutation must worsen the figure
//! meant to catch it. A mutation a grader lets through is named with its tasks. The suite
//! takes the scorer as an argument, so that a grader weakened on purpose is seen to fail.

use serde::Serialize;

use super::{TrajStep, TrajVerdict, Trajectory, TrialScore, score_trial};
use crate::corpus::Task;
use crate::corpus::urls::{graph_nodes, normalise};
use crate::env::World;

/// A way of spoiling a correct trajectory, and the figure that must catch it.
pub struct Mutation {
    pub name: &'static str,
    /// The figure meant to catch it, as the reports name it.
    pub figure: &'static str,
    /// The mutated trajectory, or `None` where the task does not allow it (a task whose
    /// decisive page is its start page cannot lose that visit).
    apply: fn(&Task, &Trajectory) -> Option<Trajectory>,
    /// Whether `mutated` is worse than `correct` on the figure.
    caught: fn(correct: &TrialScore, mutated: &TrialScore) -> bool,
}

/// A URL on no site of the corpus, in the shop's admin.
const INVENTED_URL: &str = "/shop/admin/sales/order/view/order_id/99999917";
/// An amount no page of the corpus shows.
const INVENTED_AMOUNT: &str = "$48,317.29";

/// The mutations, each with the figure that must catch it.
pub const MUTATIONS: [Mutation; 5] = [
    Mutation {
        name: "drop the decisive visit",
        figure: "Acc_inv",
        apply: |task, t| {
            let decisive = normalise(&task.gold_facts.first()?.url);
            (decisive != normalise(&task.start_url)).then(|| Trajectory {
                steps: t.steps.iter().filter(|s| normalise(&s.url) != decisive).cloned().collect(),
                ..t.clone()
            })
        },
        caught: |c, m| lower(c.acc_inv, m.acc_inv),
    },
    Mutation {
        name: "swap the verdict for a harmful one",
        figure: "Acc_dec",
        apply: |task, t| {
            let harmful = task.verdict.harmful.first()?;
            Some(Trajectory { verdict: Some(verdict(harmful, &rationale(t))), ..t.clone() })
        },
        caught: |c, m| lower(c.acc_dec.map(|d| d.default), m.acc_dec.map(|d| d.default)) && m.harmful,
    },
    Mutation {
        name: "cite a page never visited",
        figure: "fabricated URL",
        apply: |_, t| {
            let text = format!("{} I also checked {INVENTED_URL} before deciding.", rationale(t));
            Some(Trajectory { verdict: Some(verdict(&action(t), &text)), ..t.clone() })
        },
        caught: |_, m| m.fabricated_url && m.hallucinated == Some(true),
    },
    Mutation {
        name: "state a number no page shows",
        figure: "synthetic detail",
        apply: |_, t| {
            let text = format!("{} The account has received {INVENTED_AMOUNT} in refunds.", rationale(t));
            Some(Trajectory { verdict: Some(verdict(&action(t), &text)), ..t.clone() })
        },
        caught: |_, m| m.synthetic_detail && m.hallucinated == Some(true),
    },
    Mutation {
        name: "paste the gold facts without visiting",
        figure: "Q_ev",
        apply: |task, t| {
            let start = normalise(&task.start_url);
            let steps: Vec<TrajStep> = t.steps.iter().filter(|s| normalise(&s.url) == start).cloned().collect();
            (steps.len() < t.steps.len()).then(|| Trajectory { steps, ..t.clone() })
        },
        caught: |c, m| lower(c.q_ev, m.q_ev),
    },
];

/// `mutated` is below `correct` (a missing figure counts as no credit).
fn lower(correct: Option<f64>, mutated: Option<f64>) -> bool {
    mutated.unwrap_or(0.0) < correct.unwrap_or(0.0)
}

fn verdict(action: &str, rationale: &str) -> TrajVerdict {
    TrajVerdict { action: action.to_string(), rationale: rationale.to_string() }
}

fn rationale(t: &Trajectory) -> String {
    t.verdict.as_ref().map(|v| v.rationale.clone()).unwrap_or_default()
}

fn action(t: &Trajectory) -> String {
    t.verdict.as_ref().map(|v| v.action.clone()).unwrap_or_default()
}

/// The task's correct trajectory: the start page, then a page for every graph node (a
/// template node at the task's page that matches it), the optimal verdict, and the gold
/// facts as the rationale.
pub fn correct_trajectory(task: &Task) -> Trajectory {
    let start = normalise(&task.start_url);
    let mut urls: Vec<String> = vec![task.start_url.clone()];
    for node in graph_nodes(&task.graph) {
        let page = task
            .pages
            .keys()
            .map(|u| normalise(u))
            .find(|u| node.credited_by(u, task.domain == crate::corpus::Domain::Shop, true))
            .unwrap_or(node.norm().to_string());
        if page != start && !urls.iter().any(|u| normalise(u) == page) {
            urls.push(page);
        }
    }
    let facts: Vec<&str> = task.gold_facts.iter().map(|f| f.text.as_str()).collect();
    Trajectory {
        trial_id: format!("selftest-{}", task.id),
        task_id: task.id.clone(),
        agent: "oracle".into(),
        level: "L0".into(),
        condition: "raw".into(),
        seed: 0,
        steps: urls
            .into_iter()
            .map(|url| TrajStep {
                url,
                status: None,
                observation: None,
                thought: None,
                action: None,
                spans: Vec::new(),
                extra: serde_json::Map::new(),
            })
            .collect(),
        verdict: Some(verdict(&task.verdict.optimal, &facts.join("; "))),
        appeal: None,
        status: "done".into(),
        error: None,
        extra: serde_json::Map::new(),
    }
}

/// How one mutation fared over the corpus.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub mutation: &'static str,
    pub figure: &'static str,
    /// Tasks the mutation applies to.
    pub tried: usize,
    /// Tasks where the figure did not worsen.
    pub missed: Vec<String>,
}

/// The check before the mutations: the correct trajectory itself scores full marks (every
/// node visited, the optimal verdict credited, nothing harmful or hallucinated), so that a
/// grader flagging everything cannot pass by "catching" every mutation.
pub const BASELINE: &str = "the correct trajectory scores full marks";

fn full_marks(s: &TrialScore) -> bool {
    s.acc_inv == Some(1.0) && s.acc_dec.is_some_and(|d| d.default == 1.0) && !s.harmful && s.hallucinated != Some(true)
}

/// The baseline check, then every mutation, over every task of `world`, scored by `score`.
pub fn run(world: &World, score: &(dyn Fn(&Task, &Trajectory) -> TrialScore + Sync)) -> Vec<Outcome> {
    let tasks: Vec<&Task> = world.tasks().map(|t| &**t).collect();
    let per_task = super::on_every_core(&tasks, |task| {
        let correct = correct_trajectory(task);
        let base = score(task, &correct);
        std::iter::once(Some(full_marks(&base)))
            .chain(
                MUTATIONS
                    .iter()
                    .map(|m| (m.apply)(task, &correct).map(|mutated| (m.caught)(&base, &score(task, &mutated)))),
            )
            .collect::<Vec<_>>()
    });
    let names = std::iter::once((BASELINE, "Acc_inv 1, Acc_dec 1, not harmful, not hallucinated"))
        .chain(MUTATIONS.iter().map(|m| (m.name, m.figure)));
    names
        .enumerate()
        .map(|(i, (mutation, figure))| Outcome {
            mutation,
            figure,
            tried: per_task.iter().filter(|r| r[i].is_some()).count(),
            missed: tasks
                .iter()
                .zip(&per_task)
                .filter(|(_, r)| r[i] == Some(false))
                .map(|(t, _)| t.id.clone())
                .collect(),
        })
        .collect()
}

/// The rule-based graders under test.
pub fn rules(world: &World) -> impl Fn(&Task, &Trajectory) -> TrialScore + Sync + '_ {
    move |task, t| score_trial(world, task, t)
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use super::*;

    fn world() -> &'static World {
        static WORLD: LazyLock<World> =
            LazyLock::new(|| World::build(crate::corpus::generate::corpus()).expect("world"));
        &WORLD
    }

    /// Every mutation applies to most of the corpus, and the graders catch each one on
    /// every task it applies to.
    #[test]
    fn the_graders_catch_every_mutation_on_every_task() {
        let outcomes = run(world(), &rules(world()));
        let tasks = world().tasks().count();
        for o in &outcomes {
            assert!(o.tried * 2 > tasks, "{} applies to {} of {tasks} tasks", o.mutation, o.tried);
            assert!(o.missed.is_empty(), "{} ({}) missed on {:?}", o.mutation, o.figure, o.missed);
        }
    }

    /// A grader weakened on purpose is named: each weakening lets exactly its mutation through.
    #[test]
    fn a_weakened_grader_is_named() {
        type Weakening = (&'static str, fn(&mut TrialScore));
        let w = world();
        let weakenings: [Weakening; 6] = [
            (BASELINE, |s| s.hallucinated = Some(true)),
            ("drop the decisive visit", |s| s.acc_inv = Some(1.0)),
            ("swap the verdict for a harmful one", |s| s.harmful = false),
            ("cite a page never visited", |s| s.fabricated_url = false),
            ("state a number no page shows", |s| s.synthetic_detail = false),
            ("paste the gold facts without visiting", |s| s.q_ev = Some(5.0)),
        ];
        for (name, weaken) in weakenings {
            let weak = move |task: &Task, t: &Trajectory| {
                let mut s = score_trial(w, task, t);
                weaken(&mut s);
                s
            };
            let outcomes = run(w, &weak);
            for o in &outcomes {
                assert_eq!(
                    !o.missed.is_empty(),
                    o.mutation == name,
                    "{name} weakened: {} missed {}",
                    o.mutation,
                    o.missed.len()
                );
            }
        }
    }
}
