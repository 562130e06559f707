//! What the shared Namespace watch keeps of a Namespace: its metadata, with the maps held as
//! [`CompactMeta`] (label strings shared between objects). Readers read its labels (the
//! pull-secret opt-out label, OperatorGroup selectors) and whether it is being deleted.
//!
//! Why: every namespace carries at least the `kubernetes.io/metadata.name` label, and as an
//! [`ObjectMeta`] one label costs a `BTreeMap` leaf of eleven slots (about 540 bytes) and two
//! `String`s; opcat watches every namespace of the cluster (scripts/bench-scale.sh: 10,000).
//!
//! It is the same API resource as a Namespace, requested metadata-only like
//! `Api<PartialObjectMeta<Namespace>>` ([`kube::Resource::metadata_api`]): the server sends
//! `PartialObjectMetadata`, deserialised as such and converted.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::LazyLock;

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::PartialObjectMeta;
use serde::Deserialize;

use super::compact_meta::CompactMeta;
use crate::interner::Strings;

/// Label strings of stored Namespaces, shared.
static STRINGS: LazyLock<Strings> = LazyLock::new(Strings::new);

/// A Namespace as the shared watch stores it.
#[derive(Clone, Debug, Deserialize)]
#[serde(from = "PartialObjectMeta<Namespace>")]
pub struct StoredNamespace {
    /// Name, `uid` and `resourceVersion` only (the store's key and what kube's reflector
    /// reads); the rest of the metadata is in `meta`.
    metadata: ObjectMeta,
    meta: CompactMeta,
}

impl From<PartialObjectMeta<Namespace>> for StoredNamespace {
    fn from(partial: PartialObjectMeta<Namespace>) -> Self {
        let mut full = partial.metadata;
        // No reader reads a namespace's annotations (`kubectl apply` keeps a copy of the whole
        // object in one).
        full.annotations = None;
        let (metadata, meta) = CompactMeta::split(full, &STRINGS);
        Self { metadata, meta }
    }
}

impl StoredNamespace {
    /// The namespace's name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    /// Its labels, as a map (`None` when it has none).
    pub fn labels(&self) -> Option<BTreeMap<String, String>> {
        self.meta.labels()
    }

    /// Whether the namespace is being deleted.
    pub fn is_terminating(&self) -> bool {
        self.meta.deletion_timestamp().is_some()
    }
}

impl kube::Resource for StoredNamespace {
    type DynamicType = ();
    type Scope = ClusterResourceScope;

    /// Metadata-only requests, as for `PartialObjectMeta<Namespace>`.
    fn metadata_api() -> bool {
        true
    }

    fn kind(_: &()) -> Cow<'_, str> {
        <Namespace as k8s_openapi::Resource>::KIND.into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        <Namespace as k8s_openapi::Resource>::GROUP.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        <Namespace as k8s_openapi::Resource>::VERSION.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        <Namespace as k8s_openapi::Resource>::URL_PATH_SEGMENT.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, Time};
    use kube::Resource;

    use super::*;
    use crate::controller::compact_meta::string_map;

    fn partial_json(terminating: bool) -> serde_json::Value {
        let mut json = serde_json::json!({
            "apiVersion": "meta.k8s.io/v1",
            "kind": "PartialObjectMetadata",
            "metadata": {
                "name": "tenant-1",
                "uid": "ns-uid",
                "resourceVersion": "12",
                "labels": {"kubernetes.io/metadata.name": "tenant-1", "opcat.dev/pull-secrets": "disabled"},
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"},
                "managedFields": [{"manager": "kubectl"}],
            },
        });
        if terminating {
            json["metadata"]["deletionTimestamp"] = "2026-11-26T00:00:00Z".into();
        }
        json
    }

    #[test]
    fn readers_get_the_labels_and_the_deletion_back() {
        let stored: StoredNamespace = serde_json::from_value(partial_json(false)).unwrap();
        assert_eq!(stored.name(), "tenant-1");
        assert_eq!(
            stored.labels(),
            string_map(&[
                ("kubernetes.io/metadata.name", "tenant-1"),
                ("opcat.dev/pull-secrets", "disabled"),
            ])
        );
        assert_eq!(
            stored
                .labels()
                .unwrap()
                .get("opcat.dev/pull-secrets")
                .map(String::as_str),
            Some("disabled")
        );
        assert!(!stored.is_terminating());
        let terminating: StoredNamespace = serde_json::from_value(partial_json(true)).unwrap();
        assert!(terminating.is_terminating());
    }

    #[test]
    fn the_key_is_what_the_reflector_reads_and_nothing_else() {
        let stored: StoredNamespace = serde_json::from_value(partial_json(false)).unwrap();
        assert_eq!(
            stored.meta(),
            &ObjectMeta {
                name: Some("tenant-1".into()),
                uid: Some("ns-uid".into()),
                resource_version: Some("12".into()),
                ..ObjectMeta::default()
            }
        );
        let full = stored.meta.joined(&stored.metadata);
        assert_eq!(full.managed_fields, None::<Vec<ManagedFieldsEntry>>);
        assert_eq!(full.creation_timestamp, None::<Time>);
        assert_eq!(
            full.annotations, None,
            "no reader reads a namespace's annotations"
        );
    }

    #[test]
    fn requests_are_the_metadata_only_ones_for_namespaces() {
        type Partial = PartialObjectMeta<Namespace>;
        assert!(StoredNamespace::metadata_api());
        assert_eq!(StoredNamespace::url_path(&(), None), "/api/v1/namespaces");
        assert_eq!(
            StoredNamespace::url_path(&(), None),
            Partial::url_path(&(), None)
        );
        assert_eq!(StoredNamespace::kind(&()), Partial::kind(&()));
        assert_eq!(StoredNamespace::api_version(&()), Partial::api_version(&()));
    }
}
