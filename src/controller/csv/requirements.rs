//! Requirements of an install that do not need the cluster (pure): exactly one OperatorGroup in
//! the namespace, with resolved target namespaces the CSV's install modes support, and a bundle
//! opcat can install. The messages follow OLM's where OLM has one.

use std::fmt;

use crate::api::{ClusterServiceVersion, OperatorGroup, csv_reasons};
use crate::bundle::{Bundle, TargetNamespaces, check_install_mode, validate_for_install};

/// Why an install cannot go ahead now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unmet {
    /// Terminal until something changes (an OperatorGroup, the CSV, the Subscription): phase
    /// `Failed` with an OLM reason.
    Failed {
        reason: &'static str,
        message: String,
    },
    /// Expected to resolve by itself (the OperatorGroup's targets are not computed yet): phase
    /// `Pending`, fixed requeue.
    Waiting { message: String },
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed { reason, message } => write!(f, "{reason}: {message}"),
            Self::Waiting { message } => f.write_str(message),
        }
    }
}

/// The OperatorGroup an install runs under and the namespaces it targets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Targets {
    /// Name of the OperatorGroup.
    pub operator_group: String,
    /// Its resolved target namespaces.
    pub namespaces: TargetNamespaces,
}

/// The single OperatorGroup of `namespace` (from `operator_groups`, every OperatorGroup in the
/// namespace) and its resolved targets.
pub fn targets(namespace: &str, operator_groups: &[&OperatorGroup]) -> Result<Targets, Unmet> {
    let group = match operator_groups {
        [] => {
            return Err(Unmet::Failed {
                reason: csv_reasons::NO_OPERATOR_GROUP,
                message: format!("csv in namespace {namespace} with no operatorgroups"),
            });
        }
        [group] => *group,
        _ => {
            let mut names: Vec<&str> = operator_groups
                .iter()
                .filter_map(|group| group.metadata.name.as_deref())
                .collect();
            names.sort_unstable();
            return Err(Unmet::Failed {
                reason: csv_reasons::TOO_MANY_OPERATOR_GROUPS,
                message: format!(
                    "csv created in namespace {namespace} with multiple operatorgroups, can't \
                     pick one automatically: [{}]",
                    names.join(", ")
                ),
            });
        }
    };
    let name = group.metadata.name.clone().unwrap_or_default();
    let resolved = group
        .status
        .as_ref()
        .and_then(|status| status.namespaces.as_deref())
        .unwrap_or_default();
    if resolved.is_empty() {
        return Err(Unmet::Waiting {
            message: format!(
                "waiting for OperatorGroup {namespace}/{name} to resolve its target namespaces \
                 (status.namespaces)"
            ),
        });
    }
    let namespaces =
        TargetNamespaces::from_operator_group(resolved).map_err(|error| Unmet::Failed {
            reason: error.reason(),
            message: format!("OperatorGroup {namespace}/{name}: {error}"),
        })?;
    Ok(Targets {
        operator_group: name,
        namespaces,
    })
}

/// Whether the bundle's CSV can be installed for `targets` from `namespace`.
pub fn installable(bundle: &Bundle, namespace: &str, targets: &Targets) -> Result<(), Unmet> {
    let csv: &ClusterServiceVersion = &bundle.csv;
    validate_for_install(csv).map_err(|error| Unmet::Failed {
        reason: error.kind(),
        message: error.to_string(),
    })?;
    check_install_mode(csv, namespace, &targets.namespaces).map_err(|error| Unmet::Failed {
        reason: error.reason(),
        message: format!("{error} (OperatorGroup {})", targets.operator_group),
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::api::{OperatorGroupSpec, OperatorGroupStatus};

    fn group(name: &str, namespaces: Option<&[&str]>) -> OperatorGroup {
        OperatorGroup {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("ops".to_owned()),
                ..ObjectMeta::default()
            },
            spec: OperatorGroupSpec::default(),
            status: namespaces.map(|namespaces| OperatorGroupStatus {
                namespaces: Some(namespaces.iter().map(|ns| (*ns).to_owned()).collect()),
                ..OperatorGroupStatus::default()
            }),
        }
    }

    #[test]
    fn no_operator_group_fails_with_olms_reason() {
        let unmet = targets("ops", &[]).unwrap_err();
        assert_eq!(
            unmet,
            Unmet::Failed {
                reason: "NoOperatorGroup",
                message: "csv in namespace ops with no operatorgroups".to_owned()
            }
        );
    }

    #[test]
    fn several_operator_groups_fail_and_are_named() {
        let a = group("b-group", Some(&["ops"]));
        let b = group("a-group", Some(&["ops"]));
        let Unmet::Failed { reason, message } = targets("ops", &[&a, &b]).unwrap_err() else {
            panic!("expected a failure");
        };
        assert_eq!(reason, "TooManyOperatorGroups");
        assert!(message.ends_with("[a-group, b-group]"), "{message}");
    }

    #[test]
    fn unresolved_targets_are_a_wait_not_a_failure() {
        let pending = group("og", None);
        assert!(matches!(
            targets("ops", &[&pending]),
            Err(Unmet::Waiting { .. })
        ));
        let empty = group("og", Some(&[]));
        assert!(matches!(
            targets("ops", &[&empty]),
            Err(Unmet::Waiting { .. })
        ));
    }

    #[test]
    fn resolved_targets_are_returned() {
        let all = group("og", Some(&[""]));
        assert_eq!(
            targets("ops", &[&all]).unwrap(),
            Targets {
                operator_group: "og".to_owned(),
                namespaces: TargetNamespaces::All
            }
        );
        let mixed = group("og", Some(&["", "ops"]));
        assert!(matches!(
            targets("ops", &[&mixed]),
            Err(Unmet::Failed {
                reason: "UnsupportedOperatorGroup",
                ..
            })
        ));
    }
}
