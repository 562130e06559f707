//! Tests of [`super`]: the per-kind caches.

use std::collections::BTreeMap;

use super::*;
use crate::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::controller::keys::APPLIED_HASH;

fn meta(name: &str, csv: &str, uid: &str, generation: Option<i64>, rv: &str) -> (Key, CompactMeta) {
    let strings = Strings::new();
    let meta = ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ops".into()),
        uid: Some(uid.into()),
        generation,
        resource_version: Some(rv.into()),
        labels: Some(
            [
                (CSV_LABEL.to_owned(), csv_label_value(csv)),
                (CSV_NAMESPACE_LABEL.to_owned(), label_value("ops")),
            ]
            .into(),
        ),
        ..ObjectMeta::default()
    };
    (key_of(&meta, &strings), CompactMeta::new(meta, &strings))
}

fn key(name: &str) -> Key {
    ("ops".into(), name.into())
}

fn apply(state: &mut KindState, (key, meta): (Key, CompactMeta)) {
    state.apply((key, meta, None));
}

#[test]
fn objects_are_found_by_their_csv_and_leave_its_index_when_deleted_or_relabelled() {
    let mut state = KindState::default();
    apply(&mut state, meta("a", "widget.v1", "1", None, "5"));
    apply(&mut state, meta("b", "widget.v1", "2", None, "6"));
    apply(&mut state, meta("c", "gadget.v1", "3", None, "7"));
    let index: CsvIndex = (
        label_value("ops").into(),
        csv_label_value("widget.v1").into(),
    );
    assert_eq!(state.by_csv[&index].len(), 2);
    state.remove(&key("a"));
    apply(&mut state, meta("b", "gadget.v1", "2", None, "8"));
    assert!(!state.by_csv.contains_key(&index));
    let other: CsvIndex = (
        label_value("ops").into(),
        csv_label_value("gadget.v1").into(),
    );
    assert_eq!(state.by_csv[&other].len(), 2);
}

#[test]
fn a_verified_version_survives_updates_and_relists_of_the_same_object_only() {
    let mut state = KindState::default();
    apply(&mut state, meta("a", "w", "1", Some(2), "5"));
    let key = key("a");
    state.objects.get_mut(&key).unwrap().verified = Some(Verified::Generation(2));
    // A status write: new resourceVersion, same generation.
    apply(&mut state, meta("a", "w", "1", Some(2), "6"));
    assert!(state.objects[&key].is_verified());
    let (key_a, meta_a) = meta("a", "w", "1", Some(3), "9");
    state.replace_all(vec![(key_a, meta_a, None)]);
    let entry = &state.objects[&key];
    assert_eq!(entry.verified, Some(Verified::Generation(2)));
    assert!(!entry.is_verified(), "the spec changed");
    // Deleted and created again under the same name: a new object, nothing verified.
    apply(&mut state, meta("a", "w", "2", Some(1), "10"));
    assert_eq!(state.objects[&key].verified, None);
}

const RBAC: &str = "rbac.authorization.k8s.io/v1";

/// An OperatorGroup role at `rv` applied with content hash `hash`, whose fields `managers`
/// (manager, fieldsV1) own as the server records them.
fn role(rv: &str, hash: &str, managers: &[(&str, serde_json::Value)]) -> ObjectMeta {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{FieldsV1, ManagedFieldsEntry};
    ObjectMeta {
        name: Some("olm.og.tenant.admin-x".into()),
        uid: Some("u1".into()),
        resource_version: Some(rv.into()),
        labels: Some([(MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned())].into()),
        annotations: Some([(APPLIED_HASH.to_owned(), hash.to_owned())].into()),
        managed_fields: Some(
            managers
                .iter()
                .map(|(manager, fields)| ManagedFieldsEntry {
                    manager: Some((*manager).to_owned()),
                    operation: Some("Apply".into()),
                    fields_v1: Some(FieldsV1(fields.clone())),
                    ..ManagedFieldsEntry::default()
                })
                .collect(),
        ),
        ..ObjectMeta::default()
    }
}

fn opcat_fields() -> (&'static str, serde_json::Value) {
    (
        crate::api::FIELD_MANAGER,
        serde_json::json!({"f:aggregationRule": {}, "f:metadata": {"f:labels": {}}}),
    )
}

fn aggregation_fields() -> (&'static str, serde_json::Value) {
    (
        super::super::field_owners::AGGREGATION_MANAGER,
        serde_json::json!({"f:rules": {}}),
    )
}

fn watch_shows(objects: &OwnedObjects, meta: ObjectMeta) {
    let cache = objects
        .kind(RBAC, "ClusterRole")
        .expect("ClusterRoles are cached");
    let seen = observed("ClusterRole", meta, &objects.strings);
    cache.state.write().expect("not poisoned").apply(seen);
}

fn opcat_wrote(objects: &OwnedObjects, meta: ObjectMeta) {
    objects.verified(&DynamicObject {
        types: Some(kube::api::TypeMeta {
            api_version: RBAC.into(),
            kind: "ClusterRole".into(),
        }),
        metadata: meta,
        data: serde_json::Value::Null,
    });
}

fn verified(objects: &OwnedObjects) -> bool {
    let role = objects.get(RBAC, "ClusterRole", None, "olm.og.tenant.admin-x");
    role.expect("cached").verified
}

#[test]
fn a_role_the_aggregation_controller_filled_stays_verified_whichever_is_seen_first() {
    let written = role("1", "h1", &[opcat_fields()]);
    let aggregated = role("2", "h1", &[opcat_fields(), aggregation_fields()]);
    // The write's response first, then the watch's two events.
    let objects = OwnedObjects::new();
    opcat_wrote(&objects, written.clone());
    watch_shows(&objects, written.clone());
    watch_shows(&objects, aggregated.clone());
    assert!(verified(&objects));
    // The watch's two events first, then the response.
    let objects = OwnedObjects::new();
    watch_shows(&objects, written.clone());
    watch_shows(&objects, aggregated);
    assert!(!verified(&objects), "nothing verified yet");
    opcat_wrote(&objects, written);
    assert!(verified(&objects));
}

#[test]
fn anyone_else_changing_a_role_makes_it_unverified() {
    let written = role("1", "h1", &[opcat_fields()]);
    // Someone labels it: their manager owns a field.
    let labelled = role(
        "2",
        "h1",
        &[
            opcat_fields(),
            aggregation_fields(),
            (
                "kubectl-label",
                serde_json::json!({"f:metadata": {"f:labels": {"f:x": {}}}}),
            ),
        ],
    );
    // Someone removes the aggregationRule: it leaves opcat's fields.
    let stripped = role(
        "2",
        "h1",
        &[
            (
                crate::api::FIELD_MANAGER,
                serde_json::json!({"f:metadata": {"f:labels": {}}}),
            ),
            aggregation_fields(),
        ],
    );
    for changed in [labelled, stripped] {
        let objects = OwnedObjects::new();
        opcat_wrote(&objects, written.clone());
        watch_shows(&objects, changed.clone());
        assert!(!verified(&objects));
        // Nor does the response of opcat's write, arriving after it, verify the later state.
        let objects = OwnedObjects::new();
        watch_shows(&objects, changed);
        opcat_wrote(&objects, written.clone());
        assert!(!verified(&objects));
    }
}

#[test]
fn a_write_the_watch_has_not_shown_yet_is_the_cached_state() {
    let objects = OwnedObjects::new();
    let empty = role(
        "1",
        "h0",
        &[(
            crate::api::FIELD_MANAGER,
            serde_json::json!({"f:rules": {}}),
        )],
    );
    watch_shows(&objects, empty.clone());
    opcat_wrote(&objects, empty);
    // opcat writes the role again (its APIs arrived) while the watch still shows version 1.
    let aggregating = role("3", "h1", &[opcat_fields()]);
    let write = |written: ObjectMeta| {
        objects.verified_since(
            Some("1"),
            &DynamicObject {
                types: Some(kube::api::TypeMeta {
                    api_version: RBAC.into(),
                    kind: "ClusterRole".into(),
                }),
                metadata: written,
                data: serde_json::Value::Null,
            },
        );
    };
    write(aggregating.clone());
    let cached = objects
        .get(RBAC, "ClusterRole", None, "olm.og.tenant.admin-x")
        .expect("cached");
    assert!(cached.verified, "no read before the watch catches up");
    assert_eq!(cached.meta.resource_version.as_deref(), Some("3"));
    // The watch catches up, then shows the aggregation controller's write.
    watch_shows(&objects, aggregating);
    watch_shows(
        &objects,
        role("4", "h1", &[opcat_fields(), aggregation_fields()]),
    );
    assert!(verified(&objects));
    // A stale `seen` (the watch moved on since) does not roll the cache back.
    write(role("3", "h1", &[opcat_fields()]));
    let cached = objects
        .get(RBAC, "ClusterRole", None, "olm.og.tenant.admin-x")
        .expect("cached");
    assert_eq!(cached.meta.resource_version.as_deref(), Some("4"));
    assert!(cached.verified);
}

#[test]
fn a_label_is_looked_up_and_component_labels_left_out_without_restoring_them() {
    let owned = OwnedObjects::new();
    let cache = owned
        .kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        .expect("CRDs are cached");
    let strings = &owned.strings;
    let mut labels: BTreeMap<String, String> = (0..3)
        .map(|i| {
            (
                format!("operators.coreos.com/widget.team-{i}"),
                String::new(),
            )
        })
        .collect();
    labels.insert(CSV_LABEL.to_owned(), csv_label_value("widget.v1"));
    let crd = ObjectMeta {
        name: Some("widgets.example.com".into()),
        uid: Some("1".into()),
        resource_version: Some("5".into()),
        labels: Some(labels),
        ..ObjectMeta::default()
    };
    cache.state.write().unwrap().apply((
        key_of(&crd, strings),
        CompactMeta::new(crd, strings),
        None,
    ));
    let at = (None, "widgets.example.com");
    let (version, kind) = ("apiextensions.k8s.io/v1", "CustomResourceDefinition");
    let component = "operators.coreos.com/widget.team-1";
    assert_eq!(owned.has_label(version, kind, at, component), Some(true));
    assert_eq!(
        owned.has_label(version, kind, at, "operators.coreos.com/widget.team-9"),
        Some(false)
    );
    assert_eq!(
        owned.has_label(version, kind, (None, "other"), component),
        None
    );
    let trimmed = owned
        .get_without_labels(version, kind, at, "operators.coreos.com/")
        .expect("cached");
    let keys: Vec<String> = trimmed
        .meta
        .labels
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, [CSV_LABEL]);
}
