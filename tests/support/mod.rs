//! Shared harness for controller tests: the in-memory API server (with opcat's CRDs), the real
//! `docker-registry` with basic auth holding the example bundles and catalog, and the opcat
//! manager running in-process against them.
//!
//! Each integration test binary includes this module; not every binary uses every helper.
// Test support: a failed setup step should abort the test with its message, and not every test
// binary uses every helper.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use kube::runtime::watcher;
use kube::{Client, Resource};
use opcat::controller::clock::SystemClock;
use opcat::controller::context::{Context, Settings};
use opcat::controller::manager;
use opcat::registry::{ImageRef, Keyring, PullSecret, Registry, RegistryOptions, TrustConfig};
use serde::de::DeserializeOwned;
use test_registry::Distribution;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Registry user the examples are pushed with and the pull secrets carry.
pub const REGISTRY_USER: &str = "catalog-reader";
/// Its password (also what tests search logs and events for: it must never appear).
pub const REGISTRY_PASSWORD: &str = "s3cret-Pa55-never-logged";
/// Placeholder registry of the example content.
pub const EXAMPLE_REGISTRY: &str = "localhost:5000";
/// The in-memory API server counts the manager's requests under this name (apart from the
/// test's own): [`Env::manager_requests`].
pub const MANAGER_AGENT: &str = "opcat";

/// The example catalog and bundles, pushed to the test registry.
pub struct ExampleImages {
    /// `HOST/opcat-examples/catalog:latest`.
    pub catalog: String,
    /// The rewritten catalog directory (images point at the test registry).
    pub catalog_dir: PathBuf,
    /// The rewritten bundle directories.
    pub bundles_dir: PathBuf,
}

/// A registry, an API server and (optionally) a running manager.
pub struct Env {
    pub api: FakeApiServer,
    pub client: Client,
    pub registry: Distribution,
    pub images: ExampleImages,
    pub opcat_registry: Arc<Registry>,
    cache_dir: tempfile::TempDir,
    manager: Option<RunningManager>,
}

struct RunningManager {
    context: Arc<Context>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
}

/// Repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

impl Env {
    /// Starts the registry, pushes the examples, starts the API server with opcat's CRDs.
    /// The manager is not started; call [`Env::start_manager`].
    pub async fn new() -> Self {
        Self::with_api(FakeApiServer::new()).await
    }

    /// Like [`Env::new`] with a custom API server.
    pub async fn with_api(api: FakeApiServer) -> Self {
        Self::with_registry(api, Distribution::basic(REGISTRY_USER, REGISTRY_PASSWORD)).await
    }

    /// Like [`Env::with_api`] with a registry started by the caller (more users, token auth);
    /// the examples are pushed with its first user.
    pub async fn with_registry(api: FakeApiServer, registry: Distribution) -> Self {
        opcat::registry::install_crypto_provider();
        let cache_dir = tempfile::tempdir().expect("cache dir");
        let opcat_registry = opcat_registry(&registry, cache_dir.path());
        let images = push_examples(&registry, &opcat_registry).await;
        let client = api.client();
        install_crds(&client).await;
        Self {
            api,
            client,
            registry,
            images,
            opcat_registry,
            cache_dir,
            manager: None,
        }
    }

    /// Replaces opcat's registry client with a new one over the same cache directory: what a
    /// process restart keeps (the disk cache) and loses (everything in memory). Takes effect at
    /// the next [`Env::start_manager`].
    pub fn reopen_registry(&mut self) {
        self.opcat_registry = opcat_registry(&self.registry, self.cache_dir.path());
    }

    /// Settings for tests: short waits so convergence is quick.
    pub fn settings() -> Settings {
        Settings {
            wait_requeue: Duration::from_millis(200),
            catalog_server_check: Duration::from_millis(500),
            ..Settings::default()
        }
    }

    /// The directory opcat's registry client caches and unpacks images under.
    pub fn cache_path(&self) -> &Path {
        self.cache_dir.path()
    }

    /// Starts the manager in-process.
    pub fn start_manager(&mut self) {
        self.start_manager_with(Self::settings());
    }

    /// Starts the manager with custom settings.
    pub fn start_manager_with(&mut self, settings: Settings) {
        self.start_manager_with_clock(settings, Arc::new(SystemClock));
    }

    /// Starts the manager with custom settings and clock.
    pub fn start_manager_with_clock(
        &mut self,
        settings: Settings,
        clock: Arc<dyn opcat::controller::clock::Clock>,
    ) {
        assert!(self.manager.is_none(), "manager already running");
        let (stop, stopped) = oneshot::channel::<()>();
        let running = manager::start(
            self.api.client_as(MANAGER_AGENT),
            self.opcat_registry.clone(),
            clock,
            settings,
            async move {
                let _ = stopped.await;
            },
        );
        let context = running.context.clone();
        let task = tokio::spawn(running.future);
        self.manager = Some(RunningManager {
            context,
            stop,
            task,
        });
    }

    /// Every request the manager made since the environment started (every manager started by
    /// it, the test's own requests excluded): what `deploy/rbac.yaml` must allow.
    pub fn manager_requests(&self) -> fake_apiserver::RequestCounts {
        self.api.request_counts_of(MANAGER_AGENT)
    }

    /// The manager's requests other than watches since the API server's last
    /// `reset_counts`, one line each: what a converged manager must not send.
    pub fn manager_requests_since_reset(&self) -> Vec<String> {
        self.api
            .request_log()
            .into_iter()
            .filter(|request| request.agent.as_deref() == Some(MANAGER_AGENT))
            .filter(|request| request.key.verb != fake_apiserver::Verb::Watch)
            .map(|request| request.describe())
            .collect()
    }

    /// The value of one series (name and labels as encoded, e.g.
    /// `opcat_catalog_pulls_total{result="pulled"}`) in the running manager's metrics.
    pub fn metric(&self, series: &str) -> Option<f64> {
        metric_value(&self.context().metrics.encode(), series)
    }

    /// Reconciles `controller` (`opcat::metrics::controllers::CSV`, ...) finished in the running
    /// manager: a sign that resyncs happened, whatever they sent to the API server.
    pub fn reconciles(&self, controller: &str) -> f64 {
        self.metric(&format!(
            "opcat_reconcile_total{{controller=\"{controller}\"}}"
        ))
        .unwrap_or(0.0)
    }

    /// Stops the manager and waits for it to finish.
    pub async fn stop_manager(&mut self) {
        self.stop_manager_within(Duration::from_secs(10)).await;
    }

    /// Stops the manager; returns whether it finished (every in-flight reconcile done) within
    /// `timeout`. A manager that did not is abandoned, as `opcat run` does at its deadline.
    pub async fn stop_manager_within(&mut self, timeout: Duration) -> bool {
        let Some(manager) = self.manager.take() else {
            return true;
        };
        let _ = manager.stop.send(());
        let mut task = manager.task;
        let finished = tokio::time::timeout(timeout, &mut task).await.is_ok();
        task.abort();
        finished
    }

    /// Stops and starts the manager (a controller restart).
    pub async fn restart_manager(&mut self) {
        self.stop_manager().await;
        self.start_manager();
    }

    /// The running manager's context.
    pub fn context(&self) -> Arc<Context> {
        self.manager
            .as_ref()
            .expect("manager running")
            .context
            .clone()
    }

    /// Creates a namespace.
    pub async fn namespace(&self, name: &str) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        api.create(&PostParams::default(), &namespace)
            .await
            .expect("create namespace");
    }

    /// A `kubernetes.io/dockerconfigjson` Secret with the registry's credentials.
    pub fn pull_secret(&self, namespace: &str, name: &str) -> Secret {
        pull_secret(namespace, name, &self.registry.dockerconfigjson())
    }

    /// Creates an object through the API.
    pub async fn create<K>(&self, object: &K) -> K
    where
        K: Resource<DynamicType = ()>
            + Clone
            + std::fmt::Debug
            + serde::Serialize
            + DeserializeOwned,
        K::Scope: NamespaceOrCluster,
    {
        let api = K::Scope::api::<K>(&self.client, object.meta().namespace.as_deref());
        api.create(&PostParams::default(), object)
            .await
            .unwrap_or_else(|error| panic!("create {}: {error}", K::kind(&())))
    }

    /// Waits until the stored object satisfies `ready` (reads do not count as requests).
    pub async fn wait_for<K>(
        &self,
        namespace: &str,
        name: &str,
        timeout: Duration,
        ready: impl Fn(&K) -> bool,
    ) -> K
    where
        K: Resource<DynamicType = ()> + DeserializeOwned + std::fmt::Debug,
    {
        let deadline = Instant::now() + timeout;
        loop {
            let current = self.api.get::<K>(namespace, name);
            if let Some(object) = &current
                && ready(object)
            {
                return current.expect("checked above");
            }
            if Instant::now() > deadline {
                panic!(
                    "timed out after {timeout:?} waiting for {} {namespace}/{name}; last seen: {current:#?}",
                    K::kind(&())
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until no write request reaches the API server for one second (convergence has
    /// finished); panics after 30 s of continuous writes.
    pub async fn wait_quiet(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.api.reset_counts();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let counts = self.api.request_counts();
            if counts.writes() == 0 {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: still writing after 30 s:\n{counts}"
            );
        }
    }

    /// Opens a watch of `K` in `namespace` that hands every object it delivers (the initial
    /// list, then each change) to `seen`, in order; returns once the API server has registered
    /// the watch, so nothing written afterwards is missed.
    pub async fn record_watch<K>(&self, namespace: &str, mut seen: impl FnMut(K) + Send + 'static)
    where
        K: Resource<DynamicType = (), Scope = NamespaceResourceScope>
            + Clone
            + DeserializeOwned
            + std::fmt::Debug
            + Send
            + 'static,
    {
        let before = self.api.watcher_count::<K>();
        let api: Api<K> = Api::namespaced(self.client.clone(), namespace);
        tokio::spawn(async move {
            let mut stream = watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = stream.next().await {
                if let Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event
                {
                    seen(object);
                }
            }
        });
        let what = format!("the {} watch is open", K::kind(&()));
        self.wait_until(&what, Duration::from_secs(90), || {
            self.api.watcher_count::<K>() > before
        })
        .await;
    }

    /// Waits until `check` holds (polling every 50 ms).
    pub async fn wait_until(&self, what: &str, timeout: Duration, check: impl Fn() -> bool) {
        let deadline = Instant::now() + timeout;
        while !check() {
            assert!(
                Instant::now() < deadline,
                "timed out after {timeout:?}: {what}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The value of the sample line of `series` (name and labels as encoded) in OpenMetrics `text`.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// opcat's registry client for the test registry (trusting its CA), caching under `cache_dir`.
fn opcat_registry(registry: &Distribution, cache_dir: &Path) -> Arc<Registry> {
    let mut options = RegistryOptions::new(cache_dir.join("images"));
    options.trust = TrustConfig {
        extra_root_certs_pem: vec![std::fs::read(&registry.ca.ca_pem).expect("CA")],
        ..TrustConfig::default()
    };
    Arc::new(Registry::new(options).expect("opcat registry"))
}

/// Cluster-scoped or namespaced `Api` construction for [`Env::create`].
pub trait NamespaceOrCluster {
    fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>;
}

impl NamespaceOrCluster for k8s_openapi::NamespaceResourceScope {
    fn api<K>(client: &Client, namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>,
    {
        Api::namespaced(
            client.clone(),
            namespace.expect("namespaced object needs a namespace"),
        )
    }
}

impl NamespaceOrCluster for k8s_openapi::ClusterResourceScope {
    fn api<K>(client: &Client, _namespace: Option<&str>) -> Api<K>
    where
        K: Resource<DynamicType = (), Scope = Self>,
    {
        Api::all(client.clone())
    }
}

/// A dockerconfigjson Secret.
pub fn pull_secret(namespace: &str, name: &str, dockerconfigjson: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".to_owned()),
        data: Some(
            [(
                ".dockerconfigjson".to_owned(),
                ByteString(dockerconfigjson.as_bytes().to_vec()),
            )]
            .into(),
        ),
        ..Secret::default()
    }
}

/// Installs opcat's CRDs into the API server.
pub async fn install_crds(client: &Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in opcat::api::crds() {
        api.create(&PostParams::default(), &crd)
            .await
            .expect("install CRD");
    }
}

/// Copies `from` to `to` recursively, replacing the example registry host in every file.
pub fn copy_rewritten(from: &Path, to: &Path, host: &str) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_rewritten(&entry.path(), &target, host);
        } else {
            let text = std::fs::read_to_string(entry.path()).expect("read example file");
            std::fs::write(target, text.replace(EXAMPLE_REGISTRY, host)).expect("write");
        }
    }
}

/// Pushes the example bundles, a small image for every operator image they name, and the
/// catalog, with the example registry rewritten to the test registry.
pub async fn push_examples(registry: &Distribution, opcat: &Registry) -> ExampleImages {
    let work = registry.scratch("examples");
    let bundles_dir = work.join("bundles");
    let catalog_dir = work.join("catalog");
    copy_rewritten(&repo_root().join("bundles"), &bundles_dir, &registry.host);
    copy_rewritten(&repo_root().join("catalog"), &catalog_dir, &registry.host);
    let keyring = keyring_for(registry);

    // Every bundle under bundles/<package>/<version>/.
    for package in std::fs::read_dir(&bundles_dir).expect("bundles") {
        let package = package.expect("entry").path();
        if !package.is_dir() {
            continue;
        }
        let name = package
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        for version in std::fs::read_dir(&package).expect("versions") {
            let version = version.expect("entry").path();
            let tag = version
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_owned();
            let built = opcat::registry::push::build_bundle_image(&version).expect("build bundle");
            let image: ImageRef = registry
                .image(&format!("opcat-examples/{name}-bundle:v{tag}"))
                .parse()
                .expect("bundle ref");
            opcat
                .push(&image, &built, &keyring)
                .await
                .expect("push bundle");
            // The operator image the bundle's Deployments run: any valid image will do for
            // manifest checks; reuse the bundle's content.
            let operator: ImageRef = registry
                .image(&format!("opcat-examples/{name}:v{tag}"))
                .parse()
                .expect("operator ref");
            opcat
                .push(&operator, &built, &keyring)
                .await
                .expect("push operator image");
        }
    }
    let built = opcat::registry::push::build_catalog_image(&catalog_dir).expect("build catalog");
    let catalog = registry.image("opcat-examples/catalog:latest");
    let image: ImageRef = catalog.parse().expect("catalog ref");
    opcat
        .push(&image, &built, &keyring)
        .await
        .expect("push catalog");
    ExampleImages {
        catalog,
        catalog_dir,
        bundles_dir,
    }
}

/// A keyring holding the test registry's credentials.
pub fn keyring_for(registry: &Distribution) -> Keyring {
    let secret = PullSecret::from(&pull_secret(
        "test",
        "registry",
        &registry.dockerconfigjson(),
    ));
    let (keyring, errors) = Keyring::from_secrets([&secret]);
    assert!(errors.is_empty(), "test pull secret must parse: {errors:?}");
    keyring
}
