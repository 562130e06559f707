//! What a run sets up, what "converged" means for it and what its third phase changes.
//!
//! - [`Scenario::Subscriptions`] (issues 5, 6 and 12): N namespaces, each with an OperatorGroup
//!   and a Subscription; the third phase rotates a source secret until all N pull-secret copies
//!   carry the new data.
//! - [`Scenario::AllNamespaces`] (issue 27): one operator installed for all namespaces and N
//!   other namespaces, copied CSVs on or off (OLMConfig `cluster`,
//!   `spec.features.disableCopiedCSVs`); converged once the operator is installed and, with
//!   copies on, each of the N namespaces holds a copy in phase `Succeeded`. The third phase flips
//!   the switch until every copy is gone (on → off) or made (off → on).

use std::fmt;

use serde_json::Value;

use crate::cluster::{Cluster, OPERATOR_NAMESPACE, SUBSCRIPTION};
use crate::measure::{self, Expected};

/// What a run sets up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// N namespaces, each with its own install.
    Subscriptions,
    /// One AllNamespaces install and N namespaces, copied CSVs on (`copies`) or off.
    AllNamespaces { copies: bool },
}

impl Scenario {
    /// Seeds everything a user would create, straight into the store (not counted).
    pub fn seed(self, cluster: &Cluster, tenants: &[String]) {
        match self {
            Self::Subscriptions => {
                cluster.seed_catalog();
                for tenant in tenants {
                    cluster.seed_tenant(tenant);
                }
            }
            Self::AllNamespaces { copies } => {
                cluster.seed_olm_config(!copies);
                cluster.seed_catalog();
                for tenant in tenants {
                    cluster.seed_namespace(tenant);
                }
                cluster.seed_all_namespaces_operator();
            }
        }
    }

    /// The namespaces the converge waits for.
    pub fn converging(self, tenants: &[String]) -> Vec<String> {
        match self {
            Self::Subscriptions => tenants.to_vec(),
            Self::AllNamespaces { .. } => std::iter::once(OPERATOR_NAMESPACE.to_owned())
                .chain(tenants.iter().cloned())
                .collect(),
        }
    }

    /// Whether `namespace` (one of [`Self::converging`]) has converged.
    pub fn converged(self, cluster: &Cluster, namespace: &str, expected: &Expected) -> bool {
        match self {
            Self::Subscriptions => measure::installed(cluster, namespace, expected),
            Self::AllNamespaces { .. } if namespace == OPERATOR_NAMESPACE => {
                measure::installed(cluster, namespace, expected)
            }
            Self::AllNamespaces { copies } => {
                copy_state(cluster, namespace) == copies.then_some(true)
            }
        }
    }

    /// What the third phase does, for reports.
    pub fn change(self) -> &'static str {
        match self {
            Self::Subscriptions => "rotation",
            Self::AllNamespaces { copies: true } => "switch off",
            Self::AllNamespaces { copies: false } => "switch on",
        }
    }

    /// What N counts, for reports.
    pub fn unit(self) -> &'static str {
        match self {
            Self::Subscriptions => "Subscription",
            Self::AllNamespaces { .. } => "namespace",
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Subscriptions => f.write_str("Subscriptions"),
            Self::AllNamespaces { copies } => write!(
                f,
                "AllNamespaces operator, copied CSVs {}",
                if *copies { "on" } else { "off" }
            ),
        }
    }
}

/// The CSV the AllNamespaces operator runs (its Subscription's `installedCSV`).
pub fn operator_csv(cluster: &Cluster) -> Option<String> {
    cluster
        .api()
        .inspect(
            "operators.coreos.com",
            "subscriptions",
            OPERATOR_NAMESPACE,
            SUBSCRIPTION,
            |sub| {
                sub.pointer("/status/installedCSV")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            },
        )
        .flatten()
}

/// The copy of the operator's CSV in `namespace`: `None` if there is none, else whether it is
/// `Succeeded`. Reads in place, as [`measure::installed`].
pub fn copy_state(cluster: &Cluster, namespace: &str) -> Option<bool> {
    let csv = operator_csv(cluster)?;
    cluster
        .api()
        .inspect(
            "operators.coreos.com",
            "clusterserviceversions",
            namespace,
            &csv,
            |copy| {
                let copied = copy
                    .pointer("/metadata/labels/olm.copiedFrom")
                    .and_then(Value::as_str)
                    == Some(OPERATOR_NAMESPACE);
                copied.then(|| {
                    copy.pointer("/status/phase").and_then(Value::as_str) == Some("Succeeded")
                })
            },
        )
        .flatten()
}

/// Copies of the operator's CSV in the cluster (read from the store, not counted).
pub fn copies(cluster: &Cluster) -> usize {
    let Some(csv) = operator_csv(cluster) else {
        return 0;
    };
    cluster
        .api()
        .list::<opcat::api::ClusterServiceVersion>(None)
        .iter()
        .filter(|copy| {
            copy.metadata.name.as_deref() == Some(&csv)
                && copy
                    .metadata
                    .labels
                    .as_ref()
                    .is_some_and(|labels| labels.contains_key("olm.copiedFrom"))
        })
        .count()
}
