//! Helpers of the `ops_*` tests: the in-memory API server with opcat's CRDs, clients whose
//! network a test can cut, the test tools' virtualenv, and small waits.
// Test support: a failed setup step aborts the test with its message; not every test binary
// uses every helper.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use fake_apiserver::FakeApiServer;
use futures::future::BoxFuture;
use http_body::Frame;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The in-memory API server with opcat's CRDs and the given namespaces.
pub async fn api_server(namespaces: &[&str]) -> FakeApiServer {
    let api = FakeApiServer::new();
    let client = api.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in opcat::api::crds() {
        crds.create(&PostParams::default(), &crd)
            .await
            .expect("install CRD");
    }
    let namespaces_api: Api<Namespace> = Api::all(client);
    for name in namespaces {
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some((*name).to_owned()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        namespaces_api
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create namespace");
    }
    api
}

/// A `kube::Client` whose network can be cut: once cut, requests fail as if the connection
/// were refused and open responses (watches) break at their next chunk.
#[derive(Clone)]
pub struct Network {
    cut: Arc<AtomicBool>,
}

impl Network {
    /// A client through this network to `inner`.
    pub fn client(inner: kube::Client) -> (kube::Client, Self) {
        let network = Self {
            cut: Arc::new(AtomicBool::new(false)),
        };
        let service = Cuttable {
            inner,
            cut: network.cut.clone(),
        };
        (kube::Client::new(service, "default"), network)
    }

    /// Cuts the network.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Restores it.
    pub fn heal(&self) {
        self.cut.store(false, Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct Cuttable {
    inner: kube::Client,
    cut: Arc<AtomicBool>,
}

fn refused() -> BoxError {
    Box::new(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "network cut by the test",
    ))
}

impl tower::Service<http::Request<kube::client::Body>> for Cuttable {
    type Response = http::Response<CutBody>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let inner = self.inner.clone();
        let cut = self.cut.clone();
        Box::pin(async move {
            if cut.load(Ordering::SeqCst) {
                return Err(refused());
            }
            let response = inner.send(request).await?;
            Ok(response.map(|body| CutBody { inner: body, cut }))
        })
    }
}

struct CutBody {
    inner: kube::client::Body,
    cut: Arc<AtomicBool>,
}

impl http_body::Body for CutBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if self.cut.load(Ordering::SeqCst) {
            return Poll::Ready(Some(Err(refused())));
        }
        Pin::new(&mut self.inner)
            .poll_frame(cx)
            .map_err(|error| Box::new(error) as BoxError)
    }
}

/// Waits until `check` holds, polling every 20 ms; panics with `what` after `timeout`.
pub async fn wait_until(what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !check() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?}: {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The virtualenv `scripts/install-test-deps.sh` creates for the Python test tools
/// (`kubernetes-validate`, the reference OpenMetrics parser): `OPCAT_TEST_VENV`, else
/// `~/.cache/opcat-test-tools/venv`. Fails, never skips, when it is missing.
pub fn test_venv() -> PathBuf {
    let venv = std::env::var_os("OPCAT_TEST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").expect("HOME is set");
            PathBuf::from(home).join(".cache/opcat-test-tools/venv")
        });
    assert!(
        venv.join("bin/python").exists(),
        "the test tools' virtualenv {} is missing: run scripts/install-test-deps.sh",
        venv.display()
    );
    venv
}

/// A minimal HTTP/1.1 GET: `(status, content type, body)`.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|error| panic!("connect to {addr}: {error}"));
    let request = format!("GET {path} HTTP/1.1\r\nHost: opcat\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("HTTP response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("status code");
    let content_type = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-type")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_default();
    (status, content_type, body.to_owned())
}

/// One metric family as the reference OpenMetrics parser (Python `prometheus-client`) sees it.
#[derive(Debug, serde::Deserialize)]
pub struct Family {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub help: String,
    pub unit: String,
    pub samples: Vec<MetricSample>,
}

impl Family {
    /// The value of the sample `name` with exactly `labels`; panics when there is none.
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let labels: std::collections::BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == labels)
            .unwrap_or_else(|| panic!("no {name}{labels:?} in {self:?}"))
            .value
    }
}

/// One sample.
#[derive(Debug, serde::Deserialize)]
pub struct MetricSample {
    pub name: String,
    pub labels: std::collections::BTreeMap<String, String>,
    pub value: f64,
}

/// Parses `text` with the reference OpenMetrics parser; panics with its error when the text is
/// not valid OpenMetrics.
pub fn parse_openmetrics(text: &str) -> Vec<Family> {
    use std::io::Write;
    const SCRIPT: &str = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
families = []
for family in text_string_to_metric_families(sys.stdin.read()):
    families.append({
        "name": family.name, "type": family.type, "help": family.documentation,
        "unit": family.unit,
        "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples],
    })
json.dump(families, sys.stdout)
"#;
    let python = test_venv().join("bin/python");
    let mut child = std::process::Command::new(&python)
        .args(["-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("run {}: {error}", python.display()));
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(text.as_bytes())
        .expect("write metrics");
    let output = child.wait_with_output().expect("parser output");
    assert!(
        output.status.success(),
        "/metrics is not valid OpenMetrics: {}\n{text}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("parser JSON")
}

/// One RBAC rule of `deploy/rbac.yaml`.
#[derive(Debug)]
pub struct Rule {
    /// `ClusterRole/opcat` or `Role/opcat-leader-election`.
    pub role: String,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub verbs: Vec<String>,
}

impl Rule {
    fn allows(&self, key: &fake_apiserver::RequestKey) -> bool {
        let resource = if key.subresource.is_empty() {
            key.resource.clone()
        } else {
            format!("{}/{}", key.resource, key.subresource)
        };
        let any = |list: &[String], value: &str| list.iter().any(|v| v == "*" || v == value);
        any(&self.api_groups, &key.group)
            && any(&self.resources, &resource)
            && any(&self.verbs, key.verb.as_str())
    }
}

/// The rules of the ClusterRole and Role in `deploy/rbac.yaml`.
pub fn rbac_rules() -> Vec<Rule> {
    let text = std::fs::read_to_string(repo_root().join("deploy/rbac.yaml")).expect("rbac.yaml");
    let documents: Vec<serde_json::Value> =
        serde_saphyr::from_multiple(&text).expect("rbac.yaml is YAML");
    let strings = |value: &serde_json::Value| -> Vec<String> {
        value
            .as_array()
            .map(|list| {
                list.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut rules = Vec::new();
    for document in documents {
        let kind = document["kind"].as_str().unwrap_or_default();
        if kind != "ClusterRole" && kind != "Role" {
            continue;
        }
        let role = format!(
            "{kind}/{}",
            document["metadata"]["name"].as_str().unwrap_or_default()
        );
        for rule in document["rules"].as_array().into_iter().flatten() {
            rules.push(Rule {
                role: role.clone(),
                api_groups: strings(&rule["apiGroups"]),
                resources: strings(&rule["resources"]),
                verbs: strings(&rule["verbs"]),
            });
        }
    }
    rules
}

/// Asserts that every API request counted by the in-memory API server is allowed by
/// `deploy/rbac.yaml` (discovery and other non-resource requests are allowed to every
/// authenticated user by `system:discovery`). Call it at the end of any test that drives the
/// controllers, so RBAC cannot fall behind the code.
pub fn assert_allowed_by_rbac(counts: &fake_apiserver::RequestCounts) {
    let denied = denied_by_rbac(counts);
    assert!(
        denied.is_empty(),
        "deploy/rbac.yaml does not allow requests opcat made:\n{}",
        denied.join("\n")
    );
}

/// The counted requests `deploy/rbac.yaml` does not allow, as `verb group/resource[/sub]`.
pub fn denied_by_rbac(counts: &fake_apiserver::RequestCounts) -> Vec<String> {
    let rules = rbac_rules();
    counts
        .iter()
        .filter(|(key, _)| !key.resource.is_empty())
        .filter(|(key, _)| !rules.iter().any(|rule| rule.allows(key)))
        .map(|(key, count)| {
            let group = if key.group.is_empty() {
                "core"
            } else {
                &key.group
            };
            let sub = if key.subresource.is_empty() {
                String::new()
            } else {
                format!("/{}", key.subresource)
            };
            format!(
                "{} {group}/{}{sub} ({count} requests)",
                key.verb, key.resource
            )
        })
        .collect()
}

/// `opcat run`'s term factory (a fresh manager per term) against `client`, with a registry
/// caching in a temporary directory (returned: keep it alive).
pub fn manager_factory(
    client: kube::Client,
    metrics: Arc<opcat::metrics::Metrics>,
    health: Arc<opcat::admin::Health>,
) -> (
    impl FnMut(opcat::controller::manager::Shutdown) -> BoxFuture<'static, ()> + Send + 'static,
    tempfile::TempDir,
) {
    let cache = tempfile::tempdir().expect("cache dir");
    let registry =
        opcat::registry::Registry::new(opcat::registry::RegistryOptions::new(cache.path()))
            .expect("registry");
    let factory = opcat::controller::leader::term::manager_term(
        client,
        Arc::new(registry),
        Arc::new(opcat::controller::clock::SystemClock),
        opcat::controller::context::Settings::default(),
        metrics,
        health,
    );
    (factory, cache)
}
