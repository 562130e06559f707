//! Tests of [`super`]: the per-kind caches.

use super::*;

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
    state.apply(key, meta);
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
    state.replace_all(vec![meta("a", "w", "1", Some(3), "9")]);
    let entry = &state.objects[&key];
    assert_eq!(entry.verified, Some(Verified::Generation(2)));
    assert!(!entry.is_verified(), "the spec changed");
    // Deleted and created again under the same name: a new object, nothing verified.
    apply(&mut state, meta("a", "w", "2", Some(1), "10"));
    assert_eq!(state.objects[&key].verified, None);
}
