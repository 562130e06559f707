//! A CA and a server certificate for 127.0.0.1/localhost, made at test time.

use std::fs;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// Certificates written to a directory.
pub struct TestCa {
    /// The CA certificate (PEM).
    pub ca_pem: PathBuf,
    /// A directory that holds only `ca.crt` (skopeo's `--cert-dir` refuses stray keys).
    pub cert_dir: PathBuf,
    /// The server certificate (PEM), SAN `IP:127.0.0.1`, `DNS:localhost`.
    pub server_cert: PathBuf,
    /// The server key (PEM).
    pub server_key: PathBuf,
    server_cert_der: Vec<u8>,
    server_key_der: Vec<u8>,
}

impl TestCa {
    /// The CA certificate (PEM) path.
    pub fn pem_path(&self) -> PathBuf {
        self.ca_pem.clone()
    }

    /// Makes a fresh CA and server certificate under `dir`.
    pub fn create(dir: &Path, name: &str) -> TestCa {
        let ca_key = KeyPair::generate().expect("generate CA key");
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params.self_signed(&ca_key).expect("self-sign CA");
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().expect("generate server key");
        let mut params =
            CertificateParams::new(vec!["localhost".to_owned()]).expect("server params");
        params
            .subject_alt_names
            .push(SanType::IpAddress(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        params
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_cert = params
            .signed_by(&server_key, &issuer)
            .expect("sign server cert");

        let cert_dir = dir.join("cert-dir");
        fs::create_dir_all(&cert_dir).expect("create cert dir");
        let write = |path: PathBuf, text: String| {
            fs::write(&path, text).expect("write certificate file");
            path
        };
        let ca_pem = write(dir.join("ca.crt"), ca_cert.pem());
        write(cert_dir.join("ca.crt"), ca_cert.pem());
        TestCa {
            ca_pem,
            cert_dir,
            server_cert: write(dir.join("server.crt"), server_cert.pem()),
            server_key: write(dir.join("server.key"), server_key.serialize_pem()),
            server_cert_der: server_cert.der().to_vec(),
            server_key_der: server_key.serialize_der(),
        }
    }

    /// A rustls server config presenting the server certificate.
    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_no_client_auth()
            .with_single_cert(
                vec![self.server_cert_der.clone().into()],
                rustls::pki_types::PrivateKeyDer::try_from(self.server_key_der.clone())
                    .expect("server key DER"),
            )
            .expect("server TLS config");
        Arc::new(config)
    }
}
