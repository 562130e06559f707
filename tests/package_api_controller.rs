//! The package API's side of a leadership term, against the in-memory API server: the serving
//! certificate goes into a Secret and its CA into the APIService's `caBundle` (that field
//! only), the server serves it and the term's catalogs, the leader's pod gets the serving label
//! (and another pod loses it), a converged term makes no request, and the label goes when the
//! term ends. Every request is allowed by `deploy/rbac.yaml`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod ops_support;
mod package_api_support;

use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::Verb;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use opcat::admin::Health;
use opcat::controller::clock::{ManualClock, SystemClock};
use opcat::controller::context::Settings;
use opcat::controller::leader::term::{Term, manager_term_with};
use opcat::controller::package_api::{PackageApi, SERVING_LABEL};
use opcat::metrics::Metrics;
use opcat::package_server::PackageServer;
use opcat::package_server::reviews::KubeReviewer;
use ops_support::{api_server, assert_allowed_by_rbac, wait_until};
use package_api_support::{ClientPki, b64};
use rustls::pki_types::pem::PemObject;

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

/// The in-memory API server with what a cluster has for the package API: the authentication
/// ConfigMap and front proxy (the fake's own), the APIService without `caBundle`, this
/// replica's pod `opcat-0` and a former leader's pod still labelled.
async fn cluster() -> (fake_apiserver::FakeApiServer, ClientPki) {
    opcat::registry::install_crypto_provider();
    let api = api_server(&[NS, "olm"]).await;
    let client = api.client();
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

    let pki = api.front_proxy();
    let front_proxy = ClientPki {
        ca_pem: pki.ca_cert_pem,
        cert_pem: pki.client_cert_pem,
        key_pem: pki.client_key_pem,
    };
    (api, front_proxy)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_keeps_certificate_ca_bundle_and_serving_label_then_makes_no_requests() {
    let (api, _front_proxy) = cluster().await;
    let client = api.client();
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
    // The leader labels its own pod, then takes the label off the former leader's: wait for
    // both, the order of the two patches is not part of the contract.
    wait_until(
        "the leader serves, labels its pod and unlabels the former leader's",
        TIMEOUT,
        || {
            server.is_publishing()
                && server.has_certificate()
                && labels("opcat-0").contains_key(SERVING_LABEL)
                && !labels("opcat-old").contains_key(SERVING_LABEL)
        },
    )
    .await;
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

/// What kube-aggregator does on each proxied request: trust the APIService's `caBundle` as it
/// is stored now, present the front-proxy certificate, name the user in headers.
async fn as_aggregator(
    api: &fake_apiserver::FakeApiServer,
    address: std::net::SocketAddr,
    front_proxy: &ClientPki,
) -> u16 {
    let stored: APIService = api.get("", "v1.packages.operators.coreos.com").unwrap();
    let bundle = stored.spec.unwrap().ca_bundle.unwrap().0;
    let mut config = kube::Config::new(format!("https://{address}").parse().unwrap());
    config.root_cert = Some(
        rustls::pki_types::CertificateDer::pem_slice_iter(&bundle)
            .map(|der| der.unwrap().to_vec())
            .collect(),
    );
    config.tls_server_name = Some("opcat-package-api.opcat-system.svc".into());
    config.auth_info.client_certificate_data = Some(b64(&front_proxy.cert_pem));
    config.auth_info.client_key_data = Some(b64(&front_proxy.key_pem).into());
    config.headers.push((
        "x-remote-user".parse().unwrap(),
        "system:kube-aggregator".parse().unwrap(),
    ));
    config.headers.push((
        "x-remote-group".parse().unwrap(),
        "system:masters".parse().unwrap(),
    ));
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let request = http::Request::get("/apis/packages.operators.coreos.com/v1")
        .body(Vec::new())
        .unwrap();
    match client.send(request.map(kube::client::Body::from)).await {
        Ok(response) => response.status().as_u16(),
        Err(error) => panic!("the aggregator could not reach the package API: {error}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_near_expiry_rotates_while_the_aggregator_keeps_getting_answers() {
    let (api, front_proxy) = cluster().await;
    let client = api.client();
    let server = PackageServer::new(Arc::new(KubeReviewer::new(client.clone())));
    let listener = opcat::package_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(server.clone().serve(listener, std::future::pending()));
    // The certificate is issued half a day before its refresh is due (by opcat's clock), and
    // the clock then moves to now: the replacement is valid for the clients' real clock too.
    let lead = Duration::from_secs(728 * 24 * 3600 + 12 * 3600);
    let clock = Arc::new(ManualClock::new(
        k8s_openapi::jiff::Timestamp::now()
            .checked_sub(lead)
            .unwrap(),
    ));
    let cache = tempfile::tempdir().unwrap();
    let registry =
        opcat::registry::Registry::new(opcat::registry::RegistryOptions::new(cache.path()))
            .unwrap();
    let mut start = manager_term_with(
        api.client_as("opcat"),
        Arc::new(registry),
        clock.clone(),
        Settings::default(),
        Arc::new(Metrics::new()),
        Arc::new(Health::default()),
        Some(PackageApi {
            server: server.clone(),
            namespace: NS.to_owned(),
            service: "opcat-package-api".to_owned(),
            secret: "opcat-package-api-serving-cert".to_owned(),
            pod: Some("opcat-0".to_owned()),
        }),
    );
    let term = Term::start(&mut start);
    let labelled = || {
        api.get::<Pod>(NS, "opcat-0")
            .unwrap()
            .labels()
            .contains_key(SERVING_LABEL)
    };
    wait_until("serving", TIMEOUT, labelled).await;
    let ca = |api: &fake_apiserver::FakeApiServer| {
        let secret: Secret = api.get(NS, "opcat-package-api-serving-cert").unwrap();
        String::from_utf8(secret.data.unwrap()["ca.crt"].0.clone()).unwrap()
    };
    let first_ca = ca(&api);
    assert_eq!(as_aggregator(&api, address, &front_proxy).await, 200);

    // The aggregator keeps calling while the certificate nears its end and is replaced.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (api, front_proxy, stop) = (api.clone(), front_proxy.clone(), stop.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                answers.push(as_aggregator(&api, address, &front_proxy).await);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            answers
        })
    };
    clock.advance(lead);
    wait_until("a new CA", TIMEOUT, || ca(&api) != first_ca).await;
    let second_ca = ca(&api);
    let stored: APIService = api.get("", "v1.packages.operators.coreos.com").unwrap();
    let bundle = String::from_utf8(stored.spec.unwrap().ca_bundle.unwrap().0).unwrap();
    assert!(
        bundle.contains(second_ca.trim()) && bundle.contains(first_ca.trim()),
        "both CAs trusted for a day"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    let answers = load.await.unwrap();
    assert!(answers.len() > 5, "{answers:?}");
    assert!(answers.iter().all(|code| *code == 200), "{answers:?}");
    term.stop(Duration::from_secs(10), std::future::pending())
        .await;
}
