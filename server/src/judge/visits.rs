//! What each step's page earns under a task: the graph nodes it credits, or nothing when
//! the sites serve no page there (the page-existence rule, docs/scoring.md).
//!
//! A scorer of many trajectories keeps, per task, what each visited address earns: agents
//! come back to the same few pages of a case, trajectory after trajectory, and matching an
//! address against every node of the graph and the world's pages is the same work each time.

use std::sync::{Arc, RwLock};

use rustc_hash::FxHashMap;

use super::TrajStep;
use super::bounded::Kept;
use super::rules::Graph;
use crate::env::World;

/// Bytes kept per task at most, counted as [`size`] does: past them an address is matched
/// each time (a file that invents a fresh address at every step, or very long ones, costs
/// its matching, and at most this much memory a task: 12 MiB over the built-in corpus).
const KEPT_PER_TASK: usize = 16 << 10;

/// What an address kept takes: its text, the map's entry and the nodes' list.
fn size(norm: &str, earned: &Earned) -> usize {
    norm.len() + 64 + 8 * earned.nodes.len()
}

/// What a (normalised) address earns under one task, kept across trajectories.
#[derive(Default)]
pub struct KeptVisits(RwLock<Kept<Box<str>, Earned, KEPT_PER_TASK>>);

/// What a visit to one address earns.
#[derive(Clone)]
struct Earned {
    /// The graph nodes it credits (by the matching rules alone).
    nodes: Arc<[usize]>,
    /// Whether the sites serve a page there.
    served: bool,
}

impl KeptVisits {
    fn earned(&self, norm: &str, make: impl FnOnce() -> Earned) -> Earned {
        super::bounded::kept_or(&self.0, norm, || {
            let e = make();
            let bytes = size(norm, &e);
            (e, bytes)
        })
    }
}

/// Why a step's page is no page: it answered non-2xx, or the sites do not serve it.
fn refusal(step: &TrajStep, norm: &str) -> String {
    // What the sites serve is derived, not read from the file: a recorded 2xx does not make
    // a page (a task's evidence lives on its site's pages only), and a page the sites serve
    // is one whatever status the file recorded (a redirect to it, say; `derive` notes it).
    match step.status {
        Some(s) if !(200..300).contains(&s) => format!("{norm} answered {s}"),
        _ => format!("{norm} is no page of the sites or of the task file"),
    }
}

/// The graph nodes each step credits, with the page-existence rule applied: a step whose
/// URL is neither a page of the built-in sites nor one the task file defines credits
/// nothing by any rule (whatever status the file recorded). Also returns the refused turns
/// and why. `visits` are the steps' normalised URLs; each distinct one is matched once
/// (or read from `kept`).
pub(super) fn page_hits(
    world: &World,
    graph: &Graph,
    kept: Option<&KeptVisits>,
    steps: &[TrajStep],
    visits: &[String],
) -> (Vec<Vec<usize>>, Vec<(usize, String)>) {
    let earn = |norm: &str| Earned { nodes: graph.credited(norm).collect(), served: world.serves(norm) };
    let mut first: FxHashMap<&str, Earned> = FxHashMap::default();
    first.reserve(visits.len());
    let mut hits = Vec::with_capacity(visits.len());
    let mut refused = Vec::new();
    for (t, (step, norm)) in steps.iter().zip(visits).enumerate() {
        let earned = first
            .entry(norm.as_str())
            .or_insert_with(|| kept.map_or_else(|| earn(norm), |k| k.earned(norm, || earn(norm))));
        if earned.served {
            hits.push(earned.nodes.to_vec());
        } else {
            hits.push(Vec::new());
            refused.push((t, refusal(step, norm)));
        }
    }
    (hits, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_or_long_addresses_stay_within_the_bound() {
        let kept = KeptVisits::default();
        for i in 0..5_000 {
            let norm = format!("/shop/{}{i}", "x".repeat(i % 3_000));
            let earned = kept.earned(&norm, || Earned { nodes: Arc::from([i, i + 1]), served: i % 2 == 0 });
            assert_eq!((earned.nodes[0], earned.served), (i, i % 2 == 0), "{i}");
        }
        let k = kept.0.read().expect("lock");
        assert!(k.iter().next().is_some() && k.bytes() <= KEPT_PER_TASK, "{} bytes", k.bytes());
        assert_eq!(k.bytes(), k.iter().map(|(n, e)| size(n, e)).sum::<usize>());
    }
}
