//! Agents without a model. They calibrate the benchmark and make it usable offline:
//! `surface` decides from the ticket and the start page it is handed, `explorer` reads
//! every linked page breadth-first and then applies keyword rules, `oracle` walks the gold
//! graph and submits the optimal verdict.

use std::collections::{HashSet, VecDeque};

use async_trait::async_trait;

use super::{Action, Agent, AgentError, Decision, Observation, Step, TrialContext};
use crate::corpus::Domain;
use crate::corpus::urls::{ContentPages, graph_nodes, normalise};
use crate::env::markup::{Block, parse};

/// The heading under which each site shows its automatic flag or the user report.
fn cue_heading(domain: Domain) -> &'static str {
    match domain {
        Domain::Shop => "Risk engine",
        Domain::Forum => "Moderation queue",
        Domain::Wiki => "Why it is in the queue",
    }
}

/// The text of the surface cue on a start page: the paragraph under the cue heading.
fn surface_cue(domain: Domain, page_text: &str) -> Option<String> {
    let blocks = parse(page_text);
    let at = blocks.iter().position(|b| matches!(b, Block::Heading(h) if h == cue_heading(domain)))?;
    blocks[at + 1..].iter().find_map(|b| match b {
        Block::Para(p) => Some(p.clone()),
        _ => None,
    })
}

/// The verdict a cue points to, by keyword; `None` when the cue raises no alarm.
fn cue_verdict(domain: Domain, cue: &str) -> Option<&'static str> {
    let cue = cue.to_lowercase();
    let rules: &[(&[&str], &str)] = match domain {
        Domain::Shop => &[
            (&["security rule", "login rule"], "ESCALATE"),
            (&["bulk-purchase"], "FLAG_AND_MONITOR"),
            (&["linking rule"], "BAN_ACCOUNT"),
            (&["promotion rule"], "CANCEL_ORDER"),
            (&["rule"], "DENY"),
        ],
        Domain::Forum => &[
            (&["surge", "brigade"], "LOCK_REPORT"),
            (&["don't match", "do not match"], "ADD_CORRECTION_COMMENT"),
            (&["could hurt"], "CONTEXT_AWARE_RESPONSE"),
            (&["duplicate link", "spam", "image", "old photo", "misinformation", "fake", "troll"], "REMOVE"),
        ],
        Domain::Wiki => &[
            (&["coi", "noticeboard"], "FLAG"),
            (&["conflicts", "auto-revert", "unsourced", "citation checker"], "REVERT"),
        ],
    };
    rules.iter().find(|(words, _)| words.iter().any(|w| cue.contains(w))).map(|(_, v)| *v)
}

/// The lenient verdict of a site: what a reviewer does when nothing is wrong.
fn lenient(domain: Domain) -> &'static str {
    match domain {
        Domain::Shop | Domain::Forum | Domain::Wiki => "APPROVE",
    }
}

pub(super) fn verdict(verdict: &str, rationale: String, thought: &str) -> Decision {
    Decision {
        thought: thought.to_string(),
        action: Action::Verdict { verdict: verdict.to_string(), rationale },
        usage: None,
    }
}

/// Decides at step 0 from the ticket and the start page, following no link: a flag or
/// report maps to the verdict it suggests, no alarm means approval.
pub struct Surface;

#[async_trait]
impl Agent for Surface {
    fn name(&self) -> &str {
        "surface"
    }

    async fn act(&self, ctx: &TrialContext<'_>, _history: &[Step], obs: &Observation) -> Result<Decision, AgentError> {
        let cue = surface_cue(ctx.domain, &obs.text);
        let choice = cue.as_deref().and_then(|c| cue_verdict(ctx.domain, c));
        Ok(match (choice, cue) {
            (Some(v), Some(cue)) => verdict(v, format!("The case was raised because: {cue}"), "The flag says enough."),
            _ => verdict(
                lenient(ctx.domain),
                "Nothing on the case page raises a concern.".to_string(),
                "No alarm on the surface.",
            ),
        })
    }
}

/// Words that, in pages beyond the start page, speak for and against the party under review.
const EXONERATING: &[&str] = &[
    "defect",
    "recall",
    "exchange",
    "traced to",
    "verified",
    "confirmed by",
    "regular",
    "mit licen",
    "edit-a-thon",
    "registered participants",
    "student",
    "distinct",
    "vip",
    "priority handling",
    "agrees",
    "kept word for word",
    "misdelivery",
    "never seen before",
    "no rule violations",
    "genuine",
];
const INCRIMINATING: &[&str] = &[
    "worn",
    "tags reattached",
    "relisted",
    "freight forward",
    "proxy",
    "tor exit",
    "stolen",
    "banned accounts",
    "redeemed by",
    "signed for",
    "same device",
    "arrived within",
    "affiliate",
    "identical text",
    "removed:",
    "single-purpose",
    "same thesis",
    "bankruptcy",
    "divorce",
    "only retirement income",
];

/// The link targets of a text observation (`[n] label -> url` lines), in order.
fn observed_links(text: &str) -> impl Iterator<Item = &str> {
    text.lines().filter_map(|line| {
        let rest = line.strip_prefix('[')?;
        let (num, rest) = rest.split_once("] ")?;
        num.parse::<usize>().ok()?;
        rest.rsplit_once(" -> ").map(|(_, url)| url.trim())
    })
}

/// Reads every linked page of its site breadth-first within the budget, then decides by
/// counting exonerating against incriminating words in what it read. Stateless: the
/// frontier is rebuilt from the observations in the history, so a resumed trial goes on
/// where it stopped.
pub struct Explorer;

#[async_trait]
impl Agent for Explorer {
    fn name(&self) -> &str {
        "explorer"
    }

    async fn act(&self, ctx: &TrialContext<'_>, history: &[Step], obs: &Observation) -> Result<Decision, AgentError> {
        let pages = pages_read(history, obs);
        if let Some(next) = next_unread(ctx.domain, &pages, super::episode::BUDGET) {
            return Ok(Decision {
                thought: format!("Next unread page: {next}"),
                action: Action::Goto { url: next },
                usage: None,
            });
        }
        let e = weigh_evidence(ctx.domain, &pages);
        let rationale =
            format!("Read {} pages: {} exonerating and {} incriminating signals.", pages.len(), e.for_party, e.against);
        Ok(verdict(e.verdict, rationale, "Nothing left to read within the budget."))
    }
}

/// The (url, observation) of every page of a trial so far, the current one last.
pub(super) fn pages_read<'a>(history: &'a [Step], obs: &'a Observation) -> Vec<(&'a str, &'a str)> {
    history
        .iter()
        .map(|s| (s.url.as_str(), s.observation.as_str()))
        .chain([(obs.url.as_str(), obs.text.as_str())])
        .collect()
}

/// The next unread page of the site linked from what was read, breadth-first, while fewer
/// than `limit` pages have been read (and the step budget allows); `None` when done.
pub(super) fn next_unread(domain: Domain, pages: &[(&str, &str)], limit: usize) -> Option<String> {
    let limit = limit.min(super::episode::BUDGET);
    if pages.len() >= limit {
        return None;
    }
    let visited: HashSet<&str> = pages.iter().map(|(u, _)| *u).collect();
    let mut frontier: VecDeque<String> = VecDeque::new();
    for (_, text) in pages {
        for url in observed_links(text) {
            let path = normalise(url);
            if path.starts_with(domain.url_prefix()) && !visited.contains(path.as_str()) && !frontier.contains(&path) {
                frontier.push_back(path);
            }
        }
    }
    frontier.pop_front()
}

/// What the pages beyond the start page say, by keyword: signals for and against the party
/// under review, and the verdict they point to (the surface cue's when they incriminate or
/// are silent, the lenient one when they exonerate).
pub(super) struct Evidence {
    pub for_party: usize,
    pub against: usize,
    pub verdict: &'static str,
}

pub(super) fn weigh_evidence(domain: Domain, pages: &[(&str, &str)]) -> Evidence {
    let read: String = pages.iter().skip(1).map(|(_, t)| t.to_lowercase()).collect::<Vec<_>>().join("\n");
    let for_party = EXONERATING.iter().filter(|w| read.contains(*w)).count();
    let against = INCRIMINATING.iter().filter(|w| read.contains(*w)).count();
    let flagged = pages.first().and_then(|(_, start)| surface_cue(domain, start)).and_then(|c| cue_verdict(domain, &c));
    let verdict = if for_party > against {
        lenient(domain)
    } else if against > 0 {
        flagged.unwrap_or(match domain {
            Domain::Shop => "DENY",
            Domain::Forum => "REMOVE",
            Domain::Wiki => "FLAG",
        })
    } else {
        flagged.unwrap_or(lenient(domain))
    };
    Evidence { for_party, against, verdict }
}

/// Walks the task's gold graph in order, then submits the optimal verdict with the
/// ground-truth justification. An upper bound, not an agent.
pub struct Oracle;

#[async_trait]
impl Agent for Oracle {
    fn name(&self) -> &str {
        "oracle"
    }

    async fn act(&self, ctx: &TrialContext<'_>, history: &[Step], obs: &Observation) -> Result<Decision, AgentError> {
        let shop = ctx.domain == Domain::Shop;
        let mut visited: Vec<String> = history.iter().map(|s| s.url.clone()).collect();
        visited.push(obs.url.clone());
        let content = ContentPages::of(ctx.task.pages.keys().map(String::as_str));
        for node in graph_nodes(&ctx.task.graph) {
            if visited.iter().any(|v| node.credited_by(v, shop, content.contains(v))) {
                continue;
            }
            // Template nodes resolve to the task page that matches them.
            let target = ctx
                .task
                .pages
                .keys()
                .map(|u| normalise(u))
                .find(|u| node.credited_by(u, shop, true))
                .unwrap_or(node.norm().to_string());
            return Ok(Decision {
                thought: format!("Gold node next: {target}"),
                action: Action::Goto { url: target },
                usage: None,
            });
        }
        Ok(verdict(&ctx.task.verdict.optimal, ctx.task.justification.clone(), "Every gold node visited."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_read_back_from_observations() {
        let text = "[Site] T\nURL: /x\n\nbody [not a link]\n\nLinks:\n[1] A -> /shop/a\n[2] B -> /shop/b\n";
        assert_eq!(observed_links(text).collect::<Vec<_>>(), ["/shop/a", "/shop/b"]);
    }

    #[test]
    fn cues_are_read_from_the_section_under_their_heading() {
        let text = "| Field | Value |\n| Order | #1 |\n\n## Risk engine\n\nSecurity rule: recent credential change.\n\n## Other\n\nx";
        let cue = surface_cue(Domain::Shop, text).expect("cue");
        assert_eq!(cue_verdict(Domain::Shop, &cue), Some("ESCALATE"));
        assert_eq!(surface_cue(Domain::Shop, "## Refund request\n\nplease"), None);
        assert_eq!(cue_verdict(Domain::Wiki, "Routine patrol sample."), None);
    }
}
