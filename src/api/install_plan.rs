//! `InstallPlan` (`operators.coreos.com/v1alpha1`): the ClusterServiceVersions one resolution
//! of a namespace's Subscriptions will install, and whether a person must approve it first.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1alpha1/installplan_types.go`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What to install and whether it is approved.
// Every `printcolumn(...)` repeats `type_ = "string"`; clippy reads the repeats as duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "InstallPlan",
    plural = "installplans",
    namespaced,
    status = "InstallPlanStatus",
    derive = "PartialEq",
    shortname = "ip",
    category = "olm",
    doc = "An InstallPlan lists the ClusterServiceVersions that one resolution of a namespace's \
           Subscriptions installs. With `approval: Manual` nothing is installed until \
           `spec.approved` is set to true.",
    printcolumn(
        name = "CSV",
        type_ = "string",
        json_path = ".spec.clusterServiceVersionNames[0]",
        description = "The first CSV in the list of clusterServiceVersionNames"
    ),
    printcolumn(
        name = "Approval",
        type_ = "string",
        json_path = ".spec.approval",
        description = "The approval mode"
    ),
    printcolumn(name = "Approved", type_ = "boolean", json_path = ".spec.approved"),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanSpec {
    /// Name of the CatalogSource the plan was resolved from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,

    /// Namespace of that CatalogSource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_namespace: Option<String>,

    /// Names of the ClusterServiceVersions this plan installs.
    #[serde(rename = "clusterServiceVersionNames")]
    pub cluster_service_version_names: Vec<String>,

    /// `Automatic` plans are approved when created; `Manual` plans wait for `approved: true`.
    pub approval: Approval,

    /// Whether the plan may be installed. Set it to true to approve a `Manual` plan.
    pub approved: bool,

    /// Generation of the plan within its namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
}

/// Whether an InstallPlan is installed as soon as it is created (`Automatic`) or waits for a
/// person to approve it (`Manual`).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = super::schema::drop_description)]
pub enum Approval {
    /// Install without asking.
    #[default]
    Automatic,
    /// Wait until the InstallPlan's `spec.approved` is true.
    Manual,
}

impl Approval {
    /// The JSON value, `Automatic` or `Manual`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Automatic => "Automatic",
            Self::Manual => "Manual",
        }
    }
}

impl InstallPlanStatus {
    /// Whether the plan is a record: `Complete` or `Failed`, never changed again.
    pub fn is_finished(&self) -> bool {
        use super::install_plan_status::{PHASE_COMPLETE, PHASE_FAILED};
        matches!(self.phase.as_str(), PHASE_COMPLETE | PHASE_FAILED)
    }
}

/// Observed state of an InstallPlan.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanStatus {
    /// `Planning`, `RequiresApproval`, `Installing`, `Complete` or `Failed`.
    #[serde(default)]
    pub phase: String,

    /// Latest observations of the plan's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<InstallPlanCondition>>,

    /// Names of the catalogs the plan was resolved from.
    pub catalog_sources: Vec<String>,

    /// The objects the plan creates, one step per object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<Step>>,

    /// Bundles still being looked up or unpacked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_lookups: Option<Vec<BundleLookup>>,

    // Boxed: absent unless the OperatorGroup names a service account; 168 bytes inline
    // otherwise.
    /// The service account whose permissions limit what the plan may create
    /// (the OperatorGroup's `serviceAccountName`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attenuated_service_account_ref: Option<Box<ObjectReference>>,

    /// When installation started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// Human-readable details of the last failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One observation of an InstallPlan's state (OLM's condition shape).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanCondition {
    /// `Resolved` or `Installed`.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `True`, `False` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// When the condition was last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// One-word CamelCase reason, for example `InstallComponentFailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One object an InstallPlan creates.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    /// Name of the ClusterServiceVersion the object belongs to.
    pub resolving: String,
    /// The object.
    pub resource: StepResource,
    /// Whether the step may fail without failing the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub optional: Option<bool>,
    /// `Unknown`, `NotPresent`, `Present`, `Created`, `NotCreated`, `WaitingForApi` or
    /// `UnsupportedResource`.
    pub status: String,
}

/// The object of an InstallPlan step.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResource {
    /// Catalog the object comes from.
    pub source_name: String,
    /// Namespace of that catalog.
    pub source_namespace: String,
    /// API group of the object.
    pub group: String,
    /// API version of the object.
    pub version: String,
    /// Kind of the object.
    pub kind: String,
    /// Name of the object.
    pub name: String,
    /// The object's manifest (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<String>,
}

/// A bundle being looked up for an InstallPlan.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleLookup {
    /// Image reference of the bundle.
    pub path: String,
    /// Name of the ClusterServiceVersion in the bundle.
    pub identifier: String,
    /// Name of the ClusterServiceVersion the bundle replaces.
    pub replaces: String,
    /// The CatalogSource the bundle comes from.
    pub catalog_source_ref: ObjectReference,
    /// Progress of the lookup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<BundleLookupCondition>>,
    /// Properties of the bundle (JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub properties: Option<String>,
}

/// Progress of a bundle lookup.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BundleLookupCondition {
    /// `BundleLookupPending` or `BundleLookupFailed`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// One-word CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition was last probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}
