//! `opcat crds`: print opcat's CustomResourceDefinitions as one YAML stream.
//!
//! The output is committed as `deploy/crds/crds.yaml`; `tests/crds.rs` fails when they differ.

use std::io::Write;
use std::process::ExitCode;

use super::CliResult;

/// Print all CRDs as one YAML stream on stdout (`---` separated, stable order).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "The output is committed as deploy/crds/crds.yaml. Install it with \
    `kubectl apply --server-side -f -`: the ClusterServiceVersion CRD is too large for \
    client-side apply."
)]
pub struct Args {}

/// Renders the CRDs and writes them to stdout.
pub fn execute(_args: Args) -> CliResult {
    let yaml = crate::api::crds_yaml()?;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(yaml.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // The reader went away (`opcat crds | head`): nothing left to do.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(error) => Err(format!("cannot write the CRDs to stdout: {error}").into()),
    }
}
