//! The decision for one Service: keep the stored material, drop a previous CA whose time is up,
//! or issue new material.

use k8s_openapi::jiff::Timestamp;

use super::material::{Material, PreviousCa};
use super::verify::{Stale, check};
use super::{CertificateError, REFRESH_WINDOW, ServiceIdentity, issue};

/// What [`plan`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// The stored material is good: nothing changes.
    Kept,
    /// The stored material is good, but the previous CA's time in the bundle is over.
    DroppedPreviousCa,
    /// New material, for this reason.
    Issued(Stale),
}

/// The material an install must have, and how it came about.
#[derive(Clone, Debug)]
pub struct Planned {
    /// What the Secret must hold.
    pub material: Material,
    /// What changed.
    pub action: Action,
}

impl Planned {
    /// Whether the Secret must be written.
    pub fn changed(&self) -> bool {
        self.action != Action::Kept
    }
}

/// Decides the material for `identity` at `now` from what is stored (`None`: no Secret, or one
/// whose data is incomplete).
pub fn plan(
    stored: Option<Material>,
    identity: &ServiceIdentity,
    now: Timestamp,
) -> Result<Planned, CertificateError> {
    let Some(stored) = stored else {
        return issued(identity, now, Stale::Missing, None);
    };
    match check(&stored, identity, now) {
        Ok(()) => {
            let expired = stored
                .previous_ca()
                .is_some_and(|previous| previous.until <= now);
            Ok(if expired {
                Planned {
                    material: stored.with_previous_ca(None),
                    action: Action::DroppedPreviousCa,
                }
            } else {
                Planned {
                    material: stored,
                    action: Action::Kept,
                }
            })
        }
        Err(stale) if stale.is_expiry() => {
            // The pods keep serving the old certificate until the rollout replaces them.
            let until = Timestamp::from_second(now.as_second())
                .unwrap_or(now)
                .checked_add(REFRESH_WINDOW)
                .unwrap_or(Timestamp::MAX);
            let previous = PreviousCa {
                pem: stored.ca_pem().to_owned(),
                until,
            };
            issued(identity, now, stale, Some(previous))
        }
        Err(stale) => issued(identity, now, stale, None),
    }
}

fn issued(
    identity: &ServiceIdentity,
    now: Timestamp,
    reason: Stale,
    previous: Option<PreviousCa>,
) -> Result<Planned, CertificateError> {
    Ok(Planned {
        material: issue(identity, now)?.with_previous_ca(previous),
        action: Action::Issued(reason),
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::certificates::{VALIDITY, check};

    fn identity() -> ServiceIdentity {
        ServiceIdentity {
            service: "webhook-service".to_owned(),
            namespace: "ops".to_owned(),
        }
    }

    fn start() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    fn after(days: u64) -> Timestamp {
        start()
            .checked_add(Duration::from_secs(days * 24 * 3600))
            .unwrap()
    }

    #[test]
    fn new_material_verifies_for_every_service_name_and_is_kept_until_near_expiry() {
        let first = plan(None, &identity(), start()).unwrap();
        assert_eq!(first.action, Action::Issued(Stale::Missing));
        assert_eq!(check(&first.material, &identity(), start()), Ok(()));

        let kept = plan(Some(first.material.clone()), &identity(), after(700)).unwrap();
        assert_eq!(kept.action, Action::Kept);
        assert_eq!(kept.material, first.material);
        assert!(!kept.changed());
    }

    #[test]
    fn near_expiry_a_new_ca_is_issued_and_the_old_one_stays_trusted_for_a_day() {
        let first = plan(None, &identity(), start()).unwrap().material;
        // The serving certificate ends one day before the CA; a day before that it is due.
        let due = after(VALIDITY.as_secs() / 86_400 - 2)
            .checked_add(Duration::from_secs(3600))
            .unwrap();
        let rotated = plan(Some(first.clone()), &identity(), due).unwrap();
        assert!(
            matches!(
                rotated.action,
                Action::Issued(Stale::ExpiresSoon { hours: 24 })
            ),
            "{:?}",
            rotated.action
        );
        assert_ne!(rotated.material.ca_pem(), first.ca_pem());
        assert_ne!(rotated.material.ca_hash(), first.ca_hash());
        let bundle = rotated.material.ca_bundle();
        assert!(bundle.starts_with(rotated.material.ca_pem()));
        assert!(bundle.ends_with(first.ca_pem()), "the old CA stays trusted");

        // The day after, the old CA leaves the bundle; the CA itself does not change.
        let next_day = due.checked_add(Duration::from_secs(86_400)).unwrap();
        let dropped = plan(Some(rotated.material.clone()), &identity(), next_day).unwrap();
        assert_eq!(dropped.action, Action::DroppedPreviousCa);
        assert_eq!(dropped.material.ca_bundle(), rotated.material.ca_pem());
        assert_eq!(dropped.material.ca_hash(), rotated.material.ca_hash());
    }

    #[test]
    fn material_for_another_service_or_with_a_foreign_key_is_replaced_and_not_trusted() {
        let other = ServiceIdentity {
            service: "other-service".to_owned(),
            namespace: "ops".to_owned(),
        };
        let theirs = plan(None, &other, start()).unwrap().material;
        let replaced = plan(Some(theirs.clone()), &identity(), start()).unwrap();
        assert!(
            matches!(&replaced.action, Action::Issued(Stale::NotTrusted { name, .. }) if name == "webhook-service.ops"),
            "{:?}",
            replaced.action
        );
        assert!(!replaced.material.ca_bundle().contains(theirs.ca_pem()));

        let ours = plan(None, &identity(), start()).unwrap().material;
        let mixed = Material::new(
            ours.ca_pem().to_owned(),
            ours.cert_pem().to_owned(),
            theirs.key_pem().to_owned(),
            None,
        );
        assert_eq!(
            plan(Some(mixed), &identity(), start()).unwrap().action,
            Action::Issued(Stale::KeyMismatch)
        );
        let garbled = Material::new(
            "not a certificate".to_owned(),
            ours.cert_pem().to_owned(),
            ours.key_pem().to_owned(),
            None,
        );
        assert_eq!(
            plan(Some(garbled), &identity(), start()).unwrap().action,
            Action::Issued(Stale::Unreadable {
                part: "CA certificate"
            })
        );
    }

    #[test]
    fn secret_data_round_trips_and_debug_never_shows_the_key() {
        let rotated = plan(None, &identity(), start())
            .unwrap()
            .material
            .with_previous_ca(Some(PreviousCa {
                pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_owned(),
                until: after(1),
            }));
        let read =
            Material::from_secret(&rotated.secret_data(), &rotated.secret_annotations()).unwrap();
        assert_eq!(read, rotated);
        let shown = format!("{rotated:?}");
        assert!(shown.contains("<redacted>"));
        let key_body: String = rotated
            .key_pem()
            .lines()
            .filter(|line| !line.starts_with("-----"))
            .collect();
        assert!(!shown.contains(&key_body[..16]), "{shown}");
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    }
}
