//! What a run's configurations cost: how each is priced, and the cost table of the run
//! page and `mirage runs show` (one row per configuration and role).

use std::collections::{BTreeMap, HashMap};

use vocab::{RunId, TrialId};

use super::{BASELINES, EndpointSpec, RunSpec, split_config};
use crate::db::{Store, TokenUse};

/// The agent calls of each configuration's counterfactual replays: a replay's own turns,
/// from the turn it branches at (the turns before are the original's, counted with it).
pub async fn replay_use(store: &dyn Store, run: &RunId) -> anyhow::Result<Vec<TokenUse>> {
    let mut agents: HashMap<TrialId, String> = HashMap::new();
    let mut by_agent: BTreeMap<String, TokenUse> = BTreeMap::new();
    for r in store.replays_in_run(run).await? {
        let agent = match agents.get(&r.trial_id) {
            Some(a) => a.clone(),
            None => {
                let a = store.trial(&r.trial_id).await?.agent;
                agents.insert(r.trial_id.clone(), a.clone());
                a
            }
        };
        let steps: Vec<serde_json::Value> = serde_json::from_str(&r.steps).unwrap_or_default();
        let u = by_agent.entry(agent.clone()).or_insert_with(|| TokenUse {
            agent,
            trials: 0,
            steps: 0,
            unmetered: 0,
            reported: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
        });
        u.trials += 1;
        for s in steps.iter().filter(|s| s["t"].as_i64().is_some_and(|t| t >= r.from_turn)) {
            u.steps += 1;
            if let Ok(used) = serde_json::from_value::<crate::llm::Usage>(s["usage"].clone()) {
                u.reported += 1;
                u.prompt_tokens += i64::try_from(used.prompt_tokens).unwrap_or(i64::MAX);
                u.completion_tokens += i64::try_from(used.completion_tokens).unwrap_or(i64::MAX);
            }
        }
    }
    Ok(by_agent.into_values().collect())
}

/// How a configuration's agent calls are priced: a baseline pays nothing, a model endpoint
/// of the spec its configured price (a `+defense` suffix is the same agent).
pub fn pricing(name: &str, endpoints: &BTreeMap<String, EndpointSpec>) -> crate::judge::cost::Pricing {
    use crate::judge::cost::Pricing;
    let base = split_config(name).map_or(name, |(n, _)| n);
    match endpoints.get(base) {
        Some(e) => e.price.map_or(Pricing::Unpriced, Pricing::Priced),
        None if BASELINES.contains(&base) => Pricing::Baseline,
        None => Pricing::Unpriced,
    }
}

/// Each configuration's tokens and cost from what its steps reported (`uses`), priced as
/// the run's spec says; configurations with no finished trial and no step yet are left out.
/// `replays` are the calls of the configurations' counterfactual replays (one "trial" per
/// replay), priced as the agent's.
pub fn cost_rows(
    spec: &RunSpec,
    (uses, replays): (&[crate::db::TokenUse], &[crate::db::TokenUse]),
    others: &[crate::db::ModelUse],
    judged: &[crate::db::JudgeUse],
) -> Vec<vocab::CostRow> {
    use crate::judge::cost::Pricing;
    let roles = uses.iter().map(|u| (vocab::CostRole::Agent, u));
    let agents = roles.chain(replays.iter().map(|u| (vocab::CostRole::Replay, u))).map(|(role, u)| {
        let usage = usage_of(u.prompt_tokens, u.completion_tokens);
        let (cost_usd, pricing) = match pricing(&u.agent, &spec.endpoints) {
            Pricing::Baseline => (Some(0.0), "baseline: no model calls".to_string()),
            Pricing::Priced(p) if u.unmetered > 0 => (
                None,
                format!(
                    "${} / ${} per million tokens; {} trials failed on replies that could not be read (paid for, \
                     their usage not kept)",
                    p.prompt, p.completion, u.unmetered
                ),
            ),
            Pricing::Priced(p) if u.reported < u.steps => (
                None,
                format!(
                    "${} / ${} per million tokens; the usage of {} of {} calls is unknown",
                    p.prompt,
                    p.completion,
                    u.steps - u.reported,
                    u.steps
                ),
            ),
            Pricing::Priced(p) => priced(p, usage),
            Pricing::Unpriced => (None, "no price configured".to_string()),
        };
        cost_row(role, &u.agent, u.trials, usage, (cost_usd, pricing))
    });
    let others = others.iter().filter_map(|m| {
        let (role, endpoint) = match m.role.as_str() {
            "attacker" => (vocab::CostRole::Attacker, spec.attacker.as_ref()),
            "defense" => (vocab::CostRole::Defense, spec.judge.as_ref()),
            _ => return None,
        };
        let usage = usage_of(m.prompt_tokens, m.completion_tokens);
        let cost = match endpoint.and_then(|e| e.price) {
            _ if m.unknown_calls > 0 => {
                (None, format!("the usage of {} of {} calls is unknown", m.unknown_calls, m.calls))
            }
            Some(p) => priced(p, usage),
            None => (None, "no price configured".to_string()),
        };
        Some(cost_row(role, &m.agent, m.trials, usage, cost))
    });
    let judges = judged.iter().map(|j| {
        let (cost_usd, pricing) = if j.reported < j.trials {
            (None, format!("the judge's usage is unknown for {} of {} trials", j.trials - j.reported, j.trials))
        } else if j.priced < j.trials {
            (None, "no price configured for the judge endpoint".to_string())
        } else {
            (Some(j.cost_usd), "the judge endpoint's price when the run was scored".to_string())
        };
        let usage = usage_of(j.prompt_tokens, j.completion_tokens);
        cost_row(vocab::CostRole::Judge, &j.agent, j.trials, usage, (cost_usd, pricing))
    });
    agents.chain(others).chain(judges).collect()
}

/// Token counts as the store keeps them (signed) as a usage.
fn usage_of(prompt: i64, completion: i64) -> crate::llm::Usage {
    crate::llm::Usage {
        prompt_tokens: u64::try_from(prompt).unwrap_or(0),
        completion_tokens: u64::try_from(completion).unwrap_or(0),
    }
}

/// The cost of `usage` at a configured price, with the price in words.
fn priced(p: crate::llm::Price, usage: crate::llm::Usage) -> (Option<f64>, String) {
    (Some(p.of(usage)), format!("${} / ${} per million prompt / completion tokens", p.prompt, p.completion))
}

/// One row of the cost table.
fn cost_row(
    role: vocab::CostRole,
    agent: &str,
    trials: i64,
    usage: crate::llm::Usage,
    (cost_usd, pricing): (Option<f64>, String),
) -> vocab::CostRow {
    vocab::CostRow {
        role,
        agent: agent.to_string(),
        trials: usize::try_from(trials).unwrap_or(0),
        prompt_tokens: usage.prompt_tokens,
        completion_tokens: usage.completion_tokens,
        cost_usd,
        pricing,
    }
}
