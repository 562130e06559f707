//! Pure helpers to set conditions in a status, keyed by condition type.
//!
//! Works on `metav1.Condition` (CatalogSource, OperatorGroup) and on OLM's own condition shapes
//! ([`SubscriptionCondition`], [`InstallPlanCondition`]), through [`StatusCondition`]. The clock is passed in; nothing here
//! reads the current time. `lastTransitionTime` changes only when `status` changes, so setting
//! the same condition twice changes nothing (and the caller can skip the status write).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::condition_status;
use super::install_plan::InstallPlanCondition;
use super::subscription::SubscriptionCondition;

/// Status of a condition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// It is not known whether the condition holds.
    Unknown,
}

impl Status {
    /// The JSON value: `True`, `False` or `Unknown`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::True => condition_status::TRUE,
            Self::False => condition_status::FALSE,
            Self::Unknown => condition_status::UNKNOWN,
        }
    }

    /// `True` when `holds`, else `False`.
    pub fn from_bool(holds: bool) -> Self {
        if holds { Self::True } else { Self::False }
    }
}

/// The state a condition should have; the time fields are filled in by the setters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DesiredCondition<'a> {
    /// Condition type, for example `Ready`.
    pub type_: &'a str,
    /// Whether it holds.
    pub status: Status,
    /// One-word CamelCase reason.
    pub reason: &'a str,
    /// Human-readable details.
    pub message: &'a str,
    /// `metadata.generation` the condition was computed from (`metav1.Condition` only).
    pub observed_generation: Option<i64>,
}

impl<'a> DesiredCondition<'a> {
    /// A desired condition without an observed generation.
    pub fn new(type_: &'a str, status: Status, reason: &'a str, message: &'a str) -> Self {
        Self {
            type_,
            status,
            reason,
            message,
            observed_generation: None,
        }
    }

    /// The same condition, computed from `generation`.
    pub fn observed_at(self, generation: Option<i64>) -> Self {
        Self {
            observed_generation: generation,
            ..self
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Condition {}
    impl Sealed for super::SubscriptionCondition {}
    impl Sealed for super::InstallPlanCondition {}
}

/// A condition shape kept in a list keyed by type: `metav1.Condition`,
/// [`SubscriptionCondition`] or [`InstallPlanCondition`]. Implemented only here.
pub trait StatusCondition: sealed::Sealed + Sized {
    /// The condition's type.
    fn condition_type(&self) -> Option<&str>;
    /// The condition's status (`True`, `False`, `Unknown`).
    fn condition_status(&self) -> Option<&str>;
    /// True iff the condition already says exactly what `desired` says.
    fn matches(&self, desired: &DesiredCondition<'_>) -> bool;
    /// When the status last changed.
    fn last_transition_time(&self) -> Option<&Time>;
    /// Builds the condition for `desired`; `now` is the update time where the shape has one.
    fn build(desired: &DesiredCondition<'_>, last_transition: Time, now: &Time) -> Self;
}

/// Sets `desired` in `conditions`: appends it when no condition has its type, otherwise
/// replaces that condition, keeping `lastTransitionTime` unless the status changes. Returns
/// whether the list changed (false means the status write can be skipped).
///
/// Subscription conditions get no `lastHeartbeatTime` (it would change on every reconcile);
/// InstallPlan conditions get `lastUpdateTime = now` whenever they change.
pub fn set_condition<C: StatusCondition>(
    conditions: &mut Vec<C>,
    desired: &DesiredCondition<'_>,
    now: &Time,
) -> bool {
    let existing = conditions
        .iter_mut()
        .find(|c| c.condition_type() == Some(desired.type_));
    match existing {
        None => {
            conditions.push(C::build(desired, now.clone(), now));
            true
        }
        Some(current) if current.matches(desired) => false,
        Some(current) => {
            let last_transition = match current.last_transition_time() {
                Some(time) if current.condition_status() == Some(desired.status.as_str()) => {
                    time.clone()
                }
                _ => now.clone(),
            };
            *current = C::build(desired, last_transition, now);
            true
        }
    }
}

/// The condition of type `type_`, if present.
pub fn find_condition<'a, C: StatusCondition>(conditions: &'a [C], type_: &str) -> Option<&'a C> {
    conditions
        .iter()
        .find(|c| c.condition_type() == Some(type_))
}

/// True iff a condition of type `type_` is present with status `True`.
pub fn is_condition_true<C: StatusCondition>(conditions: &[C], type_: &str) -> bool {
    find_condition(conditions, type_)
        .is_some_and(|c| c.condition_status() == Some(condition_status::TRUE))
}

/// Removes the condition of type `type_`. Returns whether one was removed.
pub fn remove_condition<C: StatusCondition>(conditions: &mut Vec<C>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.condition_type() != Some(type_));
    conditions.len() != before
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

// === impl StatusCondition for metav1.Condition ===

impl StatusCondition for Condition {
    fn condition_type(&self) -> Option<&str> {
        Some(&self.type_)
    }
    fn condition_status(&self) -> Option<&str> {
        Some(&self.status)
    }
    fn matches(&self, desired: &DesiredCondition<'_>) -> bool {
        self.status == desired.status.as_str()
            && self.reason == desired.reason
            && self.message == desired.message
            && self.observed_generation == desired.observed_generation
    }
    fn last_transition_time(&self) -> Option<&Time> {
        Some(&self.last_transition_time)
    }
    fn build(desired: &DesiredCondition<'_>, last_transition: Time, _now: &Time) -> Self {
        Condition {
            type_: desired.type_.to_owned(),
            status: desired.status.as_str().to_owned(),
            reason: desired.reason.to_owned(),
            message: desired.message.to_owned(),
            observed_generation: desired.observed_generation,
            last_transition_time: last_transition,
        }
    }
}

// === impl StatusCondition for SubscriptionCondition ===

impl StatusCondition for SubscriptionCondition {
    fn condition_type(&self) -> Option<&str> {
        Some(&self.type_)
    }
    fn condition_status(&self) -> Option<&str> {
        Some(&self.status)
    }
    fn matches(&self, desired: &DesiredCondition<'_>) -> bool {
        self.status == desired.status.as_str()
            && self.reason.as_deref().unwrap_or_default() == desired.reason
            && self.message.as_deref().unwrap_or_default() == desired.message
    }
    fn last_transition_time(&self) -> Option<&Time> {
        self.last_transition_time.as_ref()
    }
    fn build(desired: &DesiredCondition<'_>, last_transition: Time, _now: &Time) -> Self {
        SubscriptionCondition {
            type_: desired.type_.to_owned(),
            status: desired.status.as_str().to_owned(),
            reason: non_empty(desired.reason),
            message: non_empty(desired.message),
            // A heartbeat would change on every reconcile and make converged status writes
            // non-idempotent; opcat does not write it.
            last_heartbeat_time: None,
            last_transition_time: Some(last_transition),
        }
    }
}

// === impl StatusCondition for InstallPlanCondition ===

impl StatusCondition for InstallPlanCondition {
    fn condition_type(&self) -> Option<&str> {
        self.type_.as_deref()
    }
    fn condition_status(&self) -> Option<&str> {
        self.status.as_deref()
    }
    fn matches(&self, desired: &DesiredCondition<'_>) -> bool {
        self.status.as_deref() == Some(desired.status.as_str())
            && self.reason.as_deref().unwrap_or_default() == desired.reason
            && self.message.as_deref().unwrap_or_default() == desired.message
    }
    fn last_transition_time(&self) -> Option<&Time> {
        self.last_transition_time.as_ref()
    }
    fn build(desired: &DesiredCondition<'_>, last_transition: Time, now: &Time) -> Self {
        InstallPlanCondition {
            type_: Some(desired.type_.to_owned()),
            status: Some(desired.status.as_str().to_owned()),
            last_update_time: Some(now.clone()),
            last_transition_time: Some(last_transition),
            reason: non_empty(desired.reason),
            message: non_empty(desired.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    fn ready(status: Status, reason: &'static str) -> DesiredCondition<'static> {
        DesiredCondition::new("Ready", status, reason, "details")
    }

    #[test]
    fn appends_a_missing_condition_stamped_now() {
        let mut conditions: Vec<Condition> = Vec::new();
        assert!(set_condition(
            &mut conditions,
            &ready(Status::True, "Loaded"),
            &at(10)
        ));
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].type_, "Ready");
        assert_eq!(conditions[0].status, "True");
        assert_eq!(conditions[0].reason, "Loaded");
        assert_eq!(conditions[0].message, "details");
        assert_eq!(conditions[0].last_transition_time, at(10));
    }

    #[test]
    fn setting_the_same_condition_again_changes_nothing() {
        let mut conditions: Vec<Condition> = Vec::new();
        set_condition(&mut conditions, &ready(Status::True, "Loaded"), &at(10));
        let before = conditions.clone();
        assert!(!set_condition(
            &mut conditions,
            &ready(Status::True, "Loaded"),
            &at(20)
        ));
        assert_eq!(conditions, before);
    }

    #[test]
    fn transition_time_moves_only_when_status_changes() {
        // (first, second, expected lastTransitionTime)
        let cases = [
            (
                (Status::False, "PullFailed"),
                (Status::False, "CatalogInvalid"),
                at(10),
            ),
            (
                (Status::False, "PullFailed"),
                (Status::True, "Loaded"),
                at(20),
            ),
            (
                (Status::True, "Loaded"),
                (Status::Unknown, "Polling"),
                at(20),
            ),
        ];
        for (first, second, expected) in cases {
            let mut conditions: Vec<Condition> = Vec::new();
            set_condition(&mut conditions, &ready(first.0, first.1), &at(10));
            assert!(set_condition(
                &mut conditions,
                &ready(second.0, second.1),
                &at(20)
            ));
            assert_eq!(conditions.len(), 1);
            assert_eq!(conditions[0].status, second.0.as_str());
            assert_eq!(conditions[0].reason, second.1);
            assert_eq!(
                conditions[0].last_transition_time, expected,
                "{first:?} -> {second:?}"
            );
        }
    }

    #[test]
    fn other_types_are_left_in_place() {
        let mut conditions: Vec<Condition> = Vec::new();
        set_condition(&mut conditions, &ready(Status::True, "Loaded"), &at(10));
        let other = DesiredCondition::new("Degraded", Status::False, "AsExpected", "");
        set_condition(&mut conditions, &other, &at(11));
        set_condition(
            &mut conditions,
            &ready(Status::False, "PullFailed"),
            &at(12),
        );
        let types: Vec<_> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Ready", "Degraded"]);
        assert_eq!(conditions[1].last_transition_time, at(11));
    }

    #[test]
    fn observed_generation_change_is_a_change_but_not_a_transition() {
        let mut conditions: Vec<Condition> = Vec::new();
        set_condition(
            &mut conditions,
            &ready(Status::True, "Loaded").observed_at(Some(1)),
            &at(10),
        );
        assert!(set_condition(
            &mut conditions,
            &ready(Status::True, "Loaded").observed_at(Some(2)),
            &at(20)
        ));
        assert_eq!(conditions[0].observed_generation, Some(2));
        assert_eq!(conditions[0].last_transition_time, at(10));
    }

    #[test]
    fn find_and_remove() {
        let mut conditions: Vec<Condition> = Vec::new();
        set_condition(&mut conditions, &ready(Status::True, "Loaded"), &at(10));
        assert!(is_condition_true(&conditions, "Ready"));
        assert!(!is_condition_true(&conditions, "Degraded"));
        assert!(remove_condition(&mut conditions, "Ready"));
        assert!(!remove_condition(&mut conditions, "Ready"));
        assert!(find_condition(&conditions, "Ready").is_none());
    }

    #[test]
    fn subscription_condition_follows_the_same_rules_without_heartbeat() {
        let mut conditions: Vec<SubscriptionCondition> = Vec::new();
        let failed = DesiredCondition::new(
            "ResolutionFailed",
            Status::True,
            "ConstraintsNotSatisfiable",
            "no channel fast",
        );
        assert!(set_condition(&mut conditions, &failed, &at(10)));
        assert!(!set_condition(&mut conditions, &failed, &at(15)));
        let resolved = DesiredCondition::new("ResolutionFailed", Status::False, "", "");
        assert!(set_condition(&mut conditions, &resolved, &at(20)));
        let condition = find_condition(&conditions, "ResolutionFailed").unwrap();
        assert_eq!(condition.status, "False");
        assert_eq!(
            condition.reason, None,
            "empty reason is omitted like OLM's omitempty"
        );
        assert_eq!(condition.message, None);
        assert_eq!(condition.last_transition_time, Some(at(20)));
        assert_eq!(condition.last_heartbeat_time, None);
        assert!(remove_condition(&mut conditions, "ResolutionFailed"));
        assert!(conditions.is_empty());
    }

    #[test]
    fn subscription_condition_without_transition_time_gets_one_on_update() {
        // OLM may have written the condition without lastTransitionTime.
        let mut conditions = vec![SubscriptionCondition {
            type_: "CatalogSourcesUnhealthy".into(),
            status: "False".into(),
            reason: Some("AllCatalogSourcesHealthy".into()),
            ..SubscriptionCondition::default()
        }];
        let unhealthy = DesiredCondition::new(
            "CatalogSourcesUnhealthy",
            Status::False,
            "AllCatalogSourcesHealthy",
            "all healthy",
        );
        assert!(set_condition(&mut conditions, &unhealthy, &at(30)));
        assert_eq!(conditions[0].last_transition_time, Some(at(30)));
    }

    #[test]
    fn install_plan_condition_updates_last_update_time_only_on_change() {
        let mut conditions: Vec<InstallPlanCondition> = Vec::new();
        let installed = DesiredCondition::new("Installed", Status::True, "", "");
        assert!(set_condition(&mut conditions, &installed, &at(10)));
        assert!(!set_condition(&mut conditions, &installed, &at(20)));
        assert_eq!(conditions[0].last_update_time, Some(at(10)));
        let failed =
            DesiredCondition::new("Installed", Status::False, "InstallComponentFailed", "x");
        assert!(set_condition(&mut conditions, &failed, &at(30)));
        assert_eq!(conditions[0].last_update_time, Some(at(30)));
        assert_eq!(conditions[0].last_transition_time, Some(at(30)));
    }
}
