//! Object metadata as the owned-object caches hold it ([`super::owned_objects`]): only what the
//! sweep, the ownership checks and the metadata drift check read, with label and annotation
//! strings shared ([`crate::interner::Strings`]) and lists instead of maps.
//!
//! Why: an [`ObjectMeta`] costs about 2 kB in memory even for a small object (two `BTreeMap`s,
//! whose smallest node holds room for eleven entries, and a `String` per value). opcat creates
//! about 16 objects per install, so at 10,000 namespaces those caches held about 320 MB; in this
//! form they hold a fraction of it (scripts/bench-scale.sh, "RSS / namespace").

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

use super::keys::UNIQUE_VALUE_ANNOTATIONS;
use crate::interner::{Interner, Strings};

/// The owner references of cached objects: one copy per distinct list. Every object opcat
/// creates for a CSV names that CSV as its owner, so the ~16 objects of an install share one
/// list instead of holding four strings each (about 4 kB per install).
static OWNER_REFERENCES: LazyLock<Interner<Vec<OwnerReference>>> = LazyLock::new(Interner::default);

/// The label sets of cached objects: one copy per distinct set. Every object opcat renders for
/// a CSV carries the same ownership labels (and usually the bundle's own), so the ~16 objects of
/// an install share one set instead of holding a list each (about 2 kB per install).
static LABEL_SETS: LazyLock<Interner<PairList>> = LazyLock::new(Interner::default);

/// Shared `(key, value)` pairs, sorted by key.
type PairList = Vec<(Arc<str>, Arc<str>)>;

/// Shared label or annotation pairs, sorted by key.
type Pairs = Box<[(Arc<str>, Arc<str>)]>;

/// A shared label set ([`LABEL_SETS`]); `None` when the object has no labels.
type Labels = Option<Arc<PairList>>;

/// The metadata of a cached object, without its name and namespace (the cache's key).
#[derive(Clone, Debug, PartialEq)]
pub struct CompactMeta {
    uid: Option<Box<str>>,
    resource_version: Option<Box<str>>,
    generation: Option<i64>,
    deletion_timestamp: Option<Time>,
    maps: MetaMaps,
    finalizers: Box<[Arc<str>]>,
}

/// The labels, annotations and owner references of an object, shared where equal: the parts
/// of an [`ObjectMeta`] that cost the most in memory (a `BTreeMap` leaf of eleven slots per map
/// and a `String` per key and value). The stored forms of opcat's own kinds
/// ([`super::stored_object`]) keep the rest of the metadata as an `ObjectMeta` and these here.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MetaMaps {
    labels: Labels,
    annotations: Pairs,
    /// Shared ([`OWNER_REFERENCES`]); `None` when the object has none.
    owner_references: Option<Arc<Vec<OwnerReference>>>,
}

impl MetaMaps {
    /// Takes the labels, annotations and owner references out of `meta`.
    pub fn take(meta: &mut ObjectMeta, strings: &Strings) -> Self {
        Self {
            labels: labels(meta.labels.take(), strings),
            annotations: pairs(meta.annotations.take(), strings),
            owner_references: meta
                .owner_references
                .take()
                .filter(|references| !references.is_empty())
                .map(|references| OWNER_REFERENCES.intern(Arc::new(references))),
        }
    }

    /// Puts them back into `meta`.
    pub fn restore(&self, meta: &mut ObjectMeta) {
        meta.labels = self.labels.as_deref().and_then(|labels| map(labels));
        meta.annotations = map(&self.annotations);
        meta.owner_references = self.owner_references.as_deref().cloned();
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&Arc<str>> {
        find(self.labels.as_deref()?, key)
    }

    /// The value of annotation `key`.
    pub fn annotation(&self, key: &str) -> Option<&Arc<str>> {
        find(&self.annotations, key)
    }

    /// The owner references (empty when there are none).
    pub fn owner_references(&self) -> &[OwnerReference] {
        self.owner_references.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// The value under `key` in `pairs` (sorted by key).
fn find<'a>(pairs: &'a [(Arc<str>, Arc<str>)], key: &str) -> Option<&'a Arc<str>> {
    pairs
        .binary_search_by(|(held, _)| (**held).cmp(key))
        .ok()
        .map(|index| &pairs[index].1)
}

fn pairs(map: Option<BTreeMap<String, String>>, strings: &Strings) -> Pairs {
    map.into_iter()
        .flatten()
        .map(|(key, value)| {
            let value = if UNIQUE_VALUE_ANNOTATIONS.contains(&key.as_str()) {
                Arc::from(value)
            } else {
                strings.get(&value)
            };
            (strings.get(&key), value)
        })
        .collect()
}

fn labels(map: Option<BTreeMap<String, String>>, strings: &Strings) -> Labels {
    let pairs: Vec<_> = pairs(map, strings).into_vec();
    (!pairs.is_empty()).then(|| LABEL_SETS.intern(Arc::new(pairs)))
}

fn map(pairs: &[(Arc<str>, Arc<str>)]) -> Option<BTreeMap<String, String>> {
    (!pairs.is_empty()).then(|| {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    })
}

impl CompactMeta {
    /// What the cache keeps of `meta` (everything else, managed fields included, is dropped).
    pub fn new(mut meta: ObjectMeta, strings: &Strings) -> Self {
        Self {
            maps: MetaMaps::take(&mut meta, strings),
            uid: meta.uid.map(String::into_boxed_str),
            resource_version: meta.resource_version.map(String::into_boxed_str),
            generation: meta.generation,
            deletion_timestamp: meta.deletion_timestamp,
            finalizers: meta
                .finalizers
                .into_iter()
                .flatten()
                .map(|finalizer| strings.get(&finalizer))
                .collect(),
        }
    }

    /// `meta` split for a stored form of an object: its key (name, namespace, `uid` and
    /// `resourceVersion`: what kube's reflector and the echo filters read from
    /// `Resource::meta`) as an `ObjectMeta`, and the rest in compact form (without the key's
    /// `uid` and `resourceVersion`: they are held once, in the key).
    pub fn split(mut meta: ObjectMeta, strings: &Strings) -> (ObjectMeta, Self) {
        let key = ObjectMeta {
            name: meta.name.clone(),
            namespace: meta.namespace.clone(),
            uid: meta.uid.take(),
            resource_version: meta.resource_version.take(),
            ..ObjectMeta::default()
        };
        (key, Self::new(meta, strings))
    }

    /// The metadata [`CompactMeta::split`] took apart, whole again.
    pub fn joined(&self, key: &ObjectMeta) -> ObjectMeta {
        ObjectMeta {
            uid: key.uid.clone(),
            resource_version: key.resource_version.clone(),
            ..self.to_meta(
                key.namespace.as_deref().unwrap_or_default(),
                key.name.as_deref().unwrap_or_default(),
            )
        }
    }

    /// The metadata again, with the name and namespace it is cached under.
    pub fn to_meta(&self, namespace: &str, name: &str) -> ObjectMeta {
        let mut meta = ObjectMeta {
            name: Some(name.to_owned()),
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            uid: self.uid.as_deref().map(str::to_owned),
            resource_version: self.resource_version.as_deref().map(str::to_owned),
            generation: self.generation,
            deletion_timestamp: self.deletion_timestamp.clone(),
            finalizers: (!self.finalizers.is_empty())
                .then(|| self.finalizers.iter().map(|f| f.to_string()).collect()),
            ..ObjectMeta::default()
        };
        self.maps.restore(&mut meta);
        meta
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> Option<&str> {
        self.uid.as_deref()
    }

    /// `metadata.generation`.
    pub fn generation(&self) -> Option<i64> {
        self.generation
    }

    /// `metadata.deletionTimestamp`.
    pub fn deletion_timestamp(&self) -> Option<&Time> {
        self.deletion_timestamp.as_ref()
    }

    /// `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }

    /// The labels, as a map (`None` when there are none).
    pub fn labels(&self) -> Option<BTreeMap<String, String>> {
        self.maps.labels.as_deref().and_then(|labels| map(labels))
    }

    /// The value of label `key`.
    pub fn label(&self, key: &str) -> Option<&Arc<str>> {
        self.maps.label(key)
    }

    /// The value of annotation `key`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.maps.annotation(key).map(|value| &**value)
    }
}

/// Keeps only the entries of `map` whose key `keep` accepts; an emptied map is dropped.
pub(super) fn keep_entries(
    map: &mut Option<BTreeMap<String, String>>,
    keep: impl Fn(&str) -> bool,
) {
    if let Some(entries) = map {
        entries.retain(|key, _| keep(key));
        if entries.is_empty() {
            *map = None;
        }
    }
}

/// A label or annotation map of `(key, value)` pairs, for the stored forms' test fixtures.
#[cfg(test)]
pub(super) fn string_map(list: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        list.iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;

    use super::*;

    fn full() -> ObjectMeta {
        ObjectMeta {
            name: Some("widget-controller".into()),
            namespace: Some("tenant-1".into()),
            uid: Some("0d5c-uid".into()),
            resource_version: Some("42".into()),
            generation: Some(3),
            deletion_timestamp: Some(Time(jiff::Timestamp::UNIX_EPOCH)),
            labels: Some(
                [
                    ("b".to_owned(), "2".to_owned()),
                    ("a".to_owned(), "1".to_owned()),
                ]
                .into(),
            ),
            annotations: Some([("hash".to_owned(), "abc".to_owned())].into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: "owner-uid".into(),
                ..OwnerReference::default()
            }]),
            finalizers: Some(vec!["example.com/keep".into()]),
            ..ObjectMeta::default()
        }
    }

    #[test]
    fn what_readers_use_comes_back_unchanged() {
        let strings = Strings::new();
        let compact = CompactMeta::new(full(), &strings);
        assert_eq!(compact.to_meta("tenant-1", "widget-controller"), full());
        assert_eq!(compact.label("a").map(|v| &**v), Some("1"));
        assert_eq!(compact.label("c"), None);

        let cluster_scoped = CompactMeta::new(ObjectMeta::default(), &strings);
        let meta = cluster_scoped.to_meta("", "reader");
        assert_eq!(meta.namespace, None);
        assert_eq!((meta.labels, meta.annotations), (None, None));
    }

    #[test]
    fn managed_fields_and_creation_details_are_not_kept() {
        let strings = Strings::new();
        let mut meta = full();
        meta.managed_fields = Some(vec![ManagedFieldsEntry::default()]);
        meta.creation_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
        let back = CompactMeta::new(meta, &strings).to_meta("tenant-1", "widget-controller");
        assert_eq!(back.managed_fields, None);
        assert_eq!(back.creation_timestamp, None);
    }

    #[test]
    fn objects_with_equal_labels_share_one_label_set() {
        let strings = Strings::new();
        let one = CompactMeta::new(full(), &strings);
        let two = CompactMeta::new(full(), &strings);
        let shared = |meta: &CompactMeta| meta.maps.labels.clone().unwrap();
        assert!(Arc::ptr_eq(&shared(&one), &shared(&two)));
        assert!(Arc::ptr_eq(
            &one.maps.annotations[0].1,
            &two.maps.annotations[0].1
        ));

        let mut other = full();
        other
            .labels
            .as_mut()
            .unwrap()
            .insert("a".into(), "other".into());
        let three = CompactMeta::new(other, &strings);
        assert!(!Arc::ptr_eq(&shared(&one), &shared(&three)));
        assert_eq!(three.label("a").map(|v| &**v), Some("other"));
    }

    #[test]
    fn values_unique_per_object_are_kept_out_of_the_shared_strings() {
        let strings = Strings::new();
        let mut meta = full();
        meta.annotations = string_map(&[
            (crate::controller::keys::APPLIED_HASH, "23d938d8c2"),
            ("hash", "abc"),
        ]);
        let one = CompactMeta::new(meta.clone(), &strings);
        let held = strings.len();
        let two = CompactMeta::new(meta.clone(), &strings);
        assert_eq!(strings.len(), held, "nothing new to share");
        let value = |meta: &CompactMeta, index: usize| meta.maps.annotations[index].1.clone();
        assert!(!Arc::ptr_eq(&value(&one, 1), &value(&two, 1)));
        assert!(Arc::ptr_eq(&value(&one, 0), &value(&two, 0)));
        assert_eq!(
            two.to_meta("tenant-1", "widget-controller").annotations,
            meta.annotations
        );
    }

    #[test]
    fn objects_of_one_owner_share_its_reference() {
        let strings = Strings::new();
        let one = CompactMeta::new(full(), &strings);
        let two = CompactMeta::new(full(), &strings);
        let shared = |meta: &CompactMeta| meta.maps.owner_references.clone().unwrap();
        assert!(Arc::ptr_eq(&shared(&one), &shared(&two)));

        let mut other = full();
        other.owner_references.as_mut().unwrap()[0].uid = "other-uid".into();
        let three = CompactMeta::new(other, &strings);
        assert!(!Arc::ptr_eq(&shared(&one), &shared(&three)));
        assert_eq!(shared(&three)[0].uid, "other-uid");

        let mut orphan = full();
        orphan.owner_references = Some(Vec::new());
        let back = CompactMeta::new(orphan, &strings).to_meta("tenant-1", "widget-controller");
        assert_eq!(back.owner_references, None);
    }
}
