//! The manifests in `deploy/examples/` deserialize into opcat's types without losing a field
//! (so a misspelled field fails), and they name packages, channels and CSVs that exist in the
//! example catalog.
// Test helpers outside #[test] functions panic on purpose: a failed expectation is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod api_support;

use std::collections::BTreeSet;

use api_support::{apply_schema_defaults, repo_root, round_trip_losses, yaml_documents};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::CustomResourceExt;
use opcat::api::{CatalogSource, OperatorGroup, Subscription};
use serde_json::Value;

fn example_files() -> Vec<std::path::PathBuf> {
    let dir = repo_root().join("deploy/examples");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("deploy/examples exists")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name != "kustomization.yaml")
        })
        .collect();
    files.sort();
    files
}

/// Every example object, with the file it came from.
fn example_objects() -> Vec<(String, Value)> {
    example_files()
        .into_iter()
        .flat_map(|path| {
            let file = path
                .file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned();
            yaml_documents(&path)
                .into_iter()
                .map(move |doc| (file.clone(), doc))
        })
        .collect()
}

fn objects_of_kind(kind: &str) -> Vec<Value> {
    example_objects()
        .into_iter()
        .filter(|(_, object)| object["kind"] == kind)
        .map(|(_, object)| object)
        .collect()
}

/// The OperatorGroup storage schema, to default objects as the apiserver would.
fn operator_group_schema() -> Value {
    let crd = serde_json::to_value(
        opcat::api::crds()
            .into_iter()
            .find(|crd| crd.metadata.name.as_deref() == Some(OperatorGroup::crd_name())),
    )
    .expect("CRD serializes");
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone()
}

#[test]
fn every_example_deserializes_without_losing_a_field() {
    let objects = example_objects();
    assert!(
        objects.len() >= 7,
        "examples went missing: {}",
        objects.len()
    );
    let og_schema = operator_group_schema();
    for (file, mut object) in objects {
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        let api_version = object["apiVersion"].as_str().unwrap_or_default().to_owned();
        let losses = match (api_version.as_str(), kind.as_str()) {
            ("v1", "Secret") => round_trip_losses::<Secret>(&object),
            ("v1", "Namespace") => round_trip_losses::<Namespace>(&object),
            ("operators.coreos.com/v1alpha1", "CatalogSource") => {
                round_trip_losses::<CatalogSource>(&object)
            }
            ("operators.coreos.com/v1alpha1", "Subscription") => {
                round_trip_losses::<Subscription>(&object)
            }
            ("operators.coreos.com/v1", "OperatorGroup") => {
                // The apiserver fills in the defaulted spec before anyone reads the object.
                apply_schema_defaults(&mut object, &og_schema);
                round_trip_losses::<OperatorGroup>(&object)
            }
            other => panic!("{file}: no test for {other:?}"),
        };
        match losses {
            Ok(losses) => assert!(
                losses.is_empty(),
                "{file} ({kind}): fields lost: {losses:#?}"
            ),
            Err(error) => panic!("{file} ({kind}) does not deserialize: {error}"),
        }
    }
}

#[test]
fn a_misspelled_field_is_caught() {
    let mut subscription = objects_of_kind("Subscription").remove(0);
    subscription["spec"]["chanel"] = Value::from("stable");
    let losses = round_trip_losses::<Subscription>(&subscription).expect("deserializes");
    assert_eq!(losses, [".spec.chanel: lost"]);
}

/// `kubectl apply -k deploy/examples` must be safe to run on a cluster with the real pull
/// secret: no placeholder Secret over it, and one Subscription, not every example at once.
#[test]
fn the_kustomization_applies_no_secret_and_one_subscription() {
    let kustomization =
        api_support::yaml_document(&repo_root().join("deploy/examples/kustomization.yaml"));
    let listed: BTreeSet<String> = kustomization["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r.as_str().expect("resource path").to_owned())
        .collect();
    let applied: Vec<String> = example_objects()
        .into_iter()
        .filter(|(file, _)| listed.contains(file))
        .map(|(_, object)| object["kind"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(!applied.iter().any(|kind| kind == "Secret"), "{applied:?}");
    assert_eq!(
        applied
            .iter()
            .filter(|kind| *kind == "Subscription")
            .count(),
        1,
        "{applied:?}"
    );
}

#[test]
fn kustomization_lists_every_example_but_the_ones_applied_by_hand() {
    let kustomization =
        api_support::yaml_document(&repo_root().join("deploy/examples/kustomization.yaml"));
    let listed: BTreeSet<String> = kustomization["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r.as_str().expect("resource path").to_owned())
        .collect();
    let by_hand = [
        "operator-group-all-namespaces.yaml",
        "pull-secret.yaml",
        "subscription-manual.yaml",
    ];
    let present: BTreeSet<String> = example_files()
        .iter()
        .map(|p| p.file_name().expect("name").to_string_lossy().into_owned())
        .filter(|name| !by_hand.contains(&name.as_str()))
        .collect();
    assert_eq!(listed, present);
}

#[test]
fn the_pull_secret_is_a_clearly_fake_dockerconfigjson() {
    let secret = objects_of_kind("Secret").remove(0);
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    let config: Value = serde_json::from_str(
        secret["stringData"][".dockerconfigjson"]
            .as_str()
            .expect("dockerconfigjson"),
    )
    .expect("valid JSON");
    let auth = config["auths"]["localhost:5000"]["auth"]
        .as_str()
        .expect("auth");
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(auth)
        .expect("base64");
    assert_eq!(decoded, b"example-user:not-a-real-password");
}

#[test]
fn the_catalog_source_uses_the_example_pull_secret_and_polls() {
    let source: CatalogSource =
        serde_json::from_value(objects_of_kind("CatalogSource").remove(0)).expect("CatalogSource");
    let secret = objects_of_kind("Secret").remove(0);
    assert_eq!(source.spec.source_type, "grpc");
    assert_eq!(source.spec.poll_interval(), Some("10m"));
    assert_eq!(
        source.spec.secret_names().collect::<Vec<_>>(),
        [secret["metadata"]["name"].as_str().expect("secret name")]
    );
    assert_eq!(
        source.metadata.namespace.as_deref(),
        secret["metadata"]["namespace"].as_str()
    );
}

/// (package, channels, bundle names) of the example catalog.
fn catalog_packages() -> Vec<(String, BTreeSet<String>, BTreeSet<String>)> {
    let catalog = repo_root().join("catalog");
    api_support::files_under(&catalog, &|_| true)
        .iter()
        .map(|path| {
            let blobs = yaml_documents(path);
            let of_schema =
                |schema: &'static str| blobs.iter().filter(move |b| b["schema"] == schema);
            let package = of_schema("olm.package").next().expect("olm.package")["name"]
                .as_str()
                .expect("package name")
                .to_owned();
            let channels = of_schema("olm.channel")
                .map(|c| c["name"].as_str().expect("channel").to_owned())
                .collect();
            let bundles = of_schema("olm.bundle")
                .map(|b| b["name"].as_str().expect("bundle").to_owned())
                .collect();
            (package, channels, bundles)
        })
        .collect()
}

#[test]
fn subscriptions_name_packages_channels_and_csvs_of_the_example_catalog() {
    let packages = catalog_packages();
    let sources: Vec<CatalogSource> = objects_of_kind("CatalogSource")
        .into_iter()
        .map(|s| serde_json::from_value(s).expect("CatalogSource"))
        .collect();
    let subscriptions = objects_of_kind("Subscription");
    assert!(subscriptions.len() >= 2);
    for object in subscriptions {
        let subscription: Subscription = serde_json::from_value(object).expect("Subscription");
        let spec = &subscription.spec;
        let (_, channels, bundles) = packages
            .iter()
            .find(|(name, _, _)| *name == spec.package)
            .unwrap_or_else(|| panic!("package {} is not in catalog/", spec.package));
        if let Some(channel) = spec.channel() {
            assert!(
                channels.contains(channel),
                "{}: no channel {channel}",
                spec.package
            );
        }
        if let Some(csv) = &spec.starting_csv {
            assert!(bundles.contains(csv), "{}: no bundle {csv}", spec.package);
        }
        assert!(
            sources
                .iter()
                .any(|s| s.metadata.name.as_deref() == Some(&spec.catalog_source)
                    && s.metadata.namespace.as_deref() == Some(&spec.catalog_source_namespace)),
            "{}: no example CatalogSource {}/{}",
            spec.package,
            spec.catalog_source_namespace,
            spec.catalog_source
        );
    }
}

#[test]
fn the_subscription_example_shows_every_config_override() {
    let subscription = objects_of_kind("Subscription")
        .into_iter()
        .find(|s| s["spec"]["config"].is_object())
        .expect("a Subscription with config");
    let config = subscription["spec"]["config"].as_object().expect("config");
    for field in [
        "env",
        "envFrom",
        "resources",
        "nodeSelector",
        "tolerations",
        "annotations",
        "volumes",
        "volumeMounts",
    ] {
        assert!(
            config.contains_key(field),
            "config.{field} missing from the example"
        );
    }
}

#[test]
fn a_spec_less_operator_group_is_valid_once_defaulted() {
    let schema = operator_group_schema();
    let mut object = objects_of_kind("OperatorGroup")
        .into_iter()
        .find(|og| og.get("spec").is_none())
        .expect("an OperatorGroup without spec");
    assert!(serde_json::from_value::<OperatorGroup>(object.clone()).is_err());
    apply_schema_defaults(&mut object, &schema);
    let group: OperatorGroup = serde_json::from_value(object).expect("defaulted OperatorGroup");
    assert!(
        group.spec.target_namespaces().is_empty(),
        "targets all namespaces"
    );
    assert_eq!(
        group.spec.upgrade_strategy,
        Some(opcat::api::operator_group::UpgradeStrategy::Default)
    );
}
