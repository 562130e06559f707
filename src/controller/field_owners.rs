//! Who owns the fields of an object opcat applied, read from `metadata.managedFields` and
//! reduced to what the drift check of [`super::owned_objects`] needs: a fingerprint of opcat's
//! own entries, and whether every other writer is one whose writes leave opcat's fields alone.
//!
//! Kinds without `metadata.generation` are checked by `resourceVersion`, which any write bumps.
//! A ClusterRole with an `aggregationRule` is written by kube-controller-manager's
//! clusterrole-aggregation controller right after each of opcat's writes: it applies `rules`
//! (server-side apply, manager `clusterrole-aggregation-controller`, `force`;
//! `pkg/controller/clusterroleaggregation`). Without this module every such role opcat wrote
//! looked changed by someone else and was read again (3 GETs per OperatorGroup,
//! scripts/bench-scale.sh). What anyone else does shows in managedFields: a field they set or
//! change becomes theirs (an update, or an apply with force), and a field they remove leaves
//! opcat's entry, so its fingerprint changes.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ManagedFieldsEntry, ObjectMeta};
use serde_json::json;

use crate::api::FIELD_MANAGER;

/// The field manager of kube-controller-manager's ClusterRole aggregation.
pub const AGGREGATION_MANAGER: &str = "clusterrole-aggregation-controller";

/// Writers whose writes opcat tolerates: kind, manager, and the only fields it may own.
fn tolerated(kind: &str, entry: &ManagedFieldsEntry) -> bool {
    kind == "ClusterRole"
        && entry.manager.as_deref() == Some(AGGREGATION_MANAGER)
        && entry.subresource.as_deref().unwrap_or_default().is_empty()
        && entry.fields_v1.as_ref().map(|fields| &fields.0) == Some(&json!({"f:rules": {}}))
}

/// Whether opcat's checks of `kind` use [`FieldOwners`] (kinds with a tolerated writer).
pub fn applies_to(kind: &str) -> bool {
    kind == "ClusterRole"
}

/// The owners of an object's fields, as far as the drift check cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldOwners {
    /// Fingerprint of opcat's own entries (operation, subresource and fields; not the time).
    own: u64,
    /// Whether opcat owns fields and every other writer is a tolerated one.
    only_tolerated_others: bool,
}

impl FieldOwners {
    /// The owners of `meta`'s fields; `None` for kinds without a tolerated writer (their check
    /// stays by version alone).
    pub fn of(kind: &str, meta: &ObjectMeta) -> Option<Self> {
        if !applies_to(kind) {
            return None;
        }
        let entries = meta.managed_fields.as_deref().unwrap_or_default();
        let mut own: Vec<String> = entries
            .iter()
            .filter(|entry| entry.manager.as_deref() == Some(FIELD_MANAGER))
            .map(|entry| json!([entry.operation, entry.subresource, entry.fields_v1]).to_string())
            .collect();
        own.sort();
        let mut hasher = DefaultHasher::new();
        own.hash(&mut hasher);
        // A server that records no managedFields (or none of opcat's) proves nothing.
        let only_tolerated_others = !own.is_empty()
            && entries.iter().all(|entry| {
                entry.manager.as_deref() == Some(FIELD_MANAGER) || tolerated(kind, entry)
            });
        Some(Self {
            own: hasher.finish(),
            only_tolerated_others,
        })
    }

    /// Whether this state differs from `before` only by what tolerated writers did: opcat's
    /// own fields are the same, and no one else owns a field.
    pub fn only_tolerated_since(&self, before: &Self) -> bool {
        self.only_tolerated_others && self.own == before.own
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
    use serde_json::{Value, json};

    use super::*;

    fn entry(manager: &str, operation: &str, fields: Value) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: Some(manager.to_owned()),
            operation: Some(operation.to_owned()),
            fields_type: Some("FieldsV1".to_owned()),
            fields_v1: Some(FieldsV1(fields)),
            ..ManagedFieldsEntry::default()
        }
    }

    fn meta(entries: Vec<ManagedFieldsEntry>) -> ObjectMeta {
        ObjectMeta {
            managed_fields: Some(entries),
            ..ObjectMeta::default()
        }
    }

    fn opcat() -> ManagedFieldsEntry {
        entry(
            FIELD_MANAGER,
            "Apply",
            json!({"f:aggregationRule": {"f:clusterRoleSelectors": {}}, "f:metadata": {"f:labels": {}}}),
        )
    }

    fn owners(entries: Vec<ManagedFieldsEntry>) -> FieldOwners {
        FieldOwners::of("ClusterRole", &meta(entries)).expect("ClusterRoles are checked")
    }

    #[test]
    fn the_aggregation_controller_writing_rules_is_tolerated() {
        let applied = owners(vec![opcat()]);
        let aggregated = owners(vec![
            opcat(),
            entry(AGGREGATION_MANAGER, "Apply", json!({"f:rules": {}})),
        ]);
        assert!(aggregated.only_tolerated_since(&applied));
    }

    #[test]
    fn anyone_else_owning_a_field_is_not() {
        let applied = owners(vec![opcat()]);
        let edited = owners(vec![
            opcat(),
            entry(
                "kubectl-edit",
                "Update",
                json!({"f:metadata": {"f:labels": {"f:team": {}}}}),
            ),
        ]);
        assert!(!edited.only_tolerated_since(&applied));
        // The aggregation controller owning more than `rules` is someone else's change too.
        let wider = owners(vec![
            opcat(),
            entry(
                AGGREGATION_MANAGER,
                "Apply",
                json!({"f:rules": {}, "f:aggregationRule": {}}),
            ),
        ]);
        assert!(!wider.only_tolerated_since(&applied));
    }

    #[test]
    fn a_field_removed_from_opcats_entry_is_a_change() {
        let applied = owners(vec![opcat()]);
        let removed = owners(vec![entry(
            FIELD_MANAGER,
            "Apply",
            json!({"f:metadata": {"f:labels": {}}}),
        )]);
        assert!(!removed.only_tolerated_since(&applied));
    }

    #[test]
    fn no_managed_fields_prove_nothing_and_other_kinds_are_not_checked() {
        let none = owners(Vec::new());
        assert!(!none.only_tolerated_since(&none));
        assert_eq!(FieldOwners::of("Deployment", &meta(vec![opcat()])), None);
    }
}
