//! The CSV reconciler installs an operator: phases, objects, placement, OperatorGroup problems,
//! steady state and API failures (issue 5 item 4).
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use csv_support::*;
use fake_apiserver::{DeploymentMode, FakeApiServer, Fault, Verb};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{EnvVar, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject};
use opcat::api::ClusterServiceVersionPhase as Phase;
use opcat::api::subscription::SubscriptionConfig;
use opcat::api::{ClusterServiceVersion, OperatorGroup};
use opcat::bundle::ownership::CsvOwner;
use opcat::bundle::{Bundle, RenderContext, RenderedBundle, TargetNamespaces, render};
use opcat::controller::context::Settings;
use support::Env;

const NS: &str = "ops";
const CSV_CONTROLLER: &str = opcat::metrics::controllers::CSV;
const PACKAGE: &str = "widget-operator";
const SECRET: &str = "registry-creds";

fn phases(csv: &ClusterServiceVersion) -> Vec<(Phase, String)> {
    csv.status
        .iter()
        .flat_map(|status| status.conditions.iter().flatten())
        .map(|c| (c.phase.unwrap(), c.reason.clone().unwrap_or_default()))
        .collect()
}

fn config() -> SubscriptionConfig {
    SubscriptionConfig {
        env: Some(vec![EnvVar {
            name: "LOG_LEVEL".to_owned(),
            value: Some("debug".to_owned()),
            ..EnvVar::default()
        }]),
        node_selector: Some(BTreeMap::from([("disk".to_owned(), "ssd".to_owned())])),
        annotations: Some(BTreeMap::from([("team".to_owned(), "widgets".to_owned())])),
        ..SubscriptionConfig::default()
    }
}

/// What `bundle::render` makes of the example bundle for this install: the objects opcat must
/// have created, with the same names.
fn expected(
    env: &Env,
    csv: &ClusterServiceVersion,
    targets: TargetNamespaces,
    config: Option<&SubscriptionConfig>,
) -> RenderedBundle {
    let bundle = Bundle::load(&env.images.bundles_dir.join(PACKAGE).join("1.0.0")).unwrap();
    let owner = CsvOwner {
        name: csv.name_any(),
        uid: csv.uid().unwrap(),
    };
    render(
        &bundle,
        &RenderContext {
            csv: &owner,
            install_namespace: NS,
            targets: &targets,
            operator_group: "ops-group",
            subscription_config: config,
            pull_secret_names: &[copy_name(SECRET)],
            extra_labels: &BTreeMap::new(),
            serving_certificates: &BTreeMap::new(),
        },
    )
    .unwrap()
}

fn exists(env: &Env, object: &DynamicObject) -> bool {
    let kind = object.types.as_ref().unwrap().kind.as_str();
    let ns = object.namespace().unwrap_or_default();
    let name = object.name_any();
    match kind {
        "Role" => env.api.get::<Role>(&ns, &name).is_some(),
        "RoleBinding" => env.api.get::<RoleBinding>(&ns, &name).is_some(),
        "ClusterRole" => env.api.get::<ClusterRole>("", &name).is_some(),
        "ClusterRoleBinding" => env.api.get::<ClusterRoleBinding>("", &name).is_some(),
        "ServiceAccount" => env.api.get::<ServiceAccount>(&ns, &name).is_some(),
        "Deployment" => env.api.get::<Deployment>(&ns, &name).is_some(),
        "Service" => env.api.get::<Service>(&ns, &name).is_some(),
        "CustomResourceDefinition" => env.api.get::<CustomResourceDefinition>("", &name).is_some(),
        other => panic!("unexpected kind {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_namespace_install_goes_from_pending_through_installing_to_succeeded() {
    let api = FakeApiServer::builder()
        .deployment_mode(DeploymentMode::HeldUntilReleased)
        .build();
    logs();
    let mut env = Env::with_api(api).await;
    let csv = subscribed_own_namespace_install(&env).await;
    let name = csv.name_any();
    env.start_manager();

    // Deployments are held unavailable: the CSV waits in Installing.
    let installing = wait_phase(&env, NS, &name, Phase::Installing).await;
    // The first reconcile may find the OperatorGroup's targets not resolved yet (a
    // `Pending`/`RequirementsNotMet` entry); the phases a reconcile passes through are written
    // with the one it ends in, so the history keeps each of them.
    let history: Vec<_> = phases(&installing)
        .into_iter()
        .filter(|entry| *entry != (Phase::Pending, "RequirementsNotMet".to_owned()))
        .collect();
    assert_eq!(
        history[..3],
        [
            (Phase::Pending, "RequirementsUnknown".to_owned()),
            (Phase::InstallReady, "AllRequirementsMet".to_owned()),
            (Phase::Installing, "InstallSucceeded".to_owned()),
        ],
        "OLM's phase history"
    );

    // Everything the bundle renders exists, under the names render gives it.
    let expected = expected(
        &env,
        &csv,
        TargetNamespaces::namespaces([NS]).unwrap(),
        Some(&config()),
    );
    for object in expected.in_apply_order() {
        assert!(
            exists(&env, object),
            "{:?} {} was not created",
            object.types,
            object.name_any()
        );
    }
    assert_eq!(
        expected.rbac.len(),
        10,
        "a Role and RoleBinding per permission and for the OperatorCondition, a ClusterRole and \
         binding per cluster permission"
    );
    for object in &expected.rbac {
        let name = object.name_any();
        assert!(
            name.starts_with("widget-operator-v1-0-0-widget-") || name == csv.name_any(),
            "deterministic, readable RBAC name (the OperatorCondition's is the CSV's): {name}",
        );
    }
    // Labels and owner references.
    let sa = env
        .api
        .get::<ServiceAccount>(NS, "widget-controller")
        .unwrap();
    assert_eq!(
        sa.labels()
            .get("app.kubernetes.io/managed-by")
            .map(String::as_str),
        Some("opcat")
    );
    assert_eq!(
        sa.labels().get("opcat.dev/csv").map(String::as_str),
        Some(name.as_str())
    );
    let owner = &sa.owner_references()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("ClusterServiceVersion", csv.uid().unwrap().as_str())
    );
    assert_eq!(owner.controller, Some(false));
    let default = env.api.get::<ServiceAccount>(NS, "default").unwrap();
    assert!(
        !default
            .labels()
            .contains_key("app.kubernetes.io/managed-by"),
        "default is never taken over"
    );
    let cluster_role = expected
        .rbac
        .iter()
        .find(|o| o.types.as_ref().unwrap().kind == "ClusterRole")
        .unwrap();
    let cluster_role = env
        .api
        .get::<ClusterRole>("", &cluster_role.name_any())
        .unwrap();
    assert!(
        cluster_role.owner_references().is_empty(),
        "cluster-scoped objects get labels only"
    );
    assert_eq!(
        cluster_role
            .labels()
            .get("opcat.dev/csv-namespace")
            .map(String::as_str),
        Some(NS)
    );
    let crd = env
        .api
        .get::<CustomResourceDefinition>("", "widgets.example.opcat.dev")
        .unwrap();
    assert_eq!(
        crd.labels()
            .get("opcat.dev/retain-on-uninstall")
            .map(String::as_str),
        Some("true")
    );

    // The Deployment: OperatorGroup annotations, Subscription config, the copy.
    let deployment = env.api.get::<Deployment>(NS, "widget-controller").unwrap();
    let template = deployment.spec.unwrap().template;
    let annotations = template.metadata.unwrap().annotations.unwrap();
    assert_eq!(annotations["olm.operatorGroup"], "ops-group");
    assert_eq!(annotations["olm.operatorNamespace"], NS);
    assert_eq!(annotations["olm.targetNamespaces"], NS);
    assert_eq!(annotations["team"], "widgets");
    let pod = template.spec.unwrap();
    assert_eq!(pod.node_selector.unwrap()["disk"], "ssd");
    let env_vars = pod.containers[0].env.clone().unwrap();
    assert!(
        env_vars
            .iter()
            .any(|e| e.name == "LOG_LEVEL" && e.value.as_deref() == Some("debug"))
    );
    assert_eq!(
        template_pull_secrets(&env, NS, "widget-controller"),
        [copy_name(SECRET)]
    );

    // Released: Succeeded.
    for deployment in ["widget-controller", "widget-dashboard"] {
        env.api.release_deployment(NS, deployment);
    }
    let succeeded = wait_phase(&env, NS, &name, Phase::Succeeded).await;
    let status = succeeded.status.clone().unwrap();
    assert_eq!(status.reason.as_deref(), Some("InstallSucceeded"));
    assert_eq!(
        status.message.as_deref(),
        Some("install strategy completed with no errors")
    );
    assert_eq!(
        phases(&succeeded).last().unwrap(),
        &(Phase::Succeeded, "InstallSucceeded".to_owned())
    );
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_namespaces_install_lifts_permissions_to_cluster_roles() {
    let mut env = Env::new().await;
    namespaces(&env, &[NS]).await;
    catalog_with_secrets(&env, &[SECRET]).await;
    operator_group(&env, NS, "ops-group", &[""]).await;
    let csv = install(&env, NS, PACKAGE, "1.0.0").await;
    env.start_manager();
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;

    let expected = expected(&env, &csv, TargetNamespaces::All, None);
    let cluster_roles: Vec<_> = expected
        .rbac
        .iter()
        .filter(|o| o.types.as_ref().unwrap().kind == "ClusterRole")
        .collect();
    assert_eq!(
        cluster_roles.len(),
        4,
        "two lifted permissions and two cluster permissions"
    );
    for object in expected.in_apply_order() {
        assert!(exists(&env, object), "{} missing", object.name_any());
    }
    let deployment = env.api.get::<Deployment>(NS, "widget-dashboard").unwrap();
    let annotations = deployment
        .spec
        .unwrap()
        .template
        .metadata
        .unwrap()
        .annotations
        .unwrap();
    assert_eq!(annotations["olm.targetNamespaces"], "", "all namespaces");
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_group_problems_fail_with_olm_reasons_until_fixed() {
    logs();
    let mut env = Env::new().await;
    namespaces(&env, &[NS, "other"]).await;
    catalog_with_secrets(&env, &[SECRET]).await;
    let csv = install(&env, NS, PACKAGE, "1.0.0").await;
    let name = csv.name_any();
    env.start_manager();

    let failed = wait_phase(&env, NS, &name, Phase::Failed).await;
    let status = failed.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("NoOperatorGroup"));
    assert_eq!(
        status.message.as_deref(),
        Some("csv in namespace ops with no operatorgroups")
    );
    assert!(
        env.api.get::<Deployment>(NS, "widget-controller").is_none(),
        "nothing installed"
    );

    // Every step below leaves the namespace without a single group the operator supports:
    // MultiNamespace targets first (the widget operator does not support them), then a second
    // group, then the second group goes again. A supported lone group in between would rightly
    // install at once.
    let wait_reason = |reason: &'static str| {
        env.wait_for::<ClusterServiceVersion>(NS, &name, TIMEOUT, move |csv| {
            csv.status.as_ref().and_then(|s| s.reason.as_deref()) == Some(reason)
        })
    };
    operator_group(&env, NS, "first", &[NS, "other"]).await;
    let unsupported = wait_reason("UnsupportedOperatorGroup").await;
    assert_eq!(unsupported.status.unwrap().phase, Some(Phase::Failed));
    assert!(env.api.get::<Deployment>(NS, "widget-controller").is_none());

    operator_group(&env, NS, "second", &[NS]).await;
    let too_many = wait_reason("TooManyOperatorGroups").await;
    assert_eq!(too_many.status.unwrap().phase, Some(Phase::Failed));
    assert!(env.api.get::<Deployment>(NS, "widget-controller").is_none());

    let groups: Api<OperatorGroup> = Api::namespaced(env.client.clone(), NS);
    groups
        .delete("second", &DeleteParams::default())
        .await
        .unwrap();
    wait_reason("UnsupportedOperatorGroup").await;
    assert!(env.api.get::<Deployment>(NS, "widget-controller").is_none());

    // Fixed: the install goes ahead.
    set_operator_group_targets(&env, NS, "first", &[NS]).await;
    wait_phase(&env, NS, &name, Phase::Succeeded).await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_converged_install_makes_no_writes_even_across_a_restart() {
    let mut env = Env::new().await;
    let csv = subscribed_own_namespace_install(&env).await;
    let settings = Settings {
        resync: Duration::from_millis(500),
        ..Env::settings()
    };
    env.start_manager_with(settings.clone());
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;
    wait_report(&env, NS, &csv.name_any(), "PullCredentialsReady", "True").await;
    tokio::time::sleep(Duration::from_secs(2)).await;

    for round in ["running", "restarted"] {
        env.api.reset_counts();
        let before = env.reconciles(CSV_CONTROLLER);
        env.wait_until("several reconciles of the converged CSV", TIMEOUT, || {
            env.reconciles(CSV_CONTROLLER) >= before + 9.0
        })
        .await;
        assert_eq!(
            env.api.request_counts().writes(),
            0,
            "{round}: a converged install must make no writes; requests:\n{}",
            env.api.request_counts()
        );
        env.stop_manager().await;
        env.api.reset_counts();
        env.start_manager_with(settings.clone());
    }
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installs_in_several_namespaces_share_the_crd_without_taking_it_over_from_each_other() {
    let mut env = Env::new().await;
    let tenants = ["team-a", "team-b", "team-c"];
    catalog_with_secrets(&env, &[SECRET]).await;
    install_widget_in(&env, &tenants).await;
    let settings = Settings {
        resync: Duration::from_millis(500),
        ..Env::settings()
    };
    env.start_manager_with(settings);
    let csv = csv_name(PACKAGE, "1.0.0");
    for ns in tenants {
        wait_phase(&env, ns, &csv, Phase::Succeeded).await;
    }
    let holder = |env: &Env| {
        let crd = env
            .api
            .get::<CustomResourceDefinition>("", "widgets.example.opcat.dev")
            .unwrap();
        crd.labels().get("opcat.dev/csv-namespace").cloned()
    };
    let first = holder(&env).expect("the CRD is labelled with the install that created it");
    tokio::time::sleep(Duration::from_secs(2)).await;

    env.api.reset_counts();
    let before = env.reconciles(CSV_CONTROLLER);
    env.wait_until("several resyncs of every CSV", TIMEOUT, || {
        env.reconciles(CSV_CONTROLLER) >= before + 3.0 * 9.0
    })
    .await;
    assert_eq!(
        env.api.request_counts().writes(),
        0,
        "converged installs must not rewrite the CRD they share; requests:\n{}",
        env.api.request_counts()
    );
    assert_eq!(holder(&env), Some(first.clone()));

    // Once the holder is uninstalled, another install takes the CRD over (it is never deleted).
    delete_csv(&env, &first, &csv).await;
    wait_gone(&env, &first, &csv).await;
    env.wait_until("the CRD held by a remaining install", TIMEOUT, || {
        holder(&env).is_some_and(|ns| ns != first && tenants.contains(&ns.as_str()))
    })
    .await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_and_server_errors_in_the_middle_of_an_install_converge() {
    let mut env = Env::new().await;
    namespaces(&env, &[NS]).await;
    catalog_with_secrets(&env, &[SECRET]).await;
    operator_group(&env, NS, "ops-group", &[NS]).await;
    let csv = install(&env, NS, PACKAGE, "1.0.0").await;
    env.api
        .inject_failure(Fault::new(500).verb(Verb::Create).resource("secrets"));
    env.api.inject_failure(
        Fault::new(409)
            .verb(Verb::Patch)
            .resource("serviceaccounts")
            .times(2),
    );
    env.api
        .inject_failure(Fault::new(409).verb(Verb::Patch).resource("deployments"));
    env.api
        .inject_failure(Fault::new(500).verb(Verb::Patch).resource("roles"));
    env.api.inject_failure(
        Fault::new(503)
            .verb(Verb::Patch)
            .resource("clusterserviceversions"),
    );
    env.start_manager();
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;
    assert_eq!(
        sa_pull_secrets(&env, NS, "widget-controller"),
        [copy_name(SECRET)]
    );
    assert_eq!(sa_pull_secrets(&env, NS, "default"), [copy_name(SECRET)]);
    assert_eq!(
        template_pull_secrets(&env, NS, "widget-dashboard"),
        [copy_name(SECRET)]
    );
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_subscription_config_updates_the_deployments_and_drops_what_it_no_longer_sets() {
    let mut env = Env::new().await;
    let csv = subscribed_own_namespace_install(&env).await;
    env.start_manager();
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;
    let has_log_level = |env: &Env| {
        env.api
            .get::<Deployment>(NS, "widget-controller")
            .and_then(|d| d.spec?.template.spec?.containers[0].env.clone())
            .unwrap_or_default()
            .iter()
            .any(|e| e.name == "LOG_LEVEL")
    };
    assert!(has_log_level(&env));

    // The env var goes; the node selector changes.
    let subscriptions: Api<opcat::api::Subscription> = Api::namespaced(env.client.clone(), NS);
    let patch =
        serde_json::json!({"spec": {"config": {"env": null, "nodeSelector": {"disk": "nvme"}}}});
    subscriptions
        .patch(
            PACKAGE,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .unwrap();
    env.wait_for::<Deployment>(NS, "widget-controller", TIMEOUT, |d| {
        let pod = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
        pod.and_then(|p| p.node_selector.as_ref())
            .and_then(|n| n.get("disk"))
            .map(String::as_str)
            == Some("nvme")
    })
    .await;
    env.wait_until("LOG_LEVEL removed", TIMEOUT, || !has_log_level(&env))
        .await;
    env.stop_manager().await;
}

/// The catalog with its secret, an own-namespace OperatorGroup, a Subscription with
/// [`config`], and the v1.0.0 CSV of [`PACKAGE`] in [`NS`], as the Subscription pipeline would
/// leave it; the manager is not started.
async fn subscribed_own_namespace_install(env: &Env) -> ClusterServiceVersion {
    namespaces(env, &[NS]).await;
    catalog_with_secrets(env, &[SECRET]).await;
    operator_group(env, NS, "ops-group", &[NS]).await;
    subscription(env, NS, PACKAGE, Some(config())).await;
    install(env, NS, PACKAGE, "1.0.0").await
}
