//! `opcat catalog push DIR IMAGE`
use std::path::PathBuf;
use std::process::ExitCode;

use super::CliResult;
use super::registry_args::RegistryArgs;
use crate::registry::push::build_catalog_image;

/// Build a reproducible catalog image from a file-based catalog directory and push it.
///
/// The directory's contents go under /configs, and the image is labelled
/// operators.operatorframework.io.index.configs.v1=/configs. The same directory always gives
/// the same digest.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// File-based catalog directory (its contents become /configs).
    pub dir: PathBuf,
    /// Image to push to, e.g. registry.example.com/catalogs/my-catalog:v1.
    pub image: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

pub async fn execute(args: Args) -> CliResult {
    let built = build_catalog_image(&args.dir)?;
    args.registry.push(&args.image, &built).await?;
    Ok(ExitCode::SUCCESS)
}
