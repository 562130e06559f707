//! The material of one serving certificate, and its form in a `kubernetes.io/tls` Secret.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::ByteString;
use k8s_openapi::jiff::Timestamp;

use super::{
    CA_CERT_KEY, PREVIOUS_CA_CERT_KEY, PREVIOUS_CA_UNTIL_ANNOTATION, TLS_CERT_KEY,
    TLS_PRIVATE_KEY_KEY, pem_sha256,
};

/// A CA a rotation replaced, still trusted until `until`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviousCa {
    /// The CA certificate (PEM; public).
    pub pem: String,
    /// When it leaves the CA bundle.
    pub until: Timestamp,
}

/// CA certificate, serving certificate and its private key; optionally the CA a rotation
/// replaced. `Debug` shows the certificates' hashes, never the key.
#[derive(Clone, PartialEq, Eq)]
pub struct Material {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    previous_ca: Option<PreviousCa>,
}

impl fmt::Debug for Material {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Material")
            .field("ca_sha256", &pem_sha256(&self.ca_pem))
            .field("cert_sha256", &pem_sha256(&self.cert_pem))
            .field("key_pem", &"<redacted>")
            .field("previous_ca", &self.previous_ca)
            .finish()
    }
}

impl Material {
    pub(super) fn new(
        ca_pem: String,
        cert_pem: String,
        key_pem: String,
        previous_ca: Option<PreviousCa>,
    ) -> Self {
        Self {
            ca_pem,
            cert_pem,
            key_pem,
            previous_ca,
        }
    }

    /// The CA certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// The serving certificate (PEM).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The serving certificate's private key (PEM). Only for the Secret and for a TLS server.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The CA a rotation replaced, while it is still trusted.
    pub fn previous_ca(&self) -> Option<&PreviousCa> {
        self.previous_ca.as_ref()
    }

    pub(super) fn with_previous_ca(mut self, previous_ca: Option<PreviousCa>) -> Self {
        self.previous_ca = previous_ca;
        self
    }

    /// What clients must trust: the CA, then the previous CA while it is kept.
    pub fn ca_bundle(&self) -> String {
        let mut bundle = self.ca_pem.clone();
        if let Some(previous) = &self.previous_ca {
            if !bundle.ends_with('\n') {
                bundle.push('\n');
            }
            bundle.push_str(&previous.pem);
        }
        bundle
    }

    /// SHA-256 of the CA's PEM: changes exactly when the CA does (a rotation), not when the
    /// previous CA leaves the bundle.
    pub fn ca_hash(&self) -> String {
        pem_sha256(&self.ca_pem)
    }

    /// The Secret `data` holding this material.
    pub fn secret_data(&self) -> BTreeMap<String, ByteString> {
        let mut data = BTreeMap::from([
            (CA_CERT_KEY.to_owned(), bytes(&self.ca_pem)),
            (TLS_CERT_KEY.to_owned(), bytes(&self.cert_pem)),
            (TLS_PRIVATE_KEY_KEY.to_owned(), bytes(&self.key_pem)),
        ]);
        if let Some(previous) = &self.previous_ca {
            data.insert(PREVIOUS_CA_CERT_KEY.to_owned(), bytes(&previous.pem));
        }
        data
    }

    /// The Secret annotations that belong to this material (the previous CA's deadline).
    pub fn secret_annotations(&self) -> BTreeMap<String, String> {
        self.previous_ca
            .iter()
            .map(|previous| {
                (
                    PREVIOUS_CA_UNTIL_ANNOTATION.to_owned(),
                    previous.until.to_string(),
                )
            })
            .collect()
    }

    /// Material read back from a Secret object ([`Material::from_secret`] of its data and
    /// annotations).
    pub fn from_secret_object(secret: &k8s_openapi::api::core::v1::Secret) -> Option<Self> {
        Self::from_secret(
            secret.data.as_ref()?,
            secret
                .metadata
                .annotations
                .as_ref()
                .unwrap_or(&BTreeMap::new()),
        )
    }

    /// Material read back from a Secret's `data` and annotations; `None` when a part is missing
    /// or is not UTF-8 (the Secret is then replaced). A previous CA without a readable deadline
    /// is dropped.
    pub fn from_secret(
        data: &BTreeMap<String, ByteString>,
        annotations: &BTreeMap<String, String>,
    ) -> Option<Self> {
        let text = |key: &str| {
            data.get(key)
                .and_then(|value| String::from_utf8(value.0.clone()).ok())
        };
        let previous_ca = match (
            text(PREVIOUS_CA_CERT_KEY),
            annotations
                .get(PREVIOUS_CA_UNTIL_ANNOTATION)
                .and_then(|until| until.parse::<Timestamp>().ok()),
        ) {
            (Some(pem), Some(until)) => Some(PreviousCa { pem, until }),
            _ => None,
        };
        Some(Self {
            ca_pem: text(CA_CERT_KEY)?,
            cert_pem: text(TLS_CERT_KEY)?,
            key_pem: text(TLS_PRIVATE_KEY_KEY)?,
            previous_ca,
        })
    }
}

fn bytes(text: &str) -> ByteString {
    ByteString(text.as_bytes().to_vec())
}
