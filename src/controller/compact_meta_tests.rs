//! Tests of [`super`]: the compact metadata of the owned-object caches.

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
fn labels_with_a_prefix_are_left_out_and_only_those() {
    let strings = Strings::new();
    let labels = [
        "app",
        "operators.coreos.co",
        "operators.coreos.com/gadget.team-b",
        "operators.coreos.com/widget.team-a",
        "operators.coreos.comx",
        "zone",
    ];
    let meta = ObjectMeta {
        labels: Some(labels.iter().map(|k| ((*k).into(), "v".into())).collect()),
        ..full()
    };
    let compact = CompactMeta::new(meta, &strings);
    let left = compact.to_meta_without_labels("", "crd", "operators.coreos.com/");
    let kept: Vec<&str> = left.labels.iter().flatten().map(|(k, _)| &**k).collect();
    assert_eq!(
        kept,
        [
            "app",
            "operators.coreos.co",
            "operators.coreos.comx",
            "zone"
        ]
    );
    // Everything else as `to_meta` restores it.
    let whole = compact.to_meta("", "crd");
    assert_eq!(
        ObjectMeta {
            labels: None,
            ..left
        },
        ObjectMeta {
            labels: None,
            ..whole
        }
    );
    let only = CompactMeta::new(
        ObjectMeta {
            labels: Some([("operators.coreos.com/w.a".into(), String::new())].into()),
            ..ObjectMeta::default()
        },
        &strings,
    );
    let none = only.to_meta_without_labels("", "crd", "operators.coreos.com/");
    assert_eq!(none.labels, None);
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
