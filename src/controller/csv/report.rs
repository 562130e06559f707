//! The pull-secret report (pure): what the Subscription must show about propagation, written by
//! the CSV reconciler into the CSV annotation `opcat.dev/pull-secrets` (`controller::keys::csv::PULL_SECRETS_REPORT`) and mirrored into
//! Subscription conditions by the Subscription reconciler (one status writer per object).
//!
//! Format: a JSON list of Subscription conditions (`type`, `status`, `reason`, `message`;
//! no times — the Subscription reconciler stamps them), sorted by type. Types:
//! `PullSecretConflict`, `PullSecretsNotPropagated`, `PullSecretSourceMissing`,
//! `PullSecretsScoped` (the registries each copy holds, the sources left out) and, once the
//! preflight ran, `PullCredentialsReady`. Nothing in it is secret data: only names, namespaces,
//! registries and reasons.

use crate::api::subscription::SubscriptionCondition;

use crate::pull_secrets::PullSecretCondition;

/// The report for `conditions` (deterministic: sorted by type).
pub fn encode(conditions: &[PullSecretCondition]) -> String {
    let mut list: Vec<SubscriptionCondition> = conditions
        .iter()
        .map(|condition| SubscriptionCondition {
            type_: condition.type_.to_owned(),
            status: condition.status.as_str().to_owned(),
            reason: Some(condition.reason.to_owned()),
            message: Some(condition.message.clone()),
            last_heartbeat_time: None,
            last_transition_time: None,
        })
        .collect();
    list.sort_by(|a, b| a.type_.cmp(&b.type_));
    list.dedup_by(|a, b| a.type_ == b.type_);
    // A list of plain strings always serialises.
    serde_json::to_string(&list).unwrap_or_else(|_| "[]".to_owned())
}

/// Reads a report back (for the Subscription reconciler and tests). `None` when absent or
/// malformed.
pub fn decode(annotation: Option<&str>) -> Option<Vec<SubscriptionCondition>> {
    serde_json::from_str(annotation?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pull_secrets::ConditionStatus;

    fn condition(type_: &'static str, status: ConditionStatus) -> PullSecretCondition {
        PullSecretCondition {
            type_,
            status,
            reason: "Reason",
            message: format!("about {type_}"),
        }
    }

    #[test]
    fn the_report_is_a_sorted_list_of_subscription_conditions() {
        let text = encode(&[
            condition("PullSecretsNotPropagated", ConditionStatus::False),
            condition("PullSecretConflict", ConditionStatus::True),
        ]);
        assert_eq!(
            text,
            r#"[{"type":"PullSecretConflict","status":"True","reason":"Reason","message":"about PullSecretConflict"},{"type":"PullSecretsNotPropagated","status":"False","reason":"Reason","message":"about PullSecretsNotPropagated"}]"#
        );
        let decoded = decode(Some(&text)).unwrap();
        assert_eq!(decoded.len(), 2);
        assert_eq!(decoded[0].type_, "PullSecretConflict");
        assert_eq!(decode(Some("not json")), None);
    }
}
