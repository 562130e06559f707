//! Benchmark of the package API (issue 24), run by `scripts/bench-package-api.sh`: the shared
//! certified-operators v4.16 and community-operators v4.21 catalogs loaded as opcat holds them,
//! served in the global catalog namespace over TLS; a user with a bearer token lists every
//! package in a namespace again and again (TokenReview and SubjectAccessReview answered from
//! the caches after the first request). Prints p50/p99 latency of lists that build the
//! manifests from the catalogs (cold: the catalogs are published again before each) and of
//! lists answered from the kept manifests (warm), with and without the client's parse; where a
//! cold list's time goes in process; and the process's resident memory with the catalogs alone
//! and while serving. `BENCH_NO_API=1` stops after loading the catalogs (the yardstick of a
//! whole-process memory comparison). Not a timed test: targets are printed, not asserted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use opcat::api::CatalogSource;
use opcat::certificates::ServiceIdentity;
use opcat::fbc::Catalog;
use opcat::package_server::PackageServer;
use opcat::package_server::reviews::{AccessDecision, ReviewError, Reviewer, UserInfo};
use opcat::package_server::storage::{Catalogs, Served};

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

fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
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

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    opcat::registry::install_crypto_provider();
    let requests: usize = std::env::var("BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let data = test_registry::shared_data_dir().join("fbc/large");
    let baseline = rss_mib();
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
    let without_api = rss_mib();
    if std::env::var_os("BENCH_NO_API").is_some() {
        // The yardstick of a whole-process comparison: the catalogs loaded, no API.
        println!("| RSS with the catalogs (no API) | {without_api:.0} MiB | |");
        return;
    }

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
    let address = listener.local_addr().unwrap();
    tokio::spawn(server.clone().serve(listener, std::future::pending()));

    let mut config = kube::Config::new(format!("https://{address}").parse().unwrap());
    config.root_cert = Some(vec![
        rustls::pki_types::pem::PemObject::from_pem_slice(material.ca_pem().as_bytes())
            .map(|der: rustls::pki_types::CertificateDer<'static>| der.to_vec())
            .unwrap(),
    ]);
    config.tls_server_name = Some("opcat-package-api.opcat-system.svc".into());
    config.auth_info.token = Some("bench-token".to_owned().into());
    let client = kube::Client::try_from(config).unwrap();
    let resource = ApiResource {
        group: "packages.operators.coreos.com".into(),
        version: "v1".into(),
        api_version: "packages.operators.coreos.com/v1".into(),
        kind: "PackageManifest".into(),
        plural: "packagemanifests".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "team-a", &resource);
    let mut peak = without_api;

    // Cold: the catalogs are published again before each request, which drops the built
    // manifests, so every list builds them from the catalogs (as every list did before they
    // were kept).
    let cold_requests = (requests / 10).max(5);
    let mut cold = Vec::with_capacity(cold_requests);
    for _ in 0..cold_requests {
        server.publish(loaded.clone());
        let start = Instant::now();
        api.list(&ListParams::default()).await.unwrap();
        cold.push(start.elapsed());
        peak = peak.max(rss_mib());
    }

    // Warm: as a client sees it (kube parses every item), then the body alone.
    let mut items = 0;
    let mut warm = Vec::with_capacity(requests);
    for _ in 0..requests {
        let start = Instant::now();
        items = api.list(&ListParams::default()).await.unwrap().items.len();
        warm.push(start.elapsed());
        peak = peak.max(rss_mib());
    }
    let mut body_bytes = 0;
    let mut raw = Vec::with_capacity(requests);
    for _ in 0..requests {
        let request = http::Request::get(
            "/apis/packages.operators.coreos.com/v1/namespaces/team-a/packagemanifests",
        )
        .body(Vec::new())
        .unwrap();
        let start = Instant::now();
        body_bytes = client.request_text(request).await.unwrap().len();
        raw.push(start.elapsed());
        peak = peak.max(rss_mib());
    }
    let serving = rss_mib();

    // In process, without HTTP: building the manifests, listing them, serializing the list.
    let memo = opcat::package_server::memo::Memo::default();
    let query = opcat::package_server::storage::ListQuery {
        namespace: Some("team-a".into()),
        ..Default::default()
    };
    let start = Instant::now();
    opcat::package_server::storage::list(loaded.as_ref(), &memo, &query);
    let build = start.elapsed();
    let start = Instant::now();
    let list = opcat::package_server::storage::list(loaded.as_ref(), &memo, &query);
    let listed = start.elapsed();
    let start = Instant::now();
    let json = serde_json::to_vec(&list).unwrap();
    let serialize = start.elapsed();
    drop(json);

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p = |latencies: &mut Vec<Duration>, q: f64| {
        latencies.sort();
        ms(percentile(latencies, q))
    };
    println!("| measure | value | target |");
    println!("|---|---|---|");
    println!("| packages per list | {items} | |");
    println!(
        "| list body | {:.1} MB | |",
        body_bytes as f64 / 1_000_000.0
    );
    println!("| requests (cold / warm) | {cold_requests} / {requests} | |");
    println!(
        "| cold list p50 / p99 (manifests built per request) | {:.1} / {:.1} ms | |",
        p(&mut cold, 0.50),
        p(&mut cold, 0.99)
    );
    println!("| list p50 | {:.1} ms | |", p(&mut warm, 0.50));
    println!("| list p99 | {:.1} ms | < 50 ms |", p(&mut warm, 0.99));
    println!(
        "| list p50 / p99, body not parsed | {:.1} / {:.1} ms | |",
        p(&mut raw, 0.50),
        p(&mut raw, 0.99)
    );
    println!(
        "| in process: build / list / serialize | {:.1} / {:.1} / {:.1} ms | |",
        ms(build),
        ms(listed),
        ms(serialize)
    );
    println!("| RSS before loading | {baseline:.0} MiB | |");
    println!("| RSS with the catalogs (no API) | {without_api:.0} MiB | |");
    println!(
        "| RSS after serving (peak) | {serving:.0} MiB ({peak:.0} MiB) | < 10 % more: {:.0} MiB |",
        without_api * 1.1
    );
    println!(
        "| RSS increase | {:+.1} % | < 10 % |",
        (serving / without_api - 1.0) * 100.0
    );
}
