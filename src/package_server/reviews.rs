//! The two reviews an extension API server asks the cluster for: `TokenReview` (who a bearer
//! token is) and `SubjectAccessReview` (may this user do this). The only requests the package
//! API makes; [`Reviewer`] is the seam tests replace.

use std::collections::BTreeMap;

use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{SubjectAccessReview, SubjectAccessReviewSpec};
use kube::api::{Api, PostParams};

/// An authenticated user.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct UserInfo {
    /// User name.
    pub name: String,
    /// UID, when known.
    pub uid: String,
    /// Groups.
    pub groups: Vec<String>,
    /// Extra attributes (keys lower-case).
    pub extra: BTreeMap<String, Vec<String>>,
}

/// What the authorizer answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessDecision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// The authorizer's reason (shown in a 403).
    pub reason: String,
}

/// A review could not be made (the API server is unreachable or refused opcat).
#[derive(Debug, thiserror::Error)]
#[error("cannot create a {review}")]
pub struct ReviewError {
    /// `TokenReview` or `SubjectAccessReview`.
    pub review: &'static str,
    /// The client's error (never holds the token).
    #[source]
    pub source: kube::Error,
}

/// Asks the cluster.
pub trait Reviewer: Send + Sync {
    /// The user `token` belongs to; `None` when it does not authenticate.
    fn token_review(&self, token: &str) -> BoxFuture<'_, Result<Option<UserInfo>, ReviewError>>;
    /// Whether `spec` is allowed.
    fn access_review(
        &self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'_, Result<AccessDecision, ReviewError>>;
}

/// Reviews through the API server with opcat's client.
pub struct KubeReviewer {
    client: kube::Client,
}

impl KubeReviewer {
    /// A reviewer using `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

impl Reviewer for KubeReviewer {
    fn token_review(&self, token: &str) -> BoxFuture<'_, Result<Option<UserInfo>, ReviewError>> {
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_owned()),
                audiences: None,
            },
            ..TokenReview::default()
        };
        async move {
            let api: Api<TokenReview> = Api::all(self.client.clone());
            let answer = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|source| ReviewError {
                    review: "TokenReview",
                    source,
                })?;
            let Some(status) = answer.status.filter(|s| s.authenticated == Some(true)) else {
                return Ok(None);
            };
            let user = status.user.unwrap_or_default();
            Ok(Some(UserInfo {
                name: user.username.unwrap_or_default(),
                uid: user.uid.unwrap_or_default(),
                groups: user.groups.unwrap_or_default(),
                extra: user.extra.unwrap_or_default(),
            }))
        }
        .boxed()
    }

    fn access_review(
        &self,
        spec: SubjectAccessReviewSpec,
    ) -> BoxFuture<'_, Result<AccessDecision, ReviewError>> {
        async move {
            let api: Api<SubjectAccessReview> = Api::all(self.client.clone());
            let review = SubjectAccessReview {
                spec,
                ..SubjectAccessReview::default()
            };
            let answer = api
                .create(&PostParams::default(), &review)
                .await
                .map_err(|source| ReviewError {
                    review: "SubjectAccessReview",
                    source,
                })?;
            let status = answer.status.unwrap_or_default();
            Ok(AccessDecision {
                allowed: status.allowed && status.denied != Some(true),
                reason: status.reason.unwrap_or_default(),
            })
        }
        .boxed()
    }
}
