//! The APIs a `ClusterServiceVersion` owns and requires (`spec.customresourcedefinitions`,
//! `spec.apiservicedefinitions`, `spec.webhookdefinitions`), with their presentation for user
//! interfaces. Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1alpha1/clusterserviceversion_types.go`). Re-exported from
//! [`super::cluster_service_version`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
