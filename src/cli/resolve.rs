//! `opcat resolve`
use super::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {}

pub async fn execute(_args: Args) -> CliResult {
    Err("not built yet".into())
}
