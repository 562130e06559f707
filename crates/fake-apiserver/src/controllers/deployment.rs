//! A minimal Deployment controller (`pkg/controller/deployment`): it writes the status a real
//! rollout ends with (`observedGeneration`, replica counts, `Available` and `Progressing`
//! conditions) — at once, or held at `Available=False` until the test releases it.

use serde_json::{Value, json};

use super::CONTROLLER_MANAGER;
use crate::cluster::{Cluster, DeploymentMode, is_deleting};
use crate::ids::now_rfc3339;
use crate::store::ObjRef;

fn condition(type_: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": type_, "status": status, "reason": reason, "message": message,
        "lastUpdateTime": now, "lastTransitionTime": now,
    })
}

/// The status a Deployment should report.
fn desired_status(obj: &Value, available: bool, now: &str) -> Value {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let generation = obj
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(1));
    let replicas = obj
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1);
    let rs = format!("{name}-7d4b9c8f6d");
    let mut status = json!({"observedGeneration": generation});
    let counts = if available {
        vec![
            "replicas",
            "updatedReplicas",
            "readyReplicas",
            "availableReplicas",
        ]
    } else {
        vec!["replicas", "updatedReplicas", "unavailableReplicas"]
    };
    if replicas > 0 {
        for field in counts {
            status[field] = json!(replicas);
        }
    }
    status["conditions"] = if available {
        json!([
            condition(
                "Available",
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
                now
            ),
            condition(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                &format!("ReplicaSet \"{rs}\" has successfully progressed."),
                now
            ),
        ])
    } else {
        json!([
            condition(
                "Available",
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
                now
            ),
            condition(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                &format!("ReplicaSet \"{rs}\" is progressing."),
                now
            ),
        ])
    };
    status
}

/// Keeps the timestamps of conditions whose type and status did not change.
fn keep_condition_times(desired: &mut Value, current: Option<&Value>) {
    let Some(Value::Array(conds)) = desired.get_mut("conditions") else {
        return;
    };
    let old = current
        .and_then(|c| c.get("conditions"))
        .and_then(Value::as_array);
    for c in conds.iter_mut() {
        let same = old.and_then(|o| {
            o.iter()
                .find(|x| x.get("type") == c.get("type") && x.get("status") == c.get("status"))
        });
        if let Some(prev) = same {
            for field in ["lastUpdateTime", "lastTransitionTime"] {
                if let Some(t) = prev.get(field) {
                    c[field] = t.clone();
                }
            }
        }
    }
}

impl Cluster {
    pub(crate) fn deployment_written(&mut self, r: &ObjRef, obj: &Value) {
        let available = match self.controllers.deployments {
            DeploymentMode::Disabled => return,
            DeploymentMode::Available => true,
            DeploymentMode::HeldUntilReleased => self
                .released
                .contains(&(r.namespace.clone(), r.name.clone())),
        };
        if is_deleting(obj) {
            return;
        }
        let mut desired = desired_status(obj, available, &now_rfc3339());
        keep_condition_times(&mut desired, obj.get("status"));
        if obj.get("status") == Some(&desired) {
            return;
        }
        self.controller_update(r, Some("status"), CONTROLLER_MANAGER, move |d| {
            d["status"] = desired;
        });
    }

    /// Re-evaluates every Deployment (after a release or a mode change).
    pub(crate) fn resync_deployments(&mut self) {
        let key = crate::resources::ResourceKey {
            group: "apps".into(),
            plural: "deployments".into(),
        };
        for r in self.store.refs(&key) {
            self.work.push_back(super::Work::Written(r));
        }
        self.run_controllers();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_status_is_unavailable_with_observed_generation() {
        let d = json!({"metadata": {"name": "op", "generation": 2}, "spec": {"replicas": 2}});
        let s = desired_status(&d, false, "t");
        assert_eq!(s["observedGeneration"], 2);
        assert_eq!(s["unavailableReplicas"], 2);
        assert_eq!(s["conditions"][0]["status"], "False");
        let s = desired_status(&d, true, "t");
        assert_eq!(s["availableReplicas"], 2);
        assert_eq!(s["conditions"][0]["status"], "True");
    }
}
