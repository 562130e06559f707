//! What the shared watch of opcat's pull-secret copies keeps of a copy: its metadata as
//! [`CompactMeta`] (label and annotation strings shared between copies) and its data shared
//! between every copy that holds the same data. The readers (the pull-secret planner, the
//! rotation fast path and its timing) get a whole [`Secret`] back ([`StoredCopy::to_secret`]).
//!
//! Why: a copy carries five labels, one annotation, one owner reference and one data entry; as
//! a k8s-openapi [`Secret`] that is about 2 kB in memory (three `BTreeMap` leaves of eleven
//! slots, a `String` per key and value) for a few hundred bytes of content, two copies per
//! install (scripts/bench-scale.sh). The copies of one source in 10,000 namespaces hold the same
//! data: here it is kept once.
//!
//! It is the same API resource as a Secret (group, version, kind, plural), so `Api` and the
//! watcher request `secrets` as usual; it is deserialised as a [`Secret`] and converted. `Debug`
//! never shows the data (DESIGN invariant 8).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, LazyLock};

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use super::compact_meta::CompactMeta;
use crate::interner::{Interner, Strings};

/// Label, annotation and type strings of stored copies, shared.
static STRINGS: LazyLock<Strings> = LazyLock::new(Strings::new);

/// The data of stored copies: one map per distinct content.
static DATA: LazyLock<Interner<BTreeMap<String, ByteString>>> = LazyLock::new(Interner::default);

/// A pull-secret copy as the shared watch stores it.
#[derive(Clone, Deserialize)]
#[serde(from = "Secret")]
pub struct StoredCopy {
    /// Name, namespace, `uid` and `resourceVersion` only (the store's key and what kube's
    /// reflector and the echo filter read); the rest of the metadata is in `meta`.
    metadata: ObjectMeta,
    meta: CompactMeta,
    type_: Option<Arc<str>>,
    immutable: Option<bool>,
    /// Shared ([`DATA`]).
    data: Option<Arc<BTreeMap<String, ByteString>>>,
}

impl From<Secret> for StoredCopy {
    fn from(mut secret: Secret) -> Self {
        let (metadata, meta) = CompactMeta::split(std::mem::take(&mut secret.metadata), &STRINGS);
        Self {
            metadata,
            meta,
            type_: secret.type_.map(|type_| STRINGS.get(&type_)),
            immutable: secret.immutable,
            data: secret.data.map(|data| DATA.intern(Arc::new(data))),
        }
    }
}

impl StoredCopy {
    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.meta.label(key).map(|value| &**value)
    }

    /// The copy as read (without its managed fields and creation details, which no reader
    /// uses: see [`CompactMeta`]).
    pub fn to_secret(&self) -> Secret {
        Secret {
            metadata: self.meta.joined(&self.metadata),
            type_: self.type_.as_deref().map(str::to_owned),
            immutable: self.immutable,
            data: self.data.as_deref().cloned(),
            string_data: None,
        }
    }
}

impl fmt::Debug for StoredCopy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys: Vec<&String> = self.data.iter().flat_map(|data| data.keys()).collect();
        f.debug_struct("StoredCopy")
            .field("metadata", &self.metadata)
            .field("meta", &self.meta)
            .field("type", &self.type_)
            .field("data_keys", &keys)
            .finish_non_exhaustive()
    }
}

stored_form_of!(StoredCopy, Secret);

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        ManagedFieldsEntry, OwnerReference, Time,
    };
    use kube::{Resource, ResourceExt};

    use super::*;
    use crate::controller::compact_meta::string_map;

    fn copy(namespace: &str, config: &str) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("examples-registry-creds".into()),
                namespace: Some(namespace.into()),
                uid: Some(format!("{namespace}-uid")),
                resource_version: Some("17".into()),
                labels: string_map(&[
                    ("opcat.dev/managed", "true"),
                    ("opcat.dev/source-name", "registry-creds"),
                ]),
                annotations: string_map(&[("opcat.dev/source-uid", "source-uid")]),
                owner_references: Some(vec![OwnerReference {
                    api_version: "operators.coreos.com/v1alpha1".into(),
                    kind: "ClusterServiceVersion".into(),
                    name: "widget.v1".into(),
                    uid: format!("{namespace}-csv"),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            type_: Some("kubernetes.io/dockerconfigjson".into()),
            data: Some(BTreeMap::from([(
                ".dockerconfigjson".to_owned(),
                ByteString(config.as_bytes().to_vec()),
            )])),
            immutable: Some(false),
            string_data: None,
        }
    }

    fn stored(secret: Secret) -> StoredCopy {
        serde_json::from_value(serde_json::to_value(secret).unwrap()).unwrap()
    }

    #[test]
    fn readers_get_the_copy_back_as_listed() {
        let copy_of = stored(copy("team-a", "{\"auths\":{}}"));
        assert_eq!(copy_of.to_secret(), copy("team-a", "{\"auths\":{}}"));
        assert_eq!(
            copy_of.to_secret().metadata.labels.unwrap()["opcat.dev/source-name"],
            "registry-creds"
        );
        // kube's reflector keys the store by these; the echo filter reads uid and version.
        assert_eq!(copy_of.name_any(), "examples-registry-creds");
        assert_eq!(copy_of.namespace().as_deref(), Some("team-a"));
        assert_eq!(copy_of.resource_version().as_deref(), Some("17"));
        assert_eq!(copy_of.uid().as_deref(), Some("team-a-uid"));
        assert_eq!(StoredCopy::plural(&()), "secrets");
    }

    #[test]
    fn managed_fields_and_creation_details_are_not_stored() {
        let mut listed = copy("team-a", "{}");
        listed.metadata.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        listed.metadata.creation_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        assert_eq!(StoredCopy::from(listed).to_secret(), copy("team-a", "{}"));
    }

    #[test]
    fn copies_with_the_same_data_share_it() {
        let one = StoredCopy::from(copy("team-a", "{\"v\":1}"));
        let two = StoredCopy::from(copy("team-b", "{\"v\":1}"));
        let other = StoredCopy::from(copy("team-c", "{\"v\":2}"));
        let data = |copy: &StoredCopy| copy.data.clone().unwrap();
        assert!(Arc::ptr_eq(&data(&one), &data(&two)));
        assert!(!Arc::ptr_eq(&data(&one), &data(&other)));
        assert_eq!(other.to_secret().data, copy("team-c", "{\"v\":2}").data);
    }

    #[test]
    fn debug_never_shows_the_data() {
        let shown = format!("{:?}", StoredCopy::from(copy("team-a", "s3cret-token")));
        assert!(shown.contains(".dockerconfigjson"), "{shown}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(!shown.contains("czNjcmV0"), "base64 of it: {shown}");
    }
}
