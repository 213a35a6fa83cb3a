//! The text of the agent protocol (see `agent::protocol`): the action list that closes
//! every page of an episode, and the same list for the model agent's system prompt. The
//! sites render it; the agent loop and the episode API read the actions it lists.

use crate::corpus::Domain;

/// The version of the grammar below; every run records it (`RunSpec::agent_protocol`).
/// Version 0 (runs from before the field) ended each page with "goto <link number or URL>"
/// while the prompt gave link numbers to `click` only.
pub const PROTOCOL_VERSION: &str = "agent-protocol-1";

/// The heading of the action list that closes every page of an episode.
pub const ACTIONS_HEADING: &str = "Actions:";

/// One action form: its JSON and what it does.
struct Form {
    json: &'static str,
    does: &'static str,
    wiki_only: bool,
}

const FORMS: [Form; 4] = [
    Form { json: r#"{"type": "click", "link": N}"#, does: "follow link [N] of this page", wiki_only: false },
    Form {
        json: r#"{"type": "goto", "url": "/path/on/this/site"}"#,
        does: "open a page of this site by its address",
        wiki_only: false,
    },
    Form { json: r#"{"type": "search", "query": "words"}"#, does: "search the wiki's articles", wiki_only: true },
    Form { json: r#"{"type": "back"}"#, does: "return to the previous page", wiki_only: false },
];

/// The verdict form; `ACTION one of: …` follows it.
const VERDICT_FORM: &str = r#"{"type": "verdict", "verdict": "ACTION", "rationale": "why you decide so"}"#;

/// The note on the two forms that are understood either way.
const EITHER_WAY: &str =
    "A link number given as a goto's url follows that link; an address given as a click's link opens it.";

/// The actions of a site, one line each, as the system prompt and every page list them.
/// `closed`: the episode already has its verdict, so none is offered.
pub fn action_list(domain: Domain, closed: bool) -> String {
    let mut out = String::new();
    for form in FORMS.iter().filter(|f| !f.wiki_only || domain == Domain::Wiki) {
        out.push_str(&format!("- {}: {}\n", form.json, form.does));
    }
    if closed {
        out.push_str("- (verdict already recorded; the episode is closed)\n");
    } else {
        out.push_str(&format!(
            "- {VERDICT_FORM}: decide the case, which ends it; ACTION one of: {}\n",
            domain.actions().join(", ")
        ));
    }
    out.push_str(&format!("  {EITHER_WAY}\n"));
    out
}

/// The action list that closes a page of an episode. `http`: the episode's id when the page
/// is served over HTTP, where the same objects are posted to the episode's `act` address.
pub fn footer(domain: Domain, closed: bool, http: Option<&str>) -> String {
    let mut out = format!("\n{ACTIONS_HEADING}\n{}", action_list(domain, closed));
    if let Some(id) = http {
        out.push_str(&format!(
            "  Over HTTP: POST one of these objects to /ep/{id}/act (or GET a link's address as printed above).\n"
        ));
    }
    out
}

/// Whether a line belongs to the action list of a page (of this version or an earlier one).
pub fn is_footer_line(line: &str) -> bool {
    let l = line.trim();
    l.is_empty()
        || l == EITHER_WAY
        || l.starts_with("Over HTTP: POST one of these objects to /ep/")
        || l.starts_with("- {\"type\": ")
        // Version 0.
        || ["- goto ", "- search ", "- verdict ", "- (verdict "].iter().any(|p| l.starts_with(p))
}
