//! Preflight (issue 6 item 6): can the images the bundle runs be pulled with the propagated
//! credentials, the way the kubelet would match them? One manifest HEAD per image whose
//! registry a propagated copy has credentials for; images no copy matches are "no credentials,
//! assumed public" without any request. The result is the `PullCredentialsReady` condition.
//!
//! Results are cached by (bundle image, credentials fingerprint), so a converged cluster makes no
//! registry requests; a rotated source or a changed set of copies runs it again, and a result
//! with a failure that may heal by itself (404, 5xx, timeout) is checked again after
//! [`RECHECK_AFTER`]. Touches the registry.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::clearing_cache::ClearingCache;
use crate::pull_secrets::{ImageCheck, ImageOutcome, PullSecretCondition, credentials_condition};
use crate::registry::error::Tried;
use crate::registry::{ImageRef, Keyring, PullAuth, Registry, RegistryError};
use crate::timing::elapsed;

/// Cached preflight results.
const MAX_ENTRIES: usize = 256;

/// The credentials pods will use: copy name → the source Secret the copy carries.
pub type Credentials = BTreeMap<String, Secret>;

/// What a cached result depends on: the bundle image and each copy's name and source
/// `resourceVersion`.
pub fn fingerprint(bundle_image: &str, credentials: &Credentials) -> String {
    let mut key = bundle_image.to_owned();
    for (copy, source) in credentials {
        key.push('|');
        key.push_str(copy);
        key.push('@');
        key.push_str(&source.resource_version().unwrap_or_default());
    }
    key
}

/// How long a result with a failure that may go away without a credential change (a 404
/// before the image is pushed, a registry 5xx or timeout) is reused before it is checked again.
pub const RECHECK_AFTER: Duration = Duration::from_secs(5 * 60);

#[derive(Clone)]
struct Cached {
    condition: PullSecretCondition,
    checked_at: Timestamp,
    /// Whether only a credential change can change the result.
    settled: bool,
}

/// Preflight results by [`fingerprint`].
pub struct PreflightCache {
    results: ClearingCache<String, Cached>,
}

impl Default for PreflightCache {
    fn default() -> Self {
        Self {
            results: ClearingCache::new(MAX_ENTRIES),
        }
    }
}

impl PreflightCache {
    /// The condition for `images` with `credentials`, from the cache or by asking the registry.
    pub async fn condition(
        &self,
        registry: &Registry,
        bundle_image: &str,
        images: &BTreeSet<String>,
        credentials: &Credentials,
        now: Timestamp,
    ) -> PullSecretCondition {
        let key = fingerprint(bundle_image, credentials);
        if let Some(cached) = self.results.get(&key)
            && (cached.settled || elapsed(cached.checked_at, now) < RECHECK_AFTER)
        {
            return cached.condition;
        }
        let keyring = super::observe::keyring(credentials.iter(), str::to_owned);
        let mut checks = Vec::with_capacity(images.len());
        for image in images {
            checks.push(check(registry, image, &keyring).await);
        }
        let condition = credentials_condition(&checks);
        let settled = checks.iter().all(|check| {
            !matches!(
                check.outcome,
                ImageOutcome::NotFound | ImageOutcome::Error { .. }
            )
        });
        tracing::info!(
            bundle = bundle_image,
            images = checks.len(),
            status = condition.status.as_str(),
            reason = condition.reason,
            "pull-credentials preflight"
        );
        self.results.insert(
            key,
            Cached {
                condition: condition.clone(),
                checked_at: now,
                settled,
            },
        );
        condition
    }
}

/// Checks one image.
async fn check(registry: &Registry, image: &str, keyring: &Keyring) -> ImageCheck {
    let reference: ImageRef = match image.parse() {
        Ok(reference) => reference,
        Err(error) => {
            return ImageCheck {
                image: image.to_owned(),
                registry: String::new(),
                outcome: ImageOutcome::Error {
                    status: None,
                    detail: error.to_string(),
                },
            };
        }
    };
    let registry_host = reference.registry().to_owned();
    let outcome = if keyring.lookup(&reference).is_empty() {
        ImageOutcome::NoCredentials
    } else {
        match registry.check_pullable(&reference, keyring).await {
            Ok(check) => match check.auth {
                PullAuth::Secret(_) => ImageOutcome::Resolved,
                PullAuth::AnonymousNoMatch => ImageOutcome::NoCredentials,
            },
            Err(error) => outcome_of(&error),
        }
    };
    ImageCheck {
        image: image.to_owned(),
        registry: registry_host,
        outcome,
    }
}

fn tried_secrets(tried: &Tried) -> Vec<String> {
    match tried {
        Tried::Anonymous { .. } => Vec::new(),
        Tried::Secrets(attempts) => attempts.iter().map(|(name, _)| name.clone()).collect(),
    }
}

/// The preflight outcome of a registry error.
pub fn outcome_of(error: &RegistryError) -> ImageOutcome {
    match error {
        RegistryError::Unauthorized { tried, .. } => ImageOutcome::Unauthorized {
            secrets: tried_secrets(tried),
        },
        RegistryError::Forbidden { tried, .. } => ImageOutcome::Forbidden {
            secrets: tried_secrets(tried),
        },
        RegistryError::NotFound { .. } => ImageOutcome::NotFound,
        other => ImageOutcome::Error {
            status: None,
            detail: other.kind().to_owned(),
        },
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::registry::error::Operation;

    fn source(resource_version: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                resource_version: Some(resource_version.to_owned()),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        }
    }

    #[test]
    fn the_fingerprint_changes_with_the_bundle_the_copies_and_a_rotation() {
        let one = Credentials::from([("copy-a".to_owned(), source("1"))]);
        let rotated = Credentials::from([("copy-a".to_owned(), source("2"))]);
        let base = fingerprint("img@sha256:1", &one);
        assert_eq!(base, fingerprint("img@sha256:1", &one.clone()));
        assert_ne!(base, fingerprint("img@sha256:2", &one));
        assert_ne!(base, fingerprint("img@sha256:1", &rotated));
        assert_ne!(base, fingerprint("img@sha256:1", &Credentials::new()));
    }

    #[test]
    fn registry_errors_become_preflight_outcomes_naming_the_secrets_tried() {
        let unauthorized = RegistryError::Unauthorized {
            operation: Operation::Pull,
            image: "r/op:v1".to_owned(),
            registry: "r".to_owned(),
            detail: String::new(),
            tried: Tried::Secrets(vec![("copy-a".to_owned(), "401 Unauthorized")]),
        };
        assert_eq!(
            outcome_of(&unauthorized),
            ImageOutcome::Unauthorized {
                secrets: vec!["copy-a".to_owned()]
            }
        );
        let not_found = RegistryError::NotFound {
            operation: Operation::Pull,
            image: "r/op:v1".to_owned(),
            registry: "r".to_owned(),
            detail: String::new(),
        };
        assert_eq!(outcome_of(&not_found), ImageOutcome::NotFound);
    }
}
