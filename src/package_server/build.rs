//! One PackageManifest from a loaded catalog's package and its CatalogSource, as packageserver
//! builds it (`newPackageManifest` in `operator-lifecycle-manager:
//! pkg/package-server/provider/registry.go`, `setDefaultOsArchLabels` in `provider/labels.go`):
//!
//! - labels: the CatalogSource's labels, `catalog`, `catalog-namespace`, `provider` and
//!   `provider-url` (from the default channel's head CSV, else the first readable channel's),
//!   that CSV's labels, and `operatorframework.io/os.linux` / `operatorframework.io/arch.amd64:
//!   supported` unless a label with that prefix is already there;
//! - `creationTimestamp`: the CatalogSource's;
//! - one channel per channel whose head has a readable CSV (others are left out; when that was
//!   the default channel, the first remaining channel becomes the default); no channel at all:
//!   no PackageManifest;
//! - each channel's `entries` (every bundle of the channel with its version, newest first) and
//!   the package's, channels' and bundles' deprecations (newer packageserver releases).
//!
//! Icons stay in the result: [`super::storage`] strips them from get and list answers and the
//! icon subresource reads them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use super::describe::{DescribedCsv, describe};
use super::types::{
    API_VERSION, AppLink, ChannelEntry, Deprecation, KIND, PackageChannel, PackageManifest,
    PackageManifestSpec, PackageManifestStatus,
};
use crate::api::CatalogSource;
use crate::fbc;

/// Label: the CatalogSource's name.
pub const CATALOG_LABEL: &str = "catalog";
/// Label: the CatalogSource's namespace.
pub const CATALOG_NAMESPACE_LABEL: &str = "catalog-namespace";
/// Label: the default CSV's provider name.
pub const PROVIDER_LABEL: &str = "provider";
/// Label: the default CSV's provider URL.
pub const PROVIDER_URL_LABEL: &str = "provider-url";
/// Prefix of the operating-system labels.
pub const OS_LABEL_PREFIX: &str = "operatorframework.io/os";
/// Prefix of the architecture labels.
pub const ARCH_LABEL_PREFIX: &str = "operatorframework.io/arch";
/// The operating system a package without an OS label supports.
pub const DEFAULT_OS_LABEL: &str = "operatorframework.io/os.linux";
/// The architecture a package without an architecture label supports.
pub const DEFAULT_ARCH_LABEL: &str = "operatorframework.io/arch.amd64";
/// Value of the OS and architecture labels.
pub const SUPPORTED: &str = "supported";

/// The PackageManifest of `package` in the catalog of `source`, in the source's namespace;
/// `None` when no channel has a readable head CSV (packageserver elides such packages).
pub fn package_manifest(source: &CatalogSource, package: &fbc::Package) -> Option<PackageManifest> {
    let mut channels = Vec::new();
    let mut default_elided = false;
    let mut default_csv: Option<DescribedCsv> = None;
    let mut provider: Option<AppLink> = None;
    for channel in package.channels() {
        let is_default = channel.name == package.default_channel;
        let head = package.bundle(&channel.head().name);
        let Some(described) = head.and_then(|bundle| describe(package, bundle)) else {
            default_elided |= is_default;
            continue;
        };
        if is_default || provider.is_none() {
            provider = Some(described.description.provider.clone());
        }
        channels.push(PackageChannel {
            name: channel.name.clone(),
            current_csv: described.name.clone(),
            current_csv_desc: described.description.clone(),
            deprecation: deprecation(channel.deprecation.as_deref()),
            entries: entries(package, channel),
        });
        if default_csv.is_none() || is_default {
            default_csv = Some(described);
        }
    }
    let default_csv = default_csv?;
    let default_channel = if default_elided {
        channels.first()?.name.clone()
    } else {
        package.default_channel.clone()
    };
    let provider = provider.unwrap_or_default();
    let namespace = source.namespace().unwrap_or_default();
    let labels = labels(source, &namespace, &provider, &default_csv.labels);
    Some(PackageManifest {
        api_version: API_VERSION.to_owned(),
        kind: KIND.to_owned(),
        metadata: ObjectMeta {
            name: Some(package.name.clone()),
            namespace: Some(namespace.clone()),
            labels: Some(labels),
            creation_timestamp: source.metadata.creation_timestamp.clone(),
            ..ObjectMeta::default()
        },
        spec: PackageManifestSpec {},
        status: Arc::new(PackageManifestStatus {
            catalog_source: source.name_any(),
            catalog_source_display_name: source.spec.display_name.clone().unwrap_or_default(),
            catalog_source_publisher: source.spec.publisher.clone().unwrap_or_default(),
            catalog_source_namespace: namespace,
            provider,
            package_name: package.name.clone(),
            deprecation: deprecation(package.deprecation.as_deref()),
            channels,
            default_channel,
        }),
    })
}

/// The labels packageserver gives a PackageManifest.
fn labels(
    source: &CatalogSource,
    namespace: &str,
    provider: &AppLink,
    csv_labels: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut labels = source.labels().clone();
    labels.insert(CATALOG_LABEL.to_owned(), source.name_any());
    labels.insert(CATALOG_NAMESPACE_LABEL.to_owned(), namespace.to_owned());
    labels.insert(PROVIDER_LABEL.to_owned(), provider.name.clone());
    labels.insert(PROVIDER_URL_LABEL.to_owned(), provider.url.clone());
    labels.extend(csv_labels.iter().map(|(k, v)| (k.clone(), v.clone())));
    if !labels.keys().any(|key| key.starts_with(OS_LABEL_PREFIX)) {
        labels.insert(DEFAULT_OS_LABEL.to_owned(), SUPPORTED.to_owned());
    }
    if !labels.keys().any(|key| key.starts_with(ARCH_LABEL_PREFIX)) {
        labels.insert(DEFAULT_ARCH_LABEL.to_owned(), SUPPORTED.to_owned());
    }
    labels
}

/// Every bundle of `channel`, newest version first (then by name).
fn entries(package: &fbc::Package, channel: &fbc::Channel) -> Vec<ChannelEntry> {
    let mut bundles: Vec<&fbc::Bundle> = channel
        .entries
        .iter()
        .filter_map(|entry| package.bundle(&entry.name))
        .collect();
    bundles.sort_by(|a, b| b.version.cmp(&a.version).then_with(|| a.name.cmp(&b.name)));
    bundles
        .into_iter()
        .map(|bundle| ChannelEntry {
            name: bundle.name.clone(),
            version: bundle.version_string(),
            deprecation: deprecation(bundle.deprecation.as_deref()),
        })
        .collect()
}

fn deprecation(message: Option<&str>) -> Option<Deprecation> {
    message.map(|message| Deprecation {
        message: message.to_owned(),
    })
}
