//! `OperatorGroup` (`operators.coreos.com/v1`, also served as `v1alpha2`): which namespaces
//! the operators installed in a namespace watch.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1/operatorgroup_types.go`).

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The older API version OLM still serves, with the same schema.
pub const SERVED_LEGACY_VERSION: &str = "v1alpha2";

/// Which namespaces the group's operators watch.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OperatorGroup",
    plural = "operatorgroups",
    namespaced,
    status = "OperatorGroupStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "og",
    category = "olm",
    doc = "An OperatorGroup selects the namespaces that the operators installed in its namespace \
           watch: the namespaces in `spec.targetNamespaces`, the namespaces matching \
           `spec.selector`, or all namespaces when neither is set. A namespace must have \
           exactly one OperatorGroup for operators to be installed in it."
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupSpec {
    // Boxed: most groups name their namespaces or target all of them.
    /// Selects target namespaces by label. Ignored when `targetNamespaces` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Box<LabelSelector>>,

    /// The target namespaces. When neither this nor `selector` is set, the group targets all
    /// namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub target_namespaces: Option<Vec<String>>,

    /// Service account whose permissions limit what may be installed in this group (scoped
    /// installs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<String>,

    /// When true, the group's `olm.providedAPIs` annotation is not updated.
    #[serde(
        default,
        rename = "staticProvidedAPIs",
        skip_serializing_if = "Option::is_none"
    )]
    pub static_provided_apis: Option<bool>,

    /// `Default`: an operator only upgrades from a successful install. `TechPreviewUnsafeFailForward`:
    /// it may also upgrade from a failed install.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<UpgradeStrategy>,
}

/// When operators in a group may upgrade.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
#[schemars(transform = super::schema::drop_description)]
pub enum UpgradeStrategy {
    /// Upgrade only from a successful install.
    #[default]
    Default,
    /// Also upgrade from a failed install (unsafe).
    TechPreviewUnsafeFailForward,
}

/// Observed state of an OperatorGroup.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorGroupStatus {
    /// The resolved target namespaces; `[""]` means all namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub namespaces: Option<Vec<String>>,

    // Boxed: absent unless the group names a service account; 168 bytes inline otherwise.
    /// The service account named in `spec.serviceAccountName`, once found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_ref: Option<Box<ObjectReference>>,

    /// When the status was last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated: Option<Time>,

    /// Detailed conditions, for example `MultipleOperatorGroup`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
}

impl OperatorGroupSpec {
    /// The explicit target namespaces, empty when unset.
    pub fn target_namespaces(&self) -> &[String] {
        self.target_namespaces.as_deref().unwrap_or_default()
    }
}

/// The OperatorGroup CRD as OLM ships it: `v1` (storage) plus `v1alpha2` (served, same
/// schema), with `spec` optional and defaulted to `{upgradeStrategy: Default}` so that
/// OperatorGroups written without a spec (the usual "all namespaces" group) are accepted.
pub fn operator_group_crd() -> CustomResourceDefinition {
    let mut crd = OperatorGroup::crd();
    super::schema::optional_spec(
        &mut crd,
        &serde_json::json!({ "upgradeStrategy": "Default" }),
    );
    let legacy = crd.spec.versions.first().cloned().map(|mut version| {
        version.name = SERVED_LEGACY_VERSION.to_owned();
        version.storage = false;
        version.served = true;
        version
    });
    crd.spec.versions.extend(legacy);
    crd
}
