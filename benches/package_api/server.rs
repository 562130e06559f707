//! The server side of the package API benchmark: a process of its own, as opcat is, on the
//! allocator opcat's binary uses, so that its resident memory is the API's and not the client's.
//!
//! It loads the shared catalogs as opcat holds them, serves them in the global catalog namespace
//! over TLS with a certificate from opcat's `certificates` module, and answers TokenReview and
//! SubjectAccessReview in process (after a simulated round trip, paid only on cache misses).
//! Protocol with the client (lines on stdin and stdout): first it prints a [`Ready`]; `publish`
//! publishes the catalogs again (answer `published`); `rss` answers the resident MiB; end of
//! input times a list in process (no HTTP), prints [`InProcess`] and exits.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec;
use opcat::api::CatalogSource;
use opcat::certificates::ServiceIdentity;
use opcat::fbc::Catalog;
use opcat::package_server::PackageServer;
use opcat::package_server::reviews::{AccessDecision, ReviewError, Reviewer, UserInfo};
use opcat::package_server::storage::{Catalogs, Served};
use serde::{Deserialize, Serialize};

/// What the server prints once it listens.
#[derive(Serialize, Deserialize)]
pub struct Ready {
    pub address: String,
    pub ca_pem: String,
    pub rss_before: f64,
    pub rss_loaded: f64,
}

/// In-process times, milliseconds.
#[derive(Serialize, Deserialize)]
pub struct InProcess {
    pub build: f64,
    pub list: f64,
    pub serialize: f64,
}

struct Loaded(Vec<(Arc<CatalogSource>, Arc<Catalog>)>);

impl Catalogs for Loaded {
    fn in_namespace(&self, namespace: &str) -> Vec<Served> {
        self.all()
            .into_iter()
            .filter(|s| s.source.metadata.namespace.as_deref() == Some(namespace))
            .collect()
    }
    fn all(&self) -> Vec<Served> {
        self.0
            .iter()
            .map(|(source, catalog)| Served {
                source: source.clone(),
                catalog: catalog.clone(),
            })
            .collect()
    }
    fn global_namespace(&self) -> &str {
        "olm"
    }
}

struct AllowAll;

impl Reviewer for AllowAll {
    fn token_review(&self, _token: &str) -> BoxFuture<'_, Result<Option<UserInfo>, ReviewError>> {
        async {
            Ok(Some(UserInfo {
                name: "bench".into(),
                groups: vec!["system:authenticated".into()],
                ..UserInfo::default()
            }))
        }
        .boxed()
    }
    fn access_review(
        &self,
        _spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'_, Result<AccessDecision, ReviewError>> {
        async {
            // The round trip of a real review, paid only on cache misses.
            tokio::time::sleep(Duration::from_millis(5)).await;
            Ok(AccessDecision {
                allowed: true,
                reason: String::new(),
            })
        }
        .boxed()
    }
}

/// User and system CPU time of process `pid` so far.
pub fn cpu_time(pid: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command name (in parentheses): state is field 3, utime and stime 14 and 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |index: usize| {
        fields
            .get(index)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Linux reports them in USER_HZ, 100 a second on every architecture opcat targets.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Resident memory of process `pid` ("self" for this one), MiB.
pub fn rss_mib(pid: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn source(name: &str, display: &str) -> Arc<CatalogSource> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "apiVersion": "operators.coreos.com/v1alpha1", "kind": "CatalogSource",
            "metadata": {"name": name, "namespace": "olm", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"sourceType": "grpc", "image": "registry.example.com/c:1", "displayName": display},
        }))
        .unwrap(),
    )
}

/// The server process's main.
#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
pub async fn main() {
    opcat::registry::install_crypto_provider();
    let data = test_registry::shared_data_dir().join("fbc/large");
    let rss_before = rss_mib("self");
    let certified =
        Arc::new(Catalog::load(&data.join("certified-operators/catalogs/v4.16")).unwrap());
    let community =
        Arc::new(Catalog::load(&data.join("community-operators-prod/catalogs/v4.21")).unwrap());
    let loaded = Arc::new(Loaded(vec![
        (
            source("certified-operators", "Certified Operators"),
            certified,
        ),
        (
            source("community-operators", "Community Operators"),
            community,
        ),
    ]));
    let rss_loaded = rss_mib("self");

    let server = PackageServer::new(Arc::new(AllowAll));
    let identity = ServiceIdentity {
        service: "opcat-package-api".into(),
        namespace: "opcat-system".into(),
    };
    let material =
        opcat::certificates::issue(&identity, k8s_openapi::jiff::Timestamp::now()).unwrap();
    server
        .set_certificate(material.cert_pem(), material.key_pem())
        .unwrap();
    server.set_auth_config(
        opcat::package_server::auth_config::AuthConfig::from_data(&BTreeMap::new()).unwrap(),
    );
    server.publish(loaded.clone());
    let listener = opcat::package_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(server.clone().serve(listener, std::future::pending()));
    let ready = Ready {
        address,
        ca_pem: material.ca_pem().to_owned(),
        rss_before,
        rss_loaded,
    };
    println!("{}", serde_json::to_string(&ready).unwrap());

    let commands = {
        let server = server.clone();
        let loaded = loaded.clone();
        tokio::task::spawn_blocking(move || {
            for line in std::io::stdin().lock().lines() {
                match line.unwrap().as_str() {
                    "publish" => {
                        server.publish(loaded.clone());
                        println!("published");
                    }
                    "rss" => println!("{}", rss_mib("self")),
                    other => panic!("unknown command {other:?}"),
                }
            }
        })
    };
    commands.await.unwrap();
    println!(
        "{}",
        serde_json::to_string(&in_process(loaded.as_ref())).unwrap()
    );
}

/// Building the manifests, listing them, serializing the list, without HTTP.
fn in_process(loaded: &Loaded) -> InProcess {
    let memo = opcat::package_server::memo::Memo::default();
    let query = opcat::package_server::storage::ListQuery {
        namespace: Some("team-a".into()),
        ..Default::default()
    };
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let start = Instant::now();
    opcat::package_server::storage::select(loaded, &memo, &query);
    let build = ms(start.elapsed());
    let start = Instant::now();
    let selection = opcat::package_server::storage::select(loaded, &memo, &query);
    let listed = ms(start.elapsed());
    let start = Instant::now();
    let json = selection.to_chunks();
    let serialize = ms(start.elapsed());
    drop(json);
    InProcess {
        build,
        list: listed,
        serialize,
    }
}
