//! ClusterServiceVersions deserialize into opcat's type and serialize back without losing a
//! field, including spec fields opcat does not model.
// Test helpers outside #[test] functions panic on purpose: a failed expectation is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod api_support;

use api_support::{files_under, repo_root, round_trip_losses, yaml_document};
use opcat::api::cluster_service_version::InstallModeType;
use opcat::api::{ClusterServiceVersion, ClusterServiceVersionPhase};
use serde_json::{Value, json};

fn extra_fields_fixture() -> Value {
    yaml_document(&repo_root().join("tests/fixtures/api/csv-extra-fields.yaml"))
}

#[test]
fn csv_with_unmodelled_fields_round_trips_losslessly() {
    let original = extra_fields_fixture();
    let losses = round_trip_losses::<ClusterServiceVersion>(&original).expect("deserializes");
    assert!(losses.is_empty(), "fields lost or changed: {losses:#?}");
}

#[test]
fn unmodelled_spec_fields_are_kept_in_other() {
    let csv: ClusterServiceVersion =
        serde_json::from_value(extra_fields_fixture()).expect("deserializes");
    let other: Vec<&str> = csv.spec.other.keys().map(String::as_str).collect();
    assert_eq!(
        other,
        ["conversionwebhookdefinitions", "x-vendor-extension"]
    );
    assert_eq!(
        csv.spec.other["x-vendor-extension"],
        json!({ "nested": { "list": [1, "two", { "three": 3 }], "flag": false } })
    );
}

#[test]
fn modelled_fields_land_in_typed_fields() {
    let csv: ClusterServiceVersion =
        serde_json::from_value(extra_fields_fixture()).expect("deserializes");
    let spec = &csv.spec;
    assert_eq!(spec.display_name, "Sprocket Operator");
    assert_eq!(spec.replaces.as_deref(), Some("sprocket-operator.v3.0.0"));
    assert_eq!(
        spec.skips.as_deref(),
        Some(&["sprocket-operator.v3.0.1".to_owned()][..])
    );
    assert!(spec.supports_install_mode(InstallModeType::OwnNamespace));
    assert!(!spec.supports_install_mode(InstallModeType::AllNamespaces));
    assert!(
        !spec.supports_install_mode(InstallModeType::MultiNamespace),
        "undeclared"
    );
    assert_eq!(spec.owned_crds()[0].name, "sprockets.example.com");
    assert_eq!(
        spec.owned_crds()[0]
            .presentation
            .spec_descriptors
            .as_ref()
            .expect("descriptors")[1]
            .value,
        Some(json!({ "kind": "star", "points": [5, 6] }))
    );
    assert_eq!(spec.install.deployments()[0].name, "sprocket-operator");
    assert_eq!(
        spec.install.permissions()[0].service_account_name,
        "sprocket-operator"
    );
    assert_eq!(
        spec.install.cluster_permissions()[0].rules[0]
            .non_resource_urls
            .as_deref(),
        Some(&["/metrics".to_owned()][..])
    );
    let webhooks = spec.webhook_definitions.as_ref().expect("webhooks");
    assert_eq!(
        webhooks[1].conversion_crds.as_deref(),
        Some(&["sprockets.example.com".to_owned()][..])
    );
    let status = csv.status.as_ref().expect("status");
    assert_eq!(status.phase, Some(ClusterServiceVersionPhase::Succeeded));
    assert_eq!(status.conditions.as_ref().expect("conditions").len(), 2);
}

#[test]
fn a_csv_without_display_name_is_rejected() {
    let mut original = extra_fields_fixture();
    original["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("displayName");
    let error = serde_json::from_value::<ClusterServiceVersion>(original).expect_err("must fail");
    assert!(error.to_string().contains("displayName"), "{error}");
}

#[test]
fn example_bundle_csvs_round_trip_losslessly() {
    let csvs = files_under(&repo_root().join("bundles"), &|name| {
        name.ends_with(".clusterserviceversion.yaml")
    });
    assert!(csvs.len() >= 7, "example CSVs went missing: {}", csvs.len());
    for path in csvs {
        let original = yaml_document(&path);
        let losses = round_trip_losses::<ClusterServiceVersion>(&original)
            .unwrap_or_else(|e| panic!("{} does not deserialize: {e}", path.display()));
        assert!(
            losses.is_empty(),
            "{}: fields lost: {losses:#?}",
            path.display()
        );
    }
}
