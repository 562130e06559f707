//! Status step, the pure part (no client): the status OLM clients read
//! (`connectionState`, `latestImageRegistryPoll` for images, `reason`, `message`) plus opcat's
//! `resolvedImageDigest` (for a registry server: the digest of the content it served),
//! `packageCount` and conditions, computed from the spec checks, the
//! source secrets, the last registry contact and the catalog being served. Equal inputs give an
//! equal status, so a converged object is never written (DESIGN invariant 5).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::tracked::Tracked;
use super::validate::{Interval, SpecCheck};
use crate::api::CatalogSourceStatus;
use crate::api::catalog_source::GrpcConnectionState;
use crate::api::catalog_source_status::{
    CONDITION_READY, READY_REASON_LOADED, READY_REASON_NO_SOURCE, READY_REASON_SPEC_INVALID,
    REASON_INVALID_INTERVAL, REASON_REGISTRY_SERVER_ERROR, REASON_SPEC_INVALID, STATE_CONNECTING,
    STATE_READY, STATE_TRANSIENT_FAILURE,
};
use crate::api::conditions::{DesiredCondition, Status, remove_condition, set_condition};
use crate::controller::catalogs::LoadedCatalog;
use crate::pull_secrets::vocabulary::{
    CONDITION_PULL_SECRET_SOURCE_MISSING, ConditionStatus, PullSecretCondition,
};

/// `Ready` reason before the first registry contact finished.
const READY_REASON_CONNECTING: &str = "Connecting";

/// Everything the status is computed from.
#[derive(Debug)]
pub struct Observed<'a> {
    /// Whether the spec can be served.
    pub spec: &'a SpecCheck,
    /// The poll interval.
    pub interval: &'a Interval,
    /// `PullSecretSourceMissing` (absent for specs opcat cannot serve).
    pub secrets: Option<&'a PullSecretCondition>,
    /// The last registry contact.
    pub tracked: Option<&'a Tracked>,
    /// The catalog being served (for `spec.image` or `spec.address`).
    pub served: Option<&'a LoadedCatalog>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// Now (for condition transition times).
    pub now: Timestamp,
}

/// The status to write, keeping the transition times of conditions that did not change.
pub fn desired(
    current: Option<&CatalogSourceStatus>,
    observed: &Observed<'_>,
) -> CatalogSourceStatus {
    let mut conditions: Vec<Condition> = current
        .and_then(|status| status.conditions.clone())
        .unwrap_or_default();
    let now = Time(observed.now);
    let generation = observed.generation;
    let mut set = |type_: &str, status: Status, reason: &str, message: &str| {
        let condition =
            DesiredCondition::new(type_, status, reason, message).observed_at(generation);
        set_condition(&mut conditions, &condition, &now);
    };

    let raw = match observed.spec {
        SpecCheck::Unsupported { message } => {
            set(
                CONDITION_READY,
                Status::False,
                READY_REASON_SPEC_INVALID,
                message,
            );
            remove_condition(&mut conditions, CONDITION_PULL_SECRET_SOURCE_MISSING);
            return CatalogSourceStatus {
                reason: Some(REASON_SPEC_INVALID.to_owned()),
                message: Some(message.clone()),
                connection_state: Some(GrpcConnectionState {
                    address: None,
                    last_observed_state: STATE_TRANSIENT_FAILURE.to_owned(),
                    last_connect: None,
                }),
                conditions: Some(conditions),
                ..CatalogSourceStatus::default()
            };
        }
        SpecCheck::NoSource { message } => {
            set(
                CONDITION_READY,
                Status::False,
                READY_REASON_NO_SOURCE,
                message,
            );
            remove_condition(&mut conditions, CONDITION_PULL_SECRET_SOURCE_MISSING);
            return CatalogSourceStatus {
                conditions: Some(conditions),
                ..CatalogSourceStatus::default()
            };
        }
        SpecCheck::Image { raw, .. } => (raw, Origin::Image),
        SpecCheck::Address { raw } => (raw, Origin::Server),
    };
    let (raw, origin) = raw;

    if let Some(secrets) = observed.secrets {
        let status = match secrets.status {
            ConditionStatus::True => Status::True,
            ConditionStatus::False => Status::False,
        };
        set(secrets.type_, status, secrets.reason, &secrets.message);
    }

    let served = observed.served.filter(|served| served.image == *raw);
    let served_note = served.map(|served| {
        format!(
            "; still serving the catalog loaded earlier ({})",
            served.digest
        )
    });
    let (state, reason, message) = match observed.tracked.map(|t| &t.failure) {
        None => {
            set(
                CONDITION_READY,
                Status::Unknown,
                READY_REASON_CONNECTING,
                &origin.reading(raw),
            );
            (STATE_CONNECTING, None, None)
        }
        Some(Some(failure)) => {
            let message = format!("{}{}", failure.message, served_note.unwrap_or_default());
            set(
                CONDITION_READY,
                Status::False,
                failure.ready_reason,
                &message,
            );
            (
                STATE_TRANSIENT_FAILURE,
                Some(REASON_REGISTRY_SERVER_ERROR),
                Some(message),
            )
        }
        Some(None) => {
            let loaded = origin.loaded(raw, served);
            set(CONDITION_READY, Status::True, READY_REASON_LOADED, &loaded);
            match observed.interval {
                Interval::Invalid { message, .. } => (
                    STATE_READY,
                    Some(REASON_INVALID_INTERVAL),
                    Some(message.clone()),
                ),
                Interval::NotSet | Interval::Valid(_) => (STATE_READY, None, None),
            }
        }
    };

    CatalogSourceStatus {
        reason: reason.map(str::to_owned),
        message,
        latest_image_registry_poll: match origin {
            Origin::Image => observed.tracked.and_then(|t| t.last_poll).map(Time),
            Origin::Server => None,
        },
        connection_state: Some(GrpcConnectionState {
            address: Some(raw.clone()),
            last_observed_state: state.to_owned(),
            last_connect: observed.tracked.map(|t| Time(t.last_connect)),
        }),
        conditions: Some(conditions),
        resolved_image_digest: served.map(|served| served.digest.to_string()),
        package_count: served
            .map(|served| i64::try_from(served.catalog.packages().count()).unwrap_or(i64::MAX)),
        ..CatalogSourceStatus::default()
    }
}

/// Where the catalog comes from, for messages.
#[derive(Clone, Copy)]
enum Origin {
    Image,
    Server,
}

impl Origin {
    fn reading(self, raw: &str) -> String {
        match self {
            Origin::Image => format!("reading catalog image {raw}"),
            Origin::Server => format!("reading the catalog of registry server {raw}"),
        }
    }

    fn loaded(self, raw: &str, served: Option<&LoadedCatalog>) -> String {
        let what = match self {
            Origin::Image => format!("catalog image {raw}"),
            Origin::Server => format!("the catalog of registry server {raw}"),
        };
        match served {
            Some(served) => format!(
                "{what} ({}) loaded: {} packages",
                served.digest,
                served.catalog.packages().count()
            ),
            None => format!("{what} loaded"),
        }
    }
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
