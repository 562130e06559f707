//! Status step, the pure part (no client): the status OLM clients read
//! (`connectionState`, `latestImageRegistryPoll`, `reason`, `message`) plus opcat's
//! `resolvedImageDigest`, `packageCount` and conditions, computed from the spec checks, the
//! source secrets, the last registry contact and the catalog being served. Equal inputs give an
//! equal status, so a converged object is never written (DESIGN invariant 5).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

use super::tracked::Tracked;
use super::validate::{Interval, SpecCheck};
use crate::api::CatalogSourceStatus;
use crate::api::catalog_source::GrpcConnectionState;
use crate::api::catalog_source_status::{
    CONDITION_READY, READY_REASON_LOADED, READY_REASON_SPEC_INVALID, REASON_INVALID_INTERVAL,
    REASON_REGISTRY_SERVER_ERROR, REASON_SPEC_INVALID, STATE_CONNECTING, STATE_READY,
    STATE_TRANSIENT_FAILURE,
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
    /// The catalog being served (for `spec.image`).
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
        SpecCheck::Image { raw, .. } => raw,
    };

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
                &format!("reading catalog image {raw}"),
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
            let loaded = match served {
                Some(served) => format!(
                    "catalog image {raw} ({}) loaded: {} packages",
                    served.digest,
                    served.catalog.packages().count()
                ),
                None => format!("catalog image {raw} loaded"),
            };
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
        latest_image_registry_poll: observed.tracked.and_then(|t| t.last_poll).map(Time),
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::tracked::Failure;
    use super::*;
    use crate::api::catalog_source_status::READY_REASON_PULL_FAILED;
    use crate::api::conditions::find_condition;
    use crate::fbc::Catalog;
    use crate::pull_secrets::vocabulary::{REASON_SOURCE_NOT_FOUND, REASON_SOURCES_PRESENT};
    use crate::registry::Digest;

    const IMAGE: &str = "registry.example.com/catalogs/ops:v4";

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn digest() -> Digest {
        format!("sha256:{}", "a".repeat(64)).parse().unwrap()
    }

    /// A catalog of two packages, loaded from `image`.
    fn served(image: &str) -> LoadedCatalog {
        let dir = tempfile::tempdir().unwrap();
        let package = |name: &str| {
            format!(
                "---\nschema: olm.package\nname: {name}\ndefaultChannel: stable\n\
                 ---\nschema: olm.channel\npackage: {name}\nname: stable\nentries:\n- name: {name}.v1.0.0\n\
                 ---\nschema: olm.bundle\npackage: {name}\nname: {name}.v1.0.0\nimage: example.com/{name}:v1\n\
                 properties:\n- type: olm.package\n  value:\n    packageName: {name}\n    version: 1.0.0\n"
            )
        };
        let content = format!("{}{}", package("a"), package("b"));
        std::fs::write(dir.path().join("catalog.yaml"), content).unwrap();
        LoadedCatalog {
            digest: digest(),
            image: image.to_owned(),
            catalog: Catalog::load(dir.path()).unwrap(),
            loaded_at: at(0),
        }
    }

    /// The inputs of one status computation; tests change what they are about.
    struct Fixture {
        spec: SpecCheck,
        interval: Interval,
        secrets: Option<PullSecretCondition>,
        tracked: Option<Tracked>,
        served: Option<LoadedCatalog>,
    }

    impl Fixture {
        /// A loaded catalog, all secrets present, no poll interval.
        fn loaded() -> Self {
            Self {
                spec: SpecCheck::Image {
                    raw: IMAGE.to_owned(),
                    image: IMAGE.parse().unwrap(),
                },
                interval: Interval::NotSet,
                secrets: Some(PullSecretCondition {
                    type_: CONDITION_PULL_SECRET_SOURCE_MISSING,
                    status: ConditionStatus::False,
                    reason: REASON_SOURCES_PRESENT,
                    message: "all present".to_owned(),
                }),
                tracked: Some(Tracked {
                    uid: None,
                    image: IMAGE.to_owned(),
                    secrets: Vec::new(),
                    last_connect: at(10),
                    last_poll: Some(at(9)),
                    failure: None,
                }),
                served: Some(served(IMAGE)),
            }
        }

        fn status(&self, current: Option<&CatalogSourceStatus>, now: i64) -> CatalogSourceStatus {
            desired(
                current,
                &Observed {
                    spec: &self.spec,
                    interval: &self.interval,
                    secrets: self.secrets.as_ref(),
                    tracked: self.tracked.as_ref(),
                    served: self.served.as_ref(),
                    generation: Some(3),
                    now: at(now),
                },
            )
        }
    }

    fn ready(status: &CatalogSourceStatus) -> (&str, &str) {
        let ready = find_condition(status.conditions.as_deref().unwrap(), "Ready").unwrap();
        (ready.status.as_str(), ready.reason.as_str())
    }

    fn state(status: &CatalogSourceStatus) -> &str {
        &status
            .connection_state
            .as_ref()
            .unwrap()
            .last_observed_state
    }

    #[test]
    fn a_loaded_catalog_is_ready_with_digest_packages_and_poll_time() {
        let status = Fixture::loaded().status(None, 20);
        let connection = status.connection_state.as_ref().unwrap();
        assert_eq!(connection.last_observed_state, "READY");
        assert_eq!(connection.address.as_deref(), Some(IMAGE));
        assert_eq!(connection.last_connect, Some(Time(at(10))));
        assert_eq!(status.latest_image_registry_poll, Some(Time(at(9))));
        assert_eq!(status.resolved_image_digest, Some(digest().to_string()));
        assert_eq!(status.package_count, Some(2));
        assert_eq!(
            (status.reason.as_deref(), status.message.as_deref()),
            (None, None)
        );
        assert_eq!(ready(&status), ("True", "CatalogLoaded"));
        let conditions = status.conditions.as_deref().unwrap();
        let loaded = find_condition(conditions, "Ready").unwrap();
        assert_eq!(loaded.observed_generation, Some(3));
        assert!(loaded.message.contains("2 packages"), "{}", loaded.message);
        let secrets = find_condition(conditions, "PullSecretSourceMissing").unwrap();
        assert_eq!(secrets.status, "False");
    }

    #[test]
    fn the_same_inputs_later_give_the_same_status() {
        let fixture = Fixture::loaded();
        let first = fixture.status(None, 20);
        assert_eq!(fixture.status(Some(&first), 500), first);
    }

    #[test]
    fn an_invalid_interval_is_reported_while_the_catalog_is_ready() {
        let fixture = Fixture {
            interval: Interval::Invalid {
                fallback: Duration::from_secs(900),
                message: "interval \"soon\" is bad; polling every 15m instead".to_owned(),
            },
            ..Fixture::loaded()
        };
        let status = fixture.status(None, 20);
        assert_eq!(status.reason.as_deref(), Some("InvalidIntervalError"));
        assert!(status.message.as_deref().unwrap().contains("\"soon\""));
        assert_eq!(state(&status), "READY");
    }

    #[test]
    fn a_failure_keeps_the_served_catalog_and_says_so() {
        let mut fixture = Fixture::loaded();
        if let Some(tracked) = &mut fixture.tracked {
            tracked.failure = Some(Failure {
                ready_reason: READY_REASON_PULL_FAILED,
                kind: "unauthorized",
                message: "pull of x: registry r answered 401 Unauthorized".to_owned(),
                retry_at: at(100),
            });
        }
        let status = fixture.status(None, 20);
        assert_eq!(status.reason.as_deref(), Some("RegistryServerError"));
        let message = status.message.as_deref().unwrap();
        assert!(
            message.starts_with("pull of x: registry r answered 401"),
            "{message}"
        );
        assert!(
            message.contains("still serving the catalog loaded earlier"),
            "{message}"
        );
        assert_eq!(state(&status), "TRANSIENT_FAILURE");
        assert_eq!(status.resolved_image_digest, Some(digest().to_string()));
        assert_eq!(ready(&status), ("False", "ImagePullFailed"));
    }

    #[test]
    fn a_catalog_of_another_image_is_not_reported() {
        let fixture = Fixture {
            served: Some(served("old/image:v1")),
            ..Fixture::loaded()
        };
        let status = fixture.status(None, 20);
        assert_eq!(status.resolved_image_digest, None);
        assert_eq!(status.package_count, None);
    }

    #[test]
    fn unsupported_specs_are_spec_invalid_and_drop_the_rest() {
        let mut fixture = Fixture::loaded();
        if let Some(secrets) = &mut fixture.secrets {
            (secrets.status, secrets.reason) = (ConditionStatus::True, REASON_SOURCE_NOT_FOUND);
        }
        let before = fixture.status(None, 20);
        let unsupported = Fixture {
            spec: SpecCheck::Unsupported {
                message: "spec.address is not supported".to_owned(),
            },
            interval: Interval::NotSet,
            secrets: None,
            tracked: None,
            served: None,
        };
        let status = unsupported.status(Some(&before), 30);
        assert_eq!(status.reason.as_deref(), Some("SpecInvalidError"));
        assert_eq!(
            status.message.as_deref(),
            Some("spec.address is not supported")
        );
        assert_eq!(state(&status), "TRANSIENT_FAILURE");
        assert_eq!(status.latest_image_registry_poll, None);
        assert_eq!(status.resolved_image_digest, None);
        let conditions = status.conditions.as_deref().unwrap();
        assert!(find_condition(conditions, "PullSecretSourceMissing").is_none());
        assert_eq!(ready(&status), ("False", "SpecInvalid"));
        let spec_invalid = find_condition(conditions, "Ready").unwrap();
        assert_eq!(spec_invalid.last_transition_time, Time(at(30)));
    }
}
