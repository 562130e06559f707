//! Rotation tracking for the propagation metrics (reads stores and notifications; no client,
//! no writes): when a source pull secret's data changes, which of its copies still carry the
//! old data, and when the last of them caught up.
//!
//! [`Rotations`] is the pure state. [`track`] feeds it from the source-Secret notifications and
//! the copies' watch (label-selected, DESIGN invariant 11) and reports to the metrics:
//! `rotation_observed` when a source's data changes, `rotation_completed` when every copy of that
//! source carries the new data, `rotation_abandoned` when that can no longer happen (the source
//! was deleted, became unusable, is no longer referenced, or its last outdated copy was deleted
//! without any copy being updated). The copy store is walked once per data change of a source;
//! each copy event afterwards costs one hash of that copy's data, and only while its source has
//! a pending rotation.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::ResourceExt;
use sha2::{Digest, Sha256};

use crate::controller::context::Context;
use crate::controller::source_secrets::{SecretKey, SourceState};
use crate::controller::stored_copy::StoredCopy;
use crate::pull_secrets::copy::validate_source;
use crate::pull_secrets::owners::{copy_source_labels, source_label_values};

/// What to tell the metrics about a source Secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// Its data changed: a rotation starts.
    Observed(SecretKey),
    /// Every copy carries the new data.
    Completed(SecretKey),
    /// The pending rotation will never complete.
    Abandoned(SecretKey),
}

/// A SHA-256 of a Secret's `data` (keys and values, length-prefixed). Never shown: `Debug` is
/// redacted like every credential type (DESIGN invariant 8).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Fingerprint([u8; 32]);

impl Fingerprint {
    fn of(data: Option<&BTreeMap<String, ByteString>>) -> Self {
        let mut hasher = Sha256::new();
        for (key, value) in data.into_iter().flatten() {
            for part in [key.as_bytes(), value.0.as_slice()] {
                hasher.update((part.len() as u64).to_be_bytes());
                hasher.update(part);
            }
        }
        Self(hasher.finalize().into())
    }

    fn of_secret(secret: &Secret) -> Self {
        Self::of(secret.data.as_ref())
    }

    fn of_bytes(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }
}

/// What a copy must carry to be up to date with its source: the source's data as a whole (a
/// copy of the whole secret), or each registry entry it holds as the source has it (a copy
/// scoped to the registries its operators need, DESIGN invariant 12).
#[derive(Clone, Debug)]
struct SourceData {
    whole: Fingerprint,
    entries: BTreeMap<String, Fingerprint>,
}

impl SourceData {
    fn of(secret: &Secret) -> Self {
        Self {
            whole: Fingerprint::of_secret(secret),
            entries: entry_prints(secret).unwrap_or_default(),
        }
    }

    fn carried_by(&self, copy: &Secret) -> bool {
        Fingerprint::of_secret(copy) == self.whole
            || entry_prints(copy).is_some_and(|entries| {
                !entries.is_empty()
                    && entries
                        .iter()
                        .all(|(key, print)| self.entries.get(key) == Some(print))
            })
    }
}

/// A fingerprint of each registry entry of a pull secret, by registry key.
fn entry_prints(secret: &Secret) -> Option<BTreeMap<String, Fingerprint>> {
    let entries = crate::pull_secrets::scoping::canonical_entries(secret)?;
    Some(
        entries
            .into_iter()
            .map(|(key, entry)| (key, Fingerprint::of_bytes(&entry)))
            .collect(),
    )
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Fingerprint(<redacted>)")
    }
}

/// `(namespace, name)` of a copy.
type CopyKey = (String, String);

/// The copy labels naming a source: `(source-namespace, source-name)` label values.
type SourceLabels = (String, String);

fn source_labels(key: &SecretKey) -> SourceLabels {
    source_label_values(&key.0, &key.1)
}

fn copy_key(copy: &Secret) -> CopyKey {
    (copy.namespace().unwrap_or_default(), copy.name_any())
}

/// A rotation whose copies are not all updated yet.
#[derive(Debug)]
struct Pending {
    source: SecretKey,
    data: SourceData,
    /// Copies that still carry other data.
    outdated: BTreeSet<CopyKey>,
    /// Whether any copy was seen with the new data.
    propagated: bool,
}

/// Rotation state of every source Secret opcat has seen.
#[derive(Debug, Default)]
pub struct Rotations {
    /// Data of each source as last seen usable (a pull secret of a valid type).
    sources: HashMap<SecretKey, Fingerprint>,
    /// Pending rotations by the copy labels of their source.
    pending: HashMap<SourceLabels, Pending>,
}

impl Rotations {
    /// The source `key` is now `state`; `copies` are the copies opcat manages (any source).
    pub fn source(
        &mut self,
        key: &SecretKey,
        state: &SourceState,
        copies: impl IntoIterator<Item = impl Borrow<Secret>>,
    ) -> Vec<Change> {
        let labels = source_labels(key);
        let secret = match state {
            SourceState::Present(secret) if validate_source(secret).is_ok() => secret,
            // No longer referenced by any CatalogSource: forget it entirely.
            SourceState::Unknown => {
                self.sources.remove(key);
                return self.abandon(&labels);
            }
            // Deleted, or replaced by something that is not a pull secret: the copies keep the
            // data they have (`pull_secrets::copy::kept_copy`), so nothing will propagate. The
            // last usable data is kept: a source recreated with other data is a rotation.
            SourceState::Missing | SourceState::Present(_) => return self.abandon(&labels),
        };
        let whole = Fingerprint::of_secret(secret);
        match self.sources.insert(key.clone(), whole) {
            // First sight (a start, or a newly referenced source), or a change of metadata only.
            None => return Vec::new(),
            Some(previous) if previous == whole => return Vec::new(),
            Some(_) => {}
        }
        let data = SourceData::of(secret);
        let mut outdated = BTreeSet::new();
        let mut propagated = false;
        for copy in copies {
            let copy = copy.borrow();
            if copy_source_labels(copy).as_ref() != Some(&labels) {
                continue;
            }
            if data.carried_by(copy) {
                propagated = true;
            } else {
                outdated.insert(copy_key(copy));
            }
        }
        if outdated.is_empty() && !propagated && !self.pending.contains_key(&labels) {
            // No copy anywhere: nothing to propagate, nothing to time.
            return Vec::new();
        }
        let pending = self.pending.entry(labels.clone()).or_insert(Pending {
            source: key.clone(),
            data: data.clone(),
            outdated: BTreeSet::new(),
            propagated: false,
        });
        pending.data = data;
        pending.outdated = outdated;
        pending.propagated = propagated;
        let mut changes = vec![Change::Observed(key.clone())];
        changes.extend(self.settle(&labels));
        changes
    }

    /// A copy was created or changed (`deleted: false`) or deleted.
    pub fn copy(&mut self, copy: &Secret, deleted: bool) -> Option<Change> {
        let labels = copy_source_labels(copy)?;
        let pending = self.pending.get_mut(&labels)?;
        let key = copy_key(copy);
        if deleted {
            pending.outdated.remove(&key);
        } else if pending.data.carried_by(copy) {
            pending.outdated.remove(&key);
            pending.propagated = true;
        } else {
            // Created from stale data, or changed back by someone: not done yet.
            pending.outdated.insert(key);
        }
        self.settle(&labels)
    }

    /// Completes (or abandons) the rotation of `labels` once no copy is outdated.
    fn settle(&mut self, labels: &SourceLabels) -> Option<Change> {
        if !self.pending.get(labels)?.outdated.is_empty() {
            return None;
        }
        let pending = self.pending.remove(labels)?;
        Some(if pending.propagated {
            Change::Completed(pending.source)
        } else {
            Change::Abandoned(pending.source)
        })
    }

    fn abandon(&mut self, labels: &SourceLabels) -> Vec<Change> {
        self.pending
            .remove(labels)
            .map(|pending| Change::Abandoned(pending.source))
            .into_iter()
            .collect()
    }
}

/// Feeds [`Rotations`] from the source notifications and the copies' watch, and reports to the
/// metrics. Runs until the streams end; subscribe to them before the watches are driven.
///
/// A source change is compared with the copy store as it is then. The store is updated before
/// its watch event reaches subscribers, so it never shows less than the events still queued
/// here; those events only move their copy in or out of the outdated set afterwards.
pub async fn track(
    context: Arc<Context>,
    sources: impl Stream<Item = SecretKey> + Send,
    applied: impl Stream<Item = Arc<StoredCopy>> + Send,
    deleted: impl Stream<Item = Arc<StoredCopy>> + Send,
) {
    let mut rotations = Rotations::default();
    let mut sources = std::pin::pin!(sources);
    let mut applied = std::pin::pin!(applied);
    let mut deleted = std::pin::pin!(deleted);
    loop {
        // Source changes first: a copy event that follows one must find its rotation pending.
        let changes = tokio::select! {
            biased;
            Some(key) = sources.next() => {
                let state = context.source_secrets.get(&key.0, &key.1);
                let copies = context.stores.copies.state();
                rotations.source(&key, &state, copies.iter().map(|copy| copy.to_secret()))
            }
            Some(copy) = applied.next() => rotations.copy(&copy.to_secret(), false).into_iter().collect(),
            Some(copy) = deleted.next() => rotations.copy(&copy.to_secret(), true).into_iter().collect(),
            else => return,
        };
        for change in changes {
            report(&context, &change);
        }
    }
}

fn report(context: &Context, change: &Change) {
    let metrics = &context.metrics;
    match change {
        Change::Observed((namespace, name)) => {
            tracing::info!(%namespace, %name, "pull secret rotated; updating its copies");
            metrics.rotation_observed(namespace, name, context.clock.now());
        }
        Change::Completed((namespace, name)) => {
            tracing::info!(%namespace, %name, "pull secret rotation propagated to every copy");
            metrics.rotation_completed(namespace, name, context.clock.now());
        }
        Change::Abandoned((namespace, name)) => {
            tracing::debug!(%namespace, %name, "pull secret rotation will not propagate");
            metrics.rotation_abandoned(namespace, name);
        }
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::pull_secrets::CatalogRef;
    use crate::pull_secrets::copy::{DOCKER_CONFIG_JSON_KEY, DOCKER_CONFIG_JSON_TYPE};
    use crate::pull_secrets::names::{SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL};

    const NS: &str = "olm";
    const SOURCE: &str = "registry-creds";

    fn key() -> SecretKey {
        (NS.to_owned(), SOURCE.to_owned())
    }

    fn data(config: &str) -> BTreeMap<String, ByteString> {
        BTreeMap::from([(
            DOCKER_CONFIG_JSON_KEY.to_owned(),
            ByteString(config.as_bytes().to_vec()),
        )])
    }

    fn source(config: &str) -> SourceState {
        SourceState::Present(Arc::new(Secret {
            metadata: ObjectMeta {
                name: Some(SOURCE.to_owned()),
                namespace: Some(NS.to_owned()),
                ..ObjectMeta::default()
            },
            type_: Some(DOCKER_CONFIG_JSON_TYPE.to_owned()),
            data: Some(data(config)),
            ..Secret::default()
        }))
    }

    /// The copy of the source in `namespace` carrying `config`, from catalog `catalog`.
    fn copy_from(catalog: &str, namespace: &str, config: &str) -> Secret {
        let catalog = CatalogRef {
            namespace: NS.to_owned(),
            name: catalog.to_owned(),
        };
        Secret {
            metadata: ObjectMeta {
                name: Some(catalog.copy_name(SOURCE)),
                namespace: Some(namespace.to_owned()),
                labels: Some(catalog.copy_labels(SOURCE)),
                ..ObjectMeta::default()
            },
            type_: Some(DOCKER_CONFIG_JSON_TYPE.to_owned()),
            data: Some(data(config)),
            ..Secret::default()
        }
    }

    fn copy(namespace: &str, config: &str) -> Secret {
        copy_from("examples", namespace, config)
    }

    /// Tracking that has seen the source with `v1` and its copies in `namespaces`.
    fn seen(namespaces: &[&str]) -> (Rotations, Vec<Secret>) {
        let mut rotations = Rotations::default();
        let copies: Vec<Secret> = namespaces.iter().map(|ns| copy(ns, "v1")).collect();
        assert_eq!(rotations.source(&key(), &source("v1"), &copies), []);
        (rotations, copies)
    }

    /// `copy` is the last outdated copy: the rotation completes.
    fn assert_completes(rotations: &mut Rotations, copy: &Secret) {
        assert_eq!(rotations.copy(copy, false), Some(Change::Completed(key())));
    }

    /// [`seen`] with one copy in `team-a`, then the source changed to `v2`.
    fn rotating_to_v2() -> (Rotations, Vec<Secret>) {
        let (mut rotations, copies) = seen(&["team-a"]);
        assert_eq!(
            rotations.source(&key(), &source("v2"), &copies),
            [Change::Observed(key())]
        );
        (rotations, copies)
    }

    #[test]
    fn a_rotation_completes_when_the_last_copy_carries_the_new_data() {
        let (mut rotations, copies) = seen(&["team-a", "team-b"]);
        assert_eq!(
            rotations.source(&key(), &source("v2"), &copies),
            [Change::Observed(key())]
        );
        assert_eq!(rotations.copy(&copy("team-a", "v2"), false), None);
        // An event of a copy that is still old (an owner update) changes nothing.
        assert_eq!(rotations.copy(&copy("team-b", "v1"), false), None);
        assert_completes(&mut rotations, &copy("team-b", "v2"));
        assert!(rotations.pending.is_empty());
        // Later events of copies do nothing.
        assert_eq!(rotations.copy(&copy("team-b", "v2"), false), None);
    }

    #[test]
    fn a_copy_scoped_to_some_registries_is_done_when_its_entries_are_the_sources() {
        let config = |a: &str, b: &str| {
            format!(
                r#"{{"auths":{{"a.example.com":{{"auth":"{a}"}},"b.example.com":{{"auth":"{b}"}}}}}}"#
            )
        };
        // A copy holding `a.example.com` only, as opcat writes it (sorted, compact).
        let scoped = |a: &str| {
            copy(
                "team-a",
                &format!(r#"{{"auths":{{"a.example.com":{{"auth":"{a}"}}}}}}"#),
            )
        };
        let mut rotations = Rotations::default();
        rotations.source(&key(), &source(&config("YTox", "Yjox")), [scoped("YTox")]);
        assert_eq!(
            rotations.source(&key(), &source(&config("YToy", "Yjox")), [scoped("YTox")]),
            [Change::Observed(key())]
        );
        assert_eq!(
            rotations.copy(&scoped("YTox"), false),
            None,
            "its entry is still the old one"
        );
        assert_completes(&mut rotations, &scoped("YToy"));

        // A rotation of an entry the copy does not hold: nothing to wait for.
        assert_eq!(
            rotations.source(&key(), &source(&config("YToy", "Yjoy")), [scoped("YToy")]),
            [Change::Observed(key()), Change::Completed(key())]
        );
    }

    #[test]
    fn copies_of_the_same_source_through_another_catalog_are_waited_for_too() {
        let mut rotations = Rotations::default();
        let copies = [copy("team-a", "v1"), copy_from("mirror", "team-a", "v1")];
        rotations.source(&key(), &source("v1"), &copies);
        rotations.source(&key(), &source("v2"), &copies);
        assert_eq!(rotations.copy(&copy("team-a", "v2"), false), None);
        assert_completes(&mut rotations, &copy_from("mirror", "team-a", "v2"));
    }

    #[test]
    fn metadata_changes_and_first_sights_are_not_rotations() {
        let (mut rotations, copies) = seen(&["team-a"]);
        assert_eq!(rotations.source(&key(), &source("v1"), &copies), []);
        assert!(rotations.pending.is_empty());
        let other: SecretKey = (NS.to_owned(), "other".to_owned());
        assert_eq!(rotations.source(&other, &source("x"), &copies), []);
    }

    #[test]
    fn a_source_without_copies_has_nothing_to_time() {
        let (mut rotations, _) = seen(&[]);
        assert_eq!(rotations.source(&key(), &source("v2"), &[]), []);
        assert!(rotations.pending.is_empty());
    }

    #[test]
    fn copies_already_updated_when_the_change_is_seen_complete_it_at_once() {
        let (mut rotations, _) = seen(&["team-a"]);
        assert_eq!(
            rotations.source(&key(), &source("v2"), &[copy("team-a", "v2")]),
            [Change::Observed(key()), Change::Completed(key())]
        );
    }

    #[test]
    fn copies_of_other_sources_are_ignored() {
        let (mut rotations, copies) = seen(&["team-a"]);
        let unrelated = Secret {
            metadata: ObjectMeta {
                labels: Some(BTreeMap::from([
                    (SOURCE_NAMESPACE_LABEL.to_owned(), NS.to_owned()),
                    (SOURCE_NAME_LABEL.to_owned(), "other".to_owned()),
                ])),
                ..copy("team-b", "v1").metadata
            },
            ..copy("team-b", "v1")
        };
        let mut store = copies.clone();
        store.push(unrelated.clone());
        rotations.source(&key(), &source("v2"), &store);
        assert_eq!(rotations.copy(&unrelated, false), None);
        assert_completes(&mut rotations, &copy("team-a", "v2"));
    }

    #[test]
    fn a_second_change_before_the_copies_caught_up_waits_for_the_latest_data() {
        let (mut rotations, _) = rotating_to_v2();
        assert_eq!(
            rotations.source(&key(), &source("v3"), &[copy("team-a", "v2")]),
            [Change::Observed(key())],
            "the metrics keep the first observation"
        );
        assert_eq!(rotations.copy(&copy("team-a", "v2"), false), None);
        assert_completes(&mut rotations, &copy("team-a", "v3"));
    }

    #[test]
    fn deleted_sources_unusable_sources_and_deleted_copies_abandon_the_rotation() {
        let (mut rotations, copies) = rotating_to_v2();
        assert_eq!(
            rotations.source(&key(), &SourceState::Missing, &copies),
            [Change::Abandoned(key())]
        );
        // Recreated with other data: a rotation again.
        assert_eq!(
            rotations.source(&key(), &source("v3"), &copies),
            [Change::Observed(key())]
        );
        let mut wrong_type = source("v4");
        if let SourceState::Present(secret) = &mut wrong_type {
            Arc::make_mut(secret).type_ = Some("Opaque".to_owned());
        }
        assert_eq!(
            rotations.source(&key(), &wrong_type, &copies),
            [Change::Abandoned(key())]
        );
        // Fixed back to the data the copies already have: nothing to propagate.
        assert_eq!(rotations.source(&key(), &source("v3"), &copies), []);

        rotations.source(&key(), &source("v5"), &copies);
        assert_eq!(
            rotations.copy(&copy("team-a", "v3"), true),
            Some(Change::Abandoned(key())),
            "the only outdated copy was deleted, none was updated"
        );

        rotations.source(&key(), &source("v6"), &copies);
        assert_eq!(
            rotations.source(&key(), &SourceState::Unknown, &copies),
            [Change::Abandoned(key())],
            "no CatalogSource references it any more"
        );
        assert!(rotations.sources.is_empty());
    }

    #[test]
    fn fingerprints_never_show_the_data() {
        let fingerprint = Fingerprint::of(Some(&data("s3cret")));
        assert_eq!(format!("{fingerprint:?}"), "Fingerprint(<redacted>)");
        assert_ne!(fingerprint, Fingerprint::of(Some(&data("other"))));
        assert_ne!(
            Fingerprint::of(Some(&BTreeMap::from([(
                "ab".to_owned(),
                ByteString(b"c".to_vec())
            ),]))),
            Fingerprint::of(Some(&BTreeMap::from([(
                "a".to_owned(),
                ByteString(b"bc".to_vec())
            ),]))),
            "keys and values are length-prefixed"
        );
    }
}
