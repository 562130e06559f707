//! Every bundle of the shared certified-operators v4.16 catalog (379 bundles, their manifests
//! embedded as `olm.bundle.object`), turned back into a bundle directory and rendered with
//! opcat's own code for an install mode its CSV supports: how many render and pass the install
//! checks, with and without the bundles that declare dependencies, and why the others are
//! refused. `cargo test --test third_party_certified_bundles -- --nocapture` prints the table
//! docs/olm-compatibility.md quotes; the numbers are pinned so they cannot drift unnoticed.
//!
//! And one real webhook bundle of that catalog, `hulft.v10.6.0` (a validating, a mutating and a
//! conversion webhook, kubebuilder's certificate volume), goes all the way: pushed to the test
//! registry and installed by the CSV reconciler through the in-memory API.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;
mod csv_support;
mod support;
mod webhook_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use bundle_support::{Install, targets};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use opcat::api::ClusterServiceVersionPhase as Phase;
use opcat::api::cluster_service_version::InstallModeType;
use opcat::bundle::{Bundle, RenderError, TargetNamespaces};
use opcat::fbc::Catalog;
use opcat::fbc::property::Property;
use support::Env;

const CATALOG: &str = "fbc/large/certified-operators/catalogs/v4.16";

fn certified_catalog() -> Catalog {
    let root = test_registry::shared_data_dir().join(CATALOG);
    Catalog::load(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()))
}

/// Writes a catalog bundle's embedded manifests as a registry+v1 bundle directory
/// `<root>/<package>/<version>` (the layout `csv_support::installed_csv` reads the package
/// from).
fn write_bundle(bundle: &opcat::fbc::Bundle, root: &Path) -> PathBuf {
    let dir = root.join(&bundle.package).join(bundle.version.to_string());
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::create_dir_all(dir.join("metadata")).unwrap();
    for (index, object) in bundle.objects().enumerate() {
        std::fs::write(
            dir.join("manifests").join(format!("{index:02}.json")),
            object.decode().unwrap(),
        )
        .unwrap();
    }
    std::fs::write(
        dir.join("metadata/annotations.yaml"),
        format!(
            "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  \
             operators.operatorframework.io.bundle.manifests.v1: manifests/\n  \
             operators.operatorframework.io.bundle.metadata.v1: metadata/\n  \
             operators.operatorframework.io.bundle.package.v1: {}\n  \
             operators.operatorframework.io.bundle.channels.v1: stable\n",
            bundle.package
        ),
    )
    .unwrap();
    dir
}

/// Targets of an install mode the CSV supports, AllNamespaces first (as a cluster admin would
/// install an operator that offers it).
fn supported_targets(bundle: &Bundle) -> TargetNamespaces {
    let supports = |mode| bundle.csv.spec.supports_install_mode(mode);
    if supports(InstallModeType::AllNamespaces) {
        TargetNamespaces::All
    } else if supports(InstallModeType::OwnNamespace) {
        targets(&["operators"])
    } else if supports(InstallModeType::SingleNamespace) {
        targets(&["workloads"])
    } else {
        targets(&["workloads", "other-workloads"])
    }
}

/// Why a bundle is not installable, as a short label.
fn refusal(result: &Result<(), String>) -> Option<&str> {
    result.as_ref().err().map(String::as_str)
}

/// Renders one catalog bundle; `Err` is the refusal's kind and first problem.
fn render(bundle: &opcat::fbc::Bundle, scratch: &Path) -> (Result<(), String>, bool) {
    let dir = write_bundle(bundle, scratch);
    let loaded = match Bundle::load(&dir) {
        Ok(loaded) => loaded,
        Err(error) => {
            let kinds: Vec<&str> = error.problems().iter().map(|p| p.kind()).collect();
            return (Err(format!("load: {}", kinds.join(", "))), false);
        }
    };
    let webhooks = !opcat::bundle::serving::served_deployments(&loaded.csv).is_empty();
    let install = Install::new(&loaded, "operators", supported_targets(&loaded));
    let result = match install.try_render(&loaded) {
        Ok(_) => Ok(()),
        Err(RenderError::Invalid(error)) => Err(format!(
            "{}: {}",
            error.kind(),
            error
                .problems
                .first()
                .map(ToString::to_string)
                .unwrap_or_default()
        )),
        Err(error) => Err(format!("{}: {error}", error.kind())),
    };
    (result, webhooks)
}

fn has_dependencies(bundle: &opcat::fbc::Bundle) -> bool {
    bundle
        .properties
        .iter()
        .any(|p| matches!(p, Property::PackageRequired(_) | Property::GvkRequired(_)))
}

#[test]
fn third_party_certified_bundles_render_and_pass_the_install_checks() {
    let catalog = certified_catalog();
    let scratch = tempfile::tempdir().unwrap();
    let (mut total, mut passed, mut with_webhooks, mut webhooks_passed) = (0, 0, 0, 0);
    let (mut no_deps, mut no_deps_passed, mut before) = (0, 0, 0);
    let mut refusals: BTreeMap<String, usize> = BTreeMap::new();
    for package in catalog.packages() {
        for bundle in package.bundles() {
            let (result, webhooks) = render(bundle, scratch.path());
            let ok = result.is_ok();
            total += 1;
            passed += usize::from(ok);
            with_webhooks += usize::from(webhooks);
            webhooks_passed += usize::from(webhooks && ok);
            if !has_dependencies(bundle) {
                no_deps += 1;
                no_deps_passed += usize::from(ok);
                // What opcat installed before webhooks and API services were supported.
                before += usize::from(ok && !webhooks);
            }
            if let Some(reason) = refusal(&result) {
                *refusals.entry(reason.to_owned()).or_default() += 1;
            }
        }
    }
    println!("certified-operators v4.16: {total} bundles");
    println!(
        "  render + install checks pass: {passed} ({with_webhooks} have webhooks or API \
         services, {webhooks_passed} of them pass)"
    );
    println!(
        "  without dependencies: {no_deps} bundles, {no_deps_passed} pass; with dependencies: \
         {} bundles, {} pass once their dependencies are installed",
        total - no_deps,
        passed - no_deps_passed
    );
    println!("  before webhook support: {before} (no dependencies, no webhooks)");
    for (reason, count) in &refusals {
        println!("  refused ({count}): {reason}");
    }
    assert_eq!(total, 379);
    assert_eq!(with_webhooks, 65);
    assert_eq!(
        (passed, webhooks_passed, no_deps, no_deps_passed, before),
        (379, 65, 359, 359, 305),
        "refusals: {refusals:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn third_party_a_certified_webhook_bundle_installs() {
    use csv_support::*;
    use webhook_support::handshake;

    let certified = certified_catalog();
    let source = certified
        .packages()
        .flat_map(|package| package.bundles())
        .find(|bundle| bundle.name == "hulft.v10.6.0")
        .expect("hulft.v10.6.0 in the catalog");
    let scratch = tempfile::tempdir().unwrap();
    let dir = write_bundle(source, scratch.path());

    // Rendered by opcat: the CRD loses the bundle's kubebuilder conversion, gets OLM's.
    let bundle = bundle_support::load(&dir);
    let rendered = Install::all(&bundle, "hulft").render(&bundle);
    assert_eq!(rendered.conversions.len(), 1);
    assert_eq!(rendered.webhooks.len(), 2);

    // Installed by the CSV reconciler.
    let ns = "hulft";
    let mut env = Env::new().await;
    namespaces(&env, &[ns, "kube-system"]).await;
    catalog_with_secrets(&env, &["registry-creds"]).await;
    operator_group(&env, ns, "group", &[""]).await;
    let image = push_bundle(&env, &dir, "opcat-examples/hulft-bundle:v10.6.0").await;
    let csv = env
        .create(&installed_csv(&dir, ns, &source.package, &image))
        .await;
    env.start_manager();
    wait_phase(&env, ns, &csv.name_any(), Phase::Succeeded).await;

    let secret = env
        .api
        .get::<Secret>(ns, "hulft-controller-manager-service-cert")
        .expect("certificate Secret");
    let text = |key: &str| String::from_utf8(secret.data.as_ref().unwrap()[key].0.clone()).unwrap();
    let config = env
        .api
        .list::<ValidatingWebhookConfiguration>(None)
        .into_iter()
        .find(|config| config.webhooks.as_ref().unwrap()[0].name == "vhulft.kb.io")
        .expect("the validating webhook");
    let webhook = &config.webhooks.unwrap()[0];
    let bundle_pem = String::from_utf8(webhook.client_config.ca_bundle.clone().unwrap().0).unwrap();
    handshake(
        &bundle_pem,
        &text("tls.crt"),
        &text("tls.key"),
        "hulft-controller-manager-service.hulft.svc",
    )
    .unwrap();
    let crd = env
        .api
        .get::<CustomResourceDefinition>("", "hulfts.hulft.saison-technology.com")
        .unwrap();
    let service = webhook_support::conversion_client(&crd).service.unwrap();
    assert_eq!(
        (service.name.as_str(), service.namespace.as_str()),
        ("hulft-controller-manager-service", ns)
    );
    env.stop_manager().await;
}
