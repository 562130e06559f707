//! Checks of `webhookdefinitions` and owned `apiservicedefinitions`: what OLM v0 refuses
//! (`install.ValidWebhookRules`, a conversion webhook for a CRD the CSV does not own, one without
//! CRDs), and what could not work (a webhook no Deployment serves, two target ports behind one
//! Service port, a Service that could not select its pods).

use std::collections::{BTreeMap, BTreeSet};

use super::serving::{api_service_name, owned_api_services, served_deployments, webhooks};
use super::validate::InstallProblem;
use crate::api::ClusterServiceVersion;
use crate::api::cluster_service_version::{WebhookAdmissionType, WebhookDescription};

/// OLM's own API group, which no webhook may intercept.
const OLM_GROUP: &str = "operators.coreos.com";
/// The group of the webhook configurations.
const ADMISSION_GROUP: &str = "admissionregistration.k8s.io";

/// Every problem of the CSV's webhooks and owned API services.
pub(super) fn serving_problems(csv: &ClusterServiceVersion) -> Vec<InstallProblem> {
    let deployments: BTreeSet<&str> = csv
        .spec
        .install
        .deployments()
        .iter()
        .map(|deployment| deployment.name.as_str())
        .collect();
    let mut problems = Vec::new();
    let mut unknown = |what: String, deployment: Option<&String>| {
        let deployment = deployment.map(String::as_str).unwrap_or_default();
        if !deployments.contains(deployment) {
            problems.push(InstallProblem::UnknownServingDeployment {
                what,
                deployment: deployment.to_owned(),
            });
        }
    };
    for webhook in webhooks(csv) {
        unknown(describe(webhook), webhook.deployment_name.as_ref());
    }
    for api in owned_api_services(csv) {
        unknown(
            format!("API service {}", api_service_name(api)),
            api.deployment_name.as_ref(),
        );
    }

    let mut counts: BTreeMap<(&str, WebhookAdmissionType), usize> = BTreeMap::new();
    for webhook in webhooks(csv) {
        *counts
            .entry((&webhook.generate_name, webhook.type_))
            .or_default() += 1;
        if webhook.type_ != WebhookAdmissionType::ConversionWebhook
            && webhook.side_effects.is_none()
        {
            problems.push(InstallProblem::MissingSideEffects {
                webhook: webhook.generate_name.clone(),
            });
        }
        if let Some(reason) = forbidden_rules(webhook) {
            problems.push(InstallProblem::ForbiddenWebhookRules {
                webhook: webhook.generate_name.clone(),
                reason,
            });
        }
    }
    for ((webhook, kind), count) in counts {
        if count > 1 {
            problems.push(InstallProblem::DuplicateWebhook {
                webhook: webhook.to_owned(),
                kind,
                count,
            });
        }
    }

    problems.extend(conversion_problems(csv));
    problems.extend(service_problems(csv));
    problems
}

fn describe(webhook: &WebhookDescription) -> String {
    format!("webhook {} ({:?})", webhook.generate_name, webhook.type_)
}

/// OLM's `ValidWebhookRules`, with OLM's messages.
fn forbidden_rules(webhook: &WebhookDescription) -> Option<&'static str> {
    for rule in webhook.rules.iter().flatten() {
        let groups = rule.api_groups.as_deref().unwrap_or_default();
        let has = |list: &[String], wanted: &str| list.iter().any(|item| item == wanted);
        if has(groups, "*") {
            return Some("webhook rules cannot include all groups");
        }
        if has(groups, OLM_GROUP) {
            return Some("webhook rules cannot include the OLM group");
        }
        let resources = rule.resources.as_deref().unwrap_or_default();
        if has(groups, ADMISSION_GROUP)
            && (has(resources, "*")
                || has(resources, "MutatingWebhookConfiguration")
                || has(resources, "ValidatingWebhookConfiguration"))
        {
            return Some(
                "webhook rules cannot include MutatingWebhookConfiguration or \
                 ValidatingWebhookConfiguration resources",
            );
        }
    }
    None
}

fn conversion_problems(csv: &ClusterServiceVersion) -> Vec<InstallProblem> {
    let owned: BTreeSet<&str> = csv
        .spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|crds| crds.owned.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|crd| crd.name.as_str())
        .collect();
    let mut problems = Vec::new();
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for webhook in webhooks(csv)
        .iter()
        .filter(|webhook| webhook.type_ == WebhookAdmissionType::ConversionWebhook)
    {
        let crds = webhook.conversion_crds.as_deref().unwrap_or_default();
        if crds.is_empty() {
            problems.push(InstallProblem::ConversionWithoutCrds {
                webhook: webhook.generate_name.clone(),
            });
        }
        for crd in crds {
            *seen.entry(crd).or_default() += 1;
            if !owned.contains(crd.as_str()) {
                problems.push(InstallProblem::ConversionCrdNotOwned {
                    webhook: webhook.generate_name.clone(),
                    crd: crd.clone(),
                });
            }
        }
    }
    problems.extend(
        seen.into_iter()
            .filter(|(_, count)| *count > 1)
            .map(|(crd, _)| InstallProblem::ConversionCrdTwice {
                crd: crd.to_owned(),
            }),
    );
    problems
}

fn service_problems(csv: &ClusterServiceVersion) -> Vec<InstallProblem> {
    let mut problems = Vec::new();
    for served in served_deployments(csv) {
        let mut ports: BTreeMap<i32, usize> = BTreeMap::new();
        for port in &served.ports {
            *ports.entry(port.port).or_default() += 1;
        }
        problems.extend(
            ports
                .into_iter()
                .filter(|(_, count)| *count > 1)
                .map(|(port, _)| InstallProblem::ConflictingServicePorts {
                    deployment: served.deployment.clone(),
                    port,
                }),
        );
        if !served.service.starts_with(|c: char| c.is_ascii_lowercase()) {
            problems.push(InstallProblem::InvalidServiceName {
                deployment: served.deployment.clone(),
                service: served.service.clone(),
            });
        }
        let selects = csv
            .spec
            .install
            .deployments()
            .iter()
            .find(|deployment| deployment.name == served.deployment)
            .and_then(|deployment| deployment.spec.selector.match_labels.as_ref())
            .is_some_and(|labels| !labels.is_empty());
        let known = csv
            .spec
            .install
            .deployments()
            .iter()
            .any(|deployment| deployment.name == served.deployment);
        if known && !selects {
            problems.push(InstallProblem::NoSelectorLabels {
                deployment: served.deployment.clone(),
            });
        }
    }
    problems
}
