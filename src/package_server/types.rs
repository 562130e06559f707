//! The `packages.operators.coreos.com/v1` types as OLM's packageserver serializes them
//! (`operator-lifecycle-manager: pkg/package-server/apis/operators/v1/packagemanifest_types.go`):
//! the same JSON names, and Go's `omitempty` rules (a struct field is always written, an empty
//! slice, map or string tagged `omitempty` is left out).
//!
//! The schemas derived here are the ones `/openapi/v2` and `/openapi/v3` publish, named as
//! packageserver's generated OpenAPI names them.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ListMeta, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// API group of the package API.
pub const GROUP: &str = "packages.operators.coreos.com";
/// Its only version.
pub const VERSION: &str = "v1";
/// `apiVersion` of its objects.
pub const API_VERSION: &str = "packages.operators.coreos.com/v1";
/// Kind of its objects.
pub const KIND: &str = "PackageManifest";
/// Kind of its lists.
pub const LIST_KIND: &str = "PackageManifestList";
/// Plural resource name.
pub const RESOURCE: &str = "packagemanifests";
/// Singular resource name.
pub const SINGULAR: &str = "packagemanifest";
/// The subresource serving a package's icon.
pub const ICON_SUBRESOURCE: &str = "icon";
/// Prefix of the OpenAPI model names (packageserver's Go package path).
pub const MODEL_PREFIX: &str =
    "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1";

/// PackageManifest holds information about a package, which is a reference to one (or more)
/// channels under a single package.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifest"
)]
pub struct PackageManifest {
    /// APIVersion defines the versioned schema of this representation of an object.
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    pub kind: String,
    /// Standard object's metadata.
    pub metadata: ObjectMeta,
    /// PackageManifestSpec defines the desired state of PackageManifest (always empty).
    pub spec: PackageManifestSpec,
    /// PackageManifestStatus represents the current status of the PackageManifest.
    ///
    /// (Shared: the manifests kept between requests are copied into every answer.)
    pub status: Arc<PackageManifestStatus>,
}

/// PackageManifestList is a list of PackageManifest objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifestList"
)]
pub struct PackageManifestList {
    /// APIVersion defines the versioned schema of this representation of an object.
    pub api_version: String,
    /// Kind is a string value representing the REST resource this object represents.
    pub kind: String,
    /// Standard list metadata.
    pub metadata: ListMeta,
    /// The PackageManifests.
    pub items: Vec<PackageManifest>,
}

/// PackageManifestSpec defines the desired state of PackageManifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifestSpec"
)]
pub struct PackageManifestSpec {}

/// PackageManifestStatus represents the current status of the PackageManifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageManifestStatus"
)]
pub struct PackageManifestStatus {
    /// CatalogSource is the name of the CatalogSource this package belongs to.
    pub catalog_source: String,
    /// The CatalogSource's spec.displayName.
    pub catalog_source_display_name: String,
    /// The CatalogSource's spec.publisher.
    pub catalog_source_publisher: String,
    /// CatalogSourceNamespace is the namespace of the owning CatalogSource.
    pub catalog_source_namespace: String,
    /// Provider is the provider of the PackageManifest's default CSV.
    pub provider: AppLink,
    /// PackageName is the name of the overall package, ala `etcd`.
    pub package_name: String,
    /// Deprecation conveys information regarding a deprecated package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// Channels are the declared channels for the package, ala `stable` or `alpha`.
    pub channels: Vec<PackageChannel>,
    /// DefaultChannel is, if specified, the name of the default channel for the package. The
    /// default channel will be installed if no other channel is explicitly given. If the
    /// package has a single channel, then that channel is implicitly the default.
    pub default_channel: String,
}

/// PackageChannel defines a single channel under a package, pointing to a version of that
/// package.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.PackageChannel"
)]
pub struct PackageChannel {
    /// Name is the name of the channel, e.g. `alpha` or `stable`.
    pub name: String,
    /// CurrentCSV defines a reference to the CSV holding the version of this package currently
    /// for the channel.
    #[serde(rename = "currentCSV")]
    pub current_csv: String,
    /// CurrentCSVSpec holds the spec of the current CSV.
    #[serde(rename = "currentCSVDesc")]
    pub current_csv_desc: CsvDescription,
    /// Deprecation conveys information regarding a deprecated channel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
    /// Entries lists all CSVs in the channel, with their versions and deprecation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub entries: Vec<ChannelEntry>,
}

/// ChannelEntry defines a member of a package channel.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.ChannelEntry"
)]
pub struct ChannelEntry {
    /// Name is the name of the bundle for this entry.
    pub name: String,
    /// Version is the version of the bundle for this entry.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    /// Deprecation conveys information regarding a deprecated bundle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation: Option<Deprecation>,
}

/// Deprecation conveys information regarding a deprecated resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.Deprecation"
)]
pub struct Deprecation {
    /// Message is a human readable message describing the deprecation.
    pub message: String,
}

/// CSVDescription defines a description of a CSV.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.CSVDescription"
)]
pub struct CsvDescription {
    /// DisplayName is the CSV's display name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// Icon is the CSV's base64 encoded icon (left out of get and list answers: the `icon`
    /// subresource serves it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub icon: Vec<Icon>,
    /// Version is the CSV's semantic version.
    pub version: String,
    /// Provider is the CSV's provider.
    pub provider: AppLink,
    /// The CSV's annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// The CSV's keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keywords: Vec<String>,
    /// The CSV's links.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<AppLink>,
    /// The CSV's maintainers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<Maintainer>,
    /// The CSV's maturity.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub maturity: String,
    /// LongDescription is the CSV's description.
    #[serde(
        default,
        rename = "description",
        skip_serializing_if = "String::is_empty"
    )]
    pub long_description: String,
    /// InstallModes specify supported installation types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install_modes: Vec<InstallMode>,
    /// The CRDs the operator owns and requires (names, kinds and descriptions only).
    #[serde(rename = "customresourcedefinitions")]
    pub custom_resource_definitions: CustomResourceDefinitions,
    /// The API services the operator owns and requires (names, kinds and descriptions only).
    #[serde(rename = "apiservicedefinitions")]
    pub api_service_definitions: ApiServiceDefinitions,
    /// The native APIs the operator needs.
    #[serde(default, rename = "nativeApis", skip_serializing_if = "Vec::is_empty")]
    pub native_apis: Vec<GroupVersionKind>,
    /// Minimum Kubernetes version for operator installation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub min_kube_version: String,
    /// List of related images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub related_images: Vec<String>,
}

/// AppLink defines a link to an application.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.AppLink"
)]
pub struct AppLink {
    /// The link's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The link's URL.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub url: String,
}

/// Maintainer defines a project maintainer.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.Maintainer"
)]
pub struct Maintainer {
    /// The maintainer's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The maintainer's e-mail address.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub email: String,
}

/// Icon defines a base64 encoded icon and media type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.operator-lifecycle-manager.pkg.package-server.apis.operators.v1.Icon"
)]
pub struct Icon {
    /// The image, base64-encoded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base64data: String,
    /// Its media type, e.g. `image/svg+xml`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mediatype: String,
}

/// InstallMode associates an InstallModeType with a flag representing if the CSV supports it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.InstallMode")]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Whether the CSV supports it.
    pub supported: bool,
}

/// The CRDs a CSV owns and requires, as packageserver shortens them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.CustomResourceDefinitions"
)]
pub struct CustomResourceDefinitions {
    /// CRDs the operator owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<CrdDescription>,
    /// CRDs the operator needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<CrdDescription>,
}

/// A CRD a CSV owns or requires: name, version, kind and how to present it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.CRDDescription")]
pub struct CrdDescription {
    /// The CRD's name (`<plural>.<group>`).
    #[serde(default)]
    pub name: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// The API services a CSV owns and requires, as packageserver shortens them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.APIServiceDefinitions"
)]
pub struct ApiServiceDefinitions {
    /// API services the operator owns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owned: Vec<ApiServiceDescription>,
    /// API services the operator needs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required: Vec<ApiServiceDescription>,
}

/// An API service a CSV owns or requires: name, group, version, kind and how to present it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(
    rename = "com.github.operator-framework.api.pkg.operators.v1alpha1.APIServiceDescription"
)]
pub struct ApiServiceDescription {
    /// The resource's plural name.
    #[serde(default)]
    pub name: String,
    /// The group.
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub display_name: String,
    /// Description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// A group, version and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "io.k8s.apimachinery.pkg.apis.meta.v1.GroupVersionKind")]
pub struct GroupVersionKind {
    /// The API group.
    #[serde(default)]
    pub group: String,
    /// The version.
    #[serde(default)]
    pub version: String,
    /// The kind.
    #[serde(default)]
    pub kind: String,
}
