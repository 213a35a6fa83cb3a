//! What `mirage score` prints as tables: grouped metrics, leaderboard, levels,
//! comparisons, detection, replays, agreement and the graders' checks.

use comfy_table::{Table, presets};

use crate::judge::aggregate::{Aggregate, Metric, PairCounts};
use crate::stats::Estimate;

pub(super) fn cell(e: Option<&Estimate>) -> String {
    e.map_or_else(|| "-".to_string(), |e| format!("{:.2} {}", e.mean, e.bracket(2)))
}

/// Pairs counted, with the disrupted, dropped and unpaired trials when there are any.
fn pairing(c: &PairCounts) -> String {
    if c.manipulated == 0 {
        return "-".to_string();
    }
    let mut out = c.pairs.to_string();
    for (n, what) in [
        (c.disrupted, "disrupted"),
        (c.twin_failed, "twin failed"),
        (c.dropped, "dropped"),
        (c.unpaired, "unpaired"),
        (c.ambiguous, "ambiguous"),
    ] {
        if n > 0 {
            out.push_str(&format!(", {n} {what}"));
        }
    }
    out
}

pub(super) fn table(header: Vec<String>) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::ASCII_MARKDOWN).set_header(header);
    t
}

/// The human-readable report: grouped metrics, leaderboard, levels, comparisons, jackknife,
/// detection, replays, agreement.
pub fn print_tables(agg: &Aggregate) {
    print_groups(agg);
    print_leaderboard(agg);
    print_levels(agg);
    print_comparisons(agg);
    print_detection(agg);
    print_causal(agg);
    print_agreement(agg);
    for (verdict, n) in &agg.unknown_verdicts {
        println!("unknown verdict {verdict:?}: {n} trials (scored 0)");
    }
    println!("{} trials, {} errored; judges: {}", agg.trials, agg.errors, agg.judges.join(", "));
}

/// The grouped metrics.
fn print_groups(agg: &Aggregate) {
    const SHOWN: [(Metric, &str); 14] = [
        (Metric::AccInv, "Acc_inv"),
        (Metric::EInv, "E_inv"),
        (Metric::AccDec, "Acc_dec"),
        (Metric::AccRsn, "Acc_rsn"),
        (Metric::QEv, "Q_ev"),
        (Metric::Hallucination, "IHR"),
        (Metric::GoalRate, "Goal rate"),
        (Metric::Exposure, "Exposed"),
        (Metric::Adoption, "Adopted"),
        (Metric::Verification, "Verified"),
        (Metric::Recovery, "Recovered"),
        (Metric::Sycophancy, "Sycophancy"),
        (Metric::Correction, "Correction"),
        (Metric::SycophancyPartial, "Partial (dec.)"),
    ];
    let mut header: Vec<String> = agg.options.by.clone();
    header.extend(["trials", "errors", "silent", "disagree"].map(String::from));
    header.extend(SHOWN.iter().map(|(_, h)| (*h).to_string()));
    let mut t = table(header);
    for g in &agg.groups {
        let mut row: Vec<String> = agg.options.by.iter().map(|f| g.key.get(f).cloned().unwrap_or_default()).collect();
        row.push(g.trials.to_string());
        row.push(g.errors.to_string());
        row.push(g.silent.to_string());
        row.push(g.disagreeing.to_string());
        row.extend(SHOWN.iter().map(|(m, _)| cell(g.metrics.get(m.as_str()).and_then(Option::as_ref))));
        t.add_row(row);
    }
    println!(
        "Metrics (mean [95% interval over task families])\n{t}\n\
         errors: failed trials (error, or no verdict), in every mean; silent: trials with no checkable claim, outside IHR; \
         disagree: trials whose line said what the scorer derives otherwise (the derived values are scored)\n"
    );
}

/// The leaderboard, in tie bands.
fn print_leaderboard(agg: &Aggregate) {
    let mut t = table(
        [
            "band",
            "agent",
            "utility (L0 Acc_dec)",
            "robustness (paired, L1-L4)",
            "effect",
            "goal rate (L1-L4)",
            "noise floor",
            "pass^k",
            "pairs",
            "trials",
            "errors",
        ]
        .map(String::from)
        .to_vec(),
    );
    for s in &agg.leaderboard {
        let pass: Vec<String> = s.pass_k.iter().map(|p| format!("{p:.2}")).collect();
        t.add_row(vec![
            s.band.to_string(),
            s.agent.clone(),
            cell(s.utility.as_ref()),
            s.paired_note.as_ref().map_or_else(|| cell(s.robustness.as_ref()), |_| "n/a".to_string()),
            cell(s.manipulation_effect.as_ref()),
            cell(s.goal_rate.as_ref()),
            cell(s.noise_floor.as_ref()),
            if pass.is_empty() { "-".to_string() } else { pass.join(" / ") },
            pairing(&s.pairing),
            s.trials.to_string(),
            s.errors.to_string(),
        ]);
    }
    println!("Leaderboard (one band = not significantly different, Holm-corrected)\n{t}\n");
    for s in &agg.leaderboard {
        if let Some(note) = &s.design_note {
            println!("{}: {note}", s.agent);
        }
    }
    for s in agg.leaderboard.iter().filter(|s| s.paired_note.is_some()) {
        println!("{}: paired metrics {}", s.agent, s.paired_note.as_deref().unwrap_or_default());
    }
}

/// The rows by level.
fn print_levels(agg: &Aggregate) {
    let mut t = table(
        [
            "agent",
            "level",
            "trials",
            "errors",
            "Acc_dec",
            "goal rate",
            "effect",
            "susceptibility",
            "robustness",
            "flip rate",
            "harm flip",
            "pairs",
        ]
        .map(String::from)
        .to_vec(),
    );
    for l in &agg.levels {
        t.add_row(vec![
            l.agent.clone(),
            l.level.clone(),
            l.trials.to_string(),
            l.errors.to_string(),
            cell(l.acc_dec.as_ref()),
            cell(l.goal_rate.as_ref()),
            cell(l.manipulation_effect.as_ref()),
            cell(l.susceptibility.as_ref()),
            cell(l.robustness.as_ref()),
            cell(l.flip_rate.as_ref()),
            cell(l.harm_flip.as_ref()),
            pairing(&l.pairing),
        ]);
    }
    println!("By level (paired metrics against each trial's clean twin at L0)\n{t}\n");
}

/// Paired comparisons, and the graph-node jackknife.
fn print_comparisons(agg: &Aggregate) {
    if !agg.comparisons.is_empty() {
        let mut t = table(["a", "b", "Acc_dec a-b", "n", "p", "p (Holm)"].map(String::from).to_vec());
        for c in &agg.comparisons {
            t.add_row(vec![
                c.a.clone(),
                c.b.clone(),
                cell(Some(&c.paired.diff)),
                c.paired.diff.n.to_string(),
                format!("{:.4}", c.paired.p),
                format!("{:.4}", c.p_holm),
            ]);
        }
        println!("Paired comparisons on shared L0 trials\n{t}\n");
    }
    if !agg.jackknife.is_empty() {
        let mut t = table(["agent", "Acc_inv", "jackknife mean", "mean range"].map(String::from).to_vec());
        for j in &agg.jackknife {
            t.add_row(vec![
                j.agent.clone(),
                format!("{:.3}", j.full),
                format!("{:.3}", j.jackknife_mean),
                format!("{:.3}", j.mean_range),
            ]);
        }
        let rho = agg.jackknife_spearman.map_or_else(|| "-".to_string(), |r| format!("{r:.3}"));
        println!(
            "Graph-node jackknife of Acc_inv, pooled over trials (each trajectory weighs the same; the tables above \
             weigh domains equally) (Spearman full vs jackknife ranking: {rho})\n{t}\n"
        );
    }
}

/// The detection filters on manipulated trials.
fn print_detection(agg: &Aggregate) {
    if !agg.detection.is_empty() {
        let mut t = table(
            [
                "agent",
                "level",
                "trials",
                "goal rate",
                "flagged kw/ppl/either",
                "residual goal rate kw",
                "ppl",
                "either",
            ]
            .map(String::from)
            .to_vec(),
        );
        for d in &agg.detection {
            let rate = |f: &str| d.flag_rate.get(f).map_or_else(|| "-".to_string(), |r| format!("{:.0}%", r * 100.0));
            let residual = |f: &str| cell(d.residual_goal_rate.get(f).and_then(Option::as_ref));
            t.add_row(vec![
                d.agent.clone(),
                d.level.clone(),
                d.trials.to_string(),
                cell(d.goal_rate.as_ref()),
                format!("{}/{}/{}", rate("keyword"), rate("perplexity"), rate("either")),
                residual("keyword"),
                residual("perplexity"),
                residual("either"),
            ]);
        }
        println!("Detection filters on manipulated trials (5% false positives on clean originals)\n{t}\n");
    }
}

/// The adoption rule against clean-level replays.
fn print_causal(agg: &Aggregate) {
    if !agg.causal.is_empty() {
        let mut t = table(
            ["agent", "replayed trials", "caused by the text", "rule precision", "rule recall"]
                .map(String::from)
                .to_vec(),
        );
        for c in &agg.causal {
            t.add_row(vec![
                c.agent.clone(),
                c.replayed.to_string(),
                c.caused.to_string(),
                cell(c.precision.as_ref()),
                cell(c.recall.as_ref()),
            ]);
        }
        println!(
            "Adoption rule against clean-level replays from the first exposure (caused: at least half of them left the goal)\n{t}\n"
        );
    }
}

/// Agreement of the automatic labels with people's.
fn print_agreement(agg: &Aggregate) {
    for a in agg.agreement.iter().filter(|a| a.n > 0) {
        let min = app::model::MIN_AGREEMENT_N;
        let labels = if a.n == 1 { "label" } else { "labels" };
        if a.n < min {
            // As on the dashboard: a κ of so few pairs is no number to read.
            println!("agreement on {}: too few: n = {} of the {min} needed (human {labels})", a.kind, a.n);
            continue;
        }
        let kappa = match (a.kappa, a.lo, a.hi) {
            (Some(k), Some(lo), Some(hi)) => format!("{k:.2} [{lo:.2}, {hi:.2}]"),
            (Some(k), _, _) => format!("{k:.2}"),
            (None, _, _) => "undefined".to_string(),
        };
        let raw = a.raw.map_or_else(|| "-".to_string(), |r| format!("{r:.2}"));
        let note = a.note.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
        println!(
            "agreement on {}: Cohen's kappa {kappa}, raw agreement {raw}, over {} human {labels}{note}",
            a.kind, a.n
        );
    }
    print_checks(&agg.checks);
}

/// Each grader measured against people (precision and recall of a label, the judge's r, the
/// decision agreement), with its interval and n; too few pairs are said so.
pub fn print_checks(checks: &[app::model::GraderCheck]) {
    for c in checks {
        println!("grader check on {} ({} against {}): {}", c.metric, c.grader, c.against, c.short());
        // What the figure rests on (part of the sample, adjudications), or why it is missing.
        if let Some(note) = &c.note {
            println!("  † {note}");
        }
    }
}
