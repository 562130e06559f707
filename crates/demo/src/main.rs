//! `opcat-demo`: see the library documentation. Exit code 0 when every step held, 1 on a
//! failure (with the reason on stderr), 130 when interrupted; everything it started is stopped
//! and removed in every case.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

/// Installs an operator from a private catalog with opcat, on this machine: a real registry,
/// the real opcat binary, an in-memory stand-in for the Kubernetes API.
#[derive(Debug, Parser)]
#[command(name = "opcat-demo")]
struct Args {
    /// The opcat binary (default: `opcat` next to this program, as cargo builds them).
    #[arg(long, value_name = "PATH")]
    opcat: Option<PathBuf>,
    /// The opcat repository (bundles/, catalog/, deploy/).
    #[arg(long, value_name = "DIR", default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))]
    repo: PathBuf,
    /// Longest wait for any one step, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    timeout: u64,
    /// RUST_LOG for opcat run (its log is shown when a step fails).
    #[arg(long, value_name = "FILTER", default_value = "info")]
    opcat_log: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let opcat = args.opcat.unwrap_or_else(|| {
        std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("opcat")))
            .unwrap_or_else(|| PathBuf::from("opcat"))
    });
    let options = opcat_demo::Options {
        opcat,
        repo: args.repo,
        timeout: Duration::from_secs(args.timeout),
        log_filter: args.opcat_log,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("opcat-demo: FAILED: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
        let mut stdout = std::io::stdout();
        tokio::select! {
            result = opcat_demo::run(&options, &mut stdout) => match result {
                Ok(_) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("\nopcat-demo: FAILED: {}", chain(&error));
                    ExitCode::FAILURE
                }
            },
            // Dropping the demo's future stops and removes everything it started.
            signal = interrupted() => {
                eprintln!("\nopcat-demo: {signal}: stopped; everything it started is removed");
                ExitCode::from(130)
            }
        }
    })
}

/// Resolves on Ctrl-C or SIGTERM, naming it.
async fn interrupted() -> &'static str {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(term) => term,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return "interrupted";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "interrupted",
        _ = term.recv() => "terminated",
    }
}

/// The error and its sources, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
