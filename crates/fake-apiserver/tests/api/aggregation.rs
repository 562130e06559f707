//! API aggregation: kube-aggregator's proxy (`kube-aggregator/pkg/apiserver/handler_proxy.go`),
//! its transport (`controllers/status/remote` `BuildTransportConfig`, client-go
//! `SetAuthProxyHeaders`), the remote availability controller's discovery check
//! (`remote_available_controller.go`), discovery (`handler_apis.go`) and OpenAPI aggregation,
//! against a TLS backend written in the test ([`crate::backend`]).

use std::time::Duration;

use base64::Engine as _;
use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, ApiResource, DynamicObject, ListParams, PostParams};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::json;

use crate::backend::{Backend, GROUP, VERSION, other_ca_pem};
use crate::common::{eventually, status};
use crate::rbac::{binding, role, seed, user};

const NAME: &str = "v1alpha1.wardle.example.com";

fn server() -> FakeApiServer {
    FakeApiServer::builder()
        .user_token("alice-token", "alice", &["team-a"])
        .user_token("bob-token", "bob", &[])
        .apiservice_probe_interval(Duration::from_millis(50))
        .build()
}

/// The Service `default/wardle-api` and the APIService pointing at it with `ca_pem`.
async fn register(server: &FakeApiServer, ca_pem: &str) {
    let services: Api<Service> = Api::namespaced(server.client(), "default");
    let service: Service = serde_json::from_value(json!({"metadata": {"name": "wardle-api"},
        "spec": {"ports": [{"port": 443, "targetPort": 8443}], "selector": {"app": "wardle"}}}))
    .unwrap();
    services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    let api_services: Api<APIService> = Api::all(server.client());
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let apiservice: APIService = serde_json::from_value(json!({"metadata": {"name": NAME},
        "spec": {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 1000, "versionPriority": 15,
                 "service": {"namespace": "default", "name": "wardle-api"}, "caBundle": ca}})).unwrap();
    api_services
        .create(&PostParams::default(), &apiservice)
        .await
        .unwrap();
}

fn available(server: &FakeApiServer) -> (String, String, String) {
    let a: APIService = server.get("", NAME).unwrap();
    let c = a
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Available")
        .unwrap();
    (
        c.status,
        c.reason.unwrap_or_default(),
        c.message.unwrap_or_default(),
    )
}

fn flunders(client: kube::Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: GROUP.into(),
        version: VERSION.into(),
        api_version: format!("{GROUP}/{VERSION}"),
        kind: "Flunder".into(),
        plural: "flunders".into(),
    };
    Api::namespaced_with(client, ns, &ar)
}

/// A backend registered and probed: `Available=True` (`Passed`).
async fn running(server: &FakeApiServer) -> Backend {
    let backend = Backend::start(&server.front_proxy().ca_cert_pem).await;
    register(server, &backend.ca_pem).await;
    server.set_service_endpoint("default", "wardle-api", backend.addr);
    server.probe_api_services().await;
    assert_eq!(available(server).0, "True", "{:?}", available(server));
    backend
}

/// An authorized caller's request reaches the backend over TLS with the front-proxy client
/// certificate, its identity in `X-Remote-User`/`X-Remote-Group`/`X-Remote-Extra-*` and
/// without its `Authorization`; the backend's answer comes back as is.
#[tokio::test]
async fn callers_reach_the_backend_with_their_identity() {
    let server = server();
    let backend = running(&server).await;
    seed(
        &server,
        role(
            "",
            "flunder-reader",
            json!([{"verbs": ["list"], "apiGroups": [GROUP], "resources": ["flunders"]}]),
        ),
    );
    seed(
        &server,
        binding(
            "default",
            "alice-flunders",
            ("ClusterRole", "flunder-reader"),
            user("alice"),
        ),
    );
    let list = flunders(server.client_with_token("alice-token"), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("for-alice"));
    let seen = backend.requests_from_callers();
    let request = seen.last().unwrap();
    let header = |name: &str| -> Vec<&str> {
        request
            .headers
            .get_all(name)
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect()
    };
    assert_eq!(
        request.path,
        format!("/apis/{GROUP}/{VERSION}/namespaces/default/flunders")
    );
    assert_eq!(header("x-remote-user"), ["alice"]);
    assert_eq!(header("x-remote-group"), ["team-a", "system:authenticated"]);
    assert!(
        header("authorization").is_empty(),
        "the caller's token stays with the fake"
    );
    let client_cert =
        CertificateDer::from_pem_slice(server.front_proxy().client_cert_pem.as_bytes()).unwrap();
    assert_eq!(request.client_cert.as_deref(), Some(client_cert.as_ref()));

    let token = server.service_account_token("default", "default");
    seed(
        &server,
        binding(
            "default",
            "sa-flunders",
            ("ClusterRole", "flunder-reader"),
            json!([{"kind": "ServiceAccount", "name": "default"}]),
        ),
    );
    flunders(server.client_with_token(&token), "default")
        .list(&ListParams::default())
        .await
        .unwrap();
    let seen = backend.requests_from_callers();
    let extra = seen
        .last()
        .unwrap()
        .headers
        .get("x-remote-extra-authentication.kubernetes.io%2fcredential-id");
    assert!(
        extra.is_some_and(|v| v.to_str().unwrap().starts_with("JTI=")),
        "{:?}",
        seen.last()
    );
}

/// A watch is forwarded like any request and its events stream back.
#[tokio::test]
async fn watches_stream_through() {
    use futures::StreamExt as _;
    let server = server();
    let _backend = running(&server).await;
    let api = flunders(server.client(), "default");
    let mut events = api
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    let first = events.next().await.unwrap().unwrap();
    let kube::api::WatchEvent::Added(flunder) = first else {
        panic!("{first:?}")
    };
    assert_eq!(flunder.metadata.name.as_deref(), Some("watched"));
}

/// A caller RBAC does not allow gets 403 from the fake and never reaches the backend.
#[tokio::test]
async fn forbidden_callers_never_reach_the_backend() {
    let server = server();
    let backend = running(&server).await;
    let err = status(
        flunders(server.client_with_token("bob-token"), "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(err.code, 403);
    assert_eq!(
        err.message,
        r#"flunders.wardle.example.com is forbidden: User "bob" cannot list resource "flunders" in API group "wardle.example.com" in the namespace "default""#
    );
    assert!(backend.requests_from_callers().is_empty());
}

/// A `caBundle` that did not sign the backend's certificate fails the TLS handshake: 503
/// (the discovery check does not verify TLS, so the APIService is still `Available`).
#[tokio::test]
async fn a_ca_bundle_mismatch_is_503() {
    let server = server();
    let backend = Backend::start(&server.front_proxy().ca_cert_pem).await;
    register(&server, &other_ca_pem()).await;
    server.set_service_endpoint("default", "wardle-api", backend.addr);
    server.probe_api_services().await;
    assert_eq!(available(&server).0, "True");
    let err = status(
        flunders(server.client(), "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (503, "ServiceUnavailable"));
    assert!(
        err.message
            .starts_with("error trying to reach service: tls:"),
        "{}",
        err.message
    );
    assert!(backend.requests_from_callers().is_empty());
}

/// An endpoint where nothing listens fails the discovery check (`FailedDiscoveryCheck`, the
/// controller's message) and requests get 503 `service unavailable`.
#[tokio::test]
async fn an_unreachable_backend_is_unavailable() {
    let server = server();
    register(&server, &other_ca_pem()).await;
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    server.set_service_endpoint("default", "wardle-api", closed);
    server.probe_api_services().await;
    let (state, reason, message) = available(&server);
    assert_eq!(
        (state.as_str(), reason.as_str()),
        ("False", "FailedDiscoveryCheck")
    );
    let url = format!("https://{closed}/apis/{GROUP}/{VERSION}");
    assert!(
        message.starts_with(&format!("failing or missing response from {url}: ")),
        "{message}"
    );
    let err = status(
        flunders(server.client(), "default")
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (503, "service unavailable")
    );
}

/// The discovery check is made again periodically: a backend answering 500 is
/// `FailedDiscoveryCheck` (`bad status`), then `Passed` once it answers again.
#[tokio::test]
async fn availability_follows_the_probe() {
    let server = server();
    let backend = Backend::start(&server.front_proxy().ca_cert_pem).await;
    backend
        .discovery_status
        .store(500, std::sync::atomic::Ordering::SeqCst);
    register(&server, &backend.ca_pem).await;
    server.set_service_endpoint("default", "wardle-api", backend.addr);
    eventually(Duration::from_secs(10), "FailedDiscoveryCheck", || async {
        available(&server).1 == "FailedDiscoveryCheck"
    })
    .await;
    assert!(
        available(&server).2.ends_with(": 500"),
        "{:?}",
        available(&server)
    );
    backend
        .discovery_status
        .store(200, std::sync::atomic::Ordering::SeqCst);
    eventually(Duration::from_secs(10), "Passed", || async {
        available(&server).1 == "Passed"
    })
    .await;
}

/// Discovery lists the aggregated group (classic and aggregated v2, with the backend's
/// resources), and the OpenAPI documents include the backend's: `/openapi/v2` merged,
/// `/openapi/v3` indexing the group-version whose document comes from the backend.
#[tokio::test]
async fn discovery_and_openapi_include_the_aggregated_group() {
    let server = server();
    let _backend = running(&server).await;
    let client = server.client();
    let discovery = kube::discovery::Discovery::new(client.clone())
        .run()
        .await
        .unwrap();
    let gvk = kube::api::GroupVersionKind::gvk(GROUP, VERSION, "Flunder");
    let (resource, _) = discovery
        .resolve_gvk(&gvk)
        .expect("Flunder in classic discovery");
    assert_eq!(resource.plural, "flunders");
    let aggregated = kube::discovery::Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    assert!(
        aggregated.resolve_gvk(&gvk).is_some(),
        "Flunder in aggregated discovery"
    );

    let get = |path: &str| http::Request::get(path).body(Vec::new()).unwrap();
    let v2: serde_json::Value = client.request(get("/openapi/v2")).await.unwrap();
    assert!(v2["definitions"]["com.example.wardle.v1alpha1.Flunder"].is_object());
    let index: serde_json::Value = client.request(get("/openapi/v3")).await.unwrap();
    let url = index["paths"][format!("apis/{GROUP}/{VERSION}")]["serverRelativeURL"]
        .as_str()
        .unwrap();
    assert_eq!(
        url,
        format!("/openapi/v3/apis/{GROUP}/{VERSION}?hash=ABC123")
    );
    let doc: serde_json::Value = client.request(get(url)).await.unwrap();
    assert_eq!(
        doc["components"]["schemas"]["com.example.wardle.v1alpha1.Flunder"]["description"],
        "A flunder."
    );
}

/// The front-proxy settings are published in `kube-system/extension-apiserver-authentication`,
/// readable by whoever is bound to `extension-apiserver-authentication-reader`.
#[tokio::test]
async fn the_front_proxy_configmap_is_published() {
    let server = server();
    let token = server.service_account_token("default", "default");
    seed(
        &server,
        binding(
            "kube-system",
            "wardle-auth-reader",
            ("Role", "extension-apiserver-authentication-reader"),
            json!([{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]),
        ),
    );
    let api: Api<ConfigMap> = Api::namespaced(server.client_with_token(&token), "kube-system");
    let cm = api.get("extension-apiserver-authentication").await.unwrap();
    let data = cm.data.unwrap();
    let pki = server.front_proxy();
    assert_eq!(data["requestheader-client-ca-file"], pki.ca_cert_pem);
    assert_eq!(data["client-ca-file"], pki.client_ca_pem);
    assert_eq!(
        data["requestheader-allowed-names"],
        r#"["front-proxy-client"]"#
    );
    assert_eq!(
        data["requestheader-username-headers"],
        r#"["X-Remote-User"]"#
    );
    assert_eq!(data["requestheader-group-headers"], r#"["X-Remote-Group"]"#);
    assert_eq!(
        data["requestheader-extra-headers-prefix"],
        r#"["X-Remote-Extra-"]"#
    );
    assert_eq!(
        status(api.list(&ListParams::default()).await).code,
        403,
        "only that ConfigMap"
    );
}
