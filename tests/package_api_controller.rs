//! The package API's side of a leadership term, against the in-memory API server: the serving
//! certificate goes into a Secret and its CA into the APIService's `caBundle` (that field
//! only), the server serves it and the term's catalogs, the leader's pod gets the serving label
//! (and another pod loses it), a converged term makes no request, and the label goes when the
//! term ends. Every request is allowed by `deploy/rbac.yaml`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod ops_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::Verb;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use opcat::admin::Health;
use opcat::controller::clock::SystemClock;
use opcat::controller::context::Settings;
use opcat::controller::leader::term::{Term, manager_term_with};
use opcat::controller::package_api::{PackageApi, SERVING_LABEL};
use opcat::metrics::Metrics;
use opcat::package_server::PackageServer;
use opcat::package_server::reviews::KubeReviewer;
use ops_support::{api_server, assert_allowed_by_rbac, wait_until};

const TIMEOUT: Duration = Duration::from_secs(60);
const NS: &str = "opcat-system";

fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(NS.to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_keeps_certificate_ca_bundle_and_serving_label_then_makes_no_requests() {
    opcat::registry::install_crypto_provider();
    let api = api_server(&[NS, "olm"]).await;
    let client = api.client();
    let front_proxy_ca = opcat::certificates::issue(
        &opcat::certificates::ServiceIdentity {
            service: "front-proxy".into(),
            namespace: "kube-system".into(),
        },
        k8s_openapi::jiff::Timestamp::now(),
    )
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), "kube-system")
        .create(
            &PostParams::default(),
            &ConfigMap {
                metadata: ObjectMeta {
                    name: Some("extension-apiserver-authentication".into()),
                    ..ObjectMeta::default()
                },
                data: Some(BTreeMap::from([
                    (
                        "requestheader-client-ca-file".to_owned(),
                        front_proxy_ca.ca_pem().to_owned(),
                    ),
                    (
                        "requestheader-allowed-names".to_owned(),
                        r#"["front-proxy-client"]"#.to_owned(),
                    ),
                    (
                        "requestheader-username-headers".to_owned(),
                        r#"["X-Remote-User"]"#.to_owned(),
                    ),
                    (
                        "requestheader-group-headers".to_owned(),
                        r#"["X-Remote-Group"]"#.to_owned(),
                    ),
                    (
                        "requestheader-extra-headers-prefix".to_owned(),
                        r#"["X-Remote-Extra-"]"#.to_owned(),
                    ),
                ])),
                ..ConfigMap::default()
            },
        )
        .await
        .unwrap();
    let api_services: Api<APIService> = Api::all(client.clone());
    api_services
        .create(
            &PostParams::default(),
            &APIService {
                metadata: ObjectMeta {
                    name: Some("v1.packages.operators.coreos.com".into()),
                    ..ObjectMeta::default()
                },
                spec: Some(APIServiceSpec {
                    group: Some("packages.operators.coreos.com".into()),
                    version: Some("v1".into()),
                    group_priority_minimum: 2000,
                    version_priority: 15,
                    service: Some(ServiceReference {
                        name: Some("opcat-package-api".into()),
                        namespace: Some(NS.into()),
                        port: Some(443),
                    }),
                    ..APIServiceSpec::default()
                }),
                ..APIService::default()
            },
        )
        .await
        .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    pods.create(&PostParams::default(), &pod("opcat-0", &[]))
        .await
        .unwrap();
    // A former leader that could not remove its label.
    pods.create(
        &PostParams::default(),
        &pod("opcat-old", &[(SERVING_LABEL, "serving")]),
    )
    .await
    .unwrap();

    let server = PackageServer::new(Arc::new(KubeReviewer::new(client.clone())));
    let package_api = PackageApi {
        server: server.clone(),
        namespace: NS.to_owned(),
        service: "opcat-package-api".to_owned(),
        secret: "opcat-package-api-serving-cert".to_owned(),
        pod: Some("opcat-0".to_owned()),
    };
    let cache = tempfile::tempdir().unwrap();
    let registry =
        opcat::registry::Registry::new(opcat::registry::RegistryOptions::new(cache.path()))
            .unwrap();
    let mut start = manager_term_with(
        api.client_as("opcat"),
        Arc::new(registry),
        Arc::new(SystemClock),
        Settings::default(),
        Arc::new(Metrics::new()),
        Arc::new(Health::default()),
        Some(package_api),
    );
    api.reset_counts();
    let term = Term::start(&mut start);

    let labels = |name: &str| api.get::<Pod>(NS, name).unwrap().labels().clone();
    wait_until("the leader serves and labels its pod", TIMEOUT, || {
        server.is_publishing()
            && server.has_certificate()
            && labels("opcat-0").contains_key(SERVING_LABEL)
    })
    .await;
    assert!(
        !labels("opcat-old").contains_key(SERVING_LABEL),
        "the former leader's label is gone"
    );
    assert!(server.has_auth_config());
    let secret: Secret = api.get(NS, "opcat-package-api-serving-cert").unwrap();
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    assert_eq!(secret.labels()["opcat.dev/managed"], "true");
    let ca = String::from_utf8(secret.data.as_ref().unwrap()["ca.crt"].0.clone()).unwrap();
    let stored: APIService = api.get("", "v1.packages.operators.coreos.com").unwrap();
    let bundle =
        String::from_utf8(stored.spec.as_ref().unwrap().ca_bundle.clone().unwrap().0).unwrap();
    assert!(bundle.contains(ca.trim()));
    assert_eq!(
        stored.spec.unwrap().group_priority_minimum,
        2000,
        "only caBundle is opcat's"
    );
    assert_allowed_by_rbac(&api.request_counts());

    // Converged: the watches are all it reads.
    tokio::time::sleep(Duration::from_secs(2)).await;
    api.reset_counts();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests: Vec<String> = api
        .request_log_of("opcat")
        .into_iter()
        .filter(|request| request.key.verb != Verb::Watch)
        .map(|request| request.describe())
        .collect();
    assert!(
        requests.is_empty(),
        "a converged term sent:\n{}",
        requests.join("\n")
    );

    term.stop(Duration::from_secs(10), std::future::pending())
        .await;
    wait_until("the label goes with the term", TIMEOUT, || {
        !labels("opcat-0").contains_key(SERVING_LABEL)
    })
    .await;
    assert!(
        !server.is_publishing(),
        "a replica that stopped leading serves no catalogs"
    );
}
