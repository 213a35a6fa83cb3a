//! The agent protocol: the one grammar in which an agent acts on a site.
//!
//! Five actions — follow a numbered link, open an address, search, go back, decide — each
//! written as one JSON object. The same text lists them at the foot of every page an agent
//! reads ([`footer`]), in the model agent's system prompt ([`action_list`]), as the JSON
//! Schema of a reply and of the tool in tool-calling mode ([`reply_schema`]), and as the body
//! the episode API takes (`POST /ep/<id>/act`). [`read_action`] reads all of them.
//!
//! The two forms that are easy to confuse are understood, never refused: a link number given
//! as a `goto`'s address (`{"type": "goto", "url": "3"}`, as a page's `[3]`) follows that link,
//! and a page address given as a `click`'s link opens it. No site address is a bare number,
//! so neither reading is ambiguous.
//!
//! Runs record the version ([`PROTOCOL_VERSION`]) next to the prompt's.

use serde_json::{Value, json};

use super::Action;

pub use crate::env::protocol::{ACTIONS_HEADING, PROTOCOL_VERSION, action_list, footer, is_footer_line};

/// The JSON Schema of one reply on a site whose verdicts are `verdicts`: sent as the tool's
/// parameters in tool-calling mode and as the response format in JSON mode, and the body of
/// `POST /ep/<id>/act`.
pub fn reply_schema(verdicts: &[&str]) -> Value {
    json!({
        "type": "object",
        "required": ["thought", "action"],
        "properties": {
            "thought": {"type": "string", "description": "what you learned and what to do next"},
            "action": {
                "type": "object",
                "required": ["type"],
                "properties": {
                    "type": {"enum": ["click", "goto", "search", "back", "verdict"]},
                    "link": {"type": "integer", "minimum": 1, "description": "click: the number N of link [N] on the current page"},
                    "url": {"type": "string", "description": "goto: a page address of this site, such as /shop/admin/..."},
                    "query": {"type": "string", "description": "search: the words to look for (wiki only)"},
                    "verdict": {"enum": verdicts, "description": "verdict: the decision"},
                    "rationale": {"type": "string", "description": "verdict: why you decide so"}
                }
            }
        }
    })
}

/// A link number as a page prints it or a reader writes it: `3`, `[3]`, ` 3 `.
pub fn link_number(text: &str) -> Option<usize> {
    let t = text.trim();
    let t = t.strip_prefix('[').and_then(|x| x.strip_suffix(']')).unwrap_or(t).trim();
    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok()).flatten()
}

/// Whether a text is a page address rather than a link number: a site path or a web URL.
fn is_address(text: &str) -> bool {
    let t = text.trim().to_ascii_lowercase();
    t.starts_with('/') || t.starts_with("http://") || t.starts_with("https://")
}

/// The action in its canonical form: a `goto` whose address is a link number follows that
/// link. (Reading a reply turns a `click` on an address into a `goto` already.)
pub fn canonical(action: Action) -> Action {
    match action {
        Action::Goto { url } => match link_number(&url) {
            Some(link) => Action::Click { link },
            None => Action::Goto { url },
        },
        other => other,
    }
}

fn field<'a>(v: &'a Value, names: &[&str]) -> Option<&'a Value> {
    names.iter().find_map(|n| v.get(*n))
}

fn string(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Reads a reply object (`{"thought": …, "action": {…}}`) into a thought and an action in
/// canonical form. Tolerates the action's fields at the top level, action names in any case,
/// link numbers given as strings, and the two forms that are understood either way.
pub fn read_action(v: &Value) -> Result<(String, Action), String> {
    let thought = string(field(v, &["thought", "reasoning", "think"])).unwrap_or_default();
    let action = match v.get("action") {
        Some(Value::Object(_)) => v["action"].clone(),
        Some(Value::String(kind)) => {
            let mut a = v.clone();
            a["type"] = json!(kind);
            a
        }
        _ => v.clone(),
    };
    let kind = string(field(&action, &["type", "name", "action"])).ok_or("the action has no type")?.to_lowercase();
    let action = match kind.as_str() {
        "goto" | "go" | "open" | "visit" | "navigate" => {
            let url = string(field(&action, &["url", "href", "path", "link"])).ok_or("goto needs a url")?;
            canonical(Action::Goto { url })
        }
        "click" | "follow" => {
            let link =
                string(field(&action, &["link", "number", "index", "id", "url"])).ok_or("click needs a link number")?;
            match link_number(&link) {
                Some(link) => Action::Click { link },
                None if is_address(&link) => Action::Goto { url: link.trim().to_string() },
                None => return Err(format!("link {link:?} is neither a link number nor a page address")),
            }
        }
        "search" => {
            Action::Search { query: string(field(&action, &["query", "q", "words"])).ok_or("search needs a query")? }
        }
        "back" => Action::Back,
        "verdict" | "decide" | "decision" | "submit" => Action::Verdict {
            verdict: string(field(&action, &["verdict", "decision", "value"]))
                .ok_or("verdict needs a verdict")?
                .trim()
                .to_uppercase(),
            rationale: string(field(&action, &["rationale", "reason", "justification"]))
                .or_else(|| string(field(v, &["rationale"])))
                .unwrap_or_default(),
        },
        other => return Err(format!("unknown action type {other:?}")),
    };
    Ok((thought, action))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Domain;

    #[test]
    fn either_form_of_a_link_is_understood() {
        let read = |s: &str| read_action(&serde_json::from_str(s).expect("json")).expect("read").1;
        assert_eq!(read(r#"{"action": {"type": "goto", "url": "1"}}"#), Action::Click { link: 1 });
        assert_eq!(read(r#"{"action": {"type": "goto", "url": "[12]"}}"#), Action::Click { link: 12 });
        assert_eq!(read(r#"{"action": {"type": "goto", "url": 4}}"#), Action::Click { link: 4 });
        assert_eq!(
            read(r#"{"action": {"type": "click", "link": "/forum/f/x"}}"#),
            Action::Goto { url: "/forum/f/x".into() }
        );
        assert_eq!(
            read(r#"{"action": {"type": "click", "url": "/wiki/A/B"}}"#),
            Action::Goto { url: "/wiki/A/B".into() }
        );
        assert_eq!(
            read(r#"{"action": {"type": "goto", "url": "/shop/a/1/"}}"#),
            Action::Goto { url: "/shop/a/1/".into() }
        );
        assert!(read_action(&json!({"action": {"type": "click", "link": "two"}})).is_err());
        assert_eq!(canonical(Action::Goto { url: " 7 ".into() }), Action::Click { link: 7 });
        assert_eq!(link_number("0x1"), None);
        assert_eq!(link_number(""), None);
    }

    #[test]
    fn the_footer_and_the_prompt_list_the_same_forms_and_the_schema_knows_them() {
        for domain in [Domain::Shop, Domain::Forum, Domain::Wiki] {
            let list = action_list(domain, false);
            assert!(footer(domain, false, None).ends_with(&list));
            for line in footer(domain, false, Some("e1")).lines() {
                assert!(is_footer_line(line) || line == ACTIONS_HEADING, "{line:?}");
            }
            assert_eq!(list.contains("\"search\""), domain == Domain::Wiki);
            // Every form in the list is read back as the action it names.
            let kinds = reply_schema(domain.actions())["properties"]["action"]["properties"]["type"]["enum"].clone();
            for line in list.lines().filter(|l| l.starts_with("- {")) {
                let object = &line[2..=line.find('}').expect("object")];
                let object = object.replace("ACTION", domain.actions()[0]).replace('N', "2");
                let (_, action) =
                    read_action(&json!({"action": serde_json::from_str::<Value>(&object).expect("json")}))
                        .expect("readable");
                let kind = serde_json::to_value(&action).expect("json")["type"].clone();
                assert!(kinds.as_array().expect("kinds").contains(&kind), "{kind}");
            }
        }
    }
}
