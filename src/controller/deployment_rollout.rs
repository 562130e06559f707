//! What the shared Deployment watch keeps of a Deployment: its metadata as [`CompactMeta`]
//! (only the ownership labels and annotation, strings shared), `spec.replicas` and the part of
//! its status the health check reads (observed generation, updated replicas, and each
//! condition's type, status and message, with the reason and times the install's Operator
//! copies). The readers of that store (the CSV's health, the CSV
//! controller's trigger) read nothing else; the pod template, most of a Deployment, is never
//! deserialised. A `k8s_openapi::api::apps::v1::Deployment` held 2.4 kB inline even with its
//! template dropped; this holds about 0.4 kB inline, and its metadata about 0.4 kB instead of
//! 1.4 kB (scripts/bench-scale.sh: two Deployments per install).
//!
//! It is the same API resource as a Deployment (group, version, kind, plural), so `Api` and the
//! watcher request `deployments` as usual; serde skips the fields this type does not name.

use std::sync::{Arc, LazyLock};

use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::Deserialize;

use super::compact_meta::{CompactMeta, keep_entries};
use crate::bundle::ownership::{CSV_ANNOTATION, CSV_LABEL, CSV_NAMESPACE_LABEL};
use crate::interner::Strings;

/// Label and annotation strings of stored Deployments, shared.
static STRINGS: LazyLock<Strings> = LazyLock::new(Strings::new);

/// A Deployment as the shared watch stores it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(from = "Listed")]
pub struct DeploymentRollout {
    /// Name, namespace, `uid` and `resourceVersion` only (the store's key and what kube's
    /// reflector reads); the rest of the metadata is in `meta`.
    metadata: ObjectMeta,
    meta: CompactMeta,
    pub spec: Option<RolloutSpec>,
    pub status: Option<RolloutStatus>,
}

/// The fields of a listed Deployment that are decoded at all.
#[derive(Deserialize)]
struct Listed {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: Option<RolloutSpec>,
    #[serde(default)]
    status: Option<RolloutStatus>,
}

impl From<Listed> for DeploymentRollout {
    fn from(listed: Listed) -> Self {
        Self::new(listed.metadata, listed.spec, listed.status)
    }
}

impl DeploymentRollout {
    /// The stored form of a Deployment with `metadata`, `spec` and `status`. Keeps only the
    /// labels and annotation its readers read: the CSV labels and the CSV annotation (the
    /// bundle's labels, the applied hash and the Deployment controller's revision would cost
    /// a few hundred bytes per Deployment, two per install).
    pub fn new(
        mut metadata: ObjectMeta,
        spec: Option<RolloutSpec>,
        status: Option<RolloutStatus>,
    ) -> Self {
        keep_entries(&mut metadata.labels, |key| {
            [CSV_LABEL, CSV_NAMESPACE_LABEL].contains(&key)
        });
        keep_entries(&mut metadata.annotations, |key| key == CSV_ANNOTATION);
        let (metadata, meta) = CompactMeta::split(metadata, &STRINGS);
        let mut status = status;
        for condition in status
            .iter_mut()
            .flat_map(|status| status.conditions.iter_mut().flatten())
        {
            // A handful of words: one copy each.
            if let Some(reason) = &mut condition.reason {
                *reason = STRINGS.get(reason);
            }
        }
        Self {
            metadata,
            meta,
            spec,
            status,
        }
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// `metadata.generation`.
    pub fn generation(&self) -> Option<i64> {
        self.meta.generation()
    }

    /// The value of label `key` (only the CSV labels are kept).
    pub fn label(&self, key: &str) -> Option<&Arc<str>> {
        self.meta.label(key)
    }

    /// The metadata kept: key, ownership labels and annotation, owner references.
    pub fn full_meta(&self) -> ObjectMeta {
        self.meta.joined(&self.metadata)
    }
}

/// The part of `spec` the health check reads.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct RolloutSpec {
    /// Desired pods; the server defaults it to 1.
    #[serde(default)]
    pub replicas: Option<i32>,
}

/// The part of `status` the health check reads (`DeploymentStatus` also holds five replica
/// counts and the collision count: 96 bytes inline against 48).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    /// The generation the Deployment controller last acted on.
    #[serde(default)]
    pub observed_generation: Option<i64>,
    /// Pods of the current template.
    #[serde(default)]
    pub updated_replicas: Option<i32>,
    /// Latest observations, `Available` among them.
    #[serde(default)]
    pub conditions: Option<Vec<RolloutCondition>>,
}

/// A Deployment condition: what the health check reads, and the reason and times the
/// install's Operator copies into its component references (`status.components.refs`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutCondition {
    /// `Available`, `Progressing` or `ReplicaFailure`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Human-readable details.
    #[serde(default)]
    pub message: Option<String>,
    /// Why it last changed (one of a few words: shared).
    #[serde(default)]
    pub reason: Option<Arc<str>>,
    /// When it was last updated.
    #[serde(default)]
    pub last_update_time: Option<Time>,
    /// When it last changed status.
    #[serde(default)]
    pub last_transition_time: Option<Time>,
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
                        reason: condition.reason.map(Arc::from),
                        last_update_time: condition.last_update_time,
                        last_transition_time: condition.last_transition_time,
                    })
                    .collect()
            }),
        }
    }
}

impl From<Deployment> for DeploymentRollout {
    fn from(deployment: Deployment) -> Self {
        Self::new(
            deployment.metadata,
            deployment.spec.map(|spec| RolloutSpec {
                replicas: spec.replicas,
            }),
            deployment.status.map(RolloutStatus::from),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

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
                uid: Some("deployment-uid".into()),
                resource_version: Some("41".into()),
                generation: Some(3),
                labels: Some(
                    [
                        ("app", "widget"),
                        (CSV_LABEL, "widget.v1"),
                        (CSV_NAMESPACE_LABEL, "ops"),
                    ]
                    .map(|(key, value)| (key.to_owned(), value.to_owned()))
                    .into(),
                ),
                annotations: Some(
                    [
                        (CSV_ANNOTATION, "widget.v1"),
                        ("opcat.dev/applied-hash", "23d938d8c2"),
                    ]
                    .map(|(key, value)| (key.to_owned(), value.to_owned()))
                    .into(),
                ),
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
        assert_eq!(decoded.name(), "widget-controller");
        assert_eq!(decoded.generation(), Some(3));
        // The key kube's reflector reads.
        assert_eq!(decoded.meta().uid.as_deref(), Some("deployment-uid"));
        assert_eq!(decoded.meta().resource_version.as_deref(), Some("41"));
        // Only the ownership labels and annotation are kept.
        assert_eq!(decoded.label(CSV_LABEL).map(|v| &**v), Some("widget.v1"));
        assert_eq!(decoded.label("app"), None);
        let meta = decoded.full_meta();
        let keys = |map: Option<BTreeMap<String, String>>| -> Vec<String> {
            map.into_iter().flat_map(BTreeMap::into_keys).collect()
        };
        assert_eq!(keys(meta.labels), [CSV_LABEL, CSV_NAMESPACE_LABEL]);
        assert_eq!(keys(meta.annotations), [CSV_ANNOTATION]);
        assert_eq!(meta.namespace.as_deref(), Some("ops"));
        assert_eq!(decoded.spec.and_then(|spec| spec.replicas), Some(2));
        let status = decoded.status.unwrap_or_default();
        assert_eq!(status.updated_replicas, Some(2));
        assert_eq!(
            status.conditions,
            Some(vec![RolloutCondition {
                type_: "Available".into(),
                status: "True".into(),
                message: Some("Deployment has minimum availability.".into()),
                reason: Some("MinimumReplicasAvailable".into()),
                ..RolloutCondition::default()
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
