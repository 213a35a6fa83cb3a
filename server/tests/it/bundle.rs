//! `mirage runs bundle`: a run as static files. Every trial has its page, every link in
//! the copy points at a file of the copy (or is plain text), nothing is fetched or run,
//! the numbers are the server's own, and hostile text stays text.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use app::model::RunId;
use scraper::{Html, Selector};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).expect("read dir") {
            let p = e.expect("entry").path();
            if p.is_dir() { todo.push(p) } else { out.push(p) }
        }
    }
    out.sort();
    out
}

/// Checks every page of a bundle: no scripts or preloads, the policy declared, every link
/// a file of the bundle (or a fragment, or an address outside the dashboard), no fetch of
/// anything outside. Returns the pages' parsed HTML by path relative to `dir`.
fn check_pages(dir: &Path) -> Vec<(String, Html)> {
    let any = Selector::parse("[href], [src], [action]").expect("selector");
    let mut pages = Vec::new();
    for file in files(dir).into_iter().filter(|f| f.extension().is_some_and(|e| e == "html")) {
        let rel = file.strip_prefix(dir).expect("inside").to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).expect("page");
        let html = Html::parse_document(&text);
        assert!(!text.contains("<script"), "{rel} keeps a script");
        assert!(text.contains("Content-Security-Policy"), "{rel} declares no policy");
        for el in html.select(&any) {
            for (name, value) in el.value().attrs() {
                match name {
                    "src" => panic!("{rel}: a fetched source {value:?}"),
                    "action" => panic!("{rel}: a form still posts to {value:?}"),
                    _ => {}
                }
                if name != "href" || value.starts_with('#') || value.starts_with("https://") {
                    continue;
                }
                assert!(
                    !value.starts_with('/') && !value.starts_with("http:"),
                    "{rel}: a link to the server {value:?}"
                );
                let path = value.split('#').next().expect("path");
                let target = file.parent().expect("folder").join(path);
                assert!(target.is_file(), "{rel}: {value:?} points at no file of the bundle");
            }
        }
        pages.push((rel, html));
    }
    pages
}

/// The pages of what the agent saw that a trial page's turns link to, parsed.
fn seen_by(pages: &[(String, Html)], trial_page: &Html) -> Vec<Html> {
    let link = Selector::parse("p.seen-link a").expect("selector");
    trial_page
        .select(&link)
        .map(|a| {
            let href = a.value().attr("href").expect("href");
            let name = href.trim_start_matches("../");
            pages.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no page {name}")).1.clone()
        })
        .collect()
}

#[tokio::test]
async fn a_bundle_holds_every_trial_and_the_servers_numbers() {
    let app = crate::support::TestApp::start().await;
    let run = app.launch("shop-example-01,forum-example-01,wiki-example-01", "surface,oracle", "L0,L3").await;
    app.wait_for(&run).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("copy");
    let o = crate::support::mirage_beside(&app.db, &["runs", "bundle", &run, "-o", out.to_str().expect("utf-8")]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("index.html"), "{said}");

    let pages = check_pages(&out);
    let names: BTreeSet<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
    for page in
        ["index.html", "leaderboard.html", "robustness.html", "heatmaps.html", "report.html", "definitions.html"]
    {
        assert!(names.contains(page), "no {page}: {names:?}");
    }
    let trials = app.state.store.trials(&RunId::from(&run)).await.expect("trials");
    assert_eq!(trials.len(), 12);
    for t in &trials {
        assert!(names.contains(format!("trials/{}.html", t.trial_id).as_str()), "no page for {}", t.trial_id);
    }
    assert!(out.join("mirage.css").is_file());

    // A trajectory page: the verdict the store holds, a link per turn to what the agent
    // saw, and there the manipulated text of an L3 trial marked as on the server; a text
    // seen by several turns is one file.
    let verdict = Selector::parse("[data-testid=verdict]").expect("selector");
    let marked = Selector::parse("mark.manipulated").expect("selector");
    let turns = Selector::parse("article.turn").expect("selector");
    let (mut seen_marked, mut links) = (false, 0);
    for t in &trials {
        let (_, html) = pages.iter().find(|(n, _)| *n == format!("trials/{}.html", t.trial_id)).expect("page");
        let shown: String = html.select(&verdict).next().expect("verdict cell").text().collect();
        let stored = app.state.store.trial(&t.trial_id).await.expect("trial").verdict.unwrap_or_default();
        assert!(shown.contains(&stored), "{}: shows {shown:?}, stored {stored:?}", t.trial_id);
        let seen = seen_by(&pages, html);
        assert_eq!(seen.len(), html.select(&turns).count(), "{}: a link per turn", t.trial_id);
        links += seen.len();
        seen_marked |= seen.iter().any(|page| page.select(&marked).next().is_some());
    }
    assert!(seen_marked, "no L3 trial shows its manipulated text");
    let seen_files = names.iter().filter(|n| n.starts_with("seen/")).count();
    assert!(seen_files > 0 && seen_files < links, "{seen_files} files for {links} turns");

    // The leaderboard's download is the server's own.
    let (status, served) = app.text(&format!("/api/export/leaderboard.json?run={run}&tier=default")).await;
    assert_eq!(status, 200);
    let copied = std::fs::read_to_string(out.join("data/leaderboard-tier-default.json")).expect("download");
    let rows = |s: &str| serde_json::from_str::<serde_json::Value>(s).expect("json")["rows"].clone();
    assert_eq!(rows(&copied), rows(&served));

    // A second bundle into the same folder is refused, and the first copy is untouched.
    let before = std::fs::read(out.join("index.html")).expect("index");
    let o = crate::support::mirage_beside(&app.db, &["runs", "bundle", &run, "-o", out.to_str().expect("utf-8")]).await;
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not empty") && err.contains("copy"), "{err}");
    assert_eq!(std::fs::read(out.join("index.html")).expect("index"), before);
    // A name ending in .zip: one archive holding the same files under a folder of its name.
    let zipped = dir.path().join("copy.zip");
    let o =
        crate::support::mirage_beside(&app.db, &["runs", "bundle", &run, "-o", zipped.to_str().expect("utf-8")]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("unpack it and open copy/index.html"));
    let mut archive = zip::ZipArchive::new(std::fs::File::open(&zipped).expect("archive")).expect("a zip");
    let entries: BTreeSet<String> = archive.file_names().map(|n| n.expect("an entry name").into_owned()).collect();
    let copied: BTreeSet<String> = files(&out)
        .iter()
        .map(|f| format!("copy/{}", f.strip_prefix(&out).expect("inside").to_string_lossy()))
        .collect();
    assert_eq!(entries, copied);
    let mut index = String::new();
    std::io::Read::read_to_string(&mut archive.by_name("copy/index.html").expect("index"), &mut index).expect("read");
    assert!(index.contains("Content-Security-Policy") && index.contains(&run));
    let o =
        crate::support::mirage_beside(&app.db, &["runs", "bundle", &run, "-o", zipped.to_str().expect("utf-8")]).await;
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("copy.zip exists"));
    std::fs::remove_file(&zipped).expect("remove");
    // An unknown run writes nothing.
    let none = dir.path().join("none");
    let o =
        crate::support::mirage_beside(&app.db, &["runs", "bundle", "run-nope", "-o", none.to_str().expect("utf-8")])
            .await;
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("run-nope"));
    assert!(!none.exists());
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1, "a staging folder was left behind");

    // Interrupted (SIGTERM) while it writes: the copy is abandoned and its folder removed.
    let cut = dir.path().join("cut");
    let stopped = tokio::task::spawn_blocking(move || interrupted_bundle(&app.db, &run, &cut)).await.expect("ran");
    assert!(stopped.contains("interrupted"), "{stopped}");
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 1, "an interrupted copy left a folder behind");
}

/// Starts `mirage runs bundle RUN -o OUT`, sends SIGTERM as soon as its staging folder
/// appears, and returns what it said on stderr. A copy that finished before the signal
/// arrived is removed and started again (a few times).
fn interrupted_bundle(db: &std::path::Path, run: &str, out: &std::path::Path) -> String {
    let parent = out.parent().expect("parent");
    for _ in 0..5 {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mirage"))
            .arg("--db")
            .arg(db)
            .args(["runs", "bundle", run, "-o"])
            .arg(out)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let staging = || {
            std::fs::read_dir(parent)
                .expect("dir")
                .flatten()
                .any(|e| e.file_name().to_string_lossy().contains(".partial-"))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while !staging() && child.try_wait().expect("wait").is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let status =
            std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("kill");
        let o = child.wait_with_output().expect("output");
        if o.status.success() {
            // It finished first: try again.
            std::fs::remove_dir_all(out).expect("remove the finished copy");
            continue;
        }
        assert!(status.success(), "the signal was sent");
        return String::from_utf8_lossy(&o.stderr).into_owned();
    }
    panic!("the copy always finished before it could be interrupted");
}

#[tokio::test]
async fn hostile_text_stays_text_in_a_bundle() {
    let app = crate::support::TestApp::start().await;
    let payload =
        r#"<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2"><a href="javascript:alert(1)">x</a>"#;
    let observation = format!("Customer note: {payload} (end of note)");
    let start = observation.find('<').expect("payload");
    let end = start + payload.len();
    let line = serde_json::json!({
        "trial_id": "hostile", "task_id": "shop-example-01", "agent": format!("agent{payload}"),
        "level": "L3", "condition": "raw", "seed": 0, "status": "done", "spans_marked": true,
        "steps": [
            {"url": "/shop/admin/dashboard", "observation": observation, "thought": format!("Following {payload}"),
             "action": {"type": "goto", "url": "/shop/admin/dashboard"}, "latency_ms": 3,
             "spans": [{"id": "s1", "injection": "note", "text": payload, "start": start, "end": end}]},
            {"url": "/shop/admin/dashboard", "observation": "ok", "thought": "deciding",
             "action": {"type": "verdict", "verdict": "APPROVE", "rationale": format!("because {payload}")}, "latency_ms": 3}
        ],
        "verdict": {"action": "APPROVE", "rationale": format!("because {payload}")}
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hostile.jsonl");
    std::fs::write(&file, format!("{line}\n")).expect("write");
    let o = crate::support::mirage_beside(&app.db, &["runs", "import", file.to_str().expect("utf-8")]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let out = dir.path().join("copy");
    let o = crate::support::mirage_beside(&app.db, &["runs", "bundle", &run, "-o", out.to_str().expect("utf-8")]).await;
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let pages = check_pages(&out);
    let (_, html) = pages.iter().find(|(n, _)| n.starts_with("trials/")).expect("the trial's page");
    let seen = seen_by(&pages, html);
    let marked: String = seen
        .iter()
        .find_map(|page| {
            page.select(&Selector::parse("mark.manipulated").expect("selector")).next().map(|m| m.text().collect())
        })
        .expect("mark");
    assert!(marked.ends_with(payload), "the payload shows as text where it was planted: {marked}");
    for (name, html) in &pages {
        for tag in ["img", "a[href^=javascript]", "iframe"] {
            let s = Selector::parse(tag).expect("selector");
            assert!(html.select(&s).next().is_none(), "{name}: the payload became a {tag}");
        }
    }
}
