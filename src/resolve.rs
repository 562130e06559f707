//! Which bundle to install next (olm-api.md §6.2), as OLM v0 chooses it. Pure: reads a
//! validated [`Catalog`], no I/O.
//!
//! - **Upgrade** (a CSV is installed): the candidates are the channel's entries that replace
//!   the installed CSV, skip it, or whose `skipRange` contains its version; they are taken in
//!   the channel's upgrade order (head first, along `replaces`, skipped entries left out) and
//!   the one closest to the head wins. None: [`Resolution::AtLatest`]. The installed version
//!   comes from the request (OLM reads it from the installed CSV) or, when not given, from the
//!   installed bundle in the catalog; when neither knows it, only `replaces`/`skips` edges count.
//! - **First install**: the `startingCSV` if one is requested (an error if the channel does not
//!   list it), else the channel head.
//! - An unset channel means the package's default channel. (OLM v0 then searches all channels,
//!   default channel first; the head of the default channel wins there too.)
//!
//! Dependencies between packages are resolved by `crate::dependency`, which tries
//! [`candidates`] in this order.

use crate::fbc::{Bundle, Catalog, Channel, ChannelEntry, Package};
use crate::semver_range::Range;

/// What to resolve, from a Subscription and its status.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResolveRequest {
    /// Package name (`Subscription.spec.name`).
    pub package: String,
    /// Channel (`spec.channel`); `None` or empty: the package's default channel.
    pub channel: Option<String>,
    /// The installed CSV (`status.installedCSV`), if any.
    pub installed: Option<String>,
    /// The installed CSV's `spec.version`, if known (overrides the catalog's version).
    pub installed_version: Option<semver::Version>,
    /// `spec.startingCSV`, used for a first install only.
    pub starting_csv: Option<String>,
}

/// The outcome of a resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolution {
    /// Install (or upgrade to) this bundle.
    Install(BundleRef),
    /// The installed CSV is the latest reachable in the channel.
    AtLatest {
        /// The installed CSV.
        installed: String,
        /// The channel searched.
        channel: String,
    },
}

/// A bundle chosen for installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleRef {
    /// Package name.
    pub package: String,
    /// Channel it was found in.
    pub channel: String,
    /// Bundle (CSV) name.
    pub name: String,
    /// Bundle version.
    pub version: semver::Version,
    /// Bundle image pull spec (empty when the catalog embeds the objects).
    pub image: String,
    /// The CSV this install replaces on the cluster (the installed CSV); `None` for a first
    /// install.
    pub replaces: Option<String>,
}

/// Why nothing can be resolved. Messages follow OLM's resolution failures.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// The package is not in the catalog.
    #[error("no operators found in package {package} in the catalog")]
    PackageNotFound {
        /// The package.
        package: String,
    },
    /// The package has no such channel.
    #[error("no operators found in channel {channel} of package {package} in the catalog")]
    ChannelNotFound {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
    },
    /// The requested starting CSV is not in the channel.
    #[error(
        "no operators found with name {csv} in channel {channel} of package {package} in the catalog"
    )]
    StartingCsvNotFound {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The requested CSV.
        csv: String,
    },
    /// A channel entry has no bundle (impossible in a validated catalog).
    #[error(
        "channel {channel} of package {package} lists bundle {bundle}, which the catalog does not contain"
    )]
    MissingBundle {
        /// The package.
        package: String,
        /// The channel.
        channel: String,
        /// The bundle.
        bundle: String,
    },
}

impl ResolveError {
    /// A short, stable label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            ResolveError::PackageNotFound { .. } => "package_not_found",
            ResolveError::ChannelNotFound { .. } => "channel_not_found",
            ResolveError::StartingCsvNotFound { .. } => "starting_csv_not_found",
            ResolveError::MissingBundle { .. } => "missing_bundle",
        }
    }
}

/// Every bundle a Subscription may move to, in OLM's preference order: what the solver tries
/// (crate::dependency), and whose first entry [`resolve`] picks.
#[derive(Debug, Clone)]
pub struct Candidates<'a> {
    /// The package.
    pub package: &'a Package,
    /// The channel searched.
    pub channel: &'a Channel,
    /// Entries to install, most preferred first: on a first install the `startingCSV` alone, or
    /// the channel from its head along the upgrade graph; on an upgrade the entries that replace,
    /// skip or skipRange-cover the installed CSV, closest to the head first.
    pub entries: Vec<&'a ChannelEntry>,
    /// The installed CSV (an upgrade), the last option: staying put.
    pub installed: Option<String>,
}

/// The bundles `request` may resolve to, most preferred first (see [`Candidates`]).
pub fn candidates<'a>(
    catalog: &'a Catalog,
    request: &ResolveRequest,
) -> Result<Candidates<'a>, ResolveError> {
    let package =
        catalog
            .package(&request.package)
            .ok_or_else(|| ResolveError::PackageNotFound {
                package: request.package.clone(),
            })?;
    let channel_name = request
        .channel
        .as_deref()
        .filter(|c| !c.is_empty())
        .unwrap_or(&package.default_channel);
    let channel = package
        .channel(channel_name)
        .ok_or_else(|| ResolveError::ChannelNotFound {
            package: package.name.clone(),
            channel: channel_name.to_owned(),
        })?;

    let Some(installed) = request.installed.as_deref().filter(|i| !i.is_empty()) else {
        let entries = match request.starting_csv.as_deref().filter(|s| !s.is_empty()) {
            Some(csv) => {
                vec![
                    channel
                        .entry(csv)
                        .ok_or_else(|| ResolveError::StartingCsvNotFound {
                            package: package.name.clone(),
                            channel: channel.name.clone(),
                            csv: csv.to_owned(),
                        })?,
                ]
            }
            None => channel.upgrade_order().collect(),
        };
        return Ok(Candidates {
            package,
            channel,
            entries,
            installed: None,
        });
    };

    let version = request
        .installed_version
        .clone()
        .or_else(|| package.bundle(installed).map(|b| b.version.clone()));
    let entries = channel
        .upgrade_order()
        .filter(|entry| {
            entry.name != installed
                && (entry.replaces.as_deref() == Some(installed)
                    || entry.skips.iter().any(|s| s == installed)
                    || skip_range_contains(entry, version.as_ref()))
        })
        .collect();
    Ok(Candidates {
        package,
        channel,
        entries,
        installed: Some(installed.to_owned()),
    })
}

/// Chooses the bundle to install next for `request`.
pub fn resolve(catalog: &Catalog, request: &ResolveRequest) -> Result<Resolution, ResolveError> {
    let found = candidates(catalog, request)?;
    match found.entries.first() {
        Some(entry) => install(
            found.package,
            found.channel,
            entry,
            found.installed.as_deref(),
        ),
        // Only an upgrade can run out of entries: a first install always has the channel head
        // or the starting CSV.
        None => Ok(Resolution::AtLatest {
            installed: found.installed.unwrap_or_default(),
            channel: found.channel.name.clone(),
        }),
    }
}

/// Whether the entry's `skipRange` (blang/semver semantics) contains `version`. An unparsable
/// range matches nothing, as in OLM.
fn skip_range_contains(entry: &ChannelEntry, version: Option<&semver::Version>) -> bool {
    match (entry.skip_range.as_deref(), version) {
        (Some(range), Some(version)) => Range::parse(range).is_ok_and(|r| r.contains(version)),
        _ => false,
    }
}

fn install(
    package: &Package,
    channel: &Channel,
    entry: &ChannelEntry,
    replaces: Option<&str>,
) -> Result<Resolution, ResolveError> {
    let bundle: &Bundle =
        package
            .bundle(&entry.name)
            .ok_or_else(|| ResolveError::MissingBundle {
                package: package.name.clone(),
                channel: channel.name.clone(),
                bundle: entry.name.clone(),
            })?;
    Ok(Resolution::Install(BundleRef {
        package: package.name.clone(),
        channel: channel.name.clone(),
        name: bundle.name.clone(),
        version: bundle.version.clone(),
        image: bundle.image.clone(),
        replaces: replaces.map(str::to_owned),
    }))
}
