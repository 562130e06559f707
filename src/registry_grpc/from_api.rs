//! From the API messages a registry server sends to the catalog model (pure): the same
//! [`DeclarativeConfig`] a catalog image would give, validated afterwards like one.
//!
//! Follows operator-registry `pkg/api/api_to_model.go` (`ConvertAPIBundleToModelBundle`) and
//! what OLM's resolver reads (`pkg/controller/registry/resolver/source_registry.go`: every
//! `ListBundles` message, and `GetPackage` for each package's default channel):
//! - each `Bundle` message is one channel entry (`replaces`, `skips`, `skipRange`) of its
//!   `channelName`; a bundle listed by several channels becomes one `olm.bundle`;
//! - its `properties` are kept; `providedApis`, `requiredApis` and the legacy `dependencies`
//!   add the `olm.gvk`, `olm.gvk.required` and `olm.package.required` properties that are not
//!   already there (`olm.label` and `olm.constraint` dependencies as OLM translates them), and
//!   `packageName`/`version` the `olm.package` property when it is missing;
//! - each `object` manifest becomes an `olm.bundle.object` property (base64 of its JSON), and
//!   `csvJson` alone (no `object`) the only one; related images come from `csvJson`;
//! - package, channel and bundle `deprecation` messages become an `olm.deprecations` blob.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use serde_json::value::RawValue;

use super::api;
use super::to_api::property_value;
use crate::fbc::blob::schemas;
use crate::fbc::property::{BundleObject, Gvk, PackageProperty, PackageRequired, types};
use crate::fbc::{
    BundleBlob, ChannelBlob, ChannelEntry, DeclarativeConfig, DeprecationEntry, DeprecationsBlob,
    PackageBlob, PackageScopedReference, Property, RelatedImage,
};

/// Why a message cannot be read as catalog content. Names the bundle and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// A message lacks a name it needs.
    #[error("a bundle message has no {field}")]
    Missing { field: &'static str },
    /// A property or dependency value is not what its type needs.
    #[error("bundle {bundle} of package {package}: {what} {type_}: {detail}")]
    Value {
        package: String,
        bundle: String,
        what: &'static str,
        type_: String,
        detail: String,
    },
}

/// Collects the messages of one read of a server.
#[derive(Debug, Default)]
pub struct CatalogBuilder {
    /// Entries by (package, channel), in the order received.
    channels: BTreeMap<(String, String), Vec<ChannelEntry>>,
    /// Bundles by (package, name).
    bundles: BTreeMap<(String, String), BundleBlob>,
    /// Deprecation messages of bundles, by (package, name).
    bundle_deprecations: BTreeMap<(String, String), String>,
    /// `GetPackage` answers, by name.
    packages: BTreeMap<String, api::Package>,
}

impl CatalogBuilder {
    /// Adds one `ListBundles` message.
    pub fn add_bundle(&mut self, bundle: api::Bundle) -> Result<(), ConvertError> {
        for (field, value) in [
            ("csvName", &bundle.csv_name),
            ("packageName", &bundle.package_name),
            ("channelName", &bundle.channel_name),
        ] {
            if value.is_empty() {
                return Err(ConvertError::Missing { field });
            }
        }
        let package = bundle.package_name.clone();
        let name = bundle.csv_name.clone();
        let entries = self
            .channels
            .entry((package.clone(), bundle.channel_name.clone()))
            .or_default();
        if !entries.iter().any(|entry| entry.name == name) {
            entries.push(ChannelEntry {
                name: name.clone(),
                replaces: Some(bundle.replaces.clone()).filter(|r| !r.is_empty()),
                skips: bundle.skips.clone(),
                skip_range: Some(bundle.skip_range.clone()).filter(|r| !r.is_empty()),
            });
        }
        let key = (package, name);
        if let Some(deprecation) = &bundle.deprecation {
            self.bundle_deprecations
                .insert(key.clone(), deprecation.message.clone());
        }
        if let std::collections::btree_map::Entry::Vacant(vacant) = self.bundles.entry(key) {
            vacant.insert(bundle_blob(bundle)?);
        }
        Ok(())
    }

    /// The packages whose `GetPackage` answer is still needed (sorted).
    pub fn packages_needed(&self) -> Vec<String> {
        let named: BTreeSet<&String> = self.channels.keys().map(|(package, _)| package).collect();
        named
            .into_iter()
            .filter(|package| !self.packages.contains_key(*package))
            .cloned()
            .collect()
    }

    /// Adds one `GetPackage` answer.
    pub fn add_package(&mut self, package: api::Package) {
        self.packages.insert(package.name.clone(), package);
    }

    /// The catalog content received, in a deterministic order (packages, channels and bundles
    /// by name; entries as received).
    pub fn finish(self) -> DeclarativeConfig {
        let mut config = DeclarativeConfig::default();
        let mut deprecations: BTreeMap<String, Vec<DeprecationEntry>> = BTreeMap::new();
        let mut deprecate = |package: &str, schema: &str, name: &str, message: &str| {
            deprecations
                .entry(package.to_owned())
                .or_default()
                .push(DeprecationEntry {
                    reference: PackageScopedReference {
                        schema: schema.to_owned(),
                        name: name.to_owned(),
                    },
                    message: message.to_owned(),
                });
        };
        for package in self.packages.values() {
            config.packages.push(PackageBlob {
                name: package.name.clone(),
                default_channel: package.default_channel_name.clone(),
                ..PackageBlob::default()
            });
            if let Some(deprecation) = &package.deprecation {
                deprecate(&package.name, schemas::PACKAGE, "", &deprecation.message);
            }
            for channel in &package.channels {
                if let Some(deprecation) = &channel.deprecation {
                    deprecate(
                        &package.name,
                        schemas::CHANNEL,
                        &channel.name,
                        &deprecation.message,
                    );
                }
            }
        }
        for ((package, name), entries) in self.channels {
            config.channels.push(ChannelBlob {
                package,
                name,
                entries,
                properties: Vec::new(),
            });
        }
        for ((package, name), message) in &self.bundle_deprecations {
            deprecate(package, schemas::BUNDLE, name, message);
        }
        config.bundles = self.bundles.into_values().collect();
        config.deprecations = deprecations
            .into_iter()
            .map(|(package, entries)| DeprecationsBlob { package, entries })
            .collect();
        config
    }
}

/// The `olm.bundle` blob of a `Bundle` message.
fn bundle_blob(bundle: api::Bundle) -> Result<BundleBlob, ConvertError> {
    let invalid = |what: &'static str, type_: &str, detail: String| ConvertError::Value {
        package: bundle.package_name.clone(),
        bundle: bundle.csv_name.clone(),
        what,
        type_: type_.to_owned(),
        detail,
    };
    let mut properties = Properties::default();
    for property in &bundle.properties {
        let raw = RawValue::from_string(property.value.clone())
            .map_err(|error| invalid("property", &property.r#type, error.to_string()))?;
        let parsed = Property::parse(&property.r#type, Some(&raw))
            .map_err(|error| invalid("property", &property.r#type, error.to_string()))?;
        properties.add(parsed);
    }
    for gvk in &bundle.provided_apis {
        properties.add(Property::Gvk(gvk_of(gvk)));
    }
    for gvk in &bundle.required_apis {
        properties.add(Property::GvkRequired(gvk_of(gvk)));
    }
    for dependency in &bundle.dependencies {
        if let Some(property) = dependency_property(dependency)
            .map_err(|detail| invalid("dependency", &dependency.r#type, detail))?
        {
            properties.add(property);
        }
    }
    if !properties
        .list
        .iter()
        .any(|property| matches!(property, Property::Package(_)))
    {
        properties.add(Property::Package(PackageProperty {
            package_name: bundle.package_name.clone(),
            version: bundle.version.clone(),
            release: String::new(),
        }));
    }
    let mut objects = bundle.object.clone();
    if objects.is_empty() && !bundle.csv_json.is_empty() {
        objects.push(bundle.csv_json.clone());
    }
    let engine = base64::engine::general_purpose::STANDARD;
    for object in objects {
        properties.add(Property::BundleObject(BundleObject {
            data: engine.encode(object),
        }));
    }
    Ok(BundleBlob {
        related_images: related_images(&bundle.csv_json),
        package: bundle.package_name,
        name: bundle.csv_name,
        image: bundle.bundle_path,
        properties: properties.list,
    })
}

/// Properties without duplicates (same type and value), in the order added.
#[derive(Default)]
struct Properties {
    list: Vec<Property>,
    seen: BTreeSet<(String, String)>,
}

impl Properties {
    fn add(&mut self, property: Property) {
        let key = (property.type_name().to_owned(), property_value(&property));
        if self.seen.insert(key) {
            self.list.push(property);
        }
    }
}

fn gvk_of(gvk: &api::GroupVersionKind) -> Gvk {
    Gvk {
        group: gvk.group.clone(),
        kind: gvk.kind.clone(),
        version: gvk.version.clone(),
    }
}

/// The property of a legacy dependency, as OLM's `legacyDependenciesToProperties` reads it
/// (`None`: a type OLM ignores).
fn dependency_property(dependency: &api::Dependency) -> Result<Option<Property>, String> {
    #[derive(serde::Deserialize)]
    struct PackageDependency {
        #[serde(default, rename = "packageName")]
        package_name: String,
        #[serde(default)]
        version: String,
    }
    let other = |type_: &str| -> Result<Option<Property>, String> {
        let value = RawValue::from_string(dependency.value.clone()).map_err(|e| e.to_string())?;
        Ok(Some(Property::Other {
            type_: type_.to_owned(),
            value,
        }))
    };
    match dependency.r#type.as_str() {
        types::GVK => serde_json::from_str::<Gvk>(&dependency.value)
            .map(|gvk| Some(Property::GvkRequired(gvk)))
            .map_err(|e| e.to_string()),
        types::PACKAGE => serde_json::from_str::<PackageDependency>(&dependency.value)
            .map(|required| {
                Some(Property::PackageRequired(PackageRequired {
                    package_name: required.package_name,
                    version_range: required.version,
                }))
            })
            .map_err(|e| e.to_string()),
        "olm.label" => other("olm.label.required"),
        "olm.constraint" => other("olm.constraint"),
        _ => Ok(None),
    }
}

/// `spec.relatedImages` of a CSV given as JSON (none when absent or unreadable).
fn related_images(csv_json: &str) -> Vec<RelatedImage> {
    #[derive(serde::Deserialize, Default)]
    struct Csv {
        #[serde(default)]
        spec: Spec,
    }
    #[derive(serde::Deserialize, Default)]
    struct Spec {
        #[serde(default, rename = "relatedImages")]
        related_images: Option<Vec<RelatedImage>>,
    }
    if csv_json.is_empty() {
        return Vec::new();
    }
    serde_json::from_str::<Csv>(csv_json)
        .ok()
        .and_then(|csv| csv.spec.related_images)
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "from_api_tests.rs"]
mod tests;
