//! Pure leader-election decisions: lease timings, what a Lease says, and until when this replica
//! may write. No client here.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

/// Why lease timings were refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimingsError {
    #[error("{flag} must be a whole number of seconds, got {value:?}")]
    NotWholeSeconds { flag: &'static str, value: Duration },
    #[error("--leader-elect-renew-deadline must be at least 2s, got {0:?}")]
    DeadlineTooShort(Duration),
    #[error(
        "--leader-elect-renew-deadline ({deadline:?}) must be shorter than \
         --leader-elect-lease-duration ({duration:?}): the difference is the margin that keeps \
         two replicas from reconciling at once"
    )]
    DeadlineNotShorter {
        deadline: Duration,
        duration: Duration,
    },
}

/// How long a lease lasts and when its holder gives up.
///
/// - The holder renews every `renew_deadline / 2` (at least every second).
/// - If it cannot prove a renewal within `renew_deadline` of the last one, it stops
///   reconciling.
/// - A standby takes the lease once `lease_duration` has passed since the last renewal.
///
/// `lease_duration - renew_deadline` is the safety margin for clock skew between replicas and
/// for the time it takes to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseTimings {
    duration_secs: u64,
    renew_deadline_secs: u64,
}

impl LeaseTimings {
    /// The defaults of `opcat run` (those of kube-controller-manager): 15s lease, 10s deadline.
    pub const DEFAULT: Self = Self {
        duration_secs: 15,
        renew_deadline_secs: 10,
    };

    /// Checks and builds timings. The Lease API counts whole seconds.
    pub fn new(lease_duration: Duration, renew_deadline: Duration) -> Result<Self, TimingsError> {
        let whole = |flag, value: Duration| {
            if value.subsec_nanos() == 0 {
                Ok(value.as_secs())
            } else {
                Err(TimingsError::NotWholeSeconds { flag, value })
            }
        };
        let duration_secs = whole("--leader-elect-lease-duration", lease_duration)?;
        let renew_deadline_secs = whole("--leader-elect-renew-deadline", renew_deadline)?;
        if renew_deadline_secs < 2 {
            return Err(TimingsError::DeadlineTooShort(renew_deadline));
        }
        if renew_deadline_secs >= duration_secs {
            return Err(TimingsError::DeadlineNotShorter {
                deadline: renew_deadline,
                duration: lease_duration,
            });
        }
        Ok(Self {
            duration_secs,
            renew_deadline_secs,
        })
    }

    /// How long the lease lasts after a renewal.
    pub fn lease_duration(&self) -> Duration {
        Duration::from_secs(self.duration_secs)
    }

    /// How long after its last renewal the holder stops reconciling.
    pub fn renew_deadline(&self) -> Duration {
        Duration::from_secs(self.renew_deadline_secs)
    }

    /// How often the holder renews.
    pub fn renew_every(&self) -> Duration {
        Duration::from_secs(self.renew_every_secs())
    }

    fn renew_every_secs(&self) -> u64 {
        (self.renew_deadline_secs / 2).max(1)
    }

    /// kube-lease-manager's parameters: `(duration, grace)`, where the holder renews `grace`
    /// seconds before the lease would expire. Always `0 < grace < duration`.
    pub fn lease_manager_params(&self) -> (u64, u64) {
        (
            self.duration_secs,
            self.duration_secs - self.renew_every_secs(),
        )
    }
}

/// What the Lease object says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaseView {
    /// `spec.holderIdentity`.
    pub holder: Option<String>,
    /// `spec.renewTime`.
    pub renewed_at: Option<Timestamp>,
}

impl LeaseView {
    /// Reads a Lease.
    pub fn from_lease(lease: &Lease) -> Self {
        let spec = lease.spec.as_ref();
        Self {
            holder: spec
                .and_then(|spec| spec.holder_identity.clone())
                .filter(|holder| !holder.is_empty()),
            renewed_at: spec.and_then(|spec| spec.renew_time.as_ref().map(|time| time.0)),
        }
    }

    /// Whether `identity` holds the lease.
    pub fn is_held_by(&self, identity: &str) -> bool {
        self.holder.as_deref() == Some(identity)
    }

    /// Until when `identity` may reconcile: its last renewal plus the renew deadline, if it
    /// holds the lease. A view without a renewal time proves nothing.
    pub fn leading_until(&self, identity: &str, timings: &LeaseTimings) -> Option<Timestamp> {
        if !self.is_held_by(identity) {
            return None;
        }
        let deadline = SignedDuration::try_from(timings.renew_deadline()).ok()?;
        self.renewed_at?.checked_add(deadline).ok()
    }
}

/// Why this replica must not reconcile now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotLeading {
    /// The lease manager does not believe it holds the lease.
    Standby,
    /// The Lease names another holder, or none.
    NotHolder,
    /// The Lease names this replica but has no renewal time: nothing is proven.
    NoRenewal,
    /// No renewal was confirmed within the renew deadline.
    RenewOverdue,
}

impl NotLeading {
    /// For logs.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Standby => "the lease manager lost the lease",
            Self::NotHolder => "the Lease names another holder or none",
            Self::NoRenewal => "the Lease has no renewal time",
            Self::RenewOverdue => "no renewal was confirmed within the renew deadline",
        }
    }
}

/// The deadline until which this replica may reconcile: the lease manager must believe it
/// holds the lease, *and* the Lease as last read must show it as the holder with a renewal
/// recent enough that `now` is before the renew deadline.
pub fn may_lead(
    manager_says_leader: bool,
    view: &LeaseView,
    identity: &str,
    timings: &LeaseTimings,
    now: Timestamp,
) -> Result<Timestamp, NotLeading> {
    if !manager_says_leader {
        return Err(NotLeading::Standby);
    }
    if !view.is_held_by(identity) {
        return Err(NotLeading::NotHolder);
    }
    let until = view
        .leading_until(identity, timings)
        .ok_or(NotLeading::NoRenewal)?;
    if until > now {
        Ok(until)
    } else {
        Err(NotLeading::RenewOverdue)
    }
}

/// Whether the lease went from held to free (released by its holder, or deleted): a standby
/// should try to take it at once instead of waiting for the old lease to expire.
pub fn was_released(before: Option<&LeaseView>, after: &LeaseView) -> bool {
    before.is_some_and(|before| before.holder.is_some()) && after.holder.is_none()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn view(holder: Option<&str>, renewed: Option<i64>) -> LeaseView {
        LeaseView {
            holder: holder.map(str::to_owned),
            renewed_at: renewed.map(at),
        }
    }

    #[test]
    fn timings_follow_kube_controller_manager_defaults() {
        let timings =
            LeaseTimings::new(Duration::from_secs(15), Duration::from_secs(10)).expect("valid");
        assert_eq!(timings, LeaseTimings::DEFAULT);
        assert_eq!(timings.renew_every(), Duration::from_secs(5));
        // kube-lease-manager renews `grace` seconds before expiry: 15 - 10 = every 5s.
        assert_eq!(timings.lease_manager_params(), (15, 10));
        let short =
            LeaseTimings::new(Duration::from_secs(3), Duration::from_secs(2)).expect("valid");
        assert_eq!(short.renew_every(), Duration::from_secs(1));
        assert_eq!(short.lease_manager_params(), (3, 2));
    }

    #[test]
    fn invalid_timings_are_refused_with_the_flag_named() {
        let error = LeaseTimings::new(Duration::from_secs(10), Duration::from_secs(10))
            .expect_err("deadline equal to duration");
        assert!(
            error.to_string().contains("must be shorter than"),
            "{error}"
        );
        let error = LeaseTimings::new(Duration::from_millis(1500), Duration::from_secs(1))
            .expect_err("fractional");
        assert!(
            error
                .to_string()
                .contains("--leader-elect-lease-duration must be a whole number"),
            "{error}"
        );
        assert_eq!(
            LeaseTimings::new(Duration::from_secs(5), Duration::from_secs(1)),
            Err(TimingsError::DeadlineTooShort(Duration::from_secs(1)))
        );
    }

    #[test]
    fn leads_only_while_the_lease_proves_it_and_the_manager_agrees() {
        let timings = LeaseTimings::DEFAULT;
        let mine = view(Some("pod-a"), Some(0));
        assert_eq!(may_lead(true, &mine, "pod-a", &timings, at(3)), Ok(at(10)));
        // Past the renew deadline without a newer renewal: stop, although the lease itself
        // would still be valid for 5 more seconds.
        assert_eq!(
            may_lead(true, &mine, "pod-a", &timings, at(10)),
            Err(NotLeading::RenewOverdue)
        );
        // The manager has seen another holder.
        assert_eq!(
            may_lead(false, &mine, "pod-a", &timings, at(3)),
            Err(NotLeading::Standby)
        );
        // Someone else holds it, or nobody.
        assert_eq!(
            may_lead(true, &mine, "pod-b", &timings, at(3)),
            Err(NotLeading::NotHolder)
        );
        assert_eq!(
            may_lead(true, &view(None, Some(0)), "pod-a", &timings, at(3)),
            Err(NotLeading::NotHolder)
        );
        assert_eq!(
            may_lead(true, &view(Some("pod-a"), None), "pod-a", &timings, at(0)),
            Err(NotLeading::NoRenewal)
        );
    }

    #[test]
    fn release_is_a_transition_from_held_to_free() {
        let held = view(Some("pod-a"), Some(0));
        let free = view(None, None);
        assert!(was_released(Some(&held), &free));
        assert!(!was_released(Some(&free), &free));
        assert!(
            !was_released(None, &free),
            "the first read is not a release"
        );
        assert!(!was_released(Some(&held), &view(Some("pod-b"), Some(1))));
    }

    #[test]
    fn reads_the_lease_spec() {
        let lease = Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some("pod-a".into()),
                renew_time: Some(MicroTime(at(7))),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        assert_eq!(LeaseView::from_lease(&lease), view(Some("pod-a"), Some(7)));
        let released = Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some(String::new()),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        assert_eq!(LeaseView::from_lease(&released), LeaseView::default());
    }
}
