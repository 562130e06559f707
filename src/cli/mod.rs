//! Command-line interface: argument types (clap) and the glue that calls into the library.
//!
//! Each subcommand lives in its own file with its own `Args` type and an `execute` function.
//! Errors reach `main` as boxed errors; `main` prints the whole source chain on stderr and
//! exits non-zero. No secret material ever reaches an error message (see `registry`).

use std::error::Error as StdError;

pub use crate::failure::error_chain;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bundle;
mod bundle_render;
mod bundle_validate;
mod catalog;
mod catalog_check;
mod catalog_push;
mod catalog_serve;
mod cluster_client;
mod crds;
pub mod registry_args;
mod resolve;
mod resolve_output;
mod run;
mod run_args;

/// Result type of every subcommand: an exit code, or an error to print.
pub type CliResult = Result<ExitCode, Box<dyn StdError + Send + Sync>>;

/// opcat: install operators from private OLM catalogs and give their workloads the catalog's
/// pull secrets.
///
/// The tooling subcommands (`catalog`, `bundle`, `resolve`, `crds`) work without a cluster;
/// `run` starts the controller manager.
#[derive(Debug, Parser)]
#[command(name = "opcat", version, about, long_about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Inspect, validate, render, push and serve file-based catalogs (FBC).
    #[command(subcommand)]
    Catalog(catalog::Command),
    /// Show the bundles opcat would install for a package, with its dependencies, or why none.
    Resolve(resolve::Args),
    /// Validate and render registry+v1 bundles; unpack and push bundle images.
    #[command(subcommand)]
    Bundle(bundle::Command),
    /// Print opcat's CustomResourceDefinitions as one YAML stream.
    Crds(crds::Args),
    /// Run the controller manager against a cluster.
    #[command(long_about = run_args::LONG_ABOUT)]
    Run(Box<run_args::Args>),
}

/// Parses arguments, runs the subcommand on a Tokio runtime and maps the outcome to an exit
/// code.
pub fn main() -> ExitCode {
    if invoked_as_health_probe() {
        return health_probe_main();
    }
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(dispatch(cli.command)) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {}", error_chain(error.as_ref()));
            ExitCode::FAILURE
        }
    }
}

/// Name under which the binary behaves as `grpc_health_probe` (OLM's catalog pod probes).
pub const HEALTH_PROBE_NAME: &str = "grpc_health_probe";

/// Whether the program was started as `grpc_health_probe` (a link to opcat in a catalog image).
fn invoked_as_health_probe() -> bool {
    std::env::args_os()
        .next()
        .map(std::path::PathBuf::from)
        .and_then(|path| path.file_name().map(|name| name == HEALTH_PROBE_NAME))
        .unwrap_or(false)
}

/// `grpc_health_probe FLAGS...`: the flags as Go reads them, on a small runtime.
fn health_probe_main() -> ExitCode {
    let flags: Vec<String> = std::env::args().skip(1).collect();
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(catalog_serve::run_probe(&flags)),
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            ExitCode::from(2)
        }
    }
}

async fn dispatch(command: Command) -> CliResult {
    match command {
        Command::Catalog(command) => catalog::execute(command).await,
        Command::Resolve(args) => resolve::execute(args).await,
        Command::Bundle(command) => bundle::execute(command).await,
        Command::Crds(args) => crds::execute(args),
        Command::Run(args) => run::execute(*args).await,
    }
}
