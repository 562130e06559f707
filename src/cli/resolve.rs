//! `opcat resolve`: show the bundle opcat would install next for a package.

use std::process::ExitCode;

use serde::Serialize;

use super::CliResult;
use super::catalog::{load_catalog, write_stdout};
use crate::resolve::{Resolution, ResolveRequest, resolve};

/// Arguments of `opcat resolve`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub source: super::catalog::SourceArgs,
    /// Package to resolve (Subscription `spec.name`).
    #[arg(long, value_name = "PACKAGE")]
    pub package: String,
    /// Channel (Subscription `spec.channel`); default: the package's default channel.
    #[arg(long, value_name = "CHANNEL")]
    pub channel: Option<String>,
    /// The installed CSV (Subscription `status.installedCSV`): resolve the upgrade from it,
    /// i.e. the entry closest to the channel head that replaces or skips it or whose skipRange
    /// contains its version. Without it: a first install (the channel head).
    #[arg(long, value_name = "CSV", conflicts_with = "starting_csv")]
    pub installed: Option<String>,
    /// Version of the installed CSV, when the catalog no longer lists it (used for skipRange).
    #[arg(long, value_name = "VERSION", requires = "installed")]
    pub installed_version: Option<semver::Version>,
    /// First install of this CSV instead of the channel head (Subscription `spec.startingCSV`).
    #[arg(long, value_name = "CSV")]
    pub starting_csv: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ResolveOutput::Text)]
    pub output: ResolveOutput,
}

/// Output format of `opcat resolve`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ResolveOutput {
    /// `key: value` lines, or a sentence when already at the latest version.
    #[default]
    Text,
    /// One JSON object with `result` = `install` or `at-latest`.
    Json,
}

#[derive(Serialize)]
#[serde(tag = "result", rename_all = "kebab-case")]
enum ResolutionJson<'a> {
    Install {
        package: &'a str,
        channel: &'a str,
        bundle: &'a str,
        version: String,
        image: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        replaces: Option<&'a str>,
    },
    AtLatest {
        package: &'a str,
        channel: &'a str,
        installed: &'a str,
    },
}

/// Runs `opcat resolve`.
pub async fn execute(args: Args) -> CliResult {
    let catalog = match load_catalog(&args.source).await? {
        Ok(catalog) => catalog,
        Err(code) => return Ok(code),
    };
    let request = ResolveRequest {
        package: args.package.clone(),
        channel: args.channel.clone(),
        installed: args.installed.clone(),
        installed_version: args.installed_version.clone(),
        starting_csv: args.starting_csv.clone(),
    };
    let resolution = match resolve(&catalog, &request) {
        Ok(resolution) => resolution,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let json = match &resolution {
        Resolution::Install(b) => ResolutionJson::Install {
            package: &b.package,
            channel: &b.channel,
            bundle: &b.name,
            version: b.version.to_string(),
            image: &b.image,
            replaces: b.replaces.as_deref(),
        },
        Resolution::AtLatest { installed, channel } => ResolutionJson::AtLatest {
            package: &args.package,
            channel,
            installed,
        },
    };
    let text = match args.output {
        ResolveOutput::Json => {
            let mut text = serde_json::to_string_pretty(&json)?;
            text.push('\n');
            text
        }
        ResolveOutput::Text => match json {
            ResolutionJson::Install {
                package,
                channel,
                bundle,
                version,
                image,
                replaces,
            } => {
                let mut text = format!(
                    "bundle:   {bundle}\nversion:  {version}\nimage:    {image}\nchannel:  {channel}\npackage:  {package}\n"
                );
                if let Some(replaces) = replaces {
                    text.push_str(&format!("replaces: {replaces}\n"));
                }
                text
            }
            ResolutionJson::AtLatest {
                package,
                channel,
                installed,
            } => format!(
                "{installed} is already at the latest version in channel {channel} of package {package}\n"
            ),
        },
    };
    write_stdout(text.as_bytes())
}
