//! What the shared Deployment watch keeps of a Deployment: its metadata, `spec.replicas` and its
//! status. The readers of that store (the CSV's health, the CSV controller's trigger) read
//! nothing else; the pod template, most of a Deployment, is never deserialised. A
//! `k8s_openapi::api::apps::v1::Deployment` held 2.4 kB inline even with its template dropped;
//! this holds about 0.6 kB (scripts/bench-scale.sh: two Deployments per install).
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
    pub status: Option<DeploymentStatus>,
}

/// The part of `spec` the health check reads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize)]
pub struct RolloutSpec {
    /// Desired pods; the server defaults it to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

stored_form_of!(DeploymentRollout, Deployment);

impl From<Deployment> for DeploymentRollout {
    fn from(deployment: Deployment) -> Self {
        Self {
            metadata: deployment.metadata,
            spec: deployment.spec.map(|spec| RolloutSpec {
                replicas: spec.replicas,
            }),
            status: deployment.status,
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::DeploymentSpec;
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
        assert_eq!(
            decoded.status.and_then(|status| status.updated_replicas),
            Some(2)
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
