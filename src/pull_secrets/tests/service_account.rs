use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ServiceAccount;
use serde_json::json;

use super::{at, entries, service_account, strings};
use crate::pull_secrets::names::{ADDED_PULL_SECRETS_ANNOTATION, PULL_SECRET_RESTORES_ANNOTATION};
use crate::pull_secrets::service_account::{
    RestorePolicy, ServiceAccountEdit, attach, detach, reconcile, recorded, withheld,
};

const OPENSHIFT: &str = "builder-dockercfg-x7k2p";

fn annotation(sa: &ServiceAccount, key: &str) -> Option<String> {
    sa.metadata.annotations.as_ref()?.get(key).cloned()
}

fn applied(sa: &ServiceAccount, edit: &ServiceAccountEdit) -> ServiceAccount {
    let mut sa = sa.clone();
    edit.apply_to(&mut sa);
    sa
}

fn attach_now(sa: &ServiceAccount, names: &[&str]) -> Option<ServiceAccountEdit> {
    attach(sa, &strings(names), at(0), &RestorePolicy::default())
}

#[test]
fn attach_appends_after_foreign_entries_and_records_what_it_added() {
    let sa = service_account("operator", Some(&["user-pull", OPENSHIFT]));
    let edit = attach_now(&sa, &["zz-copy", "aa-copy"]).expect("a write");
    assert_eq!(edit.added, ["aa-copy", "zz-copy"]);
    assert_eq!(edit.resource_version.as_deref(), Some("1"));
    let sa = applied(&sa, &edit);
    assert_eq!(entries(&sa), ["user-pull", OPENSHIFT, "aa-copy", "zz-copy"]);
    assert_eq!(
        annotation(&sa, ADDED_PULL_SECRETS_ANNOTATION).as_deref(),
        Some(r#"["aa-copy","zz-copy"]"#)
    );
    assert_eq!(
        attach_now(&sa, &["aa-copy", "zz-copy"]),
        None,
        "second attach writes nothing"
    );
}

#[test]
fn attach_never_duplicates_skips_empty_names_and_keeps_foreign_duplicates() {
    let sa = service_account("operator", Some(&["user-pull", "", "user-pull"]));
    let edit = attach_now(&sa, &["copy", "copy", "", "user-pull"]).expect("a write");
    let sa = applied(&sa, &edit);
    assert_eq!(entries(&sa), ["user-pull", "", "user-pull", "copy"]);
    assert_eq!(recorded(&sa), BTreeSet::from(["copy".to_owned()]));
    assert_eq!(attach_now(&sa, &[""]), None);
}

#[test]
fn a_name_the_user_listed_first_stays_after_detach() {
    let sa = service_account("operator", Some(&["copy"]));
    assert_eq!(
        attach_now(&sa, &["copy"]),
        None,
        "already there: not ours, no write"
    );
    assert_eq!(detach(&sa, &strings(&["copy"])), None);
    assert_eq!(entries(&sa), ["copy"]);
}

#[test]
fn detach_removes_exactly_the_recorded_names_and_the_annotations() {
    let sa = service_account("operator", Some(&["user-pull", OPENSHIFT]));
    let sa = applied(
        &sa,
        &attach_now(&sa, &["copy-a", "copy-b"]).expect("attach"),
    );
    // Another writer appends after ours; opcat's record is unchanged.
    let mut sa = sa;
    sa.image_pull_secrets
        .get_or_insert_default()
        .push(Default::default());
    sa.image_pull_secrets.get_or_insert_default().push(
        k8s_openapi::api::core::v1::LocalObjectReference {
            name: "late-user".to_owned(),
        },
    );
    let edit = detach(&sa, &strings(&["copy-a", "copy-b", "user-pull"])).expect("a write");
    assert_eq!(edit.removed, ["copy-a", "copy-b"]);
    let sa = applied(&sa, &edit);
    assert_eq!(entries(&sa), ["user-pull", OPENSHIFT, "", "late-user"]);
    assert_eq!(sa.metadata.annotations, None, "no opcat annotation remains");
}

#[test]
fn partial_detach_keeps_the_rest_recorded() {
    let sa = service_account("operator", None);
    let sa = applied(
        &sa,
        &attach_now(&sa, &["copy-a", "copy-b"]).expect("attach"),
    );
    let sa = applied(&sa, &detach(&sa, &strings(&["copy-a"])).expect("detach"));
    assert_eq!(entries(&sa), ["copy-b"]);
    assert_eq!(recorded(&sa), BTreeSet::from(["copy-b".to_owned()]));
}

#[test]
fn detach_of_everything_on_a_list_opcat_created_removes_the_list() {
    let sa = service_account("default", None);
    let sa = applied(&sa, &attach_now(&sa, &["copy"]).expect("attach"));
    let sa = applied(&sa, &detach(&sa, &strings(&["copy"])).expect("detach"));
    assert_eq!(sa.image_pull_secrets, None);
    assert_eq!(sa.metadata.annotations, None);
}

#[test]
fn unreadable_record_removes_nothing_and_is_cleaned_up() {
    let mut sa = service_account("operator", Some(&["copy", "user-pull"]));
    sa.metadata.annotations = Some(
        [(
            ADDED_PULL_SECRETS_ANNOTATION.to_owned(),
            "not json".to_owned(),
        )]
        .into(),
    );
    let edit = detach(&sa, &strings(&["copy"])).expect("the broken annotation is removed");
    assert!(edit.removed.is_empty());
    let sa = applied(&sa, &edit);
    assert_eq!(entries(&sa), ["copy", "user-pull"]);
    assert_eq!(sa.metadata.annotations, None);
}

#[test]
fn entries_another_writer_removes_are_restored_a_bounded_number_of_times() {
    let policy = RestorePolicy::default();
    let names = strings(&["copy"]);
    let mut sa = service_account("operator", Some(&["user-pull"]));
    sa = applied(&sa, &attach(&sa, &names, at(0), &policy).expect("attach"));
    for round in 1..=policy.max_restores {
        sa.image_pull_secrets = Some(vec![Default::default()]); // a writer wipes our entry
        sa.image_pull_secrets.get_or_insert_default()[0].name = "user-pull".to_owned();
        let edit = attach(&sa, &names, at(i64::from(round) * 60), &policy).expect("restore");
        assert_eq!(edit.restored, ["copy"], "round {round}");
        sa = applied(&sa, &edit);
        assert_eq!(entries(&sa), ["user-pull", "copy"]);
    }
    // The writer removes it once more: opcat stops fighting and says so.
    sa.image_pull_secrets = Some(vec![Default::default()]);
    sa.image_pull_secrets.get_or_insert_default()[0].name = "user-pull".to_owned();
    let edit = attach(&sa, &names, at(600), &policy).expect("record the withholding");
    assert_eq!(edit.withheld, ["copy"]);
    assert!(edit.restored.is_empty());
    sa = applied(&sa, &edit);
    assert_eq!(entries(&sa), ["user-pull"]);
    assert_eq!(
        recorded(&sa),
        BTreeSet::new(),
        "an entry that is gone is not recorded"
    );
    assert_eq!(
        withheld(&sa, at(700), &policy),
        BTreeSet::from(["copy".to_owned()])
    );
    assert_eq!(
        attach(&sa, &names, at(700), &policy),
        None,
        "no fight inside the window"
    );
    // After the window, opcat tries again.
    let later = at(60 + 3600);
    let edit = attach(&sa, &names, later, &policy).expect("retry after the window");
    assert_eq!(edit.added, ["copy"]);
    let sa = applied(&sa, &edit);
    assert_eq!(entries(&sa), ["user-pull", "copy"]);
    assert_eq!(
        annotation(&sa, PULL_SECRET_RESTORES_ANNOTATION),
        None,
        "stale window dropped"
    );
}

#[test]
fn restore_bookkeeping_is_removed_on_full_detach() {
    let policy = RestorePolicy::default();
    let names = strings(&["copy"]);
    let mut sa = service_account("operator", None);
    sa = applied(&sa, &attach(&sa, &names, at(0), &policy).expect("attach"));
    sa.image_pull_secrets = None;
    sa = applied(&sa, &attach(&sa, &names, at(10), &policy).expect("restore"));
    assert!(annotation(&sa, PULL_SECRET_RESTORES_ANNOTATION).is_some());
    let sa = applied(&sa, &detach(&sa, &names).expect("detach"));
    assert_eq!(sa.metadata.annotations, None);
    assert_eq!(sa.image_pull_secrets, None);
}

#[test]
fn reconcile_attaches_and_detaches_in_one_edit() {
    let sa = service_account("operator", Some(&["user-pull"]));
    let sa = applied(&sa, &attach_now(&sa, &["old-copy"]).expect("attach"));
    let edit = reconcile(
        &sa,
        &strings(&["new-copy"]),
        &strings(&["old-copy"]),
        at(0),
        &RestorePolicy::default(),
    )
    .expect("one write");
    assert_eq!(
        (edit.added.as_slice(), edit.removed.as_slice()),
        (&["new-copy".to_owned()][..], &["old-copy".to_owned()][..])
    );
    assert_eq!(entries(&applied(&sa, &edit)), ["user-pull", "new-copy"]);
}

fn to_json(sa: &ServiceAccount) -> serde_json::Value {
    serde_json::to_value(sa).expect("serialisable")
}

fn patched(
    document: &serde_json::Value,
    edit: &ServiceAccountEdit,
) -> Result<ServiceAccount, String> {
    let patch: json_patch::Patch =
        serde_json::from_value(edit.json_patch()).map_err(|e| e.to_string())?;
    let mut document = document.clone();
    json_patch::patch(&mut document, &patch).map_err(|e| e.to_string())?;
    serde_json::from_value(document).map_err(|e| e.to_string())
}

#[test]
fn json_patch_creates_a_missing_list_with_add_of_the_whole_list() {
    let sa = service_account("default", None);
    let edit = attach_now(&sa, &["copy"]).expect("attach");
    let patch = edit.json_patch();
    assert_eq!(
        patch[0],
        json!({"op": "test", "path": "/metadata/resourceVersion", "value": "1"})
    );
    assert_eq!(
        patch[1],
        json!({"op": "add", "path": "/imagePullSecrets", "value": [{"name": "copy"}]})
    );
    assert_eq!(patched(&to_json(&sa), &edit), Ok(applied(&sa, &edit)));
}

#[test]
fn json_patch_does_what_apply_to_does() {
    let mut sa = service_account("operator", Some(&["user-pull", OPENSHIFT]));
    sa.metadata.annotations = Some([("keep".to_owned(), "me".to_owned())].into());
    let edit = attach_now(&sa, &["copy"]).expect("attach");
    let attached = patched(&to_json(&sa), &edit).expect("patch applies");
    assert_eq!(attached, applied(&sa, &edit));
    let edit = detach(&attached, &strings(&["copy"])).expect("detach");
    let detached = patched(&to_json(&attached), &edit).expect("patch applies");
    assert_eq!(detached, applied(&attached, &edit));
    assert_eq!(entries(&detached), ["user-pull", OPENSHIFT]);
    assert_eq!(
        detached.metadata.annotations,
        Some([("keep".to_owned(), "me".to_owned())].into())
    );
}

#[test]
fn json_patch_fails_on_a_concurrent_change_instead_of_clobbering_it() {
    let sa = service_account("operator", Some(&["user-pull"]));
    let edit = attach_now(&sa, &["copy"]).expect("attach");
    let mut changed = to_json(&sa);
    changed["imagePullSecrets"] = json!([{"name": "user-pull"}, {"name": "added-meanwhile"}]);
    assert!(patched(&changed, &edit).is_err(), "list test fails");
    let mut bumped = to_json(&sa);
    bumped["metadata"]["resourceVersion"] = json!("2");
    assert!(
        patched(&bumped, &edit).is_err(),
        "resourceVersion test fails"
    );
}

#[test]
fn json_patch_matches_empty_names_as_the_server_renders_them() {
    let sa = service_account("operator", Some(&["", "user-pull"]));
    let edit = attach_now(&sa, &["copy"]).expect("attach");
    let mut from_server = to_json(&sa);
    from_server["imagePullSecrets"] = json!([{}, {"name": "user-pull"}]);
    let result = patched(&from_server, &edit).expect("test op matches {}");
    assert_eq!(entries(&result), ["", "user-pull", "copy"]);
}

#[test]
fn new_and_restored_names_are_appended_together_in_sorted_order() {
    let policy = RestorePolicy::default();
    let sa = service_account("operator", Some(&["user-pull"]));
    let sa = applied(
        &sa,
        &attach(&sa, &strings(&["b-copy"]), at(0), &policy).expect("attach"),
    );
    let mut wiped = sa.clone();
    wiped.image_pull_secrets = Some(vec![Default::default()]);
    wiped.image_pull_secrets.get_or_insert_default()[0].name = "user-pull".to_owned();
    let edit = attach(&wiped, &strings(&["b-copy", "a-copy"]), at(1), &policy).expect("write");
    assert_eq!(
        (edit.added.as_slice(), edit.restored.as_slice()),
        (&["a-copy".to_owned()][..], &["b-copy".to_owned()][..])
    );
    assert_eq!(
        entries(&applied(&wiped, &edit)),
        ["user-pull", "a-copy", "b-copy"]
    );
}

#[test]
fn a_service_account_about_to_be_created_gets_the_names_and_the_record() {
    let mut rendered = service_account("operator", None);
    rendered.metadata.resource_version = None;
    rendered.metadata.uid = None;
    let edit = attach_now(&rendered, &["copy"]).expect("attach");
    assert_eq!(edit.resource_version, None);
    let created = applied(&rendered, &edit);
    assert_eq!(entries(&created), ["copy"]);
    assert_eq!(recorded(&created), BTreeSet::from(["copy".to_owned()]));
}

#[test]
fn detach_removes_one_entry_per_name_opcat_added() {
    let sa = service_account("operator", None);
    let mut sa = applied(&sa, &attach_now(&sa, &["copy"]).expect("attach"));
    // Someone lists the same name again after opcat did.
    sa.image_pull_secrets.get_or_insert_default().push(
        k8s_openapi::api::core::v1::LocalObjectReference {
            name: "copy".to_owned(),
        },
    );
    let sa = applied(&sa, &detach(&sa, &strings(&["copy"])).expect("detach"));
    assert_eq!(entries(&sa), ["copy"], "the other writer's entry stays");
    assert_eq!(sa.metadata.annotations, None);
}
