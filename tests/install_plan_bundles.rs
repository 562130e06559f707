//! InstallPlans and bundle images: invalid bundles fail the plan for good (and the Subscription
//! says why); a bundle layer that tries to write outside its root installs nothing (DESIGN
//! invariant 9); pull failures that a fixed Secret can cure keep the plan installing.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod subscription_support;
mod support;

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::time::Duration;

use opcat::api::ClusterServiceVersion;
use opcat::fbc::DeclarativeConfig;
use opcat::registry::layer::Layer;
use opcat::registry::push::BuiltImage;
use opcat::registry::{Digest, ImageRef};
use subscription_support::{Fixture, NAMESPACE, condition, plan_phase, write_tree};

const CSV_TEMPLATE: &str = r#"apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: NAME
spec:
  displayName: Broken Operator
  version: 0.1.0
  installModes:
    - type: AllNamespaces
      supported: true
EXTRA
  install:
    strategy: deployment
    spec:
      deployments:
        - name: broken-controller
          spec:
            selector:
              matchLabels: {app: broken}
            template:
              metadata:
                labels: {app: broken}
              spec:
                containers:
                  - name: manager
                    image: registry.example.com/broken/operator:v0.1.0
"#;

const WEBHOOK: &str = r#"  webhookdefinitions:
    - generateName: vbroken.example.com
      type: ValidatingAdmissionWebhook
      deploymentName: missing-controller
      containerPort: 443
      sideEffects: None
      admissionReviewVersions: [v1]"#;

fn csv(name: &str, extra: &str) -> String {
    CSV_TEMPLATE.replace("NAME", name).replace("EXTRA", extra)
}

fn annotations(package: &str) -> String {
    format!(
        "annotations:\n  \
         operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
         operators.operatorframework.io.bundle.manifests.v1: manifests/\n  \
         operators.operatorframework.io.bundle.metadata.v1: metadata/\n  \
         operators.operatorframework.io.bundle.package.v1: {package}\n  \
         operators.operatorframework.io.bundle.channels.v1: alpha\n"
    )
}

/// Builds and pushes a bundle image from `files`; returns its reference.
async fn push_bundle(fixture: &Fixture, repository: &str, files: BTreeMap<&str, String>) -> String {
    let dir = fixture.env.registry.scratch(repository);
    write_tree(&dir, &files);
    let built = opcat::registry::push::build_bundle_image(&dir).expect("build bundle image");
    let image = fixture
        .env
        .registry
        .image(&format!("opcat-examples/{repository}:v0.1.0"));
    let reference: ImageRef = image.parse().unwrap();
    fixture
        .env
        .opcat_registry
        .push(
            &reference,
            &built,
            &support::keyring_for(&fixture.env.registry),
        )
        .await
        .expect("push bundle image");
    image
}

/// `built` with one more entry in its layer, written verbatim (the `tar` builder refuses hostile
/// paths): an image a registry stores and serves, digests and all, whose content escapes.
fn with_hostile_entry(built: BuiltImage, path: &str) -> BuiltImage {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(built.layer.bytes.as_slice())
        .read_to_end(&mut tar)
        .unwrap();
    let mut archive = tar::Archive::new(tar.as_slice());
    let mut builder = tar::Builder::new(Vec::new());
    for entry in archive.entries().unwrap() {
        let entry = entry.unwrap();
        let header = entry.header().clone();
        builder.append(&header, entry).unwrap();
    }
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(7);
    header.set_mode(0o644);
    header.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
    header.set_cksum();
    builder.append(&header, &b"escaped"[..]).unwrap();
    let tar = builder.into_inner().unwrap();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(&tar).unwrap();
    let bytes = gzip.finish().unwrap();
    let layer = Layer {
        digest: Digest::sha256_of(&bytes),
        diff_id: Digest::sha256_of(&tar),
        bytes,
    };

    let mut config: serde_json::Value = serde_json::from_slice(&built.config).unwrap();
    config["rootfs"]["diff_ids"] = serde_json::json!([layer.diff_id.to_string()]);
    let config = serde_json::to_vec(&config).unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&built.manifest).unwrap();
    manifest["config"]["digest"] = Digest::sha256_of(&config).to_string().into();
    manifest["config"]["size"] = config.len().into();
    manifest["layers"][0]["digest"] = layer.digest.to_string().into();
    manifest["layers"][0]["size"] = layer.bytes.len().into();
    let manifest = serde_json::to_vec(&manifest).unwrap();
    BuiltImage {
        digest: Digest::sha256_of(&manifest),
        layer,
        config,
        manifest,
        labels: built.labels,
    }
}

/// The example catalog plus one single-bundle package per `(package, image)`.
fn catalog_with(env_catalog: &Path, packages: &[(&str, &str)]) -> DeclarativeConfig {
    let mut config = opcat::fbc::load(env_catalog).expect("example catalog");
    for (package, image) in packages {
        let text = format!(
            "schema: olm.package\nname: {package}\ndefaultChannel: alpha\n---\n\
             schema: olm.channel\npackage: {package}\nname: alpha\nentries:\n  - name: {package}.v0.1.0\n---\n\
             schema: olm.bundle\npackage: {package}\nname: {package}.v0.1.0\nimage: {image}\n\
             properties:\n  - type: olm.package\n    value: {{packageName: {package}, version: 0.1.0}}\n"
        );
        config.merge(DeclarativeConfig::parse(&text, Path::new("extra.yaml")).expect("extra FBC"));
    }
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_bundles_fail_the_plan_and_the_subscription_shows_why() {
    let fixture = Fixture::start().await;
    // Two CSVs and a kind registry+v1 bundles may not hold: unreadable as a bundle.
    let broken = push_bundle(
        &fixture,
        "broken-operator-bundle",
        BTreeMap::from([
            (
                "manifests/broken.clusterserviceversion.yaml",
                csv("broken-operator.v0.1.0", ""),
            ),
            (
                "manifests/other.clusterserviceversion.yaml",
                csv("other-operator.v0.1.0", ""),
            ),
            (
                "manifests/quota_v1_resourcequota.yaml",
                "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota\nspec: {}\n".into(),
            ),
            ("metadata/annotations.yaml", annotations("broken-operator")),
        ]),
    )
    .await;
    // A well-formed bundle whose CSV has a webhook no Deployment of it serves.
    let webhook = push_bundle(
        &fixture,
        "webhook-operator-bundle",
        BTreeMap::from([
            (
                "manifests/webhook.clusterserviceversion.yaml",
                csv("webhook-operator.v0.1.0", WEBHOOK),
            ),
            ("metadata/annotations.yaml", annotations("webhook-operator")),
        ]),
    )
    .await;
    let catalog = catalog_with(
        &fixture.env.images.catalog_dir,
        &[("broken-operator", &broken), ("webhook-operator", &webhook)],
    );
    fixture.load_catalog(catalog, "with-broken-bundles").await;
    fixture
        .subscribe("broken", |spec| spec.package = "broken-operator".into())
        .await;
    fixture
        .subscribe("webhook", |spec| spec.package = "webhook-operator".into())
        .await;

    let plan = fixture
        .wait_plan_phase("broken-operator.v0.1.0", "Failed")
        .await;
    let status = plan.status.as_ref().unwrap();
    let installed = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_.as_deref() == Some("Installed"))
        .unwrap();
    assert_eq!(installed.status.as_deref(), Some("False"));
    assert_eq!(installed.reason.as_deref(), Some("InstallComponentFailed"));
    let message = installed.message.clone().unwrap();
    for problem in [
        "broken.clusterserviceversion.yaml",
        "other.clusterserviceversion.yaml",
        "ResourceQuota",
    ] {
        assert!(
            message.contains(problem),
            "{problem} missing from: {message}"
        );
    }
    let lookup = &status.bundle_lookups.as_ref().unwrap()[0];
    assert_eq!(lookup.path, broken);
    let failed = &lookup.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (failed.type_.as_str(), failed.status.as_str()),
        ("BundleLookupFailed", "True")
    );

    let subscription = fixture
        .wait_condition("broken", "BundleUnpackFailed", "True")
        .await;
    let plan_failed = condition(&subscription, "InstallPlanFailed").unwrap();
    assert_eq!(plan_failed.status, "True");
    assert_eq!(
        plan_failed.reason.as_deref(),
        Some("InstallComponentFailed")
    );
    assert_eq!(plan_failed.message.as_deref(), Some(message.as_str()));
    let unpack = condition(&subscription, "BundleUnpackFailed").unwrap();
    assert!(
        unpack
            .message
            .as_deref()
            .unwrap()
            .starts_with("bundle unpacking failed.")
    );
    assert_eq!(
        subscription.status.as_ref().unwrap().state.as_deref(),
        Some("UpgradePending")
    );

    let webhook_plan = fixture
        .wait_plan_phase("webhook-operator.v0.1.0", "Failed")
        .await;
    let message = webhook_plan
        .status
        .as_ref()
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert!(
        message.contains("names Deployment \"missing-controller\""),
        "{message}"
    );
    let subscription = fixture
        .wait_condition("webhook", "InstallPlanFailed", "True")
        .await;
    assert!(
        condition(&subscription, "BundleUnpackFailed").is_none(),
        "the bundle itself was readable"
    );

    // Failed plans are records: not retried, no CSV.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(fixture.plans().len(), 2);
    assert!(
        fixture
            .plans()
            .iter()
            .all(|plan| plan_phase(plan) == "Failed")
    );
    for csv in ["broken-operator.v0.1.0", "webhook-operator.v0.1.0"] {
        assert!(
            fixture
                .env
                .api
                .get::<ClusterServiceVersion>(NAMESPACE, csv)
                .is_none()
        );
    }
    fixture
        .assert_no_writes_for(Duration::from_secs(2), "failed plans")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_keep_the_plan_installing_until_the_secret_is_fixed() {
    let fixture = Fixture::start().await;
    // The catalog was loaded with good credentials; then the Secret goes bad.
    fixture.set_pull_secret(&fixture.wrong_credentials()).await;
    fixture.subscribe("widgets", |_| {}).await;
    let csv_name = "widget-operator.v1.2.0";
    let image = fixture
        .env
        .registry
        .image("opcat-examples/widget-operator-bundle:v1.2.0");

    let plan = fixture
        .wait_plan(csv_name, "the pull failure is reported", |plan| {
            // Not the registry's port: that may hold "401" too.
            plan.status
                .as_ref()
                .and_then(|s| s.message.as_deref())
                .is_some_and(|m| m.replace(&image, "").contains("401"))
        })
        .await;
    assert_eq!(plan_phase(&plan), "Installing");
    let message = plan.status.as_ref().unwrap().message.clone().unwrap();
    assert!(message.contains(&image), "names the image: {message}");
    assert!(
        message.contains(&fixture.env.registry.host),
        "names the registry: {message}"
    );
    assert!(
        message.contains("registry-creds"),
        "names the secret tried: {message}"
    );
    assert!(
        !message.contains("not-the-password"),
        "never the secret data: {message}"
    );
    let lookup = &plan
        .status
        .as_ref()
        .unwrap()
        .bundle_lookups
        .as_ref()
        .unwrap()[0];
    let pending = &lookup.conditions.as_ref().unwrap()[0];
    assert_eq!(pending.type_, "BundleLookupPending");
    assert_eq!(pending.reason.as_deref(), Some("BundlePullFailed"));

    let subscription = fixture
        .wait_subscription(
            "widgets",
            "the Subscription shows the pull failure",
            |sub| {
                condition(sub, "InstallPlanPending")
                    .and_then(|c| c.message.as_deref())
                    .is_some_and(|m| m.replace(&image, "").contains("401"))
            },
        )
        .await;
    let pending = condition(&subscription, "InstallPlanPending").unwrap();
    assert_eq!(pending.reason.as_deref(), Some("Installing"));
    assert!(
        fixture
            .env
            .api
            .get::<ClusterServiceVersion>(NAMESPACE, csv_name)
            .is_none()
    );

    // Fixing the Secret (and only the Secret) completes the plan.
    fixture.set_pull_secret(&fixture.right_credentials()).await;
    let subscription = fixture.wait_installed("widgets", csv_name).await;
    let plan = fixture.wait_plan_phase(csv_name, "Complete").await;
    assert_eq!(plan.status.as_ref().unwrap().message, None);
    assert!(condition(&subscription, "InstallPlanPending").is_none());
    assert_eq!(fixture.plans().len(), 1);

    // Neither password, nor its base64, in any status or event.
    let mut texts: Vec<String> = fixture
        .plans()
        .iter()
        .map(|plan| serde_json::to_string(&plan.status).unwrap())
        .collect();
    texts.push(serde_json::to_string(&subscription.status).unwrap());
    texts.extend(
        fixture
            .env
            .api
            .list::<k8s_openapi::api::events::v1::Event>(Some(NAMESPACE))
            .iter()
            .map(|event| serde_json::to_string(event).unwrap()),
    );
    assert!(
        texts.iter().any(|t| t.contains("BundlePullFailed")),
        "the failure was reported"
    );
    for secret in [support::REGISTRY_PASSWORD, "not-the-password"] {
        let encoded = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, secret);
        for text in &texts {
            assert!(
                !text.contains(secret) && !text.contains(&encoded),
                "secret data in {text}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_layer_escaping_its_root_installs_nothing() {
    let fixture = Fixture::start().await;
    let dir = fixture.env.registry.scratch("escape-operator-bundle");
    write_tree(
        &dir,
        &BTreeMap::from([
            (
                "manifests/escape.clusterserviceversion.yaml",
                csv("escape-operator.v0.1.0", ""),
            ),
            ("metadata/annotations.yaml", annotations("escape-operator")),
        ]),
    );
    let built = opcat::registry::push::build_bundle_image(&dir).expect("build bundle image");
    let hostile = with_hostile_entry(built, "manifests/../../../escaped-by-bundle");
    let image = fixture
        .env
        .registry
        .image("opcat-examples/escape-operator-bundle:v0.1.0");
    fixture
        .env
        .opcat_registry
        .push(
            &image.parse::<ImageRef>().unwrap(),
            &hostile,
            &support::keyring_for(&fixture.env.registry),
        )
        .await
        .expect("the registry stores it: every digest is right");
    let catalog = catalog_with(
        &fixture.env.images.catalog_dir,
        &[("escape-operator", &image)],
    );
    fixture.load_catalog(catalog, "with-escaping-bundle").await;
    fixture
        .subscribe("escape", |spec| spec.package = "escape-operator".into())
        .await;

    let plan = fixture
        .wait_plan_phase("escape-operator.v0.1.0", "Failed")
        .await;
    let message = plan.status.as_ref().unwrap().message.clone().unwrap();
    assert!(
        message.contains("escaped-by-bundle") && message.contains("\"..\""),
        "the refusal names the entry and why: {message}"
    );
    let subscription = fixture
        .wait_condition("escape", "BundleUnpackFailed", "True")
        .await;
    assert!(condition(&subscription, "BundleUnpackFailed").is_some());
    assert!(
        fixture
            .env
            .api
            .get::<ClusterServiceVersion>(NAMESPACE, "escape-operator.v0.1.0")
            .is_none(),
        "no CSV"
    );
    let deployments = fixture
        .env
        .api
        .list::<k8s_openapi::api::apps::v1::Deployment>(Some(NAMESPACE));
    assert!(
        deployments
            .iter()
            .all(|d| d.metadata.name.as_deref() != Some("broken-controller")),
        "no Deployment of the bundle"
    );
    // Nothing below the cache, nor beside any of its ancestors, where `..` would have led.
    let cache = fixture.env.cache_path();
    let mut escaped: Vec<_> = walk(cache)
        .into_iter()
        .filter(|path| path.ends_with("escaped-by-bundle"))
        .collect();
    escaped.extend(
        cache
            .ancestors()
            .map(|dir| dir.join("escaped-by-bundle"))
            .filter(|path| path.exists()),
    );
    assert!(
        escaped.is_empty(),
        "written outside the unpack root: {escaped:?}"
    );
}

/// Every file below `root` (unreadable directories skipped).
fn walk(root: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => dirs.push(entry.path()),
                Ok(_) => found.push(entry.path()),
                Err(_) => {}
            }
        }
    }
    found
}
