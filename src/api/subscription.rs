//! `Subscription` (`operators.coreos.com/v1alpha1`): a request to install a package from a
//! catalog into the Subscription's namespace and keep it up to date along a channel.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1alpha1/subscription_types.go`). Note that the package is `spec.name`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvFromSource, EnvVar, ObjectReference, ResourceRequirements, Toleration, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::install_plan::Approval;

/// Which operator to install, from which catalog and channel, and how to approve upgrades.
// Every `printcolumn(...)` repeats `type_ = "string"`; clippy reads the repeats as duplicated
// attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1alpha1",
    kind = "Subscription",
    plural = "subscriptions",
    namespaced,
    status = "SubscriptionStatus",
    derive = "PartialEq",
    shortname = "sub",
    shortname = "subs",
    category = "olm",
    doc = "A Subscription installs an operator package from a CatalogSource into its own \
           namespace and keeps it up to date along a channel. opcat also copies the catalog's \
           pull secrets into this namespace and attaches them to the operator's service \
           accounts and Deployments. Deleting the Subscription stops upgrades; deleting the \
           installed ClusterServiceVersion uninstalls the operator.",
    printcolumn(
        name = "Package",
        type_ = "string",
        json_path = ".spec.name",
        description = "The package subscribed to"
    ),
    printcolumn(
        name = "Source",
        type_ = "string",
        json_path = ".spec.source",
        description = "The catalog source for the specified package"
    ),
    printcolumn(
        name = "Channel",
        type_ = "string",
        json_path = ".spec.channel",
        description = "The channel of updates to subscribe to"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionSpec {
    /// Name of the CatalogSource to install from.
    #[serde(rename = "source")]
    pub catalog_source: String,

    /// Namespace of the CatalogSource: this Subscription's namespace or the global catalog
    /// namespace.
    #[serde(rename = "sourceNamespace")]
    pub catalog_source_namespace: String,

    /// Name of the package to install, as listed in the catalog.
    #[serde(rename = "name")]
    pub package: String,

    /// Channel to follow. When empty, the package's default channel is preferred.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,

    /// Name of the ClusterServiceVersion to install first, instead of the channel head.
    /// Later upgrades follow the channel from there.
    #[serde(
        default,
        rename = "startingCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub starting_csv: Option<String>,

    /// `Automatic` (default) installs every resolved version at once; `Manual` waits until
    /// the InstallPlan is approved (`spec.approved: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_approval: Option<Approval>,

    // Boxed: usually absent, and 472 bytes inline (Affinity, ResourceRequirements) in every
    // stored Subscription otherwise.
    /// Overrides applied to the operator's Deployments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Box<SubscriptionConfig>>,
}

/// Overrides applied to every Deployment of the installed operator.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionConfig {
    /// Label selector for the operator's pods. Accepted for compatibility; not applied (OLM
    /// does not apply it either).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,

    /// Node selector for the operator's pods; replaces the bundle's node selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,

    /// Tolerations added to the operator's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,

    /// Compute resources for every container of the operator's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// Sources of environment variables added to every container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,

    /// Environment variables set in every container; a variable with the same name as one in
    /// the bundle replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,

    /// Volumes added to the operator's pods; a volume with the same name as one in the bundle
    /// replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Vec<Volume>>,

    /// Volume mounts added to every container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,

    /// Affinity of the operator's pods. Only the parts that are set replace the bundle's; an
    /// empty object removes the bundle's affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,

    /// Annotations added to the operator's Deployments and pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Observed state of a Subscription.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionStatus {
    /// The ClusterServiceVersion the Subscription is moving to.
    #[serde(
        default,
        rename = "currentCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub current_csv: Option<String>,

    /// The ClusterServiceVersion currently installed.
    #[serde(
        default,
        rename = "installedCSV",
        skip_serializing_if = "Option::is_none"
    )]
    pub installed_csv: Option<String>,

    /// Deprecated: use `installPlanRef`.
    #[serde(
        default,
        rename = "installplan",
        skip_serializing_if = "Option::is_none"
    )]
    pub install_plan: Option<InstallPlanReference>,

    /// Upgrade state: `UpgradePending`, `AtLatestKnown`, `UpgradeAvailable` or
    /// `UpgradeFailed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,

    /// Why the Subscription is in its state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,

    /// Generation of the latest InstallPlan for this Subscription.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_generation: Option<i64>,

    /// The latest InstallPlan that contains `currentCSV`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_plan_ref: Option<ObjectReference>,

    /// Health of the catalogs the Subscription can resolve from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_health: Option<Vec<SubscriptionCatalogHealth>>,

    /// Latest observations of the Subscription's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<SubscriptionCondition>>,

    /// When the status last changed.
    pub last_updated: Time,
}

impl SubscriptionStatus {
    /// An empty status stamped with `last_updated`.
    pub fn new(last_updated: Time) -> Self {
        Self {
            current_csv: None,
            installed_csv: None,
            install_plan: None,
            state: None,
            reason: None,
            install_plan_generation: None,
            install_plan_ref: None,
            catalog_health: None,
            conditions: None,
            last_updated,
        }
    }
}

/// Deprecated reference to an InstallPlan.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallPlanReference {
    /// API version of the InstallPlan.
    pub api_version: String,
    /// Kind, `InstallPlan`.
    pub kind: String,
    /// Name of the InstallPlan.
    pub name: String,
    /// UID of the InstallPlan.
    pub uuid: String,
}

/// Health of one catalog as seen by a Subscription.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCatalogHealth {
    /// The CatalogSource.
    pub catalog_source_ref: ObjectReference,
    /// When the health was last checked.
    pub last_updated: Time,
    /// Whether the catalog could be read.
    pub healthy: bool,
}

/// One observation of a Subscription's state (OLM's condition shape, not
/// `metav1.Condition`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionCondition {
    /// Type of condition, for example `ResolutionFailed` or `CatalogSourcesUnhealthy`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// One-word CamelCase reason for the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition was last probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_heartbeat_time: Option<Time>,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

impl SubscriptionSpec {
    /// The requested channel, `None` when unset or empty.
    pub fn channel(&self) -> Option<&str> {
        self.channel.as_deref().filter(|c| !c.is_empty())
    }

    /// The approval mode; unset means `Automatic`.
    pub fn approval(&self) -> Approval {
        self.install_plan_approval.unwrap_or_default()
    }
}
