//! The front-proxy PKI kubeadm sets up for the aggregation layer (`front-proxy-ca`, a client
//! certificate with CN `front-proxy-client` that kube-apiserver presents with
//! `--proxy-client-cert-file`), the cluster client CA, and the ConfigMap
//! `kube-system/extension-apiserver-authentication` kube-apiserver publishes them in
//! (`pkg/controlplane/controller/clusterauthenticationtrust/cluster_authentication_trust_controller.go`:
//! keys `client-ca-file`, `requestheader-client-ca-file`, `requestheader-allowed-names`,
//! `requestheader-username-headers`, `requestheader-group-headers`,
//! `requestheader-extra-headers-prefix`, each list as a JSON array).
//!
//! Made fresh (ECDSA P-256) for every server; nothing signs with the client CA: the fake
//! accepts no client certificates, it is published for aggregated servers that read it.

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use serde_json::{Value, json};

/// The common name of the front-proxy client certificate (kubeadm's).
pub(crate) const PROXY_CLIENT_CN: &str = "front-proxy-client";

/// The certificates and keys of the aggregation layer, PEM encoded (see
/// [`crate::FakeApiServer::front_proxy`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrontProxy {
    /// The front-proxy CA (`requestheader-client-ca-file`): aggregated servers trust client
    /// certificates it signed as the aggregator's.
    pub ca_cert_pem: String,
    /// The client certificate the fake presents to aggregated servers (CN
    /// `front-proxy-client`, extended key usage client auth).
    pub client_cert_pem: String,
    /// Its private key (PKCS#8).
    pub client_key_pem: String,
    /// The cluster's client CA (`client-ca-file`).
    pub client_ca_pem: String,
}

/// The PKI with the DER forms the TLS client needs.
#[derive(Debug, Default)]
pub(crate) struct Pki {
    pub(crate) pems: FrontProxy,
    pub(crate) client_cert_der: Vec<u8>,
    pub(crate) client_key_der: Vec<u8>,
}

fn ca(name: &str) -> Result<(rcgen::Certificate, Issuer<'static, KeyPair>), rcgen::Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let cert = params.self_signed(&key)?;
    Ok((cert, Issuer::new(params, key)))
}

impl Pki {
    /// A new front-proxy CA, its client certificate and a cluster client CA.
    pub(crate) fn generate() -> Result<Self, rcgen::Error> {
        let (client_ca, _) = ca("kubernetes")?;
        let (front_proxy_ca, issuer) = ca("front-proxy-ca")?;
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params
            .distinguished_name
            .push(DnType::CommonName, PROXY_CLIENT_CN);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params.signed_by(&key, &issuer)?;
        Ok(Self {
            pems: FrontProxy {
                ca_cert_pem: front_proxy_ca.pem(),
                client_cert_pem: cert.pem(),
                client_key_pem: key.serialize_pem(),
                client_ca_pem: client_ca.pem(),
            },
            client_cert_der: cert.der().to_vec(),
            client_key_der: key.serialize_der(),
        })
    }

    /// `kube-system/extension-apiserver-authentication`.
    pub(crate) fn config_map(&self) -> Value {
        let list = |v: &str| json!([v]).to_string();
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
            "data": {
                "client-ca-file": self.pems.client_ca_pem,
                "requestheader-client-ca-file": self.pems.ca_cert_pem,
                "requestheader-allowed-names": list(PROXY_CLIENT_CN),
                "requestheader-username-headers": list("X-Remote-User"),
                "requestheader-group-headers": list("X-Remote-Group"),
                "requestheader-extra-headers-prefix": list("X-Remote-Extra-"),
            },
        })
    }
}
