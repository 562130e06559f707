//! The package API as the real `opcat run` binary serves it, wired by its flags
//! (`--package-api-address`, `--package-api-namespace`, `--disable-package-api`): against the
//! in-memory API server over HTTP (a kubeconfig). `/readyz` says whether this replica serves
//! the package API; once it says "serving", the leader's pod carries the serving label, the
//! APIService is available and a list through the aggregator is answered by the process on
//! the flag's address. With `--disable-package-api` nothing listens and `/readyz` says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod ops_support;
mod package_api_support;

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use ops_support::{api_server, http_get};
use package_api_support::{names, resource};

const NS: &str = "opcat-system";
const TIMEOUT: Duration = Duration::from_secs(120);

fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// A running `opcat run`, its log in a file.
struct Opcat {
    child: Child,
    admin: SocketAddr,
    _cache: tempfile::TempDir,
    log: tempfile::NamedTempFile,
}

impl Opcat {
    fn start(kubeconfig: &std::path::Path, extra: &[&str]) -> Self {
        let cache = tempfile::tempdir().unwrap();
        let log = tempfile::NamedTempFile::new().unwrap();
        let admin = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_opcat"));
        for (name, _) in std::env::vars() {
            if name.starts_with("OPCAT_") || name.starts_with("POD_") || name == "KUBECONFIG" {
                command.env_remove(name);
            }
        }
        let child = command
            .args(["run", "--admin-address", &admin.to_string()])
            .args(["--cache-dir", cache.path().to_str().unwrap()])
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .env("POD_NAME", "opcat-0")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("start opcat run");
        Self {
            child,
            admin,
            _cache: cache,
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log.path()).unwrap_or_default()
    }

    async fn readyz(&self) -> Option<String> {
        tokio::net::TcpStream::connect(self.admin).await.ok()?;
        let (status, _, body) = http_get(self.admin, "/readyz").await;
        (status == 200).then_some(body)
    }

    /// Waits until `/readyz` answers 200 with a body for which `check` holds; returns it.
    async fn wait_readyz(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(body) = self.readyz().await
                && check(&body)
            {
                return body;
            }
            assert!(
                Instant::now() < deadline,
                "timed out: {what}\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Opcat {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The cluster side of the package API: the APIService (opcat fills in `caBundle`), its
/// Service (reachable at `package_api`) and opcat's pod.
async fn cluster(package_api: SocketAddr) -> FakeApiServer {
    opcat::registry::install_crypto_provider();
    let api = api_server(&[NS, "olm", "team-a"]).await;
    let client = api.client();
    let api_service: APIService = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "v1.packages.operators.coreos.com"},
        "spec": {"group": "packages.operators.coreos.com", "version": "v1",
                 "groupPriorityMinimum": 2000, "versionPriority": 15,
                 "service": {"name": "opcat-package-api", "namespace": NS, "port": 443}},
    }))
    .unwrap();
    Api::<APIService>::all(client.clone())
        .create(&PostParams::default(), &api_service)
        .await
        .unwrap();
    let service: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "opcat-package-api", "namespace": NS},
        "spec": {"selector": {"opcat.dev/package-api": "serving"},
                 "ports": [{"name": "https", "port": 443, "targetPort": "package-api"}]},
    }))
    .unwrap();
    Api::<Service>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    api.set_service_endpoint(NS, "opcat-package-api", package_api);
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "opcat-0", "namespace": NS},
    }))
    .unwrap();
    Api::<Pod>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    api
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opcat_run_serves_the_package_api_on_its_flags_and_readyz_says_so() {
    let package_api = free_port();
    let api = cluster(package_api).await;
    let http = api.serve_http().await.expect("serve the API over HTTP");

    let opcat = Opcat::start(
        http.kubeconfig_path(),
        &[
            "--package-api-address",
            &package_api.to_string(),
            "--package-api-namespace",
            NS,
        ],
    );
    let body = opcat
        .wait_readyz("the package API serves", |body| {
            body.contains("package API: serving")
        })
        .await;
    assert!(body.starts_with("ready: reconciling"), "{body}");
    let log = opcat.log();
    assert!(
        log.contains("package API listening") && log.contains(&package_api.to_string()),
        "{log}"
    );
    ops_support::wait_until("opcat labels its pod", TIMEOUT, || {
        api.get::<Pod>(NS, "opcat-0")
            .is_some_and(|pod| pod.labels().contains_key("opcat.dev/package-api"))
    })
    .await;

    // As kubectl: through the API server's aggregation layer, to the address of the flag.
    api.probe_api_services().await;
    let stored: APIService = api.get("", "v1.packages.operators.coreos.com").unwrap();
    let conditions = stored.status.unwrap().conditions.unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True"),
        "{conditions:?}\n{}",
        opcat.log()
    );
    let packages: Api<DynamicObject> = Api::namespaced_with(api.client(), "team-a", &resource());
    // No CatalogSource: an empty list, answered by the process (not the API server's 404
    // or 503 of an unavailable APIService).
    let listed = packages.list(&ListParams::default()).await.unwrap();
    assert!(listed.items.is_empty(), "{:?}", names(&listed.items));
    let error = packages.get("widget").await.unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 404
            && status.message.contains("packagemanifests.packages.operators.coreos.com")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_disable_package_api_nothing_listens_and_readyz_says_disabled() {
    let package_api = free_port();
    let api = cluster(package_api).await;
    let http = api.serve_http().await.expect("serve the API over HTTP");
    let opcat = Opcat::start(
        http.kubeconfig_path(),
        &[
            "--disable-package-api",
            "--package-api-address",
            &package_api.to_string(),
            "--package-api-namespace",
            NS,
        ],
    );
    let body = opcat
        .wait_readyz("reconciling", |body| body.contains("reconciling"))
        .await;
    assert!(body.contains("package API: disabled"), "{body}");
    assert!(
        tokio::net::TcpStream::connect(package_api).await.is_err(),
        "nothing listens on {package_api}"
    );
    assert!(!opcat.log().contains("package API listening"));
}
