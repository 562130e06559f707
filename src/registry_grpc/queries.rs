//! The answers of every `api.Registry` query over a validated catalog (pure, no I/O).
//!
//! Semantics and messages follow operator-registry's file-based catalog querier
//! (`pkg/cache/cache.go`, `pkg/cache/pkgs.go`, `pkg/cache/meta_key.go`), which is what `opm serve`
//! answers with:
//! - single-bundle answers carry the manifests and have `replaces` and `skips` cleared
//!   (`getTrimmedBundle`);
//! - `GetChannelEntriesThatReplace` lists entries whose `replaces` or `skips` name the bundle
//!   (an entry found through `skips` still carries its own `replaces`, as upstream);
//! - `GetChannelEntriesThatProvide` lists every entry whose bundle provides the API, plus one per
//!   skipped bundle; `GetLatestChannelEntriesThatProvide` looks at channel heads only and lists
//!   only skips that are in the channel; `GetDefaultBundleThatProvides` picks, by package name,
//!   the first such head of a default channel;
//! - `ListPackageCustomSchemas` needs a schema; an empty package selects the blobs of that schema
//!   that belong to no package.
//!
//! Where upstream iterates Go maps (random order), opcat answers sorted by package, channel and
//! entry order, so equal catalogs give equal answers.

use super::api;
use super::to_api::{self, BundleInChannel, ConvertError, Manifests};
use crate::fbc::{Catalog, Channel, Meta, Package, Property};

/// Why a query has no answer; the messages are upstream's.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error("package {package:?} not found")]
    PackageNotFound { package: String },
    #[error("package {package:?}, channel {channel:?} not found")]
    ChannelNotFound { package: String, channel: String },
    #[error("package {package:?}, channel {channel:?}, bundle {bundle:?} not found")]
    BundleNotFound {
        package: String,
        channel: String,
        bundle: String,
    },
    #[error("no channel entries found that replace {bundle}")]
    NothingReplaces { bundle: String },
    #[error("no entry found for package {package:?}, channel {channel:?}")]
    NoReplacement { package: String, channel: String },
    #[error(
        "no channel entries found that provide group:{group:?} version:{version:?} kind:{kind:?}"
    )]
    NoEntryProvides {
        group: String,
        version: String,
        kind: String,
    },
    #[error("no entry found that provides group:{group:?} version:{version:?} kind:{kind:?}")]
    NoBundleProvides {
        group: String,
        version: String,
        kind: String,
    },
    /// The request itself is wrong.
    #[error("{0}")]
    InvalidArgument(String),
    /// The catalog's content cannot be sent.
    #[error(transparent)]
    Convert(#[from] ConvertError),
}

/// An API (`group`, `version`, `kind`) named by a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Api<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
}

impl Api<'_> {
    fn provided_by(&self, package: &Package, bundle_name: &str) -> bool {
        package.bundle(bundle_name).is_some_and(|bundle| {
            bundle.properties.iter().any(|property| {
                matches!(property, Property::Gvk(gvk)
                    if gvk.group == self.group && gvk.version == self.version && gvk.kind == self.kind)
            })
        })
    }

    fn no_entry(&self) -> QueryError {
        QueryError::NoEntryProvides {
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            kind: self.kind.to_owned(),
        }
    }
}

/// Every package name, sorted.
pub fn package_names(catalog: &Catalog) -> Vec<String> {
    catalog
        .packages()
        .map(|package| package.name.clone())
        .collect()
}

/// `GetPackage`.
pub fn package(catalog: &Catalog, name: &str) -> Result<api::Package, QueryError> {
    Ok(to_api::package(find_package(catalog, name)?))
}

/// Every bundle of every channel, in the order `ListBundles` sends them.
pub fn bundles_in_channels(catalog: &Catalog) -> impl Iterator<Item = BundleInChannel<'_>> {
    catalog.packages().flat_map(|package| {
        package.channels().flat_map(move |channel| {
            channel.entries.iter().filter_map(move |entry| {
                Some(BundleInChannel {
                    package,
                    channel,
                    entry,
                    bundle: package.bundle(&entry.name)?,
                })
            })
        })
    })
}

/// `GetBundle`.
pub fn bundle(
    catalog: &Catalog,
    package: &str,
    channel: &str,
    bundle: &str,
) -> Result<api::Bundle, QueryError> {
    let found = find_package(catalog, package)?;
    let in_channel = find_channel(found, channel)?;
    trimmed(found, in_channel, bundle).ok_or_else(|| QueryError::BundleNotFound {
        package: package.to_owned(),
        channel: channel.to_owned(),
        bundle: bundle.to_owned(),
    })?
}

/// `GetBundleForChannel`: the channel head.
pub fn bundle_for_channel(
    catalog: &Catalog,
    package: &str,
    channel: &str,
) -> Result<api::Bundle, QueryError> {
    let found = find_package(catalog, package)?;
    let in_channel = find_channel(found, channel)?;
    let head = &in_channel.head().name;
    trimmed(found, in_channel, head).ok_or_else(|| QueryError::BundleNotFound {
        package: package.to_owned(),
        channel: channel.to_owned(),
        bundle: head.clone(),
    })?
}

/// `GetChannelEntriesThatReplace`.
pub fn entries_that_replace(
    catalog: &Catalog,
    name: &str,
) -> Result<Vec<api::ChannelEntry>, QueryError> {
    let mut found = Vec::new();
    for package in catalog.packages() {
        for channel in package.channels() {
            for entry in &channel.entries {
                let replaces = entry.replaces.as_deref().unwrap_or_default();
                let by_replaces = usize::from(replaces == name);
                let by_skips = entry
                    .skips
                    .iter()
                    .filter(|skip| *skip == name && *skip != replaces)
                    .count();
                for _ in 0..by_replaces + by_skips {
                    found.push(to_api::channel_entry(
                        package,
                        channel,
                        &entry.name,
                        replaces,
                    ));
                }
            }
        }
    }
    if found.is_empty() {
        return Err(QueryError::NothingReplaces {
            bundle: name.to_owned(),
        });
    }
    Ok(found)
}

/// `GetBundleThatReplaces`: the first entry of the channel that replaces or skips `name`.
pub fn bundle_that_replaces(
    catalog: &Catalog,
    name: &str,
    package: &str,
    channel: &str,
) -> Result<api::Bundle, QueryError> {
    let found = find_package(catalog, package)?;
    let in_channel = find_channel(found, channel)?;
    let replacing = in_channel.entries.iter().find(|entry| {
        entry.replaces.as_deref() == Some(name) || entry.skips.iter().any(|skip| skip == name)
    });
    let no_replacement = || QueryError::NoReplacement {
        package: package.to_owned(),
        channel: channel.to_owned(),
    };
    let entry = replacing.ok_or_else(no_replacement)?;
    trimmed(found, in_channel, &entry.name).ok_or_else(no_replacement)?
}

/// `GetChannelEntriesThatProvide`.
pub fn entries_that_provide(
    catalog: &Catalog,
    api: &Api<'_>,
) -> Result<Vec<api::ChannelEntry>, QueryError> {
    providers(catalog, api, false)
}

/// `GetLatestChannelEntriesThatProvide`: channel heads only.
pub fn latest_entries_that_provide(
    catalog: &Catalog,
    api: &Api<'_>,
) -> Result<Vec<api::ChannelEntry>, QueryError> {
    providers(catalog, api, true)
}

/// The entries whose bundles provide `api`: every entry, or only channel heads (whose skipped
/// bundles are listed only when they are in the channel).
fn providers(
    catalog: &Catalog,
    api: &Api<'_>,
    heads_only: bool,
) -> Result<Vec<api::ChannelEntry>, QueryError> {
    let mut found = Vec::new();
    for package in catalog.packages() {
        for channel in package.channels() {
            let head = channel.head();
            let entries = if heads_only {
                std::slice::from_ref(head)
            } else {
                channel.entries.as_slice()
            };
            for entry in entries {
                if api.provided_by(package, &entry.name) {
                    entries_for(package, channel, &entry.name, !heads_only, &mut found);
                }
            }
        }
    }
    if found.is_empty() {
        return Err(api.no_entry());
    }
    Ok(found)
}

/// `GetDefaultBundleThatProvides`.
pub fn default_bundle_that_provides(
    catalog: &Catalog,
    api: &Api<'_>,
) -> Result<api::Bundle, QueryError> {
    let not_found = || QueryError::NoBundleProvides {
        group: api.group.to_owned(),
        version: api.version.to_owned(),
        kind: api.kind.to_owned(),
    };
    let latest = latest_entries_that_provide(catalog, api).map_err(|_| not_found())?;
    // Packages are sorted: the first default-channel head is upstream's pick.
    let entry = latest
        .iter()
        .find(|entry| {
            catalog
                .package(&entry.package_name)
                .is_some_and(|package| package.default_channel == entry.channel_name)
        })
        .ok_or_else(not_found)?;
    bundle(
        catalog,
        &entry.package_name,
        &entry.channel_name,
        &entry.bundle_name,
    )
}

/// `ListPackageCustomSchemas`: the kept blobs of `schema` in `package` (`""`: in no package).
pub fn custom_schema_blobs<'a>(
    catalog: &'a Catalog,
    schema: &str,
    package: &str,
) -> Result<Vec<&'a Meta>, QueryError> {
    if schema.is_empty() {
        return Err(QueryError::InvalidArgument("schema is required".to_owned()));
    }
    check_key_component("schema", schema)?;
    if !package.is_empty() {
        check_key_component("packageName", package)?;
    }
    Ok(catalog
        .others()
        .iter()
        .filter(|meta| meta.schema == schema && meta.package == package)
        .collect())
}

/// Upstream stores these blobs under paths built from schema and package, and refuses
/// components that would be path separators or dots.
fn check_key_component(name: &str, value: &str) -> Result<(), QueryError> {
    if value.contains(['/', '\\']) || value == "." || value == ".." {
        return Err(QueryError::InvalidArgument(format!(
            "invalid custom schema query: invalid {name} {value:?}: must not contain path \
             separators, '.', or '..'"
        )));
    }
    Ok(())
}

fn find_package<'a>(catalog: &'a Catalog, name: &str) -> Result<&'a Package, QueryError> {
    catalog
        .package(name)
        .ok_or_else(|| QueryError::PackageNotFound {
            package: name.to_owned(),
        })
}

fn find_channel<'a>(package: &'a Package, name: &str) -> Result<&'a Channel, QueryError> {
    package
        .channel(name)
        .ok_or_else(|| QueryError::ChannelNotFound {
            package: package.name.clone(),
            channel: name.to_owned(),
        })
}

/// The bundle message of `name` in `channel`, with `replaces` and `skips` cleared; `None` when
/// the channel does not list it.
fn trimmed(
    package: &Package,
    channel: &Channel,
    name: &str,
) -> Option<Result<api::Bundle, QueryError>> {
    let entry = channel.entry(name)?;
    let bundle = package.bundle(name)?;
    let view = BundleInChannel {
        package,
        channel,
        entry,
        bundle,
    };
    Some(
        to_api::bundle(view, Manifests::Always)
            .map(|mut message| {
                message.replaces.clear();
                message.skips.clear();
                message
            })
            .map_err(QueryError::from),
    )
}

/// The entries upstream lists for a bundle that provides an API: one with its `replaces`, and
/// one per skipped bundle other than that (only those in the channel unless `any_skip`).
fn entries_for(
    package: &Package,
    channel: &Channel,
    name: &str,
    any_skip: bool,
    found: &mut Vec<api::ChannelEntry>,
) {
    let Some(entry) = channel.entry(name) else {
        return;
    };
    let replaces = entry.replaces.as_deref().unwrap_or_default();
    found.push(to_api::channel_entry(package, channel, name, replaces));
    for skip in &entry.skips {
        if skip != replaces && (any_skip || channel.entry(skip).is_some()) {
            found.push(to_api::channel_entry(package, channel, name, skip));
        }
    }
}

#[cfg(test)]
#[path = "queries_tests.rs"]
mod tests;
