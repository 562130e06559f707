//! Errors of registry operations. The mapping from oci-client's errors to them is in
//! [`super::failure`].
//!
//! Every message says which image, which registry and what happened, and — for auth failures —
//! which pull secrets were tried. None contains credentials: oci-client's own messages are only
//! passed through for server-provided texts (error envelopes), never for requests.

use std::fmt;

use super::cache::CacheError;
use super::digest::Digest;
use super::manifest::ManifestError;
use super::unpack::UnpackError;

/// What opcat was doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Reading (resolve, check, fetch).
    Pull,
    /// Writing (push).
    Push,
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Operation::Pull => "pull",
            Operation::Push => "push",
        })
    }
}

/// Which credentials were tried before the registry refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tried {
    /// No pull secret has an entry matching the registry; the request was anonymous.
    Anonymous {
        /// The secrets that were available (none matched).
        available: Vec<String>,
    },
    /// These secrets matched, and each failed with the given outcome.
    Secrets(Vec<(String, &'static str)>),
}

impl fmt::Display for Tried {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tried::Anonymous { available } if available.is_empty() => {
                f.write_str("no credential matches this registry, tried anonymously")
            }
            Tried::Anonymous { available } => write!(
                f,
                "no credential matches this registry (pull secrets {}), tried anonymously",
                quoted(available.iter().map(String::as_str))
            ),
            Tried::Secrets(attempts) => {
                f.write_str("tried pull secrets ")?;
                let parts: Vec<String> = attempts
                    .iter()
                    .map(|(secret, outcome)| format!("{secret:?} ({outcome})"))
                    .collect();
                f.write_str(&parts.join(", "))
            }
        }
    }
}

fn quoted<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A registry operation failed.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// 401 with every credential tried (or anonymously).
    #[error(
        "{operation} of {image}: registry {registry} answered 401 Unauthorized ({detail}); {tried}"
    )]
    Unauthorized {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// Server detail (e.g. the token server's answer).
        detail: String,
        /// The credentials tried.
        tried: Tried,
    },
    /// 403 / DENIED.
    #[error(
        "{operation} of {image}: registry {registry} answered 403 Forbidden ({detail}); {tried}"
    )]
    Forbidden {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// Server detail.
        detail: String,
        /// The credentials tried.
        tried: Tried,
    },
    /// 404: manifest, tag, repository or blob unknown.
    #[error("{operation} of {image}: registry {registry} answered 404 Not Found ({detail})")]
    NotFound {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// Server detail, e.g. `MANIFEST_UNKNOWN: manifest unknown`.
        detail: String,
    },
    /// The TLS handshake failed (unknown CA, wrong host name, plain-HTTP server...).
    #[error(
        "{operation} of {image}: TLS connection to registry {registry} failed: {detail} (is the registry's CA configured? --ca-file)"
    )]
    Tls {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// rustls' description.
        detail: String,
    },
    /// No answer in time.
    #[error("{operation} of {image}: registry {registry} did not answer in time")]
    Timeout {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
    },
    /// The connection could not be made or broke.
    #[error("{operation} of {image}: cannot reach registry {registry}: {detail}")]
    Connection {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// What the transport said.
        detail: String,
    },
    /// Any other answer (5xx, 429, protocol violations).
    #[error("{operation} of {image}: registry {registry} failed: {detail}")]
    Server {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// The registry host.
        registry: String,
        /// What went wrong.
        detail: String,
    },
    /// Content did not hash to its digest.
    #[error(
        "{operation} of {image}: {what} does not match its digest: expected {expected}, got {actual}"
    )]
    DigestMismatch {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// Which content (manifest, config, layer N).
        what: String,
        /// The digest that named it.
        expected: String,
        /// What it hashed to.
        actual: String,
    },
    /// A manifest, index or config opcat cannot use.
    #[error("{operation} of {image}: {source}")]
    Manifest {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// What is wrong.
        source: ManifestError,
    },
    /// A blob larger than opcat accepts.
    #[error("{operation} of {image}: {what} is {size} bytes, more than the limit of {max}")]
    TooLarge {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// Which blob.
        what: String,
        /// Its declared size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// A layer was refused or could not be written.
    #[error("{operation} of {image}: layer {layer} ({digest}): {source}")]
    Unpack {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// 1-based layer number.
        layer: usize,
        /// The layer digest.
        digest: Digest,
        /// Why.
        source: UnpackError,
    },
    /// The cache directory failed.
    #[error("{operation} of {image}: {source}")]
    Cache {
        /// Pull or push.
        operation: Operation,
        /// The image.
        image: String,
        /// Why.
        source: CacheError,
    },
    /// The trust configuration is unusable (bad CA file, insecure host not on loopback).
    #[error("invalid registry trust configuration: {0}")]
    Trust(String),
}

impl RegistryError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            RegistryError::Unauthorized { .. } => "unauthorized",
            RegistryError::Forbidden { .. } => "forbidden",
            RegistryError::NotFound { .. } => "not_found",
            RegistryError::Tls { .. } => "tls",
            RegistryError::Timeout { .. } => "timeout",
            RegistryError::Connection { .. } => "connection",
            RegistryError::Server { .. } => "registry_error",
            RegistryError::DigestMismatch { .. } => "digest_mismatch",
            RegistryError::Manifest { source, .. } => source.kind(),
            RegistryError::TooLarge { .. } => "limit_exceeded",
            RegistryError::Unpack { source, .. } => source.kind(),
            RegistryError::Cache { .. } => "io",
            RegistryError::Trust(_) => "invalid_trust_config",
        }
    }

    /// `true` when retrying later may succeed without a spec change (network, server, auth
    /// that may be fixed by rotating a secret); `false` for content that will never be valid.
    pub fn is_transient(&self) -> bool {
        !matches!(
            self,
            RegistryError::DigestMismatch { .. }
                | RegistryError::Manifest { .. }
                | RegistryError::TooLarge { .. }
                | RegistryError::Unpack { .. }
                | RegistryError::Trust(_)
        )
    }
}
