//! What trials cost: the agent's tokens (summed from its steps when a trial is scored) times
//! its endpoint's price, attached to each score when a run is aggregated.

use super::TrialScore;
use crate::llm::Price;

/// How a configuration's calls are priced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pricing {
    /// A baseline: no model, so nothing to pay.
    Baseline,
    /// A model endpoint with its price.
    Priced(Price),
    /// A model endpoint whose price the run does not know.
    Unpriced,
}

/// Attaches each trial's cost: 0 for a baseline, tokens × price for a priced endpoint whose
/// steps reported their usage, none otherwise (unknown, not free). A baseline's tokens are 0.
pub fn attach(scores: &mut [TrialScore], pricing: impl Fn(&str) -> Pricing) {
    for s in scores.iter_mut() {
        s.cost_usd = match pricing(&s.agent) {
            // A baseline calls no model: tokens reported under a baseline's name are a
            // model's, at a price nobody knows.
            Pricing::Baseline if s.agent_tokens.is_some_and(|u| u.prompt_tokens + u.completion_tokens > 0) => {
                s.notes.push(format!(
                    "cost: {} is a baseline's name, yet the steps report model tokens; the cost is unknown",
                    s.agent
                ));
                None
            }
            Pricing::Baseline => {
                s.agent_tokens.get_or_insert_with(Default::default);
                Some(0.0)
            }
            Pricing::Priced(price) => s.agent_tokens.map(|u| price.of(u)),
            Pricing::Unpriced => None,
        };
    }
    // A configuration some of whose trials cost an unknown amount has an unknown cost: a
    // mean over the known ones alone would be biased (the unknown ones are not a random
    // share), so none of its trials carries a cost.
    let unknown: std::collections::HashSet<String> =
        scores.iter().filter(|s| s.cost_usd.is_none()).map(|s| s.agent.clone()).collect();
    for s in scores.iter_mut().filter(|s| unknown.contains(&s.agent)) {
        s.cost_usd = None;
    }
}

/// Utility against cost per trial, for the configurations (grouped by agent) whose cost is
/// known; the frontier is left for the plot to mark.
pub fn points(agg: &super::aggregate::Aggregate) -> Vec<vocab::CostPoint> {
    agg.leaderboard
        .iter()
        .filter_map(|s| {
            let group = agg.groups.iter().find(|g| g.key.get("agent") == Some(&s.agent))?;
            let cost = group.metrics.get("cost")?.as_ref()?;
            Some(vocab::CostPoint { agent: s.agent.clone(), utility: s.utility?, cost: *cost, frontier: false })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Usage;

    fn trial(agent: &str, tokens: Option<(u64, u64)>) -> TrialScore {
        TrialScore {
            agent: agent.into(),
            agent_tokens: tokens.map(|(p, c)| Usage { prompt_tokens: p, completion_tokens: c }),
            ..TrialScore::default()
        }
    }

    #[test]
    fn baselines_cost_nothing_and_unknown_prices_stay_unknown() {
        let mut scores = vec![
            trial("surface", None),
            trial("k", Some((1_000_000, 100_000))),
            trial("m", Some((1_000_000, 100_000))),
            trial("m", None),
            trial("u", Some((5, 5))),
        ];
        let price = Pricing::Priced(Price { prompt: 0.5, completion: 2.0 });
        attach(&mut scores, |a| match a {
            "surface" => Pricing::Baseline,
            "k" | "m" => price,
            _ => Pricing::Unpriced,
        });
        let costs: Vec<Option<f64>> = scores.iter().map(|s| s.cost_usd).collect();
        // One trial of unknown cost makes its configuration's cost unknown, not a mean of the rest.
        assert_eq!(costs, [Some(0.0), Some(0.7), None, None, None]);
        assert_eq!(scores[0].agent_tokens, Some(Usage::default()), "a baseline used no tokens");
    }

    #[test]
    fn a_baseline_name_on_model_tokens_costs_an_unknown_amount_and_says_so() {
        let mut scores = vec![trial("oracle", Some((15_000, 537))), trial("oracle", None)];
        attach(&mut scores, |_| Pricing::Baseline);
        assert_eq!(scores.iter().map(|s| s.cost_usd).collect::<Vec<_>>(), [None, None]);
        assert!(scores[0].notes.iter().any(|n| n.starts_with("cost: oracle is a baseline")), "{:?}", scores[0].notes);
    }

    #[test]
    fn an_unreadable_reply_is_named_as_the_store_looks_for_it() {
        let e = crate::agent::AgentError::Unparseable { attempts: 2, last: "x".into() };
        assert!(e.to_string().contains(crate::db::UNPARSEABLE), "{e}");
    }
}
