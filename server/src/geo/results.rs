//! Every finished target of a stored GEO run, read once, and the tally of its trials:
//! how many ended in error or are unfinished, per (ranker, method) and per dataset.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::Context;
use vocab::GeoIncomplete as Incomplete;

use super::data::List;
use super::plan::{GeoSpec, GeoTrial, target_of, text_key};
use super::{OrderRecord, Scored, result_of};
use crate::db::{Store, TrialRow, TrialState};
use vocab::{RunId, TrialId};

/// How many trials a run has, failed (an error state) and not yet finished, in all and per
/// (ranker, method).
#[derive(Clone, Debug, Default)]
pub struct Tally {
    pub trials: usize,
    pub errors: usize,
    pub unfinished: usize,
    pub by_variant: BTreeMap<(String, String), Incomplete>,
    /// How the compared reading differs from the run's.
    pub readings: super::parse::Readings,
    /// The lists read now are not those the run was planned on (originals adopted since).
    pub lists_changed: bool,
    /// Stored texts made from another original than the list's now.
    pub stale_texts: usize,
    /// Per variant, per dataset: (trials, scored).
    pub by_dataset: BTreeMap<(String, String), BTreeMap<String, (usize, usize)>>,
}

impl Tally {
    /// The variants with trials in no mean: ended in error or unfinished, or none scored.
    pub fn incomplete(&self) -> Vec<Incomplete> {
        let mut out: Vec<Incomplete> =
            self.by_variant.values().filter(|v| v.errors + v.unfinished > 0 || v.scored == 0).cloned().collect();
        for v in &mut out {
            let datasets = self.by_dataset.get(&(v.ranker.clone(), v.method.clone()));
            v.left_out = datasets.into_iter().flatten().filter(|(_, c)| c.1 == 0).map(|(d, _)| d.clone()).collect();
        }
        out
    }

    /// Counts a trial in its variant's and dataset's rows and in the run's errors and
    /// unfinished; true when it finished and has orders to score.
    fn count(&mut self, trial: &TrialRow) -> bool {
        let variant = (trial.ranker().to_string(), trial.method().to_string());
        let row = self.by_variant.entry(variant).or_insert_with(|| Incomplete {
            ranker: trial.ranker().to_string(),
            method: trial.method().to_string(),
            trials: 0,
            errors: 0,
            unfinished: 0,
            scored: 0,
            left_out: Vec::new(),
        });
        row.trials += 1;
        let dataset = vocab::TaskRef::geo(trial.target_id()).map(|t| t.dataset).unwrap_or_default();
        let counts = self
            .by_dataset
            .entry((trial.ranker().to_string(), trial.method().to_string()))
            .or_default()
            .entry(dataset)
            .or_default();
        counts.0 += 1;
        counts.1 += usize::from(trial.state == TrialState::Done);
        match trial.state {
            TrialState::Done => row.scored += 1,
            TrialState::Error => {
                row.errors += 1;
                self.errors += 1;
            }
            _ => {
                row.unfinished += 1;
                self.unfinished += 1;
            }
        }
        trial.state == TrialState::Done
    }
}

/// Each finished trial's orders, read once from the run's stored steps; a finished trial
/// without orders, or with one unreadable, is an error.
fn finished_orders(
    trials: &[TrialRow],
    mut steps: HashMap<TrialId, Vec<String>>,
) -> anyhow::Result<HashMap<&str, Vec<OrderRecord>>> {
    let mut records_of = HashMap::new();
    for trial in trials.iter().filter(|t| t.state == TrialState::Done) {
        let records: Vec<OrderRecord> = steps
            .remove(&trial.trial_id)
            .unwrap_or_default()
            .iter()
            .map(|b| serde_json::from_str(b))
            .collect::<Result<_, _>>()
            .with_context(|| format!("trial {}: unreadable order record", trial.trial_id))?;
        if records.is_empty() {
            anyhow::bail!("trial {} is done but has no stored orders", trial.trial_id);
        }
        records_of.insert(trial.trial_id.as_str(), records);
    }
    Ok(records_of)
}

/// Every finished target of a run, by (ranker, method). Returns the spec too.
pub async fn results(
    store: &dyn Store,
    lists: &[List],
    run_id: &RunId,
) -> anyhow::Result<(GeoSpec, BTreeMap<(String, String), Vec<Scored>>, Tally)> {
    let run = store.run(run_id).await?;
    let geo = GeoSpec::of_run(&run)?;
    let trials = store.trials(run_id).await?;
    let mut out: BTreeMap<(String, String), Vec<Scored>> = BTreeMap::new();
    let records_of = finished_orders(&trials, store.run_steps(run_id).await?)?;
    // Each (method, ranker)'s planned key once (a recipe is a hash, not worth redoing per
    // trial), and the key each finished trial ranked.
    let key_of: HashMap<(&str, &str), String> =
        trials.iter().map(|t| ((t.method(), t.ranker()), text_key(&geo, t.method(), t.ranker()))).collect();
    let ranked_key = |t: &TrialRow| -> String {
        let planned = &key_of[&(t.method(), t.ranker())];
        super::texts::ranked_key(records_of.get(t.trial_id.as_str()).map_or(&[], Vec::as_slice), planned).to_string()
    };
    let ranked: BTreeSet<(String, String)> =
        trials.iter().map(|t| (ranked_key(t), t.target_id().to_string())).collect();
    let (flagged, stale_texts) = super::texts::flags(store, lists, &ranked).await?;
    let mut tally = Tally {
        trials: trials.len(),
        lists_changed: super::data::changed_since(lists, trials.iter().map(|t| t.target_id()), &run.corpus_version),
        stale_texts,
        ..Tally::default()
    };
    for trial in &trials {
        if !tally.count(trial) {
            continue;
        }
        let (list, target) = target_of(lists, trial.target_id())?;
        let records = &records_of[trial.trial_id.as_str()];
        let names: Vec<String> = list.items.iter().map(|i| i.name.clone()).collect();
        let other = geo.protocol.parser.compared();
        for r in records {
            for reply in [&r.clean_reply, &r.edited_reply] {
                tally.readings.add(reply, &names, target, geo.protocol.parser, other);
            }
        }
        // A cross-encoder's replies are scores, not text to read.
        let readings = if geo.rerankers.contains_key(trial.ranker()) {
            super::Readings::default()
        } else {
            super::readings(records, &names, geo.protocol.parser)
        };
        let text_key = ranked_key(trial);
        let key = (text_key.clone(), list.dataset.clone(), list.category.clone(), i64::try_from(target + 1)?);
        let (kvr, ppl_r, search) =
            *flagged.get(&key).with_context(|| format!("trial {}: no stored text", trial.trial_id))?;
        out.entry((trial.ranker().to_string(), trial.method().to_string())).or_default().push(Scored {
            dataset: list.dataset.clone(),
            list: list.key(),
            target: target + 1,
            result: result_of(records, list.items.len(), geo.protocol.agg),
            failed_orders: records.iter().filter(|r| r.failed()).count(),
            readings,
            kvr,
            ppl_r,
            search,
            text_key,
        });
    }
    Ok((geo, out, tally))
}
