//! Aggregating the preflight check (a manifest HEAD per image with the propagated credentials,
//! done by the registry code) into the `PullCredentialsReady` condition of a Subscription, so a
//! missing or wrong credential shows before pods sit in `ImagePullBackOff`.
//!
//! Images in registries that no propagated secret matches are reported as "no credentials,
//! assumed public": they are not failures, because a public image needs none.

use std::collections::BTreeSet;
use std::fmt;

use super::vocabulary::{
    CONDITION_PULL_CREDENTIALS_READY, ConditionStatus, MAX_MESSAGE_LEN, PullSecretCondition,
    REASON_FORBIDDEN, REASON_IMAGE_NOT_FOUND, REASON_IMAGES_RESOLVABLE, REASON_MULTIPLE_FAILURES,
    REASON_REGISTRY_ERROR, REASON_UNAUTHORIZED, bounded_list,
};

/// Longest error detail kept from one registry error.
const MAX_DETAIL_LEN: usize = 160;

/// How resolving one image went.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImageOutcome {
    /// The manifest resolved with the matching credentials.
    Resolved,
    /// No propagated secret matches the registry; not checked, assumed public.
    NoCredentials,
    /// 401: the credentials were rejected. `secrets` names the secrets tried.
    Unauthorized { secrets: Vec<String> },
    /// 403: the credentials are valid but may not pull this repository.
    Forbidden { secrets: Vec<String> },
    /// 404: the registry has no such manifest (or hides it from these credentials).
    NotFound,
    /// Any other failure. `detail` comes from the registry client and must already be free of
    /// credentials; it is cut to a short, single-line text here.
    Error { status: Option<u16>, detail: String },
}

/// The preflight result for one image.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ImageCheck {
    /// The image reference as the pod spec or `relatedImages` names it.
    pub image: String,
    /// The registry host it resolves to.
    pub registry: String,
    /// What happened.
    pub outcome: ImageOutcome,
}

impl ImageCheck {
    fn failure_reason(&self) -> Option<&'static str> {
        match self.outcome {
            ImageOutcome::Resolved | ImageOutcome::NoCredentials => None,
            ImageOutcome::Unauthorized { .. } => Some(REASON_UNAUTHORIZED),
            ImageOutcome::Forbidden { .. } => Some(REASON_FORBIDDEN),
            ImageOutcome::NotFound => Some(REASON_IMAGE_NOT_FOUND),
            ImageOutcome::Error { .. } => Some(REASON_REGISTRY_ERROR),
        }
    }
}

impl fmt::Display for ImageCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            image, registry, ..
        } = self;
        match &self.outcome {
            ImageOutcome::Resolved => write!(f, "{image}: resolved at registry {registry}"),
            ImageOutcome::NoCredentials => {
                write!(
                    f,
                    "{image}: no credentials for registry {registry}, assumed public"
                )
            }
            ImageOutcome::Unauthorized { secrets } => write!(
                f,
                "{image}: registry {registry} rejected the credentials (401) of {}",
                secret_list(secrets)
            ),
            ImageOutcome::Forbidden { secrets } => write!(
                f,
                "{image}: registry {registry} denied access (403) with {}",
                secret_list(secrets)
            ),
            ImageOutcome::NotFound => {
                write!(f, "{image}: not found (404) at registry {registry}")
            }
            ImageOutcome::Error { status, detail } => {
                let detail = one_line(detail);
                match status {
                    Some(status) => write!(
                        f,
                        "{image}: registry {registry} answered {status}: {detail}"
                    ),
                    None => write!(f, "{image}: registry {registry} failed: {detail}"),
                }
            }
        }
    }
}

fn secret_list(secrets: &[String]) -> String {
    if secrets.is_empty() {
        "no secret".to_owned()
    } else {
        format!("secrets [{}]", secrets.join(", "))
    }
}

fn one_line(detail: &str) -> String {
    let flat: String = detail
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    match flat.char_indices().nth(MAX_DETAIL_LEN) {
        Some((cut, _)) => format!("{}...", &flat[..cut]),
        None => flat,
    }
}

/// The `PullCredentialsReady` condition for `checks`: `True` when no image failed (images
/// assumed public are listed in the message), else `False` with the failure's reason (or
/// `MultipleFailures`) and each failing image, registry and secret names, failures first, sorted.
pub fn credentials_condition(checks: &[ImageCheck]) -> PullSecretCondition {
    // Sorted by image and deduplicated, so the message is stable and the status does not churn.
    let checks: Vec<&ImageCheck> = checks.iter().collect::<BTreeSet<_>>().into_iter().collect();
    let failures: Vec<&ImageCheck> = checks
        .iter()
        .copied()
        .filter(|check| check.failure_reason().is_some())
        .collect();
    let public: Vec<String> = checks
        .iter()
        .filter(|check| check.outcome == ImageOutcome::NoCredentials)
        .map(ToString::to_string)
        .collect();
    if failures.is_empty() {
        let resolved = checks.len() - public.len();
        let lead = format!(
            "{resolved} of {} images resolved with the pull secrets",
            checks.len()
        );
        let message = if public.is_empty() {
            lead
        } else {
            bounded_list(&format!("{lead}; "), &public, MAX_MESSAGE_LEN)
        };
        return PullSecretCondition {
            type_: CONDITION_PULL_CREDENTIALS_READY,
            status: ConditionStatus::True,
            reason: REASON_IMAGES_RESOLVABLE,
            message,
        };
    }
    let reasons: BTreeSet<&'static str> = failures
        .iter()
        .filter_map(|check| check.failure_reason())
        .collect();
    let reason = match reasons.iter().next() {
        Some(only) if reasons.len() == 1 => only,
        _ => REASON_MULTIPLE_FAILURES,
    };
    let mut items: Vec<String> = failures.iter().map(ToString::to_string).collect();
    items.extend(public);
    let lead = format!(
        "{} of {} images cannot be pulled: ",
        failures.len(),
        checks.len()
    );
    PullSecretCondition {
        type_: CONDITION_PULL_CREDENTIALS_READY,
        status: ConditionStatus::False,
        reason,
        message: bounded_list(&lead, &items, MAX_MESSAGE_LEN),
    }
}
