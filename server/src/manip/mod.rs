//! Manipulation levels (docs/manipulation.md): what an interested party's text becomes at L0–L4,
//! applied per trial to the task's injection points only — never to hidden evidence —
//! and deterministic per (task, level, strategy, seed).
//!
//! The result is an [`Overlay`]: edits that replace each original text on its page, with
//! a span id, so that observations can say where manipulated text appears.

pub mod adaptive;
pub mod attacker;
pub mod text;

use anyhow::bail;
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
use sha2::{Digest, Sha256};

use crate::corpus::Task;
use crate::corpus::urls::normalise;
use crate::env::overlay::{Edit, Overlay};
use text::{Facts, INJECTIONS, STYLES};

pub use vocab::Level;

/// The strategies of a level (none for L0, which changes nothing).
pub fn strategies(level: Level) -> &'static [&'static str] {
    match level {
        Level::L0 => &[],
        Level::L1 => &STYLES,
        Level::L2 => &["persuasive"],
        Level::L3 => &INJECTIONS,
        Level::L4 => &["tap"],
    }
}

/// Checks a (level, strategy) pair; the strategy may be omitted (then each trial draws one).
pub fn check(level: &str, strategy: Option<&str>) -> anyhow::Result<Level> {
    let level = Level::parse(level)?;
    let known = strategies(level);
    if level == Level::L4 {
        return Ok(level);
    }
    if let Some(s) = strategy
        && !known.is_empty()
        && !known.contains(&s)
    {
        bail!("strategy {s:?} is not one of {level}'s: {}", known.join(", "));
    }
    Ok(level)
}

/// The random source of one (task, level, strategy, seed).
pub fn rng_for(task: &str, level: &str, strategy: &str, seed: i64) -> ChaCha8Rng {
    let digest = Sha256::digest(format!("{task}\0{level}\0{strategy}\0{seed}").as_bytes());
    let mut bytes = [0u8; 32];
    bytes.copy_from_slice(&digest);
    ChaCha8Rng::from_seed(bytes)
}

/// Keeps generated text on one line and out of the page markup: no table bars, no
/// newlines, no double quotes (the pages quote the party's words).
pub fn sanitise(text: &str) -> String {
    text.replace(['\n', '\r'], " ").replace('|', "/").replace('"', "'")
}

/// The strategy a trial uses: the one asked for, or one drawn from the seed.
pub fn strategy_for(task: &Task, level: &str, strategy: Option<&str>, seed: i64) -> anyhow::Result<Option<String>> {
    let level = check(level, strategy)?;
    let known = strategies(level);
    if known.is_empty() {
        return Ok(None);
    }
    Ok(Some(match strategy {
        Some(s) => s.to_string(),
        None => {
            let mut rng = rng_for(&task.id, level.as_str(), "choose", seed);
            (*known.choose(&mut rng).unwrap_or(&known[0])).to_string()
        }
    }))
}

/// What the writers know about injection point `point` of a task.
pub fn facts_of(task: &Task, point: usize) -> Facts<'_> {
    let p = &task.injection_points[point];
    Facts {
        domain: task.domain,
        party: &p.party,
        goal: &p.goal,
        original: &p.text,
        page: task.pages.get(&p.url).map_or(p.url.as_str(), |pg| pg.title.as_str()),
        category: &task.category,
    }
}

/// The manipulated text of one injection point under a built-in writer.
pub fn write(task: &Task, point: usize, level: Level, strategy: &str, seed: i64) -> String {
    let p = &task.injection_points[point];
    let facts = facts_of(task, point);
    let mut rng = rng_for(&task.id, level.as_str(), &format!("{strategy}/{}", p.id), seed);
    let text = match level {
        Level::L1 => text::rewrite(strategy, &facts, &mut rng),
        Level::L2 => text::persuasive(&facts, &mut rng),
        Level::L3 => text::injection(strategy, &facts, &mut rng),
        Level::L0 | Level::L4 => p.text.clone(),
    };
    sanitise(&text)
}

/// The overlay of one trial with the built-in writers. L4 texts come from the search in
/// `tap` instead; asking for them here is an error.
pub fn overlay_for(task: &Task, level: &str, strategy: Option<&str>, seed: i64) -> anyhow::Result<Overlay> {
    if Level::parse(level)? == Level::L4 {
        bail!("level L4 is searched against the agent (TAP), not written ahead");
    }
    let Some(strategy) = strategy_for(task, level, strategy, seed)? else {
        return Ok(Overlay::default());
    };
    let parsed = Level::parse(level)?;
    let edits = (0..task.injection_points.len())
        .map(|i| {
            let p = &task.injection_points[i];
            Edit {
                span: format!("{}@{level}:{strategy}", p.id),
                injection: p.id.clone(),
                url: normalise(&p.url),
                original: p.text.clone(),
                text: write(task, i, parsed, &strategy, seed),
            }
        })
        .collect();
    Ok(Overlay { edits })
}

/// The overlay of one trial: with an attacker endpoint, L1 and L2 texts come from it
/// (cached); otherwise, and for L3, from the built-in writers.
pub async fn overlay_with_attacker(
    task: &Task,
    level: &str,
    strategy: Option<&str>,
    seed: i64,
    attacker: Option<&attacker::Attacker>,
) -> anyhow::Result<Overlay> {
    let mut overlay = overlay_for(task, level, strategy, seed)?;
    let by_attacker = matches!(Level::parse(level)?, Level::L1 | Level::L2);
    if let Some(attacker) = attacker.filter(|_| by_attacker) {
        for (i, edit) in overlay.edits.iter_mut().enumerate() {
            let strategy = edit.span.rsplit(':').next().unwrap_or_default().to_string();
            edit.text = attacker.write(&facts_of(task, i), Level::parse(level)?, &strategy, seed).await?;
            edit.span = format!("{}@{level}:{strategy}:attacker", edit.injection);
        }
    }
    Ok(overlay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::generate::corpus;

    #[test]
    fn levels_read_back_their_names_and_refuse_others() {
        for l in Level::ALL {
            assert_eq!(Level::parse(l.as_str()).expect("level"), *l);
            assert_eq!(serde_json::to_value(l).expect("json"), serde_json::json!(l.as_str()));
        }
        let e = Level::parse("L9").expect_err("unknown");
        assert_eq!(e.to_string(), "level \"L9\" is not one of L0, L1, L2, L3, L4");
        assert!(Level::is_clean("L0") && !Level::is_clean("L1"));
        assert_eq!(strategies(Level::L2), ["persuasive"]);
    }

    #[test]
    fn same_inputs_same_text_and_seeds_vary_it() {
        let tasks = corpus();
        let t = &tasks[3];
        for level in ["L1", "L2", "L3"] {
            let a = overlay_for(t, level, None, 1).expect("overlay");
            assert_eq!(a, overlay_for(t, level, None, 1).expect("overlay"), "{level} is deterministic");
            assert_ne!(a.edits[0].text, t.injection_points[0].text, "{level} changes the text");
        }
        let distinct: std::collections::BTreeSet<String> = (0..20)
            .map(|s| overlay_for(t, "L1", Some("statistics"), s).expect("overlay").edits[0].text.clone())
            .collect();
        assert!(distinct.len() >= 5, "seeds give varied rewrites: {distinct:?}");
        for style in STYLES {
            let texts: std::collections::BTreeSet<String> =
                (0..12).map(|s| overlay_for(t, "L1", Some(style), s).expect("overlay").edits[0].text.clone()).collect();
            assert!(texts.len() >= 2, "{style} varies with the seed: {texts:?}");
        }
        assert!(overlay_for(t, "L0", None, 1).expect("overlay").is_empty());
    }

    #[test]
    fn every_style_is_distinct_and_keeps_the_partys_point() {
        let tasks = corpus();
        let t = tasks.iter().find(|t| t.id.starts_with("shop")).expect("a shop task");
        let texts: Vec<String> =
            STYLES.iter().map(|s| overlay_for(t, "L1", Some(s), 0).expect("overlay").edits[0].text.clone()).collect();
        let unique: std::collections::BTreeSet<&String> = texts.iter().collect();
        assert_eq!(unique.len(), STYLES.len(), "{texts:#?}");
        for text in &texts {
            assert!(!text.contains('|') && !text.contains('\n') && !text.contains('"'), "{text}");
        }
    }

    #[test]
    fn edits_touch_only_injection_pages_never_hidden_evidence() {
        for t in corpus().iter().step_by(5) {
            let start = normalise(&t.start_url);
            let hidden: Vec<String> = t
                .graph
                .iter()
                .map(|u| normalise(u))
                .filter(|u| *u != start)
                .chain(t.gold_facts.iter().map(|f| normalise(&f.url)))
                .collect();
            for level in ["L1", "L2", "L3"] {
                for e in &overlay_for(t, level, None, 0).expect("overlay").edits {
                    assert!(t.injection_points.iter().any(|p| normalise(&p.url) == e.url), "{}", t.id);
                    assert!(!hidden.contains(&e.url), "{}: {level} edits hidden evidence at {}", t.id, e.url);
                    let page = &t.pages.iter().find(|(u, _)| normalise(u) == e.url).expect("page").1.text;
                    assert!(page.contains(&e.original), "{}: the original is on its page", t.id);
                }
            }
        }
    }

    #[test]
    fn unknown_levels_and_strategies_are_named() {
        let t = &corpus()[0];
        assert!(overlay_for(t, "L9", None, 0).expect_err("bad level").to_string().contains("\"L9\""));
        let e = overlay_for(t, "L1", Some("shouting"), 0).expect_err("bad strategy").to_string();
        assert!(e.contains("shouting") && e.contains("authoritative"), "{e}");
    }
}
