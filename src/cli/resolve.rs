//! `opcat resolve`: show what opcat would install for a Subscription — its bundle and every
//! operator it depends on, from one or several catalogs — or why nothing can be installed.

use std::path::Path;
use std::process::ExitCode;

use super::CliResult;
use super::catalog::{SourceArgs, load_catalog, write_stdout};
use super::resolve_output::{ResolveOutput, render};
use crate::dependency::{
    CatalogId, Outcome, Problem, SolveError, SubscriptionRequest, VisibleCatalog, solve,
};
use crate::fbc::Catalog;

/// Arguments of `opcat resolve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Candidates are tried as OLM tries them: the Subscription's package only from its own catalog \
(SOURCE), channel head first; every dependency from every catalog, the requiring bundle's own \
catalog first, then higher priority, then catalogs in --namespace before others, then catalog \
name; within a catalog the default channel first, each channel from its head. One bundle per \
package, one provider per API. Exit code 1 when nothing can be installed; the message names \
what is missing or in conflict.")]
pub struct Args {
    /// The Subscription's catalog, `[[NAMESPACE/]NAME[@PRIORITY]=]SOURCE`: a directory (every
    /// file in it is read, except those matched by `.indexignore` files), a single YAML or JSON
    /// file, or a catalog image reference (a path that exists is a path; an image must name a
    /// registry host, a tag or a digest, anything else is a missing path; an image's catalog is
    /// read from the directory its `operators.operatorframework.io.index.configs.v1` label
    /// names, default `/configs`). The optional prefix names it as --catalog does.
    #[arg(value_name = "SOURCE")]
    pub source: String,
    #[command(flatten)]
    pub registry: super::registry_args::RegistryArgs,
    /// Another catalog visible to the namespace, where dependencies may come from (repeatable):
    /// `[[NAMESPACE/]NAME[@PRIORITY]=]SOURCE`, SOURCE a directory, file or image as for the
    /// Subscription's catalog. NAMESPACE defaults to --namespace (use another one, e.g.
    /// `olm/community=...`, for a catalog of the global catalog namespace), NAME to the last
    /// part of SOURCE, PRIORITY (CatalogSource `spec.priority`, higher first) to 0.
    #[arg(long = "catalog", value_name = "[NAME[@PRIORITY]=]SOURCE")]
    pub catalogs: Vec<String>,
    /// The Subscription's namespace.
    #[arg(long, value_name = "NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// Package to resolve (Subscription `spec.name`).
    #[arg(long, value_name = "PACKAGE")]
    pub package: String,
    /// Channel (Subscription `spec.channel`); default: the package's default channel.
    #[arg(long, value_name = "CHANNEL")]
    pub channel: Option<String>,
    /// The installed CSV (Subscription `status.installedCSV`): resolve the upgrade from it,
    /// i.e. the entry closest to the channel head that replaces or skips it or whose skipRange
    /// contains its version. Without it: a first install (the channel head, or the newest entry
    /// whose dependencies can be met).
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

/// One `--catalog` (or SOURCE) argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogSpec {
    /// The CatalogSource it stands for.
    pub id: CatalogId,
    /// Its `spec.priority`.
    pub priority: i32,
    /// Directory, file or image.
    pub source: String,
}

impl CatalogSpec {
    /// Parses `[[NAMESPACE/]NAME[@PRIORITY]=]SOURCE`. A SOURCE that exists as a path is never
    /// split, so paths containing `=` still work.
    pub fn parse(text: &str, namespace: &str) -> Result<Self, String> {
        let prefixed = text
            .split_once('=')
            .filter(|(prefix, _)| !Path::new(text).exists() && is_prefix(prefix));
        let Some((prefix, source)) = prefixed else {
            return Ok(Self {
                id: CatalogId::new(namespace, default_name(text)),
                priority: 0,
                source: text.to_owned(),
            });
        };
        let (id, priority) = match prefix.split_once('@') {
            Some((id, priority)) => (
                id,
                priority
                    .parse()
                    .map_err(|e| format!("invalid priority {priority:?} in {text:?}: {e}"))?,
            ),
            None => (prefix, 0),
        };
        let id = match id.split_once('/') {
            Some((ns, name)) => CatalogId::new(ns, name),
            None => CatalogId::new(namespace, id),
        };
        Ok(Self {
            id,
            priority,
            source: source.to_owned(),
        })
    }
}

fn is_prefix(prefix: &str) -> bool {
    let name = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    let id = prefix.split_once('@').map_or(prefix, |(id, _)| id);
    match id.split_once('/') {
        Some((ns, n)) => name(ns) && name(n),
        None => name(id),
    }
}

/// The last part of a path or image repository: `.../catalogs/v4.16/` -> `v4.16`,
/// `quay.io/org/catalog:v1` -> `catalog`.
fn default_name(source: &str) -> String {
    let trimmed = source.trim_end_matches('/');
    let last = trimmed.rsplit('/').next().unwrap_or(trimmed);
    let last = if Path::new(source).exists() {
        last
    } else {
        let last = last.split('@').next().unwrap_or(last);
        last.split(':').next().unwrap_or(last)
    };
    if last.is_empty() {
        "catalog".to_owned()
    } else {
        last.to_ascii_lowercase()
    }
}

/// Runs `opcat resolve`.
pub async fn execute(args: Args) -> CliResult {
    let parsed: Result<Vec<CatalogSpec>, String> = std::iter::once(&args.source)
        .chain(&args.catalogs)
        .map(|text| CatalogSpec::parse(text, &args.namespace))
        .collect();
    let specs = match parsed {
        Ok(specs) => specs,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    for (i, spec) in specs.iter().enumerate() {
        if specs[..i].iter().any(|s| s.id == spec.id) {
            eprintln!(
                "error: two catalogs are named {}; name them with NAME=SOURCE",
                spec.id
            );
            return Ok(ExitCode::from(2));
        }
    }
    let mut catalogs: Vec<Catalog> = Vec::new();
    for spec in &specs {
        let source = SourceArgs {
            source: spec.source.clone(),
            registry: args.registry.clone(),
        };
        match load_catalog(&source).await? {
            Ok(catalog) => catalogs.push(catalog),
            Err(code) => return Ok(code),
        }
    }
    // An installed CSV outside the channel, without a version to place it, cannot be upgraded
    // from: an error, never "already at the latest version".
    let outside = channel_without_installed(&args, &catalogs[0]);
    if let (Some(channel), Some(installed), None) =
        (&outside, &args.installed, &args.installed_version)
    {
        eprintln!(
            "error: --installed {installed} is not an entry of channel {channel} of package {} \
             in catalog {}; name a CSV of that channel, or give --installed-version to resolve \
             the upgrade of a CSV the catalog no longer lists",
            args.package, args.source
        );
        return Ok(ExitCode::FAILURE);
    }
    let problem = Problem {
        namespace: &args.namespace,
        subscription: SubscriptionRequest {
            name: args.package.clone(),
            package: args.package.clone(),
            channel: args.channel.clone(),
            starting_csv: args.starting_csv.clone(),
            catalog: specs[0].id.clone(),
            installed: args.installed.clone(),
            installed_version: args.installed_version.clone(),
        },
        catalogs: specs
            .iter()
            .zip(&catalogs)
            .map(|(spec, catalog)| VisibleCatalog {
                id: spec.id.clone(),
                priority: spec.priority,
                catalog,
            })
            .collect(),
        installed: Vec::new(),
    };
    match solve(&problem) {
        Ok(Outcome::AtLatest { installed, channel }) if outside.is_some() => {
            let version = args
                .installed_version
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            eprintln!(
                "error: no entry of channel {channel} of package {} upgrades from {installed} \
                 ({version}), which the channel does not list: none replaces or skips it or has \
                 a skipRange containing {version}",
                args.package
            );
            Ok(ExitCode::FAILURE)
        }
        Ok(outcome) => write_stdout(render(&outcome, &problem, args.output)?.as_bytes()),
        Err(error) => {
            let text = match &error {
                SolveError::Unsatisfiable { message } => message.clone(),
                other => other.to_string(),
            };
            for line in text.lines() {
                eprintln!("error: {line}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

/// The channel the Subscription follows when `--installed` names a CSV that it does not list
/// (a CSV the catalog no longer has, or a typo), else `None`. Unknown packages and channels are
/// left to the resolver, which names them.
fn channel_without_installed(args: &Args, catalog: &Catalog) -> Option<String> {
    let installed = args.installed.as_deref()?;
    let package = catalog.package(&args.package)?;
    let channel = match &args.channel {
        Some(name) => package.channel(name)?,
        None => package.default_channel()?,
    };
    channel
        .entry(installed)
        .is_none()
        .then(|| channel.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_specs_name_namespace_and_priority() {
        let spec = |text: &str| CatalogSpec::parse(text, "team-a").unwrap();
        assert_eq!(
            spec("olm/community@-5=quay.io/org/community-index:v4.21"),
            CatalogSpec {
                id: CatalogId::new("olm", "community"),
                priority: -5,
                source: "quay.io/org/community-index:v4.21".into()
            }
        );
        assert_eq!(spec("ops@10=./catalog").id, CatalogId::new("team-a", "ops"));
        assert_eq!(spec("ops@10=./catalog").priority, 10);
        assert_eq!(
            spec("/data/catalogs/v4.16/").id,
            CatalogId::new("team-a", "v4.16")
        );
        assert_eq!(
            spec("registry.example.com/org/certified:v4.16").id.name,
            "certified"
        );
        assert_eq!(spec("registry.example.com/org/x@sha256:abc").id.name, "x");
        assert!(CatalogSpec::parse("ops@high=./c", "ns").is_err());
    }
}
