//! The admin HTTP server: `/livez`, `/readyz` and `/metrics`.
//!
//! It starts before anything talks to the cluster, so that probes answer from the first second
//! and a standby replica (not holding the leader lease) answers too.
//!
//! - `/livez`: 200 while the process runs. It deliberately checks nothing else: an unreachable
//!   API server must not make the kubelet restart every replica.
//! - `/readyz`: 200 when the replica is useful: leading (or running without leader election)
//!   with every watch synced, or a standby that has read the leader Lease and can take over.
//!   503 while starting, while a new leader's watches sync, and from the moment shutdown
//!   begins. The body says which, and on a second line whether this replica serves the
//!   package API ([`PackageApiReadiness`]): that line never changes the status code (a standby
//!   is ready but serves nothing; the package API's Service follows the serving label).
//! - `/metrics`: [`Metrics::encode`], OpenMetrics text.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

use crate::metrics::Metrics;
use crate::package_server::PackageServer;

/// The content type of `/metrics`.
pub const METRICS_CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Where the replica is in its life, as `/readyz` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Connecting to the API server, reading the leader Lease. Not ready.
    Starting = 0,
    /// Reconciling starts once every watch has listed. Not ready.
    Syncing = 1,
    /// Every watch synced; reconciling. Ready.
    Reconciling = 2,
    /// Another replica holds the lease; this one is ready to take over. Ready.
    Standby = 3,
    /// Shutting down (SIGTERM). Not ready, and never again.
    ShuttingDown = 4,
}

impl Phase {
    fn from_u8(value: u8) -> Self {
        match value {
            1 => Self::Syncing,
            2 => Self::Reconciling,
            3 => Self::Standby,
            4 => Self::ShuttingDown,
            _ => Self::Starting,
        }
    }

    /// Whether `/readyz` answers 200.
    pub fn is_ready(self) -> bool {
        matches!(self, Self::Reconciling | Self::Standby)
    }

    /// What `/readyz` says.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Starting => "not ready: starting (connecting to the API server)",
            Self::Syncing => "not ready: waiting for every watch to list",
            Self::Reconciling => "ready: reconciling",
            Self::Standby => "ready: standby (another replica holds the leader lease)",
            Self::ShuttingDown => "not ready: shutting down",
        }
    }
}

/// Whether this replica serves the package API, as `/readyz` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PackageApiReadiness {
    /// Not configured (`--disable-package-api`, or outside a pod without
    /// `--package-api-namespace`).
    Disabled,
    /// Catalogs, a trusted serving certificate and the front-proxy configuration are all
    /// loaded: requests get answers.
    Serving,
    /// Requests get 503 (or no handshake); what is missing.
    NotServing(Vec<&'static str>),
}

impl PackageApiReadiness {
    /// The state of `server` (`None`: disabled).
    pub fn of(server: Option<&PackageServer>) -> Self {
        let Some(server) = server else {
            return Self::Disabled;
        };
        let mut missing = Vec::new();
        if !server.is_publishing() {
            missing.push("no catalogs loaded (a standby, or the leader is still loading them)");
        }
        if !server.has_certificate() {
            missing.push("no serving certificate trusted by the APIService yet");
        }
        if !server.has_auth_config() {
            missing.push(
                "no front-proxy authentication configuration \
                 (ConfigMap kube-system/extension-apiserver-authentication) yet",
            );
        }
        if missing.is_empty() {
            Self::Serving
        } else {
            Self::NotServing(missing)
        }
    }

    /// The `/readyz` line.
    pub fn describe(&self) -> String {
        match self {
            Self::Disabled => "package API: disabled".to_owned(),
            Self::Serving => "package API: serving".to_owned(),
            Self::NotServing(missing) => {
                format!("package API: not serving: {}", missing.join("; "))
            }
        }
    }
}

/// The replica's phase, shared by the admin server, the leader elector and the manager.
pub struct Health {
    phase: AtomicU8,
    package_api: OnceLock<Arc<PackageServer>>,
}

impl std::fmt::Debug for Health {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Health")
            .field("phase", &self.phase())
            .field("package_api", &self.package_api())
            .finish()
    }
}

impl Default for Health {
    fn default() -> Self {
        Self {
            phase: AtomicU8::new(Phase::Starting as u8),
            package_api: OnceLock::new(),
        }
    }
}

impl Health {
    /// The current phase.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// Moves to `phase`, unless shutdown has begun (which is final).
    pub fn set(&self, phase: Phase) {
        let _ = self
            .phase
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |current| {
                (current != Phase::ShuttingDown as u8).then_some(phase as u8)
            });
    }

    /// Reports `server`'s state on `/readyz` from now on (set once; without it the package
    /// API is reported disabled).
    pub fn watch_package_api(&self, server: Arc<PackageServer>) {
        let _ = self.package_api.set(server);
    }

    /// Whether this replica serves the package API.
    pub fn package_api(&self) -> PackageApiReadiness {
        PackageApiReadiness::of(self.package_api.get().map(Arc::as_ref))
    }

    /// Marks the start of shutdown: `/readyz` answers 503 from now on.
    pub fn shutting_down(&self) {
        self.phase
            .store(Phase::ShuttingDown as u8, Ordering::Release);
    }
}

/// Why the admin server could not start.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("cannot listen on the admin address {address}")]
    Bind {
        address: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running admin server; stops when dropped.
#[derive(Debug)]
pub struct AdminServer {
    local_addr: SocketAddr,
    task: JoinHandle<()>,
}

impl AdminServer {
    /// Binds `address` and serves until dropped.
    pub async fn start(
        address: SocketAddr,
        health: Arc<Health>,
        metrics: Arc<Metrics>,
    ) -> Result<Self, AdminError> {
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| AdminError::Bind { address, source })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| AdminError::Bind { address, source })?;
        let app = router(health, metrics);
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, app).await {
                tracing::error!(%error, "admin server stopped");
            }
        });
        tracing::info!(address = %local_addr, "admin server listening (/livez, /readyz, /metrics)");
        Ok(Self { local_addr, task })
    }

    /// The address it listens on (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }
}

impl Drop for AdminServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[derive(Clone)]
struct AdminState {
    health: Arc<Health>,
    metrics: Arc<Metrics>,
}

/// The routes, for embedding or testing without a socket.
pub fn router(health: Arc<Health>, metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics_text))
        .with_state(AdminState { health, metrics })
}

async fn livez() -> &'static str {
    "ok\n"
}

async fn readyz(State(state): State<AdminState>) -> Response {
    let phase = state.health.phase();
    let status = if phase.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let package_api = state.health.package_api().describe();
    (status, format!("{}\n{package_api}\n", phase.describe())).into_response()
}

async fn metrics_text(State(state): State<AdminState>) -> Response {
    (
        [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)],
        state.metrics.encode(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use futures::future::BoxFuture;
    use k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec;

    use super::*;
    use crate::package_server::reviews::{AccessDecision, ReviewError, Reviewer, UserInfo};
    use crate::package_server::storage::{Catalogs, Served};

    #[test]
    fn shutdown_is_final() {
        let health = Health::default();
        assert_eq!(health.phase(), Phase::Starting);
        assert!(!health.phase().is_ready());
        health.set(Phase::Standby);
        assert!(health.phase().is_ready());
        health.set(Phase::Syncing);
        assert!(!health.phase().is_ready());
        health.set(Phase::Reconciling);
        assert!(health.phase().is_ready());
        health.shutting_down();
        health.set(Phase::Reconciling);
        assert_eq!(health.phase(), Phase::ShuttingDown);
        assert!(!health.phase().is_ready());
    }

    #[tokio::test]
    async fn serves_probes_and_metrics_over_http() {
        let health = Arc::new(Health::default());
        let metrics = Arc::new(Metrics::new());
        let server = AdminServer::start(
            "127.0.0.1:0".parse().unwrap_or_else(|_| unreachable!()),
            health.clone(),
            metrics,
        )
        .await
        .expect("bind");
        let addr = server.local_addr();
        let get = |path: &'static str| async move { http_get(addr, path).await };

        assert_eq!(get("/livez").await.0, 200);
        let (status, body) = get("/readyz").await;
        assert_eq!(status, 503);
        assert!(body.contains("starting"), "{body}");
        health.set(Phase::Reconciling);
        assert_eq!(get("/readyz").await.0, 200);
        let (status, body) = get("/metrics").await;
        assert_eq!(status, 200);
        assert!(body.contains("# TYPE opcat_leader gauge"), "{body}");
        assert_eq!(get("/nope").await.0, 404);
    }

    struct NoReviews;

    impl Reviewer for NoReviews {
        fn token_review(&self, _: &str) -> BoxFuture<'_, Result<Option<UserInfo>, ReviewError>> {
            Box::pin(async { Ok(None) })
        }
        fn access_review(
            &self,
            _: SubjectAccessReviewSpec,
        ) -> BoxFuture<'_, Result<AccessDecision, ReviewError>> {
            let denied = AccessDecision {
                allowed: false,
                reason: String::new(),
            };
            Box::pin(async { Ok(denied) })
        }
    }

    struct NoCatalogs;

    impl Catalogs for NoCatalogs {
        fn in_namespace(&self, _: &str) -> Vec<Served> {
            Vec::new()
        }
        fn all(&self) -> Vec<Served> {
            Vec::new()
        }
        fn global_namespace(&self) -> &str {
            "olm"
        }
    }

    #[test]
    fn readiness_names_what_the_package_api_lacks() {
        let health = Health::default();
        assert_eq!(health.package_api().describe(), "package API: disabled");
        let server = PackageServer::new(Arc::new(NoReviews));
        health.watch_package_api(server.clone());
        let line = health.package_api().describe();
        assert!(
            line.starts_with("package API: not serving: no catalogs"),
            "{line}"
        );
        assert!(line.contains("no serving certificate"), "{line}");
        assert!(
            line.contains("extension-apiserver-authentication"),
            "{line}"
        );
        server.publish(Arc::new(NoCatalogs));
        let line = health.package_api().describe();
        assert!(!line.contains("no catalogs"), "{line}");
        assert!(line.contains("no serving certificate"), "{line}");
    }

    /// A minimal HTTP/1.1 GET (the library has no HTTP client of its own to spare).
    async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let request = format!("GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).await.expect("read");
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        let body = response
            .split_once("\r\n\r\n")
            .map(|(_, body)| body.to_owned())
            .unwrap_or_default();
        (status, body)
    }
}
