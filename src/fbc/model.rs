//! [`Catalog`]: a validated catalog, indexed for lookups. This is what the controller keeps in
//! memory per catalog image digest and what resolution reads.
//!
//! A catalog can only be built from a [`DeclarativeConfig`] that passes [`validate`], so every
//! package has a default channel that exists, every channel has exactly one head and a valid
//! graph, every entry has its bundle, and every bundle has one parsed version.

use std::collections::BTreeMap;
use std::path::Path;

use super::blob::{ChannelEntry, Icon, Meta, RelatedImage, schemas};
use super::config::DeclarativeConfig;
use super::load::{LoadError, load};
use super::problem::ValidationError;
use super::property::{BundleObject, CsvMetadata, Property};
use super::validate::validate;
use super::version::Release;
use crate::graph::ChannelGraph;

/// A validated, indexed catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    packages: BTreeMap<String, Package>,
    others: Vec<Meta>,
}

/// A package of a [`Catalog`].
#[derive(Debug, Clone)]
pub struct Package {
    /// Package name.
    pub name: String,
    /// Name of the default channel (it exists).
    pub default_channel: String,
    /// Description, if any.
    pub description: String,
    /// Icon, if any.
    pub icon: Option<Icon>,
    /// Package properties.
    pub properties: Vec<Property>,
    /// Deprecation message for the whole package.
    pub deprecation: Option<String>,
    channels: BTreeMap<String, Channel>,
    bundles: BTreeMap<String, Bundle>,
}

/// A channel of a [`Package`].
#[derive(Debug, Clone)]
pub struct Channel {
    /// Channel name.
    pub name: String,
    /// Entries in the order written.
    pub entries: Vec<ChannelEntry>,
    /// Channel properties.
    pub properties: Vec<Property>,
    /// Deprecation message for the channel.
    pub deprecation: Option<String>,
    graph: ChannelGraph,
}

/// A bundle of a [`Package`] (shared by every channel that lists it).
#[derive(Debug, Clone)]
pub struct Bundle {
    /// Bundle (CSV) name.
    pub name: String,
    /// Package name.
    pub package: String,
    /// Bundle image pull spec (empty when the objects are embedded).
    pub image: String,
    /// Version from the `olm.package` property.
    pub version: semver::Version,
    /// Release from the `olm.package` property (often empty).
    pub release: Release,
    /// All properties.
    pub properties: Vec<Property>,
    /// Images the bundle uses.
    pub related_images: Vec<RelatedImage>,
    /// Deprecation message for the bundle.
    pub deprecation: Option<String>,
}

/// Why a catalog could not be loaded from disk.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// Files could not be read or parsed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The content breaks `opm validate` rules.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
}

impl CatalogError {
    /// A short, stable label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            CatalogError::Load(e) => e.kind(),
            CatalogError::Invalid(_) => "invalid_catalog",
        }
    }
}

impl Catalog {
    /// Validates `config` (reporting every problem) and indexes it.
    pub fn new(config: DeclarativeConfig) -> Result<Self, ValidationError> {
        validate(&config)?;
        Ok(Self::index(config))
    }

    /// Loads, validates and indexes the catalog at `path` (directory or file).
    pub fn load(path: &Path) -> Result<Self, CatalogError> {
        Ok(Self::new(load(path)?)?)
    }

    fn index(config: DeclarativeConfig) -> Self {
        let mut packages: BTreeMap<String, Package> = BTreeMap::new();
        for blob in config.packages {
            packages.entry(blob.name.clone()).or_insert(Package {
                name: blob.name,
                default_channel: blob.default_channel,
                description: blob.description,
                icon: blob.icon,
                properties: blob.properties,
                deprecation: None,
                channels: BTreeMap::new(),
                bundles: BTreeMap::new(),
            });
        }
        for blob in config.channels {
            let Some(package) = packages.get_mut(&blob.package) else {
                continue;
            };
            // Validation guarantees a valid graph; a channel without one is left out.
            let Ok(graph) = ChannelGraph::new(&blob.entries) else {
                continue;
            };
            package.channels.insert(
                blob.name.clone(),
                Channel {
                    name: blob.name,
                    entries: blob.entries,
                    properties: blob.properties,
                    deprecation: None,
                    graph,
                },
            );
        }
        for blob in config.bundles {
            let Some(package) = packages.get_mut(&blob.package) else {
                continue;
            };
            let Some((version, release)) = blob.properties.iter().find_map(|p| match p {
                Property::Package(p) => Some((
                    semver::Version::parse(&p.version).ok()?,
                    Release::parse(&p.release).ok()?,
                )),
                _ => None,
            }) else {
                continue;
            };
            package.bundles.insert(
                blob.name.clone(),
                Bundle {
                    name: blob.name,
                    package: blob.package,
                    image: blob.image,
                    version,
                    release,
                    properties: blob.properties,
                    related_images: blob.related_images,
                    deprecation: None,
                },
            );
        }
        for deprecations in config.deprecations {
            let Some(package) = packages.get_mut(&deprecations.package) else {
                continue;
            };
            for entry in deprecations.entries {
                let name = &entry.reference.name;
                match entry.reference.schema.as_str() {
                    schemas::PACKAGE => package.deprecation = Some(entry.message),
                    schemas::CHANNEL => {
                        if let Some(channel) = package.channels.get_mut(name) {
                            channel.deprecation = Some(entry.message);
                        }
                    }
                    schemas::BUNDLE => {
                        if let Some(bundle) = package.bundles.get_mut(name) {
                            bundle.deprecation = Some(entry.message);
                        }
                    }
                    _ => {}
                }
            }
        }
        Self {
            packages,
            others: config.others,
        }
    }

    /// Packages, sorted by name.
    pub fn packages(&self) -> impl Iterator<Item = &Package> {
        self.packages.values()
    }

    /// A package by name.
    pub fn package(&self, name: &str) -> Option<&Package> {
        self.packages.get(name)
    }

    /// Blobs of schemas `opm` does not interpret.
    pub fn others(&self) -> &[Meta] {
        &self.others
    }
}

impl Package {
    /// Channels, sorted by name.
    pub fn channels(&self) -> impl Iterator<Item = &Channel> {
        self.channels.values()
    }

    /// A channel by name.
    pub fn channel(&self, name: &str) -> Option<&Channel> {
        self.channels.get(name)
    }

    /// The default channel.
    pub fn default_channel(&self) -> Option<&Channel> {
        self.channels.get(&self.default_channel)
    }

    /// Bundles, sorted by name.
    pub fn bundles(&self) -> impl Iterator<Item = &Bundle> {
        self.bundles.values()
    }

    /// A bundle by name.
    pub fn bundle(&self, name: &str) -> Option<&Bundle> {
        self.bundles.get(name)
    }
}

impl Channel {
    /// The head entry: the one no other entry replaces or skips.
    pub fn head(&self) -> &ChannelEntry {
        &self.entries[self.graph.head()]
    }

    /// Entries from the head along the `replaces` chain, skipped entries left out: OLM's
    /// preference order for upgrades (closest to the head first).
    pub fn upgrade_order(&self) -> impl Iterator<Item = &ChannelEntry> {
        self.graph.upgrade_order().iter().map(|&i| &self.entries[i])
    }

    /// The entry for a bundle name.
    pub fn entry(&self, name: &str) -> Option<&ChannelEntry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

impl Bundle {
    /// The embedded manifests (`olm.bundle.object`), still base64-encoded.
    pub fn objects(&self) -> impl Iterator<Item = &BundleObject> {
        self.properties.iter().filter_map(|p| match p {
            Property::BundleObject(o) => Some(o),
            _ => None,
        })
    }

    /// The CSV among the embedded manifests (the first object of kind
    /// `ClusterServiceVersion`), decoded. Objects that fail to decode are skipped, like `opm`.
    pub fn csv(&self) -> Option<serde_json::Value> {
        self.objects()
            .filter_map(|o| o.manifest().ok())
            .find(|m| m.get("kind").and_then(|k| k.as_str()) == Some("ClusterServiceVersion"))
    }

    /// The `olm.csv.metadata` property, parsed.
    pub fn csv_metadata(&self) -> Option<CsvMetadata> {
        self.properties.iter().find_map(|p| match p {
            Property::CsvMetadata(m) => m.parse().ok(),
            _ => None,
        })
    }

    /// `olm.package.version[-release]`, the string `opm` keeps unique per package.
    pub fn version_string(&self) -> String {
        super::version::version_string(&self.version, &self.release)
    }
}
