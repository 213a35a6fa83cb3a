//! A GEO run on the durable queue: its spec (stored in the run's `geo` field) and its
//! trials, one per (target, ranker, method): `task_id` = `geo:DATASET/LIST/INDEX`, `agent`
//! = the ranker, `level` = the method, `condition` = `geo`, `seed` = the base seed. Each
//! trial stores one step per order (an [`super::OrderRecord`]), so a killed worker resumes
//! at the next order and a finished trial is never ranked twice.

use std::collections::BTreeMap;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::Protocol;
use super::data::{DATASETS, List};
use super::methods::Method;
use super::template::Template;
use crate::db::NewTrial;
use crate::llm::EndpointSpec;

/// The condition every GEO trial carries.
pub const CONDITION: &str = "geo";

/// What a GEO run covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GeoSpec {
    /// Dataset keys, in dataset order.
    pub datasets: Vec<String>,
    /// Only these lists (`dataset/list`); empty: every list of the datasets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lists: Vec<String>,
    pub rankers: Vec<String>,
    pub methods: Vec<String>,
    pub protocol: Protocol,
    /// The chat rankers' endpoints by ranker name (offline rankers need none).
    #[serde(default)]
    pub endpoints: BTreeMap<String, EndpointSpec>,
    /// The attacker endpoint (`roles.attacker`) that writes C-SEO and Zero-Shot texts;
    /// without one the built-in templates write them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacker: Option<EndpointSpec>,
    /// The shape and budget of TAP searches.
    #[serde(default)]
    pub tap: super::tap::TapParams,
    /// Cross-encoder rankers (`/rerank` endpoints) by ranker name: one pass per target,
    /// no orders.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub rerankers: BTreeMap<String, EndpointSpec>,
    /// The attacker's prompts (Mirage's own unless template files replaced them).
    #[serde(default)]
    pub prompts: AttackPrompts,
    /// How the run keys its stored texts ([`KEYS_NOW`] for runs planned now; a run reads
    /// its texts as they were keyed when it was planned). 0: by variant alone; 1: with a
    /// recipe hash; 2: a TAP recipe names the ranker endpoint searched on (URL, model,
    /// sampling); 3: an attacker-written text's recipe names its endpoint (URL and model),
    /// so another server answering to the same model name writes its own texts.
    #[serde(default)]
    pub key_version: u8,
    /// What runs planned before `key_version` stored instead of it (read, never written).
    #[serde(default, skip_serializing)]
    pub recipe_keys: bool,
    #[serde(default, skip_serializing)]
    pub ranker_in_recipe: bool,
}

/// The text keys of runs planned now (see [`GeoSpec::key_version`]).
pub const KEYS_NOW: u8 = 3;

/// The prompts of the attacker roles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AttackPrompts {
    pub cseo: Template,
    pub zero_shot: Template,
    pub tap: Template,
}

impl Default for AttackPrompts {
    fn default() -> AttackPrompts {
        AttackPrompts {
            cseo: super::methods::cseo_builtin(),
            zero_shot: super::methods::zero_shot_builtin(),
            tap: super::tap::builtin(),
        }
    }
}

/// What decides a generated text besides its variant: the prompt's version and the
/// sampling for endpoint texts; for TAP also the search's shape, the proposer and the
/// protocol and the endpoint (`ranker`'s, or for a transfer the source's) the ranker was
/// asked under. `None` for texts that depend on the variant alone (offline writers,
/// built-in C-SEO and Zero-Shot templates, imports). A short hash.
pub fn recipe(spec: &GeoSpec, level: &str, ranker: &str) -> Option<String> {
    use super::methods::{REWRITE, SEARCH, SNIPPET};
    let endpoint = level.contains('@');
    // The attacker's server by URL and model, so that texts are not shared between servers
    // that name their models alike (from key version 3).
    let written = |settings: serde_json::Value| match spec.attacker.as_ref().filter(|_| spec.keys() >= 3) {
        Some(a) => serde_json::json!([settings, a.base_url.trim_end_matches('/'), a.model]),
        None => settings,
    };
    let settings = match Method::parse(level).ok()? {
        Method::Cseo(_) if endpoint => written(serde_json::json!([spec.prompts.cseo.version, REWRITE])),
        Method::ZeroShot if endpoint => written(serde_json::json!([spec.prompts.zero_shot.version, SNIPPET])),
        Method::Tap | Method::Transfer(_) => {
            let proposer = if endpoint {
                written(serde_json::json!([spec.prompts.tap.version, SEARCH]))
            } else {
                "builtin".into()
            };
            let p = &spec.protocol;
            let mut settings = serde_json::json!({
                "proposer": proposer, "search": spec.tap, "prompt": p.prompt.version, "system_role": p.system_role,
                "parser": p.parser, "orders": p.orders, "base_seed": p.base_seed, "k": p.k,
            });
            let searched_on = level.split_once('>').map_or(ranker, |(_, source)| source);
            if let Some(endpoint) = spec.endpoints.get(searched_on).filter(|_| spec.keys() >= 2) {
                settings["ranker"] = endpoint.answer_identity().into();
            }
            settings
        }
        _ => return None,
    };
    use sha2::{Digest, Sha256};
    Some(hex::encode(Sha256::digest(settings.to_string().as_bytes()))[..10].to_string())
}

/// The key a trial's text is stored under: a TAP text belongs to the ranker it was
/// searched on (`tap@m>bm25`), a transfer row reads that text; a text with a recipe
/// carries it after `#` (`cseo:quotes@m#1f2e3d4c5b`).
pub fn text_key(spec: &GeoSpec, level: &str, ranker: &str) -> String {
    let base = match Method::parse(level) {
        Ok(Method::Tap) => format!("{level}>{ranker}"),
        _ => level.to_string(),
    };
    match recipe(spec, level, ranker).filter(|_| spec.keys() >= 1) {
        Some(r) => format!("{base}#{r}"),
        None => base,
    }
}

impl GeoSpec {
    /// The run's key version, read from the flags of a run planned before there was one.
    pub fn keys(&self) -> u8 {
        if self.key_version > 0 {
            self.key_version
        } else {
            u8::from(self.recipe_keys) + u8::from(self.recipe_keys && self.ranker_in_recipe)
        }
    }

    /// The GEO part of a stored GEO ranking run, read from its spec's `geo` field (the runs
    /// layer above reads the whole spec as a `RunKind`; this layer needs only its own part).
    pub fn of_run(run: &crate::db::RunRow) -> anyhow::Result<GeoSpec> {
        #[derive(Deserialize)]
        struct Stored {
            geo: Option<GeoSpec>,
        }
        let stored: Stored = serde_json::from_str(&run.spec)
            .with_context(|| format!("run {}: its stored spec is unreadable", run.run_id))?;
        stored.geo.with_context(|| format!("run {} is not a GEO ranking run", run.run_id))
    }

    /// A spec with these datasets, rankers and methods under the default protocol, with no
    /// endpoints (offline rankers, built-in writers and proposers).
    pub fn offline(datasets: &[&str], rankers: &[&str], methods: &[&str]) -> GeoSpec {
        let own = |xs: &[&str]| xs.iter().map(ToString::to_string).collect::<Vec<_>>();
        GeoSpec {
            datasets: own(datasets),
            lists: Vec::new(),
            rankers: own(rankers),
            methods: own(methods),
            protocol: Protocol::default(),
            endpoints: BTreeMap::new(),
            attacker: None,
            tap: Default::default(),
            rerankers: BTreeMap::new(),
            prompts: AttackPrompts::default(),
            key_version: KEYS_NOW,
            recipe_keys: false,
            ranker_in_recipe: false,
        }
    }
}

/// The dataset keys of `all` or a comma-separated list; an unknown key is named.
pub fn datasets(filter: &[String]) -> anyhow::Result<Vec<String>> {
    let known: Vec<&str> = DATASETS.iter().map(|(k, _)| *k).collect();
    if filter.iter().any(|d| d == "all") {
        return Ok(known.iter().map(ToString::to_string).collect());
    }
    for d in filter {
        if !known.contains(&d.as_str()) {
            bail!("dataset: {d:?} is not one of all, {}", known.join(", "));
        }
    }
    Ok(known.iter().filter(|k| filter.iter().any(|d| d == *k)).map(ToString::to_string).collect())
}

/// What a person asks of a GEO run, as the command line gives it, before the configuration
/// resolves its names into endpoints.
pub struct GeoRequest {
    /// Offline rankers (`bm25`, `position`) or endpoints of the configuration.
    pub rankers: Vec<String>,
    /// Endpoints that rerank (a cross-encoder each), ranked beside the rankers.
    pub rerankers: Vec<String>,
    /// `DATASET/LIST` names; empty for whole datasets.
    pub lists: Vec<String>,
    /// Dataset names, or `all` (read when `lists` is empty).
    pub datasets: Vec<String>,
    /// Method names; `cseo:*` stands for the ten C-SEO styles.
    pub methods: Vec<String>,
    pub protocol: Protocol,
    /// Whether TAP's search orders are kept apart from the evaluation orders.
    pub tap_orders_apart: bool,
    pub prompts: AttackPrompts,
    /// `builtin` (the offline writers), an endpoint's name, or none for the configuration's
    /// attacker role.
    pub attacker: Option<String>,
}

/// The run spec of a request: rankers and rerankers resolved to the configuration's
/// endpoints (an unknown name is refused, naming its option), the datasets of the lists (or
/// the datasets asked for) and the methods expanded.
pub fn spec_of(request: &GeoRequest, config: &crate::config::Config) -> anyhow::Result<GeoSpec> {
    let mut endpoints = BTreeMap::new();
    let mut rerankers = BTreeMap::new();
    let mut rankers = request.rankers.clone();
    for name in &request.rerankers {
        rerankers.insert(name.clone(), config.endpoint("--reranker", name)?.clone());
        rankers.push(name.clone());
    }
    for name in &request.rankers {
        if super::rank::offline(name).is_none() {
            let spec = config.endpoints.get(name).with_context(|| {
                format!("--ranker: {name:?} is neither an offline ranker (bm25, position) nor an endpoint of the config file")
            })?;
            endpoints.insert(name.clone(), spec.clone());
        }
    }
    let datasets = if request.lists.is_empty() {
        datasets(&request.datasets).context("--dataset")?
    } else {
        let of_lists: Vec<String> =
            request.lists.iter().map(|l| l.split_once('/').map_or(l.as_str(), |(d, _)| d).to_string()).collect();
        datasets(&of_lists).context("--list")?
    };
    Ok(GeoSpec {
        datasets,
        lists: request.lists.clone(),
        rankers,
        methods: expand_methods(&request.methods),
        protocol: request.protocol.clone(),
        endpoints,
        tap: super::tap::TapParams { apart: request.tap_orders_apart, ..Default::default() },
        rerankers,
        prompts: request.prompts.clone(),
        key_version: KEYS_NOW,
        recipe_keys: false,
        ranker_in_recipe: false,
        attacker: match request.attacker.as_deref() {
            Some("builtin") => None,
            None => config.attacker().map(|(_, spec)| spec.clone()),
            Some(name) => Some(config.endpoint("--attacker", name)?.clone()),
        },
    })
}

/// `cseo:*` stands for the ten C-SEO styles.
pub fn expand_methods(methods: &[String]) -> Vec<String> {
    methods
        .iter()
        .flat_map(|m| match m.as_str() {
            "cseo:*" => crate::manip::text::STYLES.iter().map(|s| format!("cseo:{s}")).collect(),
            _ => vec![m.clone()],
        })
        .collect()
}

/// The lists of the chosen datasets (`all` for every list).
pub fn chosen(lists: &[List], dataset: &[String]) -> anyhow::Result<Vec<List>> {
    if dataset.iter().any(|d| d == "all") {
        return Ok(lists.to_vec());
    }
    for d in dataset {
        if !DATASETS.iter().any(|(k, _)| k == d) {
            let known: Vec<&str> = DATASETS.iter().map(|(k, _)| *k).collect();
            bail!("--dataset: {d:?} is not one of all, {}", known.join(", "));
        }
    }
    Ok(lists.iter().filter(|l| dataset.contains(&l.dataset)).cloned().collect())
}

/// The method variants a spec runs (generated methods carry the attacker's model).
pub fn variants(spec: &GeoSpec) -> anyhow::Result<Vec<String>> {
    let model = spec.attacker.as_ref().map(|a| a.model.as_str());
    spec.methods.iter().map(|m| super::methods::variant(m, model)).collect()
}

/// The trial's task id of a target (`index` 1-based).
pub fn task_id(list: &List, index: usize) -> String {
    list.target(index).to_string()
}

/// A GEO trial under its own names. Agent and GEO runs share the trials table, so a GEO
/// trial's row keeps its ranker in `agent`, its method (variant) in `level`, its target in
/// `task_id` and [`CONDITION`] as its condition; [`planned`] writes that shape and
/// these accessors read it, and nothing else reads a GEO trial's columns by their agent names.
pub trait GeoTrial {
    /// The ranker's name (a spec's ranker, chat or cross-encoder).
    fn ranker(&self) -> &str;
    /// The method variant: `clean`, `stuff`, `tap`, `cseo:fluency@model`, an import's name.
    fn method(&self) -> &str;
    /// The target's id, `geo:DATASET/LIST/INDEX` (see [`vocab::GeoTarget`]).
    fn target_id(&self) -> &str;
}

/// The target of a stored trial that is a GEO trial: a `geo:` task id under the [`CONDITION`]
/// `geo`. `None` for an agent trial, whatever its task id reads like.
pub fn geo_target(t: &crate::db::TrialRow) -> Option<vocab::GeoTarget> {
    if t.condition != CONDITION {
        return None;
    }
    vocab::TaskRef::geo(&t.task_id)
}

/// A stored and a planned trial keep a GEO trial's names in the same columns.
macro_rules! geo_trial_columns {
    ($($row:ty),*) => {$(
        impl GeoTrial for $row {
            fn ranker(&self) -> &str {
                &self.agent
            }
            fn method(&self) -> &str {
                self.level.as_str()
            }
            fn target_id(&self) -> &str {
                &self.task_id
            }
        }
    )*};
}

geo_trial_columns!(crate::db::TrialRow, NewTrial);

/// The trial that ranks `list`'s item `index` (1-based) with `ranker` under `method`.
pub fn planned(list: &List, index: usize, ranker: &str, method: &str, seed: i64) -> NewTrial {
    NewTrial {
        task_id: task_id(list, index),
        agent: ranker.to_string(),
        level: method.into(),
        condition: CONDITION.into(),
        seed,
    }
}

/// The list and 0-based target of a trial's task id.
pub fn target_of<'a>(lists: &'a [List], task_id: &str) -> anyhow::Result<(&'a List, usize)> {
    let target: vocab::GeoTarget = task_id.parse()?;
    let (dataset, category, index) = (&target.dataset, &target.list, target.index);
    let list = lists
        .iter()
        .find(|l| &l.dataset == dataset && &l.category == category)
        .with_context(|| format!("{task_id:?}: no list {dataset}/{category}"))?;
    if index > list.items.len() {
        bail!("{task_id:?}: index {index} is outside 1..={}", list.items.len());
    }
    Ok((list, index - 1))
}

/// Refuses a replaced attacker prompt that no trial would send: the built-in writers and
/// proposer ask no model, and a prompt for a method the run does not have is not used.
fn check_prompts_used(spec: &GeoSpec, variants: &[String]) -> anyhow::Result<()> {
    let builtin = AttackPrompts::default();
    let asked = |wanted: fn(&Method) -> bool| {
        variants.iter().any(|v| v.contains('@') && Method::parse(v).is_ok_and(|m| wanted(&m)))
    };
    let checks = [
        ("--cseo-prompt", spec.prompts.cseo != builtin.cseo, asked(|m| matches!(m, Method::Cseo(_)))),
        ("--zero-shot-prompt", spec.prompts.zero_shot != builtin.zero_shot, asked(|m| matches!(m, Method::ZeroShot))),
        ("--tap-prompt", spec.prompts.tap != builtin.tap, asked(|m| matches!(m, Method::Tap))),
    ];
    for (flag, replaced, used) in checks {
        if replaced && !used {
            bail!(
                "{flag}: no trial of this run asks an attacker endpoint with it (the built-in writers and proposer \
                 ask no model; give --attacker NAME and a method it writes)"
            );
        }
    }
    Ok(())
}

/// Checks a spec and expands it into trials (list order, then target, ranker, method).
pub fn plan(lists: &[List], spec: &GeoSpec) -> anyhow::Result<Vec<NewTrial>> {
    if spec.rankers.is_empty() || spec.methods.is_empty() || spec.datasets.is_empty() {
        bail!("a GEO run needs at least one dataset, ranker and method");
    }
    for ranker in &spec.rankers {
        if super::rank::offline(ranker).is_none()
            && !spec.endpoints.contains_key(ranker)
            && !spec.rerankers.contains_key(ranker)
        {
            bail!("ranker: {ranker:?} is neither an offline ranker (bm25, position) nor a configured endpoint");
        }
    }
    let variants = variants(spec)?;
    // A text named `@X` is written by X and no one else: refused now, not at trial time.
    for variant in variants.iter().filter(|v| v.contains('@') && Method::parse(v).is_ok_and(|m| m.generated())) {
        match &spec.attacker {
            Some(attacker) => super::methods::check_author(variant, &attacker.model).context("method")?,
            None => bail!("method: {variant} is written by an attacker endpoint, and this run has none"),
        }
    }
    check_prompts_used(spec, &variants)?;
    if spec.protocol.k == 0 {
        bail!("k: at least one order per target");
    }
    for key in &spec.lists {
        if !lists.iter().any(|l| spec.datasets.contains(&l.dataset) && &format!("{}/{}", l.dataset, l.category) == key)
        {
            bail!("list: {key:?} is not a list of the run's datasets (see `mirage geo datasets --json`)");
        }
    }
    let chosen = |l: &&List| {
        spec.datasets.contains(&l.dataset)
            && (spec.lists.is_empty() || spec.lists.contains(&format!("{}/{}", l.dataset, l.category)))
    };
    let mut trials = Vec::new();
    for list in lists.iter().filter(chosen) {
        for index in 1..=list.items.len() {
            for ranker in &spec.rankers {
                for method in &variants {
                    trials.push(planned(list, index, ranker, method, spec.protocol.base_seed));
                }
            }
        }
    }
    Ok(trials)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::data::lists;

    #[test]
    fn plans_one_trial_per_target_ranker_and_method() {
        let lists = lists().expect("lists");
        let spec = GeoSpec {
            datasets: datasets(&["stsdata".into(), "cseo".into()]).expect("datasets"),
            lists: Vec::new(),
            rankers: vec!["bm25".into(), "position".into()],
            methods: vec!["clean".into(), "stuff".into()],
            protocol: Protocol::default(),
            endpoints: BTreeMap::new(),
            attacker: None,
            tap: Default::default(),
            rerankers: BTreeMap::new(),
            prompts: AttackPrompts::default(),
            key_version: KEYS_NOW,
            recipe_keys: false,
            ranker_in_recipe: false,
        };
        assert_eq!(spec.datasets, ["stsdata", "cseo"], "dataset order, not the filter's");
        let trials = plan(&lists, &spec).expect("plan");
        assert_eq!(trials.len(), 90 * 2 * 2);
        let (list, t) = target_of(&lists, &trials[0].task_id).expect("target");
        assert_eq!((list.key().as_str(), t), ("stsdata|books", 0));
        assert!(plan(&lists, &GeoSpec { rankers: vec!["gpt".into()], ..spec.clone() }).is_err());
        assert!(plan(&lists, &GeoSpec { methods: vec!["magic".into()], ..spec.clone() }).is_err());
        assert!(datasets(&["nope".into()]).is_err());
        let two = GeoSpec { lists: vec!["cseo/books".into(), "stsdata/cameras".into()], ..spec.clone() };
        let chosen = plan(&lists, &two).expect("two lists");
        assert_eq!(chosen.len(), 20 * 2 * 2, "two lists of ten");
        assert!(
            chosen
                .iter()
                .all(|t| t.task_id.starts_with("geo:cseo/books/") || t.task_id.starts_with("geo:stsdata/cameras/"))
        );
        let err = plan(&lists, &GeoSpec { lists: vec!["ragroll/laptop".into()], ..spec.clone() }).unwrap_err();
        assert!(err.to_string().contains("\"ragroll/laptop\" is not a list of the run's datasets"), "{err}");
        assert!(target_of(&lists, "geo:stsdata/books/11").is_err());
        assert!(target_of(&lists, "shop-example-01").is_err());
    }

    /// What a trial would only find out later is refused when the run is planned: a text
    /// named for another attacker, an `@` text without one, a prompt file no call sends.
    #[test]
    fn authors_and_prompts_are_checked_when_the_run_is_planned() {
        let lists = lists().expect("lists");
        let spec = GeoSpec::offline(&["cseo"], &["bm25"], &["cseo:fluency@other"]);
        let err = plan(&lists, &spec).unwrap_err();
        assert!(format!("{err:#}").contains("written by an attacker endpoint, and this run has none"), "{err:#}");
        let attacker = Some(EndpointSpec::new("http://127.0.0.1:9/v1", "m"));
        let err = plan(&lists, &GeoSpec { attacker: attacker.clone(), ..spec.clone() }).unwrap_err();
        assert!(format!("{err:#}").contains("its texts are written by other, and this run's attacker is m"), "{err:#}");
        let mut prompts = AttackPrompts::default();
        prompts.cseo.version = "file:abc".into();
        let builtin = GeoSpec { prompts, ..GeoSpec::offline(&["cseo"], &["bm25"], &["cseo:fluency"]) };
        let err = plan(&lists, &builtin).unwrap_err();
        assert!(err.to_string().starts_with("--cseo-prompt: no trial of this run asks an attacker"), "{err}");
        assert!(plan(&lists, &GeoSpec { attacker, ..builtin }).is_ok(), "with an attacker the prompt is sent");
    }

    #[test]
    fn a_text_key_names_the_prompt_and_settings_that_wrote_the_text() {
        let spec = GeoSpec::offline(&["cseo"], &["bm25"], &["clean"]);
        let key = |spec: &GeoSpec, level: &str| text_key(spec, level, "bm25");
        assert_eq!(key(&spec, "stuff"), "stuff");
        assert_eq!(key(&spec, "cseo:quotes"), "cseo:quotes", "built-in templates depend on the variant alone");
        assert_eq!(key(&spec, "import:x"), "import:x");
        let written = key(&spec, "cseo:quotes@m");
        assert!(written.starts_with("cseo:quotes@m#") && written.len() == "cseo:quotes@m#".len() + 10, "{written}");
        let tap = key(&spec, "tap@m");
        assert!(tap.starts_with("tap@m>bm25#"), "{tap}");
        assert_eq!(key(&spec, "tap@m>bm25"), tap, "a transfer row reads the text its source stored");
        // Another prompt, another sampling-free setting, another search: other keys.
        let mut other = spec.clone();
        other.prompts.cseo.version = "file:0123456789ab".into();
        assert_ne!(key(&other, "cseo:quotes@m"), written);
        assert_eq!(key(&other, "tap@m"), tap, "the C-SEO prompt does not write TAP texts");
        other.prompts.tap.version = "file:0123456789ab".into();
        assert_ne!(key(&other, "tap@m"), tap);
        assert_eq!(key(&other, "tap"), key(&spec, "tap"), "the built-in proposer reads no template");
        let apart = GeoSpec { tap: crate::geo::tap::TapParams { apart: true, ..Default::default() }, ..spec.clone() };
        assert_ne!(key(&apart, "tap"), key(&spec, "tap"));
        let mut ranked = spec.clone();
        ranked.protocol.prompt.version = "file:0123456789ab".into();
        assert_ne!(key(&ranked, "tap"), key(&spec, "tap"), "TAP searched under another ranking prompt");
        // A search on an endpoint belongs to that endpoint (URL, model, sampling), not to
        // its name in the config; its transfer rows read the same key.
        let mut chat = spec.clone();
        chat.endpoints.insert("chat".into(), crate::llm::EndpointSpec::new("http://127.0.0.1:9/v1", "m1"));
        let on_chat = text_key(&chat, "tap", "chat");
        assert_eq!(text_key(&chat, "tap>chat", "bm25"), on_chat, "a transfer reads its source's text");
        let mut moved = chat.clone();
        moved.endpoints.insert("chat".into(), crate::llm::EndpointSpec::new("http://127.0.0.1:9/v1", "m2"));
        assert_ne!(text_key(&moved, "tap", "chat"), on_chat, "another model behind the same name");
        assert_ne!(text_key(&moved, "tap>chat", "bm25"), on_chat);
        assert_eq!(text_key(&moved, "tap", "bm25"), text_key(&chat, "tap", "bm25"), "offline rankers unchanged");
        // An attacker's texts belong to its server: the same model name elsewhere writes
        // its own.
        let at = |url: &str| GeoSpec { attacker: Some(crate::llm::EndpointSpec::new(url, "m")), ..spec.clone() };
        let (here, there) = (at("http://127.0.0.1:9/v1"), at("http://127.0.0.1:10/v1"));
        assert_ne!(key(&here, "cseo:quotes@m"), key(&there, "cseo:quotes@m"));
        assert_ne!(key(&here, "tap@m"), key(&there, "tap@m"));
        assert_eq!(key(&here, "tap"), key(&there, "tap"), "the built-in proposer is no server's");
        // Runs planned before: their texts are read under the keys they were stored with.
        let flags =
            |recipe_keys, ranker_in_recipe| GeoSpec { key_version: 0, recipe_keys, ranker_in_recipe, ..here.clone() };
        assert_eq!(
            (key(&flags(false, false), "cseo:quotes@m"), key(&flags(false, false), "tap@m")),
            ("cseo:quotes@m".into(), "tap@m>bm25".into())
        );
        assert_eq!(flags(true, false).keys(), 1);
        assert_eq!(key(&flags(true, true), "cseo:quotes@m"), written, "version 2 named no attacker server");
        let stored: GeoSpec =
            serde_json::from_value(serde_json::json!({"datasets": [], "rankers": [], "methods": [], "protocol": Protocol::default(), "recipe_keys": true, "ranker_in_recipe": true}))
                .expect("a spec stored before key versions");
        assert_eq!(stored.keys(), 2);
        let now = serde_json::to_value(&here).expect("json");
        assert!(now.get("recipe_keys").is_none() && now["key_version"] == KEYS_NOW, "{now}");
    }
}
