//! A small aggregated API server for the aggregation tests: HTTPS with a serving certificate
//! for `wardle-api.default.svc` from its own CA, requiring a client certificate signed by the
//! fake's front-proxy CA (as `requestheader-client-ca-file` makes real ones do), recording
//! what it receives.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::json;

pub const GROUP: &str = "wardle.example.com";
pub const VERSION: &str = "v1alpha1";

/// One request as the backend saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub headers: http::HeaderMap,
    /// The client certificate presented in the TLS handshake.
    pub client_cert: Option<Vec<u8>>,
}

pub struct Backend {
    pub addr: SocketAddr,
    /// PEM of the CA that signed the serving certificate (the APIService's `caBundle`).
    pub ca_pem: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Status the discovery document is answered with (200 by default).
    pub discovery_status: Arc<AtomicU16>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn ca() -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "wardle CA");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign];
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), Issuer::new(params, key))
}

/// A CA PEM that signed nothing the backend presents (a wrong `caBundle`).
pub fn other_ca_pem() -> String {
    ca().0
}

fn answer(req: &Request<hyper::body::Incoming>, discovery_status: u16) -> (u16, serde_json::Value) {
    let path = req.uri().path();
    let discovery = format!("/apis/{GROUP}/{VERSION}");
    if path == discovery {
        let list = json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/{VERSION}"),
        "resources": [
            {"name": "flunders", "singularName": "flunder", "namespaced": true, "kind": "Flunder",
             "verbs": ["get", "list"], "shortNames": ["fl"]},
            {"name": "flunders/status", "singularName": "", "namespaced": true, "kind": "Flunder", "verbs": ["get"]},
        ]});
        return (discovery_status, list);
    }
    let watch = req.uri().query().is_some_and(|q| q.contains("watch=true"));
    if path.ends_with("/flunders") && watch {
        return (
            200,
            json!({"type": "ADDED", "object": {"kind": "Flunder",
            "apiVersion": format!("{GROUP}/{VERSION}"), "metadata": {"name": "watched", "resourceVersion": "7"}}}),
        );
    }
    if path.starts_with(&format!("{discovery}/namespaces/")) && path.ends_with("/flunders") {
        let ns = path.split('/').nth(5).unwrap_or_default();
        let user = req
            .headers()
            .get("x-remote-user")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        return (
            200,
            json!({"kind": "FlunderList", "apiVersion": format!("{GROUP}/{VERSION}"), "metadata": {},
            "items": [{"kind": "Flunder", "apiVersion": format!("{GROUP}/{VERSION}"),
                       "metadata": {"name": format!("for-{user}"), "namespace": ns}}]}),
        );
    }
    match path {
        "/openapi/v2" => (
            200,
            json!({"swagger": "2.0",
            "paths": {format!("{discovery}/flunders"): {"get": {"operationId": "listFlunders"}}},
            "definitions": {"com.example.wardle.v1alpha1.Flunder": {"type": "object"}}}),
        ),
        "/openapi/v3" => (
            200,
            json!({"paths": {format!("apis/{GROUP}/{VERSION}"):
            {"serverRelativeURL": format!("/openapi/v3/apis/{GROUP}/{VERSION}?hash=ABC123")}}}),
        ),
        p if p == format!("/openapi/v3/apis/{GROUP}/{VERSION}") => (
            200,
            json!({"openapi": "3.0.0",
            "components": {"schemas": {"com.example.wardle.v1alpha1.Flunder": {"type": "object",
                "description": "A flunder.",
                "x-kubernetes-group-version-kind": [{"group": GROUP, "version": VERSION, "kind": "Flunder"}]}}}}),
        ),
        _ => (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404, "reason": "NotFound"}),
        ),
    }
}

impl Backend {
    /// Starts the backend on a free port of 127.0.0.1; `front_proxy_ca` is the fake's.
    pub async fn start(front_proxy_ca: &str) -> Backend {
        let (ca_pem, issuer) = ca();
        let key = KeyPair::generate().unwrap();
        let mut params =
            CertificateParams::new(vec!["wardle-api.default.svc".to_string()]).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "wardle-api.default.svc");
        let cert = params.signed_by(&key, &issuer).unwrap();
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(front_proxy_ca.as_bytes()) {
            roots.add(c.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let discovery_status = Arc::new(AtomicU16::new(200));
        let (seen_by_server, status_by_server) = (seen.clone(), discovery_status.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, seen, status) = (
                    acceptor.clone(),
                    seen_by_server.clone(),
                    status_by_server.clone(),
                );
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let client_cert = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| c.to_vec());
                    let service = service_fn(move |req: Request<hyper::body::Incoming>| {
                        seen.lock().unwrap().push(Seen {
                            path: req.uri().to_string(),
                            headers: req.headers().clone(),
                            client_cert: client_cert.clone(),
                        });
                        let (code, body) = answer(&req, status.load(Ordering::SeqCst));
                        let resp = Response::builder()
                            .status(code)
                            .header("content-type", "application/json")
                            .body(Full::new(Bytes::from(body.to_string())))
                            .unwrap();
                        async move { Ok::<_, Infallible>(resp) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Backend {
            addr,
            ca_pem,
            seen,
            discovery_status,
            task,
        }
    }

    /// Requests other than the aggregator's own (probes, discovery and OpenAPI downloads).
    pub fn requests_from_callers(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| {
                s.headers.get("x-remote-user").and_then(|v| v.to_str().ok())
                    != Some("system:kube-aggregator")
            })
            .cloned()
            .collect()
    }
}
