//! Manual approval and upgrades when the catalog gains newer versions (replaces, skips and
//! skipRange edges of the example catalog). The upgrade tests publish each new catalog the way a
//! maintainer ships one: the image is re-pushed under the tag the CatalogSource names, and
//! `registryPoll` finds it.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod ops_support;
mod subscription_support;
mod support;

use std::time::Duration;

use kube::ResourceExt;
use opcat::api::Approval;
use opcat::controller::plan_record;
use subscription_support::phases::CsvPhases;
use subscription_support::{
    Fixture, NAMESPACE, TIMEOUT, condition, plan_csvs, plan_phase, widget_catalog,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manual_approval_waits_for_approval_then_installs() {
    let fixture = Fixture::start().await;
    fixture
        .subscribe("widgets", |spec| {
            spec.install_plan_approval = Some(Approval::Manual)
        })
        .await;
    let csv_name = "widget-operator.v1.2.0";
    let plan = fixture.wait_plan_phase(csv_name, "RequiresApproval").await;
    assert_eq!(plan.spec.approval, Approval::Manual);
    assert!(!plan.spec.approved);

    let subscription = fixture
        .wait_subscription("widgets", "waits for approval", |sub| {
            condition(sub, "InstallPlanPending")
                .is_some_and(|c| c.reason.as_deref() == Some("RequiresApproval"))
        })
        .await;
    let status = subscription.status.as_ref().unwrap();
    assert_eq!(status.state.as_deref(), Some("UpgradePending"));
    assert_eq!(status.current_csv.as_deref(), Some(csv_name));
    assert_eq!(status.installed_csv, None);
    assert_eq!(
        status.install_plan_ref.as_ref().unwrap().name.as_deref(),
        Some(plan.name_any().as_str())
    );
    let pending = condition(&subscription, "InstallPlanPending").unwrap();
    assert!(
        pending
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("spec.approved"),
        "{pending:?}"
    );
    assert!(
        fixture
            .env
            .api
            .get::<opcat::api::ClusterServiceVersion>(NAMESPACE, csv_name)
            .is_none(),
        "nothing is installed before approval"
    );
    // Waiting is steady: no writes while the plan waits.
    fixture
        .assert_no_writes_for(Duration::from_secs(2), "a plan waiting for approval")
        .await;

    fixture.approve(&plan.name_any()).await;
    let installed = fixture.wait_installed("widgets", csv_name).await;
    assert!(condition(&installed, "InstallPlanPending").is_none());
    assert_eq!(fixture.plans().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upgrades_follow_the_catalog_along_skip_range_and_replaces() {
    let fixture = Fixture::start_polling().await;
    // The catalog first offers only v1.0.0.
    fixture
        .repush_catalog(
            widget_catalog(&fixture.env, |_, bundle| bundle == "widget-operator.v1.0.0"),
            "only-1.0.0",
        )
        .await;
    fixture.subscribe("widgets", |_| {}).await;
    fixture
        .wait_installed("widgets", "widget-operator.v1.0.0")
        .await;
    fixture
        .wait_csv_phase("widget-operator.v1.0.0", "Succeeded")
        .await;

    // Hold the next install in flight: every Deployment write fails (a 500 the installer retries
    // with backoff) until the fault is cleared below.
    fixture.env.api.inject_failure(
        fake_apiserver::Fault::new(500)
            .verb(fake_apiserver::Verb::Patch)
            .resource("deployments")
            .times(10_000),
    );

    // The catalog image is re-pushed under the same tag; the next poll brings v1.1.0 and v1.2.0 (stable): v1.2.0's skipRange covers 1.0.0 and it
    // is closest to the head, so the upgrade jumps over v1.1.0.
    fixture
        .repush_catalog(
            widget_catalog(&fixture.env, |channel, _| channel == "stable"),
            "stable-1.2.0",
        )
        .await;
    let upgrade = fixture
        .wait_upgrade("widget-operator.v1.0.0", "widget-operator.v1.2.0")
        .await;
    let subscription = fixture
        .wait_subscription("widgets", "v1.2.0 installed", |sub| {
            sub.status
                .as_ref()
                .is_some_and(|s| s.installed_csv.as_deref() == Some("widget-operator.v1.2.0"))
        })
        .await;
    let status = subscription.status.as_ref().unwrap();
    assert_eq!(
        status.current_csv.as_deref(),
        Some("widget-operator.v1.2.0")
    );
    assert_eq!(
        status.install_plan_ref.as_ref().unwrap().name.as_deref(),
        Some(upgrade.name_any().as_str())
    );

    // Switching to fast, where v2.0.0 replaces v1.2.0: nothing happens while v1.2.0 is still
    // installing (upgrades are not chained while one is in flight)...
    fixture
        .repush_catalog(widget_catalog(&fixture.env, |_, _| true), "full")
        .await;
    let api: kube::Api<opcat::api::Subscription> =
        kube::Api::namespaced(fixture.env.client.clone(), NAMESPACE);
    api.patch(
        "widgets",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"spec": {"channel": "fast"}})),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        plan_csvs(&fixture.plans()),
        ["widget-operator.v1.0.0", "widget-operator.v1.2.0"]
    );
    assert_ne!(
        fixture
            .env
            .api
            .get::<opcat::api::ClusterServiceVersion>(NAMESPACE, "widget-operator.v1.2.0")
            .and_then(|csv| csv.status)
            .and_then(|status| status.phase)
            .map(|phase| phase.as_str()),
        Some("Succeeded"),
        "v1.2.0 is still in flight"
    );
    // ...then, once v1.2.0 succeeded, the replaces edge leads to v2.0.0.
    let phases = CsvPhases::start(&fixture.env).await;
    fixture.env.api.clear_failures();
    let upgrade = fixture
        .wait_upgrade("widget-operator.v1.2.0", "widget-operator.v2.0.0")
        .await;
    phases
        .assert_succeeded_before(
            &fixture.env,
            "widget-operator.v1.2.0",
            "widget-operator.v2.0.0",
        )
        .await;
    assert_eq!(plan_record::entries(&upgrade).unwrap()[0].channel, "fast");
    assert_eq!(
        plan_csvs(&fixture.plans()),
        [
            "widget-operator.v1.0.0",
            "widget-operator.v1.2.0",
            "widget-operator.v2.0.0"
        ]
    );
    assert!(
        fixture
            .plans()
            .iter()
            .all(|plan| plan_phase(plan) == "Complete")
    );

    // Uninstall as with OLM: the Subscription, then the CSV.
    fixture
        .wait_csv_phase("widget-operator.v2.0.0", "Succeeded")
        .await;
    let client = fixture.env.client.clone();
    kube::Api::<opcat::api::Subscription>::namespaced(client.clone(), NAMESPACE)
        .delete("widgets", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    kube::Api::<opcat::api::ClusterServiceVersion>::namespaced(client, NAMESPACE)
        .delete(
            "widget-operator.v2.0.0",
            &kube::api::DeleteParams::default(),
        )
        .await
        .unwrap();
    fixture
        .env
        .wait_until("v2.0.0 uninstalled", TIMEOUT, || {
            fixture
                .env
                .api
                .get::<opcat::api::ClusterServiceVersion>(NAMESPACE, "widget-operator.v2.0.0")
                .is_none()
        })
        .await;
    // Every reconciler took part in this install, two upgrades and the uninstall: the
    // ClusterRole allows every request they made.
    let requests = fixture.env.manager_requests();
    ops_support::assert_allowed_by_rbac(&requests);
    assert_status_written_only_by_status_patches(&requests);
}

/// DESIGN invariant 6: status is written with a patch to the status subresource, never with a
/// replace, and never through the main resource of the objects users own.
fn assert_status_written_only_by_status_patches(requests: &fake_apiserver::RequestCounts) {
    use fake_apiserver::Verb;
    for kind in [
        "catalogsources",
        "subscriptions",
        "operatorgroups",
        "installplans",
        "clusterserviceversions",
    ] {
        assert!(
            requests.get_subresource(Verb::Patch, kind, "status") > 0,
            "{kind}: status patched"
        );
        assert_eq!(
            requests.get_subresource(Verb::Update, kind, "status"),
            0,
            "{kind}: status never replaced"
        );
    }
    let main_writes = |kind: &str, verb: Option<Verb>| -> u64 {
        requests
            .iter()
            .filter(|(key, _)| {
                key.verb.is_write()
                    && verb.is_none_or(|verb| key.verb == verb)
                    && key.resource == kind
                    && key.subresource.is_empty()
            })
            .map(|(_, n)| n)
            .sum()
    };
    assert_eq!(
        main_writes("catalogsources", None),
        0,
        "catalogsources belong to users: only status is written"
    );
    // Subscriptions too, but for OLM's component label, set once with a patch of that label.
    assert_eq!(
        (
            main_writes("subscriptions", None),
            main_writes("subscriptions", Some(Verb::Patch))
        ),
        (1, 1),
        "subscriptions belong to users: only status and the component label are written"
    );
    // OperatorGroups too, but for OLM's `olm.providedAPIs` annotation, patched as OLM does
    // when the APIs of the group's CSVs change (never replaced, never deleted).
    assert_eq!(
        main_writes("operatorgroups", None),
        main_writes("operatorgroups", Some(Verb::Patch)),
        "operatorgroups belong to users: only patched for olm.providedAPIs"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skipped_release_upgrades_through_the_skips_edge() {
    let fixture = Fixture::start_polling().await;
    // fast without v2.0.0: head v1.2.0, which skips the bad release v1.1.1.
    fixture
        .repush_catalog(
            widget_catalog(&fixture.env, |_, bundle| bundle != "widget-operator.v2.0.0"),
            "fast-without-2.0.0",
        )
        .await;
    let phases = CsvPhases::start(&fixture.env).await;
    fixture
        .subscribe("widgets", |spec| {
            spec.channel = Some("fast".into());
            spec.starting_csv = Some("widget-operator.v1.1.1".into());
        })
        .await;
    fixture
        .wait_plan_phase("widget-operator.v1.1.1", "Complete")
        .await;
    fixture
        .wait_upgrade("widget-operator.v1.1.1", "widget-operator.v1.2.0")
        .await;
    // v1.1.1 is replaced and deleted as soon as v1.2.0 succeeds: the watch, not a poll, saw it
    // finish installing first.
    phases
        .assert_succeeded_before(
            &fixture.env,
            "widget-operator.v1.1.1",
            "widget-operator.v1.2.0",
        )
        .await;
    fixture
        .wait_installed("widgets", "widget-operator.v1.2.0")
        .await;
}
