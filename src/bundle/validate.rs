//! What opcat refuses to install from a ClusterServiceVersion, checked before anything is
//! rendered: an install strategy other than `deployment`, Deployment names that Kubernetes would
//! reject or that repeat, invalid service account names, and features opcat does not implement
//! yet (webhooks and owned API services need certificate management; DESIGN §8).
//!
//! Every problem is final for this CSV (the bundle's content does not change): the controller
//! marks the CSV `Failed` and does not retry hot.

use std::collections::BTreeMap;

use crate::api::ClusterServiceVersion;
use crate::api::csv_install::INSTALL_STRATEGY_DEPLOYMENT;
use crate::pull_secrets::names::is_dns1123_subdomain;

/// Why a ClusterServiceVersion cannot be installed.
#[derive(Debug, thiserror::Error)]
#[error("ClusterServiceVersion {csv} cannot be installed: {}", self.message())]
pub struct ValidationError {
    /// Name of the ClusterServiceVersion.
    pub csv: String,
    /// Every problem found.
    pub problems: Vec<InstallProblem>,
}

impl ValidationError {
    /// Whether the CSV asks for a feature opcat does not support yet (as opposed to being
    /// malformed).
    pub fn is_unsupported(&self) -> bool {
        self.problems.iter().any(InstallProblem::is_unsupported)
    }

    /// A short CamelCase name of the error, for metric labels and condition reasons.
    pub fn kind(&self) -> &'static str {
        if self.is_unsupported() {
            "UnsupportedFeature"
        } else {
            "InvalidInstallStrategy"
        }
    }

    fn message(&self) -> String {
        self.problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// One reason a ClusterServiceVersion cannot be installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallProblem {
    /// `spec.install.strategy` is not `deployment`.
    #[error(
        "install strategy {found:?} is not supported; the only strategy is \"{INSTALL_STRATEGY_DEPLOYMENT}\""
    )]
    UnknownStrategy {
        /// The strategy named.
        found: String,
    },
    /// `spec.install.spec` is missing.
    #[error("spec.install.spec is missing: the CSV names no Deployments")]
    NoStrategySpec,
    /// A Deployment name Kubernetes would reject.
    #[error(
        "Deployment name {name:?} is not a valid DNS-1123 subdomain (lower-case alphanumerics, \
         '-' and '.', at most 253 characters)"
    )]
    InvalidDeploymentName {
        /// The name.
        name: String,
    },
    /// A Deployment without a pod template spec.
    #[error("Deployment {name} has no pod template (spec.template.spec)")]
    NoPodSpec {
        /// The Deployment's name.
        name: String,
    },
    /// Two Deployments with the same name.
    #[error("Deployment {name} is listed {count} times in spec.install.spec.deployments")]
    DuplicateDeployment {
        /// The name.
        name: String,
        /// How often it is listed.
        count: usize,
    },
    /// A service account name Kubernetes would reject.
    #[error("service account name {name:?} in {field} is not a valid DNS-1123 subdomain")]
    InvalidServiceAccountName {
        /// Where it is named (`permissions`, `clusterPermissions`).
        field: &'static str,
        /// The name.
        name: String,
    },
    /// The CSV declares webhooks.
    #[error(
        "webhooks are not supported by opcat yet (spec.webhookdefinitions: {}); they need \
         certificate management, which is out of scope",
        webhooks.join(", ")
    )]
    WebhooksNotSupported {
        /// `generateName` and type of each webhook.
        webhooks: Vec<String>,
    },
    /// The CSV owns aggregated API services.
    #[error(
        "owned API services are not supported by opcat yet (spec.apiservicedefinitions.owned: {}); \
         they need certificate management, which is out of scope",
        api_services.join(", ")
    )]
    ApiServicesNotSupported {
        /// `<version>.<group>` of each API service.
        api_services: Vec<String>,
    },
}

impl InstallProblem {
    /// Whether this is a feature opcat does not support yet.
    pub fn is_unsupported(&self) -> bool {
        matches!(
            self,
            Self::WebhooksNotSupported { .. } | Self::ApiServicesNotSupported { .. }
        )
    }
}

/// Checks that opcat can install `csv`; reports every problem at once.
pub fn validate_for_install(csv: &ClusterServiceVersion) -> Result<(), ValidationError> {
    let spec = &csv.spec;
    let mut problems = Vec::new();

    if spec.install.strategy != INSTALL_STRATEGY_DEPLOYMENT {
        problems.push(InstallProblem::UnknownStrategy {
            found: spec.install.strategy.clone(),
        });
    } else if spec.install.spec.is_none() {
        problems.push(InstallProblem::NoStrategySpec);
    }

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for deployment in spec.install.deployments() {
        *counts.entry(deployment.name.as_str()).or_default() += 1;
        if deployment.spec.template.spec.is_none() {
            problems.push(InstallProblem::NoPodSpec {
                name: deployment.name.clone(),
            });
        }
    }
    for (name, count) in counts {
        if !is_dns1123_subdomain(name) {
            problems.push(InstallProblem::InvalidDeploymentName {
                name: name.to_owned(),
            });
        }
        if count > 1 {
            problems.push(InstallProblem::DuplicateDeployment {
                name: name.to_owned(),
                count,
            });
        }
    }

    for (field, entries) in [
        ("permissions", spec.install.permissions()),
        ("clusterPermissions", spec.install.cluster_permissions()),
    ] {
        for entry in entries {
            let name = &entry.service_account_name;
            // An empty name means the namespace's `default` service account.
            if !name.is_empty() && !is_dns1123_subdomain(name) {
                problems.push(InstallProblem::InvalidServiceAccountName {
                    field,
                    name: name.clone(),
                });
            }
        }
    }

    let webhooks: Vec<String> = spec
        .webhook_definitions
        .iter()
        .flatten()
        .map(|webhook| format!("{} ({:?})", webhook.generate_name, webhook.type_))
        .collect();
    if !webhooks.is_empty() {
        problems.push(InstallProblem::WebhooksNotSupported { webhooks });
    }

    let api_services: Vec<String> = spec
        .api_service_definitions
        .as_ref()
        .and_then(|definitions| definitions.owned.as_ref())
        .into_iter()
        .flatten()
        .map(|service| format!("{}.{}", service.version, service.group))
        .collect();
    if !api_services.is_empty() {
        problems.push(InstallProblem::ApiServicesNotSupported { api_services });
    }

    if problems.is_empty() {
        Ok(())
    } else {
        Err(ValidationError {
            csv: csv.metadata.name.clone().unwrap_or_default(),
            problems,
        })
    }
}
