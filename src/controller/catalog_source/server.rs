//! The steps of a `spec.address` CatalogSource (gRPC and events; no status writes): when to talk
//! to its registry server, the health check, the full read into the same validated catalog an
//! image gives, and the tracked state.
//!
//! As OLM (`pkg/controller/registry/grpc/source.go`, `pkg/controller/operators/catalog/
//! operator.go` `syncConnection`): the connection state is `READY` after a successful read and
//! `TRANSIENT_FAILURE` while the server cannot be reached or fails, and `lastConnect` moves when
//! that state changes. OLM watches its connection; opcat checks the server's health every
//! [`Settings::catalog_server_check`](crate::controller::context::Settings) and re-reads the
//! whole catalog on the poll interval, when the address changes and when the server comes back.
//! A server that is down is an expected wait (DESIGN invariant 7): the failure is shown in
//! status and tried again after the same fixed interval, never in a hot loop; the catalog read
//! earlier stays served meanwhile, so installed operators and their Subscriptions keep working.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::runtime::events::EventType;

use super::contact::EVENT_CATALOG_LOAD_FAILED;
use super::load::summary;
use super::poll::{self, Decision, Look, Why, later};
use super::reconcile::Reconciler;
use super::tracked::{Failure, Tracked};
use crate::api::CatalogSource;
use crate::api::catalog_source_status::{
    READY_REASON_CATALOG_INVALID, READY_REASON_SERVER_FAILED, READY_REASON_SERVER_UNREACHABLE,
};
use crate::controller::catalogs::{CatalogKey, LoadedCatalog};
use crate::fbc::Catalog;
use crate::registry_grpc::client::content_digest;
use crate::registry_grpc::{CatalogServer, ClientError};

/// The CatalogSource being reconciled and its address.
pub struct ServerTarget<'a> {
    pub catalog_source: &'a CatalogSource,
    pub key: &'a CatalogKey,
    /// `spec.address` as written (trimmed).
    pub address: &'a str,
    pub now: Timestamp,
}

/// What to do with the server this reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerDecision {
    /// Read the whole catalog (health check first).
    Read(Why),
    /// Only check the server's health.
    Check,
    /// Nothing until `until`.
    Wait { until: Option<Timestamp> },
}

/// Decides what to do (pure): the poll decision of images (first read, address change, retry
/// after a failure, poll due), else a health check every `check_every`.
pub fn decide(
    tracked: Option<&Tracked>,
    address: &str,
    every: Option<Duration>,
    check_every: Duration,
    now: Timestamp,
) -> ServerDecision {
    let until = match poll::decide(tracked, address, &Vec::new(), every, now) {
        Decision::Contact(why) => return ServerDecision::Read(why),
        Decision::Wait { until } => until,
    };
    let Some(tracked) = tracked.filter(|tracked| tracked.failure.is_none()) else {
        // Failing: the retry reads the whole catalog again.
        return ServerDecision::Wait { until };
    };
    let check = later(
        tracked.last_check.unwrap_or(tracked.last_connect),
        check_every,
    );
    if check <= now {
        return ServerDecision::Check;
    }
    ServerDecision::Wait {
        until: Some(until.map_or(check, |until| until.min(check))),
    }
}

impl From<ServerDecision> for Look {
    fn from(decision: ServerDecision) -> Self {
        match decision {
            ServerDecision::Wait { until: Some(until) } => Look::At(until),
            ServerDecision::Wait { until: None } => Look::Resync,
            ServerDecision::Read(_) | ServerDecision::Check => Look::Soon,
        }
    }
}

/// Why the catalog of a server could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Talking to the server failed (the client names address and call).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// What it sent breaks `opm validate` rules.
    #[error("the catalog served at {address} is not a valid file-based catalog: {summary}")]
    Invalid { address: String, summary: String },
    /// Indexing what it sent crashed.
    #[error("reading the catalog served at {address} failed: {detail}")]
    Task { address: String, detail: String },
}

impl ReadError {
    fn kind(&self) -> &'static str {
        match self {
            ReadError::Client(error) => error.kind(),
            ReadError::Invalid { .. } => "invalid_catalog",
            ReadError::Task { .. } => "internal",
        }
    }

    fn ready_reason(&self) -> &'static str {
        match self {
            ReadError::Client(ClientError::Unreachable { .. } | ClientError::NotServing { .. }) => {
                READY_REASON_SERVER_UNREACHABLE
            }
            ReadError::Client(ClientError::Content { .. }) | ReadError::Invalid { .. } => {
                READY_REASON_CATALOG_INVALID
            }
            ReadError::Client(_) | ReadError::Task { .. } => READY_REASON_SERVER_FAILED,
        }
    }
}

/// The connection to each address catalog's server, reused across reconciles.
#[derive(Debug, Default)]
pub struct ServerConnections {
    servers: Mutex<HashMap<CatalogKey, CatalogServer>>,
}

impl ServerConnections {
    /// The client of `address` for `key` (a new one when the address changed).
    fn get(&self, key: &CatalogKey, address: &str) -> Result<CatalogServer, ClientError> {
        let Ok(mut servers) = self.servers.lock() else {
            return CatalogServer::new(address);
        };
        if let Some(server) = servers
            .get(key)
            .filter(|server| server.address() == address)
        {
            return Ok(server.clone());
        }
        let server = CatalogServer::new(address)?;
        servers.insert(key.clone(), server.clone());
        Ok(server)
    }

    /// Forgets the connection of `key`.
    pub fn remove(&self, key: &CatalogKey) {
        if let Ok(mut servers) = self.servers.lock() {
            servers.remove(key);
        }
    }
}

impl Reconciler {
    /// The server steps of a reconcile: decide, then check or read. Returns the tracked state and
    /// when to look again.
    pub(super) async fn server_step(
        &self,
        target: &ServerTarget<'_>,
        every: Option<Duration>,
    ) -> (Option<Tracked>, Look) {
        let check_every = self.context.settings.catalog_server_check;
        let mut tracked = self.tracked.get(target.key);
        let decision = decide(
            tracked.as_ref(),
            target.address,
            every,
            check_every,
            target.now,
        );
        tracked = match (decision, tracked) {
            (ServerDecision::Read(why), previous) => {
                Some(self.read_server(target, previous.as_ref(), why).await)
            }
            (ServerDecision::Check, Some(previous)) => {
                Some(self.check_server(target, &previous).await)
            }
            (_, tracked) => tracked,
        };
        let next = decide(
            tracked.as_ref(),
            target.address,
            every,
            check_every,
            target.now,
        );
        (tracked, next.into())
    }

    /// Health check only: the catalog stays as read.
    async fn check_server(&self, target: &ServerTarget<'_>, previous: &Tracked) -> Tracked {
        let outcome = match self.servers.get(target.key, target.address) {
            Ok(server) => server.check().await.map_err(ReadError::from),
            Err(error) => Err(error.into()),
        };
        match outcome {
            Ok(()) => {
                let tracked = Tracked {
                    last_check: Some(target.now),
                    ..previous.clone()
                };
                self.tracked.insert(target.key.clone(), tracked.clone());
                tracked
            }
            Err(error) => self.failed(target, Some(previous), error).await,
        }
    }

    /// Health check, then the whole catalog; never fails (a failure is the tracked state).
    async fn read_server(
        &self,
        target: &ServerTarget<'_>,
        previous: Option<&Tracked>,
        why: Why,
    ) -> Tracked {
        let (namespace, name) = (&target.key.0, &target.key.1);
        tracing::debug!(%namespace, %name, address = %target.address, why = why.as_str(), "reading registry server");
        let loaded = match self.read_catalog(target).await {
            Ok(loaded) => loaded,
            Err(error) => return self.failed(target, previous, error).await,
        };
        let served = self.context.catalogs.get(namespace, name);
        let unchanged = served
            .as_ref()
            .is_some_and(|served| served.image == loaded.image && served.digest == loaded.digest);
        if !unchanged {
            self.serve_loaded(
                target.catalog_source,
                target.key,
                served.as_deref(),
                loaded,
                "the catalog of registry server",
            )
            .await;
        }
        let healthy_before =
            previous.is_some_and(|p| p.failure.is_none() && p.source == target.address);
        let tracked = Tracked {
            uid: target.catalog_source.metadata.uid.clone(),
            source: target.address.to_owned(),
            secrets: Vec::new(),
            last_connect: match previous {
                Some(previous) if healthy_before => previous.last_connect,
                _ => target.now,
            },
            last_poll: Some(target.now),
            last_check: Some(target.now),
            failure: None,
        };
        self.tracked.insert(target.key.clone(), tracked.clone());
        tracked
    }

    /// Reads, converts and validates the server's catalog.
    async fn read_catalog(&self, target: &ServerTarget<'_>) -> Result<LoadedCatalog, ReadError> {
        let server = self.servers.get(target.key, target.address)?;
        server.check().await?;
        let served = server.read().await?;
        let address = target.address.to_owned();
        let now = target.now;
        let task = tokio::task::spawn_blocking(move || {
            let digest = content_digest(&served.config);
            match Catalog::new(served.config) {
                Ok(catalog) => Ok(LoadedCatalog {
                    digest,
                    image: address,
                    catalog,
                    loaded_at: now,
                }),
                Err(invalid) => Err(ReadError::Invalid {
                    address,
                    summary: summary(invalid.leaves()),
                }),
            }
        });
        task.await.map_err(|error| ReadError::Task {
            address: target.address.to_owned(),
            detail: error.to_string(),
        })?
    }

    /// Records a failed check or read: the state becomes `TRANSIENT_FAILURE` and the server is
    /// tried again after the fixed check interval.
    async fn failed(
        &self,
        target: &ServerTarget<'_>,
        previous: Option<&Tracked>,
        error: ReadError,
    ) -> Tracked {
        let (namespace, name) = (&target.key.0, &target.key.1);
        if let Some(served) = self.context.catalogs.get(namespace, name)
            && served.image != target.address
        {
            // Never serve the catalog of a source the spec no longer names.
            self.context.catalogs.remove(namespace, name);
        }
        let retry_in = self.context.settings.catalog_server_check;
        let failure = Failure {
            ready_reason: error.ready_reason(),
            kind: error.kind(),
            message: error.to_string(),
            retry_at: later(target.now, retry_in),
        };
        tracing::warn!(
            %namespace,
            %name,
            address = %target.address,
            error_kind = failure.kind,
            retry_in_ms = u64::try_from(retry_in.as_millis()).unwrap_or(u64::MAX),
            error = %failure.message,
            "registry server read failed"
        );
        let same_source = previous.filter(|previous| previous.source == target.address);
        let repeated = same_source
            .and_then(|previous| previous.failure.as_ref())
            .is_some_and(|previous| previous.message == failure.message);
        if !repeated {
            self.catalog_event(
                target.catalog_source,
                EventType::Warning,
                EVENT_CATALOG_LOAD_FAILED,
                failure.message.clone(),
            )
            .await;
        }
        let tracked = Tracked {
            uid: target.catalog_source.metadata.uid.clone(),
            source: target.address.to_owned(),
            secrets: Vec::new(),
            // The state changes (and `lastConnect` with it) only when it was not failing already.
            last_connect: match same_source {
                Some(previous) if previous.failure.is_some() => previous.last_connect,
                _ => target.now,
            },
            last_poll: same_source.and_then(|previous| previous.last_poll),
            last_check: same_source.and_then(|previous| previous.last_check),
            failure: Some(failure),
        };
        self.tracked.insert(target.key.clone(), tracked.clone());
        tracked
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
