//! The example catalog (`catalog/`) and bundles (`bundles/`) agree with each other and have the
//! shape the rest of the test suite relies on.
// Test helpers outside #[test] functions panic on purpose: a failed expectation is a failed test.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod api_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use api_support::{files_under, repo_root, yaml_document, yaml_documents};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use opcat::api::ClusterServiceVersion;
use opcat::api::cluster_service_version::InstallModeType;
use opcat::api::olm_keys;
use serde_json::Value;

const IMAGE_PREFIX: &str = "localhost:5000/opcat-examples/";

/// One channel entry of the catalog.
#[derive(Debug, Default, Clone, PartialEq)]
struct Entry {
    replaces: Option<String>,
    skips: Vec<String>,
    skip_range: Option<String>,
}

/// What the catalog says about one bundle.
#[derive(Debug)]
struct CatalogBundle {
    package: String,
    name: String,
    version: String,
    image: String,
    blob: Value,
    /// channel name -> entry
    entries: BTreeMap<String, Entry>,
}

fn catalog_bundles() -> Vec<CatalogBundle> {
    let mut bundles = Vec::new();
    for path in files_under(&repo_root().join("catalog"), &|_| true) {
        let blobs = yaml_documents(&path);
        let mut entries: BTreeMap<String, BTreeMap<String, Entry>> = BTreeMap::new();
        for channel in blobs.iter().filter(|b| b["schema"] == "olm.channel") {
            for entry in channel["entries"].as_array().expect("entries") {
                let parsed = Entry {
                    replaces: entry["replaces"].as_str().map(str::to_owned),
                    skips: entry["skips"]
                        .as_array()
                        .map(|s| {
                            s.iter()
                                .map(|v| v.as_str().expect("skip").to_owned())
                                .collect()
                        })
                        .unwrap_or_default(),
                    skip_range: entry["skipRange"].as_str().map(str::to_owned),
                };
                entries
                    .entry(entry["name"].as_str().expect("entry name").to_owned())
                    .or_default()
                    .insert(
                        channel["name"].as_str().expect("channel").to_owned(),
                        parsed,
                    );
            }
        }
        for blob in blobs.iter().filter(|b| b["schema"] == "olm.bundle") {
            let name = blob["name"].as_str().expect("bundle name").to_owned();
            let package_property = blob["properties"]
                .as_array()
                .expect("properties")
                .iter()
                .find(|p| p["type"] == "olm.package")
                .expect("olm.package property");
            bundles.push(CatalogBundle {
                package: blob["package"].as_str().expect("package").to_owned(),
                version: package_property["value"]["version"]
                    .as_str()
                    .expect("version")
                    .to_owned(),
                image: blob["image"].as_str().expect("image").to_owned(),
                entries: entries.remove(&name).unwrap_or_default(),
                name,
                blob: blob.clone(),
            });
        }
    }
    bundles
}

fn bundle_dir(bundle: &CatalogBundle) -> PathBuf {
    repo_root()
        .join("bundles")
        .join(&bundle.package)
        .join(&bundle.version)
}

fn manifests(dir: &Path) -> Vec<Value> {
    files_under(&dir.join("manifests"), &|_| true)
        .iter()
        .map(|p| yaml_document(p))
        .collect()
}

fn bundle_csv(dir: &Path) -> ClusterServiceVersion {
    let csvs: Vec<Value> = manifests(dir)
        .into_iter()
        .filter(|m| m["kind"] == "ClusterServiceVersion")
        .collect();
    assert_eq!(csvs.len(), 1, "{}: exactly one CSV", dir.display());
    serde_json::from_value(csvs[0].clone()).expect("CSV deserializes")
}

#[test]
fn the_catalog_has_the_packages_the_tests_rely_on() {
    let bundles = catalog_bundles();
    let widget: Vec<_> = bundles
        .iter()
        .filter(|b| b.package == "widget-operator")
        .collect();
    let channels: BTreeSet<&String> = widget.iter().flat_map(|b| b.entries.keys()).collect();
    assert_eq!(
        channels,
        BTreeSet::from([&"fast".to_owned(), &"stable".to_owned()])
    );
    assert!(widget.len() >= 3);
    let entries: Vec<&Entry> = widget.iter().flat_map(|b| b.entries.values()).collect();
    assert!(
        entries.iter().any(|e| e.replaces.is_some()),
        "uses replaces"
    );
    assert!(entries.iter().any(|e| !e.skips.is_empty()), "uses skips");
    assert!(
        entries.iter().any(|e| e.skip_range.is_some()),
        "uses skipRange"
    );
    // v1.0.0 -> v1.2.0 exists only through v1.2.0's skipRange.
    let v1_2 = widget
        .iter()
        .find(|b| b.version == "1.2.0")
        .expect("v1.2.0");
    let stable = &v1_2.entries["stable"];
    assert_ne!(stable.replaces.as_deref(), Some("widget-operator.v1.0.0"));
    assert!(!stable.skips.contains(&"widget-operator.v1.0.0".to_owned()));
    assert_eq!(stable.skip_range.as_deref(), Some(">=1.0.0 <1.2.0"));
    assert!(bundles.iter().any(|b| b.package == "gadget-operator"));
}

#[test]
fn every_catalog_bundle_has_a_matching_bundle_directory() {
    let bundles = catalog_bundles();
    assert!(bundles.len() >= 7);
    for bundle in &bundles {
        let dir = bundle_dir(bundle);
        let csv = bundle_csv(&dir);
        let what = &bundle.name;
        assert_eq!(
            csv.metadata.name.as_deref(),
            Some(bundle.name.as_str()),
            "{what}: CSV name"
        );
        assert_eq!(
            csv.spec.version.as_deref(),
            Some(bundle.version.as_str()),
            "{what}: version"
        );
        // Every channel entry of the bundle carries the CSV's upgrade edges.
        let expected = Entry {
            replaces: csv.spec.replaces.clone(),
            skips: csv.spec.skips.clone().unwrap_or_default(),
            skip_range: csv
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(olm_keys::SKIP_RANGE))
                .cloned(),
        };
        assert!(!bundle.entries.is_empty(), "{what} is in no channel");
        for (channel, entry) in &bundle.entries {
            assert_eq!(
                entry, &expected,
                "{what}: entry in channel {channel} differs from CSV"
            );
        }
        // Images follow the documented naming, with the one rewritable prefix.
        let operator_image = format!("{IMAGE_PREFIX}{}:v{}", bundle.package, bundle.version);
        assert_eq!(
            bundle.image,
            format!(
                "{IMAGE_PREFIX}{}-bundle:v{}",
                bundle.package, bundle.version
            )
        );
        let related: Vec<&str> = bundle.blob["relatedImages"]
            .as_array()
            .expect("relatedImages")
            .iter()
            .map(|r| r["image"].as_str().expect("image"))
            .collect();
        assert!(
            related.contains(&bundle.image.as_str()),
            "{what}: bundle image in relatedImages"
        );
        assert!(
            related.contains(&operator_image.as_str()),
            "{what}: operator image in relatedImages"
        );
        let csv_related: Vec<&str> = csv
            .spec
            .related_images
            .iter()
            .flatten()
            .map(|r| r.image.as_str())
            .collect();
        assert_eq!(
            csv_related,
            [operator_image.as_str()],
            "{what}: CSV relatedImages"
        );
        for deployment in csv.spec.install.deployments() {
            let pod = deployment.spec.template.spec.as_ref().expect("pod spec");
            for container in &pod.containers {
                assert_eq!(
                    container.image.as_deref(),
                    Some(operator_image.as_str()),
                    "{what}"
                );
            }
        }
        // olm.gvk properties name exactly the CSV's owned CRDs, and each CRD ships in the bundle.
        let gvks: BTreeSet<(String, String, String)> = bundle.blob["properties"]
            .as_array()
            .expect("properties")
            .iter()
            .filter(|p| p["type"] == "olm.gvk")
            .map(|p| {
                let v = &p["value"];
                let s = |k: &str| v[k].as_str().expect("gvk field").to_owned();
                (s("group"), s("version"), s("kind"))
            })
            .collect();
        let crds: Vec<CustomResourceDefinition> = manifests(&dir)
            .into_iter()
            .filter(|m| m["kind"] == "CustomResourceDefinition")
            .map(|m| {
                assert_eq!(m["apiVersion"], "apiextensions.k8s.io/v1", "{what}");
                serde_json::from_value(m).expect("CRD deserializes")
            })
            .collect();
        let owned: BTreeSet<(String, String, String)> = csv
            .spec
            .owned_crds()
            .iter()
            .map(|crd| {
                let group = crd.name.split_once('.').expect("plural.group").1.to_owned();
                (group, crd.version.clone(), crd.kind.clone())
            })
            .collect();
        assert_eq!(gvks, owned, "{what}: olm.gvk properties vs owned CRDs");
        for description in csv.spec.owned_crds() {
            assert!(
                crds.iter()
                    .any(|crd| crd.metadata.name.as_deref() == Some(description.name.as_str())),
                "{what}: owned CRD {} has no manifest",
                description.name
            );
        }
        // The catalog's CSV metadata names the bundle for `catalog list packages`.
        let metadata = bundle.blob["properties"]
            .as_array()
            .expect("properties")
            .iter()
            .find(|p| p["type"] == "olm.csv.metadata")
            .expect("olm.csv.metadata");
        assert_eq!(
            metadata["value"]["displayName"].as_str(),
            Some(csv.spec.display_name.as_str())
        );
    }
}

#[test]
fn bundle_annotations_name_the_package_and_its_channels() {
    for bundle in catalog_bundles() {
        let annotations = yaml_document(&bundle_dir(&bundle).join("metadata/annotations.yaml"));
        let annotations = annotations["annotations"]
            .as_object()
            .expect("annotations map");
        let key = |suffix: &str| {
            annotations
                .get(&format!("operators.operatorframework.io.bundle.{suffix}"))
                .and_then(Value::as_str)
                .unwrap_or_else(|| panic!("{}: no {suffix}", bundle.name))
        };
        assert_eq!(annotations.len(), 6, "{}: the six bundle keys", bundle.name);
        assert_eq!(key("mediatype.v1"), "registry+v1");
        assert_eq!(key("manifests.v1"), "manifests/");
        assert_eq!(key("metadata.v1"), "metadata/");
        assert_eq!(key("package.v1"), bundle.package);
        let channels: BTreeSet<&str> = key("channels.v1").split(',').collect();
        let catalog_channels: BTreeSet<&str> = bundle.entries.keys().map(String::as_str).collect();
        assert_eq!(channels, catalog_channels, "{}: channels", bundle.name);
        assert!(
            channels.contains(key("channel.default.v1")),
            "{}: default channel",
            bundle.name
        );
    }
}

#[test]
fn no_bundle_directory_is_missing_from_the_catalog() {
    let in_catalog: BTreeSet<PathBuf> = catalog_bundles().iter().map(bundle_dir).collect();
    let on_disk: BTreeSet<PathBuf> = files_under(&repo_root().join("bundles"), &|name| {
        name == "annotations.yaml"
    })
    .into_iter()
    .map(|p| {
        p.parent()
            .and_then(Path::parent)
            .expect("bundle dir")
            .to_path_buf()
    })
    .collect();
    assert_eq!(on_disk, in_catalog);
}

#[test]
fn widget_operator_csvs_exercise_pull_secret_propagation() {
    for bundle in catalog_bundles()
        .iter()
        .filter(|b| b.package == "widget-operator")
    {
        let dir = bundle_dir(bundle);
        let csv = bundle_csv(&dir);
        let install = &csv.spec.install;
        let accounts = |perms: &[opcat::api::csv_install::StrategyDeploymentPermissions]| {
            perms
                .iter()
                .map(|p| p.service_account_name.clone())
                .collect::<BTreeSet<_>>()
        };
        assert_eq!(
            accounts(install.permissions()).len(),
            2,
            "{}: two SAs with permissions",
            bundle.name
        );
        assert_eq!(
            accounts(install.cluster_permissions()).len(),
            2,
            "{}: two SAs with clusterPermissions",
            bundle.name
        );
        let deployments = install.deployments();
        assert_eq!(deployments.len(), 2, "{}: two Deployments", bundle.name);
        let service_accounts: Vec<Option<&str>> = deployments
            .iter()
            .map(|d| {
                d.spec
                    .template
                    .spec
                    .as_ref()
                    .and_then(|p| p.service_account_name.as_deref())
            })
            .collect();
        assert!(
            service_accounts.contains(&None),
            "{}: one Deployment runs as default",
            bundle.name
        );
        assert!(
            service_accounts
                .iter()
                .flatten()
                .all(|sa| accounts(install.permissions()).contains(*sa))
        );
        for mode in [
            InstallModeType::OwnNamespace,
            InstallModeType::SingleNamespace,
            InstallModeType::AllNamespaces,
        ] {
            assert!(
                csv.spec.supports_install_mode(mode),
                "{}: {mode:?}",
                bundle.name
            );
        }
        let services: Vec<Service> = manifests(&dir)
            .into_iter()
            .filter(|m| m["kind"] == "Service")
            .map(|m| serde_json::from_value(m).expect("Service"))
            .collect();
        assert_eq!(services.len(), 1, "{}: a Service", bundle.name);
    }
}
