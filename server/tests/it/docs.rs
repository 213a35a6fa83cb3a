//! The book in `docs/`: the CLI reference is generated from the clap definitions (so it
//! cannot drift), and every link of the book and the README resolves to a file of the
//! repository and, with an anchor, to a heading of that file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf()
}

/// Regenerate with `MIRAGE_BLESS=1 cargo test -p server --test it docs::`.
#[test]
fn the_cli_reference_is_generated_from_the_command_definitions() {
    let path = root().join("docs/cli-reference.md");
    let generated = format!(
        "<!-- Generated from the clap definitions by the test `docs::the_cli_reference_is_generated_from_the_command_definitions`; \
         edit the doc comments in server/src/cli and regenerate with `MIRAGE_BLESS=1 cargo test -p server --test it docs::`. -->\n\n{}",
        clap_markdown::help_markdown::<server::cli::Cli>()
    );
    if std::env::var_os("MIRAGE_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("write the reference");
    }
    let stored = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        stored == generated,
        "docs/cli-reference.md is not what the command definitions generate; run \
         `MIRAGE_BLESS=1 cargo test -p server --test it docs::` and commit the file"
    );
}

/// GitHub's and mdBook's anchor of a heading: lowercase, spaces to `-`, other punctuation
/// dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The links of a markdown file and the anchors of its headings.
fn read(path: &Path) -> (Vec<String>, BTreeSet<String>) {
    use pulldown_cmark::{Event, HeadingLevel, Parser, Tag, TagEnd};
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut links, mut anchors) = (Vec::new(), BTreeSet::new());
    let mut heading: Option<String> = None;
    for event in Parser::new(&text) {
        match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => links.push(dest_url.to_string()),
            Event::Start(Tag::Heading { level, .. }) if level <= HeadingLevel::H6 => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => anchors.extend(heading.take().map(|h| slug(&h))),
            _ => {}
        }
    }
    (links, anchors)
}

#[test]
fn every_link_of_the_book_and_the_readme_resolves() {
    let root = root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.push(root.join("README.md"));
    assert!(files.len() > 10, "the book's pages: {files:?}");
    let mut broken = Vec::new();
    for file in &files {
        let (links, own) = read(file);
        for link in links {
            if link.starts_with("http://") || link.starts_with("https://") || link.starts_with("mailto:") {
                continue;
            }
            let (target, anchor) = link.split_once('#').map_or((link.as_str(), None), |(t, a)| (t, Some(a)));
            let dir = file.parent().expect("dir");
            let resolved = if target.is_empty() { file.clone() } else { dir.join(target) };
            if !resolved.exists() {
                broken.push(format!("{}: {link} (no such file)", file.display()));
                continue;
            }
            if let Some(anchor) = anchor.filter(|_| resolved.extension().is_some_and(|x| x == "md")) {
                let anchors = if target.is_empty() { own.clone() } else { read(&resolved).1 };
                if !anchors.contains(anchor) {
                    broken.push(format!("{}: {link} (no heading with that anchor)", file.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_checker_finds_broken_links() {
    let dir = tempfile::tempdir().expect("dir");
    let page = dir.path().join("a.md");
    std::fs::write(&page, "# A title: `x` too\n\n[ok](#a-title-x-too) [bad](#nope) [gone](b.md)\n").expect("write");
    let (links, anchors) = read(&page);
    assert_eq!(links, ["#a-title-x-too", "#nope", "b.md"]);
    assert!(anchors.contains("a-title-x-too") && !anchors.contains("nope"), "{anchors:?}");
    assert_eq!(slug("Which figures compare with GEO-Bench's"), "which-figures-compare-with-geo-benchs");
}

/// Every long option of every command.
fn options(command: &clap::Command, out: &mut BTreeSet<String>) {
    out.extend(command.get_arguments().filter_map(|a| a.get_long().map(str::to_string)));
    for sub in command.get_subcommands() {
        options(sub, out);
    }
}

/// The hand-written pages show `mirage …` lines; every option they name exists.
#[test]
fn every_option_the_book_names_exists() {
    use clap::CommandFactory;
    let mut known: BTreeSet<String> = ["help", "version"].map(String::from).into();
    options(&server::cli::Cli::command(), &mut known);
    let flag = regex::Regex::new(r"--([a-z][a-z0-9-]*)").expect("pattern");
    let root = root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md") && !p.ends_with("cli-reference.md"))
        .collect();
    files.push(root.join("README.md"));
    let mut unknown = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("page");
        for (n, line) in text.lines().enumerate() {
            let Some(at) = line.find("mirage ").filter(|&i| !line[..i].contains("cargo")) else { continue };
            for c in flag.captures_iter(&line[at..]) {
                if !known.contains(&c[1]) {
                    unknown.push(format!("{}:{}: --{}", file.display(), n + 1, &c[1]));
                }
            }
        }
    }
    assert!(known.len() > 60, "the scan found the options: {}", known.len());
    assert!(unknown.is_empty(), "options the book names that no command has:\n{}", unknown.join("\n"));
}

/// The labelling page's definitions are the book's, word for word.
#[test]
fn the_label_definitions_of_the_labelling_page_are_the_books() {
    let book = std::fs::read_to_string(root().join("docs/annotation.md")).expect("annotation chapter");
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let book = flat(&book);
    for &kind in app::model::LabelKind::ALL {
        let (definition, example) = app::glossary::label_guide(kind);
        let kind = kind.as_str();
        let entry = format!("**{}{}.** {}", kind[..1].to_uppercase(), &kind[1..], flat(definition));
        assert!(book.contains(&entry), "docs/annotation.md lacks the definition of {kind}: {entry}");
        assert!(book.contains(&format!("Example: {}", flat(example))), "docs/annotation.md lacks the {kind} example");
    }
}
