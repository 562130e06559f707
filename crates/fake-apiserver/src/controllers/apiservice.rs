//! APIService status, as the aggregator in kube-apiserver writes it.
//!
//! * Create (`staging/src/k8s.io/kube-aggregator/pkg/registry/apiservice/strategy.go`,
//!   `PrepareForCreate`): the status sent is dropped and a local APIService (no `service`) is
//!   `Available=True` (`Local`, "Local APIServices are always available") in the create
//!   response already.
//! * Remote APIServices (`pkg/controllers/status/remote/remote_available_controller.go`,
//!   `sync`): `Available=False` with `ServiceNotFound` while the Service is missing,
//!   `ServicePortError` when a ClusterIP Service does not listen on `spec.service.port`,
//!   `EndpointsNotFound` when it has no selector (no EndpointSlices are made for it) and
//!   `MissingEndpoints` while no ready pod backs it; then `Available=True` (`Passed`, "all
//!   checks passed").
//!
//! * Discovery check: for a Service given an endpoint with
//!   `FakeApiServer::set_service_endpoint`, the endpoint checks pass and the outcome of the
//!   real `GET /apis/<group>/<version>` decides (`FailedDiscoveryCheck` or `Passed`; see the
//!   `aggregator` module); until it has run the condition stays as it was.
//!
//! What differs: pods and EndpointSlices are not emulated. For a Service without an endpoint
//! "a ready endpoint" means a Deployment in the Service's namespace, not being deleted, whose
//! pod template labels match the Service selector and whose status has `readyReplicas > 0`
//! (with `DeploymentMode::HeldUntilReleased` the APIService turns Available on release; with
//! `DeploymentMode::Disabled` never), and no discovery request is made: it shows `Passed`.

use serde_json::{Value, json};

use super::is_kind;
use crate::cluster::{Cluster, is_deleting, str_at};
use crate::ids::now_rfc3339;
use crate::resources::{ResourceInfo, ResourceKey};
use crate::store::ObjRef;

const AGGREGATOR: &str = "kube-apiserver";
const GROUP: &str = "apiregistration.k8s.io";

fn key(group: &str, plural: &str) -> ResourceKey {
    ResourceKey {
        group: group.into(),
        plural: plural.into(),
    }
}

/// The `Available` condition (without `lastTransitionTime`).
struct Availability {
    status: &'static str,
    reason: &'static str,
    message: String,
}

const LOCAL_MESSAGE: &str = "Local APIServices are always available";

/// `PrepareForCreate` of the APIService storage, run on every created object of `info`.
pub(crate) fn prepare_for_create(info: &ResourceInfo, obj: &mut Value) {
    if info.group != GROUP || info.kind != "APIService" {
        return;
    }
    let Value::Object(map) = obj else {
        return;
    };
    map.remove("status");
    let local = map
        .get("spec")
        .and_then(|s| s.get("service"))
        .is_none_or(Value::is_null);
    if local {
        let available = Availability {
            status: "True",
            reason: "Local",
            message: LOCAL_MESSAGE.into(),
        };
        map.insert(
            "status".into(),
            json!({"conditions": [condition(&available, &now_rfc3339())]}),
        );
    }
}

fn condition(a: &Availability, now: &str) -> Value {
    json!({"type": "Available", "status": a.status, "lastTransitionTime": now,
           "reason": a.reason, "message": a.message})
}

/// `SetAPIServiceCondition`: the transition time moves only when the status changes.
fn with_condition(status: Option<&Value>, a: &Availability) -> Value {
    let mut status = status.cloned().unwrap_or_else(|| json!({}));
    let mut conditions = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match conditions.iter_mut().find(|c| c["type"] == "Available") {
        Some(c) => {
            if c["status"] != a.status {
                c["status"] = json!(a.status);
                c["lastTransitionTime"] = json!(now_rfc3339());
            }
            c["reason"] = json!(a.reason);
            c["message"] = json!(a.message);
        }
        None => conditions.push(condition(a, &now_rfc3339())),
    }
    status["conditions"] = Value::Array(conditions);
    status
}

fn labels_match(selector: &serde_json::Map<String, Value>, labels: Option<&Value>) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

impl Cluster {
    /// Re-evaluates one APIService after it was written.
    pub(crate) fn apiservice_written(&mut self, name: &str, obj: &Value) {
        if is_deleting(obj) {
            return;
        }
        let Some(wanted) = self.availability(name, obj) else {
            return;
        };
        let status = with_condition(obj.get("status"), &wanted);
        if obj.get("status") == Some(&status) {
            return;
        }
        let r = ObjRef {
            key: key(GROUP, "apiservices"),
            namespace: String::new(),
            name: name.to_string(),
        };
        self.controller_update(&r, Some("status"), AGGREGATOR, move |o| {
            o["status"] = status;
        });
    }

    /// Re-evaluates the APIServices backed by a Service in `namespace` after a Service or a
    /// Deployment there changed (the controller's Service and EndpointSlice handlers).
    pub(crate) fn apiservices_backed_in(&mut self, r: &ObjRef) {
        if !(is_kind(&r.key, "", "services") || is_kind(&r.key, "apps", "deployments")) {
            return;
        }
        let api_services = key(GROUP, "apiservices");
        for a in self.store.refs(&api_services) {
            let Some(obj) = self.store.get(&a.key, "", &a.name).cloned() else {
                continue;
            };
            if obj
                .pointer("/spec/service/namespace")
                .and_then(Value::as_str)
                == Some(r.namespace.as_str())
            {
                self.apiservice_written(&a.name, &obj);
            }
        }
    }

    /// Re-evaluates the APIServices backed by the Service `namespace/name` (its endpoint
    /// changed).
    pub(crate) fn apiservices_of_service(&mut self, namespace: &str, name: &str) {
        if !self.controllers.api_services {
            return;
        }
        let api_services = key(GROUP, "apiservices");
        for a in self.store.refs(&api_services) {
            let Some(obj) = self.store.get(&a.key, "", &a.name).cloned() else {
                continue;
            };
            let service = obj.pointer("/spec/service");
            let field = |f: &str| service.and_then(|s| s.get(f)).and_then(Value::as_str);
            if field("namespace") == Some(namespace) && field("name") == Some(name) {
                self.apiservice_written(&a.name, &obj);
            }
        }
        self.run_controllers();
    }

    /// The `Available` condition `sync` would compute; `None` while the discovery check of a
    /// backend with an endpoint has not run yet (the prober is woken).
    fn availability(&self, api_service: &str, obj: &Value) -> Option<Availability> {
        let Some(service) = obj.pointer("/spec/service").filter(|s| !s.is_null()) else {
            return Some(Availability {
                status: "True",
                reason: "Local",
                message: LOCAL_MESSAGE.into(),
            });
        };
        let text = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or_default();
        let (ns, name) = (text("namespace"), text("name"));
        let unavailable = |reason, message| {
            Some(Availability {
                status: "False",
                reason,
                message,
            })
        };
        let endpoint = self.endpoint(ns, name);
        let Some(svc) = self.store.get(&key("", "services"), ns, name) else {
            return unavailable(
                "ServiceNotFound",
                format!("service/{name} in {ns:?} is not present"),
            );
        };
        let svc_type = svc.pointer("/spec/type").and_then(Value::as_str);
        if svc_type.is_none_or(|t| t == "ClusterIP") {
            let port = service.get("port").and_then(Value::as_i64).unwrap_or(443);
            let ports = svc.pointer("/spec/ports").and_then(Value::as_array);
            let Some(found) = ports
                .into_iter()
                .flatten()
                .find(|p| p.get("port").and_then(Value::as_i64) == Some(port))
            else {
                return unavailable(
                    "ServicePortError",
                    format!("service/{name} in {ns:?} is not listening on port {port}"),
                );
            };
            let port_name = found
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let selector = svc
                .pointer("/spec/selector")
                .and_then(Value::as_object)
                .filter(|s| !s.is_empty());
            let selector = match (selector, endpoint) {
                (_, Some(_)) => None,
                (Some(selector), None) => Some(selector),
                (None, None) => {
                    return unavailable(
                        "EndpointsNotFound",
                        format!("cannot find endpointslices for service/{name} in {ns:?}"),
                    );
                }
            };
            if let Some(selector) = selector
                && !self.has_ready_backend(ns, selector)
            {
                return unavailable(
                    "MissingEndpoints",
                    format!(
                        "endpointslices for service/{name} in {ns:?} have no addresses with port name {port_name:?}"
                    ),
                );
            }
        }
        let passed = Availability {
            status: "True",
            reason: "Passed",
            message: "all checks passed".into(),
        };
        let Some(addr) = endpoint else {
            return Some(passed);
        };
        let (group, version) = (str_at(obj, "/spec/group"), str_at(obj, "/spec/version"));
        let url = crate::aggregator::discovery_url(addr, group, version);
        match self.discovery_check(api_service, &url) {
            Some(Ok(())) => Some(passed),
            Some(Err(message)) => unavailable("FailedDiscoveryCheck", message.clone()),
            None => {
                self.aggregator.wake.notify_one();
                None
            }
        }
    }

    /// A Deployment in `ns` whose ready pods the selector picks.
    fn has_ready_backend(&self, ns: &str, selector: &serde_json::Map<String, Value>) -> bool {
        let deployments = key("apps", "deployments");
        self.store.refs(&deployments).into_iter().any(|r| {
            r.namespace == ns
                && self.store.get(&deployments, ns, &r.name).is_some_and(|d| {
                    !is_deleting(d)
                        && labels_match(selector, d.pointer("/spec/template/metadata/labels"))
                        && d.pointer("/status/readyReplicas")
                            .and_then(Value::as_i64)
                            .is_some_and(|n| n > 0)
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_with_the_status() {
        let first = Availability {
            status: "False",
            reason: "ServiceNotFound",
            message: "gone".into(),
        };
        let mut status = with_condition(None, &first);
        status["conditions"][0]["lastTransitionTime"] = json!("t0");
        let again = Availability {
            status: "False",
            reason: "MissingEndpoints",
            message: "none".into(),
        };
        let next = with_condition(Some(&status), &again);
        assert_eq!(next["conditions"][0]["lastTransitionTime"], "t0");
        assert_eq!(next["conditions"][0]["reason"], "MissingEndpoints");
        let up = Availability {
            status: "True",
            reason: "Passed",
            message: "all checks passed".into(),
        };
        let up = with_condition(Some(&next), &up);
        assert_ne!(up["conditions"][0]["lastTransitionTime"], "t0");
    }
}
