//! Coverage of every interval and test the product prints, measured by simulation at the
//! cluster counts of real runs and the built-in GEO datasets (the book's statistics page).
//!
//! `cargo run --release -p server --example coverage [-- REPLICATES]` (default 2,000).

fn main() {
    let replicates = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(2_000);
    let started = std::time::Instant::now();
    let mut rows = server::stats::coverage::run(replicates);
    rows.extend(server::judge::validity::coverage::rows(replicates));
    print!("{}", server::stats::coverage::markdown(&rows));
    let broken = rows.iter().filter(|r| !r.holds()).count();
    eprintln!("{} rows, {broken} outside the target, {:.1} s", rows.len(), started.elapsed().as_secs_f64());
}
