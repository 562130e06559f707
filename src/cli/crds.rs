//! `opcat crds`
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn execute(_args: Args) -> CliResult {
    Err("not built yet".into())
}
