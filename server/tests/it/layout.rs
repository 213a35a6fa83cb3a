//! The layout's promises, checked on the source itself (parsed with `syn`): module
//! dependencies in `server/src` point one way along the pipeline, no two modules import
//! each other through any chain, and source files stay short enough to read.
//!
//! How a dependency is found: every path a file names (`use` trees, paths in code and
//! types, and `crate::…` inside macro bodies) is resolved from `crate::`, `super::`,
//! `self::` or a child module's name to the deepest module it reaches. A module and its
//! own descendants are one unit (a `mod.rs` declares and re-exports its children, and
//! children use their parent's types), so edges between them are not counted; nor are
//! those of `#[cfg(test)]` modules, which may reach anything.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The top-level modules of `server/src`, lowest layer first. A module may use modules of
/// earlier layers only; a new module must be placed here.
const LAYERS: &[&[&str]] = &[
    &["corpus", "stats", "charts"],
    &["db"],
    &["env"],
    &["llm"],
    &["config"],
    &["detect"],
    &["manip"],
    &["agent"],
    &["judge"],
    &["foreign"],
    &["geo"],
    &["runs"],
    &["search"],
    &["engine"],
    &["services"],
    &["state"],
    &["http"],
    &["cli"],
];

/// Most lines a source file may have. The corpus generators (`corpus/generate/`) are
/// exempt: each is one table of a domain's scenario families, read top to bottom.
const MAX_LINES: usize = 600;

type ModPath = Vec<String>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module a file defines (`None` for the crate root and the binary).
fn module_of(file: &Path, src: &Path) -> Option<ModPath> {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let last = parts.pop()?;
    match last.as_str() {
        "lib.rs" | "main.rs" if parts.is_empty() => None,
        "mod.rs" => Some(parts),
        other => {
            parts.push(other.trim_end_matches(".rs").to_string());
            Some(parts)
        }
    }
}

/// Every path a file names, as written, and the crates its `use` trees and `extern crate`
/// items start from (a renamed or glob import of a crate is one of these).
#[derive(Default)]
struct Named {
    paths: Vec<Vec<String>>,
    crates: Vec<String>,
}

impl Named {
    fn use_tree(&mut self, prefix: &[String], tree: &syn::UseTree) {
        let with = |ident: &syn::Ident| {
            let mut p = prefix.to_vec();
            p.push(ident.to_string());
            p
        };
        match tree {
            syn::UseTree::Path(p) => self.use_tree(&with(&p.ident), &p.tree),
            syn::UseTree::Name(n) => self.paths.push(with(&n.ident)),
            syn::UseTree::Rename(r) => self.paths.push(with(&r.ident)),
            syn::UseTree::Glob(_) => self.paths.push(prefix.to_vec()),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| self.use_tree(prefix, t)),
        }
    }
}

impl<'ast> Visit<'ast> for Named {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // Unit tests may reach anything; they are not part of the library's layering.
        let test_only =
            m.attrs.iter().any(|a| a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"));
        if !test_only {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        /// The first segment of every path the tree imports (`a` of `a::b as c`, `{a, b::*}`).
        fn roots(tree: &syn::UseTree, out: &mut Vec<String>) {
            match tree {
                syn::UseTree::Path(p) => out.push(p.ident.to_string()),
                syn::UseTree::Name(n) => out.push(n.ident.to_string()),
                syn::UseTree::Rename(r) => out.push(r.ident.to_string()),
                syn::UseTree::Group(g) => g.items.iter().for_each(|t| roots(t, out)),
                syn::UseTree::Glob(_) => {}
            }
        }
        roots(&u.tree, &mut self.crates);
        self.use_tree(&[], &u.tree);
    }

    fn visit_item_extern_crate(&mut self, e: &'ast syn::ItemExternCrate) {
        self.crates.push(e.ident.to_string());
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.paths.push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Macro bodies are token streams: pick out `crate :: a :: b` sequences.
        fn scan(tokens: proc_macro2::TokenStream, out: &mut Vec<Vec<String>>) {
            let tokens: Vec<proc_macro2::TokenTree> = tokens.into_iter().collect();
            let mut i = 0;
            while i < tokens.len() {
                match &tokens[i] {
                    proc_macro2::TokenTree::Group(g) => scan(g.stream(), out),
                    proc_macro2::TokenTree::Ident(id) if id == "crate" || id == "app" => {
                        let mut path = vec![id.to_string()];
                        let mut j = i + 1;
                        while let (
                            Some(proc_macro2::TokenTree::Punct(a)),
                            Some(proc_macro2::TokenTree::Punct(b)),
                            Some(proc_macro2::TokenTree::Ident(next)),
                        ) = (tokens.get(j), tokens.get(j + 1), tokens.get(j + 2))
                        {
                            if a.as_char() != ':' || b.as_char() != ':' {
                                break;
                            }
                            path.push(next.to_string());
                            j += 3;
                        }
                        // `app` alone is a variable; `app::…` is the UI crate.
                        if path[0] == "crate" || path.len() > 1 {
                            out.push(path);
                        }
                        i = j;
                        continue;
                    }
                    _ => {}
                }
                i += 1;
            }
        }
        scan(m.tokens.clone(), &mut self.paths);
        syn::visit::visit_macro(self, m);
    }
}

/// The module a path written in `from` reaches, if it names one of ours.
fn resolve(from: &ModPath, path: &[String], modules: &BTreeSet<ModPath>) -> Option<ModPath> {
    let first = path.first()?;
    let absolute: Vec<String> = match first.as_str() {
        "crate" => path[1..].to_vec(),
        "self" => from.iter().chain(&path[1..]).cloned().collect(),
        "super" => {
            let ups = path.iter().take_while(|s| *s == "super").count();
            let base = &from[..from.len().checked_sub(ups)?];
            base.iter().chain(&path[ups..]).cloned().collect()
        }
        child => {
            let mut candidate = from.clone();
            candidate.push(child.to_string());
            if !modules.contains(&candidate) {
                return None;
            }
            from.iter().chain(path).cloned().collect()
        }
    };
    (1..=absolute.len()).rev().map(|n| absolute[..n].to_vec()).find(|p| modules.contains(p))
}

/// (from, to) → the file that makes the edge, for every dependency between modules.
fn dependencies() -> BTreeMap<(ModPath, ModPath), String> {
    let src = src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let owned: Vec<(ModPath, PathBuf)> = files.iter().filter_map(|f| Some((module_of(f, &src)?, f.clone()))).collect();
    let modules: BTreeSet<ModPath> = owned.iter().map(|(m, _)| m.clone()).collect();
    let mut edges = BTreeMap::new();
    for (module, file) in &owned {
        let text = std::fs::read_to_string(file).expect("read");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut named = Named::default();
        named.visit_file(&ast);
        for path in &named.paths {
            if let Some(target) = resolve(module, path, &modules)
                && target != *module
            {
                let rel = file.strip_prefix(&src).expect("under src").display().to_string();
                edges.entry((module.clone(), target)).or_insert(rel);
            }
        }
    }
    edges
}

fn layer_of(top: &str) -> usize {
    LAYERS
        .iter()
        .position(|l| l.contains(&top))
        .unwrap_or_else(|| panic!("module {top} is not placed in LAYERS (tests/it/layout.rs)"))
}

fn related(a: &ModPath, b: &ModPath) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

/// A cycle in the graph, as a list of modules, if there is one.
fn find_cycle(edges: &BTreeMap<ModPath, BTreeSet<ModPath>>) -> Option<Vec<ModPath>> {
    fn visit(
        node: &ModPath,
        edges: &BTreeMap<ModPath, BTreeSet<ModPath>>,
        state: &mut BTreeMap<ModPath, u8>,
        stack: &mut Vec<ModPath>,
    ) -> Option<Vec<ModPath>> {
        state.insert(node.clone(), 1);
        stack.push(node.clone());
        for next in edges.get(node).into_iter().flatten() {
            match state.get(next).copied().unwrap_or(0) {
                1 => {
                    let at = stack.iter().position(|m| m == next).expect("on the stack");
                    let mut cycle = stack[at..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(node.clone(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for node in edges.keys() {
        if state.get(node).copied().unwrap_or(0) == 0
            && let Some(c) = visit(node, edges, &mut state, &mut Vec::new())
        {
            return Some(c);
        }
    }
    None
}

#[test]
fn module_dependencies_point_down_the_pipeline() {
    let edges = dependencies();
    assert!(edges.len() > 50, "the scan found the crate's imports ({} edges)", edges.len());
    let wrong: Vec<String> = edges
        .iter()
        .filter(|((from, to), _)| from[0] != to[0] && layer_of(&to[0]) >= layer_of(&from[0]))
        .map(|((from, to), file)| format!("{} uses {} ({file})", from.join("::"), to.join("::")))
        .collect();
    assert!(wrong.is_empty(), "dependencies that point up the pipeline or sideways:\n{}", wrong.join("\n"));
}

#[test]
fn no_two_modules_import_each_other() {
    let mut graph: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, to) in dependencies().into_keys() {
        if !related(&from, &to) {
            graph.entry(from).or_default().insert(to);
        }
    }
    if let Some(cycle) = find_cycle(&graph) {
        let names: Vec<String> = cycle.iter().map(|m| m.join("::")).collect();
        panic!("import cycle: {}", names.join(" -> "));
    }
}

#[test]
fn the_cycle_finder_finds_cycles() {
    let m = |s: &str| s.split("::").map(ToString::to_string).collect::<ModPath>();
    let mut g: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    g.entry(m("a::x")).or_default().insert(m("b"));
    g.entry(m("b")).or_default().insert(m("c"));
    assert_eq!(find_cycle(&g), None);
    g.entry(m("c")).or_default().insert(m("a::x"));
    assert_eq!(find_cycle(&g).map(|c| c.len()), Some(4));
    let modules: BTreeSet<ModPath> = [m("judge"), m("judge::rsn"), m("llm"), m("llm::cache")].into();
    let rsn = m("judge::rsn");
    assert_eq!(resolve(&rsn, &m("crate::llm::cache::ask_cached"), &modules), Some(m("llm::cache")));
    assert_eq!(resolve(&rsn, &m("super::TrialScore"), &modules), Some(m("judge")));
    assert_eq!(resolve(&m("judge"), &m("rsn::ModelJudge"), &modules), Some(rsn.clone()));
    assert_eq!(resolve(&rsn, &m("serde_json::Value"), &modules), None);
}

/// The UI crate (`app`) sits above the services: no module below them names it. What both
/// halves share (ids, typed names, the values the pages show) is the `vocab` crate.
#[test]
fn nothing_below_the_services_uses_the_ui_crate() {
    let src = src();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let services = layer_of("services");
    let mut wrong = Vec::new();
    for file in &files {
        let Some(module) = module_of(file, &src) else { continue };
        if layer_of(&module[0]) >= services {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let mut named = Named::default();
        named.visit_file(&ast);
        let rel = file.strip_prefix(&src).expect("under src").display().to_string();
        if let Some(path) = named.paths.iter().find(|p| p.len() > 1 && p[0] == "app") {
            wrong.push(format!("{rel} names {}", path.join("::")));
        } else if named.crates.iter().any(|c| c == "app") {
            wrong.push(format!("{rel} imports app (renamed, globbed or as an extern crate)"));
        }
    }
    // Nor may the crate root hand the UI crate down under another name.
    let root = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let ast = syn::parse_file(&root).expect("lib.rs parses");
    for item in &ast.items {
        if let syn::Item::Use(u) = item
            && !matches!(u.vis, syn::Visibility::Inherited)
        {
            let mut named = Named::default();
            named.visit_item_use(u);
            if named.crates.iter().any(|c| c == "app") {
                wrong.push("lib.rs re-exports app".to_string());
            }
        }
    }
    assert!(wrong.is_empty(), "modules below the services that use the UI crate:\n{}", wrong.join("\n"));
}

#[test]
fn source_files_stay_short() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf();
    let mut files = Vec::new();
    rust_files(&root.join("server/src"), &mut files);
    rust_files(&root.join("app/src"), &mut files);
    rust_files(&root.join("vocab/src"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter(|f| !f.components().any(|c| c.as_os_str() == "generate"))
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).expect("read").lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", f.strip_prefix(&root).expect("in tree").display()))
        })
        .collect();
    assert!(long.is_empty(), "files over {MAX_LINES} lines: {}", long.join(", "));
}

/// Most lines a function may have, from `fn` to its closing brace.
const MAX_FN_LINES: usize = 80;

/// The functions allowed past [`MAX_FN_LINES`], each with its reason. A function leaves the
/// list when it is shortened (the test fails while a listed one is no longer long).
const LONG_FUNCTIONS: &[(&str, &str, &str)] = &[
    (
        "server/src/corpus/generate/shop.rs",
        "build",
        "pages in the order an investigator meets them; the corpus hash depends on the order",
    ),
    (
        "server/src/corpus/generate/wiki.rs",
        "build",
        "pages in the order an investigator meets them; the corpus hash depends on the order",
    ),
    (
        "server/src/corpus/generate/forum.rs",
        "build",
        "pages in the order an investigator meets them; the corpus hash depends on the order",
    ),
    ("server/src/corpus/generate/shop.rs", "examples", "the appendix's hand-written cases, one table"),
    ("server/src/corpus/generate/wiki.rs", "examples", "the appendix's hand-written cases, one table"),
    ("server/src/corpus/generate/forum.rs", "examples", "the appendix's hand-written cases, one table"),
    ("server/src/corpus/generate/shop.rs", "wardrobing", "one scenario family's table of variants"),
    ("server/src/corpus/generate/shop.rs", "account_takeover", "one scenario family's table of variants"),
    ("server/src/corpus/generate/forum.rs", "user_history", "one scenario family's table of variants"),
    ("app/src/glossary.rs", "metric_text", "a table: one definition per metric, in an exhaustive match"),
    ("app/src/pages/annotate_item.rs", "Item", "the labelling form: one view of fields that share its signals"),
    ("app/src/pages/leaderboard.rs", "LeaderboardPage", "one view: the table's columns follow its header"),
    ("app/src/pages/runs.rs", "RunPage", "one view: progress, coverage and the trials table share the run's resource"),
    ("app/src/pages/runs.rs", "LaunchForm", "one form: its fields share the form's signals"),
    ("server/src/cli/geo_tables.rs", "print_detection_rows", "a table printer: one column per line"),
    ("server/examples/bench_dashboard.rs", "main", "a benchmark script, read top to bottom"),
    ("server/examples/bench_geo.rs", "main", "a benchmark script, read top to bottom"),
];

/// Every function with a body in `file` (outside `#[cfg(test)]` modules and `#[test]`s), as
/// (name, lines).
struct Functions {
    found: Vec<(String, usize)>,
    owner: Vec<String>,
}

fn lines_of(sig: &syn::Signature, block: &syn::Block) -> usize {
    let start = sig.fn_token.span.start().line;
    block.brace_token.span.close().end().line - start + 1
}

fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("test")
            || a.path().segments.last().is_some_and(|s| s.ident == "test")
            || (a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test"))
    })
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let name = match &*i.self_ty {
            syn::Type::Path(p) => p.path.segments.last().map_or("_".into(), |s| s.ident.to_string()),
            _ => "_".into(),
        };
        self.owner.push(name);
        syn::visit::visit_item_impl(self, i);
        self.owner.pop();
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            self.found.push((f.sig.ident.to_string(), lines_of(&f.sig, &f.block)));
        }
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        let owner = self.owner.last().cloned().unwrap_or_default();
        self.found.push((format!("{owner}::{}", f.sig.ident), lines_of(&f.sig, &f.block)));
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.found.push((f.sig.ident.to_string(), lines_of(&f.sig, block)));
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

#[test]
fn functions_stay_short() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace").to_path_buf();
    let mut files = Vec::new();
    for dir in ["server/src", "server/examples", "app/src", "vocab/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut long = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).expect("in tree").display().to_string();
        if rel.ends_with("/tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("read");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{rel}: {e}"));
        let mut v = Functions { found: Vec::new(), owner: Vec::new() };
        v.visit_file(&ast);
        long.extend(v.found.into_iter().filter(|(_, n)| *n > MAX_FN_LINES).map(|(name, n)| (rel.clone(), name, n)));
    }
    let listed = |file: &str, name: &str| LONG_FUNCTIONS.iter().any(|(f, n, _)| *f == file && *n == name);
    let unlisted: Vec<String> = long
        .iter()
        .filter(|(f, name, _)| !listed(f, name))
        .map(|(f, name, n)| format!("{f}: {name} ({n} lines)"))
        .collect();
    assert!(unlisted.is_empty(), "functions over {MAX_FN_LINES} lines:\n{}", unlisted.join("\n"));
    let stale: Vec<String> = LONG_FUNCTIONS
        .iter()
        .filter(|(f, name, _)| !long.iter().any(|(lf, ln, _)| lf == f && ln == name))
        .map(|(f, name, _)| format!("{f}: {name}"))
        .collect();
    assert!(
        stale.is_empty(),
        "listed as long but no longer are (remove them from LONG_FUNCTIONS):\n{}",
        stale.join("\n")
    );
}

/// The length check counts from `fn` to the closing brace, and sees through impls.
#[test]
fn the_function_length_check_counts_lines() {
    let body = "    let _x = 1;\n".repeat(MAX_FN_LINES);
    let text = format!("struct S;\nimpl S {{\n    /// doc\n    fn long(&self) {{\n{body}    }}\n}}\nfn short() {{}}\n");
    let mut v = Functions { found: Vec::new(), owner: Vec::new() };
    v.visit_file(&syn::parse_file(&text).expect("parses"));
    assert_eq!(v.found, [("S::long".to_string(), MAX_FN_LINES + 2), ("short".to_string(), 1)]);
}
