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

/// A label or annotation: shared key and value.
type Pair = (Arc<str>, Arc<str>);

/// Shared `(key, value)` pairs, sorted by key.
type PairList = Vec<Pair>;

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
        self.restore_the_rest(meta);
    }

    /// Puts them back into `meta`, leaving out the labels whose key starts with `prefix`.
    /// The labels are sorted, so those are one run, skipped without being walked.
    fn restore_without_labels(&self, meta: &mut ObjectMeta, prefix: &str) {
        meta.labels = self.labels.as_deref().and_then(|labels| {
            let (before, after) = around_prefix(labels, prefix);
            map(&[before, after].concat())
        });
        self.restore_the_rest(meta);
    }

    fn restore_the_rest(&self, meta: &mut ObjectMeta) {
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

/// The pairs of `pairs` (sorted by key) before and after the run of keys that start with
/// `prefix`: every key from the first one not less than `prefix` up to the first one without it.
fn around_prefix<'a>(pairs: &'a [Pair], prefix: &str) -> (&'a [Pair], &'a [Pair]) {
    let start = pairs.partition_point(|(key, _)| **key < *prefix);
    let end = start + pairs[start..].partition_point(|(key, _)| key.starts_with(prefix));
    (&pairs[..start], &pairs[end..])
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
        let mut meta = self.to_meta_without_maps(namespace, name);
        self.maps.restore(&mut meta);
        meta
    }

    /// [`CompactMeta::to_meta`] without the labels whose key starts with `prefix`, at a cost
    /// that does not grow with them: a CRD shared by thousands of installs carries one
    /// component label per install, and each install's look at it needs none of them.
    pub fn to_meta_without_labels(&self, namespace: &str, name: &str, prefix: &str) -> ObjectMeta {
        let mut meta = self.to_meta_without_maps(namespace, name);
        self.maps.restore_without_labels(&mut meta, prefix);
        meta
    }

    fn to_meta_without_maps(&self, namespace: &str, name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
            uid: self.uid.as_deref().map(str::to_owned),
            resource_version: self.resource_version.as_deref().map(str::to_owned),
            generation: self.generation,
            deletion_timestamp: self.deletion_timestamp.clone(),
            finalizers: (!self.finalizers.is_empty())
                .then(|| self.finalizers.iter().map(|f| f.to_string()).collect()),
            ..ObjectMeta::default()
        }
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
#[path = "compact_meta_tests.rs"]
mod tests;
