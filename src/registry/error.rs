//! Errors of registry operations, and the mapping from oci-client's errors to them.
//!
//! Every message says which image, which registry and what happened, and — for auth failures —
//! which pull secrets were tried. None contains credentials: oci-client's own messages are only
//! passed through for server-provided texts (error envelopes), never for requests.

use std::error::Error as StdError;
use std::fmt;

use oci_client::errors::{OciDistributionError, OciErrorCode};

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

/// A failure of one request, before it is attributed to an image and credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    Unauthorized(String),
    Forbidden(String),
    NotFound(String),
    Tls(String),
    Timeout,
    Connection(String),
    Server(String),
    Digest { expected: String, actual: String },
}

impl Failure {
    /// Whether another credential might do better.
    pub(crate) fn is_auth_related(&self) -> bool {
        matches!(
            self,
            Failure::Unauthorized(_) | Failure::Forbidden(_) | Failure::NotFound(_)
        )
    }

    /// Short outcome for the "tried secrets" list.
    pub(crate) fn outcome(&self) -> &'static str {
        match self {
            Failure::Unauthorized(_) => "401 Unauthorized",
            Failure::Forbidden(_) => "403 Forbidden",
            Failure::NotFound(_) => "404 Not Found",
            _ => "failed",
        }
    }

    /// Ranks auth-related outcomes: the most informative one is reported.
    pub(crate) fn rank(&self) -> u8 {
        match self {
            Failure::NotFound(_) => 3,
            Failure::Forbidden(_) => 2,
            Failure::Unauthorized(_) => 1,
            _ => 0,
        }
    }

    /// Attributes the failure to an image.
    pub(crate) fn into_error(
        self,
        operation: Operation,
        image: &str,
        registry: &str,
        tried: Tried,
    ) -> RegistryError {
        let image = image.to_owned();
        let registry = registry.to_owned();
        match self {
            Failure::Unauthorized(detail) => RegistryError::Unauthorized {
                operation,
                image,
                registry,
                detail,
                tried,
            },
            Failure::Forbidden(detail) => RegistryError::Forbidden {
                operation,
                image,
                registry,
                detail,
                tried,
            },
            Failure::NotFound(detail) => RegistryError::NotFound {
                operation,
                image,
                registry,
                detail,
            },
            Failure::Tls(detail) => RegistryError::Tls {
                operation,
                image,
                registry,
                detail,
            },
            Failure::Timeout => RegistryError::Timeout {
                operation,
                image,
                registry,
            },
            Failure::Connection(detail) => RegistryError::Connection {
                operation,
                image,
                registry,
                detail,
            },
            Failure::Server(detail) => RegistryError::Server {
                operation,
                image,
                registry,
                detail,
            },
            Failure::Digest { expected, actual } => RegistryError::DigestMismatch {
                operation,
                image,
                what: "manifest".to_owned(),
                expected,
                actual,
            },
        }
    }
}

const MAX_DETAIL: usize = 300;

fn clip(text: &str) -> String {
    let text = text.trim();
    match text.char_indices().nth(MAX_DETAIL) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Maps an oci-client error to a [`Failure`].
pub(crate) fn classify(error: OciDistributionError) -> Failure {
    match error {
        OciDistributionError::UnauthorizedError { .. } => Failure::Unauthorized(
            "credentials missing or rejected, or no access to this repository".to_owned(),
        ),
        OciDistributionError::AuthenticationFailure(body) => Failure::Unauthorized(format!(
            "token server refused the credentials: {}",
            clip(&body)
        )),
        OciDistributionError::RegistryError { envelope, .. } => {
            let detail = envelope
                .errors
                .iter()
                .map(|e| format!("{}: {}", code_name(&e.code), clip(&e.message)))
                .collect::<Vec<_>>()
                .join("; ");
            match envelope.errors.first().map(|e| &e.code) {
                Some(OciErrorCode::Unauthorized) => Failure::Unauthorized(detail),
                Some(OciErrorCode::Denied) => Failure::Forbidden(detail),
                Some(
                    OciErrorCode::ManifestUnknown
                    | OciErrorCode::NameUnknown
                    | OciErrorCode::BlobUnknown
                    | OciErrorCode::NotFound,
                ) => Failure::NotFound(detail),
                _ => Failure::Server(detail),
            }
        }
        OciDistributionError::ServerError { code, message, .. } => {
            let detail = format!("HTTP {code}: {}", clip(&message));
            match code {
                401 => Failure::Unauthorized(detail),
                403 => Failure::Forbidden(detail),
                404 => Failure::NotFound(detail),
                _ => Failure::Server(detail),
            }
        }
        OciDistributionError::DigestError(oci_client::errors::DigestError::VerificationError {
            expected,
            actual,
        }) => Failure::Digest { expected, actual },
        OciDistributionError::RequestError(e) => match e.status().map(|s| s.as_u16()) {
            Some(401) => Failure::Unauthorized(
                "credentials missing or rejected, or no access to this repository".to_owned(),
            ),
            Some(403) => Failure::Forbidden("access denied".to_owned()),
            Some(404) => Failure::NotFound("not found".to_owned()),
            Some(code) => Failure::Server(format!("HTTP {code}")),
            None => classify_transport(&e),
        },
        OciDistributionError::IoError(e) => classify_transport(&e),
        other => Failure::Server(clip(&other.to_string())),
    }
}

fn code_name(code: &OciErrorCode) -> String {
    match code {
        OciErrorCode::Other(name) => name.clone(),
        known => serde_json::to_value(known)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| format!("{known:?}")),
    }
}

/// A rustls error at this level, or wrapped in `io::Error`s (whose `source()` skips the wrapped
/// error, so `get_ref` is followed instead).
fn find_tls<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a rustls::Error> {
    if let Some(tls) = error.downcast_ref::<rustls::Error>() {
        return Some(tls);
    }
    let inner = error.downcast_ref::<std::io::Error>()?.get_ref()?;
    find_tls(inner)
}

/// Looks through a transport error's sources for TLS and timeout causes.
pub(crate) fn classify_transport(error: &(dyn StdError + 'static)) -> Failure {
    let mut current: Option<&(dyn StdError + 'static)> = Some(error);
    let mut timeout = false;
    while let Some(e) = current {
        if let Some(tls) = find_tls(e) {
            return Failure::Tls(tls.to_string());
        }
        if let Some(req) = e.downcast_ref::<reqwest::Error>() {
            timeout |= req.is_timeout();
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            timeout |= io.kind() == std::io::ErrorKind::TimedOut;
        }
        current = e.source();
    }
    if timeout {
        return Failure::Timeout;
    }
    // The innermost message is the informative one ("Connection refused (os error 111)").
    let mut innermost = error.to_string();
    let mut current = error.source();
    while let Some(e) = current {
        innermost = e.to_string();
        current = e.source();
    }
    Failure::Connection(clip(&innermost))
}
