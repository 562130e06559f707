//! `opcat catalog ...`: validate, list, render, push and serve file-based catalogs.
//!
//! Every subcommand reads its catalog through [`load_local`], the one place that turns a
//! SOURCE argument into catalog content.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{CliResult, catalog_check};
use crate::fbc::{self, Catalog, DeclarativeConfig, LoadError};

/// Subcommands of `opcat catalog`.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Check a catalog with the rules of `opm validate` and print every problem.
    ///
    /// Exits 0 when the catalog is valid (printing a one-line summary: packages, channels,
    /// bundles), 1 when it is not (all problems on stderr, as a tree: package, then channel or
    /// bundle, then the problem) or has no packages at all.
    Validate(SourceArgs),
    /// List the packages, channels or bundles of a catalog.
    ///
    /// The text output has the columns of `opm alpha list`; `channels` shows each channel's
    /// head (decided by the upgrade graph, not by version numbers).
    List(ListArgs),
    /// Print the catalog as a stream of JSON blobs, like `opm render`.
    Render(SourceArgs),
    /// Build a catalog image from a directory and push it to a registry.
    Push(super::catalog_push::Args),
    /// Serve a catalog over the operator-registry gRPC API (as `opm serve`).
    Serve(super::catalog_serve::ServeArgs),
    /// Check a gRPC server's health like `grpc_health_probe` (same flags and exit codes).
    Probe(super::catalog_serve::ProbeArgs),
}

/// A catalog to read.
#[derive(Debug, clap::Args)]
pub struct SourceArgs {
    /// The catalog: a directory (every file in it is read, except those matched by
    /// `.indexignore` files), a single YAML or JSON file, or a catalog image reference. A path
    /// that exists is a path; an image must name a registry host (`quay.io/org/catalog`), a tag
    /// (`catalog:v1`) or a digest; anything else is a missing path ("no such directory"). An
    /// image's catalog is read from the directory its
    /// `operators.operatorframework.io.index.configs.v1` label names, default `/configs`.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    #[command(flatten)]
    pub registry: super::registry_args::RegistryArgs,
}

/// What `catalog list` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListKind {
    /// Packages with their display name and default channel.
    Packages,
    /// Channels with their head bundle.
    Channels,
    /// Channel entries with their upgrade edges and image.
    Bundles,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Output {
    /// Aligned columns (byte-identical to `opm alpha list`).
    #[default]
    Text,
    /// One JSON document: packages, their channels (with head) and entries.
    Json,
}

/// Arguments of `catalog list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// What to list.
    #[arg(value_enum)]
    pub kind: ListKind,
    #[command(flatten)]
    pub source: SourceArgs,
    /// Only this package.
    #[arg(long, value_name = "PACKAGE")]
    pub package: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Runs a `catalog` subcommand.
pub async fn execute(command: Command) -> CliResult {
    match command {
        Command::Validate(args) => validate(args).await,
        Command::List(args) => list(args).await,
        Command::Render(args) => render(args).await,
        Command::Push(args) => super::catalog_push::execute(args).await,
        Command::Serve(args) => super::catalog_serve::serve_catalog(args).await,
        Command::Probe(args) => super::catalog_serve::probe_health(args).await,
    }
}

/// The catalog named by SOURCE and where it was read from (the directory or file, for an image
/// its unpacked catalog directory). A bundle directory is refused with a pointer to the right
/// command.
async fn load_local(
    args: &SourceArgs,
) -> Result<(PathBuf, DeclarativeConfig), Box<dyn std::error::Error + Send + Sync>> {
    let local = args.registry.local_catalog(&args.source).await?;
    let path = local.path;
    if let Some(error) = catalog_check::bundle_dir_error(&path) {
        return Err(error.into());
    }
    let (read, shown) = (path.clone(), path.clone());
    let config = tokio::task::spawn_blocking(move || fbc::load(&read))
        .await
        .map_err(|e| LoadError::Walk {
            path: shown,
            message: format!("loader task failed: {e}"),
        })??;
    Ok((path, config))
}

/// Reads and validates the catalog named by SOURCE; on invalid content prints the problems
/// and returns the exit code to use. A catalog without packages is an error.
pub(super) async fn load_catalog(
    source: &SourceArgs,
) -> Result<Result<Catalog, ExitCode>, Box<dyn std::error::Error + Send + Sync>> {
    let (path, config) = load_local(source).await?;
    if let Some(error) = catalog_check::empty_error(&path, &config) {
        return Err(error.into());
    }
    let duplicates = catalog_check::duplicate_package_files(&path, &config);
    match Catalog::new(config) {
        Ok(catalog) => Ok(Ok(catalog)),
        Err(problems) => {
            eprintln!("{problems}");
            print_errors(&duplicates);
            Ok(Err(ExitCode::FAILURE))
        }
    }
}

/// Prints `error: <line>` for each line.
fn print_errors(lines: &[String]) {
    for line in lines {
        eprintln!("error: {line}");
    }
}

async fn validate(args: SourceArgs) -> CliResult {
    let (path, config) = load_local(&args).await?;
    match fbc::validate(&config) {
        Ok(()) => match catalog_check::empty_error(&path, &config) {
            Some(error) => Err(error.into()),
            None => {
                let mut line = catalog_check::summary(Path::new(&args.source), &config);
                line.push('\n');
                write_stdout(line.as_bytes())
            }
        },
        Err(problems) => {
            eprintln!("{problems}");
            print_errors(&catalog_check::duplicate_package_files(&path, &config));
            Ok(ExitCode::FAILURE)
        }
    }
}

async fn list(args: ListArgs) -> CliResult {
    let catalog = match load_catalog(&args.source).await? {
        Ok(catalog) => catalog,
        Err(code) => return Ok(code),
    };
    let package = args.package.as_deref();
    let text = match args.output {
        Output::Text => match args.kind {
            ListKind::Packages => fbc::list::packages_text(&catalog, package)?,
            ListKind::Channels => fbc::list::channels_text(&catalog, package)?,
            ListKind::Bundles => fbc::list::bundles_text(&catalog, package)?,
        },
        Output::Json => {
            let mut json = serde_json::to_string_pretty(&fbc::list::to_json(&catalog, package)?)?;
            json.push('\n');
            json
        }
    };
    write_stdout(text.as_bytes())
}

async fn render(args: SourceArgs) -> CliResult {
    let (_, config) = load_local(&args).await?;
    let mut out = Vec::new();
    fbc::render::render(&config, &mut out)?;
    write_stdout(&out)
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub(super) fn write_stdout(bytes: &[u8]) -> CliResult {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(e) => Err(e.into()),
    }
}
