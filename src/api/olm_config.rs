//! `OLMConfig` (`operators.coreos.com/v1`, cluster-scoped): switches for OLM-wide features. opcat
//! reads the one named `cluster`, as OLM does.
//!
//! Field names and shapes follow OLM v0 (`operator-framework/api`,
//! `pkg/operators/v1/olmconfig_types.go`).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The name of the OLMConfig opcat reads (OLM's singleton).
pub const CLUSTER: &str = "cluster";

/// Condition type OLM writes on the OLMConfig about copied CSVs.
pub const CONDITION_DISABLED_COPIED_CSVS: &str = "DisabledCopiedCSVs";
/// Reason of [`CONDITION_DISABLED_COPIED_CSVS`] while copies are enabled.
pub const REASON_COPIED_CSVS_ENABLED: &str = "CopiedCSVsEnabled";
/// Reason of [`CONDITION_DISABLED_COPIED_CSVS`] while copies are disabled.
pub const REASON_COPIED_CSVS_DISABLED: &str = "CopiedCSVsDisabled";

/// OLM-wide feature switches.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "operators.coreos.com",
    version = "v1",
    kind = "OLMConfig",
    plural = "olmconfigs",
    status = "OLMConfigStatus",
    derive = "PartialEq",
    derive = "Default",
    category = "olm",
    doc = "OLMConfig configures OLM-wide features; opcat reads the one named `cluster`. \
           `spec.features.disableCopiedCSVs: true` removes the copies of the \
           ClusterServiceVersions of operators installed for all namespaces (they come back \
           when it is unset)."
)]
#[serde(rename_all = "camelCase")]
pub struct OLMConfigSpec {
    /// The configurable features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Features>,
}

/// The configurable features.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Features {
    /// Disables the copies of the ClusterServiceVersions of operators installed in an
    /// OperatorGroup that targets all namespaces. When re-enabled, the copies are made again.
    #[serde(
        default,
        rename = "disableCopiedCSVs",
        skip_serializing_if = "Option::is_none"
    )]
    pub disable_copied_csvs: Option<bool>,
    /// Sync interval of OLM's packageserver pods (accepted and kept; opcat's package API reads
    /// its catalogs from memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))]
    pub package_server_sync_interval: Option<String>,
}

/// Observed state of the OLMConfig.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OLMConfigStatus {
    /// Conditions, for example `DisabledCopiedCSVs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
}

impl OLMConfig {
    /// Whether copied CSVs are enabled (OLM's `CopiedCSVsAreEnabled`): unless
    /// `spec.features.disableCopiedCSVs` is true.
    pub fn copied_csvs_enabled(&self) -> bool {
        self.spec
            .features
            .as_ref()
            .and_then(|features| features.disable_copied_csvs)
            != Some(true)
    }
}

/// The OLMConfig CRD, with `spec` optional as in OLM's.
pub fn olm_config_crd() -> CustomResourceDefinition {
    let mut crd = OLMConfig::crd();
    super::schema::optional_spec(&mut crd, &serde_json::json!({}));
    crd
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_enabled_unless_disabled_explicitly() {
        let mut config = OLMConfig::new(CLUSTER, OLMConfigSpec::default());
        assert!(config.copied_csvs_enabled());
        config.spec.features = Some(Features {
            disable_copied_csvs: Some(false),
            ..Features::default()
        });
        assert!(config.copied_csvs_enabled());
        config.spec.features = Some(Features {
            disable_copied_csvs: Some(true),
            ..Features::default()
        });
        assert!(!config.copied_csvs_enabled());
    }

    #[test]
    fn the_crd_is_cluster_scoped_with_a_status_and_an_optional_spec() {
        let crd = olm_config_crd();
        assert_eq!(
            crd.metadata.name.as_deref(),
            Some("olmconfigs.operators.coreos.com")
        );
        assert_eq!(crd.spec.scope, "Cluster");
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1");
        assert!(version.subresources.as_ref().unwrap().status.is_some());
        let schema = version
            .schema
            .as_ref()
            .unwrap()
            .open_api_v3_schema
            .as_ref()
            .unwrap();
        assert!(
            schema
                .required
                .as_ref()
                .is_none_or(|required| !required.iter().any(|field| field == "spec"))
        );
        let config: OLMConfig = serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1", "kind": "OLMConfig",
            "metadata": {"name": "cluster"},
            "spec": {"features": {"disableCopiedCSVs": true, "packageServerSyncInterval": "5m"}}
        }))
        .unwrap();
        assert!(!config.copied_csvs_enabled());
    }
}
