use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};

use super::{MARKER, NAMESPACE, catalog, dockerconfig, source};
use crate::pull_secrets::copy::{
    ConflictReason, CopyAction, CopyChanges, CopyError, DOCKERCFG_KEY, DOCKERCFG_TYPE,
    desired_copy, is_ours_to_write, plan_copy, validate_source, with_components,
};
use crate::pull_secrets::names::{
    CATALOG_NAME_LABEL, MANAGED_LABEL, MANAGED_VALUE, SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL,
    SOURCE_UID_ANNOTATION,
};
use crate::pull_secrets::owners::CsvOwner;
use crate::pull_secrets::scoping::CopyScope;

fn owner(name: &str) -> CsvOwner {
    CsvOwner {
        name: name.to_owned(),
        uid: format!("uid-{name}"),
    }
}

fn desired(source_secret: &Secret, owners: &[CsvOwner]) -> Secret {
    desired_copy(
        source_secret,
        &catalog(),
        "quay-pull",
        NAMESPACE,
        owners,
        &CopyScope::Whole,
    )
    .expect("pull secret")
    .expect("whole copies are always made")
}

/// `desired` as the API server returns it after creation: server-set metadata added.
fn as_stored(secret: &Secret) -> Secret {
    let mut stored = secret.clone();
    let meta = &mut stored.metadata;
    meta.uid = Some("uid-copy".to_owned());
    meta.resource_version = Some("42".to_owned());
    meta.generation = Some(1);
    meta.creation_timestamp = Some(Time(super::at(0)));
    meta.managed_fields = Some(vec![Default::default()]);
    stored
}

#[test]
fn copy_has_same_type_and_data_and_our_marks() {
    let source_secret = source("quay-pull", MARKER);
    let copy = desired(
        &source_secret,
        &[owner("b-operator.v1"), owner("a-operator.v2")],
    );
    let meta = &copy.metadata;
    assert_eq!(
        meta.name.as_deref(),
        Some(catalog().copy_name("quay-pull").as_str())
    );
    assert_eq!(meta.namespace.as_deref(), Some(NAMESPACE));
    assert_eq!(copy.type_, source_secret.type_);
    assert_eq!(copy.data, source_secret.data);
    let labels = meta.labels.clone().unwrap_or_default();
    assert_eq!(labels[MANAGED_LABEL], "true");
    assert_eq!(labels[SOURCE_NAMESPACE_LABEL], "olm");
    assert_eq!(labels[SOURCE_NAME_LABEL], "quay-pull");
    assert_eq!(labels[CATALOG_NAME_LABEL], "private-catalog");
    let annotations = meta.annotations.clone().unwrap_or_default();
    assert_eq!(annotations[SOURCE_UID_ANNOTATION], "uid-source-quay-pull");
    let owners = meta.owner_references.clone().unwrap_or_default();
    let names: Vec<&str> = owners.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["a-operator.v2", "b-operator.v1"], "sorted by name");
    assert!(owners.iter().all(|o| o.controller == Some(false)));
    assert!(owners.iter().all(|o| o.block_owner_deletion == Some(false)));
    assert!(owners.iter().all(|o| o.kind == "ClusterServiceVersion"));
    assert_eq!(
        copy.immutable, None,
        "copies stay mutable for in-place rotation"
    );
}

#[test]
fn only_pull_secret_types_are_copied() {
    let mut opaque = source("quay-pull", MARKER);
    opaque.type_ = Some("Opaque".to_owned());
    let error = desired_copy(
        &opaque,
        &catalog(),
        "quay-pull",
        NAMESPACE,
        &[],
        &CopyScope::Whole,
    )
    .unwrap_err();
    assert!(matches!(error, CopyError::NotAPullSecret { .. }));
    let message = error.to_string();
    assert!(
        message.contains("olm/quay-pull") && message.contains("\"Opaque\""),
        "{message}"
    );

    let mut legacy = source("quay-pull", MARKER);
    legacy.type_ = Some(DOCKERCFG_TYPE.to_owned());
    assert!(matches!(
        validate_source(&legacy),
        Err(CopyError::MissingKey { .. })
    ));
    legacy.data = Some(BTreeMap::from([(
        DOCKERCFG_KEY.to_owned(),
        dockerconfig(MARKER),
    )]));
    assert_eq!(validate_source(&legacy), Ok(DOCKERCFG_TYPE));
}

#[test]
fn missing_copy_is_created() {
    let copy = desired(&source("quay-pull", MARKER), &[owner("op.v1")]);
    assert_eq!(plan_copy(None, &copy), CopyAction::Create(copy.clone()));
}

#[test]
fn converged_copy_needs_no_write_despite_server_metadata_and_foreign_marks() {
    let copy = desired(
        &source("quay-pull", MARKER),
        &[owner("b.v1"), owner("a.v1")],
    );
    let mut stored = as_stored(&copy);
    // Other writers' labels, annotations and owners, and a different owner order.
    stored
        .metadata
        .labels
        .get_or_insert_default()
        .insert("team".into(), "a".into());
    stored
        .metadata
        .annotations
        .get_or_insert_default()
        .insert("note".into(), "x".into());
    let owners = stored.metadata.owner_references.get_or_insert_default();
    owners.reverse();
    owners.push(OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "keeper".into(),
        uid: "uid-cm".into(),
        ..OwnerReference::default()
    });
    assert_eq!(plan_copy(Some(&stored), &copy), CopyAction::InSync);
}

#[test]
fn rotated_source_updates_data_in_place_keeping_name_uid_and_foreign_marks() {
    let old = as_stored(&desired(
        &source("quay-pull", "old-password"),
        &[owner("a.v1")],
    ));
    let mut old = old;
    old.metadata
        .labels
        .get_or_insert_default()
        .insert("team".into(), "a".into());
    let new = desired(&source("quay-pull", "new-password"), &[owner("a.v1")]);
    let CopyAction::Update { secret, changes } = plan_copy(Some(&old), &new) else {
        panic!("expected an in-place update");
    };
    assert_eq!(
        changes,
        CopyChanges {
            data: true,
            metadata: false,
            owners: false
        }
    );
    assert_eq!(secret.data, new.data);
    assert_eq!(secret.metadata.name, old.metadata.name);
    assert_eq!(secret.metadata.uid, old.metadata.uid);
    assert_eq!(secret.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(secret.metadata.labels.unwrap_or_default()["team"], "a");
    assert_eq!(secret.metadata.managed_fields, None);
}

#[test]
fn edited_copy_is_restored() {
    let copy = desired(&source("quay-pull", MARKER), &[owner("a.v1")]);
    let mut edited = as_stored(&copy);
    edited.data = Some(BTreeMap::from([(
        "x".to_owned(),
        ByteString(b"tampered".to_vec()),
    )]));
    edited
        .metadata
        .labels
        .get_or_insert_default()
        .remove(SOURCE_NAME_LABEL);
    edited.metadata.annotations = None;
    let CopyAction::Update { secret, changes } = plan_copy(Some(&edited), &copy) else {
        panic!("expected an update");
    };
    assert!(changes.data && changes.metadata);
    assert_eq!(secret.data, copy.data);
    assert_eq!(secret.metadata.labels, copy.metadata.labels);
    assert_eq!(secret.metadata.annotations, copy.metadata.annotations);
}

#[test]
fn owner_changes_are_an_update_that_keeps_foreign_owners() {
    let stored = as_stored(&desired(
        &source("quay-pull", MARKER),
        &[owner("a.v1"), owner("b.v1")],
    ));
    let mut stored = stored;
    stored
        .metadata
        .owner_references
        .get_or_insert_default()
        .push(OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "keeper".into(),
            uid: "uid-cm".into(),
            ..OwnerReference::default()
        });
    let only_b = desired(&source("quay-pull", MARKER), &[owner("b.v1")]);
    let CopyAction::Update { secret, changes } = plan_copy(Some(&stored), &only_b) else {
        panic!("expected an update");
    };
    assert!(changes.owners && !changes.data);
    let names: Vec<String> = secret
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|o| o.name)
        .collect();
    assert_eq!(names, ["keeper", "b.v1"]);
}

#[test]
fn type_change_recreates_our_copy_only() {
    let stored = as_stored(&desired(&source("quay-pull", MARKER), &[owner("a.v1")]));
    let mut legacy_source = source("quay-pull", MARKER);
    legacy_source.type_ = Some(DOCKERCFG_TYPE.to_owned());
    legacy_source.data = Some(BTreeMap::from([(
        DOCKERCFG_KEY.to_owned(),
        dockerconfig(MARKER),
    )]));
    let legacy = desired(&legacy_source, &[owner("a.v1")]);
    assert_eq!(
        plan_copy(Some(&stored), &legacy),
        CopyAction::Recreate {
            uid: Some("uid-copy".to_owned()),
            resource_version: Some("42".to_owned()),
            secret: legacy.clone(),
        }
    );
    // The same clash on a Secret that is not ours is a conflict, never a recreate.
    let mut foreign = stored;
    foreign.metadata.labels = None;
    assert!(matches!(
        plan_copy(Some(&foreign), &legacy),
        CopyAction::Conflict(_)
    ));
}

#[test]
fn immutable_copy_with_new_data_is_recreated_but_metadata_fixes_are_in_place() {
    let mut stored = as_stored(&desired(&source("quay-pull", "old"), &[owner("a.v1")]));
    stored.immutable = Some(true);
    let rotated = desired(&source("quay-pull", "new"), &[owner("a.v1")]);
    assert!(matches!(
        plan_copy(Some(&stored), &rotated),
        CopyAction::Recreate { .. }
    ));
    let same_data_new_owner = desired(&source("quay-pull", "old"), &[owner("b.v1")]);
    assert!(matches!(
        plan_copy(Some(&stored), &same_data_new_owner),
        CopyAction::Update { .. }
    ));
}

#[test]
fn immutable_source_rotates_in_place_into_a_mutable_copy() {
    let stored = as_stored(&desired(&source("quay-pull", "old"), &[owner("a.v1")]));
    let mut immutable_source = source("quay-pull", "new");
    immutable_source.immutable = Some(true);
    immutable_source.metadata.uid = Some("uid-recreated-source".to_owned());
    let copy = desired(&immutable_source, &[owner("a.v1")]);
    assert_eq!(copy.immutable, None);
    let CopyAction::Update { changes, .. } = plan_copy(Some(&stored), &copy) else {
        panic!("expected an in-place update");
    };
    assert!(
        changes.data && changes.metadata,
        "new data and new source uid"
    );
}

#[test]
fn foreign_secret_with_our_name_is_a_conflict_and_untouched() {
    let copy = desired(&source("quay-pull", MARKER), &[owner("a.v1")]);
    let foreign = Secret {
        metadata: ObjectMeta {
            name: copy.metadata.name.clone(),
            namespace: Some(NAMESPACE.to_owned()),
            labels: Some(BTreeMap::from([("app".into(), "mine".into())])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    let CopyAction::Conflict(conflict) = plan_copy(Some(&foreign), &copy) else {
        panic!("expected a conflict");
    };
    assert_eq!(conflict.reason, ConflictReason::NotManaged);
    assert_eq!(conflict.name, copy.metadata.name.unwrap_or_default());
    assert!(
        conflict
            .to_string()
            .contains("team-a/private-catalog-quay-pull-")
    );
    // `managed=false` is not ours either.
    let mut not_true = foreign.clone();
    not_true.metadata.labels = Some(BTreeMap::from([(MANAGED_LABEL.into(), "false".into())]));
    assert!(matches!(
        plan_copy(Some(&not_true), &desired(&source("quay-pull", MARKER), &[])),
        CopyAction::Conflict(_)
    ));
}

#[test]
fn managed_copy_of_another_source_is_a_conflict() {
    let copy = desired(&source("quay-pull", MARKER), &[owner("a.v1")]);
    let mut other = as_stored(&copy);
    other
        .metadata
        .labels
        .get_or_insert_default()
        .insert(SOURCE_NAME_LABEL.into(), "someone-else".into());
    let CopyAction::Conflict(conflict) = plan_copy(Some(&other), &copy) else {
        panic!("expected a conflict");
    };
    assert!(matches!(
        conflict.reason,
        ConflictReason::OtherSource { .. }
    ));
    assert!(
        conflict.to_string().contains("olm/someone-else"),
        "{conflict}"
    );
}

/// A Secret named like a copy, with only `labels`.
fn labelled(labels: &[(&str, &str)]) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some("copy".into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ObjectMeta::default()
        },
        ..Secret::default()
    }
}

#[test]
fn only_opcats_copy_of_the_same_catalog_is_ours_to_write() {
    let ours = [
        (MANAGED_LABEL, MANAGED_VALUE),
        (SOURCE_NAMESPACE_LABEL, "olm"),
        (CATALOG_NAME_LABEL, "examples"),
    ];
    let desired = labelled(&ours);
    assert!(is_ours_to_write(&labelled(&ours), &desired));
    assert!(!is_ours_to_write(&labelled(&[]), &desired), "foreign");
    assert!(
        !is_ours_to_write(&labelled(&ours[1..]), &desired),
        "without opcat's label"
    );
    let other_catalog = [
        (MANAGED_LABEL, MANAGED_VALUE),
        (SOURCE_NAMESPACE_LABEL, "olm"),
        (CATALOG_NAME_LABEL, "other"),
    ];
    assert!(!is_ours_to_write(&labelled(&other_catalog), &desired));
    // A copy of another source of the same catalog under this name (a hash clash) is not ours.
    let mut named = ours.to_vec();
    named.push((SOURCE_NAME_LABEL, "quay-pull"));
    let mut other_source = ours.to_vec();
    other_source.push((SOURCE_NAME_LABEL, "mirror-pull"));
    assert!(is_ours_to_write(&labelled(&named), &labelled(&named)));
    assert!(!is_ours_to_write(
        &labelled(&other_source),
        &labelled(&named)
    ));
}

#[test]
fn a_copy_carries_the_component_label_of_each_install_using_it() {
    let source_secret = source("quay-pull", MARKER);
    let a = "operators.coreos.com/a-operator.ns";
    let b = "operators.coreos.com/b-operator.ns";
    let both = with_components(
        desired(&source_secret, &[owner("a.v1"), owner("b.v1")]),
        &[a, b].into(),
    );
    let labels = both.metadata.labels.clone().unwrap();
    assert_eq!((labels[a].as_str(), labels[b].as_str()), ("", ""));
    let stored = as_stored(&both);
    assert_eq!(plan_copy(Some(&stored), &both), CopyAction::InSync);

    // b's install goes: its label goes with it, a's stays.
    let only_a = with_components(desired(&source_secret, &[owner("a.v1")]), &[a].into());
    let CopyAction::Update { secret, changes } = plan_copy(Some(&stored), &only_a) else {
        panic!("the copy must be updated");
    };
    assert!(changes.metadata);
    let labels = secret.metadata.labels.unwrap();
    assert!(
        labels.contains_key(a) && !labels.contains_key(b),
        "{labels:?}"
    );

    // Planned without components (the rotation fast path): the labels stay as they are.
    let rotated = desired(&source_secret, &[owner("a.v1"), owner("b.v1")]);
    assert_eq!(plan_copy(Some(&stored), &rotated), CopyAction::InSync);
}
