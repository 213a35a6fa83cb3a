//! GEO ranking runs on the same durable queue as agent runs: planning a run from a
//! [`GeoSpec`], and executing one claimed trial (one target under one ranker and method)
//! order by order, each order's record stored before the next, so a killed worker resumes
//! where it stopped and the replies of a rerun come from the cache.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Context;

use super::{RunSpec, new_run_id};
use crate::db::{RunStatus, Store, TrialEnd, TrialRow};
use crate::geo::data::List;
use crate::geo::methods::{Method, Writer};
use crate::geo::plan::GeoTrial;
use crate::geo::plan::{CONDITION, GeoSpec, plan, target_of};
use crate::geo::rank::{ChatRanker, Ranker, offline};
use crate::geo::{OrderRecord, order_record, target_orders};
use crate::llm::HttpLlm;
use vocab::RunId;

/// What executing a GEO run's trials needs: the lists and one ranker per name.
pub struct GeoExec {
    pub lists: Vec<List>,
    pub rankers: HashMap<String, Arc<dyn Ranker>>,
    pub spec: GeoSpec,
    /// The attacker endpoint's clients, when the spec has one.
    pub writer: Option<Writer>,
    /// The answer cache (TAP proposals, cross-encoder scores).
    pub cache: Arc<dyn Store>,
    /// Cross-encoders by ranker name, with their answer identity (the cache keys carry it).
    pub rerankers: HashMap<String, (String, Arc<HttpLlm>)>,
    /// The run's lists changed since it was planned (originals adopted): its unfinished
    /// trials are not run, so no run mixes two versions of a list.
    pub lists_changed: bool,
}

/// Whether the lists a run's trials rank differ from those it was planned on (runs planned
/// before versions were kept per run stored every list's version).
pub async fn lists_changed(store: &dyn Store, run_id: &RunId, lists: &[List]) -> anyhow::Result<bool> {
    let stored = store.run(run_id).await?.corpus_version;
    let keys = store.trial_keys(run_id).await?;
    Ok(crate::geo::data::changed_since(lists, keys.iter().map(|k| k.task_id.as_str()), &stored))
}

/// Why a run whose lists changed is not executed further.
pub fn changed_lists_refusal(run_id: &RunId) -> String {
    format!(
        "the lists of run {run_id} changed since it was planned (GEO-Bench originals adopted): its unfinished \
         trials would rank other originals than it was planned on (and than any finished trial ranked), so they \
         are not run; plan a new run for the new lists"
    )
}

impl GeoExec {
    /// Builds the rankers of a spec: offline ones by name, chat ones from their endpoints.
    pub async fn new(spec: GeoSpec, store: &Arc<dyn Store>, run_id: &RunId) -> anyhow::Result<GeoExec> {
        let lists = crate::geo::import::stored_lists(store.as_ref()).await?;
        let mut rankers: HashMap<String, Arc<dyn Ranker>> = HashMap::new();
        let mut rerankers = HashMap::new();
        for (name, endpoint) in &spec.rerankers {
            let client = HttpLlm::new(endpoint.clone()).with_context(|| format!("reranker {name}"))?;
            rerankers.insert(name.clone(), (endpoint.answer_identity(), Arc::new(client)));
        }
        for name in spec.rankers.iter().filter(|n| !spec.rerankers.contains_key(*n)) {
            let ranker: Arc<dyn Ranker> = match (offline(name), spec.endpoints.get(name)) {
                (Some(r), _) => Arc::from(r),
                (None, Some(endpoint)) => Arc::new(ChatRanker {
                    name: name.clone(),
                    model: endpoint.model.clone(),
                    identity: endpoint.answer_identity(),
                    client: Arc::new(HttpLlm::new(endpoint.clone()).with_context(|| format!("ranker {name}"))?),
                    cache: store.clone(),
                    scope: Some(run_id.to_string()),
                }),
                (None, None) => anyhow::bail!("ranker {name} has no endpoint in the run's spec"),
            };
            rankers.insert(name.clone(), ranker);
        }
        let writer = match &spec.attacker {
            Some(endpoint) => {
                let client = |s: crate::geo::methods::Sampling| -> anyhow::Result<Arc<dyn crate::llm::LlmClient>> {
                    let sampled = crate::llm::EndpointSpec {
                        temperature: s.temperature,
                        top_p: Some(s.top_p),
                        max_tokens: s.max_tokens,
                        ..endpoint.clone()
                    };
                    Ok(Arc::new(HttpLlm::new(sampled).context("attacker endpoint")?))
                };
                use crate::geo::methods::{REWRITE, SEARCH, SNIPPET};
                Some(Writer {
                    model: endpoint.model.clone(),
                    server: endpoint.base_url.trim_end_matches('/').to_string(),
                    rewrite: client(REWRITE)?,
                    snippet: client(SNIPPET)?,
                    search: client(SEARCH)?,
                    cseo: spec.prompts.cseo.clone(),
                    zero_shot: spec.prompts.zero_shot.clone(),
                })
            }
            None => None,
        };
        Ok(GeoExec { lists, rankers, spec, writer, cache: store.clone(), rerankers, lists_changed: false })
    }
}

/// Plans and stores a GEO run; returns its id. Chat rankers are asked at temperature 0.
pub async fn create_geo_run(store: &dyn Store, mut spec: GeoSpec) -> anyhow::Result<RunId> {
    let lists = crate::geo::import::stored_lists(store).await?;
    for endpoint in spec.endpoints.values_mut() {
        endpoint.temperature = 0.0;
    }
    spec.key_version = crate::geo::plan::KEYS_NOW;
    let mut trials = plan(&lists, &spec)?;
    // Imported and transferred methods cover the targets that have texts.
    let stored_only =
        |m: &&String| matches!(crate::geo::methods::Method::parse(m), Ok(Method::Import(_) | Method::Transfer(_)));
    for variant in spec.methods.iter().filter(stored_only) {
        let key = crate::geo::plan::text_key(&spec, variant, "");
        let texts = store.geo_texts(&key).await?;
        // Texts made from originals the lists no longer hold are refused, not ranked (unless
        // a text for the original now is stored beside them: a search run again).
        let mut stale: Vec<&crate::db::GeoText> = Vec::new();
        for t in texts.iter().filter(|t| !made_on_list(&lists, t)) {
            let (list, target) = target_of(&lists, &t.target()?.to_string())?;
            if crate::geo::texts::lookup(store, &key, list, target).await?.current.is_none() {
                stale.push(t);
            }
        }
        if let Some(first) = stale.first() {
            let instance = format!("{}|{}|{}", first.dataset, first.category, first.target_idx);
            anyhow::bail!("method: {}", crate::geo::methods::stale_text(&key, &instance, stale.len()));
        }
        let have: std::collections::HashSet<String> =
            texts.iter().map(|t| t.target().map(|t| t.to_string())).collect::<Result<_, _>>()?;
        if have.is_empty() {
            // Texts searched on the same ranker by another proposer, or under other settings.
            let base = key.split('#').next().unwrap_or(&key);
            let ranker = base.rsplit_once('>').map(|(_, r)| format!(">{r}"));
            let near: Vec<String> = store
                .geo_methods()
                .await?
                .into_iter()
                .filter(|(m, _)| {
                    ranker.as_ref().is_some_and(|r| {
                        m.starts_with("tap") && m.split('#').next().is_some_and(|b| b.ends_with(r.as_str()))
                    })
                })
                .map(|(m, n)| format!("{m} ({n} texts)"))
                .collect();
            let hint = if near.is_empty() {
                String::new()
            } else {
                format!(
                    "; stored for that ranker: {} (a transfer names the searcher as searched, e.g. tap@MODEL>RANKER, and needs the same settings)",
                    near.join(", ")
                )
            };
            anyhow::bail!(
                "method: no texts are stored as {key} (see `mirage geo import`, or run `tap` first with the same \
                 protocol, TAP settings and prompts){hint}"
            );
        }
        trials.retain(|t| t.method() != variant || have.contains(t.target_id()));
        if !trials.iter().any(|t| t.method() == variant) {
            anyhow::bail!("method: no texts are stored as {key} for the chosen datasets");
        }
    }
    let run = RunSpec {
        endpoints: spec.endpoints.clone(),
        geo: Some(spec.clone()),
        replay: Vec::new(),
        ..RunSpec::basic(
            &format!("geo:{}", spec.datasets.join(",")),
            &spec.rankers.iter().map(String::as_str).collect::<Vec<_>>(),
            &spec.methods.iter().map(String::as_str).collect::<Vec<_>>(),
            &[CONDITION],
            vec![spec.protocol.base_seed],
        )
    };
    let run_id = new_run_id();
    let json = serde_json::to_string(&run).context("encoding the run spec")?;
    let version = crate::geo::data::version_of(&lists, trials.iter().map(|t| t.target_id()));
    store.create_run(&run_id, &json, &version, &trials).await?;
    Ok(run_id)
}

/// Whether a stored text was made from its target's description in `lists` (a text of a
/// list or target the lists do not hold is not checked here: planning finds no trial for it).
fn made_on_list(lists: &[List], t: &crate::db::GeoText) -> bool {
    let item = lists
        .iter()
        .find(|l| l.dataset == t.dataset && l.category == t.category)
        .and_then(|l| usize::try_from(t.target_idx - 1).ok().and_then(|i| l.items.get(i)));
    item.is_none_or(|item| t.made_on(&item.text))
}

/// Whether a stored TAP text comes from a search whose every scoring call failed.
fn measured_nothing(t: &crate::db::GeoText) -> bool {
    let meta = serde_json::from_str::<serde_json::Value>(&t.meta).unwrap_or_default();
    let count = |k: &str| meta.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    count("calls") > 0 && count("failed_calls") == count("calls")
}

/// A TAP trial's text: the stored one, or a new search against the trial's ranker (every
/// scored node stored; an interrupted search starts again).
async fn tap_text(
    store: &dyn Store,
    exec: &GeoExec,
    trial: &TrialRow,
    list: &List,
    target: usize,
    ranker: &dyn Ranker,
) -> anyhow::Result<crate::db::GeoText> {
    use crate::geo::tap::{BuiltinProposer, EndpointProposer, Proposer, best, search};
    let key = crate::geo::plan::text_key(&exec.spec, trial.method(), trial.ranker());
    let index = i64::try_from(target + 1)?;
    let item = &list.items[target];
    // A text searched on another original (adopted since), or one whose search measured
    // nothing (every scoring call failed: an outage, not a result), is searched again and
    // stored in the next free place beside it: runs that ranked the old one still read it.
    let found = crate::geo::texts::lookup(store, &key, list, target).await?;
    if let Some(t) = found.current.filter(|t| !measured_nothing(t)) {
        check_orders(&t, exec.spec.tap.apart, &key, &list.instance_key(target + 1))?;
        return Ok(t);
    }
    let write_key = found.next;
    if !store.tap_nodes(&trial.trial_id).await?.is_empty() {
        store.reset_tap(&trial.trial_id).await?;
    }
    let endpoint;
    let (proposer, source): (&dyn Proposer, String) = match (&exec.writer, trial.method().contains('@')) {
        (Some(w), true) => {
            crate::geo::methods::check_author(trial.method(), &w.model)?;
            let template = exec.spec.prompts.tap.clone();
            let source = format!("endpoint:{}/{}", w.model, template.version);
            endpoint = EndpointProposer {
                model: w.model.clone(),
                server: w.server.clone(),
                client: w.search.clone(),
                cache: exec.cache.clone(),
                template,
            };
            (&endpoint, source)
        }
        (None, true) => anyhow::bail!("{}: no attacker endpoint in this run", trial.method()),
        (_, false) => (&BuiltinProposer, "builtin".to_string()),
    };
    let mut on_node = |_: &crate::geo::tap::Node| {};
    let nodes = search(ranker, &exec.spec.protocol, list, target, proposer, exec.spec.tap, &mut on_node).await?;
    for n in &nodes {
        let (id, depth) = (i64::try_from(n.id)?, i64::try_from(n.depth)?);
        let parent = n.parent.map(i64::try_from).transpose()?;
        store.add_tap_node(&trial.trial_id, id, parent, depth, n.score, &serde_json::to_string(n)?).await?;
    }
    let top = best(&nodes).context("a search scores at least one node")?;
    let text = crate::db::GeoText {
        method: write_key.clone(),
        dataset: list.dataset.clone(),
        category: list.category.clone(),
        target_idx: index,
        orig_text: item.text.clone(),
        adv_text: format!("{} {}", item.text.trim(), top.suffix),
        edit_kind: "suffix".into(),
        source,
        meta: serde_json::json!({
            "suffix": top.suffix, "score": top.score, "ranks": top.ranks, "nodes": nodes.len(),
            "reached": top.score <= exec.spec.tap.delta, "trial": trial.trial_id, "apart": exec.spec.tap.apart,
            "calls": nodes.iter().map(|n| n.ranks.len()).sum::<usize>(),
            "failed_calls": nodes.iter().map(|n| n.failed).sum::<usize>(),
        })
        .to_string(),
    };
    store.put_geo_texts(std::slice::from_ref(&text)).await?;
    Ok(store.geo_text(&write_key, &list.dataset, &list.category, index).await?.unwrap_or(text))
}

/// Refuses to reuse a TAP text searched under other scoring orders than this run's (`apart`
/// from the evaluation orders, or drawn among them): it is another method's text.
fn check_orders(t: &crate::db::GeoText, apart: bool, key: &str, instance: &str) -> anyhow::Result<()> {
    let searched_apart = serde_json::from_str::<serde_json::Value>(&t.meta)
        .ok()
        .and_then(|m| m.get("apart")?.as_bool())
        .unwrap_or(false);
    if searched_apart != apart {
        anyhow::bail!(
            "{key} of {instance} was searched with scoring orders {} the evaluation orders; this run draws them {}",
            if searched_apart { "apart from" } else { "among" },
            if apart { "apart" } else { "as GEO-Bench does" }
        );
    }
    Ok(())
}

/// A cross-encoder trial: one pass scoring the clean list and the list with the edited
/// target (scores cached per list of documents), stored as a single step whose ranks follow
/// the cross-encoder rule (the others keep their clean scores; ties go to the target).
async fn rerank_trial(
    store: &dyn Store,
    exec: &GeoExec,
    trial: &TrialRow,
    list: &List,
    target: usize,
    identity: &str,
    client: &HttpLlm,
) -> anyhow::Result<()> {
    if !store.steps(&trial.trial_id).await?.is_empty() {
        return Ok(());
    }
    let key = crate::geo::plan::text_key(&exec.spec, trial.method(), trial.ranker());
    let text =
        crate::geo::methods::text_for(store, exec.writer.as_ref(), (trial.method(), &key), list, target, trial.seed)
            .await?;
    let query = format!("{}.", list.query());
    let query = query.as_str();
    let scores = |docs: Vec<String>| async move {
        use sha2::{Digest, Sha256};
        let key = format!(
            "geo-rerank-2:{}",
            hex::encode(Sha256::digest(format!("{identity}\0{query}\0{}", docs.join("\u{1}")).as_bytes()))
        );
        let ask = async { Ok(serde_json::to_string(&client.rerank(query, &docs).await?)?) };
        let body = crate::llm::cache::remembered(exec.cache.as_ref(), &key, "geo-rerank", ask).await?;
        anyhow::Ok(serde_json::from_str::<Vec<f64>>(&body)?)
    };
    let docs = |edited: Option<&str>| -> Vec<String> {
        list.items
            .iter()
            .enumerate()
            .map(|(i, it)| format!("{}: {}", it.name, if i == target { edited.unwrap_or(&it.text) } else { &it.text }))
            .collect()
    };
    // A call that failed after its retries ranks the target missing (L+1) on its side.
    let failed = |r: anyhow::Result<Vec<f64>>| match r {
        Ok(s) => Ok((Some(s), None)),
        Err(e) => crate::geo::endpoint_failure(&e).map(|why| (None, Some(why))).ok_or(e),
    };
    let (clean, clean_failure) = failed(scores(docs(None)).await)?;
    let (edited, edited_failure) = failed(scores(docs(Some(&text.adv_text))).await)?;
    let missing = list.items.len() + 1;
    let (clean_rank, edited_rank) = match (&clean, &edited) {
        (Some(c), Some(e)) => crate::geo::rank::cross_encoder_ranks(c, e[target], target),
        (Some(c), None) => (crate::geo::rank::cross_encoder_ranks(c, c[target], target).0, missing),
        // The edited call scores the others' unchanged texts too.
        (None, Some(e)) => (missing, crate::geo::rank::cross_encoder_ranks(e, e[target], target).1),
        (None, None) => (missing, missing),
    };
    let reply = |s: &Option<Vec<f64>>| s.as_ref().map_or_else(|| Ok(String::new()), serde_json::to_string);
    let record = OrderRecord {
        order: (0..list.items.len()).collect(),
        clean_reply: reply(&clean)?,
        edited_reply: reply(&edited)?,
        clean_rank,
        edited_rank,
        clean_failure,
        edited_failure,
        text_key: Some(text.method.clone()),
        usage: None,
    };
    store.append_step(&trial.trial_id, 0, &serde_json::to_string(&record)?).await?;
    Ok(())
}

/// Runs one claimed GEO trial: the orders not yet stored, each stored as it finishes.
pub(super) async fn run_geo_trial(store: &dyn Store, exec: &GeoExec, trial: &TrialRow) -> TrialEnd {
    if exec.lists_changed {
        return TrialEnd::Error(changed_lists_refusal(&trial.run_id));
    }
    let (list, target) = match target_of(&exec.lists, trial.target_id()) {
        Ok(found) => found,
        Err(e) => return TrialEnd::Error(format!("{e:#}")),
    };
    if let Some((identity, client)) = exec.rerankers.get(trial.ranker()) {
        return match rerank_trial(store, exec, trial, list, target, identity, client).await {
            Ok(()) => TrialEnd::Done { verdict: None, rationale: None, appeal: None },
            Err(e) => TrialEnd::Error(format!("cross-encoder: {e:#}")),
        };
    }
    let Some(ranker) = exec.rankers.get(trial.ranker()) else {
        return TrialEnd::Error(format!("ranker {} is not part of this run's spec", trial.ranker()));
    };
    let text = async {
        if crate::geo::methods::Method::parse(trial.method())? == crate::geo::methods::Method::Tap {
            tap_text(store, exec, trial, list, target, ranker.as_ref()).await
        } else {
            let key = crate::geo::plan::text_key(&exec.spec, trial.method(), trial.ranker());
            crate::geo::methods::text_for(store, exec.writer.as_ref(), (trial.method(), &key), list, target, trial.seed)
                .await
        }
    };
    let (edited, text_key) = match text.await {
        Ok(t) => (t.adv_text, t.method),
        Err(e) => return TrialEnd::Error(format!("text of {}: {e:#}", trial.method())),
    };
    let done = match store.steps(&trial.trial_id).await {
        Ok(bodies) => bodies.len(),
        Err(e) => return TrialEnd::Error(format!("loading stored orders: {e}")),
    };
    let protocol = &exec.spec.protocol;
    for (t, order) in target_orders(protocol, list, target).into_iter().enumerate().skip(done) {
        let record: OrderRecord = match order_record(ranker.as_ref(), protocol, list, target, &edited, order).await {
            Ok(r) => OrderRecord { text_key: Some(text_key.clone()), ..r },
            Err(e) => return TrialEnd::Error(format!("order {}: {e:#}", t + 1)),
        };
        let stored = async {
            let body = serde_json::to_string(&record)?;
            store.append_step(&trial.trial_id, i64::try_from(t)?, &body).await?;
            anyhow::Ok(store.run(&trial.run_id).await?.status)
        };
        match stored.await {
            Ok(RunStatus::Cancelled) => return TrialEnd::Cancelled,
            Ok(_) => {}
            Err(e) => return TrialEnd::Error(format!("storing order {}: {e:#}", t + 1)),
        }
    }
    TrialEnd::Done { verdict: None, rationale: None, appeal: None }
}
