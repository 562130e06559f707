//! From the catalog model to the API messages (pure): what `opm serve` answers for a file-based
//! catalog.
//!
//! Follows operator-registry `pkg/api/model_to_api.go` (`ConvertModelBundleToAPIBundle`) and the
//! loader that feeds it (`alpha/declcfg/load.go` `readBundleObjects`): one `Bundle` message per
//! channel entry; `object` holds every `olm.bundle.object` manifest converted to JSON and
//! `csvJson` the ClusterServiceVersion among them; a bundle described by one `olm.csv.metadata`
//! instead gets a synthetic CSV (its metadata, the package icon, a stub `deployment` install
//! strategy, its version and related images) as `csvJson` and as its only object;
//! `properties` are the bundle's except `olm.bundle.object` and `olm.csv.metadata`;
//! `dependencies` repeat `olm.gvk.required` as `olm.gvk` and `olm.package.required` as
//! `olm.package` (`{"packageName", "version": <range>}`); `replaces`, `skips` and `skipRange`
//! come from the channel entry.

use serde_json::{Map, Value, json};

use super::api;
use crate::fbc::property::types;
use crate::fbc::{Bundle, Channel, ChannelEntry, Package, Property};

/// `apiVersion` of the synthetic ClusterServiceVersion.
const CSV_API_VERSION: &str = "operators.coreos.com/v1alpha1";
/// `kind` of a ClusterServiceVersion.
const CSV_KIND: &str = "ClusterServiceVersion";

/// Why a bundle cannot be turned into its API message.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// An embedded manifest does not decode to YAML or JSON.
    #[error("bundle {bundle} of package {package}: manifest {index} cannot be read: {detail}")]
    Object {
        package: String,
        bundle: String,
        index: usize,
        detail: String,
    },
}

/// One bundle as a channel lists it: what a `Bundle` message describes.
#[derive(Debug, Clone, Copy)]
pub struct BundleInChannel<'a> {
    pub package: &'a Package,
    pub channel: &'a Channel,
    pub entry: &'a ChannelEntry,
    pub bundle: &'a Bundle,
}

/// Whether a `Bundle` message carries the manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Manifests {
    /// Always (`GetBundle` and the other single-bundle queries).
    Always,
    /// Only when the bundle has no image (`ListBundles`: clients pull `bundlePath` otherwise;
    /// upstream's `SendBundles` clears them).
    UnlessImage,
}

/// The `Package` message: channels sorted by name with their heads.
pub fn package(package: &Package) -> api::Package {
    api::Package {
        name: package.name.clone(),
        channels: package
            .channels()
            .map(|channel| api::Channel {
                name: channel.name.clone(),
                csv_name: channel.head().name.clone(),
                deprecation: deprecation(channel.deprecation.as_deref()),
            })
            .collect(),
        default_channel_name: package.default_channel.clone(),
        deprecation: deprecation(package.deprecation.as_deref()),
    }
}

/// The `ChannelEntry` message of an entry, with `replaces` given (the queries that list skips
/// put a skipped bundle there).
pub fn channel_entry(
    package: &Package,
    channel: &Channel,
    bundle: &str,
    replaces: &str,
) -> api::ChannelEntry {
    api::ChannelEntry {
        package_name: package.name.clone(),
        channel_name: channel.name.clone(),
        bundle_name: bundle.to_owned(),
        replaces: replaces.to_owned(),
    }
}

/// The `Bundle` message of one channel entry.
pub fn bundle(
    view: BundleInChannel<'_>,
    manifests: Manifests,
) -> Result<api::Bundle, ConvertError> {
    let BundleInChannel {
        package,
        channel,
        entry,
        bundle,
    } = view;
    let (csv_json, object) = if manifests == Manifests::UnlessImage && !bundle.image.is_empty() {
        (String::new(), Vec::new())
    } else {
        bundle_manifests(package, bundle)?
    };
    let gvks = |required: bool| {
        bundle
            .properties
            .iter()
            .filter_map(move |property| match (property, required) {
                (Property::Gvk(gvk), false) | (Property::GvkRequired(gvk), true) => {
                    Some(api::GroupVersionKind {
                        group: gvk.group.clone(),
                        version: gvk.version.clone(),
                        kind: gvk.kind.clone(),
                        plural: String::new(),
                    })
                }
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    let version = bundle
        .properties
        .iter()
        .find_map(|property| match property {
            Property::Package(package) => Some(package.version.clone()),
            _ => None,
        })
        .unwrap_or_else(|| bundle.version.to_string());
    Ok(api::Bundle {
        csv_name: bundle.name.clone(),
        package_name: package.name.clone(),
        channel_name: channel.name.clone(),
        csv_json,
        object,
        bundle_path: bundle.image.clone(),
        provided_apis: gvks(false),
        required_apis: gvks(true),
        version,
        skip_range: entry.skip_range.clone().unwrap_or_default(),
        dependencies: bundle.properties.iter().filter_map(dependency).collect(),
        properties: bundle
            .properties
            .iter()
            .filter(|property| {
                !matches!(
                    property,
                    Property::BundleObject(_) | Property::CsvMetadata(_)
                )
            })
            .map(|property| api::Property {
                r#type: property.type_name().to_owned(),
                value: property_value(property),
            })
            .collect(),
        replaces: entry.replaces.clone().unwrap_or_default(),
        skips: entry.skips.clone(),
        deprecation: deprecation(bundle.deprecation.as_deref()),
    })
}

/// A property's value as compact JSON text.
pub fn property_value(property: &Property) -> String {
    let text = match property {
        Property::Package(value) => serde_json::to_string(value),
        Property::PackageRequired(value) => serde_json::to_string(value),
        Property::Gvk(value) | Property::GvkRequired(value) => serde_json::to_string(value),
        Property::BundleObject(value) => serde_json::to_string(value),
        Property::CsvMetadata(value) => return value.raw.get().to_owned(),
        Property::Other { value, .. } => return value.get().to_owned(),
    };
    // Plain structs of strings always serialise.
    text.unwrap_or_default()
}

/// The legacy `dependencies` entry of a requirement property.
fn dependency(property: &Property) -> Option<api::Dependency> {
    match property {
        Property::GvkRequired(_) => Some(api::Dependency {
            r#type: types::GVK.to_owned(),
            value: property_value(property),
        }),
        Property::PackageRequired(required) => Some(api::Dependency {
            r#type: types::PACKAGE.to_owned(),
            value: json!({
                "packageName": required.package_name,
                "version": required.version_range,
            })
            .to_string(),
        }),
        _ => None,
    }
}

fn deprecation(message: Option<&str>) -> Option<api::Deprecation> {
    message.map(|message| api::Deprecation {
        message: message.to_owned(),
    })
}

/// `(csvJson, object)` of a bundle: its embedded manifests as JSON, or the synthetic CSV of its
/// `olm.csv.metadata`.
fn bundle_manifests(
    package: &Package,
    bundle: &Bundle,
) -> Result<(String, Vec<String>), ConvertError> {
    /// Only the `kind` of a manifest (the rest is skipped, not built).
    #[derive(serde::Deserialize)]
    struct Kind<'a> {
        #[serde(borrow, default)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    let mut objects = Vec::new();
    let mut csv = None;
    for (index, object) in bundle.objects().enumerate() {
        let manifest = object
            .manifest_json()
            .map_err(|error| ConvertError::Object {
                package: package.name.clone(),
                bundle: bundle.name.clone(),
                index,
                detail: error.to_string(),
            })?;
        let kind = serde_json::from_str::<Option<Kind<'_>>>(&manifest)
            .ok()
            .flatten()
            .and_then(|kind| kind.kind);
        if csv.is_none() && kind.as_deref() == Some(CSV_KIND) {
            csv = Some(manifest.clone());
        }
        objects.push(manifest);
    }
    let csv = match csv {
        Some(csv) => csv,
        None => match synthetic_csv(package, bundle) {
            Some(csv) => {
                if objects.is_empty() {
                    objects.push(csv.clone());
                }
                csv
            }
            None => String::new(),
        },
    };
    Ok((csv, objects))
}

/// The ClusterServiceVersion `opm` builds from a bundle's only `olm.csv.metadata`
/// (`newSyntheticCSV`): enough for clients that show a CSV (PackageManifests), never installed.
fn synthetic_csv(package: &Package, bundle: &Bundle) -> Option<String> {
    let mut metadata = bundle
        .properties
        .iter()
        .filter_map(|property| match property {
            Property::CsvMetadata(metadata) => Some(metadata),
            _ => None,
        });
    let raw = metadata.next()?;
    if metadata.next().is_some() {
        return None;
    }
    let Ok(Value::Object(mut fields)) = serde_json::from_str::<Value>(raw.raw.get()) else {
        return None;
    };
    let mut take = |key: &str| fields.remove(key).filter(|value| !value.is_null());
    let mut meta = Map::new();
    meta.insert("name".to_owned(), Value::from(bundle.name.clone()));
    for key in ["annotations", "labels"] {
        if let Some(value) = take(key) {
            meta.insert(key.to_owned(), value);
        }
    }
    let mut spec = Map::new();
    for (from, to) in [
        ("apiServiceDefinitions", "apiservicedefinitions"),
        ("crdDescriptions", "customresourcedefinitions"),
        ("description", "description"),
        ("displayName", "displayName"),
        ("installModes", "installModes"),
        ("keywords", "keywords"),
        ("links", "links"),
        ("maintainers", "maintainers"),
        ("maturity", "maturity"),
        ("minKubeVersion", "minKubeVersion"),
        ("nativeAPIs", "nativeAPIs"),
        ("provider", "provider"),
    ] {
        if let Some(value) = take(from) {
            spec.insert(to.to_owned(), value);
        }
    }
    let no_description = spec
        .get("description")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if no_description && !package.description.is_empty() {
        spec.insert(
            "description".to_owned(),
            Value::from(package.description.clone()),
        );
    }
    if let Some(icon) = &package.icon {
        spec.insert(
            "icon".to_owned(),
            json!([{"base64data": icon.base64data, "mediatype": icon.mediatype}]),
        );
    }
    spec.insert("install".to_owned(), json!({"strategy": "deployment"}));
    spec.insert("version".to_owned(), Value::from(bundle.version_string()));
    if !bundle.related_images.is_empty() {
        spec.insert(
            "relatedImages".to_owned(),
            serde_json::to_value(&bundle.related_images).unwrap_or(Value::Null),
        );
    }
    Some(
        json!({
            "apiVersion": CSV_API_VERSION,
            "kind": CSV_KIND,
            "metadata": meta,
            "spec": spec,
        })
        .to_string(),
    )
}

#[cfg(test)]
#[path = "to_api_tests.rs"]
mod tests;
