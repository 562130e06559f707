//! One Secret copy: what it should look like ([`desired_copy`]) and which write, if any, turns the
//! Secret found in the cluster into it ([`plan_copy`]).
//!
//! Fields opcat owns on a copy, and the only ones the drift check compares: `type`, `data`, the
//! labels and annotations in [`names`](super::names), and the ownerReferences that point at
//! ClusterServiceVersions. Everything else (server-set metadata, other writers' labels,
//! annotations and ownerReferences, `immutable`) is ignored by the comparison and preserved by
//! updates, so a converged copy plans [`CopyAction::InSync`] (DESIGN invariant 5).
//!
//! Copies are never marked `immutable`, even when the source is: rotating an immutable source
//! (the admin deletes and recreates it with new data) then still updates the copy in place,
//! without a window in which the copy is missing (invariant 4). Only a copy someone else made
//! immutable, or a source whose `type` changed (`type` is immutable in the API), needs
//! [`CopyAction::Recreate`], and only ever for a Secret that carries our labels.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::names::{
    CATALOG_NAME_LABEL, MANAGED_LABEL, MANAGED_VALUE, REGISTRIES_ANNOTATION, SOURCE_NAME_LABEL,
    SOURCE_NAMESPACE_LABEL, SOURCE_UID_ANNOTATION,
};
use super::owners::{CatalogRef, CsvOwner, is_csv_owner};
use super::scoping::{CopyScope, Scoped, scope_source};
use crate::api::operator::is_component_label;
use crate::registry::credentials::ConfigError;

/// `type` of a Secret in `~/.docker/config.json` format (`{"auths": {...}}`).
pub const DOCKER_CONFIG_JSON_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// Data key a [`DOCKER_CONFIG_JSON_TYPE`] Secret must have.
pub const DOCKER_CONFIG_JSON_KEY: &str = ".dockerconfigjson";
/// `type` of a Secret in the legacy `~/.dockercfg` format.
pub const DOCKERCFG_TYPE: &str = "kubernetes.io/dockercfg";
/// Data key a [`DOCKERCFG_TYPE`] Secret must have.
pub const DOCKERCFG_KEY: &str = ".dockercfg";
/// Why a source Secret cannot be copied. Messages name the Secret, never its data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CopyError {
    /// The source is not of a pull-secret type.
    #[error(
        "secret {namespace}/{name} has type {found:?}; pull secrets must be of type \
         {DOCKER_CONFIG_JSON_TYPE} or {DOCKERCFG_TYPE}"
    )]
    NotAPullSecret {
        namespace: String,
        name: String,
        found: String,
    },
    /// The source has a pull-secret type but lacks the key that type requires.
    #[error("secret {namespace}/{name} of type {type_} has no {key:?} key")]
    MissingKey {
        namespace: String,
        name: String,
        type_: String,
        key: &'static str,
    },
    /// The source's document cannot be read the way the kubelet reads it, so the entries a
    /// copy needs cannot be chosen. The message names the registry key and field, never data.
    #[error("secret {namespace}/{name}: {error}")]
    Unreadable {
        namespace: String,
        name: String,
        error: ConfigError,
    },
}

impl CopyError {
    /// Bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotAPullSecret { .. } => "NotAPullSecret",
            Self::MissingKey { .. } => "MissingKey",
            Self::Unreadable { .. } => "Unreadable",
        }
    }
}

/// Checks that `source` is a pull secret: type `kubernetes.io/dockerconfigjson` or
/// `kubernetes.io/dockercfg` with its key present. Returns the type.
pub fn validate_source(source: &Secret) -> Result<&str, CopyError> {
    let namespace = || source.metadata.namespace.clone().unwrap_or_default();
    let name = || source.metadata.name.clone().unwrap_or_default();
    let type_ = source.type_.as_deref().unwrap_or("Opaque");
    let key = match type_ {
        DOCKER_CONFIG_JSON_TYPE => DOCKER_CONFIG_JSON_KEY,
        DOCKERCFG_TYPE => DOCKERCFG_KEY,
        other => {
            return Err(CopyError::NotAPullSecret {
                namespace: namespace(),
                name: name(),
                found: other.to_owned(),
            });
        }
    };
    if !source
        .data
        .as_ref()
        .is_some_and(|data| data.contains_key(key))
    {
        return Err(CopyError::MissingKey {
            namespace: namespace(),
            name: name(),
            type_: type_.to_owned(),
            key,
        });
    }
    Ok(type_)
}

/// The copy of `source` (Secret `secret_name` of `catalog`) in `target_namespace`, owned by
/// `owners`: same type, the data `scope` keeps ([`scope_source`]), our labels, the source-UID
/// and registries annotations, ownerReferences sorted. `None` when scoping keeps no entry: no
/// copy is made.
pub fn desired_copy(
    source: &Secret,
    catalog: &CatalogRef,
    secret_name: &str,
    target_namespace: &str,
    owners: &[CsvOwner],
    scope: &CopyScope,
) -> Result<Option<Secret>, CopyError> {
    let scoped = scope_source(source, scope)?;
    if scoped.is_empty() && matches!(scope, CopyScope::Images(_)) {
        return Ok(None);
    }
    Ok(Some(scoped_copy(
        source,
        catalog,
        secret_name,
        target_namespace,
        owners,
        scoped,
    )))
}

/// The copy of `source` holding `scoped` (from [`scope_source`], which checked the source).
pub fn scoped_copy(
    source: &Secret,
    catalog: &CatalogRef,
    secret_name: &str,
    target_namespace: &str,
    owners: &[CsvOwner],
    scoped: Scoped,
) -> Secret {
    let registries = (!scoped.registries.is_empty()).then(|| scoped.registries_annotation());
    build_copy(
        catalog,
        secret_name,
        target_namespace,
        owners,
        source.type_.as_deref().unwrap_or("Opaque"),
        scoped.data,
        Recorded {
            source_uid: source.metadata.uid.as_deref(),
            registries: registries.as_deref(),
        },
    )
}

/// The annotations a copy records about its source.
struct Recorded<'a> {
    source_uid: Option<&'a str>,
    registries: Option<&'a str>,
}

/// The copy as it should be when its source is missing or unusable: data, type and recorded
/// source UID kept from `existing` (the admin decides when it goes), labels and owners current.
pub fn kept_copy(
    existing: &Secret,
    catalog: &CatalogRef,
    secret_name: &str,
    owners: &[CsvOwner],
) -> Secret {
    let recorded = |key| {
        existing
            .metadata
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(key))
            .map(String::as_str)
    };
    build_copy(
        catalog,
        secret_name,
        existing.metadata.namespace.as_deref().unwrap_or_default(),
        owners,
        existing.type_.as_deref().unwrap_or("Opaque"),
        existing.data.clone().unwrap_or_default(),
        Recorded {
            source_uid: recorded(SOURCE_UID_ANNOTATION),
            registries: recorded(REGISTRIES_ANNOTATION),
        },
    )
}

fn build_copy(
    catalog: &CatalogRef,
    secret_name: &str,
    target_namespace: &str,
    owners: &[CsvOwner],
    type_: &str,
    data: BTreeMap<String, ByteString>,
    recorded: Recorded<'_>,
) -> Secret {
    let mut owners = owners.to_vec();
    owners.sort();
    owners.dedup();
    let annotations: BTreeMap<String, String> = [
        (SOURCE_UID_ANNOTATION, recorded.source_uid),
        (REGISTRIES_ANNOTATION, recorded.registries),
    ]
    .into_iter()
    .filter_map(|(key, value)| Some((key.to_owned(), value?.to_owned())))
    .collect();
    let annotations = (!annotations.is_empty()).then_some(annotations);
    Secret {
        metadata: ObjectMeta {
            name: Some(catalog.copy_name(secret_name)),
            namespace: Some(target_namespace.to_owned()),
            labels: Some(catalog.copy_labels(secret_name)),
            annotations,
            owner_references: Some(owners.iter().map(CsvOwner::owner_reference).collect()),
            ..ObjectMeta::default()
        },
        type_: Some(type_.to_owned()),
        data: Some(data),
        immutable: None,
        string_data: None,
    }
}

/// `copy` labelled with the component label of each install in `components` (OLM's
/// `operators.coreos.com/<package>.<namespace>`, value `""`): a copy two installs use is a
/// component of both. A copy planned with components replaces the ones it carries
/// ([`plan_copy`]); one planned without (the rotation fast path, which knows owners only by
/// their references) keeps them.
pub fn with_components(mut copy: Secret, components: &BTreeSet<&str>) -> Secret {
    if !components.is_empty() {
        let labels = copy.metadata.labels.get_or_insert_default();
        labels.extend(
            components
                .iter()
                .map(|key| ((*key).to_owned(), String::new())),
        );
    }
    copy
}

/// The component labels of `secret` (empty when none).
fn component_keys(secret: &Secret) -> BTreeSet<&str> {
    secret
        .metadata
        .labels
        .iter()
        .flatten()
        .map(|(key, _)| key.as_str())
        .filter(|key| is_component_label(key))
        .collect()
}

/// Whether `existing` carries a component label that `desired`, planned with components, drops.
fn drops_components(existing: &Secret, desired: &Secret) -> bool {
    let wanted = component_keys(desired);
    !wanted.is_empty() && !component_keys(existing).is_subset(&wanted)
}

/// Why a Secret with a copy's name must not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConflictReason {
    /// It lacks `opcat.dev/managed=true`: someone else's Secret.
    NotManaged,
    /// It is managed by opcat but its labels name another source (`namespace/name` label values).
    OtherSource { source: String, catalog: String },
}

/// A Secret that occupies a copy's name and is not ours to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyConflict {
    /// Namespace of the Secret.
    pub namespace: String,
    /// Name of the Secret (the copy's name).
    pub name: String,
    /// Why it is not ours.
    pub reason: ConflictReason,
}

impl fmt::Display for CopyConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            ConflictReason::NotManaged => write!(
                f,
                "secret {}/{} exists without label {MANAGED_LABEL}={MANAGED_VALUE}; opcat \
                 will not overwrite it (rename or remove it, or remove the catalog secret)",
                self.namespace, self.name
            ),
            ConflictReason::OtherSource { source, catalog } => write!(
                f,
                "secret {}/{} is opcat's copy of {source} from catalog {catalog}, not of this \
                 source",
                self.namespace, self.name
            ),
        }
    }
}

/// Which owned fields an update changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyChanges {
    /// `data` differs: a rotation.
    pub data: bool,
    /// Our labels or annotations were missing or edited (or the source was recreated).
    pub metadata: bool,
    /// The set of owning CSVs changed.
    pub owners: bool,
}

/// The write that brings a copy to its desired state. `Debug` never shows Secret data.
#[derive(Clone, PartialEq)]
pub enum CopyAction {
    /// No Secret of that name exists: create it.
    Create(Secret),
    /// Our copy differs in owned fields that can change in place. The Secret is the existing
    /// object (same name, uid and `resourceVersion`, for an optimistic-concurrency replace) with
    /// owned fields set and everything else kept.
    Update {
        secret: Secret,
        changes: CopyChanges,
    },
    /// Our copy cannot reach the desired state in place (`type` changed, or the copy is
    /// immutable and `data` changed): delete it with a precondition on `uid` and
    /// `resourceVersion`, then create `secret`.
    Recreate {
        uid: Option<String>,
        resource_version: Option<String>,
        secret: Secret,
    },
    /// A Secret of that name is not ours: never create, update, adopt or delete it.
    Conflict(CopyConflict),
    /// Owned fields already match: no write.
    InSync,
}

impl fmt::Debug for CopyAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Create(secret) => f.debug_tuple("Create").field(&Redacted(secret)).finish(),
            Self::Update { secret, changes } => f
                .debug_struct("Update")
                .field("secret", &Redacted(secret))
                .field("changes", changes)
                .finish(),
            Self::Recreate {
                uid,
                resource_version,
                secret,
            } => f
                .debug_struct("Recreate")
                .field("uid", uid)
                .field("resource_version", resource_version)
                .field("secret", &Redacted(secret))
                .finish(),
            Self::Conflict(conflict) => f.debug_tuple("Conflict").field(conflict).finish(),
            Self::InSync => f.write_str("InSync"),
        }
    }
}

/// Shows a Secret's identity and data keys, never its values.
pub struct Redacted<'a>(pub &'a Secret);

impl fmt::Debug for Redacted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&String> = self.0.data.iter().flat_map(BTreeMap::keys).collect();
        f.debug_struct("Secret")
            .field("namespace", &self.0.metadata.namespace)
            .field("name", &self.0.metadata.name)
            .field("type", &self.0.type_)
            .field("data_keys", &keys)
            .finish_non_exhaustive()
    }
}

/// Decides the write that turns `existing` (the Secret with the copy's name, if any) into
/// `desired` (from [`desired_copy`] or [`kept_copy`]).
pub fn plan_copy(existing: Option<&Secret>, desired: &Secret) -> CopyAction {
    let Some(existing) = existing else {
        return CopyAction::Create(desired.clone());
    };
    if let Some(conflict) = ownership_conflict(existing, desired) {
        return CopyAction::Conflict(conflict);
    }
    if existing.type_ != desired.type_ {
        return recreate(existing, desired);
    }
    let changes = CopyChanges {
        data: existing.data.clone().unwrap_or_default() != desired.data.clone().unwrap_or_default(),
        metadata: !contains_all(&existing.metadata.labels, &desired.metadata.labels)
            || drops_components(existing, desired)
            || !contains_all(
                &existing.metadata.annotations,
                &desired.metadata.annotations,
            ),
        owners: csv_owners(existing) != csv_owners(desired),
    };
    if changes.data && existing.immutable == Some(true) {
        return recreate(existing, desired);
    }
    if changes == CopyChanges::default() {
        return CopyAction::InSync;
    }
    CopyAction::Update {
        secret: updated(existing, desired),
        changes,
    }
}

/// Whether `existing`, found under `desired`'s name, is opcat's copy of the same source: the
/// ownership test [`plan_copy`] applies before it writes a copy (DESIGN invariant 3).
pub fn is_ours_to_write(existing: &Secret, desired: &Secret) -> bool {
    ownership_conflict(existing, desired).is_none()
}

/// `None` if `existing` is ours to write for `desired`'s source.
fn ownership_conflict(existing: &Secret, desired: &Secret) -> Option<CopyConflict> {
    let conflict = |reason| CopyConflict {
        namespace: existing.metadata.namespace.clone().unwrap_or_default(),
        name: existing.metadata.name.clone().unwrap_or_default(),
        reason,
    };
    let label = |secret: &Secret, key: &str| {
        let labels = secret.metadata.labels.as_ref();
        labels.and_then(|labels| labels.get(key)).cloned()
    };
    if label(existing, MANAGED_LABEL).as_deref() != Some(MANAGED_VALUE) {
        return Some(conflict(ConflictReason::NotManaged));
    }
    // A managed copy whose identity labels were removed is ours, damaged: it is restored. One
    // whose labels name another source is another copy's (a hash clash or a hand edit).
    let identity = [
        SOURCE_NAMESPACE_LABEL,
        SOURCE_NAME_LABEL,
        CATALOG_NAME_LABEL,
    ];
    let differs = identity.iter().any(|key| {
        let found = label(existing, key);
        found.is_some() && found != label(desired, key)
    });
    differs.then(|| {
        let value = |key| label(existing, key).unwrap_or_default();
        conflict(ConflictReason::OtherSource {
            source: format!(
                "{}/{}",
                value(SOURCE_NAMESPACE_LABEL),
                value(SOURCE_NAME_LABEL)
            ),
            catalog: format!(
                "{}/{}",
                value(SOURCE_NAMESPACE_LABEL),
                value(CATALOG_NAME_LABEL)
            ),
        })
    })
}

fn recreate(existing: &Secret, desired: &Secret) -> CopyAction {
    CopyAction::Recreate {
        uid: existing.metadata.uid.clone(),
        resource_version: existing.metadata.resource_version.clone(),
        secret: desired.clone(),
    }
}

fn contains_all(
    found: &Option<BTreeMap<String, String>>,
    wanted: &Option<BTreeMap<String, String>>,
) -> bool {
    wanted
        .iter()
        .flatten()
        .all(|(key, value)| found.as_ref().and_then(|found| found.get(key)) == Some(value))
}

fn csv_owners(secret: &Secret) -> Vec<OwnerReference> {
    let mut owners: Vec<OwnerReference> = secret
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter(|owner| is_csv_owner(owner))
        .cloned()
        .collect();
    owners.sort_by(|a, b| (&a.name, &a.uid).cmp(&(&b.name, &b.uid)));
    owners
}

/// `existing` with owned fields taken from `desired`; foreign labels, annotations and owners
/// kept; managed fields dropped so the server keeps its own record.
fn updated(existing: &Secret, desired: &Secret) -> Secret {
    let mut secret = existing.clone();
    secret.data = desired.data.clone();
    secret.string_data = None;
    if drops_components(existing, desired)
        && let Some(labels) = secret.metadata.labels.as_mut()
    {
        let wanted = component_keys(desired);
        labels.retain(|key, _| !is_component_label(key) || wanted.contains(key.as_str()));
    }
    let meta = &mut secret.metadata;
    meta.managed_fields = None;
    for (target, wanted) in [
        (&mut meta.labels, &desired.metadata.labels),
        (&mut meta.annotations, &desired.metadata.annotations),
    ] {
        if let Some(wanted) = wanted {
            target.get_or_insert_default().extend(wanted.clone());
        }
    }
    let mut owners: Vec<OwnerReference> = meta
        .owner_references
        .take()
        .into_iter()
        .flatten()
        .filter(|owner| !is_csv_owner(owner))
        .collect();
    owners.extend(csv_owners(desired));
    meta.owner_references = Some(owners);
    secret
}
