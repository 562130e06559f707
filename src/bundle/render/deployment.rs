//! The operator's Deployments, as OLM v0 builds them from `spec.install.spec.deployments`
//! (`operator-lifecycle-manager: pkg/controller/install/deployment.go`), plus opcat's pull-secret
//! copies in every pod template.
//!
//! - name from the entry, namespace = install namespace, labels = the entry's `label` plus
//!   opcat's ownership labels;
//! - pod template annotations = the template's own, overridden by the CSV's annotations (minus
//!   `kubectl.kubernetes.io/last-applied-configuration`, OLM's OperatorGroup bookkeeping and
//!   every `opcat.dev/` key, which change without the bundle changing), plus
//!   `olm.operatorGroup`, `olm.operatorNamespace` and `olm.targetNamespaces`;
//! - for a Deployment that serves webhooks or API services, its serving certificate mounted and
//!   the CA hash annotation (see `serving`), before the Subscription `config`, as OLM does;
//! - Subscription `config` applied with OLM's rules (see `config`);
//! - `revisionHistoryLimit: 1` (OLM does not support rollbacks);
//! - `OPERATOR_CONDITION_NAME=<csv>` on every container, after the Subscription `config` (its
//!   value wins over a `config` variable of that name, as in OLM; see `operator_condition`);
//! - the pull-secret copies added to `imagePullSecrets` (`pull_secrets::inject`: entries the
//!   bundle lists stay first, in place). They are part of the rendered spec, so every re-render
//!   and every upgrade keeps them.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PodSpec;

use super::config::apply_config;
use super::{RenderContext, RenderError, Stamp};
use crate::api::csv_install::StrategyDeploymentSpec;
use crate::api::olm_keys;
use crate::api::{ClusterServiceVersion, LABEL_PREFIX};
use crate::pull_secrets::pod_template::inject;

/// CSV annotations that never reach a pod template.
const DROPPED_CSV_ANNOTATIONS: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    olm_keys::OPERATOR_GROUP,
    olm_keys::OPERATOR_NAMESPACE,
    olm_keys::TARGET_NAMESPACES,
    olm_keys::PROVIDED_APIS,
];

/// OLM's `revisionHistoryLimit` for operator Deployments.
const REVISION_HISTORY_LIMIT: i32 = 1;

/// The Deployments of `csv`, in the order the CSV lists them.
pub(super) fn deployments(
    csv: &ClusterServiceVersion,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> Result<Vec<Deployment>, RenderError> {
    let csv_annotations = pod_annotations_from_csv(csv);
    csv.spec
        .install
        .deployments()
        .iter()
        .map(|entry| deployment(csv, entry, &csv_annotations, context, stamp))
        .collect()
}

/// The CSV's annotations that go on every pod template, and the OperatorGroup annotations.
fn pod_annotations_from_csv(csv: &ClusterServiceVersion) -> BTreeMap<String, String> {
    csv.metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(key, _)| {
            !DROPPED_CSV_ANNOTATIONS.contains(&key.as_str()) && !key.starts_with(LABEL_PREFIX)
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

fn deployment(
    csv: &ClusterServiceVersion,
    entry: &StrategyDeploymentSpec,
    csv_annotations: &BTreeMap<String, String>,
    context: &RenderContext<'_>,
    stamp: &Stamp,
) -> Result<Deployment, RenderError> {
    let mut spec = entry.spec.clone();
    let template = &mut spec.template;
    let mut template_meta = template.metadata.take().unwrap_or_default();
    let mut pod_spec: PodSpec = template.spec.take().ok_or_else(|| RenderError::NoPodSpec {
        deployment: entry.name.clone(),
    })?;

    let mut pod_annotations = template_meta.annotations.take().unwrap_or_default();
    pod_annotations.extend(csv_annotations.clone());
    pod_annotations.extend([
        (
            olm_keys::OPERATOR_GROUP.to_owned(),
            context.operator_group.to_owned(),
        ),
        (
            olm_keys::OPERATOR_NAMESPACE.to_owned(),
            context.install_namespace.to_owned(),
        ),
        (
            olm_keys::TARGET_NAMESPACES.to_owned(),
            context.targets.annotation_value(),
        ),
    ]);

    if let Some(served) = super::serving::served(csv, &entry.name) {
        let certificate = super::serving::certificate(context, &entry.name)?;
        super::serving::prepare_pod(&served, certificate, &mut pod_spec, &mut pod_annotations);
    }
    let mut deployment_annotations = BTreeMap::new();
    if let Some(config) = context.subscription_config {
        apply_config(
            config,
            &mut pod_spec,
            &mut pod_annotations,
            &mut deployment_annotations,
        );
    }
    super::operator_condition::inject_env(&mut pod_spec, &context.csv.name);
    inject(&mut pod_spec, context.pull_secret_names);

    template_meta.annotations = Some(pod_annotations);
    template.metadata = Some(template_meta);
    template.spec = Some(pod_spec);
    spec.revision_history_limit = Some(REVISION_HISTORY_LIMIT);

    let metadata = stamp.metadata(
        &entry.name,
        Some(context.install_namespace),
        entry.label.as_ref(),
        Some(&deployment_annotations),
    );
    Ok(Deployment {
        metadata,
        spec: Some(spec),
        status: None,
    })
}
