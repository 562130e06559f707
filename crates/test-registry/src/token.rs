//! An in-process token server for distribution's `auth: token` (registry-lab §1.6).
//!
//! `GET /token?service=S&scope=repository:NAME:ACTIONS` with Basic credentials answers
//! `{"token","access_token","expires_in","issued_at"}`. The token is an RS256 JWT whose header
//! carries `kid` (libtrust fingerprint of the signing key) and `x5c` (the signing certificate,
//! which is also the registry's `rootcertbundle`); claims `iss`, `sub`, `aud` (a plain string),
//! `exp`, `nbf`, `iat`, `jti`, `access`. Bad credentials get 401; no credentials, or a
//! repository the user is not allowed, get a token with no actions for it.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use sha2::Digest as _;

use crate::distribution::User;
use crate::require_tool;
use crate::tls::TestCa;

/// A running token server; stops when dropped.
pub struct TokenIssuer {
    addr: SocketAddr,
    /// PEM certificate of the JWT signing key (distribution's `rootcertbundle`).
    pub signing_cert: PathBuf,
    _server: crate::fake::ServerThread,
}

struct Issuer {
    users: HashMap<String, User>,
    key: ring::signature::RsaKeyPair,
    kid: String,
    x5c: String,
    counter: AtomicU64,
}

impl TokenIssuer {
    /// `auth.token.service` of the registry and the JWT `aud`.
    pub const SERVICE: &'static str = "opcat-test-registry";
    /// `auth.token.issuer` of the registry and the JWT `iss`.
    pub const ISSUER: &'static str = "opcat-test-issuer";

    /// Creates an RSA signing key (with `openssl`) and starts serving on loopback TLS.
    pub fn start(dir: &Path, ca: &TestCa, users: Vec<User>) -> TokenIssuer {
        let openssl = require_tool("openssl");
        let key_path = dir.join("sign.key");
        let cert_path = dir.join("sign.crt");
        run(Command::new(&openssl)
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
            ])
            .args(["-subj", "/CN=opcat-test-token-signer", "-keyout"])
            .arg(&key_path)
            .arg("-out")
            .arg(&cert_path));
        let spki = run(Command::new(&openssl)
            .args(["pkey", "-pubout", "-outform", "DER", "-in"])
            .arg(&key_path));
        let cert_der = run(Command::new(&openssl)
            .args(["x509", "-outform", "DER", "-in"])
            .arg(&cert_path));
        let pkcs8 = pem_body(&std::fs::read_to_string(&key_path).expect("read signing key"));
        let key = ring::signature::RsaKeyPair::from_pkcs8(&pkcs8).expect("RSA signing key");
        let issuer = Arc::new(Issuer {
            users: users.into_iter().map(|u| (u.username.clone(), u)).collect(),
            key,
            kid: libtrust_kid(&spki),
            x5c: base64::engine::general_purpose::STANDARD.encode(cert_der),
            counter: AtomicU64::new(0),
        });
        let router = axum::Router::new()
            .route("/token", get(token))
            .with_state(issuer);
        let (addr, server) = crate::fake::ServerThread::spawn(router, Some(ca.server_config()));
        TokenIssuer {
            addr,
            signing_cert: cert_path,
            _server: server,
        }
    }

    /// The `realm` URL.
    pub fn realm(&self) -> String {
        format!("https://{}/token", self.addr)
    }
}

fn run(command: &mut Command) -> Vec<u8> {
    let output = command.output().expect("run openssl");
    assert!(
        output.status.success(),
        "openssl failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn pem_body(pem: &str) -> Vec<u8> {
    let body: String = pem
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("PEM body")
}

/// libtrust key ID: base32(sha256(SPKI DER)[..30]) in 12 groups of 4, joined by `:`.
fn libtrust_kid(spki_der: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let hash = sha2::Sha256::digest(spki_der);
    let mut bits: u64 = 0;
    let mut nbits = 0;
    let mut out = String::new();
    for byte in &hash[..30] {
        bits = (bits << 8) | u64::from(*byte);
        nbits += 8;
        while nbits >= 5 {
            nbits -= 5;
            out.push(ALPHABET[((bits >> nbits) & 31) as usize] as char);
        }
    }
    out.as_bytes()
        .chunks(4)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .collect::<Vec<_>>()
        .join(":")
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

async fn token(
    State(issuer): State<Arc<Issuer>>,
    Query(query): Query<Vec<(String, String)>>,
    headers: HeaderMap,
) -> Response {
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
        .and_then(|v| String::from_utf8(v).ok());
    let user = match basic {
        None => None,
        Some(pair) => {
            let (name, password) = pair.split_once(':').unwrap_or((&pair, ""));
            match issuer.users.get(name) {
                Some(user) if user.password == password => Some(user.clone()),
                _ => {
                    return (
                        StatusCode::UNAUTHORIZED,
                        [(header::WWW_AUTHENTICATE, "Basic realm=\"opcat-test-token\"")],
                        r#"{"errors":[{"code":"UNAUTHORIZED","message":"bad credentials"}]}"#,
                    )
                        .into_response();
                }
            }
        }
    };
    let scopes = query
        .iter()
        .filter(|(k, _)| k == "scope")
        .flat_map(|(_, v)| v.split(' '))
        .filter_map(parse_scope);
    let access: Vec<serde_json::Value> = scopes
        .map(|(kind, name, actions)| {
            let allowed = user.as_ref().is_some_and(|u| {
                u.repositories
                    .as_ref()
                    .is_none_or(|repos| repos.contains(&name))
            });
            let actions: Vec<&str> = if allowed { actions } else { Vec::new() };
            serde_json::json!({ "type": kind, "name": name, "actions": actions })
        })
        .collect();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let header = serde_json::json!({
        "typ": "JWT", "alg": "RS256", "kid": issuer.kid, "x5c": [issuer.x5c],
    });
    let claims = serde_json::json!({
        "iss": TokenIssuer::ISSUER,
        "sub": user.as_ref().map(|u| u.username.clone()).unwrap_or_default(),
        "aud": TokenIssuer::SERVICE,
        "exp": now + 300, "nbf": now - 5, "iat": now,
        "jti": format!("opcat-{}", issuer.counter.fetch_add(1, Ordering::Relaxed)),
        "access": access,
    });
    let signing_input = format!(
        "{}.{}",
        b64url(header.to_string().as_bytes()),
        b64url(claims.to_string().as_bytes())
    );
    let mut signature = vec![0; issuer.key.public().modulus_len()];
    issuer
        .key
        .sign(
            &ring::signature::RSA_PKCS1_SHA256,
            &ring::rand::SystemRandom::new(),
            signing_input.as_bytes(),
            &mut signature,
        )
        .expect("RS256 signature");
    let jwt = format!("{signing_input}.{}", b64url(&signature));
    let body = serde_json::json!({ "token": jwt, "access_token": jwt, "expires_in": 300 });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// `repository:name/with/slashes:pull,push` → (type, name, actions).
fn parse_scope(scope: &str) -> Option<(String, String, Vec<&str>)> {
    let (kind, rest) = scope.split_once(':')?;
    let (name, actions) = rest.rsplit_once(':')?;
    Some((
        kind.to_owned(),
        name.to_owned(),
        actions.split(',').filter(|a| !a.is_empty()).collect(),
    ))
}
