//! The `mirage` binary: parses the command line, sets up logging, dispatches.

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Stack of each runtime thread. Server-side rendering of the dashboard's deeper pages needs
/// more than the 2 MiB default in debug builds.
const STACK: usize = 8 * 1024 * 1024;

fn main() -> std::process::ExitCode {
    match tokio::runtime::Builder::new_multi_thread().enable_all().thread_stack_size(STACK).build() {
        Ok(runtime) => runtime.block_on(run()),
        Err(e) => {
            eprintln!("error: starting the runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> std::process::ExitCode {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("server=info,mirage=info,tower_http=warn"));
    let fmt = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    if std::env::var("LOG_FORMAT").is_ok_and(|f| f == "json") {
        fmt.json().init();
    } else {
        fmt.compact().init();
    }
    match server::cli::run(server::cli::Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
