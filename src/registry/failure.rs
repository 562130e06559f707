//! One failed registry request, classified from oci-client's errors and transport errors, and
//! turned into a [`RegistryError`] once it is known which image and credentials it concerns.
//! Server-provided texts are clipped; request contents never appear.

use std::error::Error as StdError;

use oci_client::errors::{OciDistributionError, OciErrorCode};

use super::error::{Operation, RegistryError, Tried};

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
