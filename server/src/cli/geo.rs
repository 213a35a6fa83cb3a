//! `mirage geo datasets|prompt|eval`: the GEO ranking track's datasets, the exact messages
//! a ranker reads, and an in-process evaluation with the offline rankers and writers.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use super::score::table;
use crate::geo::data::{DATASETS, List, lists, summaries};
use crate::geo::metrics::Agg;
use crate::geo::order::{Orders, instance_seed, orderings};
use crate::geo::parse::Parser;
use crate::geo::prompt::Prompt;
use crate::geo::{Protocol, Scored, evaluate, rank, summarise, writers};

/// `mirage geo …`.
#[derive(Debug, Subcommand)]
pub enum GeoCommand {
    /// The ranking datasets compiled in: lists, targets, list lengths and query nouns.
    Datasets {
        #[arg(long)]
        json: bool,
    },
    /// Print the exact messages a ranker receives for a target in one of its orders.
    Prompt {
        /// DATASET/LIST/INDEX, the index 1-based as in the list file, e.g. `ragroll/laptop/3`.
        #[arg(long)]
        target: String,
        /// Which of the K orders, 1-based (1 is the identity).
        #[arg(long, default_value_t = 1)]
        order: usize,
        #[command(flatten)]
        protocol: ProtocolArgs,
    },
    /// Plan a GEO ranking run on the durable queue and execute it with a progress bar (or
    /// resume one); `mirage worker` processes can share it.
    Run(Box<GeoRunArgs>),
    /// A stored GEO run's report: per (ranker, method) the equal-dataset NRG, S@0.1 and
    /// P@0.1 with intervals and tie bands, per dataset, paired comparisons (Holm) and
    /// Spearman's ρ between rankers.
    Report {
        #[arg(long)]
        run: String,
        /// Rows to print: method (the leaderboard), dataset (per dataset) or pairs.
        #[arg(long, value_delimiter = ',', default_value = "method")]
        by: Vec<String>,
        #[arg(long, default_value_t = 5_000)]
        resamples: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
    /// Judge every text of a stored GEO run with a logprob judge (an endpoint of the config
    /// file): thresholds calibrated on the originals, AUROC, flag rates and the gain left
    /// after the judge, the keyword filter and either.
    Score {
        #[arg(long)]
        run: String,
        /// The judge endpoint's name in the config file (default: `roles.judge`).
        #[arg(long)]
        judge: Option<String>,
        #[arg(long, env = "MIRAGE_CONFIG")]
        config: Option<PathBuf>,
        /// The judge's false-positive rate on originals: `keyword` (the keyword filter's
        /// own rate, GEO-Bench's operating point) or a number such as 0.06.
        #[arg(long, default_value = "keyword")]
        fpr: String,
        #[arg(long)]
        json: bool,
    },
    /// Import GEO-Bench's published texts (an instance CSV) as the method `import:<name>`:
    /// reports the lists whose originals differ from the stored ones, and stores nothing
    /// if any row is wrong.
    Import {
        file: PathBuf,
        /// The name after `import:` (default: the file's stem).
        #[arg(long)]
        variant: Option<String>,
        /// Use GEO-Bench's originals where they differ from the compiled-in text.
        #[arg(long)]
        adopt_originals: bool,
    },
    /// Evaluate offline rankers and writers on the datasets, in this process (nothing is
    /// stored): per (ranker, method) the equal-dataset NRG, S@0.1 and P@0.1 with 95 %
    /// list-cluster bootstrap intervals, and per dataset.
    Eval {
        /// Offline rankers, comma-separated: bm25, position.
        #[arg(long, value_delimiter = ',', default_value = "bm25")]
        ranker: Vec<String>,
        /// Offline writers, comma-separated: clean, stuff, strip.
        #[arg(long, value_delimiter = ',', default_value = "clean,stuff,strip")]
        method: Vec<String>,
        /// `all` or datasets, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "all")]
        dataset: Vec<String>,
        #[command(flatten)]
        protocol: ProtocolArgs,
        #[arg(long, default_value_t = 5_000)]
        resamples: usize,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
}

/// `mirage geo run`.
#[derive(Debug, Args)]
pub struct GeoRunArgs {
    /// Rankers, comma-separated: bm25, position, or endpoints named in the config file.
    #[arg(long, value_delimiter = ',', required_unless_present = "resume")]
    ranker: Vec<String>,
    /// Methods, comma-separated: clean, stuff, strip, cseo:<style> (or `cseo:*` for all
    /// ten), zero_shot, import:<name>.
    #[arg(long, value_delimiter = ',', default_value = "clean")]
    method: Vec<String>,
    /// The endpoint (of the config file) that writes C-SEO and Zero-Shot texts, or
    /// `builtin` for the offline templates. Default: the config's `roles.attacker`.
    #[arg(long)]
    attacker: Option<String>,
    /// `all` or datasets, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "all")]
    dataset: Vec<String>,
    #[command(flatten)]
    protocol: ProtocolArgs,
    /// TOML file with `[endpoints.NAME]` tables for chat rankers.
    #[arg(long, env = "MIRAGE_CONFIG")]
    config: Option<PathBuf>,
    /// Trials executed at once by this process.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Only plan the run and print its id; `mirage worker` processes execute it.
    #[arg(long)]
    detach: bool,
    /// Resume a run instead of planning a new one.
    #[arg(long)]
    resume: Option<String>,
    #[arg(long, default_value_t = 30, hide = true)]
    lease_secs: u64,
}

/// How targets are shown and read.
#[derive(Debug, Args)]
pub struct ProtocolArgs {
    /// Orders per target (the same before and after the edit).
    #[arg(long, default_value_t = 10)]
    k: usize,
    #[arg(long, default_value_t = 0)]
    base_seed: i64,
    /// python: GEO-Bench's orders bit for bit; chacha: Mirage's own.
    #[arg(long, value_enum, default_value_t = Orders::Python)]
    orders: Orders,
    /// fixed: GEO-Bench's parser with its two fixes; geobench: as published.
    #[arg(long, value_enum, default_value_t = Parser::Fixed)]
    parser: Parser,
    #[arg(long, value_enum, default_value_t = Agg::Median)]
    agg: Agg,
    /// A TOML template (`system`, `user`; placeholders {noun}, {query}, {count}, {products}).
    #[arg(long)]
    prompt_file: Option<PathBuf>,
    /// Fold the system text into the user turn (models without a system role).
    #[arg(long)]
    no_system_role: bool,
}

impl ProtocolArgs {
    fn protocol(&self) -> anyhow::Result<Protocol> {
        if self.k == 0 {
            bail!("--k must be at least 1");
        }
        let prompt = match &self.prompt_file {
            Some(path) => Prompt::from_file(path)?,
            None => Prompt::default(),
        };
        Ok(Protocol {
            k: self.k,
            base_seed: self.base_seed,
            orders: self.orders,
            parser: self.parser,
            agg: self.agg,
            prompt,
            system_role: !self.no_system_role,
        })
    }
}

/// Runs `mirage geo …`; only `run` and `report` open the database.
pub async fn geo(command: GeoCommand, db: &str) -> anyhow::Result<()> {
    let lists = lists()?;
    let open = || async {
        let url = crate::db::database_url(db)?;
        anyhow::Ok(
            std::sync::Arc::new(crate::db::SqlStore::connect(&url).await?) as std::sync::Arc<dyn crate::db::Store>
        )
    };
    match command {
        GeoCommand::Run(args) => run(open().await?, *args).await,
        GeoCommand::Report { run, by, resamples, seed, json } => {
            let store = open().await?;
            let lists = crate::geo::import::stored_lists(store.as_ref()).await?;
            let report = crate::geo::report::report(store.as_ref(), &lists, &run, resamples, seed).await?;
            print_report(&report, &by, json)
        }
        GeoCommand::Datasets { json } => datasets(&lists, json),
        GeoCommand::Prompt { target, order, protocol } => {
            let lists = crate::geo::import::stored_lists(open().await?.as_ref()).await?;
            prompt(&lists, &target, order, &protocol.protocol()?)
        }
        GeoCommand::Score { run, judge, config, fpr, json } => {
            let store = open().await?;
            let config = crate::config::Config::load(config.as_deref())?;
            let (name, spec) = match judge {
                Some(name) => {
                    let spec = config
                        .endpoints
                        .get(&name)
                        .with_context(|| format!("--judge: {name:?} is not an endpoint of the config file"))?;
                    (name, spec.clone())
                }
                None => config
                    .judge()
                    .map(|(n, s)| (n.to_string(), s.clone()))
                    .context("--judge NAME, or a config with roles.judge")?,
            };
            let fpr = match fpr.as_str() {
                "keyword" => None,
                other => Some(
                    other
                        .parse::<f64>()
                        .ok()
                        .filter(|x| (0.0..1.0).contains(x))
                        .with_context(|| format!("--fpr: {other:?} is neither `keyword` nor a rate in [0, 1)"))?,
                ),
            };
            let client = crate::llm::HttpLlm::new(spec.clone()).with_context(|| format!("judge {name}"))?;
            let lists = crate::geo::import::stored_lists(store.as_ref()).await?;
            let d = crate::geo::score::score(store.as_ref(), &lists, &run, &client, &spec.model, fpr).await?;
            print_detection(&d, json)
        }
        GeoCommand::Import { file, variant, adopt_originals } => {
            let store = open().await?;
            import(store.as_ref(), &file, variant.as_deref(), adopt_originals).await
        }
        GeoCommand::Eval { ranker, method, dataset, protocol, resamples, seed, json } => {
            let protocol = protocol.protocol()?;
            let chosen = chosen(&lists, &dataset)?;
            let rankers: Vec<Box<dyn rank::Ranker>> = ranker
                .iter()
                .map(|r| {
                    rank::offline(r)
                        .with_context(|| format!("--ranker: {r:?} is not an offline ranker (bm25, position)"))
                })
                .collect::<anyhow::Result<_>>()?;
            for m in &method {
                if !writers::WRITERS.contains(&m.as_str()) {
                    bail!("--method: {m:?} is not an offline writer ({})", writers::WRITERS.join(", "));
                }
            }
            eval(&chosen, &rankers, &method, &protocol, resamples, seed, json).await
        }
    }
}

fn datasets(lists: &[List], json: bool) -> anyhow::Result<()> {
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

/// The list and 0-based target of `DATASET/LIST/INDEX`.
fn find<'a>(lists: &'a [List], target: &str) -> anyhow::Result<(&'a List, usize)> {
    let parts: Vec<&str> = target.rsplitn(2, '/').collect();
    let [index, key] = parts[..] else { bail!("--target: {target:?} is not DATASET/LIST/INDEX") };
    let (dataset, category) =
        key.split_once('/').with_context(|| format!("--target: {target:?} is not DATASET/LIST/INDEX"))?;
    let list = lists
        .iter()
        .find(|l| l.dataset == dataset && l.category == category)
        .with_context(|| format!("--target: no list {dataset}/{category} (see `mirage geo datasets --json`)"))?;
    let index: usize = index.parse().with_context(|| format!("--target: index {index:?} is not a number"))?;
    if index == 0 || index > list.items.len() {
        bail!("--target: index {index} is outside 1..={} of {dataset}/{category}", list.items.len());
    }
    Ok((list, index - 1))
}

fn prompt(lists: &[List], target: &str, order: usize, protocol: &Protocol) -> anyhow::Result<()> {
    let (list, t) = find(lists, target)?;
    if order == 0 || order > protocol.k {
        bail!("--order: {order} is outside 1..={}", protocol.k);
    }
    let seed = instance_seed(protocol.base_seed, &list.instance_key(t + 1));
    let orders = orderings(list.items.len(), protocol.k, seed, protocol.orders);
    let shown = &orders[order - 1];
    let position = shown.iter().position(|&i| i == t).expect("the target is in every order") + 1;
    println!(
        "# {} — target {:?} shown as number {position} in order {order} of {} (instance seed {seed}, prompt {})",
        list.instance_key(t + 1),
        list.items[t].name,
        protocol.k,
        protocol.prompt.version
    );
    for m in protocol.prompt.messages(&list.noun, &list.items, shown, protocol.system_role) {
        println!("\n[{}]\n{}", m.role, m.content);
    }
    Ok(())
}

/// The lists of the chosen datasets.
fn chosen(lists: &[List], dataset: &[String]) -> anyhow::Result<Vec<List>> {
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

async fn eval(
    lists: &[List],
    rankers: &[Box<dyn rank::Ranker>],
    methods: &[String],
    protocol: &Protocol,
    resamples: usize,
    seed: u64,
    json: bool,
) -> anyhow::Result<()> {
    let mut rows = Vec::new();
    let mut by_dataset = Vec::new();
    let ppl = crate::geo::detect::PplModel::new(lists);
    for ranker in rankers {
        for method in methods {
            let mut scored = Vec::new();
            for list in lists {
                for (t, item) in list.items.iter().enumerate() {
                    let edited = writers::write(method, &item.name, &list.noun, &item.text).expect("checked writer");
                    let (result, _) = evaluate(ranker.as_ref(), protocol, list, t, &edited).await?;
                    let kvr = crate::geo::kvr(&edited);
                    let ppl_r = ppl.ratio(&edited, &item.text);
                    scored.push(Scored {
                        dataset: list.dataset.clone(),
                        list: list.key(),
                        target: t + 1,
                        result,
                        kvr,
                        ppl_r,
                    });
                }
            }
            let summary = summarise(&scored, resamples, seed).context("no targets")?;
            rows.push((ranker.name().to_string(), method.clone(), summary));
            for (dataset, _) in DATASETS {
                let mine: Vec<Scored> = scored.iter().filter(|s| s.dataset == dataset).cloned().collect();
                if let Some(s) = summarise(&mine, resamples, seed) {
                    by_dataset.push((ranker.name().to_string(), method.clone(), dataset, s));
                }
            }
        }
    }
    let interval = |e: &crate::stats::Estimate| json!({"mean": e.mean, "lo": e.lo, "hi": e.hi});
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
    let cell = |e: &crate::stats::Estimate| format!("{:.3} [{:.3}, {:.3}]", e.mean, e.lo, e.hi);
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

async fn run(store: std::sync::Arc<dyn crate::db::Store>, args: GeoRunArgs) -> anyhow::Result<()> {
    let run_id = match args.resume {
        Some(id) => {
            crate::geo::report::results(store.as_ref(), &crate::geo::import::stored_lists(store.as_ref()).await?, &id)
                .await?;
            id
        }
        None => {
            let config = crate::config::Config::load(args.config.as_deref())?;
            let configured = &config.endpoints;
            let mut endpoints = std::collections::BTreeMap::new();
            for name in &args.ranker {
                if rank::offline(name).is_none() {
                    let spec = configured.get(name).with_context(|| {
                        format!("--ranker: {name:?} is neither an offline ranker (bm25, position) nor an endpoint of the config file")
                    })?;
                    endpoints.insert(name.clone(), spec.clone());
                }
            }
            let spec = crate::geo::plan::GeoSpec {
                datasets: crate::geo::plan::datasets(&args.dataset).context("--dataset")?,
                rankers: args.ranker.clone(),
                methods: expand_methods(&args.method),
                protocol: args.protocol.protocol()?,
                endpoints,
                tap: Default::default(),
                attacker: match args.attacker.as_deref() {
                    Some("builtin") => None,
                    None => config.attacker().map(|(_, spec)| spec.clone()),
                    Some(name) => Some(
                        configured
                            .get(name)
                            .with_context(|| format!("--attacker: {name:?} is not an endpoint of the config file"))?
                            .clone(),
                    ),
                },
            };
            let id = crate::runs::geo::create_geo_run(store.as_ref(), spec).await?;
            if args.detach {
                println!("{id}");
                return Ok(());
            }
            id
        }
    };
    let world = std::sync::Arc::new(crate::env::World::build(Vec::new())?);
    super::run::follow(store, world, &run_id, args.concurrency, args.lease_secs).await?;
    println!("report: mirage geo report --run {run_id}");
    Ok(())
}

fn print_report(report: &crate::geo::report::Report, by: &[String], json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
        return Ok(());
    }
    let cell = |e: &crate::stats::Estimate| format!("{:.3} [{:.3}, {:.3}]", e.mean, e.lo, e.hi);
    println!(
        "run {}: {} trials ({} errors, {} unfinished), K = {}, prompt {}",
        report.run, report.trials, report.errors, report.unfinished, report.k, report.prompt_version
    );
    for what in by {
        match what.as_str() {
            "method" => {
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
                    "missing",
                ];
                let mut t = table(header.map(String::from).to_vec());
                for r in &report.rows {
                    let s = &r.summary;
                    t.add_row(vec![
                        r.ranker.clone(),
                        r.method.clone(),
                        r.band.to_string(),
                        s.n.to_string(),
                        cell(&s.nrg),
                        cell(&s.s_at_0_1),
                        cell(&s.p_at_0_1),
                        format!("{:.3}", s.kvr.mean),
                        cell(&s.nrg_after_keyword),
                        s.ppl_r.map_or_else(|| "-".to_string(), |r| format!("{r:.3}")),
                        format!("{:.3}", s.missing),
                    ]);
                }
                println!("{t}");
            }
            "dataset" => {
                let mut t =
                    table(["ranker", "method", "dataset", "n", "NRG", "S@0.1", "P@0.1"].map(String::from).to_vec());
                for r in &report.datasets {
                    let s = &r.summary;
                    t.add_row(vec![
                        r.ranker.clone(),
                        r.method.clone(),
                        r.dataset.clone(),
                        s.n.to_string(),
                        cell(&s.nrg),
                        cell(&s.s_at_0_1),
                        cell(&s.p_at_0_1),
                    ]);
                }
                println!("{t}");
            }
            "pairs" => {
                let mut t = table(["ranker", "a − b", "NRG difference", "p", "p (Holm)"].map(String::from).to_vec());
                for p in &report.pairs {
                    t.add_row(vec![
                        p.ranker.clone(),
                        format!("{} − {}", p.a, p.b),
                        cell(&p.diff),
                        format!("{:.4}", p.p),
                        format!("{:.4}", p.p_holm),
                    ]);
                }
                println!("{t}");
                for r in &report.spearman {
                    let rho = r.rho.map_or_else(|| "-".to_string(), |x| format!("{x:.3}"));
                    println!("Spearman ρ({}, {}) over {} methods: {rho}", r.a, r.b, r.methods);
                }
            }
            other => bail!("--by: {other:?} is not one of method, dataset, pairs"),
        }
    }
    Ok(())
}

/// `cseo:*` stands for the ten C-SEO styles.
fn expand_methods(methods: &[String]) -> Vec<String> {
    methods
        .iter()
        .flat_map(|m| match m.as_str() {
            "cseo:*" => crate::manip::text::STYLES.iter().map(|s| format!("cseo:{s}")).collect(),
            _ => vec![m.clone()],
        })
        .collect()
}

async fn import(
    store: &dyn crate::db::Store,
    file: &std::path::Path,
    variant: Option<&str>,
    adopt: bool,
) -> anyhow::Result<()> {
    let bytes = std::fs::read(file).with_context(|| format!("{}: cannot read", file.display()))?;
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("imported");
    let name = variant.unwrap_or(stem);
    let shown = file.display().to_string();
    let lists = crate::geo::import::stored_lists(store).await?;
    let got = crate::geo::import::read(&lists, &shown, &bytes, name)?;
    let already = store.geo_texts(&got.variant).await?.len();
    store.put_geo_texts(&got.texts).await?;
    println!(
        "{}: {} texts stored as {} ({} already stored were kept)",
        shown,
        got.texts.len(),
        got.variant,
        already.min(got.texts.len())
    );
    for (dataset, n) in &got.skipped {
        println!("skipped {n} rows of {dataset} (not shipped with Mirage)");
    }
    if got.mismatches.is_empty() {
        println!("every orig_text matches the stored description");
    }
    for (list, n) in &got.mismatches {
        println!("{list}: {n} items whose orig_text differs from the stored description");
    }
    if adopt && !got.originals.is_empty() {
        store.put_geo_texts(&got.originals).await?;
        println!(
            "adopted {} GEO-Bench originals; later runs rank them in place of the compiled-in text",
            got.originals.len()
        );
    } else if !got.originals.is_empty() {
        println!("--adopt-originals would use GEO-Bench's originals for those items");
    }
    Ok(())
}

fn print_detection(d: &crate::geo::score::Detection, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(d)?);
        return Ok(());
    }
    let per = |c: &crate::detect::Calibration| {
        c.per_domain.iter().map(|(k, v)| format!("{k} {:.1} %", 100.0 * v)).collect::<Vec<_>>().join(", ")
    };
    println!(
        "run {}: {} texts judged by {} ({:.1} % censored)\njudge threshold {:?} for {:.1} % of originals (realised {:.1} %: {})\n\
         keyword-or-judge threshold {:?} for {:.0} % (realised {:.1} %: {})",
        d.run,
        d.texts,
        d.judge,
        100.0 * d.censored,
        d.judge_calibration.threshold,
        100.0 * d.fpr,
        100.0 * d.judge_calibration.fpr,
        per(&d.judge_calibration),
        d.either_calibration.threshold,
        100.0 * crate::geo::score::EITHER_FPR,
        100.0 * d.either_calibration.fpr,
        per(&d.either_calibration),
    );
    let header = [
        "ranker",
        "method",
        "n",
        "AUROC",
        "judge",
        "keyword",
        "either",
        "NRG",
        "after judge",
        "after keyword",
        "after either",
        "promoted and passed",
    ];
    let mut t = table(header.map(String::from).to_vec());
    for r in &d.rows {
        t.add_row(vec![
            r.ranker.clone(),
            r.method.clone(),
            r.n.to_string(),
            r.auroc.map_or_else(|| "-".to_string(), |a| format!("{a:.3}")),
            format!("{:.3}", r.judge_flagged),
            format!("{:.3}", r.keyword_flagged),
            format!("{:.3}", r.either_flagged),
            format!("{:.3}", r.nrg),
            format!("{:.3}", r.nrg_after_judge),
            format!("{:.3}", r.nrg_after_keyword),
            format!("{:.3}", r.nrg_after_either),
            format!("{:.3}", r.promoted_and_passed_either),
        ]);
    }
    println!("{t}");
    Ok(())
}
