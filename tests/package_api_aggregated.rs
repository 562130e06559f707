//! The package API behind the in-memory API server's aggregation layer, called as kubectl
//! calls it: a `kube::Client` with a user's token to the API server, which authenticates and
//! authorizes the user, then proxies to opcat over TLS (verifying the APIService's
//! `caBundle` for `opcat-package-api.opcat-system.svc`) with its front-proxy certificate and
//! `X-Remote-*` headers; opcat checks the certificate against the cluster's authentication
//! ConfigMap and asks the cluster for a SubjectAccessReview.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod package_api_support;

use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::{
    APIService, APIServiceSpec, ServiceReference,
};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use opcat::package_server::PackageServer;
use opcat::package_server::auth_config::AuthConfig;
use opcat::package_server::reviews::KubeReviewer;
use package_api_support::{TestCatalogs, catalog, identity, names, resource};

fn meta(namespace: Option<&str>, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..ObjectMeta::default()
    }
}

const CATALOG: &str = r#"---
schema: olm.package
name: widget
defaultChannel: stable
---
schema: olm.channel
package: widget
name: stable
entries:
  - name: widget.v1.0.0
---
schema: olm.bundle
package: widget
name: widget.v1.0.0
image: registry.example.com/widget-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: widget, version: 1.0.0}
  - type: olm.csv.metadata
    value: {displayName: Widget, provider: {name: Example}}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_reaches_the_package_api_through_the_aggregator_with_the_users_rights() {
    opcat::registry::install_crypto_provider();
    let api = fake_apiserver::FakeApiServer::builder()
        .user_token("alice-token", "alice", &["developers"])
        .user_token("bob-token", "bob", &["developers"])
        .build();
    let admin = api.client();
    for namespace in ["opcat-system", "olm", "team-a"] {
        Api::<Namespace>::all(admin.clone())
            .create(
                &PostParams::default(),
                &Namespace {
                    metadata: meta(None, namespace),
                    ..Namespace::default()
                },
            )
            .await
            .unwrap();
    }
    // alice may list and get PackageManifests in team-a; bob nothing.
    Api::<Role>::namespaced(admin.clone(), "team-a")
        .create(
            &PostParams::default(),
            &Role {
                metadata: meta(Some("team-a"), "packages"),
                rules: Some(vec![PolicyRule {
                    api_groups: Some(vec!["packages.operators.coreos.com".into()]),
                    resources: Some(vec!["packagemanifests".into()]),
                    verbs: vec!["get".into(), "list".into()],
                    ..PolicyRule::default()
                }]),
            },
        )
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), "team-a")
        .create(
            &PostParams::default(),
            &RoleBinding {
                metadata: meta(Some("team-a"), "packages"),
                role_ref: RoleRef {
                    api_group: "rbac.authorization.k8s.io".into(),
                    kind: "Role".into(),
                    name: "packages".into(),
                },
                subjects: Some(vec![Subject {
                    kind: "User".into(),
                    name: "alice".into(),
                    ..Subject::default()
                }]),
            },
        )
        .await
        .unwrap();

    // opcat's server, with the cluster's authentication ConfigMap and a serving certificate.
    let catalogs = Arc::new(TestCatalogs::default());
    catalogs.set(
        "olm",
        "operatorhub",
        "Community Operators",
        0,
        catalog(CATALOG),
    );
    let server = PackageServer::new(Arc::new(KubeReviewer::new(admin.clone())));
    let config: ConfigMap = api
        .get("kube-system", "extension-apiserver-authentication")
        .unwrap();
    server.set_auth_config(AuthConfig::from_data(&config.data.unwrap_or_default()).unwrap());
    let material =
        opcat::certificates::issue(&identity(), k8s_openapi::jiff::Timestamp::now()).unwrap();
    server
        .set_certificate(material.cert_pem(), material.key_pem())
        .unwrap();
    server.publish(catalogs);
    let listener = opcat::package_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    api.set_service_endpoint(
        "opcat-system",
        "opcat-package-api",
        listener.local_addr().unwrap(),
    );
    tokio::spawn(server.clone().serve(listener, std::future::pending()));
    let service: k8s_openapi::api::core::v1::Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "opcat-package-api", "namespace": "opcat-system"},
        "spec": {"selector": {"opcat.dev/package-api": "serving"},
                 "ports": [{"name": "https", "port": 443, "targetPort": "package-api"}]},
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::Service>::namespaced(admin.clone(), "opcat-system")
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    Api::<APIService>::all(admin.clone())
        .create(
            &PostParams::default(),
            &APIService {
                metadata: meta(None, "v1.packages.operators.coreos.com"),
                spec: Some(APIServiceSpec {
                    group: Some("packages.operators.coreos.com".into()),
                    version: Some("v1".into()),
                    group_priority_minimum: 2000,
                    version_priority: 15,
                    ca_bundle: Some(k8s_openapi::ByteString(material.ca_bundle().into_bytes())),
                    service: Some(ServiceReference {
                        name: Some("opcat-package-api".into()),
                        namespace: Some("opcat-system".into()),
                        port: Some(443),
                    }),
                    ..APIServiceSpec::default()
                }),
                ..APIService::default()
            },
        )
        .await
        .unwrap();
    api.probe_api_services().await;
    let stored: APIService = api.get("", "v1.packages.operators.coreos.com").unwrap();
    let available = stored.status.unwrap().conditions.unwrap_or_default();
    assert!(
        available
            .iter()
            .any(|c| c.type_ == "Available" && c.status == "True"),
        "{available:?}"
    );

    // alice lists through the aggregator: the global catalog's package, in her namespace.
    let alice: Api<DynamicObject> =
        Api::namespaced_with(api.client_with_token("alice-token"), "team-a", &resource());
    let listed = alice.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&listed.items), ["widget"]);
    assert_eq!(
        listed.items[0].metadata.namespace.as_deref(),
        Some("team-a")
    );
    assert_eq!(
        alice.get("widget").await.unwrap().data["status"]["catalogSourceNamespace"],
        "olm"
    );

    // bob is refused; an unknown token is not authenticated.
    let bob: Api<DynamicObject> =
        Api::namespaced_with(api.client_with_token("bob-token"), "team-a", &resource());
    let error = bob.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 403),
        "{error}"
    );
    let nobody: Api<DynamicObject> =
        Api::namespaced_with(api.client_with_token("forged"), "team-a", &resource());
    let error = nobody.list(&ListParams::default()).await.unwrap_err();
    assert!(
        matches!(&error, kube::Error::Api(status) if status.code == 401),
        "{error}"
    );
}
