//! May this user do this: a SubjectAccessReview per request, as `k8s.io/apiserver`'s
//! delegating authorizer asks it (`pkg/authorization/authorizerfactory/delegating.go`,
//! `plugin/pkg/authorizer/webhook`): the whole review is the cache key, allowed and denied
//! answers are kept [`ALLOW_TTL`] and [`DENY_TTL`], and `system:masters` is always allowed
//! (`DelegatingAuthorizationOptions.AlwaysAllowGroups`, which is how kube-aggregator's
//! availability check, `system:kube-aggregator` in `system:masters`, reads discovery without a
//! review).

use std::time::{Duration, Instant};

use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReviewSpec,
};

use super::request::{ResourceRequest, Target};
use super::reviews::{AccessDecision, ReviewError, Reviewer, UserInfo};
use super::status::ApiError;
use super::ttl_cache::TtlCache;
use super::types::{GROUP, RESOURCE, VERSION};

/// How long an allowed answer is kept.
pub const ALLOW_TTL: Duration = Duration::from_secs(10);
/// How long a denied answer is kept.
pub const DENY_TTL: Duration = Duration::from_secs(10);
/// Groups allowed everything without a review.
pub const ALWAYS_ALLOW_GROUPS: &[&str] = &["system:masters"];

/// Answers by review (the serialized spec).
pub type AccessCache = TtlCache<String, AccessDecision>;

/// Authorizes `target` for `user`: `Ok` when allowed, else the 403 (or 500 when the review
/// could not be made) to answer.
pub async fn authorize(
    user: &UserInfo,
    target: &Target,
    reviewer: &dyn Reviewer,
    cache: &AccessCache,
) -> Result<(), ApiError> {
    if user
        .groups
        .iter()
        .any(|group| ALWAYS_ALLOW_GROUPS.contains(&group.as_str()))
    {
        return Ok(());
    }
    let spec = review_spec(user, target);
    let key = serde_json::to_string(&spec).unwrap_or_default();
    let now = Instant::now();
    let decision = match cache.get(&key, now) {
        Some(decision) => decision,
        None => {
            let decision = reviewer
                .access_review(spec)
                .await
                .map_err(|error: ReviewError| {
                    ApiError::internal(crate::failure::error_chain(&error))
                })?;
            let ttl = if decision.allowed {
                ALLOW_TTL
            } else {
                DENY_TTL
            };
            cache.insert(key, decision.clone(), ttl, now);
            decision
        }
    };
    if decision.allowed {
        return Ok(());
    }
    let mut message = forbidden_message(user, target);
    if !decision.reason.is_empty() {
        message = format!("{message}: {}", decision.reason);
    }
    Err(match target {
        Target::Resource(request) => {
            ApiError::forbidden(message, request.name.as_deref().unwrap_or_default())
        }
        Target::NonResource { .. } => ApiError::forbidden_path(message),
    })
}

/// The review of `target` for `user`.
pub fn review_spec(user: &UserInfo, target: &Target) -> SubjectAccessReviewSpec {
    let mut spec = SubjectAccessReviewSpec {
        user: Some(user.name.clone()),
        groups: Some(user.groups.clone()),
        uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
        extra: (!user.extra.is_empty()).then(|| user.extra.clone()),
        ..SubjectAccessReviewSpec::default()
    };
    match target {
        Target::Resource(request) => {
            spec.resource_attributes = Some(resource_attributes(request));
        }
        Target::NonResource { path, verb } => {
            spec.non_resource_attributes = Some(NonResourceAttributes {
                path: Some(path.clone()),
                verb: Some(verb.clone()),
            });
        }
    }
    spec
}

fn resource_attributes(request: &ResourceRequest) -> ResourceAttributes {
    ResourceAttributes {
        namespace: request.namespace.clone(),
        verb: Some(request.verb.clone()),
        group: Some(GROUP.to_owned()),
        version: Some(VERSION.to_owned()),
        resource: Some(RESOURCE.to_owned()),
        subresource: request.subresource.clone(),
        name: request.name.clone(),
        ..ResourceAttributes::default()
    }
}

/// `forbiddenMessage` of `k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`.
fn forbidden_message(user: &UserInfo, target: &Target) -> String {
    match target {
        Target::NonResource { path, verb } => {
            format!("User {:?} cannot {verb} path {path:?}", user.name)
        }
        Target::Resource(request) => {
            let resource = match &request.subresource {
                Some(subresource) => format!("{RESOURCE}/{subresource}"),
                None => RESOURCE.to_owned(),
            };
            match &request.namespace {
                Some(namespace) => format!(
                    "User {:?} cannot {} resource {resource:?} in API group {GROUP:?} in the namespace {namespace:?}",
                    user.name, request.verb
                ),
                None => format!(
                    "User {:?} cannot {} resource {resource:?} in API group {GROUP:?} at the cluster scope",
                    user.name, request.verb
                ),
            }
        }
    }
}
