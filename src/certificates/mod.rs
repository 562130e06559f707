//! Serving certificates for an operator's webhooks and aggregated API services (pure: no
//! client, the clock is passed in).
//!
//! OLM v0 gives every Deployment that serves a webhook or an API service its own CA and a
//! serving certificate signed by it (`operator-lifecycle-manager: pkg/controller/install/
//! certresources.go`, `pkg/controller/certs/certs.go`): valid two years, stored in the Secret
//! `<service>-cert`, the CA injected as `caBundle` into every webhook configuration, CRD
//! conversion and APIService that points at the Deployment's Service, and refreshed when it nears
//! expiry. opcat does the same:
//!
//! - [`issue`]: a fresh CA (ECDSA P-256, `rcgen` with ring, the process's one crypto provider)
//!   and a serving certificate for the Service's DNS names ([`ServiceIdentity::dns_names`]),
//!   both valid [`VALIDITY`] (730 days, OLM's `DefaultCertValidFor`); the serving certificate
//!   ends one [`REFRESH_WINDOW`] before the CA, as OLM's does;
//! - [`check`]: whether stored material still does its job, with the same verifier a TLS client
//!   uses (rustls' webpki verifier, the CA as the only root): the serving certificate must verify
//!   for every DNS name now *and* one [`REFRESH_WINDOW`] (24 hours, OLM's `DefaultCertMinFresh`)
//!   from now, and its key must match it;
//! - [`plan`]: keep what checks out, else issue anew. A rotation because of the coming expiry
//!   keeps the old CA in the bundle for one more window ([`PreviousCa`]): pods that still serve
//!   the old certificate during the rollout stay trusted, so a rotation never breaks admission.
//!   Material that fails for any other reason (edited, for another Service, unreadable) is
//!   replaced outright and its CA is not trusted any more.
//!
//! Key material exists only in [`Material`] and in the Secret data it converts to; neither
//! `Debug` nor any error shows it ([`Material`]'s `Debug` is redacted, errors name the Service
//! and the cause only). DESIGN invariant 8.

mod issue;
mod material;
mod plan;
mod verify;

use std::time::Duration;

pub use issue::issue;
pub use material::{Material, PreviousCa};
pub use plan::{Action, Planned, plan};
pub use verify::{Stale, check};

/// How long a generated CA is valid (OLM's `DefaultCertValidFor`: two years).
pub const VALIDITY: Duration = Duration::from_secs(730 * 24 * 60 * 60);
/// How long before expiry a certificate is replaced, and how long a replaced CA stays trusted
/// (OLM's `DefaultCertMinFresh`: one day).
pub const REFRESH_WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
/// How far into the past `notBefore` is set, so that an API server whose clock is a little
/// behind opcat's accepts a certificate issued this instant.
pub const CLOCK_SKEW: Duration = Duration::from_secs(5 * 60);

/// Label on every certificate Secret opcat makes (with opcat's ownership labels); they are
/// watched by it, and a Secret without it is never touched.
pub const CERTIFICATE_LABEL: &str = "opcat.dev/serving-certificate";
/// Value of [`CERTIFICATE_LABEL`].
pub const CERTIFICATE_LABEL_VALUE: &str = "true";
/// `data` key of the serving certificate (PEM), as in every `kubernetes.io/tls` Secret.
pub const TLS_CERT_KEY: &str = "tls.crt";
/// `data` key of the serving certificate's private key (PKCS #8 PEM).
pub const TLS_PRIVATE_KEY_KEY: &str = "tls.key";
/// `data` key of the CA certificate (PEM) that signed the serving certificate.
pub const CA_CERT_KEY: &str = "ca.crt";
/// `data` key of the CA replaced by the last rotation, trusted until
/// [`PREVIOUS_CA_UNTIL_ANNOTATION`].
pub const PREVIOUS_CA_CERT_KEY: &str = "ca-previous.crt";
/// Annotation on the Secret: until when (RFC 3339) the previous CA stays in the CA bundle.
pub const PREVIOUS_CA_UNTIL_ANNOTATION: &str = "opcat.dev/previous-ca-until";
/// Annotation with the SHA-256 (hex) of the CA certificate's PEM, on the Secret and on the pod
/// template of the Deployment that mounts it. OLM's name (`olmcahash`): a new CA changes the
/// pod template, so the Deployment rolls out once per rotation and its pods read the new files.
pub const CA_HASH_ANNOTATION: &str = "olmcahash";

/// The Service a serving certificate is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceIdentity {
    /// Name of the Service.
    pub service: String,
    /// Its namespace.
    pub namespace: String,
}

impl ServiceIdentity {
    /// The DNS names the serving certificate holds: `<service>.<namespace>` and
    /// `<service>.<namespace>.svc` (OLM's two; the API server connects to the `.svc` name) and
    /// `<service>.<namespace>.svc.cluster.local` (the fully qualified name in a cluster with the
    /// default domain).
    pub fn dns_names(&self) -> Vec<String> {
        let base = format!("{}.{}", self.service, self.namespace);
        vec![
            base.clone(),
            format!("{base}.svc"),
            format!("{base}.svc.cluster.local"),
        ]
    }
}

impl std::fmt::Display for ServiceIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Service {}/{}", self.namespace, self.service)
    }
}

/// Why a certificate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CertificateError {
    /// The certificate generator refused (never expected with opcat's fixed parameters).
    #[error("cannot generate the serving certificate of {service}: {message}")]
    Generate {
        /// The Service.
        service: String,
        /// rcgen's message (about parameters; it never holds key material).
        message: String,
    },
    /// A time outside the range certificates can express.
    #[error("cannot generate the serving certificate of {service}: time {at} is out of range")]
    Time {
        /// The Service.
        service: String,
        /// The offending instant.
        at: String,
    },
}

/// SHA-256 (lowercase hex) of `pem`, as OLM's `certs.PEMSHA256`.
pub fn pem_sha256(pem: &str) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(pem.as_bytes()))
}
