//! Where `mirage score FILE` spends its time (a documented command, not a test):
//!
//! ```sh
//! mirage --db /tmp/b18.db run --agent surface,explorer,oracle,explorer+keyword \
//!     --levels L0,L1,L3 --seeds 0,1 --concurrency 16 --out /tmp/b18.jsonl   # 18,000 trajectories
//! cargo run --release -p server --example bench_score_file -- /tmp/b18.jsonl
//! ```
//!
//! Times each stage over the whole file, one thread: reading the lines; parsing each into
//! a JSON value; checking it against the trajectory schema; turning the value into a
//! trajectory; parsing straight into a trajectory instead; the rule-based judges. Then the
//! parse limit (reading the file and parsing every line into a JSON value on every core,
//! the yardstick of the scoring target) and the whole streaming reader
//! (`judge::stream_scores`, what `mirage score FILE` runs).

use std::io::BufRead;
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("a trajectory file");
    let world = server::env::World::build(server::corpus::generate::corpus()).expect("world");

    let t = Instant::now();
    let file = std::fs::File::open(&path).expect("open");
    let lines: Vec<String> = std::io::BufReader::new(file).lines().map(|l| l.expect("line")).collect();
    let bytes: usize = lines.iter().map(String::len).sum();
    println!("read {} lines ({:.0} MB): {:.3} s", lines.len(), bytes as f64 / 1e6, t.elapsed().as_secs_f64());

    let t = Instant::now();
    let values: Vec<serde_json::Value> = lines.iter().map(|l| serde_json::from_str(l).expect("json")).collect();
    println!("parse to JSON values: {:.3} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let valid = values.iter().filter(|v| server::judge::schema_valid(v)).count();
    println!("schema check ({valid} valid): {:.3} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let trajs: Vec<server::judge::Trajectory> =
        values.into_iter().map(|v| serde_json::from_value(v).expect("trajectory")).collect();
    println!("values into trajectories: {:.3} s", t.elapsed().as_secs_f64());
    drop(trajs);

    let t = Instant::now();
    let trajs: Vec<server::judge::Trajectory> =
        lines.iter().map(|l| serde_json::from_str(l).expect("trajectory")).collect();
    println!("parse straight into trajectories: {:.3} s", t.elapsed().as_secs_f64());

    let t = Instant::now();
    let scorer = server::judge::Scorer::new(&world);
    let n = trajs.iter().filter_map(|tr| scorer.score(tr)).count();
    println!("rule-based judges ({n} trajectories): {:.3} s", t.elapsed().as_secs_f64());
    drop(trajs);
    drop(lines);

    // The parse limit: what merely reading and parsing the file takes on every core.
    let t = Instant::now();
    let file = std::fs::File::open(&path).expect("open");
    let lines: Vec<String> = std::io::BufReader::new(file).lines().map(|l| l.expect("line")).collect();
    let parsed = server::judge::on_every_core(&lines, |l| serde_json::from_str::<serde_json::Value>(l).is_ok());
    let parsed = parsed.into_iter().filter(|ok| *ok).count();
    println!(
        "parse limit: reading and parsing every line into a JSON value on every core ({parsed} lines): {:.3} s",
        t.elapsed().as_secs_f64()
    );
    drop(lines);

    let t = Instant::now();
    let file = std::fs::File::open(&path).expect("open");
    let bytes = file.metadata().ok().map(|m| m.len());
    let scores = server::judge::stream_scores(
        (&path, bytes),
        std::io::BufReader::new(file),
        &world,
        "the built-in corpus",
        server::judge::aside::Keep::All,
    )
    .expect("readable")
    .expect("a sound file");
    println!("streaming reader, every core ({} trajectories scored): {:.3} s", scores.len(), t.elapsed().as_secs_f64());
}
