//! What opcat refuses to install from a ClusterServiceVersion, checked before anything is
//! rendered: an install strategy other than `deployment`, Deployment names that Kubernetes would
//! reject or that repeat, invalid service account names, and webhook or API service definitions
//! that cannot work (see `serving_checks`).
//!
//! Every problem is final for this CSV (the bundle's content does not change): the controller
//! marks the CSV `Failed` and does not retry hot.

use std::collections::BTreeMap;

use super::serving_checks::serving_problems;
use crate::api::cluster_service_version::WebhookAdmissionType;
use crate::api::csv_install::INSTALL_STRATEGY_DEPLOYMENT;
use crate::api::{ClusterServiceVersion, csv_reasons};
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
    /// A short CamelCase name of the error, for metric labels and condition reasons: OLM's
    /// `InvalidWebhookDescription` when every problem is in the webhook or API service
    /// definitions, else `InvalidInstallStrategy`.
    pub fn kind(&self) -> &'static str {
        if self.problems.iter().all(InstallProblem::is_webhook_problem) {
            csv_reasons::INVALID_WEBHOOK_DESCRIPTION
        } else {
            csv_reasons::INVALID_INSTALL_STRATEGY
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
    /// A webhook or owned API service whose `deploymentName` is missing or names no Deployment
    /// of the CSV: nothing would serve it.
    #[error(
        "{what} names Deployment {deployment:?}, which spec.install.spec.deployments does not \
         list; nothing would serve it"
    )]
    UnknownServingDeployment {
        /// The webhook (`generateName` and type) or API service (`<version>.<group>`).
        what: String,
        /// The name given (empty when missing).
        deployment: String,
    },
    /// A webhook configuration OLM does not allow (`install.ValidWebhookRules`): its rules
    /// intercept every API group, OLM's own group, or the webhook configurations themselves.
    #[error("webhook {webhook}: {reason}")]
    ForbiddenWebhookRules {
        /// `generateName` of the webhook.
        webhook: String,
        /// OLM's message.
        reason: &'static str,
    },
    /// Two webhooks of one type with the same `generateName` (one configuration each would have
    /// the same name).
    #[error("webhook {webhook} ({kind:?}) is listed {count} times in spec.webhookdefinitions")]
    DuplicateWebhook {
        /// The `generateName`.
        webhook: String,
        /// Its type.
        kind: WebhookAdmissionType,
        /// How often.
        count: usize,
    },
    /// An admission webhook without `sideEffects` (required by OLM's CSV schema and by the API
    /// server).
    #[error("webhook {webhook} does not declare sideEffects (None or NoneOnDryRun)")]
    MissingSideEffects {
        /// `generateName` of the webhook.
        webhook: String,
    },
    /// A conversion webhook without `conversionCRDs`.
    #[error("conversion webhook {webhook} lists no conversionCRDs")]
    ConversionWithoutCrds {
        /// `generateName` of the webhook.
        webhook: String,
    },
    /// A conversion webhook for a CRD the CSV does not own (OLM: "csv does not own CRD").
    #[error(
        "conversion webhook {webhook} converts CustomResourceDefinition {crd}, which the CSV \
         does not own (spec.customresourcedefinitions.owned)"
    )]
    ConversionCrdNotOwned {
        /// `generateName` of the webhook.
        webhook: String,
        /// The CRD.
        crd: String,
    },
    /// One CRD converted by two webhooks.
    #[error("CustomResourceDefinition {crd} is converted by more than one webhook")]
    ConversionCrdTwice {
        /// The CRD.
        crd: String,
    },
    /// Two webhooks or API services of one Deployment use one Service port with different
    /// target ports: the Service cannot have both.
    #[error(
        "Deployment {deployment} serves port {port} with different target ports; its Service \
         cannot route one port to two"
    )]
    ConflictingServicePorts {
        /// The Deployment.
        deployment: String,
        /// The Service port.
        port: i32,
    },
    /// A Deployment whose Service name would not be a DNS-1035 label (it starts with a digit).
    #[error(
        "Deployment {deployment} would get the Service name {service:?}, which Kubernetes rejects"
    )]
    InvalidServiceName {
        /// The Deployment.
        deployment: String,
        /// The Service name OLM's rule gives.
        service: String,
    },
    /// A Deployment serving webhooks whose selector has no `matchLabels`: its Service (which
    /// selects by labels only) would reach no pod.
    #[error(
        "Deployment {deployment} serves webhooks or API services but its selector has no \
         matchLabels, so its Service could not select its pods"
    )]
    NoSelectorLabels {
        /// The Deployment.
        deployment: String,
    },
}

impl InstallProblem {
    /// Whether this is a problem of the webhook or API service definitions (OLM's reason
    /// `InvalidWebhookDescription`) rather than of the install strategy.
    pub fn is_webhook_problem(&self) -> bool {
        !matches!(
            self,
            Self::UnknownStrategy { .. }
                | Self::NoStrategySpec
                | Self::InvalidDeploymentName { .. }
                | Self::NoPodSpec { .. }
                | Self::DuplicateDeployment { .. }
                | Self::InvalidServiceAccountName { .. }
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

    problems.extend(serving_problems(csv));

    if problems.is_empty() {
        Ok(())
    } else {
        Err(ValidationError {
            csv: csv.metadata.name.clone().unwrap_or_default(),
            problems,
        })
    }
}
