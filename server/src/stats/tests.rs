//! Unit tests of the estimators (their coverage is `coverage::tests`).

use super::*;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Pooled weighting counts every observation once, and still treats each domain as a
/// stratum: two constant domains give a zero-width interval (one stratum would not).
#[test]
fn pooled_weighting_is_the_observation_mean_stratified_by_domain() {
    let mut obs: Vec<Obs<'static>> = (0..2).map(|i| Obs::value("a", format!("a{i}"), 1.0)).collect();
    obs.extend((0..4).map(|i| Obs::value("b", format!("b{i}"), 0.0)));
    let domain = interval(&obs).expect("estimate");
    assert_eq!(domain.mean, 0.5);
    let pooled = interval_weighted(&obs, Weight::Pooled).expect("estimate");
    assert!((pooled.mean - 1.0 / 3.0).abs() < 1e-12, "{pooled:?}");
    let one: Vec<Obs<'static>> = obs.iter().map(|o| Obs { domain: "all".into(), ..o.clone() }).collect();
    let unstratified = interval(&one).expect("estimate");
    assert!(unstratified.hi - unstratified.lo > 0.2, "{unstratified:?}");
    // Constant values that are no proportion (0.7 is no share of whole counts): the
    // t interval has no width.
    let c: Vec<Obs<'static>> = (0..6).map(|i| Obs::value(["a", "b"][i % 2], format!("c{i}"), 0.7)).collect();
    let e = interval_weighted(&c, Weight::Pooled).expect("estimate");
    assert!(e.lo == e.mean && e.hi == e.mean && !e.no_interval, "{e:?}");
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn a_constant_score_has_a_degenerate_interval_and_a_constant_share_does_not() {
    let obs: Vec<Obs<'static>> = (0..50).map(|i| Obs::value(["shop", "wiki"][i % 2], format!("c{i}"), 0.7)).collect();
    let e = interval(&obs).expect("estimate");
    assert!(close(e.mean, 0.7, 1e-12) && close(e.lo, 0.7, 1e-12) && close(e.hi, 0.7, 1e-12), "{e:?}");
    // Twenty trials in four families that all failed: a rate of 0 is not known to be
    // exactly 0. The upper bound is Jeffreys' at the effective n = 20 · (t19 / t3)² = 8.65
    // (the 97.5th percentile of Beta(0.5, 9.15), 0.2457).
    let zero: Vec<Obs<'static>> = (0..20).map(|i| Obs::value("shop", format!("c{}", i % 4), 0.0)).collect();
    let e = rate_interval(&zero).expect("estimate");
    assert!(e.mean == 0.0 && e.lo == 0.0 && close(e.hi, 0.2457, 1e-3), "{e:?}");
    // Twenty independent trials (twenty families): 1 − 0.025^(1/20)-like, Jeffreys at 20
    // · (t19 / t19)² = 20 (0.1165).
    let apart: Vec<Obs<'static>> = (0..20).map(|i| Obs::value("shop", format!("c{i}"), 0.0)).collect();
    let e = rate_interval(&apart).expect("estimate");
    assert!(close(e.hi, 0.1165, 1e-3), "{e:?}");
    // The same zeros as a score (an NRG that never moved) have no spread at all.
    let e = interval(&zero).expect("estimate");
    assert!(e.lo == 0.0 && e.hi == 0.0, "{e:?}");
}

#[test]
fn a_large_sample_mean_lies_within_its_standard_error() {
    // 4,000 independent Bernoulli(0.3) trials in one domain: the interval should be
    // about ±1.96 standard errors around the sample mean.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let obs: Vec<Obs<'static>> =
        (0..4000).map(|i| Obs::value("shop", format!("c{i}"), if rng.random_bool(0.3) { 1.0 } else { 0.0 })).collect();
    let e = interval(&obs).expect("estimate");
    let se = (0.3f64 * 0.7 / 4000.0).sqrt();
    assert!(close(e.mean, 0.3, 3.0 * se), "{e:?}");
    assert!(close(e.hi - e.lo, 2.0 * 1.96 * se, 0.05 * se * 3.92), "width {} vs {}", e.hi - e.lo, 3.92 * se);
    assert!(e.lo < e.mean && e.mean < e.hi);
}

/// The t interval by hand: four clusters of a score with cluster means 0.2, 0.4, 0.6,
/// 0.8: mean 0.5, se = sd/√4 with sd = 0.2582, on 3 degrees of freedom (t = 3.182).
#[test]
fn a_few_clusters_give_a_t_interval_on_their_degrees_of_freedom() {
    let obs: Vec<Obs<'static>> = [0.2, 0.4, 0.6, 0.8]
        .iter()
        .enumerate()
        .flat_map(|(c, &m)| (0..3).map(move |_| Obs::value("wiki", format!("c{c}"), m)))
        .collect();
    let e = interval(&obs).expect("estimate");
    // sd of (0.2, 0.4, 0.6, 0.8) = 0.258199; se = 0.129099.
    let se = 0.258_199 / 2.0;
    assert!(close(e.mean, 0.5, 1e-12) && close(e.hi - e.mean, 3.182_446 * se, 1e-4), "{e:?}");
    assert!(close(e.mean - e.lo, e.hi - e.mean, 1e-12));
}

#[test]
fn a_domain_with_one_cluster_has_no_interval() {
    let mut obs: Vec<Obs<'static>> =
        (0..6).map(|i| Obs::value("shop", format!("s{}", i % 3), f64::from(i % 2))).collect();
    obs.extend((0..3).map(|_| Obs::value("wiki", "only", 0.5)));
    let e = interval(&obs).expect("estimate");
    assert!(e.no_interval && e.lo == e.mean && e.hi == e.mean, "{e:?}");
    let p = paired(&obs).expect("paired");
    assert!(p.diff.no_interval && p.p == 1.0, "{p:?}");
}

#[test]
fn domains_weigh_equally() {
    let mut obs: Vec<Obs<'static>> = (0..90).map(|i| Obs::value("shop", format!("s{i}"), 1.0)).collect();
    obs.extend((0..10).map(|i| Obs::value("wiki", format!("w{i}"), 0.0)));
    assert!(close(interval(&obs).expect("estimate").mean, 0.5, 1e-12));
}

#[test]
fn clusters_count_whole() {
    // Two clusters of 100 trials, one all yes and one all no: the spread is the two
    // clusters', so the interval spans [0, 1] (a trial-level one would be narrow).
    let mut obs: Vec<Obs<'static>> = (0..100).map(|_| Obs::value("shop", "a", 1.0)).collect();
    obs.extend((0..100).map(|_| Obs::value("shop", "b", 0.0)));
    for e in [interval(&obs), rate_interval(&obs)] {
        let e = e.expect("estimate");
        assert!(e.lo < 0.05 && e.hi > 0.95, "{e:?}");
    }
}

#[test]
fn holm_matches_hand_computed_values() {
    // Sorted p: 0.01, 0.02, 0.03, 0.04 with m = 4 → 0.04, 0.06, 0.06 (monotone), 0.06 …
    let adjusted = holm(&[0.03, 0.01, 0.04, 0.02]);
    let expected = [0.06, 0.04, 0.06, 0.06];
    for (a, e) in adjusted.iter().zip(expected) {
        assert!(close(*a, e, 1e-12), "{adjusted:?}");
    }
    let capped = holm(&[0.5, 0.9]);
    assert!(close(capped[0], 1.0, 1e-12) && close(capped[1], 1.0, 1e-12), "{capped:?}");
}

#[test]
fn wald_p_values() {
    assert!(close(wald_p(1.96, 1.0), 0.05, 1e-3));
    assert!(close(wald_p(0.0, 1.0), 1.0, 1e-12));
    assert_eq!(wald_p(0.0, 0.0), 1.0);
    assert_eq!(wald_p(0.1, 0.0), 0.0);
}

#[test]
fn paired_differences_detect_a_shift() {
    let diffs: Vec<Obs<'static>> =
        (0..200).map(|i| Obs::value("wiki", format!("c{i}"), if i % 4 == 0 { 0.0 } else { 1.0 })).collect();
    let p = paired(&diffs).expect("paired");
    assert!(close(p.diff.mean, 0.75, 1e-12) && p.p < 1e-6, "{p:?}");
    let none: Vec<Obs<'static>> =
        (0..200).map(|i| Obs::value("wiki", format!("c{i}"), f64::from(i % 2) * 2.0 - 1.0)).collect();
    assert!(paired(&none).expect("paired").p > 0.5);
}

#[test]
fn spearman_and_ranks() {
    assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    assert!(close(spearman(&[1.0, 2.0, 3.0], &[10.0, 20.0, 30.0]).expect("rho"), 1.0, 1e-12));
    assert!(close(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]).expect("rho"), -1.0, 1e-12));
    // Hand-computed: ranks a = 1,2,3,4,5; b = 2,1,4,3,5 → d² = 1+1+1+1+0 = 4 → 1 − 6·4/120 = 0.8.
    assert!(close(spearman(&[1.0, 2.0, 3.0, 4.0, 5.0], &[2.0, 1.0, 4.0, 3.0, 5.0]).expect("rho"), 0.8, 1e-12));
    assert_eq!(spearman(&[1.0, 1.0], &[1.0, 2.0]), None);
    assert_eq!(spearman(&[1.0, 2.0], &[5.0, 9.0]), None, "two points carry no ranking evidence");
}

#[test]
fn kappa_matches_a_hand_computed_table() {
    // 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no: po = 0.7, pe = 0.5·0.6 + 0.5·0.4 = 0.5 → κ = 0.4.
    let mut pairs = vec![(true, true); 20];
    pairs.extend(vec![(true, false); 5]);
    pairs.extend(vec![(false, true); 10]);
    pairs.extend(vec![(false, false); 15]);
    assert!(close(cohen_kappa(&pairs).expect("kappa"), 0.4, 1e-12));
    assert_eq!(cohen_kappa(&[(true, true), (true, true)]), None);
    assert_eq!(cohen_kappa(&[]), None);
}

#[test]
fn tie_groups_follow_significance_from_the_leader() {
    // a > b > c > d; a~b not significant, a vs c significant, c~d not.
    let means = [0.9, 0.85, 0.5, 0.45];
    let p = |i: usize, j: usize| {
        let (i, j) = (i.min(j), i.max(j));
        match (i, j) {
            (0, 1) | (2, 3) => 0.4,
            _ => 0.001,
        }
    };
    assert_eq!(tie_groups(&means, p, 0.05), vec![1, 1, 2, 2]);
}

#[test]
fn wilson_and_fisher_intervals_match_published_values() {
    // Wilson: 8 of 10 gives [0.490, 0.943] (Newcombe 1998, method 3).
    let (lo, hi) = wilson(8, 10).expect("interval");
    assert!(close(lo, 0.4902, 1e-4) && close(hi, 0.9433, 1e-4), "{lo} {hi}");
    let (lo, hi) = wilson(0, 10).expect("interval");
    assert!(close(lo, 0.0, 1e-12) && close(hi, 0.2775, 1e-4), "{lo} {hi}");
    assert_eq!(wilson(0, 0), None);
    // Fisher: r = 0.5 over 28 pairs, z = 0.5493 ± 1.96 / 5 gives [0.156, 0.736].
    let (lo, hi) = pearson_interval(0.5, 28).expect("interval");
    assert!(close(lo, 0.1562, 1e-3) && close(hi, 0.7362, 1e-3), "{lo} {hi}");
    assert_eq!(pearson_interval(0.5, 3), None);
    let (lo, hi) = pearson_interval(1.0, 10).expect("interval");
    assert!(lo > 0.99 && hi <= 1.0);
}

#[test]
fn kappa_over_classes_and_pearson() {
    // Two raters, three classes: 4 of 6 agree; chance from the margins.
    let pairs = [(0, 0), (1, 1), (2, 2), (2, 2), (0, 1), (1, 2)];
    let k = cohen_kappa_classes(&pairs).expect("kappa");
    let expected = (2.0 / 6.0) * (1.0 / 6.0) + (2.0 / 6.0) * (2.0 / 6.0) + (2.0 / 6.0) * (3.0 / 6.0);
    assert!((k - (4.0 / 6.0 - expected) / (1.0 - expected)).abs() < 1e-12, "{k}");
    assert_eq!(cohen_kappa_classes(&[(3, 3)]), None, "one pair: chance agreement is perfect");
    assert_eq!(cohen_kappa(&[(true, true), (false, false)]), Some(1.0));
    let r = pearson(&[(1.0, 2.0), (2.0, 4.0), (3.0, 6.5)]).expect("r");
    assert!(r > 0.99 && r <= 1.0, "{r}");
    assert_eq!(pearson(&[(1.0, 1.0)]), None);
    assert_eq!(pearson(&[(1.0, 1.0), (2.0, 1.0)]), None, "no variance");
}

/// Clusters with nothing in the denominator (robustness pairs whose twin gave the goal) are
/// sampled, but a spread needs two that weigh: one informative family is no interval.
#[test]
fn clusters_without_a_denominator_do_not_make_a_spread() {
    let one = [
        Obs { domain: "shop".into(), cluster: "a".into(), num: 3.0, den: 4.0 },
        Obs { domain: "shop".into(), cluster: "b".into(), num: 1.0, den: 0.0 },
    ];
    let e = interval(&one).expect("estimate");
    assert!(e.no_interval && close(e.mean, 1.0, 1e-12), "{e:?}");
    let two = [one[0].clone(), one[1].clone(), Obs { domain: "shop".into(), cluster: "c".into(), num: 1.0, den: 3.0 }];
    let e = interval(&two).expect("estimate");
    assert!(!e.no_interval && e.lo < e.mean && e.mean < e.hi && e.hi.is_finite(), "{e:?}");
}

/// Lists in the built-in datasets' shape (3, 4, 6 and 6), five targets each: were one
/// dataset alone to vary, its three lists would give two degrees of freedom, not the
/// design's. Normal theory puts the worst case at t / √(2 + t²) (P(|T| ≤ t) on two degrees
/// of freedom); two-valued gains at this very shape, simulated, cover less still (the
/// statistics page's extreme row measures 78.6 %), and the lesser is printed. Three domains
/// of forty clusters, or one domain of forty, carry no such mark.
#[test]
fn an_interval_says_its_worst_case_coverage_where_a_domain_has_few_clusters() {
    let obs = |shape: &[usize]| -> Vec<Obs<'static>> {
        let mut out = Vec::new();
        for (d, &g) in shape.iter().enumerate() {
            for c in 0..g {
                for t in 0..5 {
                    let v = f64::from(u8::try_from((c * 7 + t * 3 + d) % 5).expect("small"));
                    out.push(Obs::value(format!("d{d}"), format!("l{c}"), v / 10.0));
                }
            }
        }
        out
    };
    let e = interval(&obs(&[3, 4, 6, 6])).expect("estimate");
    let least = e.coverage.expect("a worst case beside the interval");
    // The design's degrees of freedom for equal domain weights: (Σ a)² / Σ a² / (g − 1),
    // a = 1 / (16 g).
    let a: Vec<(f64, f64)> = [3.0, 4.0, 6.0, 6.0].iter().map(|&g: &f64| (1.0 / (16.0 * g), g - 1.0)).collect();
    let df = a.iter().map(|x| x.0).sum::<f64>().powi(2) / a.iter().map(|x| x.0 * x.0 / x.1).sum::<f64>();
    let t = t975(df);
    let normal = t / (2.0 + t * t).sqrt();
    assert!(close(normal, 0.845, 0.005), "{normal} at df {df}");
    assert!((0.76..0.81).contains(&least) && least < normal, "{least} against normal theory's {normal}");
    // The same shape gives the same figure, whatever the values.
    let again = interval(
        &obs(&[3, 4, 6, 6])
            .into_iter()
            .map(|mut o| {
                o.num = 1.0 - o.num;
                o
            })
            .collect::<Vec<_>>(),
    );
    assert_eq!(again.expect("estimate").coverage, Some(least));
    assert!(
        e.bracket(2).ends_with(&format!("(may cover only ≈{:.0} % at these clusters)", (least * 100.0).floor())),
        "{}",
        e.bracket(2)
    );
    assert_eq!(interval(&obs(&[40, 41, 41])).expect("estimate").coverage, None);
    assert_eq!(interval(&obs(&[40])).expect("estimate").coverage, None);
    // One domain of four clusters has no design to fall short of, but two-valued clusters
    // that few are far from normal: simulated, they cover about 92 %.
    let few = interval(&obs(&[4])).expect("estimate").coverage.expect("a worst case");
    assert!((0.9..0.93).contains(&few), "{few}");
    // A paired difference over the same shape carries it too.
    assert!(paired(&obs(&[3, 4, 6, 6])).expect("paired").diff.coverage.is_some());
}
