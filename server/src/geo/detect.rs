//! Detection for the GEO track (docs/geo.md): the perplexity ratio of an edit, the judge's
//! P(Yes) read from next-token log-probabilities, and AUROC per dataset with the
//! equal-dataset mean. Thresholds at a fixed false-positive rate on originals come from
//! `detect::calibrate` with the dataset as domain.

use anyhow::bail;

use super::data::List;
use super::prompt::one_line;
use crate::detect::{HeldOut, NgramModel};

/// PPL-R under Mirage's built-in character 4-gram model, trained on every clean description
/// of the loaded lists and read, for each target, as if trained without the target's own
/// list and every list that shares an item with it (datasets built from the same products
/// hold the same descriptions): a model that had seen the original would find any rewrite
/// less likely than it, however fluent. Not comparable with the paper's Vicuna-7B figures
/// (source `ngram`).
pub struct PplModel {
    model: NgramModel,
    /// By list key: the texts held out when its targets are scored.
    texts: std::collections::HashMap<String, Vec<String>>,
    /// By list key: those texts' counts, taken out of the model.
    held: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<HeldOut>>>,
}

impl PplModel {
    pub fn new(lists: &[List]) -> PplModel {
        // Trained on the texts as the ranker reads them, as they are scored.
        let flat: Vec<String> = lists.iter().flat_map(|l| l.items.iter().map(|i| one_line(&i.text))).collect();
        let model = NgramModel::train(flat.iter().map(String::as_str), 4);
        let texts = lists.iter().map(|l| (l.key(), held_texts(lists, l))).collect();
        PplModel { model, texts, held: std::sync::Mutex::default() }
    }

    fn held_out(&self, list: &List) -> std::sync::Arc<HeldOut> {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.entry(list.key())
            .or_insert_with(|| {
                let texts = self.texts.get(&list.key()).map_or_else(|| own_texts(list), Clone::clone);
                let flat: Vec<String> = texts.iter().map(|t| one_line(t)).collect();
                std::sync::Arc::new(self.model.held_out(flat.iter().map(String::as_str)))
            })
            .clone()
    }

    /// The per-character perplexity under the model without `list` of the text as the
    /// ranker reads it (flattened to one line: whitespace that no ranker sees moves nothing).
    pub fn perplexity(&self, text: &str, list: &List) -> f64 {
        self.model.perplexity_without(&one_line(text), &self.held_out(list))
    }

    /// ppl(adv) / ppl(orig) under the model without the target's `list`, each read as the
    /// ranker reads it; `None` when either is not finite or the original's is not positive.
    pub fn ratio(&self, adv: &str, orig: &str, list: &List) -> Option<f64> {
        let (a, o) = (self.perplexity(adv, list), self.perplexity(orig, list));
        (a.is_finite() && o.is_finite() && o > 0.0).then(|| a / o)
    }
}

fn own_texts(list: &List) -> Vec<String> {
    list.items.iter().map(|i| i.text.clone()).collect()
}

/// The texts of `list` and of every list sharing an item with it (the same name or the same
/// description, whitespace and case aside), each list once.
fn held_texts(lists: &[List], list: &List) -> Vec<String> {
    let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase();
    let names: std::collections::HashSet<String> = list.items.iter().map(|i| norm(&i.name)).collect();
    let descriptions: std::collections::HashSet<String> = list.items.iter().map(|i| norm(&i.text)).collect();
    lists
        .iter()
        .filter(|l| {
            l.key() == list.key()
                || l.items.iter().any(|i| names.contains(&norm(&i.name)) || descriptions.contains(&norm(&i.text)))
        })
        .flat_map(|l| l.items.iter().map(|i| i.text.clone()))
        .collect()
}

/// A judge's score of one text: P(Yes) against No from the first token's top log-probs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JudgeScore {
    pub p: f64,
    /// One side was not among the listed tokens; its smallest listed log-prob stood in.
    pub censored: bool,
    pub yes: f64,
    pub no: f64,
}

fn logsumexp(xs: &[f64]) -> Option<f64> {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (max.is_finite()).then(|| max + xs.iter().map(|x| (x - max).exp()).sum::<f64>().ln())
}

/// Reads P(Yes) = σ(logsumexp(yes) − logsumexp(no)) from `(token, logprob)` pairs: tokens
/// `Yes`/`yes` and `No`/`no` after trimming leading whitespace. A missing side takes the
/// smallest listed log-prob (an upper bound) and marks the score censored; both missing is
/// an error, never a silent 0.
pub fn judge_score(top: &[(String, f64)]) -> anyhow::Result<JudgeScore> {
    let side = |words: [&str; 2]| -> Vec<f64> {
        top.iter().filter(|(t, _)| words.contains(&t.trim_start())).map(|(_, l)| *l).collect()
    };
    let (yes, no) = (logsumexp(&side(["Yes", "yes"])), logsumexp(&side(["No", "no"])));
    let floor = top.iter().map(|(_, l)| *l).fold(f64::INFINITY, f64::min);
    let (yes, no, censored) = match (yes, no) {
        (Some(y), Some(n)) => (y, n, false),
        (Some(y), None) => (y, floor, true),
        (None, Some(n)) => (floor, n, true),
        (None, None) => bail!("neither Yes nor No is among the judge's {} listed tokens", top.len()),
    };
    Ok(JudgeScore { p: 1.0 / (1.0 + (no - yes).exp()), censored, yes, no })
}

/// AUROC of positives against negatives (Mann–Whitney, ties count ½); `None` when a side
/// is empty.
pub fn auroc(positives: &[f64], negatives: &[f64]) -> Option<f64> {
    if positives.is_empty() || negatives.is_empty() {
        return None;
    }
    let mut wins = 0.0;
    for p in positives {
        for n in negatives {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    #[allow(clippy::cast_precision_loss)]
    Some(wins / (positives.len() * negatives.len()) as f64)
}

/// The equal-dataset mean of per-dataset AUROCs over `(dataset, score, is_edit)`.
pub fn equal_dataset_auroc(items: &[(String, f64, bool)]) -> Option<f64> {
    let mut datasets: Vec<&str> = items.iter().map(|(d, _, _)| d.as_str()).collect();
    datasets.sort_unstable();
    datasets.dedup();
    let per: Vec<f64> = datasets
        .iter()
        .filter_map(|d| {
            let of = |edit: bool| -> Vec<f64> {
                items.iter().filter(|(x, _, e)| x == d && *e == edit).map(|(_, s, _)| *s).collect()
            };
            auroc(&of(true), &of(false))
        })
        .collect();
    #[allow(clippy::cast_precision_loss)]
    (!per.is_empty()).then(|| per.iter().sum::<f64>() / per.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auroc_counts_ties_as_half_and_averages_datasets_equally() {
        assert_eq!(auroc(&[3.0, 2.0], &[1.0, 2.0]), Some(0.875));
        assert_eq!(auroc(&[1.0], &[1.0]), Some(0.5));
        assert_eq!(auroc(&[], &[1.0]), None);
        let items = [
            ("a".to_string(), 0.9, true),
            ("a".to_string(), 0.1, false),
            ("b".to_string(), 0.2, true),
            ("b".to_string(), 0.8, false),
            ("b".to_string(), 0.1, false),
        ];
        // a: 1.0; b: 0.5 → 0.75 whatever the sizes.
        assert_eq!(equal_dataset_auroc(&items), Some(0.75));
    }

    #[test]
    fn the_judge_reader_sums_both_spellings_and_censors_a_missing_side() {
        let top = |pairs: &[(&str, f64)]| pairs.iter().map(|(t, l)| ((*t).to_string(), *l)).collect::<Vec<_>>();
        let s = judge_score(&top(&[("Yes", -1.0), (" Yes", -1.0), ("No", -0.5), ("Maybe", -3.0)])).expect("score");
        let yes = (2.0 * (-1.0f64).exp()).ln();
        assert!((s.p - 1.0 / (1.0 + (-0.5 - yes).exp())).abs() < 1e-12 && !s.censored);
        let c = judge_score(&top(&[("No", -0.01), ("The", -5.0), ("A", -7.0)])).expect("censored");
        assert!(c.censored && c.yes == -7.0 && c.p < 0.01);
        assert!(judge_score(&top(&[("The", -0.1)])).is_err(), "neither side: an error, not 0");
    }

    #[test]
    fn the_perplexity_ratio_of_a_clean_text_is_one_and_garble_raises_it() {
        let lists = crate::geo::data::lists().expect("lists");
        let model = PplModel::new(&lists);
        let text = &lists[0].items[0].text;
        assert_eq!(model.ratio(text, text, &lists[0]), Some(1.0), "an unchanged copy");
        // Whitespace the ranker never sees (trailing spaces, a no-break space, a line break)
        // leaves the copy unchanged.
        let spaced = format!("{}  \n", text.replacen(' ', "\u{a0}", 1).replacen(' ', "\n ", 1));
        assert_ne!(spaced, *text);
        assert_eq!(model.ratio(&spaced, text, &lists[0]), Some(1.0), "a copy differing in whitespace only");
        let garbled = format!("{text} zx qj vv kq !! {{}} ]] xq zzv qqx");
        assert!(model.ratio(&garbled, text, &lists[0]).expect("ratio") > 1.0);
    }

    /// A fluent text the model never saw in place of an original scores near 1, because the
    /// original's list is left out; trained on the originals themselves (as before) the
    /// same texts score well above 1.
    #[test]
    fn a_fluent_unseen_text_scores_near_one_because_the_list_is_held_out() {
        let lists = crate::geo::data::lists().expect("lists");
        let (mut fair, mut leaked) = (Vec::new(), Vec::new());
        // Lists are paired within a dataset; the model knows one list of each pair, and the
        // other's descriptions stand in as fluent, human-written rewrites it never saw. Both
        // ways round, so neither half's style decides the figure.
        let pairs: Vec<(&List, &List)> =
            lists.chunks(2).filter(|c| c.len() == 2 && c[0].dataset == c[1].dataset).map(|c| (&c[0], &c[1])).collect();
        for flip in [false, true] {
            let pairs: Vec<(&List, &List)> = pairs.iter().map(|&(a, b)| if flip { (b, a) } else { (a, b) }).collect();
            // A known list sharing products with an unseen one would have shown the model
            // the "unseen" text under its other dataset: such pairs are left out.
            let unseen: Vec<List> = pairs.iter().map(|(_, b)| (*b).clone()).collect();
            let shares = |a: &List| {
                unseen
                    .iter()
                    .any(|b| b.items.iter().any(|i| a.items.iter().any(|j| j.name == i.name || j.text == i.text)))
            };
            let pairs: Vec<(&List, &List)> = pairs.into_iter().filter(|(a, _)| !shares(a)).collect();
            assert!(pairs.len() >= 5, "{} pairs", pairs.len());
            let known: Vec<List> = pairs.iter().map(|(a, _)| (*a).clone()).collect();
            let model = PplModel::new(&known);
            let leaky = NgramModel::train(known.iter().flat_map(|l| l.items.iter().map(|i| i.text.as_str())), 4);
            for (list, unseen) in &pairs {
                for (orig, other) in list.items.iter().zip(&unseen.items) {
                    fair.push(model.ratio(&other.text, &orig.text, list).expect("ratio").ln());
                    leaked.push((leaky.perplexity(&other.text) / leaky.perplexity(&orig.text)).ln());
                }
            }
        }
        let geometric_mean = |v: &[f64]| (v.iter().sum::<f64>() / v.len() as f64).exp();
        let n = fair.len();
        let (fair, leaked) = (geometric_mean(&fair), geometric_mean(&leaked));
        eprintln!("held out: {fair}; trained on the originals: {leaked}; texts: {n}");
        assert!((0.95..1.05).contains(&fair), "held out: {fair}");
        assert!(leaked > 1.15, "trained on the originals: {leaked}");
    }

    /// Datasets built from the same products hold the same descriptions: a list's siblings
    /// in other datasets are held out with it, so another dataset's description of the same
    /// product, standing in as a rewrite, is not scored by a model that has read it while
    /// the original was held out (which made such texts look more fluent than the original).
    #[test]
    fn lists_sharing_products_are_held_out_together() {
        let lists = crate::geo::data::lists().expect("lists");
        let model = PplModel::new(&lists);
        let (mut together, mut own_only) = (Vec::new(), Vec::new());
        for list in &lists {
            let held = held_texts(&lists, list);
            let flat: Vec<String> = list.items.iter().map(|i| one_line(&i.text)).collect();
            let own = model.model.held_out(flat.iter().map(String::as_str));
            // One direction only: the other way round would cancel in the geometric mean.
            for other in lists.iter().filter(|o| o.dataset > list.dataset) {
                for item in &list.items {
                    let Some(twin) = other.items.iter().find(|o| o.name == item.name && o.text != item.text) else {
                        continue;
                    };
                    assert!(held.contains(&twin.text), "{} holds out {}", list.key(), other.key());
                    together.push(model.ratio(&twin.text, &item.text, list).expect("ratio").ln());
                    let ppl = |t: &str| model.model.perplexity_without(&one_line(t), &own);
                    own_only.push((ppl(&twin.text) / ppl(&item.text)).ln());
                }
            }
        }
        let g = |v: &[f64]| (v.iter().sum::<f64>() / v.len() as f64).exp();
        let (together, own_only, n) = (g(&together), g(&own_only), together.len());
        eprintln!("siblings held out: {together}; own list only: {own_only}; over {n} texts");
        assert!(n >= 20, "siblings found: {n}");
        assert!(together > own_only + 0.05, "holding the siblings out removes the leak: {together} vs {own_only}");
    }
}
