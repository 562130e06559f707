//! `opcat bundle validate DIR|IMAGE`: every problem of a bundle at once, errors then warnings,
//! and exit code 1 when there is an error (as `operator-sdk bundle validate`).

use std::path::PathBuf;
use std::process::ExitCode;

use super::CliResult;
use super::registry_args::RegistryArgs;
use crate::bundle::check::{BundleReport, check_bundle_dir};
use crate::registry::source::{Source, SourceError};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Arguments of `bundle validate`.
#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    /// The bundle: a directory with manifests/ and metadata/, or a bundle image (an image must
    /// name a registry host, a tag or a digest; anything else is a directory).
    #[arg(value_name = "DIR|IMAGE")]
    pub bundle: String,
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// A bundle on disk: the directory given, or the pulled image's root.
pub(super) struct LocalBundle {
    /// The bundle directory.
    pub dir: PathBuf,
    /// What to call it in messages: the argument, with the digest for an image.
    pub shown: String,
}

/// `DIR|IMAGE` → a bundle directory on disk (pulling the image with the registry flags).
pub(super) async fn local_bundle(
    text: &str,
    registry: &RegistryArgs,
) -> Result<LocalBundle, BoxError> {
    match Source::parse(text) {
        Ok(Source::Path(dir)) => {
            if !dir.is_dir() {
                return Err(format!("{text} is not a directory: a bundle is a directory with manifests/ and metadata/").into());
            }
            Ok(LocalBundle {
                dir,
                shown: text.to_owned(),
            })
        }
        Ok(Source::Image(image)) => {
            let keyring = registry.keyring(&image)?;
            let unpacked = registry.registry()?.fetch(&image, &keyring).await?;
            Ok(LocalBundle {
                dir: unpacked.root.clone(),
                shown: format!("{image} ({})", unpacked.digest),
            })
        }
        Err(SourceError::NoSuchPath { path }) => Err(format!("no such directory: {path}").into()),
        Err(error) => Err(error.into()),
    }
}

/// Runs `bundle validate`.
pub async fn validate(args: ValidateArgs) -> CliResult {
    let local = local_bundle(&args.bundle, &args.registry).await?;
    let dir = local.dir.clone();
    let report = tokio::task::spawn_blocking(move || check_bundle_dir(&dir))
        .await
        .map_err(|e| format!("bundle check task failed: {e}"))?;
    for finding in report.errors() {
        eprintln!("error: {finding}");
    }
    for finding in report.warnings() {
        eprintln!("warning: {finding}");
    }
    if report.is_valid() {
        println!("{}", summary(&local.shown, &report));
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "bundle {} is invalid: {}, {}",
            local.shown,
            count(report.errors().count(), "error"),
            count(report.warnings().count(), "warning")
        );
        Ok(ExitCode::FAILURE)
    }
}

/// `bundle DIR is valid: widget-operator.v1.2.0 (package widget-operator), 4 manifests, 0 warnings`.
fn summary(shown: &str, report: &BundleReport) -> String {
    format!(
        "bundle {shown} is valid: {} (package {}), {}, {}",
        report.csv.as_deref().unwrap_or("?"),
        report.package.as_deref().unwrap_or("?"),
        count(report.manifests, "manifest"),
        count(report.warnings().count(), "warning")
    )
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}
