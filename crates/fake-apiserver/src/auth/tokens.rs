//! The token table: static user tokens (like kube-apiserver's `--token-auth-file`) and
//! ServiceAccount tokens.
//!
//! * `Authorization: Bearer <token>` is parsed as
//!   `staging/src/k8s.io/apiserver/pkg/authentication/request/bearertoken/bearertoken.go` does
//!   (scheme case-insensitive, empty tokens ignored); an unknown token fails the request with
//!   401 `Unauthorized` (`filters/authentication.go`, `Unauthorized`).
//! * A ServiceAccount token authenticates `system:serviceaccount:<ns>:<name>` in groups
//!   `system:serviceaccounts`, `system:serviceaccounts:<ns>` and `system:authenticated`, with
//!   the ServiceAccount's uid as the user's uid and the `authentication.kubernetes.io/credential-id`
//!   extra of a bound token (`pkg/serviceaccount/claims.go`). Like the token validator
//!   (`pkg/serviceaccount/legacy.go`, `claims.go`), it stops working when the ServiceAccount
//!   is deleted, being deleted or replaced by one with another uid.
//!
//! What differs: tokens are opaque strings, not signed JWTs; they never expire; their audience
//! is always the API server's (`https://kubernetes.default.svc.cluster.local`). A request
//! whose `Authorization` header is not a bearer token is refused with 401 (kube-apiserver would
//! try its other authenticators and then treat it as anonymous).

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use http::HeaderMap;
use serde_json::Value;

use super::{ADMIN, AUTHENTICATED, UserInfo};
use crate::cluster::{Cluster, is_deleting};
use crate::resources::ResourceKey;
use crate::status::ApiError;

/// The audience of every token (kubeadm's default `--api-audiences`).
pub(crate) const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// What a token stands for.
#[derive(Clone, Debug)]
enum Credential {
    User(Arc<UserInfo>),
    ServiceAccount {
        namespace: String,
        name: String,
        /// The uid of the ServiceAccount the token was minted for (`None`: it did not exist).
        uid: Option<String>,
        /// The token's own id (`jti`).
        id: String,
    },
}

/// Registered tokens.
#[derive(Debug, Default)]
pub(crate) struct Tokens {
    table: RwLock<HashMap<String, Credential>>,
    minted: AtomicU64,
    seed: RandomState,
}

impl Tokens {
    /// Registers a static user token (groups get `system:authenticated`).
    pub(crate) fn add_user(&self, token: &str, name: &str, groups: &[String]) {
        let user = Arc::new(UserInfo::authenticated(name, "", groups));
        self.write()
            .insert(token.to_string(), Credential::User(user));
    }

    /// Mints a token for the ServiceAccount `namespace/name`, bound to its current uid.
    pub(crate) fn mint_service_account(
        &self,
        cluster: &Cluster,
        namespace: &str,
        name: &str,
    ) -> String {
        let n = self.minted.fetch_add(1, Ordering::Relaxed);
        let random = self.seed.hash_one(n);
        let token = format!("fake-sa-token.{n}.{random:016x}");
        let uid = service_account(cluster, namespace, name)
            .and_then(|sa| sa.pointer("/metadata/uid").and_then(Value::as_str))
            .map(str::to_string);
        let credential = Credential::ServiceAccount {
            namespace: namespace.to_string(),
            name: name.to_string(),
            uid,
            id: format!("{:016x}", self.seed.hash_one((n, "jti"))),
        };
        self.write().insert(token.clone(), credential);
        token
    }

    /// The identity of a request: its bearer token's, or the admin's without credentials.
    pub(crate) fn authenticate(
        &self,
        headers: &HeaderMap,
        cluster: &Mutex<Cluster>,
    ) -> Result<Arc<UserInfo>, ApiError> {
        let Some(header) = headers.get(http::header::AUTHORIZATION) else {
            return Ok(ADMIN.clone());
        };
        let text = header
            .to_str()
            .map_err(|_| ApiError::unauthorized())?
            .trim();
        if text.is_empty() {
            return Ok(ADMIN.clone());
        }
        let token = bearer(text).ok_or_else(ApiError::unauthorized)?;
        let credential = self
            .read()
            .get(token)
            .cloned()
            .ok_or_else(ApiError::unauthorized)?;
        match credential {
            Credential::User(user) => Ok(user),
            sa @ Credential::ServiceAccount { .. } => {
                let cluster = cluster.lock().unwrap_or_else(PoisonError::into_inner);
                resolve(&cluster, &sa)
                    .map(Arc::new)
                    .ok_or_else(ApiError::unauthorized)
            }
        }
    }

    /// The identity `token` stands for now (TokenReview), `None` when it authenticates nobody.
    pub(crate) fn lookup(&self, cluster: &Cluster, token: &str) -> Option<Arc<UserInfo>> {
        match self.read().get(token)? {
            Credential::User(user) => Some(user.clone()),
            sa @ Credential::ServiceAccount { .. } => resolve(cluster, sa).map(Arc::new),
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Credential>> {
        self.table.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Credential>> {
        self.table.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The token of `Bearer <token>` (`bearertoken.go`: scheme case-insensitive, at most one
/// space-separated word after it counts).
fn bearer(header: &str) -> Option<&str> {
    let mut parts = header.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

fn service_account<'a>(cluster: &'a Cluster, namespace: &str, name: &str) -> Option<&'a Value> {
    let key = ResourceKey {
        group: String::new(),
        plural: "serviceaccounts".into(),
    };
    cluster.store.get(&key, namespace, name).map(|sa| &**sa)
}

/// The user of a ServiceAccount token, if its ServiceAccount still stands.
fn resolve(cluster: &Cluster, credential: &Credential) -> Option<UserInfo> {
    let Credential::ServiceAccount {
        namespace,
        name,
        uid,
        id,
    } = credential
    else {
        return None;
    };
    let sa = service_account(cluster, namespace, name).filter(|sa| !is_deleting(sa))?;
    let current = sa.pointer("/metadata/uid").and_then(Value::as_str)?;
    if uid.as_deref().is_some_and(|minted| minted != current) {
        return None;
    }
    let groups = [
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{namespace}"),
        AUTHENTICATED.to_string(),
    ];
    let mut user = UserInfo::authenticated(
        &format!("system:serviceaccount:{namespace}:{name}"),
        current,
        &groups,
    );
    user.extra
        .insert(CREDENTIAL_ID.to_string(), vec![format!("JTI={id}")]);
    Some(user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_parse_like_the_bearertoken_authenticator() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer abc"), Some("abc"));
        assert_eq!(bearer("Bearer abc extra"), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(
            bearer("Bearer  abc"),
            None,
            "an empty first word is no token"
        );
    }
}
