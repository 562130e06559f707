//! The cluster's authentication configuration for extension API servers: the ConfigMap
//! `kube-system/extension-apiserver-authentication` that kube-apiserver publishes
//! (`k8s.io/apiserver/pkg/server/options/authentication.go`,
//! `pkg/authentication/request/headerrequest/requestheader_controller.go`).
//!
//! - `client-ca-file`: CAs of client certificates presented directly (user = CN, groups = O);
//! - `requestheader-client-ca-file`: the CA of the front proxy's client certificate (the
//!   aggregator), whose identity headers are trusted only over such a certificate;
//! - `requestheader-allowed-names`: JSON list of the common names that certificate may have
//!   (empty: any name the CA signed);
//! - `requestheader-username-headers`, `-group-headers`, `-extra-headers-prefix` (and
//!   `-uid-headers` on newer clusters): JSON lists of header names.

use std::collections::BTreeMap;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Namespace of the ConfigMap.
pub const CONFIG_MAP_NAMESPACE: &str = "kube-system";
/// Name of the ConfigMap.
pub const CONFIG_MAP_NAME: &str = "extension-apiserver-authentication";

/// How clients are authenticated, read from the ConfigMap.
#[derive(Clone, Debug, Default)]
pub struct AuthConfig {
    /// Roots for client certificates presented directly.
    pub client_ca: Option<Arc<RootCertStore>>,
    /// Roots for the front proxy's client certificate.
    pub request_header_ca: Option<Arc<RootCertStore>>,
    /// Allowed common names of the front proxy's certificate (empty: any).
    pub allowed_names: Vec<String>,
    /// Headers holding the user name, first non-empty wins.
    pub username_headers: Vec<String>,
    /// Headers holding the user's UID.
    pub uid_headers: Vec<String>,
    /// Headers holding groups (every value).
    pub group_headers: Vec<String>,
    /// Prefixes of headers holding extra attributes.
    pub extra_prefixes: Vec<String>,
}

/// A key of the ConfigMap that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthConfigError {
    /// A CA bundle holds no usable certificate.
    #[error(
        "{key} of ConfigMap kube-system/extension-apiserver-authentication holds no usable CA certificate"
    )]
    Ca {
        /// The key.
        key: &'static str,
    },
    /// A list is not a JSON list of strings.
    #[error(
        "{key} of ConfigMap kube-system/extension-apiserver-authentication is not a JSON list of strings"
    )]
    List {
        /// The key.
        key: &'static str,
    },
}

impl AuthConfig {
    /// Reads the ConfigMap's `data`. A missing key is an empty setting; a malformed one is an
    /// error (the previous configuration stays in force).
    pub fn from_data(data: &BTreeMap<String, String>) -> Result<Self, AuthConfigError> {
        let roots = |key: &'static str| -> Result<Option<Arc<RootCertStore>>, AuthConfigError> {
            let Some(pem) = data.get(key).filter(|pem| !pem.trim().is_empty()) else {
                return Ok(None);
            };
            let mut store = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                let cert = cert.map_err(|_| AuthConfigError::Ca { key })?;
                store.add(cert).map_err(|_| AuthConfigError::Ca { key })?;
            }
            if store.is_empty() {
                return Err(AuthConfigError::Ca { key });
            }
            Ok(Some(Arc::new(store)))
        };
        let list = |key: &'static str| -> Result<Vec<String>, AuthConfigError> {
            match data
                .get(key)
                .map(|text| text.trim())
                .filter(|t| !t.is_empty())
            {
                None => Ok(Vec::new()),
                Some(text) => serde_json::from_str::<Vec<String>>(text)
                    .map_err(|_| AuthConfigError::List { key }),
            }
        };
        Ok(Self {
            client_ca: roots("client-ca-file")?,
            request_header_ca: roots("requestheader-client-ca-file")?,
            allowed_names: list("requestheader-allowed-names")?,
            username_headers: list("requestheader-username-headers")?,
            uid_headers: list("requestheader-uid-headers")?,
            group_headers: list("requestheader-group-headers")?,
            extra_prefixes: list("requestheader-extra-headers-prefix")?,
        })
    }
}
