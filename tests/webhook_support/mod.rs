//! Shared by the webhook tests: a real TLS handshake between a rustls server holding a serving
//! certificate and a client that trusts only a `caBundle`, as the API server calls a webhook.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::io::{Read, Write};
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::time_provider::TimeProvider;
use rustls::{
    ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig, ServerConnection,
};

/// The client configuration of a CRD's conversion webhook (the CRD must have one).
pub fn conversion_client(
    crd: &CustomResourceDefinition,
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::WebhookClientConfig {
    let conversion = crd.spec.conversion.clone().expect("spec.conversion");
    assert_eq!(conversion.strategy, "Webhook");
    conversion
        .webhook
        .and_then(|webhook| webhook.client_config)
        .expect("a webhook client configuration")
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A clock for both ends of the handshake.
#[derive(Debug)]
struct At(UnixTime);

impl TimeProvider for At {
    fn current_time(&self) -> Option<UnixTime> {
        Some(self.0)
    }
}

/// Connects a client trusting only the certificates of `ca_bundle` (PEM), with SNI
/// `server_name`, to a server presenting `cert_pem` with `key_pem`, and sends one message.
/// `Err` carries the handshake's error.
pub fn handshake(
    ca_bundle: &str,
    cert_pem: &str,
    key_pem: &str,
    server_name: &str,
) -> Result<(), String> {
    handshake_at(ca_bundle, cert_pem, key_pem, server_name, Timestamp::now())
}

/// [`handshake`] as if it happened at `at` (certificates issued by a manager on a manual clock).
pub fn handshake_at(
    ca_bundle: &str,
    cert_pem: &str,
    key_pem: &str,
    server_name: &str,
    at: Timestamp,
) -> Result<(), String> {
    let time: Arc<dyn TimeProvider> = Arc::new(At(UnixTime::since_unix_epoch(
        std::time::Duration::from_secs(u64::try_from(at.as_second()).unwrap()),
    )));
    let mut roots = RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_bundle.as_bytes()) {
        roots
            .add(ca.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let client_config = ClientConfig::builder_with_details(provider(), time.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| e.to_string())?;
    let server_config = ServerConfig::builder_with_details(provider(), time)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| e.to_string())?;
    let name = ServerName::try_from(server_name.to_owned()).map_err(|e| e.to_string())?;
    let mut client = Connection::from(
        ClientConnection::new(Arc::new(client_config), name).map_err(|e| e.to_string())?,
    );
    let mut server = Connection::from(
        ServerConnection::new(Arc::new(server_config)).map_err(|e| e.to_string())?,
    );

    client.writer().write_all(b"ping").unwrap();
    for _ in 0..20 {
        pump(&mut client, &mut server)?;
        pump(&mut server, &mut client)?;
        if !client.is_handshaking() && !server.is_handshaking() {
            break;
        }
    }
    pump(&mut client, &mut server)?;
    let mut received = [0u8; 4];
    server
        .reader()
        .read_exact(&mut received)
        .map_err(|e| e.to_string())?;
    assert_eq!(&received, b"ping");
    Ok(())
}

/// Moves every pending TLS record from `from` to `to` and lets `to` process them.
fn pump(from: &mut Connection, to: &mut Connection) -> Result<(), String> {
    let mut buffer = Vec::new();
    while from.wants_write() {
        from.write_tls(&mut buffer).map_err(|e| e.to_string())?;
    }
    let mut slice = buffer.as_slice();
    while !slice.is_empty() {
        to.read_tls(&mut slice).map_err(|e| e.to_string())?;
        to.process_new_packets().map_err(|e| e.to_string())?;
    }
    Ok(())
}
