//! `OperatorCondition` (`operators.coreos.com/v2`, also served as `v1`): how an operator tells
//! the installer about its state (for now: whether it may be upgraded), and how an admin
//! overrides what it says.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v2/operatorcondition_types.go` and `v1/operatorcondition_types.go`), and the CRD
//! serves both versions as OLM's does (`deploy/chart/crds/0000_50_olm_00-operatorconditions.crd.yaml`
//! of operator-lifecycle-manager): `v2` is the storage version, `v1` (no `spec.conditions`) is
//! served too, and there is no conversion webhook (strategy `None`: the API server only changes
//! `apiVersion`).
//!
//! Two deliberate differences from OLM's schema, both invisible to clients that follow it:
//! `spec` defaults to `{}` (an object written without it still reads as one, so a watch never
//! fails on it), and the condition entries are read leniently ([`OperatorConditionEntry`]):
//! operators and admins write them, and one odd entry must not stop opcat's watch of every
//! OperatorCondition.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::{CustomResource, CustomResourceExt};
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// The storage version.
pub const STORAGE_VERSION: &str = "v2";

/// Condition type an operator sets to `False` to hold its upgrades (operator-framework/api
/// `v2.Upgradeable`).
pub const UPGRADEABLE: &str = "Upgradeable";

/// The state an operator reports, and the admin's overrides of it.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v2",
    kind = "OperatorCondition",
    plural = "operatorconditions",
    namespaced,
    status = "OperatorConditionStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "condition",
    category = "olm",
    doc = "An OperatorCondition is how an operator tells OLM (here: opcat) about its state, for \
           example `Upgradeable=False` to hold an upgrade, and how a cluster admin overrides what \
           it reports. opcat creates one per ClusterServiceVersion, with the CSV's name."
)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConditionSpec {
    /// The operator's ServiceAccounts: they may get, update and patch this object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_accounts: Option<Vec<String>>,

    /// The operator's Deployments: their containers carry `OPERATOR_CONDITION_NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployments: Option<Vec<String>>,

    /// Conditions set by a cluster admin; they win over `conditions`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "override_list")]
    pub overrides: Option<Vec<OperatorConditionEntry>>,

    /// Conditions set by the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "condition_list")]
    pub conditions: Option<Vec<OperatorConditionEntry>>,
}

/// The conditions the installer has seen.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConditionStatus {
    /// `spec.conditions` as observed, each with the `observedGeneration` it was read at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "condition_list")]
    pub conditions: Option<Vec<OperatorConditionEntry>>,
}

/// `v1` of the kind: an admin's overrides, and the installer's status; no `spec.conditions`.
pub mod v1 {
    use kube::CustomResource;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    use super::{OperatorConditionEntry, OperatorConditionStatus};

    /// What a cluster admin sets (`v1` has no `spec.conditions`; the operator writes them
    /// through `v2`).
    #[derive(
        CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema,
    )]
    #[kube(
        group = "operators.coreos.com",
        version = "v1",
        kind = "OperatorCondition",
        root = "OperatorConditionV1",
        plural = "operatorconditions",
        namespaced,
        status = "OperatorConditionStatus",
        derive = "PartialEq",
        derive = "Default",
        shortname = "condition",
        category = "olm",
        doc = "An OperatorCondition (v1): a cluster admin's overrides of an operator's state."
    )]
    #[serde(rename_all = "camelCase")]
    pub struct OperatorConditionV1Spec {
        /// The operator's ServiceAccounts.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub service_accounts: Option<Vec<String>>,

        /// The operator's Deployments.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub deployments: Option<Vec<String>>,

        /// Conditions set by a cluster admin; they win over the operator's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(schema_with = "super::override_list")]
        pub overrides: Option<Vec<OperatorConditionEntry>>,
    }
}

/// One `metav1.Condition` of an OperatorCondition, read leniently: every field but `type`
/// may be missing (the CRD's schema requires them where OLM's does; overrides need no
/// `lastTransitionTime`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct OperatorConditionEntry {
    /// Condition type, for example `Upgradeable`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// The `metadata.generation` the condition was set at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// CamelCase reason.
    #[serde(default)]
    pub reason: String,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
}

impl OperatorConditionSpec {
    /// The admin's override of condition `type_`, if any.
    pub fn override_of(&self, type_: &str) -> Option<&OperatorConditionEntry> {
        find(self.overrides.as_deref(), type_)
    }
}

impl OperatorConditionStatus {
    /// The observed condition `type_`, if any.
    pub fn condition(&self, type_: &str) -> Option<&OperatorConditionEntry> {
        find(self.conditions.as_deref(), type_)
    }
}

fn find<'a>(
    entries: Option<&'a [OperatorConditionEntry]>,
    type_: &str,
) -> Option<&'a OperatorConditionEntry> {
    entries?.iter().find(|entry| entry.type_ == type_)
}

/// `metav1.Condition`'s schema (apimachinery `types.go` markers, as controller-gen writes them
/// into OLM's CRD); `lastTransitionTime` is required unless `optional_time`.
fn condition_schema(optional_time: bool) -> Schema {
    let mut required = vec!["message", "reason", "status", "type"];
    if !optional_time {
        required.insert(0, "lastTransitionTime");
    }
    json_schema!({
        "description": "Condition contains details for one aspect of the current state of \
                        this API Resource.",
        "type": "object",
        "required": required,
        "properties": {
            "lastTransitionTime": {
                "description": "lastTransitionTime is the last time the condition transitioned \
                                from one status to another.",
                "type": "string",
                "format": "date-time",
            },
            "message": {
                "description": "message is a human readable message indicating details about \
                                the transition. This may be an empty string.",
                "type": "string",
                "maxLength": 32768,
            },
            "observedGeneration": {
                "description": "observedGeneration represents the .metadata.generation that \
                                the condition was set based upon.",
                "type": "integer",
                "format": "int64",
                "minimum": 0,
            },
            "reason": {
                "description": "reason contains a programmatic identifier indicating the reason \
                                for the condition's last transition.",
                "type": "string",
                "maxLength": 1024,
                "minLength": 1,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            },
            "status": {
                "description": "status of the condition, one of True, False, Unknown.",
                "type": "string",
                "enum": ["True", "False", "Unknown"],
            },
            "type": {
                "description": "type of condition in CamelCase or in foo.example.com/CamelCase.",
                "type": "string",
                "maxLength": 316,
                "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            },
        },
    })
}

fn list_of(item: Schema) -> Schema {
    json_schema!({
        "type": "array",
        "items": item,
    })
}

/// `spec.conditions` and `status.conditions`.
pub(crate) fn condition_list(_: &mut SchemaGenerator) -> Schema {
    list_of(condition_schema(false))
}

/// `spec.overrides`: admins write them without `lastTransitionTime`.
pub(crate) fn override_list(_: &mut SchemaGenerator) -> Schema {
    list_of(condition_schema(true))
}

/// The OperatorCondition CRD: `v2` (storage) and `v1` (served), `spec` optional with default
/// `{}`.
pub fn operator_condition_crd() -> CustomResourceDefinition {
    // Both derive from the same group, kind and scope, each with one version: merging cannot
    // fail (kube's `merge_crds` only refuses mismatches and missing versions).
    let mut crd = match kube::core::crd::merge_crds(
        vec![OperatorCondition::crd(), v1::OperatorConditionV1::crd()],
        STORAGE_VERSION,
    ) {
        Ok(crd) => crd,
        Err(error) => unreachable!("the OperatorCondition versions merge: {error}"),
    };
    // OLM lists `v1` first.
    crd.spec.versions.sort_by(|a, b| a.name.cmp(&b.name));
    super::schema::optional_spec(&mut crd, &serde_json::json!({}));
    for version in &mut crd.spec.versions {
        // schemars titles the `v1` root after its Rust type; OLM's schema has no title.
        if let Some(root) = version
            .schema
            .as_mut()
            .and_then(|schema| schema.open_api_v3_schema.as_mut())
        {
            root.title = None;
        }
    }
    crd
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON;

    use super::*;

    #[test]
    fn the_crd_serves_v1_and_stores_v2_with_status_subresources() {
        let crd = operator_condition_crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("operatorconditions.operators.coreos.com")
        );
        let versions: Vec<(&str, bool, bool)> = crd
            .spec
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage))
            .collect();
        assert_eq!(versions, [("v1", true, false), ("v2", true, true)]);
        for version in &crd.spec.versions {
            assert!(
                version
                    .subresources
                    .as_ref()
                    .is_some_and(|s| s.status.is_some()),
                "{}",
                version.name
            );
            let root = version.schema.as_ref().unwrap().open_api_v3_schema.as_ref();
            let spec = &root.unwrap().properties.as_ref().unwrap()["spec"];
            assert_eq!(spec.default, Some(JSON(serde_json::json!({}))));
        }
        assert_eq!(
            crd.spec.names.short_names,
            Some(vec!["condition".to_owned()])
        );
    }

    #[test]
    fn overrides_need_no_transition_time_and_entries_read_leniently() {
        let condition: OperatorCondition = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v2",
            "kind": "OperatorCondition",
            "metadata": {"name": "op.v1", "namespace": "ns"},
            "spec": {
                "overrides": [{"type": "Upgradeable", "status": "True", "reason": "Ok"}],
                "conditions": [{"type": "Upgradeable"}]
            }
        }))
        .unwrap();
        let upgradeable = condition.spec.override_of(UPGRADEABLE).unwrap();
        assert_eq!(upgradeable.status, "True");
        assert_eq!(upgradeable.last_transition_time, None);
        assert!(condition.spec.conditions.unwrap()[0].status.is_empty());
    }
}
