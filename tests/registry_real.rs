//! Pull and push against the real CNCF distribution registry (basic and token auth, TLS with a
//! CA made at test time), cross-checked with umoci and skopeo.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod registry_support;

use std::fs;

use opcat::registry::push::{CONFIGS_LABEL, build_bundle_image, build_catalog_image};
use opcat::registry::{ImageRef, Keyring, PullAuth};
use registry_support::*;
use test_registry::tools::{skopeo_copy_from, skopeo_inspect, skopeo_push, umoci_image};
use test_registry::{Distribution, User};

#[tokio::test]
async fn push_then_fetch_catalog_with_basic_auth() {
    let dist = Distribution::basic("alice", "s3cret-basic");
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("catalog");
    write_catalog(&catalog);
    let registry = registry_for(&dist, &work.path().join("cache"));
    let keyring = keyring_for(&dist, "catalog-pull");
    let image: ImageRef = dist.image("catalogs/widgets:v1").parse().unwrap();

    let built = build_catalog_image(&catalog).unwrap();
    let pushed = registry.push(&image, &built, &keyring).await.unwrap();
    assert_eq!(pushed, built.digest);

    let unpacked = registry.fetch(&image, &keyring).await.unwrap();
    assert_eq!(unpacked.digest, built.digest);
    assert_eq!(unpacked.labels[CONFIGS_LABEL], "/configs");
    let configs = unpacked
        .dir_from_label(CONFIGS_LABEL, Some("/configs"))
        .unwrap();
    assert_eq!(tree(&configs), tree(&catalog));

    let check = registry.check_pullable(&image, &keyring).await.unwrap();
    assert_eq!(check.digest, built.digest);
    assert_eq!(check.auth, PullAuth::Secret("catalog-pull".to_owned()));
}

#[tokio::test]
async fn same_directory_pushed_twice_gives_the_same_digest() {
    let dist = Distribution::basic("alice", "pw");
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    write_bundle(&bundle);
    let registry = registry_for(&dist, &work.path().join("cache"));
    let keyring = keyring_for(&dist, "s");
    let first = registry
        .push(
            &dist.image("bundles/w:a").parse().unwrap(),
            &build_bundle_image(&bundle).unwrap(),
            &keyring,
        )
        .await
        .unwrap();
    // Touch every file: times must not change the digest.
    for file in [
        "manifests/widgets.clusterserviceversion.yaml",
        "metadata/annotations.yaml",
    ] {
        let text = fs::read(bundle.join(file)).unwrap();
        fs::write(bundle.join(file), text).unwrap();
    }
    let second = registry
        .push(
            &dist.image("bundles/w:b").parse().unwrap(),
            &build_bundle_image(&bundle).unwrap(),
            &keyring,
        )
        .await
        .unwrap();
    assert_eq!(first, second);
}

#[tokio::test]
async fn opcat_push_is_read_by_skopeo_with_labels_intact() {
    let dist = Distribution::basic("alice", "pw");
    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    write_bundle(&bundle);
    let registry = registry_for(&dist, &work.path().join("cache"));
    let image = dist.image("bundles/widgets:v1.0.0");
    let built = build_bundle_image(&bundle).unwrap();
    registry
        .push(&image.parse().unwrap(), &built, &keyring_for(&dist, "s"))
        .await
        .unwrap();

    let inspected = skopeo_inspect(&dist, &image, false);
    assert_eq!(inspected["Digest"], built.digest.to_string());
    let labels = &inspected["Labels"];
    assert_eq!(
        labels["operators.operatorframework.io.bundle.package.v1"],
        "widgets"
    );
    assert_eq!(
        labels["operators.operatorframework.io.bundle.mediatype.v1"],
        "registry+v1"
    );
    assert_eq!(
        labels["operators.operatorframework.io.bundle.channels.v1"],
        "stable"
    );
    assert_eq!(
        labels["operators.operatorframework.io.bundle.channel.default.v1"],
        "stable"
    );
    assert_eq!(
        labels["operators.operatorframework.io.bundle.manifests.v1"],
        "manifests/"
    );
    assert_eq!(
        labels["operators.operatorframework.io.bundle.metadata.v1"],
        "metadata/"
    );

    // skopeo copies it (verifying digests itself) into an OCI layout.
    let layout = work.path().join("copied");
    skopeo_copy_from(&dist, &image, &format!("oci:{}:v1", layout.display())).unwrap();
    assert!(layout.join("index.json").is_file());
}

async fn umoci_skopeo_round_trip(dist: &Distribution, format: &str) {
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("content/configs");
    write_catalog(&catalog);
    fs::write(
        catalog.join("widgets/extra.json"),
        "{\"schema\":\"olm.deprecations\"}",
    )
    .unwrap();
    let layout = umoci_image(
        work.path(),
        &work.path().join("content"),
        &[(CONFIGS_LABEL, "/configs")],
    );
    let image = dist.image(&format!("catalogs/umoci-{format}:v1"));
    let digest = skopeo_push(&layout, dist, &image, format);
    // umoci writes OCI manifests without the optional top-level mediaType (registry-lab §1.5):
    // opcat must recognise them by shape.
    let raw = skopeo_inspect(dist, &image, true);
    assert_eq!(raw.get("mediaType").is_none(), format == "oci", "{raw}");

    let registry = registry_for(dist, &work.path().join("cache"));
    let unpacked = registry
        .fetch(&image.parse().unwrap(), &keyring_for(dist, "s"))
        .await
        .unwrap();
    assert_eq!(unpacked.digest.to_string(), digest);
    assert_eq!(unpacked.labels[CONFIGS_LABEL], "/configs");
    let configs = unpacked.dir_from_label(CONFIGS_LABEL, None).unwrap();
    assert_eq!(tree(&configs), tree(&catalog), "byte-identical unpack");
}

#[tokio::test]
async fn umoci_image_pushed_by_skopeo_unpacks_byte_identically_oci() {
    let dist = Distribution::basic("alice", "pw");
    umoci_skopeo_round_trip(&dist, "oci").await;
}

#[tokio::test]
async fn umoci_image_pushed_by_skopeo_unpacks_byte_identically_docker_v2s2() {
    let dist = Distribution::basic("alice", "pw");
    umoci_skopeo_round_trip(&dist, "v2s2").await;
}

#[tokio::test]
async fn token_auth_push_and_fetch() {
    let dist = Distribution::token(vec![User::new("tokenuser", "t0ken-pass")]);
    umoci_skopeo_round_trip(&dist, "oci").await;

    let work = tempfile::tempdir().unwrap();
    let bundle = work.path().join("bundle");
    write_bundle(&bundle);
    let registry = registry_for(&dist, &work.path().join("cache"));
    let keyring = keyring_for(&dist, "token-secret");
    let image: ImageRef = dist.image("bundles/widgets:v1").parse().unwrap();
    let built = build_bundle_image(&bundle).unwrap();
    registry.push(&image, &built, &keyring).await.unwrap();
    let unpacked = registry.fetch(&image, &keyring).await.unwrap();
    assert_eq!(
        tree(&unpacked.root.join("manifests")),
        tree(&bundle.join("manifests"))
    );
    assert_eq!(
        tree(&unpacked.root.join("metadata")),
        tree(&bundle.join("metadata"))
    );
}

#[tokio::test]
async fn fetch_uses_the_cache_by_digest_and_survives_restarts() {
    let dist = Distribution::basic("alice", "pw");
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("catalog");
    write_catalog(&catalog);
    let cache = work.path().join("cache");
    let keyring = keyring_for(&dist, "s");
    let tag: ImageRef = dist.image("catalogs/c:v1").parse().unwrap();
    let built = build_catalog_image(&catalog).unwrap();
    {
        let registry = registry_for(&dist, &cache);
        registry.push(&tag, &built, &keyring).await.unwrap();
        // Concurrent fetches of one digest unpack it once and agree.
        let (a, b) = tokio::join!(
            registry.fetch(&tag, &keyring),
            registry.fetch(&tag, &keyring)
        );
        assert_eq!(a.unwrap(), b.unwrap());
    }
    // A new process (new Registry, same cache dir) finds the pinned image without the network:
    // the registry is gone, yet the fetch succeeds.
    let pinned = tag.with_digest(&built.digest);
    let ca = work.path().join("ca.pem");
    fs::copy(dist.ca.pem_path(), &ca).unwrap();
    drop(dist);
    let registry = registry_trusting(&ca, &cache);
    let unpacked = registry.fetch(&pinned, &Keyring::empty()).await.unwrap();
    assert_eq!(unpacked.digest, built.digest);
    assert_eq!(tree(&unpacked.root.join("configs")), tree(&catalog));
    // Nothing is left in the staging area.
    assert_eq!(fs::read_dir(cache.join("tmp")).unwrap().count(), 0);
}

#[tokio::test]
async fn anonymous_pull_is_reported_when_no_secret_matches() {
    // A registry that allows anonymous pulls: the fake one, which has no auth at all.
    let fake = test_registry::FakeRegistry::start();
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("catalog");
    write_catalog(&catalog);
    let built = build_catalog_image(&catalog).unwrap();
    fake.set(
        &format!("/v2/c/manifests/{}", built.digest),
        test_registry::Reply::Ok {
            content_type: Some(opcat::registry::manifest::OCI_MANIFEST.to_owned()),
            digest: Some(built.digest.to_string()),
            body: built.manifest.clone(),
        },
    );
    let mut options = opcat::registry::RegistryOptions::new(work.path().join("cache"));
    options.trust.insecure_hosts.insert(fake.host.clone());
    opcat::registry::install_crypto_provider();
    let registry = opcat::registry::Registry::new(options).unwrap();
    let (keyring, _) = Keyring::from_secrets(&[secret(
        "other",
        &test_registry::dockerconfigjson("quay.io", "u", "p"),
    )]);
    let image: ImageRef = format!("{}/c@{}", fake.host, built.digest).parse().unwrap();
    let check = registry.check_pullable(&image, &keyring).await.unwrap();
    assert_eq!(check.auth, PullAuth::AnonymousNoMatch);
}

/// Manifest requests for `repository` the registry answered so far.
fn manifest_requests(dist: &Distribution, repository: &str) -> usize {
    dist.requests(&format!("/v2/{repository}/manifests/"))
}

#[tokio::test]
async fn a_tag_resolved_recently_with_the_same_credentials_is_not_asked_again() {
    let dist = Distribution::start(test_registry::Auth::Basic(vec![
        User::new("alice", "pw-alice"),
        User::new("bob", "pw-bob"),
    ]));
    let work = tempfile::tempdir().unwrap();
    let registry = registry_for(&dist, &work.path().join("cache"));
    let alice = keyring_for(&dist, "alice-pull");
    let (bob, _) = Keyring::from_secrets(&[secret(
        "bob-pull",
        &test_registry::dockerconfigjson(&dist.host, "bob", "pw-bob"),
    )]);
    let tag: ImageRef = dist.image("bundles/w:v1").parse().unwrap();
    let minute = std::time::Duration::from_secs(60);

    let bundle = work.path().join("bundle");
    write_bundle(&bundle);
    let first = build_bundle_image(&bundle).unwrap();
    registry.push(&tag, &first, &alice).await.unwrap();
    let pulled = registry.fetch_reusing(&tag, &alice, minute).await.unwrap();
    assert_eq!(pulled.digest, first.digest);
    let asked = manifest_requests(&dist, "bundles/w");

    // The tag moves in the registry.
    fs::write(bundle.join("manifests/extra.yaml"), "kind: ConfigMap\n").unwrap();
    let second = build_bundle_image(&bundle).unwrap();
    assert_ne!(second.digest, first.digest);
    registry.push(&tag, &second, &alice).await.unwrap();
    let pushed = manifest_requests(&dist, "bundles/w");
    assert!(pushed > asked);

    // Within the time allowed, the same credentials take the digest they resolved, unasked.
    let reused = registry.fetch_reusing(&tag, &alice, minute).await.unwrap();
    assert_eq!(reused.digest, first.digest);
    assert_eq!(tree(&reused.root), tree(&pulled.root));
    assert_eq!(manifest_requests(&dist, "bundles/w"), pushed, "no request");

    // Other credentials must be accepted by the registry themselves: they see the move.
    let by_bob = registry.fetch_reusing(&tag, &bob, minute).await.unwrap();
    assert_eq!(by_bob.digest, second.digest);
    assert!(manifest_requests(&dist, "bundles/w") > pushed);

    // Once the resolution is older than allowed, the registry is asked again, and what it
    // answers is what the next pulls reuse.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let half_second = std::time::Duration::from_millis(500);
    let asked = registry
        .fetch_reusing(&tag, &alice, half_second)
        .await
        .unwrap();
    assert_eq!(asked.digest, second.digest);
    let now = manifest_requests(&dist, "bundles/w");
    let reused = registry.fetch_reusing(&tag, &alice, minute).await.unwrap();
    assert_eq!(reused.digest, second.digest);
    assert_eq!(manifest_requests(&dist, "bundles/w"), now, "no request");
}
