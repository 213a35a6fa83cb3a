//! The GEO ranking track's offline pipeline on all 529 targets (docs/geo.md): the position
//! ranker gives every method a gain of exactly 0, keyword stuffing moves BM25's targets up on
//! every dataset and never down, stripping the query noun never moves a target up, and the
//! clean edit changes nothing.

use app::model::RunId;
use server::db::RunStore as _;
use server::geo::data::{DATASETS, lists};
use server::geo::plan::GeoSpec;
use server::geo::rank::{Bm25, Position, Ranker};
use server::geo::{Protocol, evaluate, writers};

/// Per dataset, the gains of every target for one ranker and writer.
async fn gains(ranker: &dyn Ranker, writer: &str) -> Vec<(&'static str, Vec<f64>)> {
    let protocol = Protocol::default();
    let lists = lists().expect("lists");
    let mut out = Vec::new();
    for (dataset, _) in DATASETS {
        let mut all = Vec::new();
        for list in lists.iter().filter(|l| l.dataset == dataset) {
            for (t, item) in list.items.iter().enumerate() {
                let edited = writers::write(writer, &item.name, &list.noun, &item.text).expect("writer");
                let (result, records) = evaluate(ranker, &protocol, list, t, &edited).await.expect("evaluate");
                assert_eq!(records.len(), 10);
                assert_eq!(
                    records[0].order,
                    (0..list.items.len()).collect::<Vec<_>>(),
                    "the first order is the identity"
                );
                assert!(result.missing_a == 0.0 && result.missing_b == 0.0, "offline replies name every item");
                all.push(result.nrg);
            }
        }
        out.push((dataset, all));
    }
    out
}

#[tokio::test]
async fn position_ranker_and_clean_edit_gain_nothing() {
    for writer in writers::WRITERS {
        for (dataset, g) in gains(&Position, writer).await {
            assert!(g.iter().all(|&x| x == 0.0), "position + {writer} on {dataset}: {g:?}");
        }
    }
    for (dataset, g) in gains(&Bm25, "clean").await {
        assert!(g.iter().all(|&x| x == 0.0), "bm25 + clean on {dataset}");
    }
}

#[tokio::test]
async fn stuffing_moves_bm25_up_on_every_dataset_and_stripping_never_does() {
    let stuffed = gains(&Bm25, "stuff").await;
    assert_eq!(stuffed.iter().map(|(_, g)| g.len()).sum::<usize>(), 529);
    for (dataset, g) in &stuffed {
        let mean = g.iter().sum::<f64>() / g.len() as f64;
        eprintln!("bm25 + stuff on {dataset}: mean NRG {mean:.3} over {} targets", g.len());
        assert!(mean > 0.45, "{dataset}: mean NRG {mean}");
        assert!(g.iter().all(|&x| x >= 0.0), "{dataset}: a stuffed target moved down");
    }
    for (dataset, g) in gains(&Bm25, "strip").await {
        assert!(g.iter().all(|&x| x <= 0.0), "{dataset}: a stripped target moved up: {g:?}");
    }
}

/// `mirage geo …` as a user runs it: no database is created, bad targets are named, and
/// the evaluation's JSON has one row per (ranker, method) with intervals.
#[test]
fn the_geo_commands() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::support::temp_path(&dir, "never.db");
    let out = crate::support::mirage(&db, &["geo", "datasets", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["lists"].as_array().map(Vec::len), Some(63));
    assert_eq!(v["datasets"][0]["targets"], 399);
    assert!(!db.exists(), "geo commands need no database");

    let out = crate::support::mirage(&db, &["geo", "prompt", "--target", "stsdata/books/3", "--order", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("instance seed 59339") && text.contains("I am looking for a book."), "{text}");
    // Order 2 of stsdata/books/3 is [9,3,2,5,0,4,6,1,7,8]: the target (index 2) is shown third.
    assert!(text.contains("shown as number 3 in order 2"), "{text}");
    let out = crate::support::mirage(&db, &["geo", "prompt", "--target", "stsdata/books/11"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("index 11 is outside 1..=10 of stsdata/books"));

    let args = ["geo", "eval", "--dataset", "stsdata,cseo", "--method", "stuff", "--json"];
    let out = crate::support::mirage(&db, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let row = &v["rows"][0];
    assert_eq!(
        (row["ranker"].as_str(), row["method"].as_str(), row["n"].as_u64()),
        (Some("bm25"), Some("stuff"), Some(90))
    );
    let nrg = &row["nrg"];
    assert!(nrg["lo"].as_f64() <= nrg["mean"].as_f64() && nrg["mean"].as_f64() <= nrg["hi"].as_f64());
    assert!(nrg["mean"].as_f64().expect("mean") > 0.45);
    assert_eq!(v["datasets"].as_array().map(Vec::len), Some(2));
    let out = crate::support::mirage(&db, &["geo", "eval", "--ranker", "gpt"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("\"gpt\" is not an offline ranker"));
    // A judge prompt that cannot be read stops `geo score` before the database is opened.
    let missing = dir.path().join("judge.toml");
    let untouched = crate::support::temp_path(&dir, "untouched.db");
    let args = ["geo", "score", "--run", "run-x", "--judge-prompt", missing.to_str().expect("utf-8")];
    let out = crate::support::mirage(&untouched, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("judge.toml: cannot read"), "{err}");
    assert!(!untouched.exists(), "a bad prompt file touches no database");

    // A prompt file with a typo stops `geo run` before anything is planned, naming the
    // file, the field and the placeholders it may use.
    let bad = dir.path().join("tap.toml");
    std::fs::write(&bad, "user = \"Improve {text} for {nmae}\"\n").expect("write");
    let args = ["geo", "run", "--ranker", "bm25", "--method", "tap", "--tap-prompt", bad.to_str().expect("utf-8")];
    let out = crate::support::mirage(&db, &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("tap.toml: field `user`: unknown placeholder {nmae}"), "{err}");
    assert!(err.contains("{others}"), "{err}");
    let out = crate::support::mirage(&db, &["runs", "list"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("run-"), "nothing planned");
}

/// The user message's product names in presented order.
fn shown_names(body: &serde_json::Value) -> Vec<(String, String)> {
    let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
    user.lines()
        .filter_map(|l| {
            let (n, rest) = l.split_once(". ")?;
            n.parse::<usize>().ok()?;
            let (name, text) = rest.split_once(": ")?;
            Some((name.to_string(), text.to_string()))
        })
        .collect()
}

/// A content-blind chat ranker (it lists the products as shown) that answers the status
/// `refuse` gives for the stuffed product's name (`None` on a list with no stuffed text).
async fn blind_refusing(refuse: fn(Option<&str>) -> Option<u16>) -> server::llm::scripted::ScriptedServer {
    server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, move |body| {
        let shown = shown_names(body);
        let stuffed = shown.iter().find(|(_, text)| text.contains("of the year")).map(|(name, _)| name.as_str());
        if let Some(status) = refuse(stuffed) {
            return server::llm::scripted::Reply::Status(status, None);
        }
        let reply: String = shown.iter().enumerate().map(|(i, (n, _))| format!("{}. {n}\n", i + 1)).collect();
        server::llm::scripted::Reply::Text(reply)
    })
    .await
}

/// A chat "model" that lists the products in reverse, and leaves out any whose description
/// carries the stuffing sentence.
fn reverse_ranker(body: &serde_json::Value) -> server::llm::scripted::Reply {
    let names: Vec<String> =
        shown_names(body).into_iter().rev().filter(|(_, text)| !text.contains("of the year")).map(|(n, _)| n).collect();
    let reply: String = names.iter().enumerate().map(|(i, n)| format!("{}. {n}\n", i + 1)).collect();
    server::llm::scripted::Reply::Text(reply)
}

/// The distinct clean (list, order) pairs of a dataset's targets.
fn distinct_prompts(lists: &[server::geo::data::List], dataset: &str) -> usize {
    let protocol = Protocol::default();
    let mut seen = std::collections::HashSet::new();
    for list in lists.iter().filter(|l| l.dataset == dataset) {
        for t in 0..list.items.len() {
            for order in server::geo::target_orders(&protocol, list, t) {
                seen.insert((list.key(), order));
            }
        }
    }
    seen.len()
}

fn spec(datasets: &[&str], rankers: &[&str], methods: &[&str]) -> GeoSpec {
    GeoSpec::offline(datasets, rankers, methods)
}

async fn execute(store: std::sync::Arc<dyn server::db::Store>, run: &str, concurrency: usize) {
    let world = std::sync::Arc::new(server::env::World::build(Vec::new()).expect("world"));
    let options = server::runs::PoolOptions { concurrency, ..Default::default() };
    server::runs::execute(store, world, &RunId::from(run), options, std::sync::Arc::new(|_, _| {}))
        .await
        .expect("execute");
}

/// The offline pipeline through the durable queue and the report, on SQLite and (with
/// `MIRAGE_TEST_POSTGRES_URL`) PostgreSQL: position gains nothing with a degenerate
/// interval, stuffing moves BM25 up on every dataset, stripping never moves a target up, the
/// clean method changes nothing.
#[tokio::test]
async fn a_durable_geo_run_on_sqlite_and_postgres() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut urls =
        vec![server::db::database_url(crate::support::temp_path(&dir, "g.db").to_str().expect("utf-8")).expect("url")];
    urls.extend(crate::support::fresh_postgres_url().await);
    let lists = lists().expect("lists");
    for url in urls {
        let store: std::sync::Arc<dyn server::db::Store> =
            std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
        let run = server::runs::geo::create_geo_run(
            store.as_ref(),
            spec(&["stsdata", "cseo"], &["bm25", "position"], &["clean", "stuff", "strip"]),
        )
        .await
        .expect("run");
        execute(store.clone(), &run, 4).await;
        let p = store.progress(&run).await.expect("progress");
        assert_eq!((p.done, p.error, p.queued), (540, 0, 0), "{url}");
        let (_, results, _) = server::geo::report::results(store.as_ref(), &lists, &run).await.expect("results");
        for ((ranker, method), scored) in &results {
            assert_eq!(scored.len(), 90);
            for s in scored {
                let nrg = s.result.nrg;
                match (ranker.as_str(), method.as_str()) {
                    ("position", _) | (_, "clean") => assert_eq!(nrg, 0.0, "{ranker} {method} {}", s.list),
                    (_, "stuff") => assert!(nrg >= 0.0, "{}", s.list),
                    _ => assert!(nrg <= 0.0, "strip moved {} up", s.list),
                }
            }
        }
        let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
        for row in report.rows.iter().filter(|r| r.method == "clean") {
            // The clean text is the original: PPL-R 1, and KVR is the originals' keyword rate
            // (stsdata 0 of 30, cseo 12 of 60: an equal-dataset 0.1).
            assert_eq!(row.summary.ppl_r, Some(1.0));
            assert!((row.summary.kvr.mean - 0.1).abs() < 1e-12, "{}", row.summary.kvr.mean);
        }
        for row in report.rows.iter().filter(|r| r.ranker == "position") {
            let e = row.summary.nrg;
            assert_eq!((e.mean, e.lo, e.hi), (0.0, 0.0, 0.0), "degenerate at 0: {}", row.method);
            assert_eq!(row.summary.p_at_0_1.mean, 0.0);
        }
        for row in report.datasets.iter().filter(|r| r.ranker == "bm25" && r.method == "stuff") {
            assert!(row.summary.nrg.mean > 0.45, "{}: {}", row.dataset, row.summary.nrg.mean);
        }
        let top = report.rows.iter().find(|r| r.ranker == "bm25" && r.band == 1).expect("a top band");
        assert_eq!(top.method, "stuff");
        // Holm within each ranker: its own three pairs form the family.
        for ranker in ["bm25", "position"] {
            let mine: Vec<_> = report.pairs.iter().filter(|p| p.ranker == ranker).collect();
            let expected = server::stats::holm(&mine.iter().map(|p| p.p).collect::<Vec<_>>());
            assert_eq!(
                mine.iter().map(|p| p.p_holm).collect::<Vec<_>>(),
                expected.into_iter().map(Some).collect::<Vec<_>>(),
                "{ranker}"
            );
        }
        // A declared family adjusts its own pairs only; a pair outside it is not adjusted
        // (no p (Holm) at all, rather than a 1 that reads as "not significant").
        let family = ["clean".to_string(), "stuff".to_string()];
        let declared = server::geo::report::report_with(store.as_ref(), &lists, &run, &family, Default::default())
            .await
            .expect("report");
        for p in declared.pairs.iter().filter(|p| p.ranker == "bm25") {
            let inside = family.contains(&p.a) && family.contains(&p.b);
            assert_eq!(p.p_holm.is_some(), inside, "{} − {}", p.a, p.b);
        }
        assert!(declared.spearman.iter().all(|r| r.rho.is_none() && r.methods == 2), "two methods rank nothing");
        let zero = report.pairs.iter().find(|p| p.ranker == "position").expect("pair");
        assert_eq!((zero.diff.mean, zero.p), (0.0, 1.0), "all differences 0 give p = 1");
        // The agent-run readers refuse a GEO run by name.
        let err = server::runs::export::export_run(store.as_ref(), &run, &mut Vec::new()).await.unwrap_err();
        assert!(err.to_string().contains("is a GEO ranking run"), "{err}");
        // Into a file: refused the same way, and neither the file nor its partial is left.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("out.jsonl");
        let err = server::runs::export::export_run_to(store.as_ref(), &run, &path).await.unwrap_err();
        assert!(format!("{err:#}").contains("is a GEO ranking run"), "{err:#}");
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0, "nothing written");
    }
}

/// A chat ranker: clean replies are asked once per (target, order) and shared by every
/// method, a rerun asks nothing, and a target the model leaves out counts as missing.
#[tokio::test]
async fn chat_replies_are_cached_and_shared_across_methods() {
    let server = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, reverse_ranker).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "c.db").to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let mut geo = spec(&["stsdata"], &["rev"], &["clean", "stuff"]);
    geo.endpoints.insert("rev".into(), server::llm::EndpointSpec::new(&server.base_url, "rev-model"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo.clone()).await.expect("run");
    execute(store.clone(), &run, 1).await;
    // Every distinct prompt is asked once: the clean list of each (target, order) — the
    // clean method's edited list is that same list, and targets of one list share the
    // identity order — and the stuffed list of each (target, order).
    let lists = lists().expect("lists");
    let distinct = distinct_prompts(&lists, "stsdata");
    assert_eq!(server.requests().len(), distinct + 300);
    let body = &server.requests()[0];
    assert_eq!(body["temperature"], 0.0, "rankers are asked at temperature 0");
    let again = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
    execute(store.clone(), &again, 1).await;
    assert_eq!(server.requests().len(), distinct + 300, "a rerun is answered from the cache");
    // The tokens each call reported are kept with its order (what `runs show` sums); a
    // rerun read from the cache spent nothing.
    let spent = |run: &str| {
        let store = store.clone();
        let run = RunId::from(run);
        async move {
            let uses = store.token_use(&run).await.expect("tokens");
            uses.iter().map(|u| (u.prompt_tokens, u.completion_tokens)).fold((0, 0), |a, u| (a.0 + u.0, a.1 + u.1))
        }
    };
    let calls = i64::try_from(distinct + 300).expect("calls");
    assert_eq!(spent(&run).await, (100 * calls, 20 * calls), "every call's reported usage");
    assert_eq!(spent(&again).await, (0, 0), "answers read from the cache cost nothing again");

    let report = server::geo::report::report(store.as_ref(), &lists, &again).await.expect("report");
    let stuffed = report.rows.iter().find(|r| r.method == "stuff").expect("stuff");
    assert_eq!(stuffed.summary.missing, 1.0, "the model never names a stuffed target");
    let clean = report.rows.iter().find(|r| r.method == "clean").expect("clean");
    assert_eq!((clean.summary.missing, clean.summary.nrg.mean), (0.0, 0.0));
    assert!(stuffed.summary.nrg.mean < 0.0, "missing = rank L + 1");

    // A model that answers with an empty message ranks nothing: every target of every
    // order is missing (L + 1), and the trials finish instead of failing.
    let mute = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |_| {
        server::llm::scripted::Reply::Empty
    })
    .await;
    let mut quiet = spec(&["stsdata"], &["mute"], &["clean"]);
    quiet.lists = vec!["stsdata/books".into()];
    quiet.endpoints.insert("mute".into(), server::llm::EndpointSpec::new(&mute.base_url, "mute-model"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), quiet).await.expect("run");
    execute(store.clone(), &run, 1).await;
    let p = store.progress(&run).await.expect("progress");
    assert_eq!((p.done, p.error), (10, 0), "ten targets of one list, none failed");
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    assert_eq!((report.rows[0].summary.missing, report.rows[0].summary.nrg.mean), (1.0, 0.0));
}

/// A dataset whose every trial of a row failed is named and marked (‡) rather than silently
/// left out of the row's equal-dataset mean. Trials that ended in error stay so on a plain
/// resume (which says how to retry them), and `--retry-errors` queues them again: once the
/// endpoint answers, every target is scored.
#[tokio::test]
async fn errored_trials_are_named_and_retried_on_request() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let lists = lists().expect("lists");
    let books: Vec<String> = lists
        .iter()
        .find(|l| l.key() == "stsdata|books")
        .expect("books")
        .items
        .iter()
        .map(|i| i.name.clone())
        .collect();
    let broken = std::sync::Arc::new(AtomicBool::new(true));
    let flag = broken.clone();
    // While broken, a 404 (a configuration error: the trial fails) to every stuffed prompt of
    // stsdata's books; cseo's book list (other titles) is answered throughout.
    let server = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, move |body| {
        let shown = shown_names(body);
        let stuffed = shown.iter().find(|(_, text)| text.contains("of the year"));
        if flag.load(Ordering::SeqCst) && stuffed.is_some_and(|(name, _)| books.contains(name)) {
            return server::llm::scripted::Reply::Status(404, None);
        }
        let reply: String = shown.iter().enumerate().map(|(i, (n, _))| format!("{}. {n}\n", i + 1)).collect();
        server::llm::scripted::Reply::Text(reply)
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = crate::support::temp_path(&dir, "r.db");
    let url = server::db::database_url(path.to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let mut geo = spec(&["stsdata"], &["flaky"], &["clean", "stuff"]);
    geo.datasets = vec!["stsdata".into(), "cseo".into()];
    geo.lists = vec!["stsdata/books".into(), "cseo/books".into()];
    geo.endpoints.insert("flaky".into(), server::llm::EndpointSpec::new(&server.base_url, "flaky-model"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
    execute(store.clone(), &run, 2).await;
    assert_eq!(store.progress(&run).await.expect("progress").error, 10, "every stuffed trial of stsdata failed");
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    let stuff = report.rows.iter().find(|r| r.method == "stuff").expect("the row stays");
    assert_eq!((stuff.summary.n, stuff.incomplete), (10, 10));
    let listed = report.incomplete.iter().find(|e| e.method == "stuff").expect("listed");
    assert_eq!(listed.left_out, ["stsdata"], "{listed:?}");
    assert!(listed.describe().contains("no target of stsdata was scored"), "{}", listed.describe());
    let out = crate::support::mirage_beside(&path, &["geo", "report", "--run", &run, "--by", "method,dataset"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("stuff ‡") && text.contains("10 of 20"), "the row is marked with its count: {text}");
    assert!(text.contains("— (no target scored)"), "the left-out dataset has its row: {text}");

    broken.store(false, Ordering::SeqCst);
    let out = crate::support::mirage_beside(&path, &["geo", "run", "--resume", &run]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("10 trials ended in error and stay so (--retry-errors"), "{err}");
    assert_eq!(store.progress(&run).await.expect("progress").error, 10, "a plain resume retries nothing");

    let out = crate::support::mirage_beside(&path, &["geo", "run", "--resume", &run, "--retry-errors"]).await;
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.contains("10 trials that ended in error are queued again"), "{err}");
    let p = store.progress(&run).await.expect("progress");
    assert_eq!((p.done, p.error), (40, 0));
    assert_eq!(store.run(&run).await.expect("run").status, server::db::RunStatus::Done);
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    assert!(report.incomplete.is_empty(), "{:?}", report.incomplete);
}

/// A content-blind model that refuses every stuffed list (HTTP 400, not retried): each
/// refused call is a reply naming nothing, so the stuffed targets are missing in every
/// order, no trial fails, the row stays with all its targets, and the report counts the
/// failed orders and trials next to the figures.
#[tokio::test]
async fn a_refused_call_counts_as_missing_and_the_trial_stays_in_the_means() {
    // A content filter: 403 to the stuffed prompts, answers to the rest.
    let server = blind_refusing(|stuffed| stuffed.map(|_| 403)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = crate::support::temp_path(&dir, "f.db");
    let url = server::db::database_url(path.to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let mut geo = spec(&["stsdata"], &["blind"], &["clean", "stuff"]);
    geo.lists = vec!["stsdata/books".into()];
    geo.endpoints.insert("blind".into(), server::llm::EndpointSpec::new(&server.base_url, "blind-model"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
    execute(store.clone(), &run, 2).await;
    let p = store.progress(&run).await.expect("progress");
    assert_eq!((p.done, p.error), (20, 0), "refusals end no trial");
    let lists = lists().expect("lists");
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    let row = |m: &str| &report.rows.iter().find(|r| r.method == m).expect("row").summary;
    let (clean, stuff) = (row("clean"), row("stuff"));
    assert_eq!((clean.n, clean.failed_orders, clean.nrg.mean), (10, 0, 0.0));
    assert_eq!((stuff.n, stuff.orders, stuff.failed_orders, stuff.failed_targets), (10, 100, 100, 10));
    assert_eq!((stuff.missing, stuff.missing_clean), (1.0, 0.0), "missing on the side that failed");
    // A blind ranker gains nothing; a refused edit is ranked last: every NRG is negative.
    assert!(stuff.nrg.mean < 0.0 && stuff.nrg.hi < 0.0, "{:?}", stuff.nrg);
    assert_eq!((report.failed_orders, report.failed_trials), (100, 10));
    // Clean: 10 targets × 10 orders × 2 replies × 10 lines; stuff: only the clean replies.
    assert_eq!((report.parser.as_str(), report.compared_parser.as_str(), report.lines), ("geobench", "strict", 3000));
    // Every reply is read both ways, the refused ones too (they name nothing either way).
    assert_eq!((report.replies, report.target_read_differently), (400, 0));
    assert!(report.incomplete.is_empty() && !report.lists_changed);
    // Read with other originals than the run was planned on, the report says so.
    let mut changed = lists.clone();
    let at = |l: &[server::geo::data::List], key: &str| l.iter().position(|l| l.key() == key).expect("list");
    changed[at(&lists, "stsdata|cameras")].items[0].text.push_str(" (an adopted original)");
    let other = server::geo::report::report(store.as_ref(), &changed, &run).await.expect("report");
    assert!(!other.lists_changed, "a list the run never ranked changed");
    changed[at(&lists, "stsdata|books")].items[0].text.push_str(" (an adopted original)");
    let other = server::geo::report::report(store.as_ref(), &changed, &run).await.expect("report");
    assert!(other.lists_changed);
    let out = crate::support::mirage(&path, &["geo", "report", "--run", &run, "--by", "method,dataset"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("100 orders in 10 trials had a ranker call fail"), "{text}");
    assert!(text.contains("100 of 100 orders, 10 targets"), "{text}");

    // An endpoint that answers 404 (a configuration error) to some prompts ends those
    // trials in error: they are in no mean, and the report names the row and its counts.
    let gone = blind_refusing(|stuffed| stuffed.filter(|name| name.len() % 2 == 0).map(|_| 404)).await;
    let mut geo = spec(&["stsdata"], &["gone"], &["clean", "stuff"]);
    geo.lists = vec!["stsdata/books".into()];
    geo.endpoints.insert("gone".into(), server::llm::EndpointSpec::new(&gone.base_url, "gone-model"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
    execute(store.clone(), &run, 2).await;
    let p = store.progress(&run).await.expect("progress");
    assert!(p.error > 0 && p.error < 10, "some stuffed trials end in error: {}", p.error);
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    let listed = report.incomplete.iter().find(|e| e.method == "stuff").expect("the row with errors is listed");
    assert_eq!((listed.trials, listed.errors, listed.scored), (10, p.error as usize, 10 - p.error as usize));
    assert!(report.incomplete.iter().all(|e| e.method == "stuff"), "clean has no error: {:?}", report.incomplete);
    let out = crate::support::mirage(&path, &["geo", "report", "--run", &run, "--by", "method,dataset,pairs"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("gone / stuff ‡: {} of 10 trials ended in error and 0 are unfinished", p.error)),
        "{text}"
    );
    // The per-dataset row and the pair say they are over the scored targets only.
    let scored = format!("{} of 10", 10 - p.error);
    assert!(text.matches(&scored).count() >= 2, "the row and the dataset row: {text}");
    assert!(text.contains("clean − stuff ‡"), "{text}");
    // One list: no test is possible, and the p cell says why.
    assert!(text.contains("(no test: stsdata has one shared list)"), "{text}");
}

/// A GEO run killed mid-way with SIGKILL resumes with every trial finished once and every
/// order stored once.
#[test]
fn a_killed_geo_run_resumes_with_each_order_ranked_once() {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt.block_on(server::llm::scripted::ScriptedServer::responding(
        std::time::Duration::from_millis(15),
        reverse_ranker,
    ));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::support::temp_path(&dir, "k.db");
    let config = dir.path().join("m.toml");
    std::fs::write(&config, format!("[endpoints.slow]\nbase_url = \"{}\"\nmodel = \"slow\"\n", server.base_url))
        .expect("config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mirage"))
        .arg("--db")
        .arg(&db)
        .args([
            "geo",
            "run",
            "--ranker",
            "slow",
            "--dataset",
            "stsdata",
            "--method",
            "clean,stuff",
            "--concurrency",
            "2",
        ])
        .args(["--lease-secs", "1", "--config"])
        .arg(&config)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mirage geo run");
    let mut reader = BufReader::new(child.stderr.take().expect("stderr"));
    let mut first = String::new();
    while !first.starts_with("run ") {
        first.clear();
        assert!(reader.read_line(&mut first).expect("a line") > 0, "mirage geo run ended before naming its run");
    }
    drop(reader);
    let run = first.split_whitespace().nth(1).expect("id").trim_end_matches(':').to_string();
    let store = rt
        .block_on(server::db::SqlStore::connect(&server::db::database_url(db.to_str().expect("utf-8")).expect("url")))
        .expect("connect");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while rt.block_on(store.progress(&RunId::from(&run))).expect("progress").done < 10 {
        assert!(std::time::Instant::now() < deadline, "no progress");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    assert!(rt.block_on(store.progress(&RunId::from(&run))).expect("progress").queued > 0, "killed before the end");

    let o = crate::support::mirage(&db, &["geo", "run", "--resume", &run, "--lease-secs", "1"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let p = rt.block_on(store.progress(&RunId::from(&run))).expect("progress");
    assert_eq!((p.done, p.error, p.queued, p.running), (60, 0, 0, 0));
    for trial in rt.block_on(store.trials(&RunId::from(&run))).expect("trials") {
        let steps = rt.block_on(store.steps(&trial.trial_id)).expect("steps");
        assert_eq!(steps.len(), 10, "{}: ten orders, each once", trial.trial_id);
        assert!(trial.attempts <= 2, "{}: claimed {} times", trial.trial_id, trial.attempts);
    }
    // Each distinct prompt once, give or take an order interrupted by the kill and two
    // workers asking for the same prompt at the same moment; never the run again.
    let expected = distinct_prompts(&lists().expect("lists"), "stsdata") + 300;
    let asked = server.requests().len();
    assert!((expected..=expected + 10).contains(&asked), "{asked} requests for {expected} prompts");
}

/// Built-in C-SEO and Zero-Shot texts: stored once per (variant, target), reused by a
/// second ranker and a later run (transfer), and scored with their keyword flags; LLM
/// Guidance restates the noun and so moves BM25 up.
#[tokio::test]
async fn builtin_rewrites_are_stored_once_and_reused_across_rankers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "m.db").to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let methods = ["cseo:llm_guidance", "cseo:statistics", "zero_shot"];
    let run =
        server::runs::geo::create_geo_run(store.as_ref(), spec(&["stsdata"], &["bm25"], &methods)).await.expect("run");
    execute(store.clone(), &run, 4).await;
    let texts = store.geo_texts("cseo:llm_guidance").await.expect("texts");
    assert_eq!(texts.len(), 30);
    assert!(
        texts.iter().all(|t| t.source == "builtin" && t.edit_kind == "prepend" && t.adv_text.ends_with(&t.orig_text))
    );
    let snippets = store.geo_texts("zero_shot").await.expect("texts");
    assert!(snippets.iter().all(|t| t.edit_kind == "suffix" && t.adv_text.starts_with(t.orig_text.trim())));

    let before = store.geo_texts("cseo:statistics").await.expect("texts");
    let again = server::runs::geo::create_geo_run(store.as_ref(), spec(&["stsdata"], &["position"], &methods))
        .await
        .expect("run");
    execute(store.clone(), &again, 4).await;
    assert_eq!(
        store.geo_texts("cseo:statistics").await.expect("texts"),
        before,
        "the second ranker reads the same texts"
    );
    assert_eq!(
        store.geo_methods().await.expect("methods").iter().map(|(_, n)| *n).sum::<i64>(),
        90,
        "no text written twice"
    );

    let lists = lists().expect("lists");
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    let guided = report.rows.iter().find(|r| r.method == "cseo:llm_guidance").expect("row");
    assert!(guided.summary.nrg.mean > 0.2, "the noun in the summary moves BM25: {}", guided.summary.nrg.mean);
    for r in &report.rows {
        let s = &r.summary;
        assert!(s.nrg_after_keyword.mean <= s.nrg.mean.max(0.0) + 1e-9 && (0.0..=1.0).contains(&s.kvr.mean));
    }
}

/// C-SEO and Zero-Shot texts from an attacker endpoint: sampled at 0.7 / 0.9 with room for
/// a rewrite or a snippet, stored under a variant that names the model, fences stripped.
#[tokio::test]
async fn an_attacker_endpoint_writes_the_rewrites() {
    use server::geo::plan::text_key;
    use server::llm::scripted::Reply;
    let attacker = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |body| {
        let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
        if user.contains("snippet") {
            Reply::Text("\"A favourite of careful buyers.\"".into())
        } else {
            Reply::Text("```\nA calmer, clearer rewrite of the item.\n```".into())
        }
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "a.db").to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let mut geo = spec(&["stsdata"], &["bm25"], &["cseo:fluency", "zero_shot"]);
    geo.attacker = Some(server::llm::EndpointSpec::new(&attacker.base_url, "writer-m"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo.clone()).await.expect("run");
    execute(store.clone(), &run, 2).await;
    assert_eq!(store.progress(&run).await.expect("progress").done, 60);
    let levels: std::collections::BTreeSet<String> =
        store.trials(&run).await.expect("trials").into_iter().map(|t| t.level.to_string()).collect();
    assert_eq!(levels.into_iter().collect::<Vec<_>>(), ["cseo:fluency@writer-m", "zero_shot@writer-m"]);
    let first = geo.clone();
    let rewrites = store.geo_texts(&text_key(&first, "cseo:fluency@writer-m", "bm25")).await.expect("texts");
    assert_eq!(rewrites.len(), 30);
    assert!(
        rewrites
            .iter()
            .all(|t| t.adv_text == "A calmer, clearer rewrite of the item."
                && t.source.starts_with("endpoint:writer-m/"))
    );
    let snippets = store.geo_texts(&text_key(&first, "zero_shot@writer-m", "bm25")).await.expect("texts");
    assert!(snippets.iter().all(|t| t.adv_text.ends_with(" A favourite of careful buyers.")));
    let requests = attacker.requests();
    assert_eq!(requests.len(), 60, "one call per (method, target)");
    for body in &requests {
        assert_eq!((body["temperature"].as_f64(), body["top_p"].as_f64()), (Some(0.7), Some(0.9)));
        let snippet = body.to_string().contains("snippet");
        assert_eq!(body["max_tokens"].as_u64(), Some(if snippet { 60 } else { 600 }));
    }

    // The same methods under another C-SEO prompt: each rewrite asked anew with the file's
    // words and stored under another key; the Zero-Shot texts are reused.
    let file = dir.path().join("cseo.toml");
    std::fs::write(&file, "system = ''\nuser = 'Calmer, please ({style}, {noun}): {text} {brief}'\n").expect("write");
    let role = &server::geo::methods::CSEO_ROLE;
    let mut second = first.clone();
    second.prompts.cseo = server::geo::template::Template::from_file(&file, role, &first.prompts.cseo).expect("prompt");
    assert_ne!(text_key(&second, "cseo:fluency@writer-m", "bm25"), text_key(&first, "cseo:fluency@writer-m", "bm25"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), second.clone()).await.expect("run");
    execute(store.clone(), &run, 2).await;
    assert_eq!(store.progress(&run).await.expect("progress").done, 60);
    let asked = &attacker.requests()[60..];
    assert_eq!(asked.len(), 30, "only the rewrites are asked again");
    for body in asked {
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 1, "{body}");
        assert!(messages[0]["content"].as_str().is_some_and(|c| c.starts_with("Calmer, please (fluency, ")));
    }
    let stored = store.geo_texts(&text_key(&second, "cseo:fluency@writer-m", "bm25")).await.expect("texts");
    assert!(stored.len() == 30 && stored.iter().all(|t| t.source.ends_with(&second.prompts.cseo.version)));
}

/// `mirage geo import` of a GEO-Bench instance file: texts stored as `import:<name>`, the
/// rows of datasets Mirage does not ship skipped, mismatching originals reported and, with
/// `--adopt-originals`, ranked in place of the compiled-in text; a bad file stores nothing;
/// a run of the imported method covers exactly the imported targets.
#[test]
fn importing_geobench_texts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::support::temp_path(&dir, "i.db");
    let lists = lists().expect("lists");
    let books = lists.iter().find(|l| l.key() == "stsdata|books").expect("books");
    let mut csv = String::from(
        "method,dataset,category,target_idx,target_name,L,orig_text,adv_suffix,adv_text,select_rule,source_path\n",
    );
    for (i, item) in books.items.iter().enumerate() {
        let orig = if i == 0 { "Here is a summary: an older wording." } else { item.text.as_str() };
        let quoted = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
        csv.push_str(&format!(
            "raf,stsdata,books,{},{},10,{},book book,{},best,x\n",
            i + 1,
            quoted(&item.name),
            quoted(orig),
            quoted(&format!("{orig} book book"))
        ));
    }
    csv.push_str("raf,rewrite_to_rank,ads,1,X,10,o,,a,best,x\n");
    let file = dir.path().join("raf__opt.csv");
    std::fs::write(&file, &csv).expect("csv");
    let bad = dir.path().join("bad.csv");
    let second = csv.lines().nth(2).expect("target 2's row").to_string();
    std::fs::write(&bad, format!("{csv}{second}\n")).expect("csv");
    let text = |o: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    };

    let o = crate::support::mirage(&db, &["geo", "import", bad.to_str().expect("utf-8")]);
    assert!(
        !o.status.success() && text(&o).contains("bad.csv:13: stsdata|books target 2 was already given on line 3"),
        "{}",
        text(&o)
    );
    let o = crate::support::mirage(&db, &["geo", "run", "--ranker", "bm25", "--method", "import:bad"]);
    assert!(text(&o).contains("no texts are stored as import:bad"), "nothing was stored: {}", text(&o));
    let o = crate::support::mirage(&db, &["geo", "import", file.to_str().expect("utf-8"), "--adopt-originals"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("10 texts stored as import:raf__opt"), "{out}");
    assert!(
        out.contains("skipped 1 rows of rewrite_to_rank")
            && out.contains("stsdata|books: 1 items whose orig_text differs"),
        "{out}"
    );
    let o = crate::support::mirage(&db, &["geo", "prompt", "--target", "stsdata/books/1"]);
    assert!(text(&o).contains("an older wording"), "adopted originals are what rankers read: {}", text(&o));

    let o = crate::support::mirage(
        &db,
        &["geo", "run", "--ranker", "bm25", "--dataset", "stsdata", "--method", "import:raf__opt,clean"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("40 trials"), "10 imported targets + 30 clean ones: {out}");
    let run = out.split_whitespace().find(|w| w.starts_with("run-")).expect("run id").trim_end_matches(':').to_string();
    let o = crate::support::mirage(&db, &["geo", "report", "--run", &run, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let row =
        v["rows"].as_array().expect("rows").iter().find(|r| r["method"] == "import:raf__opt").expect("row").clone();
    assert_eq!(row["n"], 10);
    assert!(row["nrg"]["mean"].as_f64().expect("nrg") > 0.0, "repeating the noun moves BM25 up");
    // Ten targets of one list beside clean's thirty of three: "10 of 30", ‡, and no interval
    // (one list is one cluster: its spread is unknown, not zero).
    assert_eq!(row["incomplete"], 20, "{row}");
    assert_eq!(
        row["narrower"],
        "10 of 30 targets, 1 of 1 datasets, 1 of 3 lists: fewer than the widest row under bm25"
    );
    assert_eq!(row["nrg"]["no_interval"], true, "{row}");
    let o = crate::support::mirage(&db, &["geo", "report", "--run", &run]);
    let out = text(&o);
    assert!(out.contains("import:raf__opt ‡") && out.contains("10 of 30") && out.contains("[no interval]"), "{out}");
    let o = crate::support::mirage(&db, &["geo", "report", "--run", &run, "--by", "method,dataset,ranker,pairs"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("NRG under bm25") && !out.contains("Spearman"), "one ranker, one dataset: {out}");
    let o = crate::support::mirage(&db, &["geo", "report", "--run", &run, "--by", "nonsense"]);
    assert!(text(&o).contains("is not one of method, dataset, ranker, pairs"), "{}", text(&o));
    let o = crate::support::mirage(&db, &["geo", "run", "--ranker", "bm25", "--method", "import:nothing"]);
    assert!(text(&o).contains("no texts are stored as import:nothing"), "{}", text(&o));
}

/// With `--family`, tie bands are drawn among the family's methods only (the others show
/// none), and a dataset holding a single list is named: its spread is in no interval.
#[test]
fn bands_stay_within_a_declared_family_and_single_list_datasets_are_named() {
    let text = |o: &std::process::Output| {
        format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::support::temp_path(&dir, "f.db");
    let run_on = |lists: &str| {
        let args = ["geo", "run", "--ranker", "bm25", "--method", "clean,stuff,strip", "--list", lists];
        let o = crate::support::mirage(&db, &args);
        assert!(o.status.success(), "{}", text(&o));
        let out = text(&o);
        out.split_whitespace().find(|w| w.starts_with("run-")).expect("run id").trim_end_matches(':').to_string()
    };
    let report = |run: &str, json: bool| {
        let mut args = vec!["geo", "report", "--run", run, "--family", "stuff,strip"];
        if json {
            args.push("--json");
        }
        crate::support::mirage(&db, &args)
    };
    let run = run_on("stsdata/books,stsdata/cameras,cseo/debate,cseo/news");
    let v: serde_json::Value = serde_json::from_slice(&report(&run, true).stdout).expect("json");
    let band =
        |m: &str| v["rows"].as_array().expect("rows").iter().find(|r| r["method"] == m).expect(m)["band"].clone();
    assert_eq!((band("stuff"), band("strip"), band("clean")), (1.into(), 2.into(), 0.into()), "{v}");
    assert_eq!(v["single_list_datasets"], serde_json::json!([]));
    // One dataset with a single list: named, since its spread is in no interval and p is 1.
    let run = run_on("stsdata/books,stsdata/cameras,cseo/debate");
    let v: serde_json::Value = serde_json::from_slice(&report(&run, true).stdout).expect("json");
    assert_eq!(v["single_list_datasets"], serde_json::json!(["cseo"]));
    let out = text(&report(&run, false));
    assert!(out.contains("warning: cseo hold a single list in this run"), "{out}");
}

/// The dashboard's GEO pages over real HTTP: the leaderboard with bands, groups and the
/// method × dataset table, a target's view with every order, downloads, hostile replies
/// escaped, and agent-run pages that leave the GEO run out.
#[tokio::test]
async fn the_geo_pages_show_a_run_and_escape_what_rankers_say() {
    use server::llm::scripted::Reply;
    let app = crate::support::TestApp::start().await;
    let (_, body) = app.text("/geo").await;
    assert!(
        body.contains("No GEO ranking run has finished trials yet. Start one with"),
        "no GEO run yet: the page says how to start one"
    );
    // A chat ranker whose replies carry markup: shown as text, never run.
    let hostile = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |body| {
        let names: Vec<String> = shown_names(body).into_iter().map(|(n, _)| n).collect();
        let list: String = names.iter().enumerate().map(|(i, n)| format!("{}. {n}\n", i + 1)).collect();
        Reply::Text(format!("<script>alert(1)</script>\n{list}"))
    })
    .await;
    let mut geo = spec(&["stsdata"], &["bm25", "loud"], &["clean", "stuff", "cseo:llm_guidance"]);
    geo.endpoints.insert("loud".into(), server::llm::EndpointSpec::new(&hostile.base_url, "loud-m"));
    let run = server::runs::geo::create_geo_run(app.state.store.as_ref(), geo).await.expect("run");
    execute(app.state.store.clone(), &run, 4).await;

    let (status, body) = app.text("/geo").await;
    assert_eq!(status, 200, "{body}");
    for needle in [
        "GEO ranking",
        "Methods per ranker",
        "white-hat rewrite",
        "baseline",
        "NRG by method and dataset",
        "Ranker bm25",
        "Paired comparisons",
        "between rankers",
        "over the NRG of the methods both rankers ran",
    ] {
        assert!(body.contains(needle), "{needle}");
    }
    let (status, body) = app.text(&format!("/geo?run={run}&ranker=bm25&method=stuff")).await;
    assert_eq!(status, 200);
    assert!(body.contains("Targets of stuff") && body.contains("/geo/trials/"), "targets table");
    let trial = body.split("/geo/trials/").nth(1).and_then(|s| s.split('"').next()).expect("a trial link").to_string();
    let (status, body) = app.text(&format!("/geo/trials/{trial}")).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("stsdata|books|") || body.contains("stsdata|"), "instance key");
    assert!(body.contains("The edit (rewrite)") && body.contains("class=\"target\""), "list with the target marked");
    assert!(body.contains("<ins>"), "the word diff marks what stuffing added");
    assert_eq!(body.matches("clean and edited replies").count(), 10, "ten orders");

    let trials = app.state.store.trials(&run).await.expect("trials");
    let loud = trials.iter().find(|t| t.agent == "loud").expect("a loud trial");
    let (_, body) = app.text(&format!("/geo/trials/{}", loud.trial_id)).await;
    assert!(!body.contains("<script>alert(1)</script>"), "replies are escaped");
    assert!(body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));

    let csv = app.client.get(format!("{}/api/export/geo.csv?run={run}", app.base)).send().await.expect("csv");
    assert_eq!(csv.status(), 200);
    let csv = csv.text().await.expect("text");
    assert!(csv.starts_with("ranker,method,group,band,nrg_mean") && csv.lines().count() == 7, "{csv}");
    // The built-in model's PPL-R is a column of its own, filled for every row.
    let mut reader = csv::Reader::from_reader(csv.as_bytes());
    let column = reader.headers().expect("head").iter().position(|h| h == "ppl_r_ngram").expect("ppl_r_ngram");
    for record in reader.records() {
        let ratio: f64 = record.expect("row")[column].parse().expect("a ratio in every row");
        assert!(ratio > 0.0, "{csv}");
    }
    // The long shape: a line per ranker × method × dataset × metric, the datasets' KVR too.
    let long = app.client.get(format!("{}/api/export/geo-long.csv?run={run}", app.base)).send().await.expect("csv");
    assert_eq!(long.status(), 200);
    let long = long.text().await.expect("text");
    assert!(long.starts_with("ranker,method,dataset,metric,mean,lo,hi,n,coverage,incomplete\n"), "{long}");
    let mut reader = csv::Reader::from_reader(long.as_bytes());
    let lines: Vec<csv::StringRecord> = reader.records().map(|r| r.expect("line")).collect();
    let datasets: std::collections::BTreeSet<&str> = lines.iter().map(|l| &l[2]).collect();
    assert!(datasets.contains("all") && datasets.len() > 1, "{datasets:?}");
    assert!(lines.iter().any(|l| &l[2] != "all" && &l[3] == "kvr"), "per-dataset KVR");
    assert!(lines.iter().any(|l| &l[2] != "all" && &l[3] == "ppl_r_ngram"), "per-dataset PPL-R");
    let json: serde_json::Value = app
        .client
        .get(format!("{}/api/export/geo.json?run={run}", app.base))
        .send()
        .await
        .expect("json")
        .json()
        .await
        .expect("json");
    assert_eq!(json["rows"].as_array().map(Vec::len), Some(6));
    assert!(app.text("/geo").await.1.contains("No detection report yet"));

    // A stored detection report adds the judge's columns, the rates and the scatter; the
    // judge's name is shown as text.
    let judge = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |body| {
        let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
        let yes = if user.matches("book").count() > 3 { -0.1 } else { -4.0 };
        Reply::TopLogprobs(vec![("Yes".into(), yes), ("No".into(), -1.0)])
    })
    .await;
    let client =
        server::llm::HttpLlm::new(server::llm::EndpointSpec::new(&judge.base_url, "<b>j</b>")).expect("client");
    let settings = server::geo::score::Settings {
        judge: &client,
        judge_model: "<b>j</b>".into(),
        judge_prompt: server::geo::judge::builtin(),
        mode: server::geo::judge::JudgeMode::Logprobs,
        fpr: None,
        either_fpr: 0.1,
        calibration: server::geo::calibrate::CalibrationMode::Equal,
        scorer: None,
    };
    let lists = lists().expect("lists");
    let d = server::geo::score::score(app.state.store.as_ref(), &lists, &run, &settings).await.expect("score");
    let (status, body) = app.text(&format!("/geo?run={run}")).await;
    assert_eq!(status, 200, "{body}");
    for needle in [
        "judge AUROC",
        "NRG after judge",
        "Share of each dataset",
        "NRG against judge AUROC",
        "<svg",
        "What each filter leaves",
    ] {
        assert!(body.contains(needle), "{needle}");
    }
    assert!(!body.contains("<b>j</b>") && body.contains("&lt;b&gt;j&lt;/b&gt;"), "the judge's name is escaped");
    assert_eq!(
        body.matches("<title>").count() - 1,
        d.rows.iter().filter(|r| r.auroc.is_some()).count(),
        "one hover title per point"
    );
    let (_, body) = app.text(&format!("/geo/trials/{trial}")).await;
    assert!(body.contains("P(manipulative)"), "the target view shows the judge's scores");
    let (_, body) = app.text(&format!("/geo?run={run}&judge=nope")).await;
    assert!(
        body.contains("a detection report &quot;nope&quot;") || body.contains("a detection report \"nope\""),
        "{body}"
    );
    let csv = app.client.get(format!("{}/api/export/geo.csv?run={run}", app.base)).send().await.expect("csv");
    let csv = csv.text().await.expect("text");
    let header: Vec<&str> = csv.lines().next().unwrap_or_default().split(',').collect();
    let at = header.iter().position(|h| *h == "judge_auroc").expect("a judge column");
    let stuffed = csv.lines().find(|l| l.starts_with("bm25,stuff,")).expect("bm25 stuff");
    let cell = stuffed.split(',').nth(at).expect("cell");
    let auroc = d.rows.iter().find(|r| r.ranker == "bm25" && r.method == "stuff").and_then(|r| r.auroc);
    assert_eq!(cell.parse::<f64>().ok(), auroc, "the CSV carries the stored report's AUROC");
    // Agent-run pages do not pick the GEO run.
    let (_, body) = app.text("/leaderboard").await;
    assert!(body.contains("a run with finished trials"), "the leaderboard does not pick the GEO run");
    let (status, _) = app.text(&format!("/runs/{run}")).await;
    assert_eq!(status, 200);
}

/// TAP through the durable queue: each trial searches against its own ranker and stores
/// every scored node; the best suffix is stored per (ranker, target) and a second run reuses
/// it without searching; `tap>bm25` re-ranks the texts found on BM25 with another ranker.
#[tokio::test]
async fn tap_searches_against_the_trials_ranker_and_its_texts_transfer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "t.db").to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let run =
        server::runs::geo::create_geo_run(store.as_ref(), spec(&["stsdata"], &["bm25"], &["tap"])).await.expect("run");
    execute(store.clone(), &run, 4).await;
    assert_eq!(store.progress(&run).await.expect("progress").done, 30);
    let key = server::geo::plan::text_key(&spec(&["stsdata"], &["bm25"], &["tap"]), "tap", "bm25");
    assert!(key.starts_with("tap>bm25#"), "{key}");
    let texts = store.geo_texts(&key).await.expect("texts");
    assert_eq!(texts.len(), 30);
    for trial in store.trials(&run).await.expect("trials") {
        let nodes = store.tap_nodes(&trial.trial_id).await.expect("nodes");
        assert!(!nodes.is_empty() && nodes.len() <= 72, "{}: {} nodes", trial.trial_id, nodes.len());
    }
    let lists = lists().expect("lists");
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    assert!(report.rows[0].summary.nrg.mean > 0.2, "TAP moves BM25: {}", report.rows[0].summary.nrg.mean);
    // The searches' statistics: every target searched, the nodes stored for it counted.
    let tap = report.rows[0].tap.as_ref().expect("search statistics");
    let mut nodes = 0;
    for trial in store.trials(&run).await.expect("trials") {
        nodes += store.tap_nodes(&trial.trial_id).await.expect("nodes").len();
    }
    assert_eq!(tap.searched, 30);
    // Every node is scored on two orders, none of which failed here.
    assert_eq!((tap.calls as f64, tap.failed_calls, tap.failed_searches), (tap.nodes * 30.0 * 2.0, 0, 0));
    assert!((tap.nodes - nodes as f64 / 30.0).abs() < 1e-9, "{tap:?} vs {nodes}");
    assert!((0.0..=1.0).contains(&tap.reached) && tap.still_first.is_none_or(|f| (0.0..=1.0).contains(&f)));

    // A second run finds the texts and searches nothing.
    let again =
        server::runs::geo::create_geo_run(store.as_ref(), spec(&["stsdata"], &["bm25"], &["tap"])).await.expect("run");
    execute(store.clone(), &again, 4).await;
    for trial in store.trials(&again).await.expect("trials") {
        assert!(store.tap_nodes(&trial.trial_id).await.expect("nodes").is_empty(), "reused, not searched again");
    }
    // Texts searched on GEO-Bench's scoring orders are not reused by a run that draws them
    // apart: that run searches anew and stores its texts under its own key.
    let mut apart = spec(&["stsdata"], &["bm25"], &["tap"]);
    apart.lists = vec!["stsdata/books".into()];
    apart.tap.apart = true;
    let apart_key = server::geo::plan::text_key(&apart, "tap", "bm25");
    assert_ne!(apart_key, key);
    let apart = server::runs::geo::create_geo_run(store.as_ref(), apart).await.expect("run");
    execute(store.clone(), &apart, 4).await;
    assert_eq!(store.progress(&apart).await.expect("progress").done, 10);
    for trial in store.trials(&apart).await.expect("trials") {
        assert!(!store.tap_nodes(&trial.trial_id).await.expect("nodes").is_empty(), "searched again");
    }
    assert_eq!(store.geo_texts(&apart_key).await.expect("texts").len(), 10);
    assert_eq!(store.geo_texts(&key).await.expect("texts").len(), 30, "the first search's texts stay");
    // Transfer: the texts found on BM25, ranked by the position ranker, gain nothing.
    let transfer = server::runs::geo::create_geo_run(store.as_ref(), spec(&["stsdata"], &["position"], &["tap>bm25"]))
        .await
        .expect("run");
    execute(store.clone(), &transfer, 4).await;
    let report = server::geo::report::report(store.as_ref(), &lists, &transfer).await.expect("report");
    assert_eq!((report.rows[0].method.as_str(), report.rows[0].summary.n), ("tap>bm25", 30));
    assert_eq!(report.rows[0].summary.nrg.mean, 0.0);
    // Its search line is BM25's searches, evaluated under the position ranker.
    let line = report.rows[0].tap.as_ref().expect("searches").describe("position", "tap>bm25");
    assert!(
        line.starts_with("position / tap>bm25: the texts of 30 searches on bm25,")
            && line.contains("reached rank 1 on bm25's search orders")
            && !line.contains("still first"),
        "{line}"
    );
    let missing =
        server::runs::geo::create_geo_run(store.as_ref(), spec(&["cseo"], &["position"], &["tap>bm25"])).await;
    let Err(e) = missing else { panic!("planned without texts") };
    assert!(format!("{e:#}").contains(&format!("no texts are stored as {key}")), "{e:#}");
}

/// A TAP search whose every scoring call failed (the ranker was down) measured nothing: the
/// next run searches again and stores its text beside the dead one, so the first run's
/// report still reads the text it ranked, with its failed calls.
#[tokio::test]
async fn a_dead_tap_search_is_searched_again_beside_the_text_a_run_ranked() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let down = std::sync::Arc::new(AtomicBool::new(true));
    let flag = down.clone();
    let ranker = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, move |body| {
        if flag.load(Ordering::SeqCst) { server::llm::scripted::Reply::Status(503, None) } else { reverse_ranker(body) }
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = crate::support::temp_path(&dir, "d.db");
    let url = server::db::database_url(path.to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let mut geo = spec(&["stsdata"], &["chat"], &["tap"]);
    geo.lists = vec!["stsdata/books".into()];
    let mut endpoint = server::llm::EndpointSpec::new(&ranker.base_url, "chat-model");
    endpoint.max_retries = 0;
    geo.endpoints.insert("chat".into(), endpoint);
    let first = server::runs::geo::create_geo_run(store.as_ref(), geo.clone()).await.expect("run");
    execute(store.clone(), &first, 4).await;
    let lists = lists().expect("lists");
    let before = server::geo::report::report(store.as_ref(), &lists, &first).await.expect("report");
    let tap = before.rows[0].tap.as_ref().expect("search statistics");
    assert_eq!((tap.failed_searches, tap.dead_searches, tap.calls), (10, 10, tap.failed_calls));
    let out = crate::support::mirage_beside(&path, &["geo", "report", "--run", &first]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("tap †") && text.contains("10 of them measured nothing"), "{text}");

    down.store(false, Ordering::SeqCst);
    let second = server::runs::geo::create_geo_run(store.as_ref(), geo.clone()).await.expect("run");
    execute(store.clone(), &second, 4).await;
    for trial in store.trials(&second).await.expect("trials") {
        assert!(!store.tap_nodes(&trial.trial_id).await.expect("nodes").is_empty(), "searched again");
    }
    let after = server::geo::report::report(store.as_ref(), &lists, &second).await.expect("report");
    assert_eq!(after.rows[0].tap.as_ref().expect("stats").failed_calls, 0);
    let key = server::geo::plan::text_key(&geo, "tap", "chat");
    assert_eq!(store.geo_texts(&key).await.expect("texts").len(), 10, "the dead texts stay where they were");
    let again = server::geo::report::report(store.as_ref(), &lists, &first).await.expect("report");
    assert_eq!(
        serde_json::to_value(&again).expect("json"),
        serde_json::to_value(&before).expect("json"),
        "the first run's report is unchanged"
    );
}

/// The judge reads a text as the rankers and PPL-R do, on one line: a copy that differs
/// only in whitespace (doubled spaces, line breaks, tabs) is the same text to it, asked
/// once and scored alike, so an edit of whitespace alone cannot be told apart.
#[tokio::test]
async fn the_judge_cannot_see_an_edit_of_whitespace_alone() {
    use server::geo::judge::{JudgeMode, builtin, judge_as};
    use server::llm::scripted::Reply;
    let judge = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |body| {
        let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
        // Shown the text other than on one line, single-spaced, the judge would answer otherwise.
        let one_line = user.contains("A sturdy product with a two-year warranty.");
        Reply::TopLogprobs(vec![("Yes".into(), if one_line { -3.0 } else { -0.1 }), ("No".into(), -0.2)])
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "w.db").to_str().expect("utf-8")).expect("url");
    let store = server::db::SqlStore::connect(&url).await.expect("connect");
    let client = server::llm::HttpLlm::new(server::llm::EndpointSpec::new(&judge.base_url, "judge-m")).expect("client");
    let prompt = builtin();
    let score = |text: &'static str| judge_as(JudgeMode::Logprobs, &prompt, &client, "judge-m", &store, text);
    let plain = score("A sturdy product with a two-year warranty.").await.expect("plain");
    let spaced = score("A  sturdy product\n\nwith a\ttwo-year   warranty. ").await.expect("spaced");
    assert_eq!(plain.p, spaced.p, "the same text to the judge");
    assert_eq!(judge.requests().len(), 1, "and asked once: the second is the first's cached answer");
}

/// The logprob judge over a stored run: every distinct text judged once (cached), the
/// threshold calibrated on the originals at the keyword filter's own rate, AUROC per method
/// (stuffed texts perfectly separated, the clean method indistinguishable), and the gain a
/// caught edit loses; a reply listing neither Yes nor No is an error, never a 0. The report
/// is stored with the run; pooled and leave-one-dataset-out calibration, the verbalised
/// mode and PPL-R from a scoring endpoint work on the same run.
#[tokio::test]
async fn the_logprob_judge_scores_a_run() {
    use server::geo::calibrate::CalibrationMode;
    use server::geo::judge::JudgeMode;
    use server::llm::scripted::Reply;
    let judge = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |body| {
        let user = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("");
        if body["top_logprobs"].is_null() {
            // The verbalised judge: a stated probability.
            return Reply::Text(if user.contains("of the year") { "0.9".into() } else { "Probability: 5%".into() });
        }
        assert_eq!((body["max_tokens"].as_u64(), body["top_logprobs"].as_u64()), (Some(1), Some(20)));
        let top: Vec<(&str, f64)> = if user.contains("of the year") {
            vec![("Yes", -0.05), (" Yes", -4.0), ("No", -3.0)]
        } else if user.contains("Crash") {
            vec![("Hmm", -0.1)]
        } else {
            vec![("No", -0.01 - user.len() as f64 * 1e-6), ("The", -6.0)]
        };
        Reply::TopLogprobs(top.into_iter().map(|(t, l)| (t.to_string(), l)).collect())
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "j.db").to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let run =
        server::runs::geo::create_geo_run(store.as_ref(), spec(&["stsdata", "cseo"], &["bm25"], &["clean", "stuff"]))
            .await
            .expect("run");
    execute(store.clone(), &run, 4).await;
    let lists = lists().expect("lists");
    // By default ρ leaves the baselines out: nothing is left to rank here.
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    assert!(report.rho_methods.is_empty() && report.spearman_datasets.iter().all(|r| r.rho.is_none()));
    // Spearman between the two datasets under bm25, over the two methods declared.
    let family = ["clean".to_string(), "stuff".to_string()];
    let report_as = |weighting| server::geo::report::report_with(store.as_ref(), &lists, &run, &family, weighting);
    let report = report_as(server::geo::report::Weighting::Dataset).await.expect("report");
    // Weighted by target: the row's mean is the plain mean over targets, with an interval,
    // and per-dataset rows stay per dataset.
    let by_target = report_as(server::geo::report::Weighting::Target).await.expect("report");
    for (t, d) in by_target.rows.iter().zip(&report.rows) {
        assert!((t.summary.nrg.mean - d.summary.nrg_target_weighted).abs() < 1e-12, "{}", t.method);
        assert!(t.summary.nrg.lo <= t.summary.nrg.mean && t.summary.nrg.mean <= t.summary.nrg.hi);
    }
    assert_eq!(by_target.datasets.len(), report.datasets.len());
    let rho = &report.spearman_datasets;
    assert_eq!(rho.len(), 1);
    assert_eq!((rho[0].ranker.as_deref(), rho[0].a.as_str(), rho[0].b.as_str()), (Some("bm25"), "stsdata", "cseo"));
    assert_eq!((rho[0].methods, rho[0].rho), (2, None), "two methods give ±1 whatever they are: no ρ");
    let tap = ["tap".to_string()];
    let err = server::geo::report::report_with(store.as_ref(), &lists, &run, &tap, Default::default())
        .await
        .expect_err("a method the run lacks");
    assert!(err.to_string().contains("\"tap\" is not a method of run"), "{err}");
    let client = server::llm::HttpLlm::new(server::llm::EndpointSpec::new(&judge.base_url, "judge-m")).expect("client");
    let settings = |fpr: Option<f64>, mode: JudgeMode, calibration: CalibrationMode| server::geo::score::Settings {
        judge: &client,
        judge_model: "judge-m".into(),
        judge_prompt: server::geo::judge::builtin(),
        mode,
        fpr,
        either_fpr: 0.1,
        calibration,
        scorer: None,
    };
    let d = server::geo::score::score(
        store.as_ref(),
        &lists,
        &run,
        &settings(None, JudgeMode::Logprobs, CalibrationMode::Equal),
    )
    .await
    .expect("score");
    // 90 originals (= the clean texts) and 90 stuffed texts, each asked once.
    assert_eq!((d.texts, judge.requests().len()), (180, 180));
    assert!((d.fpr - 0.1).abs() < 1e-12, "the keyword filter's rate on these originals: {}", d.fpr);
    assert!(d.judge_calibration.fpr <= d.fpr + 1e-12 && d.either_calibration.fpr <= 0.1 + 1e-12);
    // The perplexity filter (the 4-gram model here) is held to the judge's rate too, and a
    // caught edit keeps nothing.
    assert!(d.ppl_calibration.fpr <= d.fpr + 1e-12, "{:?}", d.ppl_calibration);
    for r in &d.rows {
        assert!((0.0..=1.0).contains(&r.ppl_flagged) && r.nrg_after_ppl <= r.nrg.max(0.0) + 1e-12, "{r:?}");
    }
    assert!((d.censored - 0.5).abs() < 1e-12, "every original lacks a listed Yes: {}", d.censored);
    let stuffed = d.rows.iter().find(|r| r.method == "stuff").expect("stuff");
    assert_eq!(
        (stuffed.auroc, stuffed.judge_flagged, stuffed.nrg_after_judge, stuffed.nrg_after_either),
        (Some(1.0), 1.0, 0.0, 0.0)
    );
    assert!(stuffed.nrg > 0.45);
    // Every filter's effect with an interval; the means are the columns above.
    let names: Vec<&str> = stuffed.filters.iter().map(|f| f.filter.as_str()).collect();
    assert_eq!(names, ["keyword", "judge", "either", "perplexity"]);
    for (f, (flagged, left)) in stuffed.filters.iter().zip([
        (stuffed.keyword_flagged, stuffed.nrg_after_keyword),
        (stuffed.judge_flagged, stuffed.nrg_after_judge),
        (stuffed.either_flagged, stuffed.nrg_after_either),
        (stuffed.ppl_flagged, stuffed.nrg_after_ppl),
    ]) {
        assert!((f.flagged.mean - flagged).abs() < 1e-12 && (f.nrg_after.mean - left).abs() < 1e-12, "{f:?}");
        for e in [f.flagged, f.nrg_after, f.promoted_and_passed] {
            assert!(e.lo <= e.mean && e.mean <= e.hi && e.n == 90, "{f:?}");
        }
    }
    let either = &stuffed.filters[2];
    assert!((either.promoted_and_passed.mean - stuffed.promoted_and_passed_either).abs() < 1e-12);
    let perplexity = &stuffed.filters[3];
    assert!(perplexity.nrg_after.hi > perplexity.nrg_after.lo, "a real interval: {:?}", stuffed.filters);
    let clean = d.rows.iter().find(|r| r.method == "clean").expect("clean");
    assert_eq!(clean.auroc, Some(0.5), "identical texts cannot be told apart");
    let again = server::geo::score::score(
        store.as_ref(),
        &lists,
        &run,
        &settings(Some(0.0), JudgeMode::Logprobs, CalibrationMode::Equal),
    )
    .await
    .expect("score");
    assert_eq!(judge.requests().len(), 180, "the second scoring is answered from the cache");
    assert_eq!(again.judge_calibration.fpr, 0.0);
    assert!(!again.lists_changed && again.stale_texts == 0);
    // Both settings are stored with the run, newest first, under their labels.
    let stored = store.geo_detections(&run).await.expect("stored");
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].0, again.label);
    // The label names the judge's server: another server behind the same model name is
    // another judge (and its answers are cached apart).
    assert!(stored[1].0.starts_with("judge-m/geo-judge-1 at http://127.0.0.1:"), "{}", stored[1].0);
    assert!(stored[1].0.contains(" logprobs · equal @ keyword"), "{}", stored[1].0);
    let back: server::geo::score::Detection = serde_json::from_str(&stored[1].1).expect("stored report");
    assert_eq!((back.rows.len(), back.scores.len()), (2, 180));

    // Pooled and leave-one-dataset-out thresholds; the realised rate per dataset is reported.
    for mode in [CalibrationMode::Pooled, CalibrationMode::Lodo] {
        let d = server::geo::score::score(store.as_ref(), &lists, &run, &settings(None, JudgeMode::Logprobs, mode))
            .await
            .expect("score");
        assert_eq!(d.judge_calibration.per_dataset.len(), 2, "{mode}: stsdata and cseo");
        let stuffed = d.rows.iter().find(|r| r.method == "stuff").expect("stuff");
        assert_eq!(stuffed.auroc, Some(1.0), "{mode}: AUROC needs no threshold");
    }
    assert_eq!(judge.requests().len(), 180, "calibration asks nothing new");

    // The verbalised judge (non-paper): a stated probability, cached under its own key.
    let v = server::geo::score::score(
        store.as_ref(),
        &lists,
        &run,
        &settings(None, JudgeMode::Verbalized, CalibrationMode::Equal),
    )
    .await
    .expect("verbalised");
    assert_eq!(judge.requests().len(), 360);
    assert_eq!((v.censored, v.rows.iter().find(|r| r.method == "stuff").and_then(|r| r.auroc)), (0.0, Some(1.0)));

    // PPL-R from a scoring endpoint: a clean text's ratio is exactly 1; the stuffed edits' is finite.
    let scorer = server::llm::scripted::ScriptedServer::start(Vec::new()).await;
    let with_scorer = server::geo::score::Settings {
        scorer: Some(server::detect::EndpointPerplexity {
            model: "ppl-m".into(),
            client: server::llm::HttpLlm::new(server::llm::EndpointSpec::new(&scorer.base_url, "ppl-m"))
                .expect("scorer"),
            cache: store.clone(),
        }),
        ..settings(None, JudgeMode::Logprobs, CalibrationMode::Equal)
    };
    let p = server::geo::score::score(store.as_ref(), &lists, &run, &with_scorer).await.expect("scored");
    assert_eq!(p.ppl_source.as_deref(), Some("endpoint:ppl-m"));
    assert_eq!(scorer.requests().len(), 180, "each distinct text measured once");
    let row = |m: &str| p.rows.iter().find(|r| r.method == m).and_then(|r| r.ppl_r);
    assert_eq!(row("clean"), Some(1.0));
    assert!(row("stuff").is_some_and(f64::is_finite), "{:?}", row("stuff"));

    // A reply that lists neither Yes nor No is an error naming what was judged.
    let crash = server::llm::HttpLlm::new(server::llm::EndpointSpec::new(&judge.base_url, "judge-m")).expect("client");
    let builtin = server::geo::judge::builtin();
    let err = server::geo::judge::judge(&builtin, &crash, "other-model", store.as_ref(), "Crash test text")
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains("neither Yes nor No"), "{err:#}");

    // Another judge prompt from a file: every text asked again with the file's words, the
    // report labelled with the file's version.
    let file = dir.path().join("judge.toml");
    std::fs::write(&file, "system = ''\nuser = 'Audit this listing: {text} Yes or No?'\n").expect("write");
    let role = &server::geo::judge::JUDGE_ROLE;
    let prompt = server::geo::template::Template::from_file(&file, role, &builtin).expect("prompt");
    let before = judge.requests().len();
    let own = server::geo::score::Settings {
        judge_prompt: prompt.clone(),
        ..settings(None, JudgeMode::Logprobs, CalibrationMode::Equal)
    };
    let f = server::geo::score::score(store.as_ref(), &lists, &run, &own).await.expect("scored");
    let asked = &judge.requests()[before..];
    assert_eq!(asked.len(), 180, "a new prompt is not answered from the old prompt's cache");
    for body in asked {
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 1, "an empty system text sends no system message");
        assert!(messages[0]["content"].as_str().is_some_and(|c| c.starts_with("Audit this listing: ")), "{body}");
    }
    assert!(f.judge.ends_with(&format!("/{}", prompt.version)) && f.label.contains(&prompt.version), "{}", f.label);
    assert_eq!(f.rows.iter().find(|r| r.method == "stuff").and_then(|r| r.auroc), Some(1.0));
    // Scored against lists whose original changed since the run (adopted), it says so: the
    // calibration reads originals the run never ranked, and the texts made from the old one.
    let mut changed = lists.clone();
    let first = changed.iter_mut().find(|l| l.dataset == "stsdata").expect("a list of the run");
    first.items[0].text.push_str(" An adopted sentence.");
    let on_changed = server::geo::score::score(
        store.as_ref(),
        &changed,
        &run,
        &settings(Some(0.0), JudgeMode::Logprobs, CalibrationMode::Equal),
    )
    .await
    .expect("score");
    assert!(on_changed.lists_changed && on_changed.stale_texts == 2, "clean and stuff of that target");
}

/// A cross-encoder ranker (`/rerank`): one pass per target, the edited target scored against
/// the others' clean scores; the clean list's scores asked once per list.
#[tokio::test]
async fn a_cross_encoder_ranks_in_one_pass() {
    let ce = server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |_| {
        server::llm::scripted::Reply::Status(500, None)
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "x.db").to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let mut geo = spec(&["stsdata"], &["ce"], &["clean", "stuff"]);
    geo.rerankers.insert("ce".into(), server::llm::EndpointSpec::new(&ce.base_url, "ce-m"));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
    execute(store.clone(), &run, 1).await;
    let p = store.progress(&run).await.expect("progress");
    assert_eq!((p.done, p.error), (60, 0));
    for trial in store.trials(&run).await.expect("trials") {
        assert_eq!(store.steps(&trial.trial_id).await.expect("steps").len(), 1, "one pass, no orders");
    }
    // 3 clean lists + 30 stuffed lists (the clean method's list is the clean list).
    assert_eq!(ce.requests().len(), 33);
    assert!(ce.requests().iter().all(|b| b["query"].as_str().is_some_and(|q| q.starts_with("I am looking for a "))));
    let lists = lists().expect("lists");
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    let clean = report.rows.iter().find(|r| r.method == "clean").expect("clean");
    let stuffed = report.rows.iter().find(|r| r.method == "stuff").expect("stuff");
    assert_eq!(clean.summary.nrg.mean, 0.0);
    assert!(
        stuffed.summary.nrg.mean > 0.3,
        "repeating the noun raises the cross-encoder's score: {}",
        stuffed.summary.nrg.mean
    );
}

/// A ranker none of whose calls answered (every one a 500 after its retries) leaves its
/// figures in the report, every failure counted, and `mirage geo run` fails naming it.
#[test]
fn a_ranker_that_never_answers_fails_the_command() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt.block_on(server::llm::scripted::ScriptedServer::start(Vec::new()));
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::support::temp_path(&dir, "down.db");
    let config = dir.path().join("m.toml");
    let toml = format!("[endpoints.down]\nbase_url = \"{}\"\nmodel = \"down\"\nmax_retries = 0\n", server.base_url);
    std::fs::write(&config, toml).expect("config");
    let config = config.to_str().expect("utf-8");
    let args = ["geo", "run", "--ranker", "down", "--list", "stsdata/books", "--method", "stuff", "--config", config];
    let o = crate::support::mirage(&db, &args);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("every order ranked by down (100 orders) had a call fail after its retries"), "{out}");
    let run = out.split_whitespace().find(|w| w.starts_with("run-")).expect("run id").trim_end_matches(':');
    let o = crate::support::mirage(&db, &["geo", "report", "--run", run, "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!((v["failed_orders"].as_u64(), v["rows"][0]["n"].as_u64()), (Some(100), Some(10)), "{v}");
    // A wrong key (401 on the stuffed lists only) is a configuration error: those trials
    // end in error, and the command says so (it ran, but its figures miss those targets).
    let wrong = rt.block_on(server::llm::scripted::ScriptedServer::responding(std::time::Duration::ZERO, |body| {
        use server::llm::scripted::Reply;
        if body.to_string().contains("of the year") { Reply::Status(401, None) } else { Reply::Text("1. None".into()) }
    }));
    let toml = format!("[endpoints.wrong]\nbase_url = \"{}\"\nmodel = \"w\"\nmax_retries = 0\n", wrong.base_url);
    std::fs::write(config, toml).expect("config");
    let args =
        ["geo", "run", "--ranker", "wrong", "--list", "stsdata/books", "--method", "clean,stuff", "--config", config];
    let o = crate::support::mirage(&db, &args);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("10 of run") && out.contains("trials ended in error and are in no mean"), "{out}");
    assert!(out.contains("resume with `mirage geo run --resume"), "{out}");
    // A filter refusing every stuffed prompt (403: a refused prompt, counted as naming
    // nothing): the ranker answers the clean lists, but the stuff row measures only
    // failures, and the command says so.
    let filter = rt.block_on(blind_refusing(|stuffed| stuffed.map(|_| 403)));
    let toml = format!("[endpoints.filtered]\nbase_url = \"{}\"\nmodel = \"f\"\nmax_retries = 0\n", filter.base_url);
    std::fs::write(config, toml).expect("config");
    let args = [
        "geo",
        "run",
        "--ranker",
        "filtered",
        "--list",
        "stsdata/books",
        "--method",
        "clean,stuff",
        "--config",
        config,
    ];
    let o = crate::support::mirage(&db, &args);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(!o.status.success(), "{out}");
    assert!(out.contains("every order of stuff under filtered (100 orders) had a call fail"), "{out}");
    assert!(!out.contains("every order ranked by"), "the ranker itself answered: {out}");
}

/// The heat maps keep every variant: one whose every target failed has its row, saying no
/// target was scored, and a cell over part of its targets says "n of N".
#[tokio::test]
async fn the_heat_maps_say_what_failed_instead_of_leaving_it_out() {
    let app = crate::support::TestApp::start().await;
    let dead = blind_refusing(|stuffed| stuffed.map(|_| 404)).await;
    let mut geo = spec(&["stsdata"], &["dead"], &["clean", "stuff"]);
    geo.lists = vec!["stsdata/books".into()];
    geo.endpoints.insert("dead".into(), server::llm::EndpointSpec::new(&dead.base_url, "dead-m"));
    let run = server::runs::geo::create_geo_run(app.state.store.as_ref(), geo).await.expect("run");
    execute(app.state.store.clone(), &run, 2).await;
    assert_eq!(app.state.store.progress(&run).await.expect("progress").error, 10, "every stuffed trial failed");
    let (status, body) = app.text(&format!("/geo?run={run}")).await;
    assert_eq!(status, 200, "{body}");
    let transfer = body.split("geo-rankers").nth(1).and_then(|t| t.split("</table>").next()).expect("transfer table");
    let stuff = transfer.split("<tr").find(|r| r.contains(">stuff<")).expect("the stuff row is there");
    assert!(stuff.contains("‡ no target scored"), "{stuff}");

    let gone = blind_refusing(|stuffed| stuffed.filter(|name| name.len() % 2 == 0).map(|_| 404)).await;
    let mut geo = spec(&["stsdata"], &["gone"], &["clean", "stuff"]);
    geo.lists = vec!["stsdata/books".into()];
    geo.endpoints.insert("gone".into(), server::llm::EndpointSpec::new(&gone.base_url, "gone-m"));
    let run = server::runs::geo::create_geo_run(app.state.store.as_ref(), geo).await.expect("run");
    execute(app.state.store.clone(), &run, 2).await;
    let failed = app.state.store.progress(&run).await.expect("progress").error;
    assert!(failed > 0 && failed < 10, "{failed}");
    let (_, body) = app.text(&format!("/geo?run={run}")).await;
    let heat = body.split("geo-heat").nth(1).and_then(|t| t.split("</table>").next()).expect("heat map");
    let stuff = heat.split("<tr").find(|r| r.contains(">stuff<")).expect("stuff row");
    assert!(stuff.contains(&format!("n={} of 10", 10 - failed)), "{stuff}");
}

/// A flaky endpoint (every third call fails, no retries) still leaves every method on one
/// clean reply per (target, order): a failed clean call is one failure, read by every method
/// that shows that list. A reply stopped by a content filter (null content) or cut at its
/// token limit arrives as HTTP 200, and is a failed call all the same.
#[tokio::test]
async fn a_flaky_ranker_pairs_every_method_on_one_clean_reply_and_filtered_replies_are_failed_calls() {
    use server::llm::scripted::{Reply, ScriptedServer};
    use std::sync::atomic::{AtomicUsize, Ordering};
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let listed = |body: &serde_json::Value| -> String {
        shown_names(body).iter().enumerate().map(|(i, (n, _))| format!("{}. {n}\n", i + 1)).collect()
    };
    let flaky = ScriptedServer::responding(std::time::Duration::ZERO, move |body| {
        if CALLS.fetch_add(1, Ordering::SeqCst).is_multiple_of(3) {
            Reply::Status(500, None)
        } else {
            Reply::Text(listed(body))
        }
    })
    .await;
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server::db::database_url(crate::support::temp_path(&dir, "k.db").to_str().expect("utf-8")).expect("url");
    let store: std::sync::Arc<dyn server::db::Store> =
        std::sync::Arc::new(server::db::SqlStore::connect(&url).await.expect("connect"));
    let endpoint =
        |base: &str| server::llm::EndpointSpec { max_retries: 0, ..server::llm::EndpointSpec::new(base, "m") };
    let mut geo = spec(&["stsdata"], &["flaky"], &["clean", "stuff", "strip"]);
    geo.lists = vec!["stsdata/books".into(), "stsdata/cameras".into()];
    geo.endpoints.insert("flaky".into(), endpoint(&flaky.base_url));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
    execute(store.clone(), &run, 3).await;
    let lists = lists().expect("lists");
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    let missing: Vec<f64> = report.rows.iter().map(|r| r.summary.missing_clean).collect();
    assert_eq!(missing.len(), 3);
    assert!(missing[0] > 0.1, "about a third of the clean calls failed: {missing:?}");
    assert!(missing.iter().all(|m| *m == missing[0]), "one clean reply per (target, order): {missing:?}");

    for reason in ["content_filter", "length"] {
        let filter = ScriptedServer::responding(std::time::Duration::ZERO, move |body| {
            if shown_names(body).iter().any(|(_, text)| text.contains("of the year")) {
                let content = (reason == "length").then(|| "1. Ca".to_string());
                Reply::Finished(content, reason)
            } else {
                let reply: String =
                    shown_names(body).iter().enumerate().map(|(i, (n, _))| format!("{}. {n}\n", i + 1)).collect();
                Reply::Text(reply)
            }
        })
        .await;
        let mut geo = spec(&["stsdata"], &["filtered"], &["clean", "stuff"]);
        geo.lists = vec!["stsdata/books".into()];
        geo.endpoints.insert("filtered".into(), endpoint(&filter.base_url));
        let run = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
        execute(store.clone(), &run, 2).await;
        let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
        let stuff = &report.rows.iter().find(|r| r.method == "stuff").expect("stuff").summary;
        assert_eq!((stuff.orders, stuff.failed_orders), (100, 100), "{reason}: every stuffed reply is a failed call");
        assert_eq!(report.failed_orders, 100, "{reason}");
    }

    // A prose refusal that names the stuffed product reads, by first mention, as ranking it
    // first: the replies so read are counted and the row is marked.
    let prose = ScriptedServer::responding(std::time::Duration::ZERO, move |body| {
        let shown = shown_names(body);
        match shown.iter().find(|(_, text)| text.contains("of the year")) {
            Some((name, _)) => Reply::Text(format!("I won't rank promotional copy such as {name}'s.")),
            None => Reply::Text(shown.iter().enumerate().map(|(i, (n, _))| format!("{}. {n}\n", i + 1)).collect()),
        }
    })
    .await;
    let mut geo = spec(&["stsdata"], &["prose"], &["clean", "stuff"]);
    geo.lists = vec!["stsdata/books".into()];
    geo.endpoints.insert("prose".into(), endpoint(&prose.base_url));
    let run = server::runs::geo::create_geo_run(store.as_ref(), geo).await.expect("run");
    execute(store.clone(), &run, 2).await;
    let report = server::geo::report::report(store.as_ref(), &lists, &run).await.expect("report");
    let row = |m: &str| &report.rows.iter().find(|r| r.method == m).expect("row").summary;
    let stuff = row("stuff");
    assert_eq!((stuff.replies, stuff.fallback_replies, stuff.edited_replies), (200, 100, 100), "every edited reply");
    assert!(stuff.mostly_fallback() && stuff.nrg.mean > 0.4, "marked, and the first mention reads as a gain");
    assert_eq!((row("clean").replies, row("clean").fallback_replies), (200, 0));
    assert!(!row("clean").mostly_fallback());
}
