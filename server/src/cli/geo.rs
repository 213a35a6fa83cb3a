//! `mirage geo datasets|prompt|eval`: the GEO ranking track's datasets, the exact messages
//! a ranker reads, and an in-process evaluation with the offline rankers and writers.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

use super::geo_tables::{datasets, eval_cmd, print_detection, print_report};
use crate::geo::Protocol;
use crate::geo::data::{List, lists};
use crate::geo::metrics::Agg;
use crate::geo::order::{Orders, instance_seed, orderings};
use crate::geo::parse::Parser;
use crate::geo::prompt::Prompt;
use app::model::RunId;

/// `mirage geo …`.
/// `mirage geo score`'s options.
#[derive(clap::Args, Debug)]
pub struct ScoreArgs {
    #[arg(long)]
    run: RunId,
    /// The judge endpoint's name in the config file (default: `roles.judge`).
    #[arg(long)]
    judge: Option<String>,
    /// `logprobs`: P(Yes) from the first token's log-probabilities (the paper);
    /// `verbalized`: the probability the judge states (non-paper, for endpoints without
    /// log-probabilities).
    #[arg(long, value_enum, default_value_t = crate::geo::judge::JudgeMode::Logprobs)]
    judge_mode: crate::geo::judge::JudgeMode,
    /// A scoring endpoint (completions with `echo` and `logprobs`) for PPL-R.
    #[arg(long)]
    scorer: Option<String>,
    /// The judge's prompt as a TOML template (`system`, `user`, `verbalized`; placeholder
    /// {text}) instead of Mirage's own.
    #[arg(long, value_name = "FILE")]
    judge_prompt: Option<PathBuf>,
    #[arg(long, env = "MIRAGE_CONFIG")]
    config: Option<PathBuf>,
    /// The judge's false-positive rate on originals: `keyword` (the keyword filter's own
    /// rate, GEO-Bench's operating point) or a number such as 0.06.
    #[arg(long, default_value = "keyword")]
    fpr: String,
    /// The keyword-or-judge filter's rate on originals.
    #[arg(long, default_value_t = crate::geo::score::EITHER_FPR)]
    either_fpr: f64,
    /// `equal`: each dataset weighs the same (the paper); `pooled`: every original weighs
    /// the same (GEO-Bench's code); `lodo`: each dataset at the threshold of the others.
    #[arg(long, value_enum, default_value_t = crate::geo::calibrate::CalibrationMode::Equal)]
    calibration: crate::geo::calibrate::CalibrationMode,
    #[arg(long)]
    json: bool,
}

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
        run: RunId,
        /// Tables to print: method (the leaderboard), dataset (per dataset), ranker (each
        /// method's NRG under every ranker: the transfer table) or pairs (paired
        /// comparisons and Spearman's ρ).
        #[arg(long, value_delimiter = ',', default_value = "method")]
        by: Vec<String>,
        /// Methods, comma-separated, forming each ranker's Holm family and the set Spearman's
        /// ρ is taken over. Default: Holm over every pair under each ranker, and ρ over every
        /// method but the baselines clean, stuff and strip.
        #[arg(long, value_delimiter = ',')]
        family: Vec<String>,
        /// How a row's figures and the paired contrasts weight targets: dataset (each dataset
        /// counts equally, the paper's headline) or target (each target equally).
        #[arg(long, value_enum, default_value_t = crate::geo::report::Weighting::Dataset)]
        weighting: crate::geo::report::Weighting,
        #[arg(long)]
        json: bool,
    },
    /// Judge every text of a stored GEO run (an endpoint of the config file): thresholds
    /// calibrated on the originals, AUROC, flag rates, the gain left after the judge, the
    /// keyword filter and either, and PPL-R with a scoring endpoint. The report is stored
    /// with the run for the dashboard.
    Score(Box<ScoreArgs>),
    /// Import GEO-Bench's published texts (an instance CSV) as the method `import:<name>`:
    /// reports the lists whose originals differ from the stored ones (a suffix made on a
    /// differing original is rebuilt on the stored one; a rewrite of one refuses the file
    /// unless --adopt-originals), and stores nothing if any row is wrong.
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
    /// intervals over lists, and per dataset.
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
        #[arg(long)]
        json: bool,
    },
}

/// `mirage geo run`.
#[derive(Debug, Args)]
pub struct GeoRunArgs {
    /// Rankers, comma-separated: bm25, position, or endpoints named in the config file.
    #[arg(long, value_delimiter = ',', required_unless_present_any = ["resume", "reranker"])]
    ranker: Vec<String>,
    /// Cross-encoders (`/rerank` endpoints of the config file), comma-separated: one pass
    /// per target, no orders.
    #[arg(long, value_delimiter = ',')]
    reranker: Vec<String>,
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
    /// Only these lists (`DATASET/LIST`, comma-separated), instead of whole datasets.
    #[arg(long, value_delimiter = ',', conflicts_with = "dataset")]
    list: Vec<String>,
    #[command(flatten)]
    protocol: ProtocolArgs,
    /// TAP scores candidates on orders drawn apart from the K evaluation orders (not
    /// GEO-Bench's way, which scores on the identity and a shuffle).
    #[arg(long)]
    tap_orders_apart: bool,
    #[command(flatten)]
    prompts: AttackPromptArgs,
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
    resume: Option<RunId>,
    /// With --resume: put the run's trials that ended in error back in the queue first (a
    /// writer that refused, a key fixed since), their stored orders kept.
    #[arg(long, requires = "resume")]
    retry_errors: bool,
    #[arg(long, default_value_t = 30, hide = true)]
    lease_secs: u64,
}

/// Template files for the attacker's prompts (TOML; see docs/geo.md, "Prompts").
#[derive(Debug, Args)]
pub struct AttackPromptArgs {
    /// The C-SEO rewriter's prompt (`system`, `user`, `[brief]`, `[style_system]`).
    #[arg(long, value_name = "FILE")]
    cseo_prompt: Option<PathBuf>,
    /// The Zero-Shot attacker's prompt (`system`, `user`).
    #[arg(long, value_name = "FILE")]
    zero_shot_prompt: Option<PathBuf>,
    /// The TAP proposer's prompt (`system`, `user`, `feedback`).
    #[arg(long, value_name = "FILE")]
    tap_prompt: Option<PathBuf>,
}

impl AttackPromptArgs {
    fn prompts(&self) -> anyhow::Result<crate::geo::plan::AttackPrompts> {
        use crate::geo::template::{Role, Template};
        let mut prompts = crate::geo::plan::AttackPrompts::default();
        let read = |path: &Option<PathBuf>, role: &Role, base: &mut Template| -> anyhow::Result<()> {
            if let Some(path) = path {
                *base = Template::from_file(path, role, base)?;
            }
            Ok(())
        };
        read(&self.cseo_prompt, &crate::geo::methods::CSEO_ROLE, &mut prompts.cseo)?;
        read(&self.zero_shot_prompt, &crate::geo::methods::ZERO_SHOT_ROLE, &mut prompts.zero_shot)?;
        read(&self.tap_prompt, &crate::geo::tap::TAP_ROLE, &mut prompts.tap)?;
        Ok(prompts)
    }
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
    /// geobench: GEO-Bench's reading as published (comparable with its figures);
    /// fixed: with its duplicate-line and substring fixes; strict: whole words only.
    #[arg(long, value_enum, default_value_t = Parser::GeoBench)]
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
        GeoCommand::Report { run, by, family, weighting, json } => {
            let store = open().await?;
            let lists = crate::geo::import::stored_lists(store.as_ref()).await?;
            let report = crate::geo::report::report_with(store.as_ref(), &lists, &run, &family, weighting).await?;
            print_report(&report, &by, json)
        }
        GeoCommand::Datasets { json } => datasets(&lists, json),
        GeoCommand::Prompt { target, order, protocol } => {
            let lists = crate::geo::import::stored_lists(open().await?.as_ref()).await?;
            prompt(&lists, &target, order, &protocol.protocol()?)
        }
        GeoCommand::Score(args) => score_cmd(open, *args).await,
        GeoCommand::Import { file, variant, adopt_originals } => {
            let store = open().await?;
            import(store.as_ref(), &file, variant.as_deref(), adopt_originals).await
        }
        GeoCommand::Eval { ranker, method, dataset, protocol, json } => {
            let protocol = protocol.protocol()?;
            eval_cmd(&crate::geo::plan::chosen(&lists, &dataset)?, &ranker, &method, &protocol, json).await
        }
    }
}

/// `mirage geo score`: the detection report of a run, with the judge (and scorer) named
/// or the config's.
///
/// The judge's prompt file is read before the database is opened, so a wrong path touches
/// nothing stored.
async fn score_cmd<F, Fut>(open: F, args: ScoreArgs) -> anyhow::Result<()>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<std::sync::Arc<dyn crate::db::Store>>>,
{
    let ScoreArgs { run, judge, judge_mode, scorer, judge_prompt, config, fpr, either_fpr, calibration, json } = args;
    let base = crate::geo::judge::builtin();
    let judge_prompt = match judge_prompt {
        Some(path) => crate::geo::template::Template::from_file(&path, &crate::geo::judge::JUDGE_ROLE, &base)?,
        None => base,
    };
    let store = open().await?;
    let config = crate::config::Config::load(config.as_deref())?;
    let (name, spec) = match judge {
        Some(name) => {
            let spec = config.endpoint("--judge", &name)?.clone();
            (name, spec)
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
    if !(0.0..1.0).contains(&either_fpr) {
        bail!("--either-fpr: {either_fpr} is not a rate in [0, 1)");
    }
    let client = crate::llm::HttpLlm::new(spec.clone()).with_context(|| format!("judge {name}"))?;
    let scorer = match scorer {
        None => None,
        Some(name) => {
            let spec = config.endpoint("--scorer", &name)?;
            Some(crate::detect::EndpointPerplexity {
                model: spec.model.clone(),
                client: crate::llm::HttpLlm::new(spec.clone()).with_context(|| format!("scorer {name}"))?,
                cache: store.clone(),
            })
        }
    };
    let settings = crate::geo::score::Settings {
        judge: &client,
        judge_model: spec.model.clone(),
        judge_prompt,
        mode: judge_mode,
        fpr,
        either_fpr,
        calibration,
        scorer,
    };
    let lists = crate::geo::import::stored_lists(store.as_ref()).await?;
    let d = crate::geo::score::score(store.as_ref(), &lists, &run, &settings).await?;
    print_detection(&d, json)
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

async fn run(store: std::sync::Arc<dyn crate::db::Store>, args: GeoRunArgs) -> anyhow::Result<()> {
    let run_id = match args.resume {
        Some(id) => {
            let lists = crate::geo::import::stored_lists(store.as_ref()).await?;
            crate::geo::report::results(store.as_ref(), &lists, &id).await?;
            if crate::runs::geo::lists_changed(store.as_ref(), &id, &lists).await? {
                bail!("{}", crate::runs::geo::changed_lists_refusal(&id));
            }
            super::run::retry_errors(store.as_ref(), &id, args.retry_errors).await?;
            id
        }
        None => {
            let config = crate::config::Config::load(args.config.as_deref())?;
            let request = crate::geo::plan::GeoRequest {
                rankers: args.ranker.clone(),
                rerankers: args.reranker.clone(),
                lists: args.list.clone(),
                datasets: args.dataset.clone(),
                methods: args.method.clone(),
                protocol: args.protocol.protocol()?,
                tap_orders_apart: args.tap_orders_apart,
                prompts: args.prompts.prompts()?,
                attacker: args.attacker.clone(),
            };
            let spec = crate::geo::plan::spec_of(&request, &config)?;
            let id = crate::runs::geo::create_geo_run(store.as_ref(), spec).await?;
            if args.detach {
                println!("{id}");
                return Ok(());
            }
            id
        }
    };
    let world = std::sync::Arc::new(crate::env::World::build(Vec::new())?);
    super::run::follow(store.clone(), world, &run_id, args.concurrency, args.lease_secs, "mirage geo run").await?;
    println!("report: mirage geo report --run {run_id}");
    refuse_silent_rankers(store.as_ref(), &run_id).await?;
    let p = store.progress(&run_id).await?;
    if p.error > 0 {
        bail!(
            "{} of run {run_id}'s trials ended in error and are in no mean: `mirage geo report --run {run_id}` names \
             their variants and the targets the figures are over, and the trial pages give each reason; once the \
             cause is fixed, `mirage geo run --resume {run_id} --retry-errors` runs them again",
            p.error
        );
    }
    Ok(())
}

/// A ranker none of whose calls answered is an endpoint failure, not a ranker naming nothing,
/// and so is a row every order of which failed (a filter refusing every edited prompt): the
/// run's figures stay (every failure counted), and the command fails saying so.
async fn refuse_silent_rankers(store: &dyn crate::db::Store, run_id: &RunId) -> anyhow::Result<()> {
    let lists = crate::geo::import::stored_lists(store).await?;
    let (_, results, _) = crate::geo::report::results(store, &lists, run_id).await?;
    let (rankers, rows) = crate::geo::silent(&results);
    if !rankers.is_empty() {
        anyhow::bail!(
            "every order ranked by {} had a call fail after its retries: the endpoint is down or refusing, so \
             its rows measure its failures, not a ranker (the trial pages give each call's reason)",
            rankers.join(", ")
        );
    }
    if !rows.is_empty() {
        anyhow::bail!(
            "every order of {} had a call fail after its retries (a filter refusing those prompts?): these rows \
             measure failures, not the method (the trial pages give each call's reason)",
            rows.join(", ")
        );
    }
    Ok(())
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
    let got = crate::geo::import::read(&lists, &shown, &bytes, name, adopt)?;
    let already = crate::geo::import::store(store, &got, adopt).await?;
    println!("{}: {} texts stored as {} ({already} were already stored)", shown, got.texts.len(), got.variant);
    for (dataset, n) in &got.skipped {
        println!("skipped {n} rows of {dataset} (not shipped with Mirage)");
    }
    if got.mismatches.is_empty() {
        println!("every orig_text matches the stored description");
    }
    for (list, n) in &got.mismatches {
        println!("{list}: {n} items whose orig_text differs from the stored description");
    }
    if got.rebuilt > 0 {
        println!("{} suffixes rebuilt on the stored descriptions their originals differ from", got.rebuilt);
    }
    if adopt && !got.originals.is_empty() {
        println!(
            "adopted {} GEO-Bench originals; later runs rank them in place of the compiled-in text",
            got.originals.len()
        );
    } else if !got.mismatches.is_empty() {
        println!("--adopt-originals would rank GEO-Bench's originals (and its texts as given) for those items");
    }
    Ok(())
}
