//! What `mirage geo` prints: the datasets table, the in-process evaluation, a run's report
//! and its detection report (tables by default, JSON with `--json`).

use anyhow::{Context, bail};
use serde_json::json;

use super::score::table;
use crate::geo::data::{DATASETS, List, summaries};
use crate::geo::{Protocol, Scored, evaluate, rank, summarise, writers};

pub(super) fn datasets(lists: &[List], json: bool) -> anyhow::Result<()> {
    let s = summaries(lists);
    if json {
        let lists: Vec<_> = lists
            .iter()
            .map(|l| json!({"key": l.key(), "dataset": l.dataset, "category": l.category, "noun": l.noun, "items": l.items.len()}))
            .collect();
        println!("{}", serde_json::to_string_pretty(&json!({"datasets": s, "lists": lists}))?);
        return Ok(());
    }
    let header = ["dataset", "lists", "targets", "items per list", "originals flagged (keywords)", "nouns"];
    let mut t = table(header.map(String::from).to_vec());
    for d in &s {
        let lengths: Vec<String> = d.lengths.iter().map(ToString::to_string).collect();
        let mut nouns = d.nouns.clone();
        nouns.truncate(6);
        let more = if d.nouns.len() > 6 { format!(", … ({} in all)", d.nouns.len()) } else { String::new() };
        t.add_row(vec![
            d.dataset.clone(),
            d.lists.to_string(),
            d.targets.to_string(),
            lengths.join(", "),
            format!("{} ({:.1} %)", d.originals_flagged, 100.0 * d.originals_flagged as f64 / d.targets as f64),
            format!("{}{more}", nouns.join(", ")),
        ]);
    }
    println!("{t}");
    println!("{} lists, {} targets", lists.len(), s.iter().map(|d| d.targets).sum::<usize>());
    Ok(())
}

/// `mirage geo eval`: offline rankers and writers over the chosen datasets, in process.
pub(super) async fn eval_cmd(
    chosen: &[List],
    ranker: &[String],
    method: &[String],
    protocol: &Protocol,
    json: bool,
) -> anyhow::Result<()> {
    let rankers: Vec<Box<dyn rank::Ranker>> = ranker
        .iter()
        .map(|r| rank::offline(r).with_context(|| format!("--ranker: {r:?} is not an offline ranker (bm25, position)")))
        .collect::<anyhow::Result<_>>()?;
    for m in method {
        if !writers::WRITERS.contains(&m.as_str()) {
            bail!("--method: {m:?} is not an offline writer ({})", writers::WRITERS.join(", "));
        }
    }
    eval(chosen, &rankers, method, protocol, json).await
}

/// Every target of `lists` edited by the offline writer `method` and ranked by `ranker`.
async fn offline_targets(
    lists: &[List],
    ranker: &dyn rank::Ranker,
    method: &str,
    protocol: &Protocol,
    ppl: &crate::geo::detect::PplModel,
) -> anyhow::Result<Vec<Scored>> {
    let mut scored = Vec::new();
    for list in lists {
        for (t, item) in list.items.iter().enumerate() {
            let edited = writers::write(method, &item.name, &list.noun, &item.text).expect("checked writer");
            let (result, records) = evaluate(ranker, protocol, list, t, &edited).await?;
            let names: Vec<String> = list.items.iter().map(|i| i.name.clone()).collect();
            let readings = crate::geo::readings(&records, &names, protocol.parser);
            scored.push(Scored {
                dataset: list.dataset.clone(),
                list: list.key(),
                target: t + 1,
                result,
                failed_orders: 0,
                readings,
                kvr: crate::geo::kvr(&edited),
                ppl_r: ppl.ratio(&edited, &item.text, list),
                search: None,
                text_key: String::new(),
            });
        }
    }
    Ok(scored)
}

pub(super) async fn eval(
    lists: &[List],
    rankers: &[Box<dyn rank::Ranker>],
    methods: &[String],
    protocol: &Protocol,
    json: bool,
) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    let mut by_dataset = Vec::new();
    let ppl = crate::geo::detect::PplModel::new(lists);
    for ranker in rankers {
        for method in methods {
            let scored = offline_targets(lists, ranker.as_ref(), method, protocol, &ppl).await?;
            let summary = summarise(&scored).context("no targets")?;
            rows.push((ranker.name().to_string(), method.clone(), summary));
            for (dataset, _) in DATASETS {
                let mine: Vec<Scored> = scored.iter().filter(|s| s.dataset == dataset).cloned().collect();
                if let Some(s) = summarise(&mine) {
                    by_dataset.push((ranker.name().to_string(), method.clone(), dataset, s));
                }
            }
        }
    }
    let interval = |e: &crate::stats::Estimate| {
        if e.no_interval {
            json!({"mean": e.mean, "lo": null, "hi": null, "no_interval": true})
        } else {
            let mut v = json!({"mean": e.mean, "lo": e.lo, "hi": e.hi});
            if let Some(c) = e.coverage {
                v["coverage"] = json!(c);
            }
            v
        }
    };
    if json {
        let row = |r: &str, m: &str, s: &crate::geo::Summary| {
            json!({"ranker": r, "method": m, "n": s.n, "nrg": interval(&s.nrg), "s_at_0_1": interval(&s.s_at_0_1),
                   "p_at_0_1": interval(&s.p_at_0_1), "s_at_0_2": interval(&s.s_at_0_2), "p_at_0_2": interval(&s.p_at_0_2),
                   "missing": s.missing, "nrg_target_weighted": s.nrg_target_weighted})
        };
        let rows: Vec<_> = rows.iter().map(|(r, m, s)| row(r, m, s)).collect();
        let per: Vec<_> = by_dataset
            .iter()
            .map(|(r, m, d, s)| {
                let mut v = row(r, m, s);
                v["dataset"] = json!(d);
                v
            })
            .collect();
        let out = json!({"prompt_version": protocol.prompt.version, "k": protocol.k, "rows": rows, "datasets": per});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let mut t =
        table(["ranker", "method", "dataset", "n", "NRG", "S@0.1", "P@0.1", "missing"].map(String::from).to_vec());
    let all = rows.iter().map(|(r, m, s)| (r, m, "equal-dataset mean", s));
    for (r, m, d, s) in all.chain(by_dataset.iter().map(|(r, m, d, s)| (r, m, *d, s))) {
        t.add_row(vec![
            r.clone(),
            m.clone(),
            d.to_string(),
            s.n.to_string(),
            cell(&s.nrg),
            cell(&s.s_at_0_1),
            cell(&s.p_at_0_1),
            format!("{:.3}", s.missing),
        ]);
    }
    println!("{t}");
    Ok(())
}

pub(super) fn print_report(report: &crate::geo::report::Report, by: &[String], json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    print_report_header(report);
    for what in by {
        match what.as_str() {
            "method" => print_methods(report),
            "dataset" => print_datasets(report),
            "ranker" => print_transfer(report),
            "pairs" => print_pairs(report),
            other => bail!("--by: {other:?} is not one of method, dataset, ranker, pairs"),
        }
    }
    Ok(())
}

fn cell(e: &crate::stats::Estimate) -> String {
    format!("{:.3} {}", e.mean, e.bracket(3))
}

/// A figure that counts failed ranker calls (as replies naming nothing) is marked †.
fn marked(e: &crate::stats::Estimate, s: &crate::geo::Summary) -> String {
    if s.failed_orders > 0 { format!("{} †", cell(e)) } else { cell(e) }
}

/// A row's failed calls: orders, of all, and targets.
fn failed(s: &crate::geo::Summary) -> String {
    if s.failed_orders == 0 {
        "0".to_string()
    } else {
        format!("{} of {} orders, {} targets", s.failed_orders, s.orders, s.failed_targets)
    }
}

/// What the report says before its tables: the run, failures, warnings, the parser.
fn print_report_header(report: &crate::geo::report::Report) {
    println!(
        "run {}: {} trials ({} errors, {} unfinished), K = {}, prompt {}",
        report.run, report.trials, report.errors, report.unfinished, report.k, report.prompt_version
    );
    if report.failed_orders > 0 {
        println!(
            "† {} orders in {} trials had a ranker call fail after its retries; each counts as a reply \
                 naming nothing (the target missing in that order), so these figures include them",
            report.failed_orders, report.failed_trials
        );
    }
    if !report.single_list_datasets.is_empty() {
        println!(
            "warning: {} hold a single list in this run: lists cannot be resampled there, so every interval leaves \
             out their spread and no paired test is possible (p = 1); run two or more lists per dataset",
            report.single_list_datasets.join(", ")
        );
    }
    if report.lists_changed {
        println!(
            "warning: the lists differ from those this run was planned on (GEO-Bench originals adopted since?): \
                 its replies ranked other originals than the ones PPL-R and the keyword flags read now"
        );
    }
    if report.stale_texts > 0 {
        println!(
            "warning: {} stored texts of this run's methods were made from another original than the list holds now \
                 (originals adopted since): their PPL-R is left out; a new run writes them again",
            report.stale_texts
        );
    }
    if report.weighting == crate::geo::report::Weighting::Target {
        println!("rows and paired contrasts weight each target equally (--weighting target), resampled by list");
    }
    if report.replies > 0 {
        let lines = (report.lines_read_differently, report.lines);
        let replies = (report.target_read_differently, report.replies);
        println!("{}", app::model::readings_note(&report.parser, &report.compared_parser, lines, replies));
    }
    for e in &report.incomplete {
        println!("{}", e.describe());
    }
}

/// Each (ranker, method) row, with the TAP rows' search statistics.
fn print_methods(report: &crate::geo::report::Report) {
    let header = [
        "ranker",
        "method",
        "band",
        "n",
        "NRG",
        "S@0.1",
        "P@0.1",
        "KVR",
        "NRG after keywords",
        "PPL-R",
        "missing (clean, edited)",
        "failed calls",
        "read by fallback",
    ];
    let mut t = table(header.map(String::from).to_vec());
    for r in &report.rows {
        let s = &r.summary;
        t.add_row(vec![
            r.ranker.clone(),
            format!(
                "{}{}{}{}",
                r.method,
                if r.tap.as_ref().is_some_and(|t| t.failed_calls > 0) { " †" } else { "" },
                if r.incomplete > 0 { " ‡" } else { "" },
                if s.mostly_fallback() { " §" } else { "" }
            ),
            if r.band == 0 { "—".to_string() } else { r.band.to_string() },
            if r.incomplete > 0 { format!("{} of {}", s.n, s.n + r.incomplete) } else { s.n.to_string() },
            marked(&s.nrg, s),
            marked(&s.s_at_0_1, s),
            marked(&s.p_at_0_1, s),
            format!("{:.3}", s.kvr.mean),
            marked(&s.nrg_after_keyword, s),
            s.ppl_r.map_or_else(|| "-".to_string(), |r| format!("{r:.3}")),
            format!("{:.3}, {:.3}", s.missing_clean, s.missing),
            failed(s),
            format!("{} of {}", s.fallback_replies, s.replies),
        ]);
    }
    // A row none of whose targets was scored stays in the table, said as such.
    for e in report.incomplete.iter().filter(|e| e.scored == 0) {
        let mut row = vec![e.ranker.clone(), format!("{} ‡", e.method), "—".into(), format!("0 of {}", e.trials)];
        row.push("— (no target scored)".into());
        row.extend(std::iter::repeat_n("—".to_string(), header.len() - row.len()));
        t.add_row(row);
    }
    println!("{t}");
    for r in &report.rows {
        if let Some(n) = &r.narrower {
            println!("‡ {} under {}: {n}", r.method, r.ranker);
        }
    }
    if report.rows.iter().any(|r| r.summary.mostly_fallback()) {
        println!(
            "§ more than half of the row's clean or edited replies ranked nothing on a numbered line and were read by \
             where names are first mentioned (a refusal naming a product reads as ranking it first)"
        );
    }
    for r in &report.rows {
        if let Some(tap) = &r.tap {
            println!("{}", tap.describe(&r.ranker, &r.method));
        }
    }
}

/// Each (ranker, method, dataset) row.
fn print_datasets(report: &crate::geo::report::Report) {
    let header = ["ranker", "method", "dataset", "n", "NRG", "S@0.1", "P@0.1", "failed calls"];
    let mut t = table(header.map(String::from).to_vec());
    for r in &report.datasets {
        let s = &r.summary;
        t.add_row(vec![
            r.ranker.clone(),
            if r.incomplete > 0 { format!("{} ‡", r.method) } else { r.method.clone() },
            r.dataset.clone(),
            if r.incomplete > 0 { format!("{} of {}", s.n, s.n + r.incomplete) } else { s.n.to_string() },
            marked(&s.nrg, s),
            marked(&s.s_at_0_1, s),
            marked(&s.p_at_0_1, s),
            failed(s),
        ]);
    }
    // A dataset none of whose trials finished has no figures: said, not left out silently.
    for e in &report.incomplete {
        for dataset in &e.left_out {
            let none = "— (no target scored)".to_string();
            let row = [&e.ranker, &format!("{} ‡", e.method), dataset, "0", &none, "—", "—", "—"];
            t.add_row(row.map(ToString::to_string).to_vec());
        }
    }
    println!("{t}");
}

/// The transfer table: each method's NRG under every ranker.
fn print_transfer(report: &crate::geo::report::Report) {
    // The transfer table: each method's NRG under every ranker.
    let mut rankers: Vec<&String> = report.rows.iter().map(|r| &r.ranker).collect();
    rankers.sort();
    rankers.dedup();
    let mut methods: Vec<&String> = Vec::new();
    for r in &report.rows {
        if !methods.contains(&&r.method) {
            methods.push(&r.method);
        }
    }
    let mut header = vec!["method".to_string()];
    header.extend(rankers.iter().map(|r| format!("NRG under {r}")));
    let mut t = table(header);
    for m in methods {
        let mut line = vec![m.clone()];
        for k in &rankers {
            line.push(
                report
                    .rows
                    .iter()
                    .find(|r| &r.ranker == *k && &r.method == m)
                    .map_or_else(|| "-".to_string(), |r| cell(&r.summary.nrg)),
            );
        }
        t.add_row(line);
    }
    println!("{t}");
}

/// The paired comparisons and Spearman's ρ.
fn print_pairs(report: &crate::geo::report::Report) {
    println!(
        "p (Holm): adjusted within each ranker over the pairs of {}",
        if report.family.is_empty() { "all its methods".to_string() } else { report.family.join(", ") },
    );
    if !report.spearman.is_empty() || !report.spearman_datasets.is_empty() {
        println!(
            "Spearman's ρ below is taken over {}",
            if report.rho_methods.is_empty() { "no method".into() } else { report.rho_methods.join(", ") }
        );
    }
    let mut t = table(["ranker", "a − b", "NRG difference", "p", "p (Holm)"].map(String::from).to_vec());
    for p in &report.pairs {
        t.add_row(vec![
            p.ranker.clone(),
            p.label(),
            cell(&p.diff),
            p.p_text(),
            p.p_holm.map_or_else(|| "— (not in family)".to_string(), |q| format!("{q:.4}")),
        ]);
    }
    println!("{t}");
    for r in report.spearman.iter().chain(&report.spearman_datasets) {
        let rho = r.rho.map_or_else(|| "-".to_string(), |x| format!("{x:.3}"));
        let under = r.ranker.as_ref().map(|k| format!(" under {k}")).unwrap_or_default();
        let paired = if r.paired.is_empty() {
            String::new()
        } else {
            format!(" (TAP paired with its transfer: {})", r.paired.join(", "))
        };
        println!("Spearman ρ({}, {}){under} over {} methods: {rho}{paired}", r.a, r.b, r.methods);
    }
}

pub(super) fn print_detection(d: &crate::geo::score::Detection, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(d)?);
        return Ok(());
    }
    println!(
        "run {}: {} texts judged by {} ({}, {:.1} % censored){}\n\
         judge calibrated ({}) for {:.1} % of originals: realised {:.1} %; keyword-or-judge for {:.0} %: realised {:.1} %",
        d.run,
        d.texts,
        d.judge,
        d.mode,
        100.0 * d.censored,
        d.ppl_source.as_ref().map(|s| format!("; PPL-R from {s}")).unwrap_or_default(),
        d.judge_calibration.mode,
        100.0 * d.fpr,
        100.0 * d.judge_calibration.fpr,
        100.0 * d.either_fpr,
        100.0 * d.either_calibration.fpr,
    );
    let mut rates = table(
        [
            "dataset",
            "keyword",
            "judge",
            "judge threshold",
            "either",
            "either threshold",
            "perplexity",
            "perplexity threshold",
        ]
        .map(String::from)
        .to_vec(),
    );
    for (dataset, k) in &d.keyword_calibration.per_domain {
        let rate = |c: &crate::geo::calibrate::Calibrated| {
            c.per_dataset.get(dataset).map_or_else(|| "-".to_string(), |v| format!("{:.1} %", 100.0 * v))
        };
        let at = |c: &crate::geo::calibrate::Calibrated| {
            c.thresholds.get(dataset).map_or_else(|| "-".to_string(), |v| format!("{v:.4}"))
        };
        rates.add_row(vec![
            dataset.clone(),
            format!("{:.1} %", 100.0 * k),
            rate(&d.judge_calibration),
            at(&d.judge_calibration),
            rate(&d.either_calibration),
            at(&d.either_calibration),
            rate(&d.ppl_calibration),
            at(&d.ppl_calibration),
        ]);
    }
    println!("Realised rates on the originals\n{rates}");
    print_detection_rows(d);
    Ok(())
}

/// The detection rows: what each filter flags and leaves, per (ranker, method), rows with
/// failed ranker calls marked †. Long by design: one table, its columns in the order shown.
fn print_detection_rows(d: &crate::geo::score::Detection) {
    let failed: usize = d.rows.iter().map(|r| r.failed_orders).sum();
    if failed > 0 {
        println!(
            "† {failed} orders had a ranker call fail after its retries: each counts as a reply naming nothing (the \
             target missing there), so the NRG columns of rows marked † include them"
        );
    }
    for e in &d.incomplete {
        println!("{}", e.describe());
    }
    if d.lists_changed {
        println!(
            "warning: the lists differ from those this run was planned on (originals adopted since): the judge and \
             the keyword filter were calibrated on originals its replies never ranked"
        );
    }
    if d.stale_texts > 0 {
        println!(
            "warning: {} stored texts of this run's methods were made from another original than the list holds now",
            d.stale_texts
        );
    }
    // † failed ranker calls in the row; ‡ trials of the row in no mean (n is of the scored).
    let incomplete = |r: &crate::geo::score::DetectionRow| {
        d.incomplete.iter().find(|e| e.ranker == r.ranker && e.method == r.method).map(|e| e.trials)
    };
    let dagger = |r: &crate::geo::score::DetectionRow| {
        let failed = if r.failed_orders > 0 { " †" } else { "" };
        let partial = if incomplete(r).is_some() { " ‡" } else { "" };
        format!("{}{failed}{partial}", r.method)
    };
    let n_of = |r: &crate::geo::score::DetectionRow| {
        incomplete(r).map_or_else(|| r.n.to_string(), |all| format!("{} of {all}", r.n))
    };
    let header = [
        "ranker",
        "method",
        "n",
        "AUROC",
        "judge",
        "keyword",
        "either",
        "NRG",
        "failed calls",
        "after judge",
        "after keyword",
        "after either",
        "promoted and passed",
        "perplexity",
        "after perplexity",
        "PPL-R",
    ];
    let mut t = table(header.map(String::from).to_vec());
    for r in &d.rows {
        t.add_row(vec![
            r.ranker.clone(),
            dagger(r),
            n_of(r),
            r.auroc.map_or_else(|| "-".to_string(), |a| format!("{a:.3}")),
            format!("{:.3}", r.judge_flagged),
            format!("{:.3}", r.keyword_flagged),
            format!("{:.3}", r.either_flagged),
            format!("{:.3}", r.nrg),
            if r.failed_orders == 0 {
                "0".to_string()
            } else {
                format!("{} of {} orders, {} targets", r.failed_orders, r.orders, r.failed_targets)
            },
            format!("{:.3}", r.nrg_after_judge),
            format!("{:.3}", r.nrg_after_keyword),
            format!("{:.3}", r.nrg_after_either),
            format!("{:.3}", r.promoted_and_passed_either),
            format!("{:.3}", r.ppl_flagged),
            format!("{:.3}", r.nrg_after_ppl),
            r.ppl_r.map_or_else(|| "-".to_string(), |v| format!("{v:.3}")),
        ]);
    }
    println!("{t}");
    let header = ["ranker", "method", "filter", "flagged", "NRG left", "promoted and passed"];
    let mut t = table(header.map(String::from).to_vec());
    for r in &d.rows {
        for f in &r.filters {
            t.add_row(vec![
                r.ranker.clone(),
                dagger(r),
                f.filter.clone(),
                cell(&f.flagged),
                cell(&f.nrg_after),
                cell(&f.promoted_and_passed),
            ]);
        }
    }
    println!(
        "What each filter leaves (equal-dataset means, 95 % list-cluster intervals; a caught edit gains nothing)\n{t}"
    );
}
