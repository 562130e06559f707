//! Status of a ClusterServiceVersion: its install phase, the history of phase changes, and
//! whether its requirements are met.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Observed state of a ClusterServiceVersion.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionStatus {
    /// Install phase: `Pending`, `InstallReady`, `Installing`, `Succeeded`, `Failed`,
    /// `Replacing` or `Deleting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterServiceVersionPhase>,
    /// Human-readable details of the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// One-word CamelCase reason for the phase, for example `InstallSucceeded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the status was last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the phase last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// History of phase changes, oldest first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ClusterServiceVersionCondition>>,
    /// Whether each requirement (CRDs, API services, service accounts) is met.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requirement_status: Option<Vec<RequirementStatus>>,
    /// When webhook certificates were last rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_last_updated: Option<Time>,
    /// When webhook certificates will next be rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certs_rotate_at: Option<Time>,
    // Boxed: absent except while a CSV with cleanup enabled is being deleted.
    /// Custom resources still to be deleted before the ClusterServiceVersion goes away.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<Box<CleanupStatus>>,
}

/// Install phase of a ClusterServiceVersion.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = super::schema::drop_description)]
pub enum ClusterServiceVersionPhase {
    /// Requirements are being checked.
    Pending,
    /// Requirements are met; installation can start.
    InstallReady,
    /// Objects are created; waiting for the Deployments to become available.
    Installing,
    /// The operator is installed and its Deployments are available.
    Succeeded,
    /// Installation failed; see `reason` and `message`.
    Failed,
    /// The phase could not be determined.
    Unknown,
    /// A newer ClusterServiceVersion that replaces this one is being installed.
    Replacing,
    /// The ClusterServiceVersion is being removed.
    Deleting,
}

impl ClusterServiceVersionPhase {
    /// The JSON value of the phase.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::InstallReady => "InstallReady",
            Self::Installing => "Installing",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
            Self::Unknown => "Unknown",
            Self::Replacing => "Replacing",
            Self::Deleting => "Deleting",
        }
    }
}

/// One entry of the phase history (OLM's shape, not `metav1.Condition`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterServiceVersionCondition {
    /// The phase entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ClusterServiceVersionPhase>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// One-word CamelCase reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When the entry was last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the phase was entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// Whether one requirement of the ClusterServiceVersion is met.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct RequirementStatus {
    /// API group of the required object.
    pub group: String,
    /// API version of the required object.
    pub version: String,
    /// Kind of the required object.
    pub kind: String,
    /// Name of the required object.
    pub name: String,
    /// `Present`, `NotPresent`, `PresentNotSatisfied`, `PresentNotAvailable`, `Satisfied`
    /// or `NotSatisfied`.
    pub status: String,
    /// Human-readable details.
    pub message: String,
    /// UID of the required object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Objects this requirement depends on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependents: Option<Vec<DependentStatus>>,
}

/// Status of an object a requirement depends on.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct DependentStatus {
    /// API group of the object.
    pub group: String,
    /// API version of the object.
    pub version: String,
    /// Kind of the object.
    pub kind: String,
    /// Status of the object.
    pub status: String,
    /// UID of the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// Custom resources pending deletion.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CleanupStatus {
    /// Custom resources still to be deleted, by kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_deletion: Option<Vec<ResourceList>>,
}

/// Instances of one kind pending deletion.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceList {
    /// API group.
    pub group: String,
    /// Kind.
    pub kind: String,
    /// The instances.
    pub instances: Vec<ResourceInstance>,
}

/// One custom resource pending deletion.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceInstance {
    /// Name.
    pub name: String,
    /// Namespace (empty for cluster-scoped resources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}
