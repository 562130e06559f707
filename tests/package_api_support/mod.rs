//! Harness for the package API server tests: catalogs loaded from FBC text, a front proxy (CA
//! and client certificate, as kube-aggregator presents them), a reviewer answering TokenReviews
//! and SubjectAccessReviews from a table, the server on a TLS port, and kube clients that call
//! it as the aggregator or as users with tokens do.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod raw_http;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use base64::Engine;
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::authorization::v1::SubjectAccessReviewSpec;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ApiResource, DynamicObject};
use opcat::api::CatalogSource;
use opcat::certificates::{Material, ServiceIdentity};
use opcat::fbc::Catalog;
use opcat::package_server::PackageServer;
use opcat::package_server::auth_config::AuthConfig;
use opcat::package_server::reviews::{AccessDecision, ReviewError, Reviewer, UserInfo};
use opcat::package_server::storage::{Catalogs, Served};
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair};

/// The Service the serving certificate is for.
pub fn identity() -> ServiceIdentity {
    ServiceIdentity {
        service: "opcat-package-api".to_owned(),
        namespace: "opcat-system".to_owned(),
    }
}

/// The name kube-aggregator verifies the certificate for.
pub const SERVER_NAME: &str = "opcat-package-api.opcat-system.svc";

/// The icon of the test packages.
pub const ICON_SVG: &str = "<svg xmlns=\"http://www.w3.org/2000/svg\"/>";

/// A package described by `olm.csv.metadata`.
pub fn metadata_package(name: &str, provider: &str) -> String {
    format!(
        r#"---
schema: olm.package
name: {name}
defaultChannel: stable
description: {name} from the package
icon: {{base64data: {icon}, mediatype: image/svg+xml}}
---
schema: olm.channel
package: {name}
name: stable
entries:
  - name: {name}.v1.0.0
---
schema: olm.bundle
package: {name}
name: {name}.v1.0.0
image: registry.example.com/{name}-bundle:v1.0.0
relatedImages:
  - {{name: operator, image: registry.example.com/{name}:v1}}
properties:
  - type: olm.package
    value: {{packageName: {name}, version: 1.0.0}}
  - type: olm.csv.metadata
    value:
      displayName: {name}
      provider: {{name: {provider}}}
      installModes: [{{type: AllNamespaces, supported: true}}]
"#,
        icon = b64(ICON_SVG),
    )
}

/// `ApiResource` of PackageManifests.
pub fn resource() -> ApiResource {
    ApiResource {
        group: "packages.operators.coreos.com".into(),
        version: "v1".into(),
        api_version: "packages.operators.coreos.com/v1".into(),
        kind: "PackageManifest".into(),
        plural: "packagemanifests".into(),
    }
}

/// A CatalogSource object.
pub fn catalog_source(namespace: &str, name: &str, display: &str, priority: i64) -> CatalogSource {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "CatalogSource",
        "metadata": {
            "name": name, "namespace": namespace,
            "labels": {"team": "platform"},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"sourceType": "grpc", "image": "registry.example.com/c:1",
                 "displayName": display, "publisher": "Example", "priority": priority},
    }))
    .unwrap()
}

/// A catalog parsed from FBC YAML text.
pub fn catalog(yaml: &str) -> Arc<Catalog> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("catalog.yaml"), yaml).unwrap();
    Arc::new(Catalog::load(dir.path()).unwrap())
}

/// Base64 of `text`.
pub fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// Catalogs a test can change while the server runs (a catalog re-push).
#[derive(Default)]
pub struct TestCatalogs {
    pub served: Mutex<Vec<(CatalogSource, Arc<Catalog>)>>,
}

impl TestCatalogs {
    pub fn set(
        &self,
        namespace: &str,
        name: &str,
        display: &str,
        priority: i64,
        catalog: Arc<Catalog>,
    ) {
        let mut served = self.served.lock().unwrap();
        served.retain(|(source, _)| {
            !(source.metadata.namespace.as_deref() == Some(namespace)
                && source.metadata.name.as_deref() == Some(name))
        });
        served.push((catalog_source(namespace, name, display, priority), catalog));
    }
}

impl Catalogs for TestCatalogs {
    fn in_namespace(&self, namespace: &str) -> Vec<Served> {
        self.all()
            .into_iter()
            .filter(|served| served.source.metadata.namespace.as_deref() == Some(namespace))
            .collect()
    }

    fn all(&self) -> Vec<Served> {
        self.served
            .lock()
            .unwrap()
            .iter()
            .map(|(source, catalog)| Served {
                source: Arc::new(source.clone()),
                catalog: catalog.clone(),
            })
            .collect()
    }

    fn global_namespace(&self) -> &str {
        "olm"
    }
}

/// Answers reviews from tables: tokens to users, and `(user, verb, namespace)` grants.
#[derive(Default)]
pub struct TableReviewer {
    pub tokens: Mutex<HashMap<String, UserInfo>>,
    /// `(user, verb, namespace or "")`; verb `*` allows every verb.
    pub grants: Mutex<Vec<(String, String, String)>>,
    pub token_reviews: Mutex<usize>,
    pub access_reviews: Mutex<usize>,
}

impl TableReviewer {
    pub fn user(&self, token: &str, name: &str, groups: &[&str]) {
        self.tokens.lock().unwrap().insert(
            token.to_owned(),
            UserInfo {
                name: name.to_owned(),
                groups: groups.iter().map(|g| (*g).to_owned()).collect(),
                ..UserInfo::default()
            },
        );
    }

    pub fn grant(&self, user: &str, verb: &str, namespace: &str) {
        self.grants
            .lock()
            .unwrap()
            .push((user.to_owned(), verb.to_owned(), namespace.to_owned()));
    }
}

impl Reviewer for TableReviewer {
    fn token_review(&self, token: &str) -> BoxFuture<'_, Result<Option<UserInfo>, ReviewError>> {
        *self.token_reviews.lock().unwrap() += 1;
        let user = self.tokens.lock().unwrap().get(token).cloned();
        async move { Ok(user) }.boxed()
    }

    fn access_review(
        &self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'_, Result<AccessDecision, ReviewError>> {
        *self.access_reviews.lock().unwrap() += 1;
        let user = spec.user.unwrap_or_default();
        let (verb, namespace) = match (&spec.resource_attributes, &spec.non_resource_attributes) {
            (Some(resource), _) => (
                resource.verb.clone().unwrap_or_default(),
                resource.namespace.clone().unwrap_or_default(),
            ),
            (None, Some(path)) => (path.verb.clone().unwrap_or_default(), String::new()),
            _ => (String::new(), String::new()),
        };
        let allowed = self.grants.lock().unwrap().iter().any(|(u, v, n)| {
            *u == user && (*v == verb || v == "*") && (n.is_empty() || *n == namespace)
        });
        async move {
            Ok(AccessDecision {
                allowed,
                reason: if allowed {
                    String::new()
                } else {
                    "no RBAC policy matched".to_owned()
                },
            })
        }
        .boxed()
    }
}

/// A CA and a client certificate it signed for `common_name` (organization `groups`).
#[derive(Clone)]
pub struct ClientPki {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

pub fn client_pki(common_name: &str, groups: &[&str]) -> ClientPki {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(DnType::CommonName, format!("{common_name}-ca"));
    let ca_key = KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
    leaf.distinguished_name
        .push(DnType::CommonName, common_name);
    for group in groups {
        leaf.distinguished_name
            .push(DnType::OrganizationName, *group);
    }
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    ClientPki {
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// A running package API server and what it was set up with.
pub struct Running {
    pub server: Arc<PackageServer>,
    pub address: SocketAddr,
    pub catalogs: Arc<TestCatalogs>,
    pub reviewer: Arc<TableReviewer>,
    pub front_proxy: ClientPki,
    pub material: Material,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Starts a server serving `catalogs`, its front proxy's CA in the authentication
/// configuration (allowed name `front-proxy-client`).
pub async fn start(catalogs: Arc<TestCatalogs>) -> Running {
    let mut running = serve(catalogs.clone()).await;
    running.catalogs = catalogs;
    running
}

/// [`start`] for any catalogs (a running manager's).
pub async fn serve(catalogs: Arc<dyn Catalogs>) -> Running {
    opcat::registry::install_crypto_provider();
    let reviewer = Arc::new(TableReviewer::default());
    let server = PackageServer::new(reviewer.clone());
    let front_proxy = client_pki("front-proxy-client", &[]);
    server.set_auth_config(
        AuthConfig::from_data(&BTreeMap::from([
            (
                "requestheader-client-ca-file".to_owned(),
                front_proxy.ca_pem.clone(),
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
        ]))
        .unwrap(),
    );
    let material = opcat::certificates::issue(&identity(), Timestamp::now()).unwrap();
    server
        .set_certificate(material.cert_pem(), material.key_pem())
        .unwrap();
    server.publish(catalogs);
    let listener = opcat::package_server::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(server.clone().serve(listener, stopped.map(|_| ())));
    Running {
        server,
        address,
        catalogs: Arc::default(),
        reviewer,
        front_proxy,
        material,
        stop: Some(stop),
    }
}

impl Running {
    fn config(&self, ca_pems: &[&str]) -> kube::Config {
        let mut config = kube::Config::new(format!("https://{}", self.address).parse().unwrap());
        config.root_cert = Some(
            ca_pems
                .iter()
                .flat_map(|pem| {
                    rustls::pki_types::pem::PemObject::pem_slice_iter(pem.as_bytes())
                        .map(
                            |der: Result<rustls::pki_types::CertificateDer<'static>, _>| {
                                der.unwrap().to_vec()
                            },
                        )
                        .collect::<Vec<_>>()
                })
                .collect(),
        );
        config.tls_server_name = Some(SERVER_NAME.to_owned());
        config.default_namespace = "default".to_owned();
        // A 503 is an answer here (a replica without catalogs), not a reason to retry.
        config.default_retry = false;
        config
    }

    /// A client calling as kube-aggregator does: the front-proxy certificate and the caller's
    /// identity in headers (`None`: no headers).
    pub fn as_aggregator(&self, user: Option<(&str, &[&str])>) -> kube::Client {
        self.with_certificate(&self.front_proxy, user)
    }

    /// A client presenting `pki`'s certificate, with identity headers when `user` is set.
    pub fn with_certificate(&self, pki: &ClientPki, user: Option<(&str, &[&str])>) -> kube::Client {
        let mut config = self.config(&[self.material.ca_pem()]);
        config.auth_info.client_certificate_data = Some(b64(&pki.cert_pem));
        config.auth_info.client_key_data = Some(b64(&pki.key_pem).into());
        add_identity_headers(&mut config, user);
        kube::Client::try_from(config).unwrap()
    }

    /// A client calling directly with a bearer token (and, to try spoofing, identity headers).
    pub fn with_token(&self, token: Option<&str>, user: Option<(&str, &[&str])>) -> kube::Client {
        let mut config = self.config(&[self.material.ca_pem()]);
        if let Some(token) = token {
            config.auth_info.token = Some(token.to_owned().into());
        }
        add_identity_headers(&mut config, user);
        kube::Client::try_from(config).unwrap()
    }

    /// A client trusting `ca_pems` (for rotation).
    pub fn trusting(&self, ca_pems: &[&str]) -> kube::Client {
        let mut config = self.config(ca_pems);
        config.auth_info.client_certificate_data = Some(b64(&self.front_proxy.cert_pem));
        config.auth_info.client_key_data = Some(b64(&self.front_proxy.key_pem).into());
        add_identity_headers(&mut config, Some(("admin", &["system:masters"])));
        kube::Client::try_from(config).unwrap()
    }
}

fn add_identity_headers(config: &mut kube::Config, user: Option<(&str, &[&str])>) {
    if let Some((name, groups)) = user {
        config
            .headers
            .push(("x-remote-user".parse().unwrap(), name.parse().unwrap()));
        for group in groups {
            config
                .headers
                .push(("x-remote-group".parse().unwrap(), group.parse().unwrap()));
        }
    }
}

/// `GET path` with `accept`, returning status and body.
pub async fn get_raw(client: &kube::Client, path: &str, accept: &str) -> (u16, Vec<u8>, String) {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(Vec::new())
        .unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, body, content_type)
}

/// Names of a list's items.
pub fn names(list: &[DynamicObject]) -> Vec<String> {
    list.iter()
        .map(|o| o.metadata.name.clone().unwrap_or_default())
        .collect()
}
