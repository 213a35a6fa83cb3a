//! The GEO ranking track's offline pipeline on all 529 targets (GEO.md §7.3): the position
//! ranker gives every method a gain of exactly 0, keyword stuffing moves BM25's targets up on
//! every dataset and never down, stripping the query noun never moves a target up, and the
//! identity edit changes nothing.

use server::geo::data::{DATASETS, lists};
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
async fn position_ranker_and_identity_edit_gain_nothing() {
    for writer in writers::WRITERS {
        for (dataset, g) in gains(&Position, writer).await {
            assert!(g.iter().all(|&x| x == 0.0), "position + {writer} on {dataset}: {g:?}");
        }
    }
    for (dataset, g) in gains(&Bm25, "identity").await {
        assert!(g.iter().all(|&x| x == 0.0), "bm25 + identity on {dataset}");
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

    let args = ["geo", "eval", "--dataset", "stsdata,cseo", "--method", "stuff", "--resamples", "200", "--json"];
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
}
