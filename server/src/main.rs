//! The `mirage` binary: parses the command line, sets up logging, dispatches.

use clap::Parser;
use tracing_subscriber::EnvFilter;

/// Stack of each runtime thread. Server-side rendering of the dashboard's deeper pages needs
/// more than the 2 MiB default in debug builds.
const STACK: usize = 8 * 1024 * 1024;

/// The exit status of a Unix tool whose reader went away (128 + SIGPIPE).
const BROKEN_PIPE: u8 = 141;

fn main() -> std::process::ExitCode {
    quiet_on_broken_pipe();
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
        // The reader of our output went away (`mirage corpus export | head`): quietly.
        Err(e) if server::cli::reader_went_away(&e) => std::process::ExitCode::from(BROKEN_PIPE),
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `mirage runs list | head`: once the reader has gone, printing fails with a broken pipe
/// and `println!` panics. Such a panic ends the process quietly with status 141, as a Unix
/// tool killed by SIGPIPE does; every other panic is reported as before.
fn quiet_on_broken_pipe() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if message.starts_with("failed printing to stdout") && message.contains("Broken pipe") {
            std::process::exit(i32::from(BROKEN_PIPE));
        }
        report(info);
    }));
}
