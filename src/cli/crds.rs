//! `opcat crds`: print opcat's CustomResourceDefinitions as one YAML stream.
//!
//! The output is committed as `deploy/crds/crds.yaml`; `tests/crds.rs` fails when they differ.

use std::io::Write;
use std::process::ExitCode;

use super::CliResult;

/// Print all CRDs as one YAML stream on stdout (`---` separated, stable order).
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn execute(_args: Args) -> CliResult {
    let yaml = crate::api::crds_yaml()?;
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(yaml.as_bytes())?;
    stdout.flush()?;
    Ok(ExitCode::SUCCESS)
}
