//! Who is asking, as `k8s.io/apiserver`'s delegating authenticator decides
//! (`pkg/authentication/authenticatorfactory/delegating.go`: request header, then client
//! certificate, then bearer token; the first that authenticates wins):
//!
//! 1. a client certificate that verifies against `requestheader-client-ca-file` for client
//!    authentication, with a common name in `requestheader-allowed-names` (or any, when the
//!    list is empty): the user is read from the identity headers (`X-Remote-User`,
//!    `X-Remote-Group`, `X-Remote-Extra-*` by default). Those headers are never read on a
//!    request without such a certificate: anyone could claim to be anyone;
//! 2. a client certificate that verifies against `client-ca-file`: user = CN, groups = O;
//! 3. `Authorization: Bearer <token>`: a TokenReview, answers kept [`TOKEN_TTL`].
//!
//! Nothing else is accepted: no anonymous user (DESIGN invariant 13).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use http::HeaderMap;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;

use super::auth_config::AuthConfig;
use super::reviews::{ReviewError, Reviewer, UserInfo};
use super::ttl_cache::TtlCache;

/// How long a TokenReview's answer is kept (`--authentication-token-webhook-cache-ttl`'s
/// delegated default).
pub const TOKEN_TTL: Duration = Duration::from_secs(10);

/// The authenticators of one authentication configuration.
pub struct Authenticators {
    config: AuthConfig,
    request_header: Option<Arc<dyn ClientCertVerifier>>,
    client_ca: Option<Arc<dyn ClientCertVerifier>>,
}

impl std::fmt::Debug for Authenticators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticators")
            .field("request_header", &self.request_header.is_some())
            .field("client_ca", &self.client_ca.is_some())
            .field("allowed_names", &self.config.allowed_names)
            .finish()
    }
}

impl Authenticators {
    /// The authenticators `config` describes.
    pub fn new(config: AuthConfig) -> Self {
        let verifier = |roots: &Option<Arc<rustls::RootCertStore>>| {
            roots.as_ref().and_then(|roots| {
                WebPkiClientVerifier::builder_with_provider(
                    roots.clone(),
                    Arc::new(rustls::crypto::ring::default_provider()),
                )
                .build()
                .ok()
            })
        };
        Self {
            request_header: verifier(&config.request_header_ca),
            client_ca: verifier(&config.client_ca),
            config,
        }
    }

    /// Whether front-proxy requests can be authenticated (the ConfigMap has been read).
    pub fn has_request_header(&self) -> bool {
        self.request_header.is_some()
    }
}

/// Why a request is not authenticated (both are a 401 to the caller, as in Kubernetes; a
/// review that could not be made is also logged).
#[derive(Debug, thiserror::Error)]
pub enum AuthnError {
    /// No credential authenticated.
    #[error("no valid credentials")]
    Unauthenticated,
    /// The TokenReview failed.
    #[error(transparent)]
    Review(#[from] ReviewError),
}

/// Tokens' answers, keyed by the token's SHA-256 (the token itself is never kept).
pub type TokenCache = TtlCache<[u8; 32], Option<UserInfo>>;

/// Authenticates a request: `peer` is the client's certificate chain (end entity first).
pub async fn authenticate(
    authenticators: &Authenticators,
    peer: Option<&[CertificateDer<'static>]>,
    headers: &HeaderMap,
    reviewer: &dyn Reviewer,
    tokens: &TokenCache,
) -> Result<UserInfo, AuthnError> {
    if let Some((end_entity, intermediates)) = peer.and_then(|chain| chain.split_first()) {
        if let Some(verifier) = &authenticators.request_header
            && verifier
                .verify_client_cert(end_entity, intermediates, UnixTime::now())
                .is_ok()
            && name_allowed(end_entity, &authenticators.config.allowed_names)
            && let Some(user) = from_headers(&authenticators.config, headers)
        {
            return Ok(user);
        }
        if let Some(verifier) = &authenticators.client_ca
            && verifier
                .verify_client_cert(end_entity, intermediates, UnixTime::now())
                .is_ok()
            && let Some(user) = from_certificate(end_entity)
        {
            return Ok(user);
        }
    }
    let Some(token) = bearer_token(headers) else {
        return Err(AuthnError::Unauthenticated);
    };
    let key: [u8; 32] = {
        use sha2::{Digest, Sha256};
        Sha256::digest(token.as_bytes()).into()
    };
    let now = Instant::now();
    let answer = match tokens.get(&key, now) {
        Some(answer) => answer,
        None => {
            let answer = reviewer.token_review(token).await?;
            tokens.insert(key, answer.clone(), TOKEN_TTL, now);
            answer
        }
    };
    answer.ok_or(AuthnError::Unauthenticated)
}

/// The token of `Authorization: Bearer <token>`.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether the front proxy's certificate has an allowed common name.
fn name_allowed(end_entity: &CertificateDer<'_>, allowed: &[String]) -> bool {
    if allowed.is_empty() {
        return true;
    }
    subject(end_entity).is_some_and(|(common_name, _)| allowed.contains(&common_name))
}

/// `(CN, [O...])` of a certificate's subject.
fn subject(certificate: &CertificateDer<'_>) -> Option<(String, Vec<String>)> {
    let (_, parsed) = x509_parser::parse_x509_certificate(certificate.as_ref()).ok()?;
    let subject = parsed.subject();
    let common_name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .unwrap_or_default()
        .to_owned();
    let organizations = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_owned))
        .collect();
    Some((common_name, organizations))
}

fn from_certificate(end_entity: &CertificateDer<'_>) -> Option<UserInfo> {
    let (name, groups) = subject(end_entity)?;
    (!name.is_empty()).then(|| UserInfo {
        name,
        groups,
        ..UserInfo::default()
    })
}

/// The user the identity headers name (`headerrequest.NewDynamicVerifyOptionsSecure`'s
/// request-header authenticator): the first non-empty user header; every value of every group
/// header; each `<prefix><key>` header's values under the lower-cased, unescaped key.
fn from_headers(config: &AuthConfig, headers: &HeaderMap) -> Option<UserInfo> {
    let first = |names: &[String]| {
        names.iter().find_map(|name| {
            headers
                .get(name.as_str())
                .and_then(|value| value.to_str().ok())
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
        })
    };
    let name = first(&config.username_headers)?;
    let mut groups = Vec::new();
    for header in &config.group_headers {
        for value in headers.get_all(header.as_str()) {
            if let Ok(value) = value.to_str()
                && !value.is_empty()
            {
                groups.push(value.to_owned());
            }
        }
    }
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (header, value) in headers {
        for prefix in &config.extra_prefixes {
            let Some(key) = strip_prefix_ignore_case(header.as_str(), prefix) else {
                continue;
            };
            if let Ok(value) = value.to_str() {
                extra
                    .entry(unescape_extra_key(key))
                    .or_default()
                    .push(value.to_owned());
            }
        }
    }
    Some(UserInfo {
        name,
        uid: first(&config.uid_headers).unwrap_or_default(),
        groups,
        extra,
    })
}

fn strip_prefix_ignore_case<'a>(header: &'a str, prefix: &str) -> Option<&'a str> {
    let head = header.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &header[prefix.len()..])
        .filter(|key| !key.is_empty())
}

/// Extra keys travel lower-cased and percent-encoded (`unescapeExtraKey`).
fn unescape_extra_key(key: &str) -> String {
    let lower = key.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let Some(hex) = lower.get(index + 1..index + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8(out).unwrap_or(lower)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_keys_are_unescaped_and_lower_cased() {
        assert_eq!(unescape_extra_key("Scopes"), "scopes");
        assert_eq!(
            unescape_extra_key("example.org%2fdepartment"),
            "example.org/department"
        );
    }

    #[test]
    fn only_bearer_tokens_are_taken_from_the_authorization_header() {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::AUTHORIZATION, "Bearer abc".parse().unwrap());
        assert_eq!(bearer_token(&headers), Some("abc"));
        headers.insert(http::header::AUTHORIZATION, "Basic abc".parse().unwrap());
        assert_eq!(bearer_token(&headers), None);
    }
}
