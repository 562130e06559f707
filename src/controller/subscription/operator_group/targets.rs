//! Pure: which namespaces an OperatorGroup targets, and its status (no client).
//!
//! OLM (`operatorgroup.go` `getOperatorGroupTargets`): `spec.targetNamespaces` when non-empty;
//! else the namespaces matching `spec.selector` when it selects anything; else every namespace,
//! written as `[""]`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::core::{Selector, SelectorExt};

use crate::api::conditions::{DesiredCondition, Status, remove_condition, set_condition};
use crate::api::operator_group_status::{
    CONDITION_MULTIPLE_OPERATOR_GROUPS, REASON_MULTIPLE_OPERATOR_GROUPS_FOUND,
};
use crate::api::{OperatorGroupSpec, OperatorGroupStatus};

/// Why an OperatorGroup's selector cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("spec.selector is not a valid label selector: {reason}")]
pub struct InvalidSelector {
    /// What the selector parser said.
    pub reason: String,
}

/// The namespaces `spec` targets, sorted: `[""]` for all namespaces. `namespaces` yields each
/// existing namespace's name and labels (only used for a selector).
pub fn target_namespaces<'a>(
    spec: Option<&OperatorGroupSpec>,
    namespaces: impl IntoIterator<Item = (&'a str, BTreeMap<String, String>)>,
) -> Result<Vec<String>, InvalidSelector> {
    let Some(spec) = spec else {
        return Ok(vec![String::new()]);
    };
    let explicit: BTreeSet<&str> = spec
        .target_namespaces()
        .iter()
        .map(String::as_str)
        .filter(|name| !name.is_empty())
        .collect();
    if !explicit.is_empty() {
        return Ok(explicit.into_iter().map(str::to_owned).collect());
    }
    let Some(selector) = spec.selector.as_deref().filter(|s| !selects_everything(s)) else {
        return Ok(vec![String::new()]);
    };
    let selector = Selector::try_from(selector.clone())
        .map_err(|error| InvalidSelector { reason: error.0 })?;
    let matched: BTreeSet<&str> = namespaces
        .into_iter()
        .filter(|(_, labels)| selector.matches(labels))
        .map(|(name, _)| name)
        .collect();
    Ok(matched.into_iter().map(str::to_owned).collect())
}

/// OLM treats a selector with neither `matchLabels` nor `matchExpressions` like no selector.
fn selects_everything(selector: &LabelSelector) -> bool {
    selector
        .match_labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(Vec::is_empty)
}

/// The status opcat wants, starting from `current` (fields other writers own are kept):
/// `namespaces`, `lastUpdated` (moved to `now` only when the namespaces change) and the
/// `MultipleOperatorGroup` condition when `groups_in_namespace` > 1.
pub fn desired_status(
    current: Option<&OperatorGroupStatus>,
    namespaces: Vec<String>,
    groups_in_namespace: usize,
    namespace: &str,
    now: &Time,
) -> OperatorGroupStatus {
    let mut status = current.cloned().unwrap_or_default();
    if status.namespaces.as_ref() != Some(&namespaces) || status.last_updated.is_none() {
        status.namespaces = Some(namespaces);
        status.last_updated = Some(now.clone());
    }
    let mut conditions: Vec<Condition> = status.conditions.take().unwrap_or_default();
    if groups_in_namespace > 1 {
        let message = format!(
            "namespace {namespace} has {groups_in_namespace} OperatorGroups; operators can only \
             be installed in a namespace with exactly one"
        );
        set_condition(
            &mut conditions,
            &DesiredCondition::new(
                CONDITION_MULTIPLE_OPERATOR_GROUPS,
                Status::True,
                REASON_MULTIPLE_OPERATOR_GROUPS_FOUND,
                &message,
            ),
            now,
        );
    } else {
        remove_condition(&mut conditions, CONDITION_MULTIPLE_OPERATOR_GROUPS);
    }
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    status
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn at(seconds: i64) -> Time {
        Time(jiff::Timestamp::from_second(seconds).unwrap())
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn cluster() -> Vec<(String, BTreeMap<String, String>)> {
        vec![
            ("team-b".to_owned(), labels(&[("team", "b")])),
            (
                "team-a".to_owned(),
                labels(&[("team", "a"), ("env", "prod")]),
            ),
            ("team-a-dev".to_owned(), labels(&[("team", "a")])),
            ("kube-system".to_owned(), BTreeMap::new()),
        ]
    }

    fn targets(spec: Option<&OperatorGroupSpec>) -> Result<Vec<String>, InvalidSelector> {
        let cluster = cluster();
        target_namespaces(spec, cluster.iter().map(|(n, l)| (n.as_str(), l.clone())))
    }

    #[test]
    fn spec_less_and_empty_groups_target_all_namespaces() {
        assert_eq!(targets(None).unwrap(), [""]);
        assert_eq!(targets(Some(&OperatorGroupSpec::default())).unwrap(), [""]);
        let empty_selector = OperatorGroupSpec {
            selector: Some(Box::default()),
            target_namespaces: Some(vec![]),
            ..OperatorGroupSpec::default()
        };
        assert_eq!(targets(Some(&empty_selector)).unwrap(), [""]);
    }

    #[test]
    fn target_namespaces_win_over_the_selector_and_are_sorted_and_deduplicated() {
        let spec = OperatorGroupSpec {
            target_namespaces: Some(vec!["zeta".into(), "alpha".into(), "zeta".into()]),
            selector: Some(Box::new(LabelSelector {
                match_labels: Some(labels(&[("team", "a")])),
                ..LabelSelector::default()
            })),
            ..OperatorGroupSpec::default()
        };
        assert_eq!(targets(Some(&spec)).unwrap(), ["alpha", "zeta"]);
    }

    #[test]
    fn selector_matches_namespace_labels() {
        let by_label = OperatorGroupSpec {
            selector: Some(Box::new(LabelSelector {
                match_labels: Some(labels(&[("team", "a")])),
                ..LabelSelector::default()
            })),
            ..OperatorGroupSpec::default()
        };
        assert_eq!(targets(Some(&by_label)).unwrap(), ["team-a", "team-a-dev"]);
        let by_expression = OperatorGroupSpec {
            selector: Some(Box::new(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "In".into(),
                    values: Some(vec!["prod".into()]),
                }]),
                ..LabelSelector::default()
            })),
            ..OperatorGroupSpec::default()
        };
        assert_eq!(targets(Some(&by_expression)).unwrap(), ["team-a"]);
        let none = OperatorGroupSpec {
            selector: Some(Box::new(LabelSelector {
                match_labels: Some(labels(&[("team", "c")])),
                ..LabelSelector::default()
            })),
            ..OperatorGroupSpec::default()
        };
        assert!(targets(Some(&none)).unwrap().is_empty());
    }

    #[test]
    fn an_unknown_selector_operator_is_reported() {
        let spec = OperatorGroupSpec {
            selector: Some(Box::new(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "env".into(),
                    operator: "Near".into(),
                    values: None,
                }]),
                ..LabelSelector::default()
            })),
            ..OperatorGroupSpec::default()
        };
        assert!(targets(Some(&spec)).is_err());
    }

    #[test]
    fn last_updated_moves_only_when_namespaces_change() {
        let first = desired_status(None, vec!["a".into()], 1, "ns", &at(10));
        assert_eq!(first.namespaces.as_deref(), Some(&["a".to_owned()][..]));
        assert_eq!(first.last_updated, Some(at(10)));
        assert_eq!(first.conditions, None);
        let same = desired_status(Some(&first), vec!["a".into()], 1, "ns", &at(20));
        assert_eq!(same, first);
        let changed = desired_status(Some(&first), vec!["a".into(), "b".into()], 1, "ns", &at(30));
        assert_eq!(changed.last_updated, Some(at(30)));
    }

    #[test]
    fn several_groups_in_a_namespace_are_flagged_and_cleared() {
        let flagged = desired_status(None, vec![String::new()], 2, "ops", &at(10));
        let conditions = flagged.conditions.clone().unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(conditions[0].type_, CONDITION_MULTIPLE_OPERATOR_GROUPS);
        assert_eq!(conditions[0].status, "True");
        assert!(
            conditions[0]
                .message
                .contains("namespace ops has 2 OperatorGroups")
        );
        let again = desired_status(Some(&flagged), vec![String::new()], 2, "ops", &at(20));
        assert_eq!(again, flagged);
        let cleared = desired_status(Some(&flagged), vec![String::new()], 1, "ops", &at(30));
        assert_eq!(cleared.conditions, None);
    }

    #[test]
    fn fields_of_other_writers_are_kept() {
        let current = OperatorGroupStatus {
            service_account_ref: Some(Default::default()),
            ..OperatorGroupStatus::default()
        };
        let status = desired_status(Some(&current), vec![String::new()], 1, "ns", &at(1));
        assert!(status.service_account_ref.is_some());
    }
}
