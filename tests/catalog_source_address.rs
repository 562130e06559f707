//! CatalogSources that name a registry server (`spec.address`, issue 25), with the real
//! `opcat catalog serve` as the server: installs with the catalog's pull secret, a server that
//! goes away and comes back with an upgrade, and operator-sdk's `run bundle` sequence.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod serve_support;
mod subscription_support;
mod support;

use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use opcat::api::{CatalogSource, CatalogSourceSpec};
use opcat::pull_secrets::CatalogRef;
use serve_support::{CatalogServe, write_catalog};
use subscription_support::*;

const WIDGET: &str = "widget-operator";

/// A `grpc` CatalogSource `olm/examples` for `address` (none: created as operator-sdk does,
/// with neither image nor address), with the pull secret.
fn address_catalog(address: Option<&str>) -> CatalogSource {
    let mut catalog = CatalogSource::new(
        CATALOG,
        CatalogSourceSpec {
            source_type: "grpc".into(),
            address: address.map(str::to_owned),
            secrets: Some(vec![PULL_SECRET.into()]),
            display_name: Some("widget-operator-bundle".into()),
            publisher: Some("operator-sdk".into()),
            ..CatalogSourceSpec::default()
        },
    );
    catalog.metadata.namespace = Some(CATALOG_NAMESPACE.into());
    catalog
}

/// Waits until `olm/examples` is READY reading `address`, with the content digest of `config`
/// when given; returns it.
async fn wait_ready_at(fixture: &Fixture, address: &str) -> CatalogSource {
    fixture
        .env
        .wait_for::<CatalogSource>(CATALOG_NAMESPACE, CATALOG, TIMEOUT, |catalog| {
            catalog
                .status
                .as_ref()
                .and_then(|status| status.connection_state.as_ref())
                .is_some_and(|state| {
                    state.address.as_deref() == Some(address)
                        && state.last_observed_state == "READY"
                })
        })
        .await
}

/// The state `olm/examples` reports.
fn observed_state(catalog: &CatalogSource) -> (&str, Option<&str>) {
    let status = catalog.status.as_ref().expect("status");
    let state = status.connection_state.as_ref().expect("connectionState");
    (state.last_observed_state.as_str(), state.address.as_deref())
}

/// The Ready condition's (status, reason).
fn ready(catalog: &CatalogSource) -> (String, String) {
    let conditions = catalog
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_deref()
        .unwrap();
    let ready = conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .expect("Ready");
    (ready.status.clone(), ready.reason.clone())
}

/// The copy of the pull secret in the install namespace and the ServiceAccounts wearing it.
fn assert_pull_secret_propagated(fixture: &Fixture) {
    let copy = CatalogRef {
        namespace: CATALOG_NAMESPACE.to_owned(),
        name: CATALOG.to_owned(),
    }
    .copy_name(PULL_SECRET);
    let secret = fixture
        .env
        .api
        .get::<Secret>(NAMESPACE, &copy)
        .expect("the catalog's pull secret is copied into the install namespace");
    assert_eq!(secret.labels()["opcat.dev/managed"], "true");
    let attached = fixture
        .env
        .api
        .get::<ServiceAccount>(NAMESPACE, "widget-controller")
        .and_then(|sa| sa.image_pull_secrets)
        .unwrap_or_default();
    assert!(
        attached.iter().any(|entry| entry.name == copy),
        "the operator's ServiceAccount lists the copy: {attached:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_catalog_installs_with_its_pull_secret_and_converges_without_writes() {
    let fixture = Fixture::start_bare().await;
    let server = CatalogServe::start(&fixture.env.images.catalog_dir).await;
    fixture
        .env
        .create(&address_catalog(Some(&server.address)))
        .await;
    let catalog = wait_ready_at(&fixture, &server.address).await;
    let status = catalog.status.as_ref().unwrap();
    assert_eq!(status.package_count, Some(2));
    assert!(
        status
            .resolved_image_digest
            .as_deref()
            .is_some_and(|digest| digest.starts_with("sha256:")),
        "the content digest: {status:?}"
    );
    assert_eq!(
        status.latest_image_registry_poll, None,
        "no image is polled"
    );
    assert_eq!(ready(&catalog), ("True".into(), "CatalogLoaded".into()));

    fixture.subscribe("widgets", |_| {}).await;
    fixture
        .wait_installed("widgets", "widget-operator.v1.2.0")
        .await;
    // The bundle image is in a registry that needs the catalog's pull secret (basic auth).
    fixture
        .wait_csv_phase("widget-operator.v1.2.0", "Succeeded")
        .await;
    assert_pull_secret_propagated(&fixture);
    let entries =
        opcat::controller::plan_record::entries(&fixture.plans_for("widget-operator.v1.2.0")[0])
            .unwrap();
    assert_eq!(
        entries[0].catalog_digest,
        status.resolved_image_digest.clone().unwrap()
    );

    // Health checks every half second talk to the server, never to the API server: no write,
    // and no read either (everything comes from the watch caches).
    fixture
        .assert_no_writes_for(Duration::from_secs(3), "converged address catalog")
        .await;
    let before = fixture.env.manager_requests().total();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        fixture.env.manager_requests().total() - before,
        0,
        "a converged address catalog makes no API request"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_keeps_operators_and_its_return_brings_the_upgrade() {
    let fixture = Fixture::start_bare().await;
    let scratch = fixture.env.registry.scratch("address-catalogs");
    let old = widget_catalog(&fixture.env, |channel, bundle| {
        channel == "stable" && bundle != "widget-operator.v1.2.0"
    });
    let server = CatalogServe::start(&write_catalog(&scratch.join("old"), &old)).await;
    let address = server.address.clone();
    fixture.env.create(&address_catalog(Some(&address))).await;
    wait_ready_at(&fixture, &address).await;
    fixture.subscribe("widgets", |_| {}).await;
    fixture
        .wait_installed("widgets", "widget-operator.v1.1.0")
        .await;
    fixture
        .wait_csv_phase("widget-operator.v1.1.0", "Succeeded")
        .await;

    // The server goes away (its pod is deleted, say).
    server.stop().await;
    let failing = fixture
        .env
        .wait_for::<CatalogSource>(CATALOG_NAMESPACE, CATALOG, TIMEOUT, |catalog| {
            catalog.status.as_ref().is_some_and(|s| {
                s.connection_state
                    .as_ref()
                    .is_some_and(|c| c.last_observed_state == "TRANSIENT_FAILURE")
            })
        })
        .await;
    assert_eq!(
        observed_state(&failing),
        ("TRANSIENT_FAILURE", Some(address.as_str()))
    );
    assert_eq!(
        ready(&failing),
        ("False".into(), "RegistryServerUnreachable".into())
    );
    let message = failing.status.as_ref().unwrap().message.clone().unwrap();
    assert!(message.contains(&address), "{message}");
    assert!(
        message.contains("still serving the catalog loaded earlier"),
        "{message}"
    );
    // Installed operators keep running: nothing is removed or rolled back. The server is tried
    // again at the fixed check interval (0.5 s in tests), not in a hot loop.
    let controller = opcat::metrics::controllers::CATALOG_SOURCE;
    let before = fixture.env.reconciles(controller);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let retries = fixture.env.reconciles(controller) - before;
    assert!(
        (1.0..=15.0).contains(&retries),
        "a server that is away is retried every 0.5 s: {retries} reconciles in 3 s"
    );
    let csv = fixture
        .wait_csv_phase("widget-operator.v1.1.0", "Succeeded")
        .await;
    assert!(csv.metadata.deletion_timestamp.is_none());
    let deployments: Api<Deployment> = Api::namespaced(fixture.env.client.clone(), NAMESPACE);
    assert!(
        deployments
            .get_opt("widget-controller")
            .await
            .unwrap()
            .is_some()
    );
    let still = fixture
        .env
        .api
        .get::<CatalogSource>(CATALOG_NAMESPACE, CATALOG)
        .unwrap();
    assert_eq!(
        observed_state(&still).0,
        "TRANSIENT_FAILURE",
        "retried at a fixed interval, not dropped"
    );

    // It comes back at the same address with a new release: the Subscription upgrades.
    let new = widget_catalog(&fixture.env, |channel, _| channel == "stable");
    let server = CatalogServe::start_on(&write_catalog(&scratch.join("new"), &new), &address).await;
    wait_ready_at(&fixture, &address).await;
    fixture
        .wait_upgrade("widget-operator.v1.1.0", "widget-operator.v1.2.0")
        .await;
    fixture
        .wait_csv_phase("widget-operator.v1.2.0", "Succeeded")
        .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_sdk_run_bundle_sequence_installs() {
    let fixture = Fixture::start_bare().await;
    // `operator-sdk run bundle`: a CatalogSource with neither image nor address first.
    let mut created = address_catalog(None);
    created.spec.secrets = None;
    fixture.env.create(&created).await;
    let waiting = fixture
        .env
        .wait_for::<CatalogSource>(CATALOG_NAMESPACE, CATALOG, TIMEOUT, |catalog| {
            catalog.status.is_some()
        })
        .await;
    assert_eq!(ready(&waiting), ("False".into(), "NoSource".into()));
    let status = waiting.status.as_ref().unwrap();
    assert_ne!(
        status.reason.as_deref(),
        Some("SpecInvalidError"),
        "a wait, not an error"
    );

    // Its registry pod runs; the CatalogSource gets the address and the pull secret (a Get and
    // an Update, as operator-sdk's createAnnotatedRegistry).
    let bundle_only = widget_catalog(&fixture.env, |channel, bundle| {
        channel == "stable" && bundle == "widget-operator.v1.0.0"
    });
    let scratch = fixture.env.registry.scratch("sdk-catalog");
    let server = CatalogServe::start(&write_catalog(&scratch, &bundle_only)).await;
    let api: Api<CatalogSource> = Api::namespaced(fixture.env.client.clone(), CATALOG_NAMESPACE);
    let mut current = api.get(CATALOG).await.unwrap();
    current.spec.address = Some(server.address.clone());
    current.spec.secrets = Some(vec![PULL_SECRET.into()]);
    current.annotations_mut().insert(
        "operators.operatorframework.io/registry-pod-name".into(),
        "widget-operator-bundle-registry".into(),
    );
    api.replace(CATALOG, &PostParams::default(), &current)
        .await
        .unwrap();
    wait_ready_at(&fixture, &server.address).await;

    fixture
        .subscribe("widget-operator-v1-0-0-sub", |spec| {
            spec.channel = Some("stable".into());
            spec.package = WIDGET.into();
            spec.starting_csv = Some("widget-operator.v1.0.0".into());
        })
        .await;
    fixture
        .wait_installed("widget-operator-v1-0-0-sub", "widget-operator.v1.0.0")
        .await;
    fixture
        .wait_csv_phase("widget-operator.v1.0.0", "Succeeded")
        .await;
    assert_pull_secret_propagated(&fixture);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_served_without_an_image_is_installed_from_its_manifests() {
    use base64::Engine as _;
    let fixture = Fixture::start_bare().await;
    // widget-operator v1.0.0 with its manifests in the catalog and no bundle image: the server
    // sends them as `Bundle.object`.
    let mut config = widget_catalog(&fixture.env, |channel, bundle| {
        channel == "stable" && bundle == "widget-operator.v1.0.0"
    });
    let manifests = fixture
        .env
        .images
        .bundles_dir
        .join("widget-operator/1.0.0/manifests");
    let bundle = config
        .bundles
        .iter_mut()
        .find(|b| b.name == "widget-operator.v1.0.0")
        .unwrap();
    bundle.image.clear();
    let mut files: Vec<_> = std::fs::read_dir(&manifests)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    files.sort();
    for file in files {
        let data = base64::engine::general_purpose::STANDARD.encode(std::fs::read(file).unwrap());
        bundle.properties.push(opcat::fbc::Property::BundleObject(
            opcat::fbc::property::BundleObject { data },
        ));
    }
    let scratch = fixture.env.registry.scratch("embedded-catalog");
    let server = CatalogServe::start(&write_catalog(&scratch, &config)).await;
    fixture
        .env
        .create(&address_catalog(Some(&server.address)))
        .await;
    wait_ready_at(&fixture, &server.address).await;
    fixture.subscribe("widgets", |_| {}).await;
    fixture
        .wait_installed("widgets", "widget-operator.v1.0.0")
        .await;
    let csv = fixture
        .wait_csv_phase("widget-operator.v1.0.0", "Succeeded")
        .await;
    assert_eq!(
        csv.annotations()["opcat.dev/bundle-image"],
        "",
        "no image was pulled"
    );
    assert!(
        fixture
            .env
            .api
            .get::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(
                "",
                "widgets.example.opcat.dev"
            )
            .is_some(),
        "the bundle's CRD, sent by the server, is installed"
    );
    assert_pull_secret_propagated(&fixture);
    server.stop().await;
}
