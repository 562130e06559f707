//! `Operator` (`operators.coreos.com/v1`, cluster-scoped): one per install, named
//! `<package>.<namespace>`, whose status lists the install's components (every object labelled
//! `operators.coreos.com/<package>.<namespace>`). `kubectl operator uninstall` and
//! `list-operands` read it.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1/operator_types.go`); the label and name rules are OLM's
//! (`pkg/controller/operators/decorators/operator.go`), see [`component_label_key`].

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, LabelSelectorRequirement, Time,
};
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Prefix of the component label key (OLM's `ComponentLabelKeyPrefix`).
pub const COMPONENT_LABEL_PREFIX: &str = "operators.coreos.com/";

/// Longest name part of a label key.
const MAX_LABEL_NAME: usize = 63;

/// The Operator of an install: empty spec, components in status.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "Operator",
    plural = "operators",
    status = "OperatorStatus",
    derive = "PartialEq",
    derive = "Default",
    category = "olm",
    doc = "Operator represents a cluster operator: one per install, named \
           `<package>.<namespace>`; `status.components` lists every object of the install \
           (labelled `operators.coreos.com/<package>.<namespace>`). opcat creates it when an \
           install starts and deletes it once no component is left."
)]
pub struct OperatorSpec {}

/// Observed state of an Operator and its components.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperatorStatus {
    /// The resources that compose the operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub components: Option<Components>,
}

/// The resources that compose an operator.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Components {
    /// The label query that selects the operator's components.
    pub label_selector: Option<LabelSelector>,
    /// References to the components, sorted by kind, apiVersion, namespace and name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refs: Option<Vec<RichReference>>,
}

/// A reference to a component, with its status conditions.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RichReference {
    /// Kind of the component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// API version of the component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Namespace of the component (absent for cluster-scoped kinds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the component.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// UID (accepted; opcat does not set it, as OLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// resourceVersion (accepted; opcat does not set it, as OLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// fieldPath (accepted; opcat does not set it, as OLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
    /// The component's conditions: its `status.conditions`; for a ClusterServiceVersion, one
    /// condition of type `status.phase` (as OLM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<ComponentCondition>>,
}

/// A condition of a component (OLM's `v1.Condition`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentCondition {
    /// Type of the condition.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Why the condition last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details of the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the condition was last probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
    /// When the condition last changed status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// The Operator name of an install: `<package>.<namespace>` (OLM's `NewPackageOperator`).
pub fn operator_name(package: &str, namespace: &str) -> String {
    format!("{package}.{namespace}")
}

/// The component label key of the Operator `operator`: [`COMPONENT_LABEL_PREFIX`] and the name,
/// cut to 63 characters as OLM cuts it (`ComponentLabelKey`). One difference: a cut that ends
/// in `-` or `.` (not a valid label name, which OLM would then fail to write) drops those
/// characters too, so long names still label every object.
pub fn component_label_key(operator: &str) -> String {
    // Package and namespace names are ASCII (DNS names); a cut inside a character moves back.
    let mut end = operator.len().min(MAX_LABEL_NAME);
    while !operator.is_char_boundary(end) {
        end -= 1;
    }
    let name = operator[..end].trim_end_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{COMPONENT_LABEL_PREFIX}{name}")
}

/// The component label of the install of `package` in `namespace`: key, value `""`.
pub fn component_labels(package: &str, namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(
        component_label_key(&operator_name(package, namespace)),
        String::new(),
    )])
}

/// Whether label `key` is a component label.
pub fn is_component_label(key: &str) -> bool {
    key.starts_with(COMPONENT_LABEL_PREFIX)
}

/// The selector of the components of `operator`: the label key exists (as OLM).
pub fn component_selector(operator: &str) -> LabelSelector {
    LabelSelector {
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: component_label_key(operator),
            operator: "Exists".to_owned(),
            values: None,
        }]),
        match_labels: None,
    }
}

/// The Operator CRD, with `spec` optional as in OLM's.
pub fn operator_crd() -> CustomResourceDefinition {
    let mut crd = Operator::crd();
    super::schema::optional_spec(&mut crd, &serde_json::json!({}));
    crd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_label_key_is_the_name_cut_to_a_label_name() {
        assert_eq!(
            component_label_key(&operator_name("etcd", "team-a")),
            "operators.coreos.com/etcd.team-a"
        );
        let long = operator_name(&"p".repeat(40), &"n".repeat(40));
        let key = component_label_key(&long);
        assert_eq!(key.len(), COMPONENT_LABEL_PREFIX.len() + 63);
        assert!(long.starts_with(key.trim_start_matches(COMPONENT_LABEL_PREFIX)));
        // A cut right after the dot drops it: the key stays a valid label key.
        let dotted = operator_name(&"p".repeat(62), "ns");
        assert_eq!(
            component_label_key(&dotted),
            format!("{COMPONENT_LABEL_PREFIX}{}", "p".repeat(62))
        );
        assert!(crate::pull_secrets::names::is_label_key(
            &component_label_key(&dotted)
        ));
    }

    #[test]
    fn the_crd_is_cluster_scoped_with_a_status_and_an_optional_spec() {
        let crd = operator_crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("operators.operators.coreos.com")
        );
        assert_eq!(crd.spec.scope, "Cluster");
        let version = &crd.spec.versions[0];
        assert!(version.subresources.as_ref().unwrap().status.is_some());
        let operator: Operator = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "Operator",
            "metadata": {"name": "etcd.team-a"}, "spec": {},
            "status": {"components": {
                "labelSelector": {"matchExpressions": [
                    {"key": "operators.coreos.com/etcd.team-a", "operator": "Exists"}]},
                "refs": [{"apiVersion": "operators.coreos.com/v1alpha1",
                    "kind": "ClusterServiceVersion", "name": "etcd.v1", "namespace": "team-a",
                    "conditions": [{"type": "Succeeded", "status": "True",
                        "reason": "InstallSucceeded", "message": "done",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}}
        }))
        .unwrap();
        let components = operator.status.unwrap().components.unwrap();
        assert_eq!(
            components.label_selector,
            Some(component_selector("etcd.team-a"))
        );
        assert_eq!(
            components.refs.unwrap()[0].conditions.as_ref().unwrap()[0].type_,
            "Succeeded"
        );
    }
}
