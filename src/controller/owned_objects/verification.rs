//! What the owned-object caches remember of an object's content: the version opcat last saw
//! whole and in line with the render ([`Verified`]), carried over the writes of tolerated
//! writers ([`super::super::field_owners`]).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::super::compact_meta::CompactMeta;
use super::super::field_owners::FieldOwners;
use super::super::keys::APPLIED_HASH;

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
pub(super) fn only_tolerated_since(now: Option<FieldOwners>, before: Option<FieldOwners>) -> bool {
    matches!((now, before), (Some(now), Some(before)) if now.only_tolerated_since(&before))
}
