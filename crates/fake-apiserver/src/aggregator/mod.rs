//! The aggregation layer: kube-aggregator inside kube-apiserver, serving the APIServices
//! whose `spec.service` names a Service by proxying to it.
//!
//! * **Routing** ([`proxy`], `staging/src/k8s.io/kube-aggregator/pkg/apiserver/handler_proxy.go`):
//!   `/apis/<group>/<version>` and everything under it goes to the APIService
//!   `<version>.<group>` when it has a `service`. The caller is authenticated and authorized
//!   first, like every request; then, unless the APIService is `Available`, the answer is
//!   503 `service unavailable`. The backend is the endpoint given with
//!   [`FakeApiServer::set_service_endpoint`] (standing in for kube-proxy and EndpointSlices).
//! * **Transport** ([`client`]): TLS verifying `spec.caBundle` for `<service>.<namespace>.svc`,
//!   the front-proxy client certificate ([`pki`]), `X-Remote-User`, `X-Remote-Group`,
//!   `X-Remote-Extra-*` (`client-go/transport` `SetAuthProxyHeaders`), the caller's
//!   `Authorization` removed; a connection or TLS failure is 503 `error trying to reach
//!   service: ...`.
//! * **Availability** ([`probe`], `pkg/controllers/status/remote/remote_available_controller.go`):
//!   for a Service with an endpoint, the check is a real `GET /apis/<group>/<version>` on the
//!   backend (TLS not verified, front-proxy certificate, as `system:kube-aggregator` in
//!   `system:masters`): 2xx is `Available=True` (`Passed`), anything else
//!   `Available=False` (`FailedDiscoveryCheck`). It runs when an endpoint is set, when an
//!   APIService or its Service changes, and every [`crate::Builder::apiservice_probe_interval`].
//!   Without an endpoint the emulated checks of `controllers::apiservice` apply.
//! * **Discovery** ([`discovery`]): `/apis` and `/apis/<group>` list the APIServices' groups
//!   and versions (`handler_apis.go`); aggregated discovery (`apidiscovery.k8s.io/v2`) adds
//!   each available backend's resources from its `/apis/<group>/<version>`, `Stale` when it
//!   cannot be read.
//! * **OpenAPI** ([`openapi`]): `/openapi/v2` merges the backends' documents; `/openapi/v3`
//!   lists each backend's `apis/<group>/<version>` document, served from the backend.
//!
//! What differs: the documents of local resources are not served (only aggregated APIs
//! appear under `/openapi`); backend documents are fetched on each request instead of cached;
//! the 503 bodies are `Status` objects (kube-aggregator writes the same message as plain text,
//! which client-go turns into a `ServiceUnavailable` status); no `X-Forwarded-*` headers; one
//! probe attempt per round instead of five in parallel.

pub(crate) mod client;
pub(crate) mod discovery;
pub(crate) mod openapi;
mod pki;
pub(crate) mod probe;
pub(crate) mod proxy;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use base64::Engine as _;
use serde_json::Value;
use tokio::sync::Notify;

pub use pki::FrontProxy;
pub(crate) use pki::Pki;

use crate::cluster::{Cluster, is_deleting, str_at};
use crate::resources::ResourceKey;
use crate::server::{FakeApiServer, Shared};

/// Endpoints and discovery checks, kept with the cluster (the availability controller reads
/// them under the same lock).
#[derive(Debug, Default)]
pub(crate) struct State {
    /// Service `(namespace, name)` → where its pods listen.
    endpoints: HashMap<(String, String), SocketAddr>,
    /// APIService name → the URL last probed and the outcome.
    checks: HashMap<String, (String, Result<(), String>)>,
    /// Wakes the prober ([`probe::ensure_running`]).
    pub(crate) wake: Arc<Notify>,
    /// How many APIServices have a `service` (shared with [`Layer::remote`]).
    pub(crate) remote: Arc<AtomicUsize>,
}

/// Server-wide settings of the aggregation layer.
pub(crate) struct Layer {
    pub(crate) pki: Pki,
    pub(crate) probe_interval: Duration,
    pub(crate) prober_started: AtomicBool,
    /// Read without the cluster lock: while no APIService has a `service`, requests skip the
    /// aggregator's routing entirely (the admin's requests in the scale bench).
    pub(crate) remote: Arc<AtomicUsize>,
}

/// A remote APIService and how to reach its backend.
#[derive(Clone, Debug)]
pub(crate) struct Backend {
    pub(crate) name: String,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) available: bool,
    /// `None` while no endpoint is known for its Service.
    pub(crate) target: Option<client::Target>,
}

pub(crate) fn api_services() -> ResourceKey {
    ResourceKey {
        group: "apiregistration.k8s.io".into(),
        plural: "apiservices".into(),
    }
}

/// The URL the availability check of `group/version` at `addr` requests.
pub(crate) fn discovery_url(addr: SocketAddr, group: &str, version: &str) -> String {
    format!("https://{addr}/apis/{group}/{version}")
}

impl Cluster {
    /// The backend of a stored APIService; `None` for local ones.
    pub(crate) fn backend_of(&self, obj: &Value) -> Option<Backend> {
        let service = obj.pointer("/spec/service").filter(|s| !s.is_null())?;
        let (ns, name) = (str_at(service, "/namespace"), str_at(service, "/name"));
        let available = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Available" && c["status"] == "True");
        let ca_bundle = base64::engine::general_purpose::STANDARD
            .decode(str_at(obj, "/spec/caBundle"))
            .unwrap_or_default();
        let target = self.endpoint(ns, name).map(|addr| client::Target {
            addr,
            server_name: format!("{name}.{ns}.svc"),
            ca_bundle,
            insecure: obj
                .pointer("/spec/insecureSkipTLSVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        });
        Some(Backend {
            name: str_at(obj, "/metadata/name").to_string(),
            group: str_at(obj, "/spec/group").to_string(),
            version: str_at(obj, "/spec/version").to_string(),
            available,
            target,
        })
    }

    /// Every remote APIService not being deleted, by name.
    pub(crate) fn remote_backends(&self) -> Vec<Backend> {
        self.store
            .in_namespace(&api_services(), "")
            .filter(|o| !is_deleting(o))
            .filter_map(|o| self.backend_of(o))
            .collect()
    }

    /// Where the Service `namespace/name` is served, if a test said so.
    pub(crate) fn endpoint(&self, namespace: &str, name: &str) -> Option<SocketAddr> {
        self.aggregator
            .endpoints
            .get(&(namespace.to_string(), name.to_string()))
            .copied()
    }

    /// The outcome of the last discovery check of `api_service`, if it probed `url`.
    pub(crate) fn discovery_check(
        &self,
        api_service: &str,
        url: &str,
    ) -> Option<&Result<(), String>> {
        self.aggregator
            .checks
            .get(api_service)
            .filter(|(probed, _)| probed == url)
            .map(|(_, outcome)| outcome)
    }

    /// Records a discovery check and re-evaluates the APIService.
    pub(crate) fn record_check(
        &mut self,
        api_service: &str,
        url: String,
        outcome: Result<(), String>,
    ) {
        self.aggregator
            .checks
            .insert(api_service.to_string(), (url, outcome));
        if !self.controllers.api_services {
            return;
        }
        if let Some(obj) = self.store.get(&api_services(), "", api_service).cloned() {
            self.apiservice_written(api_service, &obj);
        }
        self.run_controllers();
    }

    /// Forgets the discovery check of a removed APIService.
    pub(crate) fn forget_check(&mut self, api_service: &str) {
        self.aggregator.checks.remove(api_service);
    }

    /// Counts the APIServices with a `service` after one was written or removed.
    pub(crate) fn count_remote_api_services(&self) {
        let count = self
            .store
            .in_namespace(&api_services(), "")
            .filter(|o| o.pointer("/spec/service").is_some_and(|s| !s.is_null()))
            .count();
        self.aggregator.remote.store(count, Ordering::Relaxed);
    }
}

/// The remote APIService serving `path` (`/apis/<group>/<version>[/...]`), if any.
pub(crate) fn backend_for(shared: &Shared, path: &str) -> Option<Backend> {
    if shared.aggregation.remote.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mut parts = path.trim_start_matches('/').split('/');
    let (Some("apis"), Some(group), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if group.is_empty() || version.is_empty() {
        return None;
    }
    let cluster = shared.cluster();
    let obj = cluster
        .store
        .get(&api_services(), "", &format!("{version}.{group}"))?;
    cluster.backend_of(obj)
}

impl FakeApiServer {
    /// Makes the Service `namespace/service` reachable at `addr` — what kube-proxy and the
    /// EndpointSlice controller do for a real Service: APIServices backed by it are proxied to
    /// `addr`, and their availability comes from a discovery request to it from now on.
    pub fn set_service_endpoint(&self, namespace: &str, service: &str, addr: SocketAddr) {
        {
            let mut cluster = self.shared.cluster();
            cluster
                .aggregator
                .endpoints
                .insert((namespace.to_string(), service.to_string()), addr);
            cluster.apiservices_of_service(namespace, service);
        }
        probe::ensure_running(&self.shared);
    }

    /// The front-proxy CA, the client certificate and key the fake presents to aggregated
    /// API servers, and the cluster client CA (also published in the ConfigMap
    /// `kube-system/extension-apiserver-authentication`).
    pub fn front_proxy(&self) -> FrontProxy {
        self.shared.aggregation.pki.pems.clone()
    }

    /// Runs the availability check of every APIService whose Service has an endpoint now,
    /// and returns once their status is updated (the periodic checks run on their own).
    pub async fn probe_api_services(&self) {
        probe::probe_all(&self.shared).await;
    }
}
