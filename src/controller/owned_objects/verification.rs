//! What the owned-object caches remember of an object's content: the version opcat last saw
//! whole and in line with the render ([`Verified`]), carried over the writes of tolerated
//! writers ([`super::super::field_owners`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DynamicObject;

use super::super::compact_meta::CompactMeta;
use super::super::field_owners::FieldOwners;
use super::super::keys::APPLIED_HASH;
use super::{OwnedObjects, csv_of, key_of};
use crate::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};

/// The version of an object opcat last saw whole and in line with what it renders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verified {
    /// `metadata.generation` (kinds whose content changes bump it).
    Generation(i64),
    /// `metadata.resourceVersion` (kinds without a generation).
    ResourceVersion(String),
}

impl Verified {
    /// The version of `meta` to remember.
    pub fn of(meta: &ObjectMeta) -> Option<Self> {
        Self::from_parts(meta.generation, meta.resource_version.as_deref())
    }

    pub(super) fn of_compact(meta: &CompactMeta) -> Option<Self> {
        Self::from_parts(meta.generation(), meta.resource_version())
    }

    fn from_parts(generation: Option<i64>, resource_version: Option<&str>) -> Option<Self> {
        match (generation, resource_version) {
            (Some(generation), _) => Some(Self::Generation(generation)),
            (None, Some(version)) => Some(Self::ResourceVersion(version.to_owned())),
            (None, None) => None,
        }
    }
}

#[derive(Debug)]
pub(super) struct Entry {
    pub(super) meta: CompactMeta,
    pub(super) verified: Option<Verified>,
    /// For kinds with a tolerated writer ([`super::field_owners`]).
    pub(super) owners: Option<FieldOwners>,
}

impl Entry {
    pub(super) fn is_verified(&self) -> bool {
        self.verified.is_some() && self.verified == Verified::of_compact(&self.meta)
    }

    /// The verification this entry passes on to `meta`, the next state of its object: kept as
    /// is, or moved to the new version when only tolerated writers changed the object.
    pub(super) fn carried(
        &self,
        meta: &CompactMeta,
        owners: Option<FieldOwners>,
    ) -> Option<Verified> {
        if self.meta.uid() != meta.uid() {
            return None;
        }
        if self.is_verified()
            && only_tolerated_since(owners, self.owners)
            && meta.annotation(APPLIED_HASH) == self.meta.annotation(APPLIED_HASH)
        {
            return Verified::of_compact(meta);
        }
        self.verified.clone()
    }
}

/// Whether a state with `now` owners differs from one with `before` only by tolerated writers.
fn only_tolerated_since(now: Option<FieldOwners>, before: Option<FieldOwners>) -> bool {
    matches!((now, before), (Some(now), Some(before)) if now.only_tolerated_since(&before))
}

impl OwnedObjects {
    /// Records that the object `written` (as the server returned it after a write, or as read)
    /// is in line with the render.
    pub fn verified(&self, written: &DynamicObject) {
        self.verified_since(None, written);
    }

    /// [`Self::verified`], for an object the cache showed at `resourceVersion` `seen` when
    /// opcat decided to write or read it: while the watch still shows that version, `written`
    /// is the newer state and is cached as it is, so a look before the watch catches up needs
    /// no read.
    pub fn verified_since(&self, seen: Option<&str>, written: &DynamicObject) {
        let Some(types) = &written.types else {
            return;
        };
        let Some(cache) = self.kind(&types.api_version, &types.kind) else {
            return;
        };
        let Some(version) = Verified::of(&written.metadata) else {
            return;
        };
        let Ok(mut state) = cache.state.write() else {
            return;
        };
        let key = key_of(&written.metadata, &self.strings);
        let owners = FieldOwners::of(&types.kind, &written.metadata);
        let behind = state.objects.get(&key).is_some_and(|entry| {
            entry.meta.uid() == written.metadata.uid.as_deref()
                && seen.is_some()
                && entry.meta.resource_version() == seen
        });
        if behind {
            let meta = CompactMeta::new(written.metadata.clone(), &self.strings);
            state.remove(&key);
            state.insert(key, meta, owners, Some(version));
            return;
        }
        match state.objects.get_mut(&key) {
            Some(entry) if entry.meta.uid() == written.metadata.uid.as_deref() => {
                // The watch may already show a later state: one only tolerated writers made
                // since (the aggregation of a role opcat just wrote) is verified too.
                let applied = written
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(APPLIED_HASH));
                let later_tolerated = only_tolerated_since(entry.owners, owners)
                    && entry.meta.annotation(APPLIED_HASH) == applied.map(String::as_str);
                entry.verified = if later_tolerated {
                    Verified::of_compact(&entry.meta)
                } else {
                    Some(version)
                };
            }
            // Not seen by the watch yet: store it as written, the watch event will follow (it
            // carries opcat's label: objects of a CSV, and the roles opcat derives itself).
            None => {
                let meta = CompactMeta::new(written.metadata.clone(), &self.strings);
                let ours =
                    meta.label(MANAGED_BY_LABEL).map(|value| &**value) == Some(MANAGED_BY_VALUE);
                if csv_of(&meta).is_some() || ours {
                    state.insert(key, meta, owners, Some(version));
                }
            }
            _ => {}
        }
    }
}
