//! Putting the copies into a Deployment's pod template.
//!
//! The ServiceAccount admission plugin copies a ServiceAccount's `imagePullSecrets` into a pod
//! only when the pod is created and only when the pod lists none of its own; a template that
//! already lists one, or a pod created before the ServiceAccount was edited, never gets ours. So
//! the rendered pod template lists the copies itself (inside the Deployment's spec hash, so an
//! upgrade keeps them). `PodSpec.imagePullSecrets` is `listType=map` keyed by `name`: entries are
//! unique by name, and a merge by name is safe.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{LocalObjectReference, PodSpec};

/// Adds `names` missing from `pod_spec.imagePullSecrets`: existing entries first, in their order,
/// then ours sorted; no duplicates, no empty names. Returns whether the spec changed.
pub fn inject(pod_spec: &mut PodSpec, names: &[String]) -> bool {
    let existing: BTreeSet<&str> = pod_spec
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|entry| entry.name.as_str())
        .collect();
    let missing: BTreeSet<String> = names
        .iter()
        .filter(|name| !name.is_empty() && !existing.contains(name.as_str()))
        .cloned()
        .collect();
    if missing.is_empty() {
        return false;
    }
    pod_spec.image_pull_secrets.get_or_insert_default().extend(
        missing
            .into_iter()
            .map(|name| LocalObjectReference { name }),
    );
    true
}

/// Removes every entry named in `names`; the field is dropped when nothing is left. Returns
/// whether the spec changed.
pub fn remove(pod_spec: &mut PodSpec, names: &[String]) -> bool {
    let Some(list) = pod_spec.image_pull_secrets.as_mut() else {
        return false;
    };
    let before = list.len();
    list.retain(|entry| entry.name.is_empty() || !names.contains(&entry.name));
    let changed = list.len() != before;
    if changed && list.is_empty() {
        pod_spec.image_pull_secrets = None;
    }
    changed
}

/// The ServiceAccount a pod of this template runs as, the way admission decides it:
/// `serviceAccountName`, else the deprecated `serviceAccount`, else `default`. Every one of these
/// belongs in [`InstalledCsv::service_accounts`](super::plan::InstalledCsv::service_accounts).
pub fn pod_service_account(pod_spec: &PodSpec) -> &str {
    [&pod_spec.service_account_name, &pod_spec.service_account]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .find(|name| !name.is_empty())
        .unwrap_or(DEFAULT_SERVICE_ACCOUNT)
}

/// The ServiceAccount every namespace has, used by pods that name none.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
