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

/// APIs the operator owns, and APIs that must exist before it can run.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ApiDefinitions<T> {
    /// APIs the operator provides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned: Option<Vec<T>>,
    /// APIs another operator or the cluster must provide first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<Vec<T>>,
}

/// Owned and required CustomResourceDefinitions (`spec.customresourcedefinitions`).
pub type CustomResourceDefinitions = ApiDefinitions<CrdDescription>;

/// Owned and required aggregated API services (`spec.apiservicedefinitions`).
pub type ApiServiceDefinitions = ApiDefinitions<ApiServiceDescription>;

/// A CustomResourceDefinition the operator owns or requires.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct CrdDescription {
    /// Full name of the CRD, `<plural>.<group>`.
    pub name: String,
    /// API version of the custom resources.
    pub version: String,
    /// Kind of the custom resources.
    pub kind: String,
    /// How user interfaces present the API.
    #[serde(flatten)]
    pub presentation: ApiPresentation,
}

/// An aggregated API service (`<version>.<group>`) the operator owns or requires.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiServiceDescription {
    /// Name of the API.
    pub name: String,
    /// API group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind served.
    pub kind: String,
    /// Deployment that serves the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    /// Container port the API is served on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
    /// How user interfaces present the API.
    #[serde(flatten)]
    pub presentation: ApiPresentation,
}

/// How user interfaces present an owned or required API.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiPresentation {
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// Description of the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kubernetes resources the operator creates for each resource of this API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<ApiResourceReference>>,
    /// Descriptions of status fields, for user interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_descriptors: Option<Vec<Descriptor>>,
    /// Descriptions of spec fields, for user interfaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_descriptors: Option<Vec<Descriptor>>,
    /// Actions user interfaces can offer on resources of this API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_descriptors: Option<Vec<Descriptor>>,
}

/// A Kubernetes resource type used by a custom resource.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ApiResourceReference {
    /// Name of the resource, if the reference is to one object (often omitted or empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Kind of the resource.
    pub kind: String,
    /// API version of the resource.
    pub version: String,
}

/// Describes one field of a custom resource (or an action on it) for user interfaces.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct Descriptor {
    /// Dot-separated path of the field, for example `spec.replicas`.
    pub path: String,
    /// Human-readable name.
    #[serde(
        default,
        rename = "displayName",
        skip_serializing_if = "Option::is_none"
    )]
    pub display_name: Option<String>,
    /// Description of the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Hints for user interfaces, for example `urn:alm:descriptor:com.tectonic.ui:podCount`.
    #[serde(
        default,
        rename = "x-descriptors",
        skip_serializing_if = "Option::is_none"
    )]
    pub x_descriptors: Option<Vec<String>>,
    /// Default or example value (any JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "super::schema::any_json")]
    pub value: Option<Value>,
}

/// An admission or conversion webhook the operator serves.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDescription {
    /// Prefix of the webhook configuration's name.
    pub generate_name: String,
    /// `ValidatingAdmissionWebhook`, `MutatingAdmissionWebhook` or `ConversionWebhook`.
    #[serde(rename = "type")]
    pub type_: WebhookAdmissionType,
    /// Deployment that serves the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_name: Option<String>,
    /// Service port of the webhook (default 443).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_port: Option<i32>,
    /// Container port the webhook listens on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<k8s_openapi::apimachinery::pkg::util::intstr::IntOrString>,
    /// Operations and resources the webhook intercepts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<k8s_openapi::api::admissionregistration::v1::RuleWithOperations>>,
    /// `Ignore` or `Fail`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<String>,
    /// `Exact` or `Equivalent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_policy: Option<String>,
    /// Which objects the webhook applies to, by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_selector: Option<LabelSelector>,
    /// `None` or `NoneOnDryRun`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side_effects: Option<String>,
    /// Timeout of one call, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// AdmissionReview versions the webhook accepts.
    pub admission_review_versions: Vec<String>,
    /// `Never` or `IfNeeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinvocation_policy: Option<String>,
    /// HTTP path of the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_path: Option<String>,
    /// CRDs converted by a conversion webhook.
    #[serde(
        default,
        rename = "conversionCRDs",
        skip_serializing_if = "Option::is_none"
    )]
    pub conversion_crds: Option<Vec<String>>,
}

/// Kind of a webhook.
#[derive(
    Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
#[schemars(transform = super::schema::drop_description)]
pub enum WebhookAdmissionType {
    /// A validating admission webhook.
    ValidatingAdmissionWebhook,
    /// A mutating admission webhook.
    MutatingAdmissionWebhook,
    /// A CRD conversion webhook.
    ConversionWebhook,
}

/// A Kubernetes API by group, version and kind.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct GroupVersionKind {
    /// API group (empty for the core group).
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
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
