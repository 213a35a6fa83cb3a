//! Prompt templates of the GEO track's model roles (ranker, judge, C-SEO rewriter,
//! Zero-Shot attacker, TAP proposer). Each role has Mirage's own wording under a fixed
//! version; a TOML file can replace it to run another benchmark's exact words.
//!
//! A file holds `system` (optional: empty sends no system message), `user`, and the
//! further fields its role declares (TAP's `feedback`, the judge's `verbalized`, C-SEO's
//! `[brief]` table). Fields the file leaves out keep Mirage's wording. Placeholders are
//! `{name}`; `{{` and `}}` write a literal brace. Each field is checked when the file is
//! read: an unknown placeholder, a missing required one, or an unknown field is an error
//! naming the file and the field. A file's version is `file:` and the first 12 hex digits
//! of the SHA-256 of the template it yields (system, user and every field), so the same
//! words give the same version whatever the file's layout.
//!
//! Placeholders are filled in one pass: a value that itself holds `{text}` stays as
//! written (a description cannot smuggle a placeholder in).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::llm::Message;

/// A further field of a role's template.
pub struct Part {
    pub name: &'static str,
    /// Placeholders the field may hold.
    pub placeholders: &'static [&'static str],
    /// Placeholders the field must hold.
    pub required: &'static [&'static str],
    /// A table with these keys (each a template) rather than one string.
    pub keys: Option<&'static [&'static str]>,
}

/// What a role's template may hold.
pub struct Role {
    pub name: &'static str,
    /// Placeholders `system` and `user` may hold.
    pub placeholders: &'static [&'static str],
    /// Placeholders `user` must hold.
    pub required: &'static [&'static str],
    pub parts: &'static [Part],
}

/// One role's prompt: system text, user template, further fields and version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Template {
    /// Empty: no system message.
    #[serde(default)]
    pub system: String,
    pub user: String,
    /// Further fields by name; a table's entries as `name.key`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parts: BTreeMap<String, String>,
    pub version: String,
}

/// The placeholders of a template in order, or what is wrong with its braces.
pub fn placeholders(text: &str) -> Result<Vec<&str>, String> {
    let mut names = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find(['{', '}']) {
        let (brace, after) = (&rest[i..=i], &rest[i + 1..]);
        if after.starts_with(brace) {
            rest = &after[1..];
            continue;
        }
        if brace == "}" {
            return Err("a lone `}` (write `}}` for a literal brace)".into());
        }
        let close = after.find('}').ok_or("a `{` without its `}` (write `{{` for a literal brace)")?;
        names.push(&after[..close]);
        rest = &after[close + 1..];
    }
    Ok(names)
}

/// Fills the placeholders of a checked template in one pass.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let (brace, after) = (&rest[i..=i], &rest[i + 1..]);
        if after.starts_with(brace) || brace == "}" {
            out.push_str(brace);
            rest = after.strip_prefix(brace).unwrap_or(after);
            continue;
        }
        match after.find('}') {
            Some(close) => {
                let name = &after[..close];
                match values.iter().find(|(n, _)| *n == name) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[i..i + close + 2]),
                }
                rest = &after[close + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Checks one field's placeholders against those allowed.
fn check(path: &Path, field: &str, text: &str, allowed: &[&str]) -> anyhow::Result<()> {
    let names = placeholders(text).map_err(|e| anyhow::anyhow!("{}: field `{field}`: {e}", path.display()))?;
    if let Some(bad) = names.iter().find(|n| !allowed.contains(n)) {
        let known: Vec<String> = allowed.iter().map(|a| format!("{{{a}}}")).collect();
        let known = if known.is_empty() { "none".to_string() } else { known.join(", ") };
        bail!("{}: field `{field}`: unknown placeholder {{{bad}}} (known: {known})", path.display());
    }
    Ok(())
}

impl Template {
    /// A built-in template (its fields are Mirage's own and need no check).
    pub fn builtin(version: &str, system: &str, user: &str, parts: &[(&str, &str)]) -> Template {
        Template {
            system: system.into(),
            user: user.into(),
            parts: parts.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect(),
            version: version.into(),
        }
    }

    /// Reads a role's template file over `base` (Mirage's wording for the fields the file
    /// leaves out); errors name the file and the field.
    pub fn from_file(path: &Path, role: &Role, base: &Template) -> anyhow::Result<Template> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let table: toml::Table =
            toml::from_str(&text).with_context(|| format!("{}: not a TOML file", path.display()))?;
        let string = |key: &str, value: &toml::Value| -> anyhow::Result<String> {
            value
                .as_str()
                .map(str::to_string)
                .with_context(|| format!("{}: field `{key}` is not a string", path.display()))
        };
        let mut out = Template { version: String::new(), ..base.clone() };
        let mut has_user = false;
        for (key, value) in &table {
            match key.as_str() {
                "system" => {
                    out.system = string(key, value)?;
                    check(path, key, &out.system, role.placeholders)?;
                }
                "user" => {
                    out.user = string(key, value)?;
                    check(path, key, &out.user, role.placeholders)?;
                    has_user = true;
                }
                other => {
                    let part = role.parts.iter().find(|p| p.name == other).with_context(|| {
                        let known: Vec<&str> =
                            ["system", "user"].into_iter().chain(role.parts.iter().map(|p| p.name)).collect();
                        format!(
                            "{}: unknown field `{other}` for the {} prompt (known: {})",
                            path.display(),
                            role.name,
                            known.join(", ")
                        )
                    })?;
                    match part.keys {
                        None => {
                            let t = string(key, value)?;
                            check(path, key, &t, part.placeholders)?;
                            let used = placeholders(&t).unwrap_or_default();
                            if let Some(missing) = part.required.iter().find(|r| !used.contains(r)) {
                                bail!("{}: field `{key}` has no {{{missing}}} placeholder", path.display());
                            }
                            out.parts.insert(other.to_string(), t);
                        }
                        Some(keys) => {
                            let entries = value.as_table().with_context(|| {
                                format!("{}: field `{other}` is a table (`[{other}]`)", path.display())
                            })?;
                            for (k, v) in entries {
                                let name = format!("{other}.{k}");
                                if !keys.contains(&k.as_str()) {
                                    bail!("{}: unknown key `{name}` (known: {})", path.display(), keys.join(", "));
                                }
                                let t = string(&name, v)?;
                                check(path, &name, &t, part.placeholders)?;
                                out.parts.insert(name, t);
                            }
                        }
                    }
                }
            }
        }
        if !has_user {
            bail!("{}: no field `user` (the {} prompt's user message)", path.display(), role.name);
        }
        let used = placeholders(&out.user).unwrap_or_default();
        if let Some(missing) = role.required.iter().find(|r| !used.contains(r)) {
            bail!("{}: field `user` has no {{{missing}}} placeholder", path.display());
        }
        let whole = serde_json::to_string(&(&out.system, &out.user, &out.parts))?;
        out.version = format!("file:{}", &hex::encode(Sha256::digest(whole.as_bytes()))[..12]);
        Ok(out)
    }

    /// A further field, if the template has it.
    pub fn part(&self, name: &str) -> Option<&str> {
        self.parts.get(name).map(String::as_str)
    }

    /// The messages: the filled system text (none when empty; folded into the user turn
    /// with a blank line when the model has no system role) and the filled user text.
    pub fn messages(&self, system: &str, values: &[(&str, &str)], system_role: bool) -> Vec<Message> {
        let (system, user) = (fill(system, values), fill(&self.user, values));
        match (system.is_empty(), system_role) {
            (true, _) => vec![Message::user(user)],
            (false, true) => vec![Message::system(system), Message::user(user)],
            (false, false) => vec![Message::user(format!("{system}\n\n{user}"))],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROLE: Role = Role {
        name: "test",
        placeholders: &["name", "text"],
        required: &["text"],
        parts: &[
            Part { name: "feedback", placeholders: &["score"], required: &[], keys: None },
            Part { name: "brief", placeholders: &["name"], required: &[], keys: Some(&["a", "b"]) },
        ],
    };

    fn base() -> Template {
        Template::builtin("test-1", "Be brief.", "About {name}: {text}", &[("feedback", "Scored {score}.")])
    }

    #[test]
    fn filling_is_one_pass_and_braces_escape() {
        let t = "{name} said {{hi}} about {text}";
        assert_eq!(placeholders(t).expect("ok"), vec!["name", "text"]);
        assert_eq!(fill(t, &[("name", "{text}"), ("text", "it")]), "{text} said {hi} about it");
        assert!(placeholders("a } b").is_err() && placeholders("a { b").is_err());
    }

    #[test]
    fn a_file_replaces_fields_and_is_versioned_by_what_it_yields() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "user = \"Rewrite {text}\"\n[brief]\na = \"For {name}\"\n").expect("write");
        let t = Template::from_file(&path, &ROLE, &base()).expect("template");
        assert_eq!((t.system.as_str(), t.user.as_str()), ("Be brief.", "Rewrite {text}"));
        assert_eq!((t.part("brief.a"), t.part("feedback")), (Some("For {name}"), Some("Scored {score}.")));
        assert!(t.version.starts_with("file:") && t.version.len() == 17, "{}", t.version);
        // The same words laid out otherwise: the same version.
        std::fs::write(&path, "# a comment\n[brief]\na = 'For {name}'\n\n[x]\n").expect("write");
        assert!(Template::from_file(&path, &ROLE, &base()).unwrap_err().to_string().contains("unknown field `x`"));
        std::fs::write(&path, "brief = { a = 'For {name}' }\nuser = 'Rewrite {text}'\n").expect("write");
        assert_eq!(Template::from_file(&path, &ROLE, &base()).expect("same").version, t.version);
        let m = t.messages(&t.system, &[("name", "N"), ("text", "T")], false);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].content, "Be brief.\n\nRewrite T");
    }

    #[test]
    fn bad_files_are_refused_naming_the_file_and_field() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("bad.toml");
        let cases = [
            ("user = \"{text} {nme}\"", "field `user`: unknown placeholder {nme} (known: {name}, {text})"),
            ("user = \"{name}\"", "field `user` has no {text} placeholder"),
            ("system = \"x\"", "no field `user`"),
            (
                "user = \"{text}\"\nfeedback = \"{name}\"",
                "field `feedback`: unknown placeholder {name} (known: {score})",
            ),
            ("user = \"{text}\"\n[brief]\nc = \"x\"", "unknown key `brief.c` (known: a, b)"),
            ("user = \"{text\"", "field `user`: a `{` without its `}`"),
            ("user = 3", "field `user` is not a string"),
            ("user = ", "not a TOML file"),
        ];
        for (text, want) in cases {
            std::fs::write(&path, text).expect("write");
            let err = format!("{:#}", Template::from_file(&path, &ROLE, &base()).unwrap_err());
            assert!(err.contains("bad.toml") && err.contains(want), "{text:?}: {err}");
        }
    }
}
