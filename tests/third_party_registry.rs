//! Real third-party bundles and catalogs (from `/work/shared/data`) through the real registry:
//! annotations of every bundle parse, and push → fetch is byte-identical. The same behaviours
//! are covered on our own fixtures in `registry_real.rs` and the unit tests.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod registry_support;

use std::path::PathBuf;

use opcat::bundle::annotations::BundleAnnotations;
use opcat::registry::ImageRef;
use opcat::registry::push::{build_bundle_image, build_catalog_image};
use registry_support::*;
use test_registry::Distribution;

fn bundle_dirs() -> Vec<PathBuf> {
    let data = test_registry::shared_data_dir();
    let mut dirs = vec![data.join(
        "bundles/operator-controller/test/regression/convert/testdata/bundles/argocd-operator.v0.6.0",
    )];
    let community = data.join("bundles/community-operators-prod/operators");
    for operator in std::fs::read_dir(&community).unwrap() {
        for version in std::fs::read_dir(operator.unwrap().path()).unwrap() {
            dirs.push(version.unwrap().path());
        }
    }
    dirs
}

#[test]
fn third_party_bundle_annotations_parse() {
    let dirs = bundle_dirs();
    assert!(dirs.len() >= 7, "{dirs:?}");
    for dir in dirs {
        let annotations =
            BundleAnnotations::read(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        assert_eq!(annotations.media_type, "registry+v1", "{}", dir.display());
        assert!(!annotations.channels.is_empty());
        assert!(annotations.bundle_labels().len() >= 5);
    }
}

#[tokio::test]
async fn third_party_bundles_and_catalog_round_trip_through_the_registry() {
    let dist = Distribution::basic("alice", "pw");
    let work = tempfile::tempdir().unwrap();
    let registry = registry_for(&dist, &work.path().join("cache"));
    let keyring = keyring_for(&dist, "s");
    for (index, dir) in bundle_dirs().into_iter().enumerate() {
        let image: ImageRef = dist.image(&format!("bundles/b{index}:v1")).parse().unwrap();
        let built = build_bundle_image(&dir).unwrap();
        registry.push(&image, &built, &keyring).await.unwrap();
        let unpacked = registry.fetch(&image, &keyring).await.unwrap();
        assert_eq!(unpacked.labels, built.labels);
        for sub in ["manifests", "metadata"] {
            assert_eq!(
                tree(&unpacked.root.join(sub)),
                tree(&dir.join(sub)),
                "{}",
                dir.display()
            );
        }
    }
    let catalog = test_registry::shared_data_dir()
        .join("fbc/small/cluster-kube-descheduler-operator/v4.12/catalog");
    let image: ImageRef = dist.image("catalogs/descheduler:v4.12").parse().unwrap();
    let built = build_catalog_image(&catalog).unwrap();
    registry.push(&image, &built, &keyring).await.unwrap();
    let unpacked = registry.fetch(&image, &keyring).await.unwrap();
    assert_eq!(tree(&unpacked.root.join("configs")), tree(&catalog));
}
