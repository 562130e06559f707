//! `opcat catalog ...`
use super::CliResult;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Build a catalog image from a directory and push it to a registry.
    Push(super::catalog_push::Args),
}

pub async fn execute(command: Command) -> CliResult {
    match command {
        Command::Push(args) => super::catalog_push::execute(args).await,
    }
}
