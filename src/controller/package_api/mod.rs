//! The package API's controller: what the leader does so that the aggregated
//! `packages.operators.coreos.com` API is served by it, and only while it can answer.
//!
//! In each leadership term, once every watch has listed:
//! 1. the authentication ConfigMap (`kube-system/extension-apiserver-authentication`) goes
//!    into the server ([`crate::package_server::auth_config`]);
//! 2. the serving certificate is kept ([`certificate`]): Secret and APIService `caBundle`,
//!    then the server serves it once the APIService trusts its CA;
//! 3. once every CatalogSource has been through its first load of the term
//!    ([`CatalogIndex::is_settled`](crate::controller::catalogs::CatalogIndex::is_settled)),
//!    the term's catalogs are published to the server (until then it answers 503, so
//!    kube-aggregator keeps the APIService unavailable);
//! 4. when all three hold, the leader labels its own pod [`SERVING_LABEL`] (the package API
//!    Service selects that label) and removes the label from any other pod ([`serving_pod`]).
//!
//! When the term ends the label is removed and the catalogs withdrawn (also when the term is
//! abandoned because the lease was lost: [`Withdraw`] runs on drop). Failover window: from the
//! old leader's loss of the lease (at once on a graceful stop; up to the lease duration after a
//! crash) until the new leader has loaded its catalogs (from its disk cache when the digests
//! have not moved) and the endpoint controllers have seen the new label (about a second). In
//! between, kube-aggregator answers 503 for the group: clients retry.
//!
//! Converged, the controller makes no request: it reads its four narrow watches and checks the
//! certificate's dates in memory once a second.

pub mod certificate;
pub mod serving_pod;
pub mod view;
pub mod watches;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::ResourceExt;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use tokio::sync::watch;

use self::certificate::{Stored, material, trusted_by};
use self::view::ContextCatalogs;
use self::watches::{Named, watch_labelled_pods, watch_named};
use super::context::Context;
use super::manager::Shutdown;
use crate::certificates::{Material, ServiceIdentity};
use crate::package_server::PackageServer;
use crate::package_server::auth_config::{AuthConfig, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE};

/// Label the leader puts on its own pod while it serves the package API; the package API
/// Service selects it.
pub const SERVING_LABEL: &str = "opcat.dev/package-api";
/// Value of [`SERVING_LABEL`].
pub const SERVING_LABEL_VALUE: &str = "serving";
/// The APIService of the package API.
pub const API_SERVICE_NAME: &str = "v1.packages.operators.coreos.com";
/// Default name of the package API Service.
pub const DEFAULT_SERVICE: &str = "opcat-package-api";
/// Default name of the serving certificate's Secret.
pub const DEFAULT_SECRET: &str = "opcat-package-api-serving-cert";

/// How often the in-memory checks run without an event (certificate dates, catalog loading).
const TICK: Duration = Duration::from_secs(1);
/// How long a written Secret may take to come back through the watch before it is planned
/// again.
const PENDING_WRITE: Duration = Duration::from_secs(30);

/// Where the package API lives.
#[derive(Clone)]
pub struct PackageApi {
    /// The process's server.
    pub server: Arc<PackageServer>,
    /// opcat's namespace (Secret, Service, pods).
    pub namespace: String,
    /// The Service the APIService points at.
    pub service: String,
    /// The Secret holding the serving certificate.
    pub secret: String,
    /// This replica's pod (`POD_NAME`); `None` outside a pod (no label is written).
    pub pod: Option<String>,
}

impl std::fmt::Debug for PackageApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackageApi")
            .field("namespace", &self.namespace)
            .field("service", &self.service)
            .field("secret", &self.secret)
            .field("pod", &self.pod)
            .finish()
    }
}

/// Withdraws the catalogs and removes the pod label when the term's task ends, however it
/// ends (an abandoned term's task is dropped mid-await).
struct Withdraw {
    api: PackageApi,
    client: kube::Client,
    labelled: Arc<AtomicBool>,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        self.api.server.withdraw();
        if let Some(pod) = self.api.pod.clone()
            && self.labelled.swap(false, Ordering::AcqRel)
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let client = self.client.clone();
            let namespace = self.api.namespace.clone();
            runtime.spawn(async move {
                serving_pod::unlabel(&client, &namespace, &pod).await;
            });
        }
    }
}

/// Runs the package API's side of a term until `shutdown`.
pub async fn run(context: Arc<Context>, api: PackageApi, shutdown: Shutdown) {
    let client = context.client.clone();
    let labelled = Arc::new(AtomicBool::new(false));
    let _withdraw = Withdraw {
        api: api.clone(),
        client: client.clone(),
        labelled: labelled.clone(),
    };
    let (secret_tx, mut secret_rx) = watch::channel::<Named<Secret>>(None);
    let (service_tx, mut service_rx) = watch::channel::<Named<APIService>>(None);
    let (config_tx, mut config_rx) = watch::channel::<Named<ConfigMap>>(None);
    let (pods_tx, mut pods_rx) = watch::channel::<Option<Vec<String>>>(None);
    let watches = futures::future::join4(
        watch_named(
            Api::<Secret>::namespaced(client.clone(), &api.namespace),
            api.secret.clone(),
            secret_tx,
        ),
        watch_named(
            Api::<APIService>::all(client.clone()),
            API_SERVICE_NAME.to_owned(),
            service_tx,
        ),
        watch_named(
            Api::<ConfigMap>::namespaced(client.clone(), CONFIG_MAP_NAMESPACE),
            CONFIG_MAP_NAME.to_owned(),
            config_tx,
        ),
        watch_labelled_pods(
            Api::<PartialObjectMeta<Pod>>::namespaced(client.clone(), &api.namespace),
            format!("{SERVING_LABEL}={SERVING_LABEL_VALUE}"),
            pods_tx,
        ),
    );
    let mut state = State {
        labelled: labelled.clone(),
        ..State::default()
    };
    let work = async {
        if context.stores.wait_until_ready().await.is_err() {
            return;
        }
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let secret = secret_rx.borrow_and_update().clone();
            let api_service = service_rx.borrow_and_update().clone();
            let config = config_rx.borrow_and_update().clone();
            let pods = pods_rx.borrow_and_update().clone();
            state
                .step(&context, &api, &secret, &api_service, &config, &pods)
                .await;
            tokio::select! {
                _ = tick.tick() => {}
                _ = secret_rx.changed() => {}
                _ = service_rx.changed() => {}
                _ = config_rx.changed() => {}
                _ = pods_rx.changed() => {}
            }
        }
    };
    tokio::select! {
        () = shutdown => {}
        () = work => {}
        _ = watches => {}
    }
    if let Some(pod) = &api.pod
        && labelled.swap(false, Ordering::AcqRel)
    {
        // Leave the Service before the catalogs go: requests in flight still get answers.
        serving_pod::unlabel(&client, &api.namespace, pod).await;
    }
}

/// What the controller remembers between steps.
#[derive(Default)]
struct State {
    /// resourceVersion of the ConfigMap last read into the server.
    auth_version: Option<String>,
    /// The material last written, until the watch shows it.
    pending: Option<(Material, Instant)>,
    /// The certificate the server serves (PEM).
    served_cert: Option<String>,
    /// Whether the catalogs are published.
    published: bool,
    /// The last problem logged, so that a lasting one is logged once.
    last_problem: Option<String>,
    /// Whether this pod carries the serving label (shared with [`Withdraw`]).
    labelled: Arc<AtomicBool>,
}

impl State {
    async fn step(
        &mut self,
        context: &Arc<Context>,
        api: &PackageApi,
        secret: &Named<Secret>,
        api_service: &Named<APIService>,
        config: &Named<ConfigMap>,
        pods: &Option<Vec<String>>,
    ) {
        let (Some(secret), Some(api_service), Some(config), Some(pods)) =
            (secret, api_service, config, pods)
        else {
            return; // A watch has not listed yet.
        };
        self.read_auth_config(&api.server, config.as_deref());
        self.keep_certificate(context, api, secret.as_deref(), api_service.as_deref())
            .await;
        if !self.published && catalogs_settled(context) {
            api.server
                .publish(Arc::new(ContextCatalogs::new(context.clone())));
            self.published = true;
            tracing::info!("package API: catalogs loaded; serving them");
        }
        let serving = self.published && self.served_cert.is_some() && api.server.has_auth_config();
        if serving
            && let Some(pod) = &api.pod
            && serving_pod::converge(&context.client, &api.namespace, pod, pods).await
        {
            self.labelled.store(true, Ordering::Release);
        }
    }

    fn read_auth_config(&mut self, server: &PackageServer, config: Option<&ConfigMap>) {
        let Some(config) = config else {
            self.problem(format!(
                "ConfigMap {CONFIG_MAP_NAMESPACE}/{CONFIG_MAP_NAME} does not exist: the cluster's \
                 front proxy cannot be authenticated (is API aggregation enabled?)"
            ));
            return;
        };
        if self.auth_version == config.metadata.resource_version {
            return;
        }
        match AuthConfig::from_data(config.data.as_ref().unwrap_or(&Default::default())) {
            Ok(parsed) => {
                server.set_auth_config(parsed);
                self.auth_version = config.metadata.resource_version.clone();
                tracing::info!("package API: authentication configuration read");
            }
            Err(error) => self.problem(error.to_string()),
        }
    }

    /// Keeps the Secret and the CA bundle, and serves the stored certificate once the
    /// APIService trusts its CA.
    async fn keep_certificate(
        &mut self,
        context: &Context,
        api: &PackageApi,
        secret: Option<&Secret>,
        api_service: Option<&APIService>,
    ) {
        let stored = secret
            .filter(|s| certificate::is_ours(s))
            .and_then(material);
        if let Some((pending, since)) = &self.pending {
            let arrived = stored.as_ref() == Some(pending);
            if !arrived && since.elapsed() < PENDING_WRITE {
                return; // Our write has not come back through the watch yet.
            }
            self.pending = None;
        }
        let identity = ServiceIdentity {
            service: api.service.clone(),
            namespace: api.namespace.clone(),
        };
        let now = context.clock.now();
        let planned = match certificate::keep(
            &context.client,
            &identity,
            &api.secret,
            API_SERVICE_NAME,
            Stored {
                secret,
                api_service,
            },
            now,
        )
        .await
        {
            Ok(planned) => planned,
            Err(error) => {
                self.problem(crate::failure::error_chain(&error));
                return;
            }
        };
        if planned.changed() {
            self.pending = Some((planned.material.clone(), Instant::now()));
        }
        let Some(serve) = stored else { return };
        let trusted = api_service.is_some_and(|service| trusted_by(service, serve.ca_pem()));
        if !trusted || self.served_cert.as_deref() == Some(serve.cert_pem()) {
            return;
        }
        match api
            .server
            .set_certificate(serve.cert_pem(), serve.key_pem())
        {
            Ok(()) => {
                tracing::info!(ca_sha256 = %serve.ca_hash(), "package API: serving certificate loaded");
                self.served_cert = Some(serve.cert_pem().to_owned());
                self.last_problem = None;
            }
            Err(error) => self.problem(error.to_string()),
        }
    }

    fn problem(&mut self, message: String) {
        if self.last_problem.as_ref() != Some(&message) {
            tracing::warn!(problem = %message, "package API: not serving");
            self.last_problem = Some(message);
        }
    }
}

/// Whether every CatalogSource the term knows has been through its first reconcile.
fn catalogs_settled(context: &Context) -> bool {
    context.stores.catalog_sources.state().iter().all(|source| {
        let namespace = source.namespace().unwrap_or_default();
        context.catalogs.is_settled(&namespace, &source.name_any())
    })
}
