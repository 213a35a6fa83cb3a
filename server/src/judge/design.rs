//! A balanced design across configurations: every configuration of a run (or file) is read
//! over the same cells (task, level, condition), each with the same number of samples
//! (seeds). A file that leaves out a configuration's worst tasks, or repeats its best ones
//! under new seeds, would otherwise choose its own standing; here either shows as a gap on
//! the row, and the paired metrics of a configuration with a gap are withheld.
//!
//! - *missing cells*: cells some other configuration of the set has and this one lacks
//!   (every trial of a task deleted, or a level or condition left out);
//! - *unbalanced cells*: cells of the configuration whose number of trials differs from its
//!   most common number (a seed deleted, or copies added under new seeds).

use std::collections::{BTreeMap, BTreeSet};

// Maps keyed by a file's own names: foldhash, with a key drawn for each map.
use foldhash::HashMap;

use serde::{Deserialize, Serialize};

use super::TrialScore;

/// A configuration's gaps in the design of its set (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DesignGap {
    /// Cells (task, level, condition) of the set this configuration has no trial in.
    #[serde(default)]
    pub missing: usize,
    /// Cells of the configuration with more or fewer trials than its most common number,
    /// or with one seed given to two trials (a relabelled sample).
    #[serde(default)]
    pub unbalanced: usize,
    /// Cells in the set's design (the union over its configurations).
    #[serde(default)]
    pub cells: usize,
}

impl DesignGap {
    pub fn is_empty(&self) -> bool {
        self.missing + self.unbalanced == 0
    }

    /// The gaps of the configurations among `members`, each counted once.
    pub fn of(members: &[&TrialScore]) -> DesignGap {
        let mut per: BTreeMap<&str, DesignGap> = BTreeMap::new();
        for s in members {
            per.insert(s.agent.as_str(), s.design);
        }
        per.values().fold(DesignGap::default(), |a, g| DesignGap {
            missing: a.missing + g.missing,
            unbalanced: a.unbalanced + g.unbalanced,
            cells: a.cells.max(g.cells),
        })
    }

    /// Why the rows of these configurations are not read over the set's whole design.
    pub fn note(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if self.missing > 0 {
            parts.push(format!(
                "{} of the set's {} cells (task, level, condition) have no trial of this configuration although another configuration has them",
                self.missing, self.cells
            ));
        }
        if self.unbalanced > 0 {
            parts.push(format!(
                "{} cells have more or fewer trials (seeds) than the configuration's usual number, or one seed twice, so some tasks weigh more than others",
                self.unbalanced
            ));
        }
        Some(format!(
            "incomplete design: {}; the figures read a different set of tasks than the other rows, and the paired metrics are withheld",
            parts.join("; ")
        ))
    }
}

/// A design cell: task, level, condition.
type Cell<'a> = (&'a str, &'a str, &'a str);

/// Records on every trial its configuration's gap in the design of `scores`.
pub fn attach(scores: &mut [TrialScore]) {
    let mut counts: BTreeMap<&str, HashMap<Cell<'_>, usize>> = BTreeMap::new();
    let mut seeds: HashMap<(&str, Cell<'_>), BTreeSet<i64>> = HashMap::default();
    for s in scores.iter() {
        let cell = (s.task_id.as_str(), s.level.as_str(), s.condition.as_str());
        *counts.entry(s.agent.as_str()).or_default().entry(cell).or_default() += 1;
        seeds.entry((s.agent.as_str(), cell)).or_default().insert(s.seed);
    }
    let union: BTreeSet<Cell<'_>> = counts.values().flat_map(|c| c.keys().copied()).collect();
    let gaps: BTreeMap<String, DesignGap> = counts
        .iter()
        .map(|(agent, cells)| {
            let mut tally: BTreeMap<usize, usize> = BTreeMap::new();
            for n in cells.values() {
                *tally.entry(*n).or_default() += 1;
            }
            // The most common number of trials per cell; a tie goes to the larger number.
            let usual = tally.iter().max_by_key(|(n, k)| (**k, **n)).map_or(0, |(n, _)| *n);
            let gap = DesignGap {
                missing: union.len() - cells.len(),
                unbalanced: cells
                    .iter()
                    .filter(|(cell, n)| **n != usual || seeds[&(*agent, **cell)].len() != **n)
                    .count(),
                cells: union.len(),
            };
            ((*agent).to_string(), gap)
        })
        .collect();
    for s in scores.iter_mut() {
        s.design = gaps.get(&s.agent).copied().unwrap_or_default();
    }
}

#[cfg(test)]
mod tests;
