//! The public handle: getting clients, test controls and direct (uncounted) access to stored
//! objects. [`crate::Builder`] builds it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::builder::Builder;
use crate::cluster::{Cluster, DeploymentMode, Target, WriteParams, present};
use crate::control::{CollectionRead, Control, Fault, LoggedRequest, RequestCounts};
use crate::resources::ResourceKey;
use crate::service::FakeService;

/// Errors of the test-facing API (seeding objects, serving HTTP).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The object's group/version/resource is not served (a CRD not created yet?).
    #[error("{group}/{version} {plural} is not served by the fake API server")]
    NotServed {
        /// API group.
        group: String,
        /// API version.
        version: String,
        /// Plural resource name.
        plural: String,
    },
    /// The server refused the object, as it would refuse a client.
    #[error("{code} {reason}: {message}")]
    Rejected {
        /// HTTP status code.
        code: u16,
        /// `Status.reason`.
        reason: String,
        /// `Status.message`.
        message: String,
    },
    /// The object could not be converted to or from JSON.
    #[error("converting {kind} to or from JSON")]
    Json {
        /// The Rust type's kind.
        kind: String,
        #[source]
        source: serde_json::Error,
    },
    /// Binding or serving the HTTP listener failed.
    #[error("serving HTTP on 127.0.0.1")]
    Http(#[source] std::io::Error),
    /// Writing the kubeconfig file failed.
    #[error("writing kubeconfig {path}")]
    Kubeconfig {
        /// Where it was written.
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// State shared by the handle, the services and watch streams.
pub(crate) struct Shared {
    pub(crate) cluster: Mutex<Cluster>,
    pub(crate) control: Mutex<Control>,
    pub(crate) bookmark_interval: Duration,
    /// Watch lag by resource plural ([`FakeApiServer::set_watch_lag`]).
    pub(crate) watch_lags: std::sync::RwLock<std::collections::HashMap<String, Duration>>,
    /// Bearer tokens and who they authenticate.
    pub(crate) tokens: crate::auth::tokens::Tokens,
    /// Front-proxy PKI and probe settings of the aggregation layer.
    pub(crate) aggregation: crate::aggregator::Layer,
}

impl Shared {
    pub(crate) fn cluster(&self) -> MutexGuard<'_, Cluster> {
        self.cluster
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn control(&self) -> MutexGuard<'_, Control> {
        self.control
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub(crate) fn seed_into(cluster: &mut Cluster, obj: Value) -> Result<Value, Error> {
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let info = cluster
        .registry
        .all()
        .find(|r| r.group == group && r.kind == kind && r.serves(version))
        .cloned()
        .ok_or_else(|| Error::NotServed {
            group: group.to_string(),
            version: version.to_string(),
            plural: kind.to_lowercase(),
        })?;
    let namespace = obj
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let t = Target {
        version: version.to_string(),
        info,
        namespace,
        name: String::new(),
        subresource: None,
    };
    let p = WriteParams {
        field_manager: Some("fake-apiserver-seed".into()),
        ..WriteParams::default()
    };
    let body = serde_json::to_vec(&obj).map_err(|source| Error::Json {
        kind: kind.to_string(),
        source,
    })?;
    cluster
        .create(&t, &p, &body)
        .map(|r| r.body)
        .map_err(|e| Error::Rejected {
            code: e.code,
            reason: e.reason.to_string(),
            message: e.message,
        })
}

/// An in-memory Kubernetes API server for tests.
///
/// Cloning is cheap; every clone is the same server.
#[derive(Clone)]
pub struct FakeApiServer {
    pub(crate) shared: Arc<Shared>,
}

impl Default for FakeApiServer {
    fn default() -> Self {
        Self::new()
    }
}

fn key_of<K: Resource<DynamicType = ()>>() -> (ResourceKey, String) {
    (
        ResourceKey {
            group: K::group(&()).into_owned(),
            plural: K::plural(&()).into_owned(),
        },
        K::version(&()).into_owned(),
    )
}

impl FakeApiServer {
    /// A server with every emulated controller on and the default namespaces.
    pub fn new() -> Self {
        Builder::default().build()
    }

    /// Options.
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A `kube::Client` talking to this server in-process (default namespace `default`).
    /// Must be called inside a Tokio runtime.
    pub fn client(&self) -> kube::Client {
        kube::Client::new(
            FakeService {
                shared: self.shared.clone(),
                agent: None,
                authorization: None,
            },
            "default",
        )
    }

    /// Like [`client`](Self::client), with every request also counted under `agent` in
    /// [`request_counts_of`](Self::request_counts_of): tells the requests of the code under test
    /// from the test's own (for example, to check them against an RBAC role).
    ///
    /// # Panics
    ///
    /// When `agent` is not a valid HTTP header value.
    pub fn client_as(&self, agent: &str) -> kube::Client {
        let agent = http::HeaderValue::from_str(agent)
            .unwrap_or_else(|_| panic!("agent {agent:?} is not a valid header value"));
        kube::Client::new(
            FakeService {
                shared: self.shared.clone(),
                agent: Some(agent),
                authorization: None,
            },
            "default",
        )
    }

    /// Requests made through [`client_as`](Self::client_as)`(agent)` since the start;
    /// [`reset_counts`](Self::reset_counts) does not clear them.
    pub fn request_counts_of(&self, agent: &str) -> RequestCounts {
        self.shared
            .control()
            .by_agent
            .get(agent)
            .cloned()
            .unwrap_or_default()
    }

    /// The distinct list and watch requests made through
    /// [`client_as`](Self::client_as)`(agent)` since the start, with their selectors: shows
    /// whether a client watches a collection wholesale or narrowly.
    pub fn collection_reads_of(&self, agent: &str) -> Vec<CollectionRead> {
        self.shared
            .control()
            .reads_by_agent
            .get(agent)
            .map(|reads| reads.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Starts keeping, in arrival order, every request made through
    /// [`client_as`](Self::client_as)`(agent)` (see [`request_log_of`](Self::request_log_of));
    /// unlike [`request_log`](Self::request_log), it is not emptied by
    /// [`reset_counts`](Self::reset_counts). Asking again starts it afresh.
    pub fn keep_log_of(&self, agent: &str) {
        self.shared
            .control()
            .log_by_agent
            .insert(agent.to_owned(), Vec::new());
    }

    /// The requests of `agent` since [`keep_log_of`](Self::keep_log_of)`(agent)`, in arrival
    /// order (empty when it was not asked for).
    pub fn request_log_of(&self, agent: &str) -> Vec<LoggedRequest> {
        self.shared
            .control()
            .log_by_agent
            .get(agent)
            .cloned()
            .unwrap_or_default()
    }

    /// Fails the next matching requests (see [`Fault`]).
    pub fn inject_failure(&self, fault: Fault) {
        self.shared.control().faults.push(fault);
    }

    /// Drops every pending injected failure.
    pub fn clear_failures(&self) {
        self.shared.control().faults.clear();
    }

    /// Delivers every later watch event of `resource` (a plural: `secrets`) `lag` after it
    /// happened, like a busy API server or a slow watch connection: a client's cache then
    /// lags its own writes. `Duration::ZERO` delivers at once again.
    pub fn set_watch_lag(&self, resource: &str, lag: Duration) {
        let mut lags = self
            .shared
            .watch_lags
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if lag.is_zero() {
            lags.remove(resource);
        } else {
            lags.insert(resource.to_owned(), lag);
        }
    }

    /// Delays every request by `latency` before it is served.
    pub fn set_latency(&self, latency: Duration) {
        self.shared.control().latency = latency;
    }

    /// Requests counted since the start or the last [`reset_counts`](Self::reset_counts).
    pub fn request_counts(&self) -> RequestCounts {
        self.shared.control().counts.clone()
    }

    /// Zeroes the request counters and empties the request log.
    pub fn reset_counts(&self) {
        let mut control = self.shared.control();
        control.counts = RequestCounts::default();
        control.log = Vec::new();
    }

    /// Every request since the start or the last [`reset_counts`](Self::reset_counts), in
    /// arrival order, with the namespace and name it addressed and the client it came from
    /// (requests an injected failure refused included). Watches are logged when they start.
    pub fn request_log(&self) -> Vec<LoggedRequest> {
        self.shared.control().log.clone()
    }

    /// Like [`request_log`](Self::request_log), and empties the log (the counters stay):
    /// a long run can read the log in pieces without holding all of it twice.
    pub fn take_request_log(&self) -> Vec<LoggedRequest> {
        std::mem::take(&mut self.shared.control().log)
    }

    /// The current cluster-wide `resourceVersion`.
    pub fn resource_version(&self) -> u64 {
        self.shared.cluster().store.current_rv()
    }

    /// Reads a stored object without going through the API (not counted).
    pub fn get<K>(&self, namespace: &str, name: &str) -> Option<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let (key, version) = key_of::<K>();
        self.raw(&key.group, &version, &key.plural, namespace, name)
            .and_then(|v| serde_json::from_value(v).ok())
    }

    /// Every stored object of `K`, optionally in one namespace (not counted).
    pub fn list<K>(&self, namespace: Option<&str>) -> Vec<K>
    where
        K: Resource<DynamicType = ()> + DeserializeOwned,
    {
        let (key, version) = key_of::<K>();
        let cluster = self.shared.cluster();
        let Some(info) = cluster.registry.get(&key).cloned() else {
            return Vec::new();
        };
        cluster
            .store
            .iter(&key, None)
            .filter(|o| {
                namespace.is_none_or(|ns| {
                    o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
                })
            })
            .filter_map(|o| serde_json::from_value(present(&info, &version, o)).ok())
            .collect()
    }

    /// Reads a stored object in place, as stored (no `apiVersion`/`kind`), by group and plural
    /// (not counted): `read` sees it under the server's lock, so a caller that only needs a few
    /// fields copies nothing. The scale benchmark polls every namespace this way; copying whole
    /// objects under the lock (`raw`) slowed the server it measured as N grew.
    pub fn inspect<R>(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        read: impl FnOnce(&Value) -> R,
    ) -> Option<R> {
        let key = ResourceKey {
            group: group.to_string(),
            plural: plural.to_string(),
        };
        let cluster = self.shared.cluster();
        cluster.store.get(&key, namespace, name).map(|o| read(o))
    }

    /// Reads a stored object as JSON by group, version and plural (not counted).
    pub fn raw(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let key = ResourceKey {
            group: group.to_string(),
            plural: plural.to_string(),
        };
        let cluster = self.shared.cluster();
        let info = cluster.registry.get(&key)?.clone();
        cluster
            .store
            .get(&key, namespace, name)
            .map(|o| present(&info, version, o))
    }

    /// Creates an object as a client would, without counting the request; returns it as
    /// stored. Namespace admission, defaulting and validation apply.
    pub fn seed<K>(&self, obj: &K) -> Result<K, Error>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned,
    {
        let json_err = |source| Error::Json {
            kind: K::kind(&()).into_owned(),
            source,
        };
        let mut value = serde_json::to_value(obj).map_err(json_err)?;
        value["apiVersion"] = K::api_version(&()).into_owned().into();
        value["kind"] = K::kind(&()).into_owned().into();
        let stored = seed_into(&mut self.shared.cluster(), value)?;
        serde_json::from_value(stored).map_err(json_err)
    }

    /// Lets a held Deployment become available ([`DeploymentMode::HeldUntilReleased`]).
    pub fn release_deployment(&self, namespace: &str, name: &str) {
        let mut cluster = self.shared.cluster();
        cluster
            .released
            .insert((namespace.to_string(), name.to_string()));
        cluster.resync_deployments();
    }

    /// Switches the Deployment controller's mode and re-evaluates every Deployment.
    pub fn set_deployment_mode(&self, mode: DeploymentMode) {
        let mut cluster = self.shared.cluster();
        cluster.controllers.deployments = mode;
        cluster.released.clear();
        cluster.resync_deployments();
    }

    /// Changes how many watch events are kept per resource (see [`Builder::watch_history`]).
    pub fn set_watch_history(&self, events: usize) {
        self.shared.cluster().store.set_history_limit(events);
    }

    /// Open watches on `K` (to wait until a controller has started watching).
    pub fn watcher_count<K: Resource<DynamicType = ()>>(&self) -> usize {
        let (key, _) = key_of::<K>();
        self.shared.cluster().store.watcher_count(&key)
    }
}
