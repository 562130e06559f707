//! Appending opcat's copies to a ServiceAccount's `imagePullSecrets`, and removing exactly them.
//!
//! `ServiceAccount.imagePullSecrets` is `listType=atomic`: whoever writes it writes the whole
//! list, so opcat reads it, edits it, and writes it back under a precondition
//! ([`ServiceAccountEdit::json_patch`], or a replace carrying the `resourceVersion`), retrying on
//! conflict. The rules (DESIGN invariant 1):
//!
//! - Entries opcat did not add (users', OpenShift's `<sa>-dockercfg-*`, empty names, even other
//!   writers' duplicates) stay where they are, untouched.
//! - A name already in the list is never added again; empty names are never added. New names are
//!   appended after the existing entries, sorted.
//! - What opcat appended is recorded in [`ADDED_PULL_SECRETS_ANNOTATION`] (a sorted JSON list).
//!   The annotation, not the name, decides what opcat may remove: a name a user listed before
//!   opcat wanted it is the user's and stays on detach. A recorded name that is no longer in the
//!   list was removed by someone else and is no longer ours; it drops out of the record.
//! - An annotation opcat cannot parse proves nothing: nothing is removed on its account, and it
//!   is rewritten (or removed) on the next edit.
//!
//! # When another writer removes our entry
//!
//! A copy that someone deletes is restored (issue 6), and pods need the entry, so a removed entry
//! is restored too. But some writers remove it again on every sync (a GitOps tool that owns the
//! SA manifest, OLM v0's SA update); restoring each time would be an endless fight. The rule:
//! restore at most [`RestorePolicy::max_restores`] times per [`RestorePolicy::window`] per
//! ServiceAccount; past that, leave the other writer's list alone (the names become *withheld*),
//! report it, and try again once the window has passed. The count, window start and withheld
//! names live in [`PULL_SECRET_RESTORES_ANNOTATION`], so the rule survives restarts and is
//! visible to `kubectl`. The Deployments of the bundle keep pulling either way: their pod
//! templates carry the copies too.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{LocalObjectReference, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::names::{
    ADDED_PULL_SECRETS_ANNOTATION, PULL_SECRET_RESTORES_ANNOTATION, PULL_SECRETS_LABEL,
    PULL_SECRETS_LABEL_VALUE,
};

/// How often opcat restores entries another writer removed before it stops fighting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestorePolicy {
    /// Restores allowed per window per ServiceAccount.
    pub max_restores: u32,
    /// Length of the window, counted from the first restore in it.
    pub window: std::time::Duration,
}

impl Default for RestorePolicy {
    fn default() -> Self {
        Self {
            max_restores: 3,
            window: std::time::Duration::from_secs(60 * 60),
        }
    }
}

/// The restore bookkeeping stored in [`PULL_SECRET_RESTORES_ANNOTATION`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RestoreState {
    count: u32,
    since: Time,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    withheld: BTreeSet<String>,
}

/// A change to one ServiceAccount, computed from the object as read. `None` from [`attach`],
/// [`detach`] or [`reconcile`] means no write.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceAccountEdit {
    /// Namespace of the ServiceAccount.
    pub namespace: Option<String>,
    /// Name of the ServiceAccount.
    pub name: String,
    /// `resourceVersion` the edit was computed from: the write's precondition.
    pub resource_version: Option<String>,
    /// The list as read (`None`: absent or null).
    pub original: Option<Vec<LocalObjectReference>>,
    /// The list to write (`None`: remove the field).
    pub image_pull_secrets: Option<Vec<LocalObjectReference>>,
    /// Names appended for the first time.
    pub added: Vec<String>,
    /// Names appended again after another writer removed them.
    pub restored: Vec<String>,
    /// Names another writer removed that opcat stops restoring for now (see module docs).
    pub withheld: Vec<String>,
    /// Names opcat removed (it had recorded them).
    pub removed: Vec<String>,
    annotations_present: bool,
    annotations: Vec<AnnotationChange>,
    labels_present: bool,
    /// [`PULL_SECRETS_LABEL`] is the only label.
    only_label: bool,
    /// [`PULL_SECRETS_LABEL`], when it must be added or removed.
    label: Option<AnnotationChange>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct AnnotationChange {
    key: &'static str,
    existed: bool,
    value: Option<String>,
}

impl ServiceAccountEdit {
    /// Applies the edit to `sa` (the object as read, for a replace that keeps its
    /// `resourceVersion`, or a ServiceAccount about to be created).
    pub fn apply_to(&self, sa: &mut ServiceAccount) {
        sa.image_pull_secrets.clone_from(&self.image_pull_secrets);
        let annotations = sa.metadata.annotations.get_or_insert_default();
        for change in &self.annotations {
            match &change.value {
                Some(value) => annotations.insert(change.key.to_owned(), value.clone()),
                None => annotations.remove(change.key),
            };
        }
        if annotations.is_empty() {
            sa.metadata.annotations = None;
        }
        if let Some(change) = &self.label {
            let labels = sa.metadata.labels.get_or_insert_default();
            match &change.value {
                Some(value) => labels.insert(change.key.to_owned(), value.clone()),
                None => labels.remove(change.key),
            };
            if labels.is_empty() {
                sa.metadata.labels = None;
            }
        }
    }

    /// The edit as a JSON Patch (RFC 6902). It starts with `test` ops on
    /// `/metadata/resourceVersion` (when known) and on the list as read, so it fails with a
    /// conflict instead of overwriting a concurrent change; re-read and recompute then. An
    /// absent list is created with `add /imagePullSecrets [...]`, because `add
    /// /imagePullSecrets/-` fails on a missing list (kubernetes#70281).
    pub fn json_patch(&self) -> Value {
        let mut ops = Vec::new();
        if let Some(resource_version) = &self.resource_version {
            ops.push(json!({"op": "test", "path": "/metadata/resourceVersion", "value": resource_version}));
        }
        let path = "/imagePullSecrets";
        match (&self.original, &self.image_pull_secrets) {
            (None, Some(new)) => {
                ops.push(json!({"op": "add", "path": path, "value": list_json(new)}));
            }
            (Some(original), None) => {
                ops.push(json!({"op": "test", "path": path, "value": list_json(original)}));
                ops.push(json!({"op": "remove", "path": path}));
            }
            (Some(original), Some(new)) if original != new => {
                ops.push(json!({"op": "test", "path": path, "value": list_json(original)}));
                ops.push(json!({"op": "replace", "path": path, "value": list_json(new)}));
            }
            _ => {}
        }
        if self.annotations_present {
            for change in &self.annotations {
                let path = format!("/metadata/annotations/{}", escape_pointer(change.key));
                match (&change.value, change.existed) {
                    (Some(value), _) => {
                        ops.push(json!({"op": "add", "path": path, "value": value}))
                    }
                    (None, true) => ops.push(json!({"op": "remove", "path": path})),
                    (None, false) => {}
                }
            }
        } else {
            let added: BTreeMap<&str, &String> = self
                .annotations
                .iter()
                .filter_map(|change| Some((change.key, change.value.as_ref()?)))
                .collect();
            if !added.is_empty() {
                ops.push(json!({"op": "add", "path": "/metadata/annotations", "value": added}));
            }
        }
        if let Some(change) = &self.label {
            let path = format!("/metadata/labels/{}", escape_pointer(change.key));
            match (&change.value, self.labels_present) {
                (Some(value), true) => ops.push(json!({"op": "add", "path": path, "value": value})),
                (Some(value), false) => ops.push(
                    json!({"op": "add", "path": "/metadata/labels", "value": {change.key: value}}),
                ),
                // The last label goes with its map, as the server would serve it.
                (None, _) if self.only_label => {
                    ops.push(json!({"op": "remove", "path": "/metadata/labels"}))
                }
                (None, _) => ops.push(json!({"op": "remove", "path": path})),
            }
        }
        Value::Array(ops)
    }
}

/// Appends `names` that are missing (see module docs). `now` dates the restore window.
pub fn attach(
    sa: &ServiceAccount,
    names: &[String],
    now: Timestamp,
    policy: &RestorePolicy,
) -> Option<ServiceAccountEdit> {
    reconcile(sa, names, &[], now, policy)
}

/// Removes the `names` opcat recorded; foreign entries stay even when they have the same name.
pub fn detach(sa: &ServiceAccount, names: &[String]) -> Option<ServiceAccountEdit> {
    // Nothing is restored on a detach, so the restore window does not matter: no clock.
    edit(sa, &[], names, None)
}

/// Attach `attach` and detach `detach` in one edit (a name in both is detached).
pub fn reconcile(
    sa: &ServiceAccount,
    attach: &[String],
    detach: &[String],
    now: Timestamp,
    policy: &RestorePolicy,
) -> Option<ServiceAccountEdit> {
    edit(sa, attach, detach, Some((now, policy)))
}

/// The edit; `clock` is `None` when nothing can be restored (a pure detach): the restore
/// bookkeeping is then carried over as it is.
fn edit(
    sa: &ServiceAccount,
    attach: &[String],
    detach: &[String],
    clock: Option<(Timestamp, &RestorePolicy)>,
) -> Option<ServiceAccountEdit> {
    // The annotation stores whole seconds; so does the window start, or it would never compare
    // equal to itself after a round trip.
    let now = clock.map(|(now, _)| Timestamp::from_second(now.as_second()).unwrap_or(now));
    let max_restores = clock.map_or(0, |(_, policy)| policy.max_restores);
    let present: BTreeSet<&str> = sa
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|entry| entry.name.as_str())
        .collect();
    let annotation = |key: &str| {
        let annotations = sa.metadata.annotations.as_ref();
        annotations.and_then(|annotations| annotations.get(key))
    };
    let raw_recorded = annotation(ADDED_PULL_SECRETS_ANNOTATION);
    let raw_state = annotation(PULL_SECRET_RESTORES_ANNOTATION);
    let previously_recorded = recorded_names(raw_recorded);
    let state = raw_state
        .and_then(|raw| serde_json::from_str::<RestoreState>(raw).ok())
        .filter(|state| clock.is_none_or(|(now, policy)| !window_ended(state, now, policy)));

    let detach: BTreeSet<&str> = non_empty(detach).collect();
    let attach: BTreeSet<&str> = non_empty(attach).filter(|n| !detach.contains(n)).collect();
    let mut recorded: BTreeSet<&str> = previously_recorded
        .iter()
        .map(String::as_str)
        .filter(|name| present.contains(name))
        .collect();
    let lost: BTreeSet<&str> = previously_recorded
        .iter()
        .map(String::as_str)
        .filter(|name| !present.contains(name))
        .collect();

    let removed: Vec<&str> = detach.intersection(&recorded).copied().collect();
    let mut new_list = sa.image_pull_secrets.clone().unwrap_or_default();
    for name in &removed {
        if let Some(index) = new_list.iter().position(|entry| entry.name == *name) {
            new_list.remove(index);
        }
        recorded.remove(name);
    }

    let (mut count, since) = state.as_ref().map_or((0, now.map(Time)), |state| {
        (state.count, Some(state.since.clone()))
    });
    let mut withheld: BTreeSet<&str> = state
        .iter()
        .flat_map(|state| &state.withheld)
        .map(String::as_str)
        .filter(|name| !detach.contains(name) && !present.contains(name))
        .collect();
    let wanted_missing = attach
        .iter()
        .copied()
        .filter(|name| !present.contains(name) && !withheld.contains(name));
    let (to_restore, fresh): (Vec<&str>, Vec<&str>) =
        wanted_missing.partition(|name| lost.contains(name));
    let (restored, newly_withheld) = if to_restore.is_empty() {
        (Vec::new(), Vec::new())
    } else if count < max_restores {
        count += 1;
        (to_restore, Vec::new())
    } else {
        withheld.extend(&to_restore);
        (Vec::new(), to_restore)
    };
    let mut appended: Vec<&str> = fresh.iter().chain(&restored).copied().collect();
    appended.sort_unstable();
    for name in &appended {
        new_list.push(LocalObjectReference {
            name: (*name).to_owned(),
        });
        recorded.insert(name);
    }

    // Kept while it protects something: our recorded entries or withheld names.
    let keep_state = (!recorded.is_empty() && count > 0) || !withheld.is_empty();
    let new_state = since.filter(|_| keep_state).map(|since| RestoreState {
        count,
        since,
        withheld: withheld.iter().map(|name| (*name).to_owned()).collect(),
    });
    let new_list = match (&sa.image_pull_secrets, new_list.is_empty()) {
        (None, true) => None,
        (Some(_), true) if !removed.is_empty() => None,
        _ => Some(new_list),
    };
    let recorded_value = (!recorded.is_empty()).then(|| to_json(&recorded));
    let state_value = new_state.as_ref().map(to_json);

    let list_changed = new_list != sa.image_pull_secrets;
    let recorded_changed = recorded_value.as_ref() != raw_recorded;
    let state_changed = new_state != state;
    let labelled = sa
        .metadata
        .labels
        .as_ref()
        .and_then(|labels| labels.get(PULL_SECRETS_LABEL));
    let want_label = (recorded_value.is_some() || state_value.is_some())
        .then(|| PULL_SECRETS_LABEL_VALUE.to_owned());
    let label = (labelled != want_label.as_ref()).then(|| AnnotationChange {
        key: PULL_SECRETS_LABEL,
        existed: labelled.is_some(),
        value: want_label,
    });
    if !list_changed && !recorded_changed && !state_changed && label.is_none() {
        return None;
    }
    let annotations = [
        (ADDED_PULL_SECRETS_ANNOTATION, raw_recorded, recorded_value),
        (PULL_SECRET_RESTORES_ANNOTATION, raw_state, state_value),
    ]
    .into_iter()
    .filter(|(_, raw, value)| raw.as_ref() != value.as_ref().as_ref())
    .map(|(key, raw, value)| AnnotationChange {
        key,
        existed: raw.is_some(),
        value,
    })
    .collect();
    let owned = |names: &[&str]| names.iter().map(|name| (*name).to_owned()).collect();
    Some(ServiceAccountEdit {
        namespace: sa.metadata.namespace.clone(),
        name: sa.metadata.name.clone().unwrap_or_default(),
        resource_version: sa.metadata.resource_version.clone(),
        original: sa.image_pull_secrets.clone(),
        image_pull_secrets: new_list,
        added: owned(&fresh),
        restored: owned(&restored),
        withheld: owned(&newly_withheld),
        removed: owned(&removed),
        annotations_present: sa.metadata.annotations.is_some(),
        annotations,
        labels_present: sa.metadata.labels.is_some(),
        only_label: sa
            .metadata
            .labels
            .as_ref()
            .is_some_and(|labels| labels.len() == 1 && labels.contains_key(PULL_SECRETS_LABEL)),
        label,
    })
}

/// Names opcat recorded as added on `sa` (empty when the annotation is absent or unreadable).
pub fn recorded(sa: &ServiceAccount) -> BTreeSet<String> {
    let annotations = sa.metadata.annotations.as_ref();
    recorded_names(annotations.and_then(|a| a.get(ADDED_PULL_SECRETS_ANNOTATION)))
}

/// Names opcat currently withholds on `sa` because another writer keeps removing them.
pub fn withheld(sa: &ServiceAccount, now: Timestamp, policy: &RestorePolicy) -> BTreeSet<String> {
    let annotations = sa.metadata.annotations.as_ref();
    annotations
        .and_then(|a| a.get(PULL_SECRET_RESTORES_ANNOTATION))
        .and_then(|raw| serde_json::from_str::<RestoreState>(raw).ok())
        .filter(|state| !window_ended(state, now, policy))
        .map(|state| state.withheld)
        .unwrap_or_default()
}

fn recorded_names(raw: Option<&String>) -> BTreeSet<String> {
    raw.and_then(|raw| serde_json::from_str::<BTreeSet<String>>(raw).ok())
        .unwrap_or_default()
}

fn window_ended(state: &RestoreState, now: Timestamp, policy: &RestorePolicy) -> bool {
    let elapsed = now.as_second().saturating_sub(state.since.0.as_second());
    elapsed < 0 || elapsed.unsigned_abs() >= policy.window.as_secs()
}

fn non_empty(names: &[String]) -> impl Iterator<Item = &str> {
    names
        .iter()
        .map(String::as_str)
        .filter(|name| !name.is_empty())
}

fn to_json<T: Serialize>(value: &T) -> String {
    // Serialising string sets and a struct of plain fields cannot fail; an empty string would
    // only make the next read treat the annotation as unreadable, which is safe.
    serde_json::to_string(value).unwrap_or_default()
}

/// The list as the API server renders it: an entry with an empty name is `{}` (Go `omitempty`),
/// so a `test` op matches foreign empty entries exactly.
fn list_json(list: &[LocalObjectReference]) -> Value {
    let entries = list.iter().map(|entry| {
        if entry.name.is_empty() {
            json!({})
        } else {
            json!({"name": entry.name})
        }
    });
    Value::Array(entries.collect())
}

/// Escapes a JSON Pointer reference token (RFC 6901): `~` as `~0`, `/` as `~1`.
fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}
