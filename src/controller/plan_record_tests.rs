use std::collections::BTreeMap;

use serde_json::json;

use super::*;
use crate::api::{Approval, InstallPlanSpec};

fn plan(csvs: &[&str], annotations: &[(&str, &str)]) -> InstallPlan {
    let mut plan = InstallPlan::new(
        "install-abcde",
        InstallPlanSpec {
            source: Some("catalog".into()),
            source_namespace: Some("olm".into()),
            cluster_service_version_names: csvs.iter().map(|c| (*c).to_owned()).collect(),
            approval: Approval::Automatic,
            approved: true,
            generation: Some(1),
        },
    );
    plan.metadata.annotations = Some(
        annotations
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect::<BTreeMap<_, _>>(),
    );
    plan
}

fn entry(name: &str, package: &str, subscription: &str, catalog: &str) -> PlanEntry {
    PlanEntry {
        name: name.into(),
        package: package.into(),
        channel: "stable".into(),
        version: "1.0.0".into(),
        image: format!("registry.example.com/{package}-bundle:v1"),
        catalog_namespace: "olm".into(),
        catalog_name: catalog.into(),
        catalog_digest: "sha256:abc".into(),
        replaces: None,
        subscription: subscription.into(),
        required_by: None,
        properties: vec![],
    }
}

#[test]
fn a_plan_of_several_bundles_round_trips_and_names_each_subscription_s_csv() {
    let dependency = PlanEntry {
        required_by: Some(RequiredBy {
            csv: "widget.v1".into(),
            requirement: "requires package etcd >=0.9.0".into(),
        }),
        ..entry("etcd.v0.9.4", "etcd", "etcd-stable-private-olm", "private")
    };
    let main = entry("widget.v1", "widget", "widgets", "examples");
    let encoded = encode(&[dependency.clone(), main.clone()]);
    let plan = plan(&["etcd.v0.9.4", "widget.v1"], &[(BUNDLES, &encoded)]);
    assert_eq!(entries(&plan).unwrap(), [dependency, main]);
    assert_eq!(csv_for(&plan, "widgets").as_deref(), Some("widget.v1"));
    assert_eq!(
        csv_for(&plan, "etcd-stable-private-olm").as_deref(),
        Some("etcd.v0.9.4")
    );
    assert_eq!(csv_for(&plan, "someone-else"), None);
    assert_eq!(
        catalogs(&plan),
        [
            ("olm".to_owned(), "private".to_owned()),
            ("olm".to_owned(), "examples".to_owned())
        ]
    );
}

#[test]
fn single_bundle_plans_of_older_versions_are_read_from_their_annotations() {
    let old = plan(
        &["widget.v2"],
        &[
            (
                legacy::BUNDLE_IMAGE,
                "registry.example.com/widget-bundle:v2",
            ),
            (legacy::BUNDLE_NAME, "widget.v2"),
            (legacy::PACKAGE, "widget"),
            (legacy::CHANNEL, "stable"),
            (legacy::CATALOG, "olm/examples"),
            (legacy::CATALOG_DIGEST, "sha256:abc"),
            (legacy::REPLACES, "widget.v1"),
            (legacy::SUBSCRIPTION, "widgets"),
        ],
    );
    let read = entries(&old).unwrap();
    assert_eq!(read.len(), 1);
    let bundle = &read[0];
    assert_eq!(bundle.name, "widget.v2");
    assert_eq!(bundle.image, "registry.example.com/widget-bundle:v2");
    assert_eq!(bundle.catalog(), "olm/examples");
    assert_eq!(bundle.replaces.as_deref(), Some("widget.v1"));
    assert_eq!(bundle.subscription, "widgets");
    assert_eq!(csv_for(&old, "anyone").as_deref(), Some("widget.v2"));

    // Without a catalog annotation, the spec names the catalog.
    let bare = plan(&["widget.v1"], &[]);
    let read = entries(&bare).unwrap();
    assert_eq!(read[0].catalog(), "olm/catalog");
    assert_eq!(catalogs(&bare), [("olm".to_owned(), "catalog".to_owned())]);
}

#[test]
fn a_record_that_does_not_match_the_spec_is_refused() {
    let encoded = encode(&[entry("widget.v1", "widget", "widgets", "examples")]);
    let mismatch = plan(&["widget.v2"], &[(BUNDLES, &encoded)]);
    let error = entries(&mismatch).unwrap_err();
    assert!(
        error.to_string().contains(
            "lists [\"widget.v1\"], but spec.clusterServiceVersionNames lists [\"widget.v2\"]"
        ),
        "{error}"
    );
    let malformed = plan(&["widget.v1"], &[(BUNDLES, "{not json")]);
    assert!(matches!(
        entries(&malformed),
        Err(PlanRecordError::Malformed(_))
    ));
    // An unreadable record still names the spec's catalog for the triggers.
    assert_eq!(
        catalogs(&malformed),
        [("olm".to_owned(), "catalog".to_owned())]
    );
}

#[test]
fn only_what_resolution_reads_is_recorded_sorted_and_once() {
    let values = vec![
        json!({"type": "olm.package.required", "value": {"packageName": "etcd", "versionRange": ">=0.9.0"}}),
        json!({"type": "olm.bundle.object", "value": {"data": "e30="}}),
        json!({"type": "olm.gvk", "value": {"group": "example.com", "kind": "Widget", "version": "v1"}}),
        json!({"type": "olm.package", "value": {"packageName": "widget", "version": "1.0.0"}}),
        json!({"type": "olm.constraint", "value": {"failureMessage": "needs etcd", "package": {"packageName": "etcd", "versionRange": ">=0.9.0"}}}),
        json!({"type": "olm.gvk", "value": {"group": "example.com", "kind": "Widget", "version": "v1"}}),
    ];
    let typed = parse_properties(&values).unwrap();
    let recorded = recorded_properties(&typed);
    let types: Vec<&str> = recorded
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        [
            "olm.constraint",
            "olm.gvk",
            "olm.package",
            "olm.package.required"
        ]
    );
    assert_eq!(parse_properties(&recorded).unwrap().len(), 4);
    let error = parse_properties(&[json!({"type": "olm.gvk", "value": "x"})]).unwrap_err();
    assert!(
        error.starts_with("parse property[0] of type \"olm.gvk\""),
        "{error}"
    );
}
