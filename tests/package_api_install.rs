//! `kubectl operator install` played step by step against opcat (kubectl-operator
//! `internal/pkg/action/v0/operator_install.go`): the PackageManifest read through the package
//! API from the catalogs the running manager loaded, then the OperatorGroup, the Subscription,
//! the approval of the Manual plan and the wait for the CSV through the Kubernetes API, as the
//! plugin does. Then a catalog push shows in the package API.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod package_api_support;
mod subscription_support;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use opcat::api::{ClusterServiceVersion, InstallPlan, OperatorGroup, Subscription};
use opcat::controller::package_api::view::ContextCatalogs;
use package_api_support::{resource, serve};
use serde_json::{Value, json};
use subscription_support::{Fixture, TIMEOUT, full_catalog};

const NS: &str = "team-x";
const PACKAGE: &str = "widget-operator";

async fn poll<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_operator_install_works_step_by_step() {
    let fixture = Fixture::start().await;
    let env = &fixture.env;
    env.namespace(NS).await;
    let server = serve(Arc::new(ContextCatalogs::new(env.context()))).await;
    let manifests: Api<DynamicObject> = Api::namespaced_with(
        server.as_aggregator(Some(("admin", &["system:masters"]))),
        NS,
        &resource(),
    );

    // 1. Get the PackageManifest in the install namespace.
    let manifest = manifests.get(PACKAGE).await.unwrap();
    let status = &manifest.data["status"];
    // 2. The default channel, its install modes and current CSV, and the catalog.
    let channel_name = status["defaultChannel"].as_str().unwrap().to_owned();
    let channel = status["channels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == channel_name.as_str())
        .unwrap();
    let supported: Vec<&str> = channel["currentCSVDesc"]["installModes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|mode| mode["supported"] == true)
        .map(|mode| mode["type"].as_str().unwrap())
        .collect();
    let current_csv = channel["currentCSV"].as_str().unwrap().to_owned();
    assert!(
        channel["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["name"] == current_csv.as_str())
    );
    let (source, source_namespace) = (
        status["catalogSource"].as_str().unwrap().to_owned(),
        status["catalogSourceNamespace"]
            .as_str()
            .unwrap()
            .to_owned(),
    );
    assert_eq!(
        (source.as_str(), source_namespace.as_str()),
        ("examples", "olm")
    );

    // 3. No OperatorGroup yet: with --create-operator-group, one named after the namespace;
    //    no --watch: AllNamespaces if supported, else OwnNamespace.
    let groups: Api<OperatorGroup> = Api::namespaced(env.client.clone(), NS);
    assert!(
        groups
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    let targets = if supported.contains(&"AllNamespaces") {
        json!(null)
    } else {
        assert!(supported.contains(&"OwnNamespace"), "{supported:?}");
        json!([NS])
    };
    let group: OperatorGroup = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": NS, "namespace": NS},
        "spec": {"targetNamespaces": targets},
    }))
    .unwrap();
    groups.create(&PostParams::default(), &group).await.unwrap();

    // 4. The Subscription: the PackageManifest's catalog, approval Manual (the plugin's default).
    let subscription: Subscription = serde_json::from_value(json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": PACKAGE, "namespace": NS},
        "spec": {"name": PACKAGE, "channel": channel_name, "source": source,
                 "sourceNamespace": source_namespace, "installPlanApproval": "Manual"},
    }))
    .unwrap();
    let subscriptions: Api<Subscription> = Api::namespaced(env.client.clone(), NS);
    subscriptions
        .create(&PostParams::default(), &subscription)
        .await
        .unwrap();

    // 5. Poll until the Subscription names its InstallPlan; approve it.
    let plan_name = poll("installPlanRef", async || {
        let subscription = subscriptions.get(PACKAGE).await.ok()?;
        let value = serde_json::to_value(&subscription).ok()?;
        value["status"]["installPlanRef"]["name"]
            .as_str()
            .map(str::to_owned)
    })
    .await;
    let plans: Api<InstallPlan> = Api::namespaced(env.client.clone(), NS);
    let plan = serde_json::to_value(plans.get(&plan_name).await.unwrap()).unwrap();
    assert_eq!(plan["spec"]["approval"], "Manual");
    plans
        .patch(
            &plan_name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"approved": true}})),
        )
        .await
        .unwrap();

    // 6. Poll until the plan is Complete; its CSV step names the CSV; get it.
    let csv_name = poll("the plan to complete", async || {
        let plan = serde_json::to_value(plans.get(&plan_name).await.ok()?).ok()?;
        (plan["status"]["phase"] == "Complete").then(|| {
            plan["status"]["plan"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|step| step["resource"]["kind"] == "ClusterServiceVersion")
                .and_then(|step| step["resource"]["name"].as_str().map(str::to_owned))
        })?
    })
    .await;
    assert_eq!(csv_name, current_csv);
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(env.client.clone(), NS);
    let csv = poll("the CSV to succeed", async || {
        let csv = serde_json::to_value(csvs.get(&csv_name).await.ok()?).ok()?;
        (csv["status"]["phase"] == "Succeeded").then_some(csv)
    })
    .await;
    assert_eq!(csv["metadata"]["name"], current_csv.as_str());

    // A catalog push without the package: the API follows the catalog opcat loaded.
    let mut config = full_catalog(env);
    config
        .packages
        .retain(|package| package.name != "gadget-operator");
    config
        .channels
        .retain(|channel| channel.package != "gadget-operator");
    config
        .bundles
        .retain(|bundle| bundle.package != "gadget-operator");
    assert!(manifests.get("gadget-operator").await.is_ok());
    fixture.load_catalog(config, "without-gadget").await;
    let gone = manifests.get("gadget-operator").await.unwrap_err();
    assert!(matches!(gone, kube::Error::Api(status) if status.code == 404));
    let _: Value = manifests.get(PACKAGE).await.unwrap().data;
}
