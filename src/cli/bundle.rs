//! `opcat bundle ...`
use super::CliResult;

#[derive(Debug, clap::Subcommand)]
pub enum Command {}

pub async fn execute(command: Command) -> CliResult {
    match command {}
}
