//! `kubectl operator install` played step by step against opcat (kubectl-operator
//! `internal/pkg/action/v0/operator_install.go`): the PackageManifest read through the package
//! API from the catalogs the running manager loaded, then the OperatorGroup, the Subscription,
//! the approval of the Manual plan and the wait for the CSV through the Kubernetes API, as the
//! plugin does. Then a catalog push shows in the package API, and `kubectl operator uninstall
//! --delete-operator` (`internal/pkg/action/v0/operator_uninstall.go`) removes the install
//! through the Operator `<package>.<namespace>`: everything goes, the pull-secret copies too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod package_api_support;
mod subscription_support;
mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use opcat::api::{ClusterServiceVersion, InstallPlan, Operator, OperatorGroup, Subscription};
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

    kubectl_operator_uninstall(env, NS, PACKAGE).await;
    assert!(csvs.get_opt(&csv_name).await.unwrap().is_none());
    assert!(subscriptions.get_opt(PACKAGE).await.unwrap().is_none());
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), NS);
    let copies = secrets
        .list(&ListParams::default().labels("opcat.dev/managed=true"))
        .await
        .unwrap();
    assert!(
        copies.items.is_empty(),
        "pull-secret copies left: {:?}",
        copies.items
    );
    let operators: Api<Operator> = Api::all(env.client.clone());
    assert!(
        operators
            .get_opt(&format!("{PACKAGE}.{NS}"))
            .await
            .unwrap()
            .is_none()
    );
}

/// Waits until `get` answers 404.
async fn wait_gone<K>(api: &Api<K>, name: &str)
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    poll(&format!("{name} to go"), async || {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await;
}

/// `kubectl operator uninstall PACKAGE --delete-operator` (v0) as the plugin does it: find the
/// Subscription of the package and its CSV; list the operands (the custom resources of the
/// CSV's owned CRDs, found through the Operator's references; with `--delete-operator` the
/// strategy is `delete`); delete the Subscription, the operands and the CSV, each waited for;
/// then get the Operator, delete every object it references, wait until it lists none (or is
/// gone), and delete it.
async fn kubectl_operator_uninstall(env: &support::Env, namespace: &str, package: &str) {
    let client = env.client.clone();
    let subscriptions: Api<Subscription> = Api::namespaced(client.clone(), namespace);
    let subscription = subscriptions
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|subscription| subscription.spec.package == package)
        .expect("the package's Subscription");
    let status = subscription
        .status
        .clone()
        .expect("the Subscription has a status");
    let csv_name = status
        .installed_csv
        .clone()
        .or(status.current_csv.clone())
        .expect("the Subscription names its CSV");
    let csvs: Api<ClusterServiceVersion> = Api::namespaced(client.clone(), namespace);
    let csv = csvs.get(&csv_name).await.unwrap();

    // list-operands: the Operator's CSV reference, then the CRs of its owned CRDs.
    let operators: Api<Operator> = Api::all(client.clone());
    let operator_name = format!("{package}.{namespace}");
    // (The user runs it once the install has settled: its Operator lists the CSV.)
    let refs = poll("the Operator to list the CSV", async || {
        let operator = operators.get_opt(&operator_name).await.unwrap()?;
        let refs = operator.status?.components?.refs?;
        refs.iter()
            .any(|r| r.name.as_deref() == Some(csv_name.as_str()))
            .then_some(refs)
    })
    .await;
    let csv_ref = refs
        .iter()
        .find(|r| {
            r.kind.as_deref() == Some("ClusterServiceVersion")
                && r.namespace.as_deref() == Some(namespace)
        })
        .expect("the Operator references the CSV");
    assert_eq!(csv_ref.name.as_deref(), Some(csv_name.as_str()));
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut operands = Vec::new();
    for owned in csv.spec.owned_crds() {
        let crd = crds.get(&owned.name).await.unwrap();
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&crd.spec.group, &owned.version, &owned.kind),
            &crd.spec.names.plural,
        );
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), namespace, &resource);
        operands.extend(
            api.list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|operand| (api.clone(), operand.name_any())),
        );
    }

    // 1. The Subscription; 2. the operands (strategy delete); 3. the CSV.
    subscriptions
        .delete(&subscription.name_any(), &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&subscriptions, &subscription.name_any()).await;
    for (api, name) in &operands {
        api.delete(name, &DeleteParams::default()).await.unwrap();
        wait_gone(api, name).await;
    }
    csvs.delete(&csv_name, &DeleteParams::default())
        .await
        .unwrap();
    wait_gone(&csvs, &csv_name).await;

    // 4. --delete-operator: the Operator's references, then the Operator (none: gone already).
    let Some(operator) = operators.get_opt(&operator_name).await.unwrap() else {
        return;
    };
    for reference in operator
        .status
        .and_then(|status| status.components)
        .and_then(|components| components.refs)
        .unwrap_or_default()
    {
        let (group, version) = match reference
            .api_version
            .as_deref()
            .unwrap_or_default()
            .split_once('/')
        {
            Some((group, version)) => (group.to_owned(), version.to_owned()),
            None => (
                String::new(),
                reference.api_version.clone().unwrap_or_default(),
            ),
        };
        let kind = reference.kind.clone().unwrap_or_default();
        let (resource, _) =
            kube::discovery::pinned_kind(&client, &GroupVersionKind::gvk(&group, &version, &kind))
                .await
                .unwrap();
        let api: Api<DynamicObject> = match &reference.namespace {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        let name = reference.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => panic!("delete {kind} {name}: {error}"),
        }
        wait_gone(&api, &name).await;
    }
    poll(
        "the Operator to list no references",
        async || match operators.get_opt(&operator_name).await.unwrap() {
            None => Some(()),
            Some(operator) => operator
                .status
                .and_then(|status| status.components)
                .is_none_or(|components| components.refs.unwrap_or_default().is_empty())
                .then_some(()),
        },
    )
    .await;
    match operators
        .delete(&operator_name, &DeleteParams::default())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 404 => {}
        Err(error) => panic!("delete Operator {operator_name}: {error}"),
    }
    wait_gone(&operators, &operator_name).await;
}
