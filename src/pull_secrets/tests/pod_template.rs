use k8s_openapi::api::core::v1::PodSpec;

use super::{references, strings};
use crate::pull_secrets::pod_template::{inject, pod_service_account, remove};

fn pod_spec(names: Option<&[&str]>) -> PodSpec {
    PodSpec {
        image_pull_secrets: names.map(references),
        ..PodSpec::default()
    }
}

fn names(spec: &PodSpec) -> Vec<&str> {
    spec.image_pull_secrets
        .iter()
        .flatten()
        .map(|entry| entry.name.as_str())
        .collect()
}

#[test]
fn inject_keeps_existing_entries_first_and_appends_ours_sorted() {
    let mut spec = pod_spec(Some(&["vendor-pull", "b-copy"]));
    assert!(inject(
        &mut spec,
        &strings(&["c-copy", "b-copy", "a-copy", "", "c-copy"])
    ));
    assert_eq!(names(&spec), ["vendor-pull", "b-copy", "a-copy", "c-copy"]);
    assert!(
        !inject(&mut spec, &strings(&["a-copy", "c-copy"])),
        "idempotent"
    );
}

#[test]
fn inject_into_a_template_without_pull_secrets() {
    let mut spec = pod_spec(None);
    assert!(!inject(&mut spec, &[]));
    assert_eq!(
        spec.image_pull_secrets, None,
        "nothing to add: field stays absent"
    );
    assert!(inject(&mut spec, &strings(&["copy"])));
    assert_eq!(names(&spec), ["copy"]);
}

#[test]
fn remove_drops_only_the_named_entries() {
    let mut spec = pod_spec(Some(&["vendor-pull", "copy", ""]));
    assert!(remove(&mut spec, &strings(&["copy", ""])));
    assert_eq!(names(&spec), ["vendor-pull", ""]);
    assert!(!remove(&mut spec, &strings(&["copy"])));
    let mut ours_only = pod_spec(Some(&["copy"]));
    assert!(remove(&mut ours_only, &strings(&["copy"])));
    assert_eq!(ours_only.image_pull_secrets, None);
}

#[test]
fn pods_that_name_no_service_account_run_as_default() {
    let mut spec = pod_spec(None);
    assert_eq!(pod_service_account(&spec), "default");
    spec.service_account_name = Some(String::new());
    assert_eq!(pod_service_account(&spec), "default", "empty means unset");
    spec.service_account = Some("legacy-field".to_owned());
    assert_eq!(pod_service_account(&spec), "legacy-field");
    spec.service_account_name = Some("operator".to_owned());
    assert_eq!(pod_service_account(&spec), "operator");
}
