//! Options of the in-memory API server: which simulated controllers run, the watch cache window,
//! bookmarks, default namespaces, user tokens, the APIService probe interval. Every server
//! starts with kube-apiserver's default RBAC objects and, with the default namespaces, the
//! front-proxy ConfigMap `kube-system/extension-apiserver-authentication`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::cluster::{Cluster, DeploymentMode};
use crate::control::Control;
use crate::controllers::ControllerConfig;
use crate::server::{FakeApiServer, Shared, seed_into};

/// Options for [`FakeApiServer`].
#[derive(Clone, Debug)]
pub struct Builder {
    controllers: ControllerConfig,
    history_limit: usize,
    bookmark_interval: Duration,
    default_namespaces: bool,
    user_tokens: Vec<(String, String, Vec<String>)>,
    probe_interval: Duration,
}

impl Default for Builder {
    fn default() -> Self {
        Self {
            controllers: ControllerConfig::default(),
            history_limit: 10_000,
            bookmark_interval: Duration::from_secs(1),
            default_namespaces: true,
            user_tokens: Vec::new(),
            probe_interval: Duration::from_secs(1),
        }
    }
}

impl Builder {
    /// Namespace lifecycle: admission (404 in a missing namespace, 403 in a terminating
    /// one), `kubernetes` finalizer and content deletion. On by default.
    pub fn namespace_lifecycle(mut self, on: bool) -> Self {
        self.controllers.namespace_lifecycle = on;
        self
    }

    /// The ServiceAccount controller's `default` account in every namespace. On by default.
    pub fn service_account_controller(mut self, on: bool) -> Self {
        self.controllers.service_accounts = on;
        self
    }

    /// How the Deployment controller reports status. [`DeploymentMode::Available`] by default.
    pub fn deployment_mode(mut self, mode: DeploymentMode) -> Self {
        self.controllers.deployments = mode;
        self
    }

    /// CRD `Established`/`NamesAccepted` status and instance cleanup on CRD deletion. On by
    /// default (CRDs are served either way).
    pub fn crd_controller(mut self, on: bool) -> Self {
        self.controllers.crds = on;
        self
    }

    /// APIService `Available` conditions (the aggregator's availability controller; local
    /// APIServices are Available on create either way). On by default.
    pub fn apiservice_controller(mut self, on: bool) -> Self {
        self.controllers.api_services = on;
        self
    }

    /// ClusterRole aggregation (kube-controller-manager's `clusterrole-aggregation`): a
    /// ClusterRole with an `aggregationRule` gets the rules of the ClusterRoles it selects.
    /// On by default.
    pub fn clusterrole_aggregation(mut self, on: bool) -> Self {
        self.controllers.clusterrole_aggregation = on;
        self
    }

    /// How often the availability check of APIServices whose Service has an endpoint
    /// ([`FakeApiServer::set_service_endpoint`]) runs again (kube-aggregator re-syncs every
    /// 30 s and retries failures sooner). 1 s by default.
    pub fn apiservice_probe_interval(mut self, every: Duration) -> Self {
        self.probe_interval = every;
        self
    }

    /// Garbage collection of owner references. On by default.
    pub fn garbage_collector(mut self, on: bool) -> Self {
        self.controllers.garbage_collector = on;
        self
    }

    /// Watch events kept per resource (the watch cache window); resuming a watch from an
    /// older `resourceVersion` gets 410 Gone. 10 000 by default.
    pub fn watch_history(mut self, events: usize) -> Self {
        self.history_limit = events;
        self
    }

    /// How often idle watches with `allowWatchBookmarks` get a BOOKMARK. 1 s by default.
    pub fn bookmark_interval(mut self, every: Duration) -> Self {
        self.bookmark_interval = every;
        self
    }

    /// Start without `default`, `kube-system`, `kube-public` and `kube-node-lease`.
    pub fn without_default_namespaces(mut self) -> Self {
        self.default_namespaces = false;
        self
    }

    /// Registers a bearer token for the user `username` in `groups` (plus
    /// `system:authenticated`), like a line of kube-apiserver's `--token-auth-file`. Requests
    /// with `Authorization: Bearer <token>` are that user (see
    /// [`FakeApiServer::client_with_token`]); RBAC decides what they may do.
    pub fn user_token(mut self, token: &str, username: &str, groups: &[&str]) -> Self {
        self.user_tokens.push((
            token.to_string(),
            username.to_string(),
            groups.iter().map(|g| (*g).to_string()).collect(),
        ));
        self
    }

    /// Builds the server.
    pub fn build(self) -> FakeApiServer {
        let mut cluster = Cluster::new(self.history_limit, self.controllers);
        let remote_api_services = cluster.aggregator.remote.clone();
        let mut defaults = Vec::new();
        if self.default_namespaces {
            for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
                defaults.push(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}));
            }
        }
        let pki = crate::aggregator::Pki::generate().unwrap_or_else(|e| {
            tracing::error!(error = %e, "making the front-proxy certificates failed");
            crate::aggregator::Pki::default()
        });
        defaults.extend(crate::auth::bootstrap::cluster_objects());
        if self.default_namespaces {
            defaults.extend(crate::auth::bootstrap::kube_system_objects());
            defaults.push(pki.config_map());
        }
        for obj in defaults {
            let kind = obj["kind"].as_str().unwrap_or_default().to_string();
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Err(e) = seed_into(&mut cluster, obj) {
                tracing::error!(kind, name, error = %e, "creating a default object failed");
            }
        }
        let tokens = crate::auth::tokens::Tokens::default();
        for (token, user, groups) in &self.user_tokens {
            tokens.add_user(token, user, groups);
        }
        FakeApiServer {
            shared: Arc::new(Shared {
                cluster: Mutex::new(cluster),
                control: Mutex::new(Control::default()),
                bookmark_interval: self.bookmark_interval,
                watch_lags: std::sync::RwLock::default(),
                tokens,
                aggregation: crate::aggregator::Layer {
                    pki,
                    probe_interval: self.probe_interval,
                    prober_started: std::sync::atomic::AtomicBool::new(false),
                    remote: remote_api_services,
                },
            }),
        }
    }
}
