//! Subscription → InstallPlan → CSV: first installs, `startingCSV`, resolution failures and
//! catalog health, through the manager with the real registry.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod subscription_support;
mod support;

use std::time::Duration;

use kube::ResourceExt;
use opcat::api::{Approval, FINALIZER};
use opcat::controller::{keys, plan_record};
use subscription_support::phases::CsvPhases;
use subscription_support::{
    CATALOG, CATALOG_NAMESPACE, Fixture, NAMESPACE, TIMEOUT, condition, plan_csvs, plan_phase,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_install_takes_the_default_channel_head_and_converges_without_writes() {
    let fixture = Fixture::start().await;
    fixture.subscribe("widgets", |_| {}).await;

    // stable is the default channel; its head is v1.2.0.
    let csv_name = "widget-operator.v1.2.0";
    let plan = fixture.wait_plan_phase(csv_name, "Complete").await;
    assert!(plan.name_any().starts_with("install-"));
    assert_eq!(plan.spec.approval, Approval::Automatic);
    assert!(plan.spec.approved);
    assert_eq!(plan.spec.source.as_deref(), Some(CATALOG));
    assert_eq!(
        plan.spec.source_namespace.as_deref(),
        Some(CATALOG_NAMESPACE)
    );
    assert_eq!(
        plan.annotations()[keys::install_plan::SUBSCRIPTION],
        "widgets"
    );
    let entries = plan_record::entries(&plan).unwrap();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(entry.name, csv_name);
    assert_eq!(entry.package, "widget-operator");
    assert_eq!(entry.channel, "stable");
    assert_eq!(entry.version, "1.2.0");
    assert_eq!(entry.catalog(), "olm/examples");
    assert!(entry.catalog_digest.starts_with("sha256:"));
    assert_eq!(entry.subscription, "widgets");
    assert_eq!(entry.replaces, None);
    assert!(entry.required_by.is_none());
    let owner = &plan.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Subscription", "widgets")
    );
    assert_ne!(owner.controller, Some(true));
    let status = plan.status.as_ref().unwrap();
    assert_eq!(status.catalog_sources, [CATALOG]);
    assert!(status.start_time.is_some());
    let steps = status.plan.as_ref().unwrap();
    let described: Vec<(&str, &str, &str)> = steps
        .iter()
        .map(|s| {
            (
                s.resource.kind.as_str(),
                s.resource.name.as_str(),
                s.status.as_str(),
            )
        })
        .collect();
    assert_eq!(described[0], ("ClusterServiceVersion", csv_name, "Created"));
    assert!(
        described.contains(&(
            "CustomResourceDefinition",
            "widgets.example.opcat.dev",
            "Created"
        )),
        "{described:?}"
    );
    assert!(
        described.contains(&("Service", "widget-controller-metrics", "Created")),
        "{described:?}"
    );

    // The CSV: the bundle's, with opcat's contract, the finalizer, the pinned bundle image.
    let csv = fixture.wait_csv(csv_name).await;
    assert_eq!(csv.finalizers(), [FINALIZER]);
    assert_eq!(csv.labels()["app.kubernetes.io/managed-by"], "opcat");
    assert_eq!(
        csv.labels()[keys::csv::CATALOG_NAMESPACE_LABEL],
        CATALOG_NAMESPACE
    );
    assert_eq!(csv.labels()[keys::csv::CATALOG_NAME_LABEL], CATALOG);
    let bundle_image = &csv.annotations()[keys::csv::BUNDLE_IMAGE];
    let expected_repo = fixture
        .env
        .registry
        .image("opcat-examples/widget-operator-bundle@sha256:");
    assert!(bundle_image.starts_with(&expected_repo), "{bundle_image}");
    assert_eq!(csv.annotations()[keys::csv::CATALOG], "olm/examples");
    assert_eq!(csv.annotations()[keys::csv::SUBSCRIPTION], "widgets");
    assert_eq!(csv.annotations()[keys::csv::INSTALL_PLAN], plan.name_any());
    assert_eq!(csv.annotations()[keys::csv::PACKAGE], "widget-operator");
    // The bundle's properties, as OLM records them: later resolutions read them.
    let properties: serde_json::Value =
        serde_json::from_str(&csv.annotations()[keys::csv::PROPERTIES]).unwrap();
    let types: Vec<&str> = properties["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["olm.gvk", "olm.package"]);
    assert_eq!(csv.spec.replaces, None, "a first install replaces nothing");
    assert_eq!(csv.spec.version.as_deref(), Some("1.2.0"));

    let subscription = fixture.wait_installed("widgets", csv_name).await;
    let status = subscription.status.as_ref().unwrap();
    assert_eq!(status.current_csv.as_deref(), Some(csv_name));
    let reference = status.install_plan_ref.as_ref().unwrap();
    assert_eq!(reference.name.as_deref(), Some(plan.name_any().as_str()));
    assert_eq!(reference.uid, plan.uid());
    assert_eq!(status.install_plan.as_ref().unwrap().name, plan.name_any());
    assert_eq!(status.install_plan_generation, plan.spec.generation);
    let health = status.catalog_health.as_ref().unwrap();
    assert_eq!(health.len(), 1);
    assert!(health[0].healthy);
    assert_eq!(health[0].catalog_source_ref.name.as_deref(), Some(CATALOG));
    let unhealthy = condition(&subscription, "CatalogSourcesUnhealthy").unwrap();
    assert_eq!(
        (unhealthy.status.as_str(), unhealthy.reason.as_deref()),
        ("False", Some("AllCatalogSourcesHealthy"))
    );
    assert!(condition(&subscription, "InstallPlanPending").is_none());
    assert!(condition(&subscription, "ResolutionFailed").is_none());

    // The CSV reconciler's job (faked here): the operator runs. Nothing newer: nothing changes.
    fixture.wait_csv_phase(csv_name, "Succeeded").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    fixture
        .assert_no_writes_for(Duration::from_secs(3), "converged Subscription")
        .await;
    assert_eq!(plan_csvs(&fixture.plans()), [csv_name]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starting_csv_installs_that_version_then_upgrades_from_it() {
    let fixture = Fixture::start().await;
    let phases = CsvPhases::start(&fixture.env).await;
    fixture
        .subscribe("widgets", |spec| {
            spec.channel = Some("stable".into());
            spec.starting_csv = Some("widget-operator.v1.0.0".into());
        })
        .await;
    // v1.0.0 is replaced (and deleted) as soon as the upgrade succeeds, so it is checked from
    // what the watch saw rather than polled for.
    fixture
        .wait_plan_phase("widget-operator.v1.0.0", "Complete")
        .await;
    // v1.2.0's skipRange (>=1.0.0 <1.2.0) covers 1.0.0 and it is closest to the head: OLM v0
    // jumps straight there, over v1.1.0.
    fixture
        .wait_upgrade("widget-operator.v1.0.0", "widget-operator.v1.2.0")
        .await;
    // Not before the installed CSV succeeded.
    phases
        .assert_succeeded_before(
            &fixture.env,
            "widget-operator.v1.0.0",
            "widget-operator.v1.2.0",
        )
        .await;
    let first = phases
        .first_seen("widget-operator.v1.0.0")
        .expect("v1.0.0 was seen");
    assert_eq!(first.spec.version.as_deref(), Some("1.0.0"));
    assert_eq!(
        plan_csvs(&fixture.plans()),
        ["widget-operator.v1.0.0", "widget-operator.v1.2.0"]
    );
    fixture
        .wait_installed("widgets", "widget-operator.v1.2.0")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolution_failures_and_unhealthy_catalogs_are_reported_without_install_plans() {
    let fixture = Fixture::start().await;
    fixture
        .subscribe("no-package", |spec| {
            spec.package = "nonexistent-operator".into()
        })
        .await;
    fixture
        .subscribe("no-channel", |spec| spec.channel = Some("beta".into()))
        .await;
    fixture
        .subscribe("no-starting-csv", |spec| {
            spec.starting_csv = Some("widget-operator.v9.9.9".into())
        })
        .await;
    fixture
        .subscribe("no-catalog", |spec| spec.catalog_source = "missing".into())
        .await;
    // A catalog whose image cannot be read (no such tag): unhealthy and not loaded.
    let missing_image = fixture
        .env
        .registry
        .image("opcat-examples/catalog:does-not-exist");
    fixture
        .create_catalog_source_for("sick", &missing_image)
        .await;
    fixture
        .subscribe("sick-catalog", |spec| spec.catalog_source = "sick".into())
        .await;

    let cases = [
        (
            "no-package",
            "constraints not satisfiable: no operators found in package nonexistent-operator in \
             the catalog referenced by subscription no-package, subscription no-package exists",
        ),
        (
            "no-channel",
            "constraints not satisfiable: no operators found in channel beta of package \
             widget-operator in the catalog referenced by subscription no-channel, subscription \
             no-channel exists",
        ),
        (
            "no-starting-csv",
            "constraints not satisfiable: no operators found with name widget-operator.v9.9.9 in \
             channel stable of package widget-operator in the catalog referenced by subscription \
             no-starting-csv, subscription no-starting-csv exists",
        ),
        (
            "no-catalog",
            "constraints not satisfiable: no operators found from catalog missing in namespace \
             olm referenced by subscription no-catalog, subscription no-catalog exists",
        ),
    ];
    for (name, message) in cases {
        let subscription = fixture
            .wait_condition(name, "ResolutionFailed", "True")
            .await;
        let failed = condition(&subscription, "ResolutionFailed").unwrap();
        assert_eq!(
            failed.reason.as_deref(),
            Some("ConstraintsNotSatisfiable"),
            "{name}"
        );
        assert_eq!(failed.message.as_deref(), Some(message), "{name}");
        assert!(
            subscription.status.as_ref().unwrap().current_csv.is_none(),
            "{name}"
        );
    }

    let missing = fixture
        .wait_condition("no-catalog", "CatalogSourcesUnhealthy", "True")
        .await;
    let health = condition(&missing, "CatalogSourcesUnhealthy").unwrap();
    assert_eq!(
        health.reason.as_deref(),
        Some("UnhealthyCatalogSourceFound")
    );
    assert_eq!(
        health.message.as_deref(),
        Some("targeted catalogsource olm/missing missing")
    );

    let sick = fixture
        .wait_condition("sick-catalog", "CatalogSourcesUnhealthy", "True")
        .await;
    let health = condition(&sick, "CatalogSourcesUnhealthy").unwrap();
    assert_eq!(
        health.message.as_deref(),
        Some("targeted catalogsource olm/sick unhealthy")
    );
    let entries = sick
        .status
        .as_ref()
        .unwrap()
        .catalog_health
        .as_ref()
        .unwrap();
    assert!(
        entries
            .iter()
            .any(|e| e.catalog_source_ref.name.as_deref() == Some("sick") && !e.healthy)
    );
    assert!(
        condition(&sick, "ResolutionFailed").is_none(),
        "nothing resolved yet"
    );

    assert!(
        fixture.plans().is_empty(),
        "no InstallPlan for unresolvable Subscriptions"
    );
    // DESIGN invariant 7: these are expected waits: conditions, looked at again after a fixed
    // requeue, and never counted as reconcile errors (which back off exponentially).
    let reconciles = || {
        fixture
            .env
            .metric(r#"opcat_reconcile_total{controller="subscription"}"#)
            .unwrap_or(0.0)
    };
    let before = reconciles();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        reconciles() > before,
        "waiting Subscriptions are looked at again"
    );
    let metrics = fixture.env.context().metrics.encode();
    let errors: Vec<_> = metrics
        .lines()
        .filter(|line| {
            line.starts_with(r#"opcat_reconcile_errors_total{controller="subscription""#)
        })
        .filter(|line| !line.ends_with(" 0"))
        .collect();
    assert!(errors.is_empty(), "waits counted as errors: {errors:?}");

    // Fixing the channel resolves and installs; the failure is cleared.
    let api: kube::Api<opcat::api::Subscription> =
        kube::Api::namespaced(fixture.env.client.clone(), NAMESPACE);
    api.patch(
        "no-channel",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"channel": "fast"}})),
    )
    .await
    .unwrap();
    let plan = fixture
        .wait_plan_phase("widget-operator.v2.0.0", "Complete")
        .await;
    assert_eq!(plan_phase(&plan), "Complete");
    let fixed = fixture
        .wait_subscription("no-channel", "resolution failure cleared", |sub| {
            condition(sub, "ResolutionFailed").is_none()
        })
        .await;
    assert_eq!(
        fixed.status.as_ref().unwrap().current_csv.as_deref(),
        Some("widget-operator.v2.0.0")
    );
}

/// Manifest requests the registry answered for the widget bundle's repository.
fn bundle_manifest_requests(fixture: &Fixture) -> usize {
    fixture
        .env
        .registry
        .requests("/widget-operator-bundle/manifests/")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installs_of_one_bundle_in_more_namespaces_ask_the_registry_once() {
    let fixture = Fixture::start().await;
    let csv_name = "widget-operator.v1.2.0";
    fixture.subscribe("widgets", |_| {}).await;
    fixture.wait_installed("widgets", csv_name).await;
    let asked = bundle_manifest_requests(&fixture);
    assert!(asked >= 1, "the first install resolves the bundle's tag");

    // Two more teams subscribe to the same operator with the same catalog credentials: their
    // plans take the tag as it was resolved a moment ago (`--bundle-tag-ttl`).
    for team in ["team-a", "team-b"] {
        fixture.tenant(team).await;
        fixture.subscribe_in(team, "widgets", |_| {}).await;
        let installed = fixture
            .env
            .wait_for::<opcat::api::Subscription>(team, "widgets", TIMEOUT, |sub| {
                sub.status
                    .as_ref()
                    .is_some_and(|s| s.installed_csv.as_deref() == Some(csv_name))
            })
            .await;
        assert_eq!(
            installed.status.and_then(|s| s.installed_csv).as_deref(),
            Some(csv_name),
            "{team} installs"
        );
    }
    assert_eq!(bundle_manifest_requests(&fixture), asked);
}
