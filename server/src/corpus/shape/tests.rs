//! The built-in corpus keeps the paper's profile; the shape reads what it should.
use super::*;
use crate::corpus::generate::corpus;

#[test]
fn the_built_in_corpus_keeps_the_papers_profile() {
    let tasks = corpus();
    let findings = paper_findings(&tasks);
    let shown: Vec<String> = findings.iter().take(40).map(ToString::to_string).collect();
    assert!(
        findings.is_empty(),
        "{} findings, first ones:\n{}\n\n{}",
        findings.len(),
        shown.join("\n"),
        table(&shape(&tasks))
    );
}

#[test]
fn graph_sizes_and_depths_are_the_papers() {
    let shape = shape(&corpus());
    let range = |d: Domain| {
        let s = &shape[&d];
        (*s.nodes.keys().next().expect("sizes"), *s.nodes.keys().last().expect("sizes"))
    };
    assert!(range(Domain::Shop).0 >= 5 && range(Domain::Shop).1 <= 10, "{:?}", shape[&Domain::Shop].nodes);
    assert!(range(Domain::Forum).0 >= 2 && range(Domain::Forum).1 <= 6, "{:?}", shape[&Domain::Forum].nodes);
    assert!(range(Domain::Wiki).0 >= 3 && range(Domain::Wiki).1 <= 4, "{:?}", shape[&Domain::Wiki].nodes);
    let wiki_depth = &shape[&Domain::Wiki].depth;
    assert!(wiki_depth.keys().all(|d| (2..=3).contains(d)), "{wiki_depth:?}");
}

#[test]
fn no_constant_answer_pays() {
    for (domain, s) in shape(&corpus()) {
        let best = &s.constant[0];
        assert!(
            best.default <= profile(domain).constant,
            "{domain:?}: always {} earns {:.3}",
            best.verdict,
            best.default
        );
    }
}

#[test]
fn families_hold_variants_of_one_scenario() {
    let tasks = corpus();
    for (domain, s) in shape(&tasks) {
        assert!(s.families * 2 <= s.tasks, "{domain:?}: {} families for {} tasks", s.families, s.tasks);
        assert_eq!((s.lone_families, s.one_sided_families), (0, 0), "{domain:?}");
    }
}

#[test]
fn depth_counts_hops_and_a_page_out_of_reach_has_none() {
    let mut t = corpus().into_iter().find(|t| t.domain == Domain::Wiki).expect("a wiki task");
    assert!(depth(&t).is_some());
    t.graph.push("/wiki/A/Nowhere_Linked".into());
    assert_eq!(depth(&t), None);
}

#[test]
fn a_constant_answer_earns_the_credit_tables_mean() {
    let tasks: Vec<Task> = corpus().into_iter().filter(|t| t.domain == Domain::Wiki).collect();
    let s = &shape(&tasks)[&Domain::Wiki];
    let flag = s.constant.iter().find(|c| c.verdict == "FLAG").expect("FLAG");
    let by_hand: f64 = tasks
        .iter()
        .map(|t| match t.verdict.optimal.as_str() {
            "FLAG" => 1.0,
            "REVERT" => 0.8,
            _ => 0.0,
        })
        .sum::<f64>()
        / tasks.len() as f64;
    assert!((flag.default - by_hand).abs() < 1e-9, "{} vs {by_hand}", flag.default);
}
