//! A channel head's CSV, as packageserver describes it (`CreateCSVDescription` in
//! `operator-lifecycle-manager: pkg/package-server/apis/operators/packagemanifest.go`).
//!
//! The CSV comes from the bundle's `olm.bundle.object` manifests; a bundle that has none but an
//! `olm.csv.metadata` property gets the CSV operator-registry's gRPC server would build from it
//! (`operator-registry: alpha/declcfg` / `pkg/api` `ConvertModelBundleToAPIBundle`): the
//! metadata's fields, the bundle's name and version, the package's icon, the bundle's related
//! images, and the package's description when the metadata has none.
//!
//! Only the fields the description needs are decoded (serde skips the rest, which in real
//! catalogs is most of a CSV: `alm-examples`, install strategies, descriptors), and a bundle's
//! manifests are peeked at before one is decoded in full: this runs for every channel head of a
//! list request.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::types::{
    ApiServiceDefinitions, ApiServiceDescription, AppLink, CrdDescription, CsvDescription,
    CustomResourceDefinitions, GroupVersionKind, Icon, InstallMode, Maintainer,
};
use crate::fbc::{self, Property};

/// A described channel head: its CSV's name and labels, and the description.
#[derive(Clone, Debug, PartialEq)]
pub struct DescribedCsv {
    /// `metadata.name` of the CSV (the bundle name for a CSV built from metadata).
    pub name: String,
    /// `metadata.labels` of the CSV (they become the PackageManifest's labels).
    pub labels: BTreeMap<String, String>,
    /// The description.
    pub description: CsvDescription,
}

/// Describes `bundle` of `package`; `None` when the bundle has neither a readable CSV nor CSV
/// metadata (packageserver then leaves the channel out).
pub fn describe(package: &fbc::Package, bundle: &fbc::Bundle) -> Option<DescribedCsv> {
    if let Some(csv) = embedded_csv(bundle) {
        return Some(from_csv(csv));
    }
    let metadata = bundle
        .properties
        .iter()
        .find_map(|property| match property {
            Property::CsvMetadata(metadata) => Some(metadata),
            _ => None,
        })?;
    let spec: CsvSpec = serde_json::from_str(metadata.raw.get()).ok()?;
    Some(from_metadata(package, bundle, spec))
}

/// The fields of a CSV the description reads.
#[derive(Debug, Default, Deserialize)]
struct CsvDocument {
    #[serde(default)]
    metadata: CsvMetadata,
    #[serde(default)]
    spec: CsvSpec,
}

#[derive(Debug, Default, Deserialize)]
struct CsvMetadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

/// `spec` of a CSV, and also the shape of `olm.csv.metadata` (whose keys for the API
/// definitions differ: `crdDescriptions`, `apiServiceDefinitions`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CsvSpec {
    #[serde(default)]
    display_name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    provider: Option<AppLink>,
    #[serde(default)]
    icon: Option<Vec<CsvIcon>>,
    #[serde(default)]
    keywords: Option<Vec<String>>,
    #[serde(default)]
    links: Option<Vec<AppLink>>,
    #[serde(default)]
    maintainers: Option<Vec<Maintainer>>,
    #[serde(default)]
    maturity: Option<String>,
    #[serde(default)]
    install_modes: Option<Vec<InstallMode>>,
    #[serde(
        default,
        alias = "crdDescriptions",
        rename = "customresourcedefinitions"
    )]
    custom_resource_definitions: Option<CrdLists>,
    #[serde(
        default,
        alias = "apiServiceDefinitions",
        rename = "apiservicedefinitions"
    )]
    api_service_definitions: Option<ApiLists>,
    #[serde(default, rename = "nativeAPIs")]
    native_apis: Option<Vec<GroupVersionKind>>,
    #[serde(default)]
    min_kube_version: Option<String>,
    #[serde(default)]
    related_images: Option<Vec<RelatedImage>>,
    #[serde(default)]
    install: Option<Install>,
    // Only in `olm.csv.metadata`.
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
struct CsvIcon {
    #[serde(default)]
    base64data: Option<String>,
    #[serde(default)]
    mediatype: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct CrdLists {
    #[serde(default)]
    owned: Option<Vec<CrdDescription>>,
    #[serde(default)]
    required: Option<Vec<CrdDescription>>,
}

#[derive(Debug, Default, Deserialize)]
struct ApiLists {
    #[serde(default)]
    owned: Option<Vec<ApiServiceDescription>>,
    #[serde(default)]
    required: Option<Vec<ApiServiceDescription>>,
}

#[derive(Debug, Default, Deserialize)]
struct RelatedImage {
    #[serde(default)]
    image: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Install {
    #[serde(default)]
    strategy: Option<String>,
    #[serde(default)]
    spec: Option<InstallSpec>,
}

#[derive(Debug, Default, Deserialize)]
struct InstallSpec {
    #[serde(default)]
    deployments: Option<Vec<Deployment>>,
}

#[derive(Debug, Default, Deserialize)]
struct Deployment {
    #[serde(default)]
    spec: Option<DeploymentSpec>,
}

#[derive(Debug, Default, Deserialize)]
struct DeploymentSpec {
    #[serde(default)]
    template: Option<Template>,
}

#[derive(Debug, Default, Deserialize)]
struct Template {
    #[serde(default)]
    spec: Option<PodSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    containers: Option<Vec<RelatedImage>>,
    #[serde(default)]
    init_containers: Option<Vec<RelatedImage>>,
}

/// How many leading base64 characters of a manifest are decoded to look for the CSV kind
/// (`opm` writes manifests as JSON with sorted keys: `apiVersion` and `kind` come first).
const PEEK_CHARS: usize = 256;

/// The CSV among the bundle's embedded manifests. Each manifest's head is decoded first; a
/// manifest is decoded in full only when its head names the kind, or when no head does (keys
/// in another order, YAML).
fn embedded_csv(bundle: &fbc::Bundle) -> Option<CsvDocument> {
    let objects: Vec<&fbc::property::BundleObject> = bundle.objects().collect();
    if objects.is_empty() {
        return None;
    }
    let peeked: Vec<&&fbc::property::BundleObject> = objects
        .iter()
        .filter(|object| head_names_csv(&object.data))
        .collect();
    let candidates: Vec<&fbc::property::BundleObject> = if peeked.is_empty() {
        objects
    } else {
        peeked.into_iter().copied().collect()
    };
    candidates.into_iter().find_map(decode_csv)
}

fn head_names_csv(data: &str) -> bool {
    let end = data.len().min(PEEK_CHARS) / 4 * 4;
    let Some(head) = data.get(..end) else {
        return false;
    };
    fbc::base64::decode(head)
        .is_ok_and(|bytes| memchr::memmem::find(&bytes, b"\"ClusterServiceVersion\"").is_some())
}

fn decode_csv(object: &fbc::property::BundleObject) -> Option<CsvDocument> {
    #[derive(Deserialize)]
    struct Kind {
        #[serde(default)]
        kind: String,
    }
    let bytes = object.decode().ok()?;
    if let Ok(kind) = serde_json::from_slice::<Kind>(&bytes) {
        return (kind.kind == "ClusterServiceVersion")
            .then(|| serde_json::from_slice(&bytes).ok())
            .flatten();
    }
    // Not JSON: YAML, as `opm` also accepts.
    let manifest = object.manifest().ok()?;
    (manifest.get("kind").and_then(|kind| kind.as_str()) == Some("ClusterServiceVersion"))
        .then(|| serde_json::from_value(manifest).ok())
        .flatten()
}

/// `CreateCSVDescription` of a CSV read from the bundle.
fn from_csv(csv: CsvDocument) -> DescribedCsv {
    let CsvDocument { metadata, spec } = csv;
    let images = operator_images(&spec);
    let mut description = common(spec);
    description.annotations = metadata.annotations.unwrap_or_default();
    description.related_images = images;
    DescribedCsv {
        name: metadata.name.unwrap_or_default(),
        labels: metadata.labels.unwrap_or_default(),
        description,
    }
}

/// The description of the CSV operator-registry builds from `olm.csv.metadata`.
fn from_metadata(package: &fbc::Package, bundle: &fbc::Bundle, mut spec: CsvSpec) -> DescribedCsv {
    let annotations = spec.annotations.take().unwrap_or_default();
    let labels = spec.labels.take().unwrap_or_default();
    let mut description = common(spec);
    description.annotations = annotations;
    description.version = bundle.version.to_string();
    description.icon = package
        .icon
        .iter()
        .map(|icon| Icon {
            base64data: icon.base64data.clone(),
            mediatype: icon.mediatype.clone(),
        })
        .collect();
    if description.long_description.is_empty() {
        description.long_description = package.description.clone();
    }
    let images: BTreeSet<String> = bundle
        .related_images
        .iter()
        .map(|related| related.image.clone())
        .filter(|image| !image.is_empty())
        .collect();
    description.related_images = images.into_iter().collect();
    DescribedCsv {
        name: bundle.name.clone(),
        labels,
        description,
    }
}

/// What both sources share.
fn common(spec: CsvSpec) -> CsvDescription {
    let crds = spec.custom_resource_definitions.unwrap_or_default();
    let apis = spec.api_service_definitions.unwrap_or_default();
    CsvDescription {
        display_name: spec.display_name.unwrap_or_default(),
        icon: spec
            .icon
            .unwrap_or_default()
            .into_iter()
            .map(|icon| Icon {
                base64data: icon.base64data.unwrap_or_default(),
                mediatype: icon.mediatype.unwrap_or_default(),
            })
            .collect(),
        version: spec.version.unwrap_or_else(|| "0.0.0".to_owned()),
        provider: spec.provider.unwrap_or_default(),
        annotations: BTreeMap::new(),
        keywords: spec.keywords.unwrap_or_default(),
        links: spec.links.unwrap_or_default(),
        maintainers: spec.maintainers.unwrap_or_default(),
        maturity: spec.maturity.unwrap_or_default(),
        long_description: spec.description.unwrap_or_default(),
        install_modes: spec.install_modes.unwrap_or_default(),
        custom_resource_definitions: CustomResourceDefinitions {
            owned: crds.owned.unwrap_or_default(),
            required: crds.required.unwrap_or_default(),
        },
        api_service_definitions: ApiServiceDefinitions {
            owned: apis.owned.unwrap_or_default(),
            required: apis.required.unwrap_or_default(),
        },
        native_apis: spec.native_apis.unwrap_or_default(),
        min_kube_version: spec.min_kube_version.unwrap_or_default(),
        related_images: Vec::new(),
    }
}

/// `GetImages`: the images of the install strategy's containers and init containers (when the
/// strategy is `deployment`) and of `spec.relatedImages`, sorted (packageserver's order is a Go
/// map's).
fn operator_images(spec: &CsvSpec) -> Vec<String> {
    let mut images = BTreeSet::new();
    if let Some(install) = &spec.install
        && install.strategy.as_deref().unwrap_or("deployment") == "deployment"
    {
        let deployments = install
            .spec
            .as_ref()
            .and_then(|spec| spec.deployments.as_ref());
        for deployment in deployments.into_iter().flatten() {
            let pod = deployment
                .spec
                .as_ref()
                .and_then(|spec| spec.template.as_ref())
                .and_then(|template| template.spec.as_ref());
            let Some(pod) = pod else { continue };
            for container in pod
                .containers
                .iter()
                .flatten()
                .chain(pod.init_containers.iter().flatten())
            {
                images.extend(container.image.clone().filter(|image| !image.is_empty()));
            }
        }
    }
    for related in spec.related_images.iter().flatten() {
        images.extend(related.image.clone().filter(|image| !image.is_empty()));
    }
    images.into_iter().collect()
}
