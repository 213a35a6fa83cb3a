//! Adopted GEO-Bench originals and the texts stored before them: a text made from an
//! original the lists no longer hold is written again (Mirage's own writers) or refused
//! (imported texts), never ranked against the new original; a report says how many of its
//! texts are stale; a name's imported texts never change.

use server::geo::data::lists;

fn text(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn run_id(out: &str) -> String {
    out.split_whitespace().find(|w| w.starts_with("run-")).expect("run id").trim_end_matches(':').to_string()
}

fn report(db: &std::path::Path, run: &str) -> serde_json::Value {
    let o = crate::support::mirage(db, &["geo", "report", "--run", run, "--json"]);
    assert!(o.status.success(), "{}", text(&o));
    serde_json::from_slice(&o.stdout).expect("json")
}

/// An instance file for stsdata/books whose first item's original is `first` (the others
/// as stored), each text its original followed by " book book".
fn instance_file(first: Option<&str>) -> String {
    let lists = lists().expect("lists");
    let books = lists.iter().find(|l| l.key() == "stsdata|books").expect("books");
    let quoted = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    let mut csv = String::from(
        "method,dataset,category,target_idx,target_name,L,orig_text,adv_suffix,adv_text,select_rule,source_path\n",
    );
    for (i, item) in books.items.iter().enumerate() {
        let orig = first.filter(|_| i == 0).unwrap_or(&item.text);
        csv.push_str(&format!(
            "raf,stsdata,books,{},{},10,{},book book,{},best,x\n",
            i + 1,
            quoted(&item.name),
            quoted(orig),
            quoted(&format!("{orig} book book"))
        ));
    }
    csv
}

#[test]
fn texts_made_from_replaced_originals_are_written_again_or_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = crate::support::temp_path(&dir, "o.db");
    let run_args = ["geo", "run", "--ranker", "bm25", "--list", "stsdata/books", "--method", "clean,stuff"];

    // A run on the compiled-in originals stores its clean and stuffed texts; another is
    // only planned.
    let o = crate::support::mirage(&db, &run_args);
    assert!(o.status.success(), "{}", text(&o));
    let before = run_id(&text(&o));
    let o = crate::support::mirage(&db, &[&run_args[..], &["--detach"]].concat());
    assert!(o.status.success(), "{}", text(&o));
    let planned = String::from_utf8_lossy(&o.stdout).trim().to_string();
    // An import whose originals match the stored ones, then one that adopts another original.
    let matching = dir.path().join("pre.csv");
    std::fs::write(&matching, instance_file(None)).expect("csv");
    let o = crate::support::mirage(&db, &["geo", "import", matching.to_str().expect("utf-8")]);
    assert!(o.status.success(), "{}", text(&o));
    let adopting = dir.path().join("new.csv");
    std::fs::write(&adopting, instance_file(Some("An older wording of the first book's blurb."))).expect("csv");
    let o = crate::support::mirage(&db, &["geo", "import", adopting.to_str().expect("utf-8"), "--adopt-originals"]);
    assert!(o.status.success() && text(&o).contains("adopted 1 GEO-Bench originals"), "{}", text(&o));

    // The planned run would rank the new original beside trials that ranked the old one (a
    // killed run resumed, too): it is not run.
    let o = crate::support::mirage(&db, &["geo", "run", "--resume", &planned]);
    assert!(!o.status.success() && text(&o).contains("changed since it was planned"), "{}", text(&o));

    // The first run's report now reads texts made from the replaced original: counted, and
    // the lists are said to have changed.
    let old = report(&db, &before);
    assert_eq!(old["lists_changed"], true, "{old}");
    assert_eq!(old["stale_texts"], 2, "clean and stuff of the first book: {old}");

    // A new run writes those texts again from the adopted original: the clean edit is a
    // no-op on every target, and nothing it reads is stale.
    let o = crate::support::mirage(&db, &run_args);
    assert!(o.status.success(), "{}", text(&o));
    let after = report(&db, &run_id(&text(&o)));
    assert_eq!(after["stale_texts"], 0, "{after}");
    assert_eq!(after["lists_changed"], false, "{after}");
    let clean = after["rows"].as_array().expect("rows").iter().find(|r| r["method"] == "clean").expect("clean");
    let nrg = &clean["nrg"];
    assert!(nrg["mean"] == 0.0 && nrg["lo"] == 0.0 && nrg["hi"] == 0.0, "the clean edit changes nothing: {clean}");
    // The new texts stand beside the old ones: the first run still reads the texts it
    // ranked, and still says they were made from the replaced original.
    assert_eq!(report(&db, &before), old, "the first run's report is unchanged by the second run");

    // Imported texts cannot be written again: a run of the import made on the old original
    // is refused, naming it.
    let o = crate::support::mirage(
        &db,
        &["geo", "run", "--ranker", "bm25", "--list", "stsdata/books", "--method", "import:pre"],
    );
    let out = text(&o);
    assert!(
        !o.status.success()
            && out.contains("1 stored text(s) of import:pre (first: stsdata|books|1) were made from an original")
            && out.contains("under another --variant"),
        "{out}"
    );
    // The adopting import's texts match the lists it adopted: its run goes ahead.
    let o = crate::support::mirage(
        &db,
        &["geo", "run", "--ranker", "bm25", "--list", "stsdata/books", "--method", "import:new"],
    );
    assert!(o.status.success(), "{}", text(&o));
    // A name's texts never change: the other file under the same name is refused, and what
    // was stored stays.
    let o = crate::support::mirage(
        &db,
        &["geo", "import", matching.to_str().expect("utf-8"), "--variant", "new", "--adopt-originals"],
    );
    assert!(!o.status.success() && text(&o).contains("import:new already holds other texts"), "{}", text(&o));
}
