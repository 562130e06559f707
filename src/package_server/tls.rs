//! TLS of the package API: the serving certificate, replaced in place (a rotation never
//! restarts the listener: new handshakes get the new certificate, open connections keep
//! theirs), ALPN for HTTP/2 and HTTP/1.1 (kube-aggregator speaks both), and client
//! certificates requested but not required.
//!
//! A client certificate is checked at the handshake only for possession of its key (the
//! handshake signature); whether its chain is trusted, and by which CA, is decided per request
//! by [`super::authn`] against the current authentication ConfigMap — Go's
//! `tls.RequestClientCert`, as Kubernetes API servers configure it. A client whose certificate
//! is not trusted is then simply not authenticated by it (401), rather than cut off at the
//! handshake.

use std::sync::{Arc, RwLock};

use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::{DigitallySignedStruct, DistinguishedName, ServerConfig, SignatureScheme};

/// Why a serving certificate cannot be used. Never shows key material.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate chain holds no certificate.
    #[error("the serving certificate PEM holds no certificate")]
    NoCertificate,
    /// The private key cannot be read or used.
    #[error("the serving certificate's private key cannot be used")]
    Key,
    /// The key is not the certificate's.
    #[error("the serving certificate's private key does not match it")]
    Mismatch,
    /// rustls refused the configuration.
    #[error("cannot configure TLS: {0}")]
    Config(String),
}

/// The current serving certificate, swapped in place.
#[derive(Debug, Default)]
pub struct CertResolver {
    current: RwLock<Option<Arc<CertifiedKey>>>,
}

impl CertResolver {
    /// Serves `cert_pem` (chain, leaf first) with `key_pem` from the next handshake on.
    pub fn set(&self, cert_pem: &str, key_pem: &str) -> Result<(), TlsError> {
        let key = certified_key(cert_pem, key_pem)?;
        if let Ok(mut current) = self.current.write() {
            *current = Some(Arc::new(key));
        }
        Ok(())
    }

    /// Whether a certificate is loaded.
    pub fn is_set(&self) -> bool {
        self.current.read().is_ok_and(|current| current.is_some())
    }
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.read().ok()?.clone()
    }
}

/// A certificate and key ready for rustls.
pub fn certified_key(cert_pem: &str, key_pem: &str) -> Result<CertifiedKey, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|_| TlsError::NoCertificate)?;
    if chain.is_empty() {
        return Err(TlsError::NoCertificate);
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|_| TlsError::Key)?;
    let signing = provider()
        .key_provider
        .load_private_key(key)
        .map_err(|_| TlsError::Key)?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|_| TlsError::Mismatch)?;
    Ok(certified)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Asks for a client certificate, checks the handshake signature, leaves trust to the
/// authenticator.
#[derive(Debug)]
struct RequestClientCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // No hints: clients (Go's included) then send whatever certificate they have.
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The server configuration: TLS 1.2 and 1.3, the swappable certificate, client
/// certificates requested, ALPN `h2` then `http/1.1`.
pub fn server_config(resolver: Arc<CertResolver>) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = provider();
    let verifier = Arc::new(RequestClientCert {
        algorithms: provider.signature_verification_algorithms,
    });
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| TlsError::Config(error.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(resolver);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
