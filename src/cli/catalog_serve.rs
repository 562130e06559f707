//! `opcat catalog serve SOURCE` (the registry gRPC API over a file-based catalog) and
//! `opcat catalog probe` (a `grpc_health_probe`).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use super::CliResult;
use super::catalog::{SourceArgs, load_catalog};
use crate::registry_grpc::{probe, serve};
use crate::telemetry::{self, LogFormat};

/// Serve a catalog over the operator-registry gRPC API, as `opm serve` does.
///
/// Every RPC of `api.Registry`, the health service (`grpc.health.v1`, serving for `""` and
/// `Registry`) and server reflection, on plaintext HTTP/2. The catalog is read and validated
/// once at start (no cache is built) and answered from memory; SIGTERM or Ctrl-C stops the
/// server after the requests in flight. A CatalogSource with `spec.address` pointing here, OLM's
/// or opcat's, reads it.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub source: SourceArgs,
    /// Address to listen on: HOST:PORT, or :PORT for every IPv4 interface.
    #[arg(long, value_name = "ADDR", default_value = ":50051")]
    pub listen: String,
    /// Port to listen on, on every IPv4 interface (`opm serve --port`); overrides --listen.
    #[arg(short, long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Read and validate the catalog, then exit without serving (`opm serve --cache-only`).
    #[arg(long)]
    pub cache_only: bool,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Check the health of a gRPC server like `grpc_health_probe` (same flags, exit codes).
///
/// Flags, Go style: -addr=HOST:PORT (or :PORT), -service=NAME, -connect-timeout=DURATION,
/// -rpc-timeout=DURATION. Exit codes: 0 serving, 1 bad arguments, 2 no connection, 3 the call
/// failed, 4 not serving. The `opcat` binary also behaves so when started under the name
/// `grpc_health_probe`, the command OLM's catalog pods probe with.
#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// The probe's flags.
    #[arg(
        value_name = "FLAG",
        num_args = 0..,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub flags: Vec<String>,
}

pub async fn serve_catalog(args: ServeArgs) -> CliResult {
    let started = Instant::now();
    telemetry::init(args.log_format, "info")?;
    let catalog = match load_catalog(&args.source).await? {
        Ok(catalog) => Arc::new(catalog),
        Err(code) => return Ok(code),
    };
    let packages = catalog.packages().count();
    let bundles: usize = catalog.packages().map(|p| p.bundles().count()).sum();
    if args.cache_only {
        tracing::info!(packages, bundles, "catalog valid");
        return Ok(ExitCode::SUCCESS);
    }
    let listen = match args.port {
        Some(port) => format!("0.0.0.0:{port}"),
        None => match args.listen.strip_prefix(':') {
            Some(port) => format!("0.0.0.0:{port}"),
            None => args.listen.clone(),
        },
    };
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|error| format!("cannot listen on {listen}: {error}"))?;
    let address = listener.local_addr()?;
    tracing::info!(
        %address,
        source = %args.source.source,
        packages,
        bundles,
        startup_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "serving registry"
    );
    serve(catalog, listener, shutdown_signal()).await?;
    tracing::info!("registry server stopped");
    Ok(ExitCode::SUCCESS)
}

/// Completes on SIGTERM or SIGINT.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {}
                    _ = terminate.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
    tracing::info!("stopping: finishing requests in flight");
}

pub async fn probe_health(args: ProbeArgs) -> CliResult {
    Ok(run_probe(&args.flags).await)
}

/// Parses `flags`, probes, prints the outcome and returns `grpc_health_probe`'s exit code.
pub async fn run_probe(flags: &[String]) -> ExitCode {
    let outcome = match probe::parse_args(flags) {
        Ok(settings) => probe::run(&settings).await,
        Err(error) => probe::Outcome::InvalidArguments(error),
    };
    if outcome == probe::Outcome::Serving {
        println!("{}", outcome.message());
    } else {
        eprintln!("{}", outcome.message());
    }
    ExitCode::from(outcome.exit_code())
}
