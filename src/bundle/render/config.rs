//! Subscription `spec.config` applied to an operator Deployment with OLM v0's merge rules
//! (`operator-lifecycle-manager: pkg/controller/operators/olm/overrides/inject/inject.go`), in
//! OLM's order: env, envFrom, volumes, volumeMounts, tolerations, resources, nodeSelector,
//! affinity, annotations.
//!
//! Like OLM, container-level settings go to `containers` only, not to init containers.
//! `config.selector` is accepted and ignored, as in OLM.
//!
//! Two OLM quirks are deliberately not copied:
//! - In OLM, `affinity.podAntiAffinity: {}` removes the *whole* affinity (node and pod affinity
//!   too) when the bundle has one; here it removes only the pod anti-affinity, like `{}` does for
//!   `nodeAffinity` and `podAffinity`.
//! - OLM's volume and volume-mount replacement writes through a pointer into the original slice,
//!   so a replacement listed after an appended entry can be lost when Go reallocates; here a
//!   replacement always takes effect.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, EnvFromSource, EnvVar, PodSpec, Toleration, Volume, VolumeMount,
};

use crate::api::subscription::SubscriptionConfig;

/// Applies `config` to one Deployment: its pod spec, its pod template annotations and the
/// Deployment's own annotations.
pub(crate) fn apply_config(
    config: &SubscriptionConfig,
    pod_spec: &mut PodSpec,
    template_annotations: &mut BTreeMap<String, String>,
    deployment_annotations: &mut BTreeMap<String, String>,
) {
    for container in &mut pod_spec.containers {
        apply_to_container(config, container);
    }
    if let Some(volumes) = &config.volumes {
        merge_volumes(&mut pod_spec.volumes, volumes);
    }
    if let Some(tolerations) = &config.tolerations {
        merge_tolerations(&mut pod_spec.tolerations, tolerations);
    }
    if let Some(node_selector) = &config.node_selector {
        pod_spec.node_selector = Some(node_selector.clone()).filter(|map| !map.is_empty());
    }
    if let Some(affinity) = &config.affinity {
        override_affinity(&mut pod_spec.affinity, affinity);
    }
    if let Some(annotations) = &config.annotations {
        add_missing(deployment_annotations, annotations);
        add_missing(template_annotations, annotations);
    }
}

fn apply_to_container(config: &SubscriptionConfig, container: &mut Container) {
    if let Some(env) = &config.env {
        merge_env(&mut container.env, env);
    }
    if let Some(env_from) = &config.env_from {
        merge_env_from(&mut container.env_from, env_from);
    }
    if let Some(mounts) = &config.volume_mounts {
        merge_volume_mounts(&mut container.volume_mounts, mounts);
    }
    if let Some(resources) = &config.resources {
        container.resources = Some(resources.clone());
    }
}

/// Variables named in `overrides` replace the container's variable of that name in place;
/// the others are appended in the order given.
pub(crate) fn merge_env(env: &mut Option<Vec<EnvVar>>, overrides: &[EnvVar]) {
    replace_or_append(env, overrides, |a, b| a.name == b.name);
}

/// Sources not already listed by the container are appended (equality of the whole source:
/// prefix, ConfigMap and Secret reference, `optional`). As in OLM, only the container's own list
/// is searched, so a source repeated in `overrides` is appended twice.
pub(crate) fn merge_env_from(
    env_from: &mut Option<Vec<EnvFromSource>>,
    overrides: &[EnvFromSource],
) {
    append_missing(env_from, overrides);
}

/// Volumes named in `overrides` replace the pod's volume of that name; the others are appended.
pub(crate) fn merge_volumes(volumes: &mut Option<Vec<Volume>>, overrides: &[Volume]) {
    replace_or_append(volumes, overrides, |a, b| a.name == b.name);
}

/// Mounts replace the container's mount of the same volume *name* (OLM compares names only, not
/// mount paths); the others are appended.
pub(crate) fn merge_volume_mounts(
    mounts: &mut Option<Vec<VolumeMount>>,
    overrides: &[VolumeMount],
) {
    replace_or_append(mounts, overrides, |a, b| a.name == b.name);
}

/// Tolerations not already present (compared as a whole) are appended.
pub(crate) fn merge_tolerations(
    tolerations: &mut Option<Vec<Toleration>>,
    overrides: &[Toleration],
) {
    append_missing(tolerations, overrides);
}

/// OLM's affinity override: an empty `{}` override removes the pod's affinity; otherwise each
/// part the override sets replaces the pod's, and an empty part (`nodeAffinity: {}`) removes it;
/// parts the override leaves unset are kept. An affinity left empty is removed.
pub(crate) fn override_affinity(affinity: &mut Option<Affinity>, overrides: &Affinity) {
    if *overrides == Affinity::default() {
        *affinity = None;
        return;
    }
    let current = affinity.get_or_insert_default();
    override_part(&mut current.node_affinity, &overrides.node_affinity);
    override_part(&mut current.pod_affinity, &overrides.pod_affinity);
    override_part(&mut current.pod_anti_affinity, &overrides.pod_anti_affinity);
    if *current == Affinity::default() {
        *affinity = None;
    }
}

fn override_part<T: Clone + Default + PartialEq>(part: &mut Option<T>, overrides: &Option<T>) {
    if let Some(overrides) = overrides {
        *part = Some(overrides.clone()).filter(|value| *value != T::default());
    }
}

/// Adds the keys of `overrides` that `map` lacks; existing keys keep their value (OLM:
/// "existing annotations will NOT be overwritten").
fn add_missing(map: &mut BTreeMap<String, String>, overrides: &BTreeMap<String, String>) {
    for (key, value) in overrides {
        map.entry(key.clone()).or_insert_with(|| value.clone());
    }
}

/// Each override replaces the first original entry it matches, else is appended. Only the
/// original entries are searched (as OLM does), so overrides never replace each other.
fn replace_or_append<T: Clone>(
    list: &mut Option<Vec<T>>,
    overrides: &[T],
    same: fn(&T, &T) -> bool,
) {
    if overrides.is_empty() {
        return;
    }
    let list = list.get_or_insert_default();
    let original = list.len();
    for item in overrides {
        match list[..original]
            .iter_mut()
            .find(|existing| same(existing, item))
        {
            Some(existing) => *existing = item.clone(),
            None => list.push(item.clone()),
        }
    }
}

/// Appends each override not equal to one of the original entries.
fn append_missing<T: Clone + PartialEq>(list: &mut Option<Vec<T>>, overrides: &[T]) {
    if overrides.is_empty() {
        return;
    }
    let list = list.get_or_insert_default();
    let original = list.len();
    for item in overrides {
        if !list[..original].contains(item) {
            list.push(item.clone());
        }
    }
}
