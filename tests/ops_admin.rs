//! The admin server in front of a real manager (in-process, against the in-memory API server):
//! `/readyz` turns ready only once every watch has listed, `/metrics` parses with the reference
//! OpenMetrics parser and carries every series operators alert on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ops_support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_apiserver::{FakeApiServer, Fault, Verb};
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::runtime::controller::Action;
use opcat::admin::{AdminServer, Health, METRICS_CONTENT_TYPE};
use opcat::controller::leader::term::Term;
use opcat::failure::ReconcileFailure;
use opcat::metrics::{Metrics, PullResult, controllers};
use ops_support::{Family, api_server, http_get, parse_openmetrics};

const TIMEOUT: Duration = Duration::from_secs(60);

struct Admin {
    addr: SocketAddr,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    _server: AdminServer,
    _cache: tempfile::TempDir,
    term: Option<Term>,
}

/// The admin server and a manager term on `api`, as `opcat run` wires them.
async fn start(api: &FakeApiServer) -> Admin {
    let health = Arc::new(Health::default());
    let metrics = Arc::new(Metrics::new());
    let server = AdminServer::start(
        "127.0.0.1:0".parse().unwrap(),
        health.clone(),
        metrics.clone(),
    )
    .await
    .expect("admin server");
    let (mut factory, cache) =
        ops_support::manager_factory(api.client(), metrics.clone(), health.clone());
    let term = Term::start(&mut factory);
    Admin {
        addr: server.local_addr(),
        health,
        metrics,
        _server: server,
        _cache: cache,
        term: Some(term),
    }
}

impl Admin {
    async fn get(&self, path: &str) -> (u16, String, String) {
        http_get(self.addr, path).await
    }

    /// Polls `path` until its status is `status`; returns the body.
    async fn wait_status(&self, path: &str, status: u16) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let (got, _, body) = self.get(path).await;
            if got == status {
                return body;
            }
            assert!(Instant::now() < deadline, "{path} stayed {got}: {body}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn families(&self) -> BTreeMap<String, Family> {
        let (status, content_type, text) = self.get("/metrics").await;
        assert_eq!(status, 200);
        assert_eq!(content_type, METRICS_CONTENT_TYPE);
        parse_openmetrics(&text)
            .into_iter()
            .map(|family| (family.name.clone(), family))
            .collect()
    }

    async fn stop(&mut self) {
        self.health.shutting_down();
        if let Some(term) = self.term.take() {
            term.stop(Duration::from_secs(10), std::future::pending())
                .await;
        }
    }
}

fn managed_copy(namespace: &str, name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            labels: Some([("opcat.dev/managed".to_owned(), "true".to_owned())].into()),
            ..ObjectMeta::default()
        },
        type_: Some("kubernetes.io/dockerconfigjson".to_owned()),
        data: Some(
            [(
                ".dockerconfigjson".to_owned(),
                k8s_openapi::ByteString(br#"{"auths":{}}"#.to_vec()),
            )]
            .into(),
        ),
        ..Secret::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_turns_ready_only_after_every_watch_has_listed() {
    let api = api_server(&["olm"]).await;
    // One watch cannot list: the manager must not claim to be ready.
    api.inject_failure(
        Fault::new(503)
            .verb(Verb::List)
            .resource("subscriptions")
            .times(usize::MAX),
    );
    let mut admin = start(&api).await;

    assert_eq!(admin.get("/livez").await.0, 200);
    let (status, _, body) = admin.get("/readyz").await;
    assert_eq!(status, 503);
    assert!(body.contains("waiting for every watch"), "{body}");
    // Every other watch lists meanwhile; still not ready.
    ops_support::wait_until("the other watches list", TIMEOUT, || {
        api.request_counts().get(Verb::List, "catalogsources") > 0
            && api.request_counts().get(Verb::List, "subscriptions") > 1
    })
    .await;
    let (status, _, body) = admin.get("/readyz").await;
    assert_eq!(status, 503, "{body}");

    api.clear_failures();
    let body = admin.wait_status("/readyz", 200).await;
    assert!(body.contains("ready: reconciling"), "{body}");

    // Shutdown turns readiness off at once; liveness stays.
    admin.stop().await;
    let (status, _, body) = admin.get("/readyz").await;
    assert_eq!(status, 503);
    assert!(body.contains("shutting down"), "{body}");
    assert_eq!(admin.get("/livez").await.0, 200);
}

#[derive(Debug, thiserror::Error)]
#[error("conflict writing Secret olm/registry-creds: the object has been modified")]
struct Conflict;

impl ReconcileFailure for Conflict {
    fn kind(&self) -> &'static str {
        "api_conflict"
    }
    fn is_transient(&self) -> bool {
        true
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_as_openmetrics_and_carry_every_series() {
    let api = api_server(&["olm", "operators"]).await;
    api.seed(&managed_copy("operators", "opcat-registry-creds"))
        .expect("seed copy");
    let mut admin = start(&api).await;
    admin.wait_status("/readyz", 200).await;
    let metrics = admin.metrics.clone();

    // What the reconcilers report.
    metrics.set_leader(true);
    let ok: Result<Action, Conflict> = metrics
        .instrument(controllers::CATALOG_SOURCE, async {
            Ok(Action::requeue(Duration::from_secs(60)))
        })
        .await;
    assert!(ok.is_ok());
    let failed = metrics
        .instrument(controllers::CSV, async { Err::<Action, _>(Conflict) })
        .await;
    assert!(failed.is_err());
    metrics.catalog_pulled(4096, PullResult::Pulled);
    let now = Timestamp::now();
    metrics.rotation_observed("olm", "registry-creds", now);
    metrics.copies_written(2);
    metrics.rotation_completed(
        "olm",
        "registry-creds",
        now.checked_add(SignedDuration::from_millis(1500)).unwrap(),
    );

    let families = admin.families().await;
    let expect = |name: &str, type_: &str| {
        let family = families
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {:?}", families.keys()));
        assert_eq!(family.type_, type_, "{name}");
        assert!(!family.help.is_empty(), "{name} has help");
        family
    };
    let value =
        |family: &Family, sample: &str, labels: &[(&str, &str)]| family.value(sample, labels);

    let reconciles = expect("opcat_reconcile", "counter");
    let by_controller: BTreeSet<&str> = reconciles
        .samples
        .iter()
        .filter_map(|s| s.labels.get("controller").map(String::as_str))
        .collect();
    assert_eq!(by_controller, controllers::ALL.into_iter().collect());
    assert_eq!(
        value(
            reconciles,
            "opcat_reconcile_total",
            &[("controller", "catalogsource")]
        ),
        1.0
    );
    let errors = expect("opcat_reconcile_errors", "counter");
    assert_eq!(
        value(
            errors,
            "opcat_reconcile_errors_total",
            &[
                ("controller", "clusterserviceversion"),
                ("error_kind", "api_conflict")
            ]
        ),
        1.0
    );
    let durations = expect("opcat_reconcile_duration_seconds", "histogram");
    assert_eq!(durations.unit, "seconds");
    assert_eq!(
        value(
            durations,
            "opcat_reconcile_duration_seconds_count",
            &[("controller", "clusterserviceversion")]
        ),
        1.0
    );
    let queue = expect("opcat_queue_depth", "gauge");
    assert_eq!(
        value(
            queue,
            "opcat_queue_depth",
            &[("controller", "subscription")]
        ),
        0.0
    );
    let pulls = expect("opcat_catalog_pulls", "counter");
    assert_eq!(
        value(pulls, "opcat_catalog_pulls_total", &[("result", "pulled")]),
        1.0
    );
    assert_eq!(
        value(pulls, "opcat_catalog_pulls_total", &[("result", "failed")]),
        0.0
    );
    let bytes = expect("opcat_catalog_pull_bytes", "counter");
    assert_eq!(bytes.unit, "bytes");
    assert_eq!(value(bytes, "opcat_catalog_pull_bytes_total", &[]), 4096.0);
    for gauge in [
        "opcat_catalog_index_catalogs",
        "opcat_catalog_index_packages",
        "opcat_catalog_index_bundles",
    ] {
        assert_eq!(
            value(expect(gauge, "gauge"), gauge, &[]),
            0.0,
            "nothing loaded"
        );
    }
    assert_eq!(
        value(expect("opcat_leader", "gauge"), "opcat_leader", &[]),
        1.0
    );
    // Sampled from the manager's store of copies (label-selected watch).
    assert_eq!(
        value(
            expect("opcat_pull_secret_copies", "gauge"),
            "opcat_pull_secret_copies",
            &[]
        ),
        1.0
    );
    assert_eq!(
        value(
            expect("opcat_pull_secret_copy_writes", "counter"),
            "opcat_pull_secret_copy_writes_total",
            &[]
        ),
        2.0
    );
    assert_eq!(
        value(
            expect("opcat_pull_secret_rotations", "counter"),
            "opcat_pull_secret_rotations_total",
            &[]
        ),
        1.0
    );
    assert_eq!(
        value(
            expect("opcat_pull_secret_rotations_pending", "gauge"),
            "opcat_pull_secret_rotations_pending",
            &[]
        ),
        0.0
    );
    let lag = expect("opcat_pull_secret_propagation_lag_seconds", "histogram");
    assert_eq!(
        value(lag, "opcat_pull_secret_propagation_lag_seconds_sum", &[]),
        1.5
    );
    expect("opcat_build", "info");

    // Labels are bounded: the error's message is nowhere in the output.
    let (_, _, text) = admin.get("/metrics").await;
    assert!(
        !text.contains("modified"),
        "an error message leaked into a label"
    );

    admin.stop().await;
    // Once the manager is gone, sampled gauges read zero.
    drop(admin.term.take());
    let families = admin.families().await;
    assert_eq!(
        value(
            &families["opcat_pull_secret_copies"],
            "opcat_pull_secret_copies",
            &[]
        ),
        0.0
    );
}

/// `docs/operating.md`'s metric table names every series `/metrics` serves, and only those.
#[tokio::test]
async fn the_operating_guide_lists_exactly_the_metrics_served() {
    let metrics = Metrics::new();
    // Families with labels only known at the first observation appear once used.
    let _ = metrics
        .instrument(controllers::CSV, async { Err::<Action, _>(Conflict) })
        .await;
    let text = metrics.encode();
    let served: BTreeSet<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("# TYPE "))
        .map(|line| match line.split_once(' ') {
            Some((name, "counter")) => format!("{name}_total"),
            Some((name, "info")) => format!("{name}_info"),
            Some((name, _)) => name.to_owned(),
            None => panic!("malformed TYPE line {line:?}"),
        })
        .collect();
    let guide = std::fs::read_to_string(ops_support::repo_root().join("docs/operating.md"))
        .expect("docs/operating.md");
    let documented: BTreeSet<String> = guide
        .lines()
        .filter(|line| line.starts_with("| `opcat_"))
        .filter_map(|line| line.split('|').nth(1))
        .flat_map(|cell| cell.split('`'))
        .filter(|word| word.starts_with("opcat_"))
        .map(str::to_owned)
        .collect();
    assert_eq!(documented, served);
}
