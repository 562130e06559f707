//! One HTTPS request to an aggregated API server, as kube-aggregator's transport makes it
//! (`pkg/controllers/status/remote` `BuildTransportConfig`): TLS verifying the server against
//! the APIService's `caBundle` for the name `<service>.<namespace>.svc` (or not at all with
//! `insecureSkipTLSVerify`), presenting the front-proxy client certificate. The answer's body
//! streams back as it arrives (watches included).
//!
//! What differs: one connection per request (no pool, no HTTP/2); an empty `caBundle` trusts
//! nothing (kube-aggregator would fall back to the system roots).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::pki::Pki;

/// How long connecting and the TLS handshake may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how to reach a backend.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) addr: SocketAddr,
    /// `<service>.<namespace>.svc`.
    pub(crate) server_name: String,
    pub(crate) ca_bundle: Vec<u8>,
    pub(crate) insecure: bool,
}

/// Accepts any server certificate (`insecureSkipTLSVerify`, and the availability probe).
#[derive(Debug)]
struct AnyServer(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The TLS client configuration for `target`.
fn client_config(pki: &Pki, target: &Target) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = if target.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServer(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&target.ca_bundle) {
            let cert = cert.map_err(|e| format!("reading caBundle: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("reading caBundle: {e}"))?;
        }
        builder.with_root_certificates(roots)
    };
    let key = PrivateKeyDer::Pkcs8(pki.client_key_der.clone().into());
    builder
        .with_client_auth_cert(vec![pki.client_cert_der.clone().into()], key)
        .map_err(|e| format!("front-proxy client certificate: {e}"))
}

/// Sends `request` (path and query in its URI) to `target`; `Err` describes a connection or
/// TLS failure as Go's transport would ("dial tcp ...", "tls: ...").
pub(crate) async fn send(
    pki: &Pki,
    target: &Target,
    request: Request<Full<Bytes>>,
) -> Result<Response<hyper::body::Incoming>, String> {
    let config = client_config(pki, target)?;
    let name = ServerName::try_from(target.server_name.clone())
        .map_err(|e| format!("server name {:?}: {e}", target.server_name))?;
    let addr = target.addr;
    let connect = async {
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("dial tcp {addr}: {e}"))?;
        tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("tls: {e}"))
    };
    let tls = tokio::time::timeout(CONNECT_TIMEOUT, connect)
        .await
        .map_err(|_| format!("dial tcp {addr}: i/o timeout"))??;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!(error = %e, "aggregated API connection ended");
        }
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())
}
