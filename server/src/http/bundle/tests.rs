//! Tests of the bundle's places, links and rewriting.

use super::rewrite::{Link, link_of};
use super::*;

#[test]
fn places_cover_the_run_and_nothing_else() {
    let p = |url: &str| place_of("r1", false, url).map(|p| p.file);
    assert_eq!(p("/runs/r1").as_deref(), Some("index.html"));
    assert_eq!(p("/runs/r1?page=2").as_deref(), Some("index-page2.html"));
    assert_eq!(p("/runs/r1/trials/t%2F1").as_deref(), Some("trials/t~2f1.html"));
    assert_eq!(p("/runs/r1/trials/t1?page=1").as_deref(), Some("trials/t1-page1.html"));
    let later = place_of("r1", false, "/runs/r1/trials/t-page3?page=2").expect("a place");
    assert_eq!(later.first.as_deref(), Some("trials/t-page3.html"), "the first page of its own trial");
    assert_eq!(place_of("r1", false, "/runs/r1/trials/t1").expect("a place").first, None);
    assert_eq!(p("/leaderboard?run=r1").as_deref(), Some("leaderboard.html"));
    assert_eq!(p("/leaderboard").as_deref(), Some("leaderboard.html"));
    assert_eq!(
        p("/api/export/leaderboard.csv?run=r1&table=pairs").as_deref(),
        Some("data/leaderboard-table-pairs.csv")
    );
    assert_eq!(p("/leaderboard?run=r2"), None, "another run");
    assert_eq!(p("/leaderboard?run=r1&sort=acc"), None, "another view");
    assert_eq!(p("/runs/r2/trials/t1"), None);
    assert_eq!(p("/tasks/x"), None);
    assert_eq!(p("/api/export/leaderboard.csv?run=r1&tier=all").as_deref(), Some("data/leaderboard-tier-all.csv"));
    assert_eq!(p("/heatmaps?run=r1&metric=acc_dec&by=agent").as_deref(), Some("heatmaps-by-agent-metric-acc_dec.html"));
    assert_eq!(p("/geo?run=r1"), None, "not a GEO run");
    assert_eq!(place_of("g", true, "/geo/trials/x").map(|p| p.file).as_deref(), Some("targets/x.html"));
}

#[test]
fn links_become_files_fragments_or_text() {
    let to = |href: &str| match link_of("r1", false, href) {
        Link::To(p, f) => format!("{}{f}", p.file),
        Link::Keep => "keep".into(),
        Link::Outside => "outside".into(),
    };
    assert_eq!(to("/runs/r1/trials/t1?page=0&turn=4"), "trials/t1.html#turn-4");
    assert_eq!(to("/runs/r1/trials/t1?page=2&turn=41&outcome=harm"), "trials/t1-page2.html#turn-41");
    assert_eq!(to("/definitions#acc_dec"), "definitions.html#acc_dec");
    assert_eq!(to("#turn-3"), "keep");
    assert_eq!(to("https://example.org/x"), "keep");
    assert_eq!(to("/annotate/t1/harm"), "outside");
    assert_eq!(to("/shop/admin/dashboard"), "outside");
}

#[test]
fn pages_lose_scripts_and_keep_text_escaped() {
    let html = r#"<!DOCTYPE html><html><head><link rel="modulepreload" href="/pkg/mirage.js"><link rel="stylesheet" href="/pkg/mirage.css"><script>alert(1)</script></head><body><form class="whoami"><button>Sign out</button></form><a href="/runs/r1/trials/t1?turn=2">t</a><a href="/team">team</a><p>&lt;script&gt;alert(2)&lt;/script&gt;</p><form method="post" action="/x"><button>Go</button></form></body></html>"#;
    let page = rewrite(html, "r1", false, "trials/t9.html", None);
    assert!(!page.html.contains("<script"), "{}", page.html);
    assert!(!page.html.contains("modulepreload"));
    assert!(!page.html.contains("Sign out"));
    assert!(page.html.contains(r#"href="../mirage.css""#));
    assert!(page.html.contains(r#"href="../trials/t1.html#turn-2""#), "{}", page.html);
    assert!(page.html.contains("&lt;script&gt;alert(2)&lt;/script&gt;"));
    assert!(page.html.contains("Content-Security-Policy"));
    assert!(!page.html.contains("action="));
    assert!(page.html.contains("<button disabled=\"\">Go</button>"), "{}", page.html);
    assert_eq!(page.outside, 1);
    assert_eq!(page.links.len(), 1);
}

#[test]
fn the_run_picker_offers_only_the_run_in_the_copy() {
    let html = r#"<html><body><label class="picker">Run <select name="run"><option value="r2">r2</option><option value="r1" selected>r1</option></select></label><select name="tier"><option value="strict">strict</option></select></body></html>"#;
    let page = rewrite(html, "r1", false, "index.html", None);
    assert!(!page.html.contains("r2"), "{}", page.html);
    assert!(page.html.contains(r#"value="r1""#) && page.html.contains("strict"), "{}", page.html);
}

#[test]
fn each_text_seen_is_one_file_that_its_turns_link_to() {
    let turn = |t: usize, text: &str| {
        format!(
            r#"<article class="turn" id="turn-{t}"><a href="/runs/r1/trials/t9?turn={t}">here</a><details open=""><summary>What the agent saw</summary><pre class="observation"><span>{text}</span></pre></details></article>"#
        )
    };
    let html = format!(
        r#"<html><body><div class="buttons open-all"><button>Expand all</button></div>{}{}{}</body></html>"#,
        turn(0, "a &lt;script&gt; page\nline two"),
        turn(1, "another page"),
        turn(2, "a &lt;script&gt; page\nline two")
    );
    let page = rewrite(&html, "r1", false, "trials/t9.html", None);
    let files: BTreeSet<&str> = page.seen.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(page.seen.len(), 3, "one per turn");
    assert_eq!(files.len(), 2, "equal texts share a file: {files:?}");
    for file in &files {
        assert!(file.starts_with("seen/") && file.ends_with(".html"), "{file}");
        assert!(page.html.contains(&format!(r#"href="../{file}""#)), "{}", page.html);
    }
    assert!(!page.html.contains("<details") && !page.html.contains("observation"), "{}", page.html);
    assert!(page.html.contains("What the agent saw</a> (2 lines)"), "{}", page.html);
    assert!(!page.html.contains("Expand all"));
    assert!(page.html.contains(r##"href="#turn-2""##), "a turn of the same page is a fragment: {}", page.html);
    assert!(page.links.is_empty(), "nothing new to render: {:?}", page.links);
    let (_, pre) = &page.seen[0];
    assert!(pre.starts_with(r#"<pre class="observation">"#) && pre.contains("a &lt;script&gt; page"), "{pre}");
    let seen = seen_page("r1", pre);
    assert!(seen.contains(pre.as_str()) && seen.contains("Content-Security-Policy") && !seen.contains("<script"));
}

#[test]
fn a_later_page_of_turns_links_to_the_summary_on_the_first() {
    let html = r#"<html><body><section class="summary-grid"><h2>Ticket</h2><ul class="claims"><li>a claim</li></ul></section><div class="turns"></div></body></html>"#;
    let later = rewrite(html, "r1", false, "trials/t9-page2.html", Some("trials/t9.html"));
    assert!(!later.html.contains("a claim"), "{}", later.html);
    assert!(later.html.contains(r#"<p class="summary-elsewhere"><a href="../trials/t9.html">"#), "{}", later.html);
    let first = rewrite(html, "r1", false, "trials/t9.html", None);
    assert!(first.html.contains("a claim"));
}

#[test]
fn outputs_are_named_folders_and_archives_name_their_folder() {
    for bad in [".", "..", "share/.", "share/..", "share/./"] {
        let e = check_out(Path::new(bad)).expect_err(bad).to_string();
        assert!(e.contains("names no folder of its own"), "{bad}: {e}");
    }
    assert_eq!(archive_folder(Path::new("share/my run.zip")), "my~20run");
    assert_eq!(archive_folder(Path::new("share/....zip")), "bundle");
    assert_eq!(archive_folder(Path::new("r.zip")), "r");
    assert!(seen_page("r<1>", "<pre></pre>").contains("run r&lt;1&gt; "));
}
