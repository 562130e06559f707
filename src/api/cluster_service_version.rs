//! `ClusterServiceVersion` (`operators.coreos.com/v1alpha1`): one version of an operator, as
//! shipped in a bundle: how to run it (Deployments, service accounts and their permissions),
//! the APIs it owns and needs, and how it upgrades from earlier versions.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1alpha1/clusterserviceversion_types.go`), including the lowercase
//! `customresourcedefinitions`, `apiservicedefinitions` and `webhookdefinitions`. Spec fields
//! that opcat does not model (newer OLM fields, vendor extensions) are kept in
//! [`ClusterServiceVersionSpec::other`] and written back unchanged.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog_source::Icon;
pub use super::csv_apis::{
    ApiDefinitions, ApiPresentation, ApiResourceReference, ApiServiceDefinitions,
    ApiServiceDescription, CrdDescription, CustomResourceDefinitions, Descriptor, GroupVersionKind,
    WebhookAdmissionType, WebhookDescription,
};
use super::csv_install::NamedInstallStrategy;
use super::csv_status::ClusterServiceVersionStatus;

/// What the operator is, how it is installed and which APIs it provides.
// Every `printcolumn(...)` repeats `type_ = "string"`; clippy reads the repeats as duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "ClusterServiceVersion",
    plural = "clusterserviceversions",
    namespaced,
    status = "ClusterServiceVersionStatus",
    derive = "PartialEq",
    shortname = "csv",
    shortname = "csvs",
    category = "olm",
    doc = "A ClusterServiceVersion (CSV) describes one version of an operator: its Deployments, \
           the service accounts and permissions they run with, the APIs it owns, and the \
           version it replaces. opcat creates it from the operator's bundle; deleting it \
           uninstalls the operator (CustomResourceDefinitions are kept).",
    printcolumn(
        name = "Display",
        type_ = "string",
        json_path = ".spec.displayName",
        description = "The name of the CSV"
    ),
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".spec.version",
        description = "The version of the CSV"
    ),
    printcolumn(
        name = "Replaces",
        type_ = "string",
        json_path = ".spec.replaces",
        description = "The name of a CSV that this one replaces"
    ),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase")
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionSpec {
    /// How to run the operator: its Deployments and the permissions of their service
    /// accounts.
    pub install: NamedInstallStrategy,

    /// Version of the operator (semantic version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,

    /// Release of this version, for rebuilds of the same version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<String>,

    /// Maturity of the operator, for example `alpha` or `stable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,

    /// CustomResourceDefinitions the operator owns and requires.
    #[serde(
        default,
        rename = "customresourcedefinitions",
        skip_serializing_if = "Option::is_none"
    )]
    pub custom_resource_definitions: Option<CustomResourceDefinitions>,

    // Boxed: usually absent; 48 bytes inline otherwise.
    /// Aggregated API services the operator owns and requires.
    #[serde(
        default,
        rename = "apiservicedefinitions",
        skip_serializing_if = "Option::is_none"
    )]
    pub api_service_definitions: Option<Box<ApiServiceDefinitions>>,

    /// Admission and conversion webhooks the operator serves.
    #[serde(
        default,
        rename = "webhookdefinitions",
        skip_serializing_if = "Option::is_none"
    )]
    pub webhook_definitions: Option<Vec<WebhookDescription>>,

    /// Built-in Kubernetes APIs the operator needs.
    #[serde(
        default,
        rename = "nativeAPIs",
        skip_serializing_if = "Option::is_none"
    )]
    pub native_apis: Option<Vec<GroupVersionKind>>,

    /// Lowest Kubernetes version the operator runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kube_version: Option<String>,

    /// Human-readable name of the operator.
    pub display_name: String,

    /// Description of the operator (Markdown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,

    /// Search keywords.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,

    /// People who maintain the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maintainers: Option<Vec<Maintainer>>,

    // Boxed: the CSV store's trim drops it, so stored CSVs hold a pointer, not 48 bytes.
    /// Who provides the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Box<AppLink>>,

    /// Related links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<AppLink>>,

    /// Icons of the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Vec<Icon>>,

    /// Which OperatorGroup target namespace sets the operator supports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_modes: Option<Vec<InstallMode>>,

    /// Name of the ClusterServiceVersion this one upgrades.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,

    /// Labels describing the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,

    /// Annotations describing the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,

    // Boxed: usually absent; 56 bytes inline otherwise.
    /// Label selector for the operator's resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Box<LabelSelector>>,

    /// Whether custom resources of owned APIs are deleted with the ClusterServiceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<CleanupSpec>,

    /// Names of ClusterServiceVersions this one may upgrade directly, skipping them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skips: Option<Vec<String>>,

    /// Images the operator uses besides its own Deployments' images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related_images: Option<Vec<RelatedImage>>,

    // Spec fields opcat does not model, kept as written (newer OLM fields such as
    // `conversionwebhookdefinitions`, vendor extensions). The schema of `spec` preserves
    // unknown fields so the apiserver keeps them too.
    /// Other fields, kept unchanged.
    #[serde(flatten)]
    pub other: BTreeMap<String, Value>,
}

/// A maintainer of the operator.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Maintainer {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Email address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

/// A named link.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct AppLink {
    /// Name shown for the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Whether the operator supports one kind of OperatorGroup target namespace set.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct InstallMode {
    /// `OwnNamespace`, `SingleNamespace`, `MultiNamespace` or `AllNamespaces`.
    #[serde(rename = "type")]
    pub type_: InstallModeType,
    /// Whether the operator supports it.
    pub supported: bool,
}

/// A kind of OperatorGroup target namespace set.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = super::schema::drop_description)]
pub enum InstallModeType {
    /// The operator watches only the namespace it is installed in.
    OwnNamespace,
    /// The operator watches one namespace other than its own.
    SingleNamespace,
    /// The operator watches several namespaces.
    MultiNamespace,
    /// The operator watches all namespaces.
    AllNamespaces,
}

/// Deletion of owned custom resources with the ClusterServiceVersion.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct CleanupSpec {
    /// Whether custom resources of owned APIs are deleted with the ClusterServiceVersion.
    pub enabled: bool,
}

/// An image the operator uses.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct RelatedImage {
    /// Name of the image within the operator.
    pub name: String,
    /// Image reference, preferably by digest.
    pub image: String,
}

impl ClusterServiceVersionSpec {
    /// Whether the CSV declares `mode` as supported (undeclared modes are unsupported).
    pub fn supports_install_mode(&self, mode: InstallModeType) -> bool {
        self.install_modes
            .iter()
            .flatten()
            .any(|m| m.type_ == mode && m.supported)
    }

    /// Owned CRD descriptions (empty when none).
    pub fn owned_crds(&self) -> &[CrdDescription] {
        self.custom_resource_definitions
            .as_ref()
            .and_then(|defs| defs.owned.as_deref())
            .unwrap_or_default()
    }
}
