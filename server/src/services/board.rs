//! The leaderboard's rows and columns, read off an aggregate.

use std::collections::{BTreeMap, HashMap};

use app::model::{BoardRow, Est, PairView};

use crate::judge::aggregate::{Aggregate, Comparison, Group, Metric};

/// The metrics of the leaderboard's columns, after `utility` and `robustness`.
pub const BOARD: [Metric; 15] = [
    Metric::AccInv,
    Metric::EInv,
    Metric::AccRsn,
    Metric::QEv,
    Metric::Hallucination,
    Metric::Exposure,
    Metric::Adoption,
    Metric::Caused,
    Metric::Verification,
    Metric::Recovery,
    Metric::ManipulationEffect,
    Metric::GoalRate,
    Metric::FlipRate,
    Metric::HarmFlip,
    Metric::Cost,
];

/// Leaderboard columns, in display order (`utility` and `robustness` first).
pub fn columns() -> Vec<&'static str> {
    ["utility", "robustness"].into_iter().chain(BOARD.iter().map(|m| m.as_str())).chain(["noise_floor"]).collect()
}

/// The group metrics behind the leaderboard columns.
pub fn board_metrics(utility: Metric) -> Vec<Metric> {
    let mut m = BOARD.to_vec();
    m.push(utility);
    m
}

pub fn group_cells(g: &Group, utility: Metric) -> BTreeMap<String, Option<Est>> {
    let m = |k: Metric| g.metrics.get(k.as_str()).copied().flatten();
    let mut cells =
        BTreeMap::from([("utility".to_string(), m(utility)), ("robustness".to_string(), m(Metric::Robustness))]);
    cells.extend(BOARD.iter().map(|&k| (k.as_str().to_string(), m(k))));
    cells
}

/// One row per configuration, in the aggregate's leaderboard order.
pub fn board_rows(agg: &Aggregate, utility: Metric) -> Vec<BoardRow> {
    let groups: HashMap<&str, &Group> =
        agg.groups.iter().map(|g| (g.key.get("agent").map_or("", String::as_str), g)).collect();
    agg.leaderboard
        .iter()
        .map(|s| {
            let g = groups.get(s.agent.as_str());
            let mut cells = g.map(|g| group_cells(g, utility)).unwrap_or_default();
            cells.insert("utility".into(), s.utility);
            cells.insert("robustness".into(), s.robustness);
            cells.insert("noise_floor".into(), s.noise_floor);
            BoardRow {
                agent: s.agent.clone(),
                band: s.band,
                trials: s.trials,
                errors: s.errors,
                error_rate: s.error_rate,
                self_reported: s.self_reported,
                disagreeing: g.map_or(0, |g| g.disagreeing),
                design_gaps: s.design.missing + s.design.unbalanced,
                design_note: s.design_note.clone(),
                disputed: g.map_or(0, |g| g.disputed),
                cells,
                pass_k: s.pass_k.clone(),
            }
        })
        .collect()
}

/// The rows of an aggregate grouped by `field` and configuration, one table per value of
/// `field`.
pub fn breakdown_rows(split: &Aggregate, field: &str, utility: Metric) -> Vec<(String, Vec<BoardRow>)> {
    let mut parts: BTreeMap<String, Vec<BoardRow>> = BTreeMap::new();
    for g in &split.groups {
        parts.entry(g.key.get(field).cloned().unwrap_or_default()).or_default().push(BoardRow {
            agent: g.key.get("agent").cloned().unwrap_or_default(),
            band: 0,
            trials: g.trials,
            errors: g.errors,
            error_rate: g.error_rate,
            self_reported: g.self_reported,
            disagreeing: g.disagreeing,
            design_gaps: g.design.missing + g.design.unbalanced,
            design_note: g.design_note.clone(),
            disputed: g.disputed,
            cells: group_cells(g, utility),
            pass_k: Vec::new(),
        });
    }
    parts.into_iter().collect()
}

/// A paired comparison of two configurations as the leaderboard shows it.
pub fn pair_view(c: &Comparison) -> PairView {
    PairView {
        a: c.a.clone(),
        b: c.b.clone(),
        diff: c.paired.diff.mean,
        lo: c.paired.diff.lo,
        hi: c.paired.diff.hi,
        no_interval: c.paired.diff.no_interval,
        coverage: c.paired.diff.coverage,
        n: c.paired.diff.n,
        p: c.paired.p,
        p_holm: c.p_holm,
    }
}
