//! Pure: mirrors the CSV reconciler's pull-secret report (the CSV annotation
//! [`PULL_SECRETS_REPORT`](crate::controller::keys::csv::PULL_SECRETS_REPORT), a JSON list of
//! Subscription-style conditions without secret data) into the Subscription's conditions (no
//! client). One writer per status (DESIGN invariant 6): the CSV reconciler reports on its own
//! object, this module copies.
//!
//! Only the five pull-secret condition types are mirrored; they are added or updated when the
//! report has them and removed when it does not. An unreadable report leaves them as they are.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Deserialize;

use crate::api::ClusterServiceVersion;
use crate::api::conditions::{DesiredCondition, Status, remove_condition, set_condition};
use crate::api::subscription::SubscriptionCondition;
use crate::controller::keys::csv::PULL_SECRETS_REPORT;
use crate::pull_secrets::vocabulary::{
    CONDITION_PULL_CREDENTIALS_READY, CONDITION_PULL_SECRET_CONFLICT,
    CONDITION_PULL_SECRET_SOURCE_MISSING, CONDITION_PULL_SECRETS_NOT_PROPAGATED,
    CONDITION_PULL_SECRETS_SCOPED,
};

/// The condition types the report may carry.
pub const MIRRORED_TYPES: [&str; 5] = [
    CONDITION_PULL_SECRET_CONFLICT,
    CONDITION_PULL_SECRETS_NOT_PROPAGATED,
    CONDITION_PULL_SECRET_SOURCE_MISSING,
    CONDITION_PULL_CREDENTIALS_READY,
    CONDITION_PULL_SECRETS_SCOPED,
];

/// One condition of the report.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct ReportedCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
}

/// What the CSV says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// No CSV, or a CSV without the annotation.
    Absent,
    /// The reported conditions.
    Conditions(Vec<ReportedCondition>),
    /// The annotation is not a JSON list of conditions (the error, for the log).
    Malformed(String),
}

/// Whether `csv` carries a report (readable or not), without reading it.
pub fn has_report(csv: &ClusterServiceVersion) -> bool {
    csv.metadata
        .annotations
        .as_ref()
        .is_some_and(|annotations| annotations.contains_key(PULL_SECRETS_REPORT))
}

/// Reads the report of `csv`.
pub fn read_report(csv: Option<&ClusterServiceVersion>) -> Report {
    let Some(text) = csv
        .and_then(|csv| csv.metadata.annotations.as_ref())
        .and_then(|annotations| annotations.get(PULL_SECRETS_REPORT))
    else {
        return Report::Absent;
    };
    match serde_json::from_str::<Vec<ReportedCondition>>(text) {
        Ok(conditions) => Report::Conditions(conditions),
        Err(error) => Report::Malformed(error.to_string()),
    }
}

/// Applies `report` to `conditions`. Returns whether anything changed.
pub fn mirror(conditions: &mut Vec<SubscriptionCondition>, report: &Report, now: &Time) -> bool {
    let reported: &[ReportedCondition] = match report {
        Report::Malformed(_) => return false,
        Report::Absent => &[],
        Report::Conditions(conditions) => conditions,
    };
    let mut changed = false;
    for type_ in MIRRORED_TYPES {
        match reported.iter().find(|c| c.type_ == type_) {
            Some(condition) => {
                let desired = DesiredCondition::new(
                    type_,
                    status(&condition.status),
                    condition.reason.as_deref().unwrap_or_default(),
                    condition.message.as_deref().unwrap_or_default(),
                );
                changed |= set_condition(conditions, &desired, now);
            }
            None => changed |= remove_condition(conditions, type_),
        }
    }
    changed
}

fn status(text: &str) -> Status {
    match text {
        "True" => Status::True,
        "False" => Status::False,
        _ => Status::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::api::conditions::find_condition;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    fn csv_with(report: Option<&str>) -> ClusterServiceVersion {
        let mut csv = ClusterServiceVersion::new("op.v1", Default::default());
        csv.metadata.annotations =
            report.map(|text| BTreeMap::from([(PULL_SECRETS_REPORT.to_owned(), text.to_owned())]));
        csv
    }

    #[test]
    fn reported_conditions_are_added_updated_and_removed() {
        let report = read_report(Some(&csv_with(Some(
            r#"[{"type":"PullSecretConflict","status":"True","reason":"SecretNameInUse","message":"secret ops/x is not opcat's"},
                {"type":"PullCredentialsReady","status":"True","reason":"ImagesResolvable","message":"ok"},
                {"type":"SomethingElse","status":"True"}]"#,
        ))));
        let mut conditions = vec![SubscriptionCondition {
            type_: "CatalogSourcesUnhealthy".into(),
            status: "False".into(),
            ..SubscriptionCondition::default()
        }];
        assert!(mirror(&mut conditions, &report, &at(1)));
        let conflict = find_condition(&conditions, "PullSecretConflict").unwrap();
        assert_eq!(conflict.status, "True");
        assert_eq!(conflict.reason.as_deref(), Some("SecretNameInUse"));
        assert_eq!(
            conflict.message.as_deref(),
            Some("secret ops/x is not opcat's")
        );
        assert!(find_condition(&conditions, "SomethingElse").is_none());
        assert!(
            !mirror(&mut conditions, &report, &at(2)),
            "same report, no change"
        );

        let resolved = read_report(Some(&csv_with(Some(
            r#"[{"type":"PullCredentialsReady","status":"True","reason":"ImagesResolvable","message":"ok"}]"#,
        ))));
        assert!(mirror(&mut conditions, &resolved, &at(3)));
        assert!(find_condition(&conditions, "PullSecretConflict").is_none());
        assert!(find_condition(&conditions, "CatalogSourcesUnhealthy").is_some());

        assert!(mirror(&mut conditions, &read_report(None), &at(4)));
        assert_eq!(conditions.len(), 1);
    }

    #[test]
    fn a_malformed_report_changes_nothing() {
        let report = read_report(Some(&csv_with(Some("{not json"))));
        assert!(matches!(report, Report::Malformed(_)));
        let mut conditions = vec![SubscriptionCondition {
            type_: "PullSecretConflict".into(),
            status: "True".into(),
            ..SubscriptionCondition::default()
        }];
        assert!(!mirror(&mut conditions, &report, &at(1)));
        assert_eq!(conditions.len(), 1);
        assert_eq!(read_report(Some(&csv_with(None))), Report::Absent);
    }
}
