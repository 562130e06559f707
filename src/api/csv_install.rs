//! The install strategy of a ClusterServiceVersion (`spec.install`): the operator's
//! Deployments and the permissions of the service accounts they run as.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::DeploymentSpec;
use k8s_openapi::api::rbac::v1::PolicyRule;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The only install strategy OLM defines.
pub const INSTALL_STRATEGY_DEPLOYMENT: &str = "deployment";

/// How to install the operator.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct NamedInstallStrategy {
    /// Name of the strategy; only `deployment` exists.
    pub strategy: String,
    /// Details of the `deployment` strategy.
    // Shared: every CSV installed from the same bundle has the same strategy, and the CSV store
    // keeps one copy of it (`controller::store_trim`). Change it with `Arc::make_mut`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Arc<StrategyDetailsDeployment>>,
}

/// The operator's Deployments and the RBAC permissions of their service accounts.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StrategyDetailsDeployment {
    /// Deployments to create in the install namespace.
    pub deployments: Vec<StrategyDeploymentSpec>,
    /// Namespaced permissions (a Role and RoleBinding per service account in each target
    /// namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<Vec<StrategyDeploymentPermissions>>,
    /// Cluster-wide permissions (a ClusterRole and ClusterRoleBinding per service account).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_permissions: Option<Vec<StrategyDeploymentPermissions>>,
}

/// One Deployment of the operator.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct StrategyDeploymentSpec {
    /// Name of the Deployment.
    pub name: String,
    /// The Deployment's spec.
    pub spec: DeploymentSpec,
    /// Labels added to the Deployment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<BTreeMap<String, String>>,
}

/// RBAC rules granted to one service account.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StrategyDeploymentPermissions {
    /// Service account the rules are granted to (created in the install namespace when
    /// missing).
    pub service_account_name: String,
    /// The rules.
    pub rules: Vec<PolicyRule>,
}

impl NamedInstallStrategy {
    /// The Deployments of the strategy (empty when it has no `spec`).
    pub fn deployments(&self) -> &[StrategyDeploymentSpec] {
        self.spec
            .as_ref()
            .map(|spec| spec.deployments.as_slice())
            .unwrap_or_default()
    }

    /// Namespaced permissions (empty when none).
    pub fn permissions(&self) -> &[StrategyDeploymentPermissions] {
        self.spec
            .as_ref()
            .and_then(|spec| spec.permissions.as_deref())
            .unwrap_or_default()
    }

    /// Cluster-wide permissions (empty when none).
    pub fn cluster_permissions(&self) -> &[StrategyDeploymentPermissions] {
        self.spec
            .as_ref()
            .and_then(|spec| spec.cluster_permissions.as_deref())
            .unwrap_or_default()
    }
}
