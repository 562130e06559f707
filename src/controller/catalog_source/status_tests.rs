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
                source: IMAGE.to_owned(),
                secrets: Vec::new(),
                last_connect: at(10),
                last_poll: Some(at(9)),
                last_check: None,
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

const ADDRESS: &str = "10.244.0.7:50051";

/// A catalog read from the registry server at [`ADDRESS`].
fn read_from_server() -> Fixture {
    let mut fixture = Fixture::loaded();
    fixture.spec = SpecCheck::Address {
        raw: ADDRESS.to_owned(),
    };
    fixture.served = Some(served(ADDRESS));
    if let Some(tracked) = &mut fixture.tracked {
        tracked.source = ADDRESS.to_owned();
    }
    fixture
}

#[test]
fn a_server_catalog_reports_its_address_and_content_digest_but_no_image_poll() {
    let status = read_from_server().status(None, 20);
    let connection = status.connection_state.as_ref().unwrap();
    assert_eq!(connection.address.as_deref(), Some(ADDRESS));
    assert_eq!(connection.last_observed_state, "READY");
    assert_eq!(connection.last_connect, Some(Time(at(10))));
    assert_eq!(status.latest_image_registry_poll, None);
    assert_eq!(status.resolved_image_digest, Some(digest().to_string()));
    assert_eq!(status.package_count, Some(2));
    let ready = find_condition(status.conditions.as_deref().unwrap(), "Ready").unwrap();
    assert_eq!(
        ready.message,
        format!(
            "the catalog of registry server {ADDRESS} ({}) loaded: 2 packages",
            digest()
        )
    );
}

#[test]
fn a_server_that_went_away_is_a_transient_failure_still_serving_its_catalog() {
    let mut fixture = read_from_server();
    if let Some(tracked) = &mut fixture.tracked {
        tracked.failure = Some(Failure {
            ready_reason: "RegistryServerUnreachable",
            kind: "unreachable",
            message: format!("catalog server {ADDRESS} cannot be reached: connection refused"),
            retry_at: at(30),
        });
    }
    let status = fixture.status(None, 20);
    assert_eq!(state(&status), "TRANSIENT_FAILURE");
    assert_eq!(status.reason.as_deref(), Some("RegistryServerError"));
    assert!(
        status
            .message
            .as_deref()
            .unwrap()
            .ends_with("still serving the catalog loaded earlier (sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa)"),
        "{:?}",
        status.message
    );
    assert_eq!(ready(&status), ("False", "RegistryServerUnreachable"));
}

#[test]
fn no_image_and_no_address_is_a_wait_with_a_condition_not_a_spec_error() {
    let before = Fixture::loaded().status(None, 20);
    let waiting = Fixture {
        spec: SpecCheck::NoSource {
            message: "neither spec.image nor spec.address is set yet".to_owned(),
        },
        interval: Interval::NotSet,
        secrets: None,
        tracked: None,
        served: None,
    };
    let status = waiting.status(Some(&before), 30);
    assert_eq!(status.reason, None);
    assert_eq!(status.message, None);
    assert_eq!(status.connection_state, None);
    assert_eq!(ready(&status), ("False", "NoSource"));
    assert_eq!(
        waiting.status(Some(&status), 40),
        status,
        "converged: no rewrite"
    );
}
