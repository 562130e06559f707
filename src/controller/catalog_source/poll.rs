//! The poll decision (pure, no client, no clock of its own): whether this reconcile contacts the
//! registry, and otherwise when the next look is due. A converged catalog makes no network
//! request and no write (DESIGN invariant 5).

use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::secrets::Fingerprint;
use super::tracked::Tracked;
use crate::api::CatalogSourceStatus;
use crate::api::catalog_source_status::STATE_READY;
use crate::registry::Digest;

/// Why the registry is contacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Why {
    /// Nothing was tried for this CatalogSource yet (new, or opcat restarted).
    FirstLoad,
    /// `spec.image` (or `spec.address`) changed since the last contact.
    SourceChanged,
    /// A source Secret appeared, disappeared or changed (rotation, fix): retry at once.
    SecretsChanged,
    /// The last contact failed and its back-off has passed.
    Retry,
    /// `latestImageRegistryPoll + interval` has passed.
    PollDue,
}

impl Why {
    /// A word for logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Why::FirstLoad => "first_load",
            Why::SourceChanged => "source_changed",
            Why::SecretsChanged => "secrets_changed",
            Why::Retry => "retry",
            Why::PollDue => "poll_due",
        }
    }
}

/// What to do this reconcile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Resolve the image (and load it if its digest is new).
    Contact(Why),
    /// Nothing to do until `until` (`None`: no poll scheduled, look again at the resync).
    Wait { until: Option<Timestamp> },
}

/// Decides whether to contact the registry for `image` with `secrets`, polling `every`.
pub fn decide(
    tracked: Option<&Tracked>,
    image: &str,
    secrets: &Fingerprint,
    every: Option<Duration>,
    now: Timestamp,
) -> Decision {
    let Some(tracked) = tracked else {
        return Decision::Contact(Why::FirstLoad);
    };
    if tracked.source != image {
        return Decision::Contact(Why::SourceChanged);
    }
    if tracked.secrets != *secrets {
        return Decision::Contact(Why::SecretsChanged);
    }
    if let Some(failure) = &tracked.failure {
        // A failed contact is retried on its back-off alone: polling the same failure sooner
        // would only hammer the registry.
        return if failure.retry_at <= now {
            Decision::Contact(Why::Retry)
        } else {
            Decision::Wait {
                until: Some(failure.retry_at),
            }
        };
    }
    let Some(every) = every else {
        return Decision::Wait { until: None };
    };
    match tracked.last_poll {
        Some(last) => {
            let due = later(last, every);
            if due <= now {
                Decision::Contact(Why::PollDue)
            } else {
                Decision::Wait { until: Some(due) }
            }
        }
        None => Decision::Contact(Why::PollDue),
    }
}

/// When the reconciler looks at a CatalogSource again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Look {
    /// At this time (a poll, a retry, a health check).
    At(Timestamp),
    /// Nothing is scheduled: at the next resync.
    Resync,
    /// Something is due already (only when the clock went backwards): soon, never in a spin.
    Soon,
}

impl From<Decision> for Look {
    fn from(decision: Decision) -> Self {
        match decision {
            Decision::Wait { until: Some(until) } => Look::At(until),
            Decision::Wait { until: None } => Look::Resync,
            Decision::Contact(_) => Look::Soon,
        }
    }
}

/// `at + by`, saturating.
pub fn later(at: Timestamp, by: Duration) -> Timestamp {
    at.checked_add(by).unwrap_or(Timestamp::MAX)
}

/// What status says opcat served before a restart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restore {
    /// The digest to look up in the on-disk cache.
    pub digest: Digest,
    /// `latestImageRegistryPoll`.
    pub last_poll: Option<Timestamp>,
    /// `connectionState.lastConnect`.
    pub last_connect: Option<Timestamp>,
    /// The last contact succeeded (`READY`); otherwise the cached catalog is served and the
    /// registry is contacted again at once.
    pub healthy: bool,
}

/// After a restart (nothing in memory), the catalog status says was served for `image`: it is
/// loaded from the disk cache without contacting the registry. `None` when status names another
/// image or no digest.
pub fn restorable(status: Option<&CatalogSourceStatus>, image: &str) -> Option<Restore> {
    let status = status?;
    let connection = status.connection_state.as_ref()?;
    if connection.address.as_deref() != Some(image) {
        return None;
    }
    let digest = status.resolved_image_digest.as_deref()?.parse().ok()?;
    Some(Restore {
        digest,
        last_poll: status.latest_image_registry_poll.as_ref().map(|t| t.0),
        last_connect: connection.last_connect.as_ref().map(|t| t.0),
        healthy: connection.last_observed_state == STATE_READY,
    })
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    use super::super::secrets::SourceVersion;
    use super::super::tracked::Failure;
    use super::*;
    use crate::api::catalog_source::GrpcConnectionState;

    const IMAGE: &str = "registry.example.com/catalogs/ops:v4";
    const MINUTE: Duration = Duration::from_secs(60);

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn secrets(version: &str) -> Fingerprint {
        vec![(
            "pull".to_owned(),
            SourceVersion::Present(version.to_owned()),
        )]
    }

    fn loaded(last_poll: i64) -> Tracked {
        Tracked {
            uid: None,
            source: IMAGE.to_owned(),
            secrets: secrets("1"),
            last_connect: at(last_poll),
            last_poll: Some(at(last_poll)),
            last_check: None,
            failure: None,
        }
    }

    fn failed(retry_at: i64) -> Tracked {
        Tracked {
            failure: Some(Failure {
                ready_reason: "ImagePullFailed",
                kind: "unauthorized",
                message: "401".to_owned(),
                retry_at: at(retry_at),
            }),
            last_poll: None,
            ..loaded(0)
        }
    }

    /// The decision for `tracked` with the same image and secrets.
    fn unchanged(tracked: &Tracked, every: Option<Duration>, now: i64) -> Decision {
        decide(Some(tracked), IMAGE, &secrets("1"), every, at(now))
    }

    fn wait_until(seconds: i64) -> Decision {
        Decision::Wait {
            until: Some(at(seconds)),
        }
    }

    #[test]
    fn nothing_tracked_means_a_first_load() {
        assert_eq!(
            decide(None, IMAGE, &secrets("1"), None, at(0)),
            Decision::Contact(Why::FirstLoad)
        );
    }

    #[test]
    fn a_converged_catalog_waits_for_its_next_poll_or_forever() {
        assert_eq!(
            unchanged(&loaded(0), Some(10 * MINUTE), 60),
            wait_until(600)
        );
        assert_eq!(
            unchanged(&loaded(0), None, 100_000),
            Decision::Wait { until: None }
        );
    }

    #[test]
    fn a_poll_is_due_at_last_poll_plus_interval() {
        assert_eq!(
            unchanged(&loaded(0), Some(10 * MINUTE), 600),
            Decision::Contact(Why::PollDue)
        );
        let never_polled = Tracked {
            last_poll: None,
            ..loaded(0)
        };
        assert_eq!(
            unchanged(&never_polled, Some(MINUTE), 1),
            Decision::Contact(Why::PollDue)
        );
    }

    #[test]
    fn image_or_secret_changes_contact_at_once() {
        let tracked = loaded(0);
        assert_eq!(
            decide(Some(&tracked), "other/image:v1", &secrets("1"), None, at(1)),
            Decision::Contact(Why::SourceChanged)
        );
        assert_eq!(
            decide(Some(&tracked), IMAGE, &secrets("2"), None, at(1)),
            Decision::Contact(Why::SecretsChanged)
        );
        assert_eq!(
            decide(Some(&failed(900)), IMAGE, &secrets("2"), None, at(1)),
            Decision::Contact(Why::SecretsChanged),
            "a secret fix retries before the back-off ends"
        );
    }

    #[test]
    fn failures_wait_for_their_back_off_even_when_a_poll_is_due() {
        let every_second = Some(Duration::from_secs(1));
        assert_eq!(unchanged(&failed(30), every_second, 10), wait_until(30));
        assert_eq!(
            unchanged(&failed(30), None, 30),
            Decision::Contact(Why::Retry)
        );
    }

    fn status(address: &str, state: &str, digest: Option<&str>) -> CatalogSourceStatus {
        CatalogSourceStatus {
            connection_state: Some(GrpcConnectionState {
                address: Some(address.to_owned()),
                last_observed_state: state.to_owned(),
                last_connect: Some(Time(at(5))),
            }),
            latest_image_registry_poll: Some(Time(at(4))),
            resolved_image_digest: digest.map(str::to_owned),
            ..CatalogSourceStatus::default()
        }
    }

    #[test]
    fn status_of_the_same_image_restores_from_the_cache() {
        let digest = format!("sha256:{}", "a".repeat(64));
        let ready = status(IMAGE, "READY", Some(&digest));
        assert_eq!(
            restorable(Some(&ready), IMAGE),
            Some(Restore {
                digest: digest.parse().unwrap(),
                last_poll: Some(at(4)),
                last_connect: Some(at(5)),
                healthy: true,
            })
        );
        let failing = status(IMAGE, "TRANSIENT_FAILURE", Some(&digest));
        assert!(!restorable(Some(&failing), IMAGE).unwrap().healthy);
        assert_eq!(restorable(Some(&ready), "other/image:v1"), None);
        assert_eq!(restorable(Some(&status(IMAGE, "READY", None)), IMAGE), None);
        assert_eq!(restorable(None, IMAGE), None);
    }
}
