//! What the shared Deployment watch keeps of a Deployment: its metadata, `spec.replicas` and the
//! part of its status the health check reads (observed generation, updated replicas, and each
//! condition's type, status and message). The readers of that store (the CSV's health, the CSV
//! controller's trigger) read nothing else; the pod template, most of a Deployment, is never
//! deserialised. A `k8s_openapi::api::apps::v1::Deployment` held 2.4 kB inline even with its
//! template dropped; this holds about 0.4 kB (scripts/bench-scale.sh: two Deployments per
//! install).
//!
//! It is the same API resource as a Deployment (group, version, kind, plural), so `Api` and the
//! watcher request `deployments` as usual; serde skips the fields this type does not name.

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};

/// A Deployment as the shared watch stores it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct DeploymentRollout {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<RolloutSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RolloutStatus>,
}

/// The part of `spec` the health check reads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct RolloutSpec {
    /// Desired pods; the server defaults it to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// The part of `status` the health check reads (`DeploymentStatus` also holds five replica
/// counts and the collision count: 96 bytes inline against 48).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The generation the Deployment controller last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Pods of the current template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i32>,
    /// Latest observations, `Available` among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<RolloutCondition>>,
}

/// The part of a Deployment condition the health check reads (a `DeploymentCondition` also
/// holds a reason and two timestamps: 144 bytes against 72).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct RolloutCondition {
    /// `Available`, `Progressing` or `ReplicaFailure`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

stored_form_of!(DeploymentRollout, Deployment);

impl From<DeploymentStatus> for RolloutStatus {
    fn from(status: DeploymentStatus) -> Self {
        Self {
            observed_generation: status.observed_generation,
            updated_replicas: status.updated_replicas,
            conditions: status.conditions.map(|conditions| {
                conditions
                    .into_iter()
                    .map(|condition| RolloutCondition {
                        type_: condition.type_,
                        status: condition.status,
                        message: condition.message,
                    })
                    .collect()
            }),
        }
    }
}

impl From<Deployment> for DeploymentRollout {
    fn from(deployment: Deployment) -> Self {
        Self {
            metadata: deployment.metadata,
            spec: deployment.spec.map(|spec| RolloutSpec {
                replicas: spec.replicas,
            }),
            status: deployment.status.map(RolloutStatus::from),
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::{DeploymentCondition, DeploymentSpec};
    use kube::Resource;

    use super::*;

    #[test]
    fn it_is_the_deployments_resource() {
        assert_eq!(DeploymentRollout::kind(&()), "Deployment");
        assert_eq!(DeploymentRollout::api_version(&()), "apps/v1");
        assert_eq!(DeploymentRollout::plural(&()), "deployments");
    }

    #[test]
    fn a_deployment_decodes_without_its_template_and_keeps_what_health_reads() {
        let mut deployment = Deployment {
            metadata: ObjectMeta {
                name: Some("widget-controller".into()),
                namespace: Some("ops".into()),
                generation: Some(3),
                labels: Some([("app".to_owned(), "widget".to_owned())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(DeploymentSpec {
                replicas: Some(2),
                ..DeploymentSpec::default()
            }),
            status: Some(DeploymentStatus {
                observed_generation: Some(3),
                updated_replicas: Some(2),
                available_replicas: Some(2),
                conditions: Some(vec![DeploymentCondition {
                    type_: "Available".into(),
                    status: "True".into(),
                    reason: Some("MinimumReplicasAvailable".into()),
                    message: Some("Deployment has minimum availability.".into()),
                    ..DeploymentCondition::default()
                }]),
                ..DeploymentStatus::default()
            }),
        };
        if let Some(spec) = &mut deployment.spec {
            spec.template.metadata = Some(ObjectMeta {
                labels: Some([("app".to_owned(), "widget".to_owned())].into()),
                ..ObjectMeta::default()
            });
        }
        let json = serde_json::to_value(&deployment).unwrap();
        let decoded: DeploymentRollout = serde_json::from_value(json).unwrap();
        assert_eq!(decoded, DeploymentRollout::from(deployment));
        assert_eq!(decoded.spec.and_then(|spec| spec.replicas), Some(2));
        assert_eq!(decoded.metadata.generation, Some(3));
        let status = decoded.status.unwrap_or_default();
        assert_eq!(status.updated_replicas, Some(2));
        assert_eq!(
            status.conditions,
            Some(vec![RolloutCondition {
                type_: "Available".into(),
                status: "True".into(),
                message: Some("Deployment has minimum availability.".into()),
            }])
        );
    }

    #[test]
    fn it_is_smaller_than_a_deployment() {
        assert!(
            std::mem::size_of::<DeploymentRollout>() * 3 < std::mem::size_of::<Deployment>(),
            "{} vs {}",
            std::mem::size_of::<DeploymentRollout>(),
            std::mem::size_of::<Deployment>()
        );
    }
}
