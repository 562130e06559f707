//! Authentication and authorization, as kube-apiserver's filter chain does them before any
//! handler runs (`staging/src/k8s.io/apiserver/pkg/endpoints/filters/authentication.go`, then
//! `authorization.go`):
//!
//! * **Identity** ([`tokens`]): `Authorization: Bearer <token>` is looked up in a token table
//!   (users registered with [`crate::Builder::user_token`], ServiceAccount tokens minted by
//!   [`crate::FakeApiServer::service_account_token`]); an unknown token is 401 `Unauthorized`.
//!   A request without an `Authorization` header is the built-in admin `system:admin`
//!   (`system:masters`, `system:authenticated`) — the fake's stand-in for a client
//!   certificate of the cluster admin, so every test that predates authentication keeps working.
//! * **Request attributes** ([`request_info`]): verb, API group, resource, subresource,
//!   namespace and name derived from the URL like `RequestInfoFactory`.
//! * **Authorization** ([`rbac`]): `system:masters` is allowed before anything else is looked
//!   at (`authorizerfactory.NewPrivilegedGroups`); everyone else goes through the RBAC
//!   authorizer over the stored Roles, ClusterRoles and bindings. A denial is 403 `Forbidden`
//!   worded by `responsewriters.Forbidden`.
//! * **Reviews** ([`reviews`]): SubjectAccessReview (and its self, local and rules variants)
//!   answered by the same authorizer; TokenReview and SelfSubjectReview from the token table.
//! * **Escalation prevention** ([`escalation`]): Roles and bindings that would grant more
//!   than their writer holds are refused unless it may `escalate` or `bind`.
//! * **Default policy** ([`bootstrap`]): the bootstrap ClusterRoles, ClusterRoleBindings and
//!   the `kube-system` Role kube-apiserver creates at start.

pub(crate) mod bootstrap;
mod clients;
pub(crate) mod escalation;
pub(crate) mod index;
pub(crate) mod rbac;
pub(crate) mod request_info;
pub(crate) mod reviews;
pub(crate) mod tokens;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use http::HeaderMap;

use crate::cluster::Cluster;
use crate::status::ApiError;
use request_info::RequestInfo;

/// `user.SystemPrivilegedGroup`: always allowed.
pub(crate) const MASTERS: &str = "system:masters";
/// `user.AllAuthenticated`: added to every authenticated user.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";

/// Who a request comes from (`k8s.io/apiserver/pkg/authentication/user.Info`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub(crate) name: String,
    pub(crate) uid: String,
    pub(crate) groups: Vec<String>,
    pub(crate) extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with `groups`, plus `system:authenticated` as `AuthenticatedGroupAdder` adds it
    /// (`staging/src/k8s.io/apiserver/pkg/authentication/group/authenticated_group_adder.go`).
    pub(crate) fn authenticated(name: &str, uid: &str, groups: &[String]) -> Self {
        let mut groups = groups.to_vec();
        if !groups
            .iter()
            .any(|g| g == AUTHENTICATED || g == "system:unauthenticated")
        {
            groups.push(AUTHENTICATED.to_string());
        }
        Self {
            name: name.to_string(),
            uid: uid.to_string(),
            groups,
            extra: BTreeMap::new(),
        }
    }

    /// In `system:masters`: every request is allowed without looking at RBAC.
    pub(crate) fn is_privileged(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// The identity of requests without credentials.
pub(crate) static ADMIN: LazyLock<Arc<UserInfo>> = LazyLock::new(|| {
    Arc::new(UserInfo::authenticated(
        "system:admin",
        "",
        &[MASTERS.to_string()],
    ))
});

/// Authentication then authorization of one request (the two filters in that order). The
/// admin identity returns before the URL is even parsed: the bench's requests pay one header
/// lookup and a reference count.
pub(crate) fn guard(
    shared: &crate::server::Shared,
    method: &http::Method,
    headers: &HeaderMap,
    path: &str,
    query: &[(String, String)],
) -> Result<Arc<UserInfo>, ApiError> {
    let user = shared.tokens.authenticate(headers, &shared.cluster)?;
    if user.is_privileged() {
        return Ok(user);
    }
    let info = RequestInfo::new(method.as_str(), path, query);
    let cluster: std::sync::MutexGuard<'_, Cluster> = shared.cluster();
    match rbac::authorize(&cluster, &user, &info) {
        rbac::Decision::Allow(_) => Ok(user),
        rbac::Decision::NoOpinion(reason) => Err(rbac::forbidden(&user, &info, &reason)),
    }
}
