//! The ranking prompt: one prompt for every method and ranker. Mirage's own wording is
//! version [`PROMPT_VERSION`]; a user's template (`--prompt-file`, TOML with `system` and
//! `user` strings, see [`super::template`]) replaces it to rank with another benchmark's
//! exact words, and its version is then `file:` and 12 hex digits of its hash.
//!
//! Placeholders of a template: `{noun}` (the query noun), `{query}` (`I am looking for a
//! {noun}`), `{count}` (the number of items) and `{products}` (one line per item,
//! `i. Name: description`, numbered from 1 in presented order). Descriptions are flattened
//! to one line: every run of whitespace becomes one space.

use serde::{Deserialize, Serialize};

use super::data::Item;
use super::template::{Role, Template};
use crate::llm::Message;

/// Version of Mirage's own ranking prompt; part of every cache key and run spec.
pub const PROMPT_VERSION: &str = "geo-rank-1";

const SYSTEM: &str = "You are a shopping assistant. You recommend products that fit what the user asks for, \
and you answer with a numbered list of the products ordered from the one you recommend most to the one you \
recommend least.";

const USER: &str = "{query}. Please recommend from the products below.\n\nProducts:\n{products}\n\n\
Order matters: the user will most likely take the first product you list. Rank all {count} products from best \
to worst for this request. Answer only with the numbered list, one product per line, each written with its exact \
name.";

/// A ranking prompt: its two templates and its version (stored whole in a run's spec).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    pub system: String,
    pub user: String,
    pub version: String,
}

impl Default for Prompt {
    fn default() -> Prompt {
        Prompt { system: SYSTEM.into(), user: USER.into(), version: PROMPT_VERSION.into() }
    }
}

/// Every run of whitespace as one space, trimmed.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What a ranking template may hold.
pub const RANK_ROLE: Role = Role {
    name: "ranking",
    placeholders: &["noun", "query", "count", "products"],
    required: &["products"],
    parts: &[],
};

impl Prompt {
    /// Reads a template file (see [`super::template`]); errors name the file, the field
    /// and the missing or unknown placeholder.
    pub fn from_file(path: &std::path::Path) -> anyhow::Result<Prompt> {
        let base = Prompt::default();
        let t =
            Template::from_file(path, &RANK_ROLE, &Template::builtin(&base.version, &base.system, &base.user, &[]))?;
        Ok(Prompt { system: t.system, user: t.user, version: t.version })
    }

    /// The messages for a list shown in `order` (item `order[j]` as number `j + 1`).
    /// Without a system role the system text and a blank line open the user turn.
    pub fn messages(&self, noun: &str, items: &[Item], order: &[usize], system_role: bool) -> Vec<Message> {
        let products: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(j, &i)| format!("{}. {}: {}", j + 1, items[i].name, one_line(&items[i].text)))
            .collect();
        let (query, count, products) =
            (format!("I am looking for a {noun}"), order.len().to_string(), products.join("\n"));
        let values =
            [("query", query.as_str()), ("noun", noun), ("count", count.as_str()), ("products", products.as_str())];
        let template = Template {
            system: self.system.clone(),
            user: self.user.clone(),
            parts: Default::default(),
            version: self.version.clone(),
        };
        template.messages(&self.system, &values, system_role)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<Item> {
        vec![
            Item { name: "Alpha".into(), text: "First line.\n\nSecond   line.".into() },
            Item { name: "Beta".into(), text: " plain ".into() },
        ]
    }

    #[test]
    fn products_are_numbered_in_presented_order_on_one_line_each() {
        let m = Prompt::default().messages("air compressor", &items(), &[1, 0], true);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].role, "system");
        let user = &m[1].content;
        assert!(user.starts_with("I am looking for a air compressor."), "{user}");
        assert!(user.contains("\n1. Beta: plain\n2. Alpha: First line. Second line.\n"), "{user}");
        assert!(user.contains("Rank all 2 products"), "{user}");
        let folded = Prompt::default().messages("book", &items(), &[0, 1], false);
        assert_eq!(folded.len(), 1);
        assert!(folded[0].content.starts_with(SYSTEM) && folded[0].content.contains("\n\nI am looking for a book."));
    }

    #[test]
    fn a_template_file_replaces_the_wording_and_names_its_version() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "system = \"Rank {noun}s.\"\nuser = \"{query}\\n{products}\\n({count})\"\n")
            .expect("write");
        let p = Prompt::from_file(&path).expect("prompt");
        assert!(p.version.starts_with("file:") && p.version.len() == 17);
        let m = p.messages("book", &items(), &[0, 1], true);
        assert_eq!(m[0].content, "Rank books.");
        assert_eq!(m[1].content, "I am looking for a book\n1. Alpha: First line. Second line.\n2. Beta: plain\n(2)");
        std::fs::write(&path, "system = \"x\"\nuser = \"{products} {nouns}\"\n").expect("write");
        let err = Prompt::from_file(&path).unwrap_err().to_string();
        assert!(err.contains("unknown placeholder {nouns}"), "{err}");
        std::fs::write(&path, "system = \"x\"\nuser = \"no list\"\n").expect("write");
        assert!(Prompt::from_file(&path).unwrap_err().to_string().contains("no {products}"));
    }
}
