//! OperatorConditions (issue 27, item 2), through the in-memory API server:
//!
//! - every install gets one, named like its CSV, created before the Deployments, which carry
//!   `OPERATOR_CONDITION_NAME` while it exists (DESIGN invariant 14), and neither remains after
//!   an uninstall;
//! - an operator, with its own ServiceAccount's token (so the Role and RoleBinding opcat
//!   created are what allow it), sets `Upgradeable=False` the way operator-lib does; the
//!   upgrade waits, saying why on the CSV, the InstallPlan and the Subscription, and proceeds
//!   by itself when the operator flips it;
//! - an admin's override through `v1` releases a held upgrade; both versions read the object.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod ops_support;
mod subscription_support;
mod support;

use std::time::Duration;

use csv_support::{
    catalog_with_secrets, delete_csv, env_without_gc, install, logs, namespaces, operator_group,
    wait_gone, wait_phase,
};
use fake_apiserver::Verb;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use opcat::api::operator_condition::v1::OperatorConditionV1;
use opcat::api::operator_condition::{OperatorConditionEntry, UPGRADEABLE};
use opcat::api::{ClusterServiceVersion, ClusterServiceVersionPhase as Phase, OperatorCondition};
use opcat::controller::context::Settings;
use subscription_support::{Fixture, NAMESPACE, TIMEOUT, condition, plan_phase, widget_catalog};
use support::{Env, MANAGER_AGENT};

const V1: &str = "widget-operator.v1.0.0";
const V11: &str = "widget-operator.v1.1.0";
const DEPLOYMENTS: [&str; 2] = ["widget-controller", "widget-dashboard"];
const NOT_UPGRADEABLE: &str = "OperatorConditionNotUpgradeable";

/// `OPERATOR_CONDITION_NAME` of every container of the Deployment (`None` where unset).
fn condition_names(env: &Env, namespace: &str, deployment: &str) -> Vec<Option<String>> {
    let deployment = env.api.get::<Deployment>(namespace, deployment).unwrap();
    let pod = deployment.spec.unwrap().template.spec.unwrap();
    pod.containers
        .iter()
        .map(|container| {
            container
                .env
                .iter()
                .flatten()
                .find(|var| var.name == "OPERATOR_CONDITION_NAME")
                .and_then(|var| var.value.clone())
        })
        .collect()
}

/// Position in `log` of the first request of `verb` on `resource` (main resource).
fn first(log: &[fake_apiserver::LoggedRequest], verb: Verb, resource: &str) -> Option<usize> {
    log.iter().position(|request| {
        request.key.verb == verb
            && request.key.resource == resource
            && request.key.subresource.is_empty()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_variable_and_the_operator_condition_come_and_go_together() {
    logs();
    // No garbage collector: what goes on uninstall, opcat removed itself.
    let mut env = env_without_gc().await;
    namespaces(&env, &["ops"]).await;
    catalog_with_secrets(&env, &["registry-creds"]).await;
    operator_group(&env, "ops", "ops-group", &["ops"]).await;
    env.api.keep_log_of(MANAGER_AGENT);
    install(&env, "ops", "widget-operator", "1.0.0").await;
    env.start_manager();
    let csv = wait_phase(&env, "ops", V1, Phase::Succeeded).await;

    let operator_condition = env
        .api
        .get::<OperatorCondition>("ops", V1)
        .expect("an OperatorCondition named like the CSV");
    assert_eq!(
        operator_condition.spec.deployments.as_deref(),
        Some(&DEPLOYMENTS.map(str::to_owned)[..])
    );
    assert_eq!(
        operator_condition.spec.service_accounts.as_deref(),
        Some(&["widget-auditor".to_owned(), "widget-controller".to_owned()][..]),
        "the ServiceAccounts of the CSV's permissions"
    );
    let owners: Vec<_> = operator_condition
        .owner_references()
        .iter()
        .map(|owner| (owner.kind.as_str(), owner.uid.as_str()))
        .collect();
    assert_eq!(
        owners,
        [("ClusterServiceVersion", csv.uid().unwrap().as_str())]
    );
    let role = env.api.get::<Role>("ops", V1).expect("its Role");
    let rule = &role.rules.as_ref().unwrap()[0];
    assert_eq!(rule.verbs, ["get", "update", "patch"]);
    assert_eq!(
        rule.resources.as_deref(),
        Some(&["operatorconditions".to_owned()][..])
    );
    assert_eq!(rule.resource_names.as_deref(), Some(&[V1.to_owned()][..]));
    let binding = env
        .api
        .get::<RoleBinding>("ops", V1)
        .expect("its RoleBinding");
    let subjects: Vec<_> = binding
        .subjects
        .iter()
        .flatten()
        .map(|subject| subject.name.as_str())
        .collect();
    assert_eq!(subjects, ["widget-auditor", "widget-controller"]);
    for deployment in DEPLOYMENTS {
        let names = condition_names(&env, "ops", deployment);
        assert!(
            names.iter().all(|name| name.as_deref() == Some(V1)),
            "{deployment}: {names:?}"
        );
    }
    let log = env.api.request_log_of(MANAGER_AGENT);
    let created = first(&log, Verb::Patch, "operatorconditions").expect("applied");
    let deployed = first(&log, Verb::Patch, "deployments").expect("applied");
    assert!(
        created < deployed,
        "the OperatorCondition exists before a Deployment names it"
    );

    // Deleted by hand: opcat puts it back; the Deployments never stop naming it.
    let api: Api<OperatorCondition> = Api::namespaced(env.client.clone(), "ops");
    api.delete(V1, &Default::default()).await.unwrap();
    let old_uid = operator_condition.uid();
    env.wait_until("the OperatorCondition is recreated", TIMEOUT, || {
        env.api
            .get::<OperatorCondition>("ops", V1)
            .is_some_and(|recreated| recreated.uid() != old_uid)
    })
    .await;

    // Uninstall: the Deployments go, then the OperatorCondition, its Role and RoleBinding.
    env.api.keep_log_of(MANAGER_AGENT);
    delete_csv(&env, "ops", V1).await;
    wait_gone(&env, "ops", V1).await;
    assert!(env.api.get::<OperatorCondition>("ops", V1).is_none());
    assert!(env.api.get::<Role>("ops", V1).is_none());
    assert!(env.api.get::<RoleBinding>("ops", V1).is_none());
    for deployment in DEPLOYMENTS {
        assert!(env.api.get::<Deployment>("ops", deployment).is_none());
    }
    let log = env.api.request_log_of(MANAGER_AGENT);
    let last_deployment = log
        .iter()
        .rposition(|request| {
            request.key.verb == Verb::Delete && request.key.resource == "deployments"
        })
        .expect("Deployments deleted");
    let condition_deleted = first(&log, Verb::Delete, "operatorconditions").expect("deleted");
    assert!(
        last_deployment < condition_deleted,
        "no Deployment names a deleted OperatorCondition"
    );
    ops_support::assert_allowed_by_rbac(&env.manager_requests());
    env.stop_manager().await;
}

/// The operator's own client: a token of its ServiceAccount, as its pod would mount.
fn operator_client(fixture: &Fixture) -> Client {
    let token = fixture
        .env
        .api
        .service_account_token(NAMESPACE, "widget-controller");
    fixture.env.api.client_with_token(&token)
}

/// What operator-lib's `conditions` package does: read the OperatorCondition named by
/// `OPERATOR_CONDITION_NAME`, set the condition in `spec.conditions`, update the object.
async fn set_upgradeable(operator: &Client, name: &str, status: &str, message: &str) {
    let api: Api<OperatorCondition> = Api::namespaced(operator.clone(), NAMESPACE);
    let mut condition = api
        .get(name)
        .await
        .expect("the operator reads its condition");
    let conditions = condition.spec.conditions.get_or_insert_default();
    conditions.retain(|entry| entry.type_ != UPGRADEABLE);
    conditions.push(OperatorConditionEntry {
        type_: UPGRADEABLE.to_owned(),
        status: status.to_owned(),
        reason: "MigrationState".to_owned(),
        message: message.to_owned(),
        last_transition_time: Some(Time(k8s_openapi::jiff::Timestamp::now())),
        observed_generation: None,
    });
    api.replace(name, &PostParams::default(), &condition)
        .await
        .expect("the operator updates its condition");
}

/// The polling fixture, its manager restarted with a resync far longer than any test: what
/// releases a held upgrade is the OperatorCondition's watch, not a periodic look.
async fn fixture_without_resync() -> Fixture {
    let mut fixture = Fixture::start_polling().await;
    fixture.env.stop_manager().await;
    fixture.env.start_manager_with(Settings {
        resync: Duration::from_secs(3600),
        ..Env::settings()
    });
    fixture
}

/// Installs v1.0.0 from a catalog that has only it, then has the operator say
/// `Upgradeable=False` and waits until opcat observed it.
async fn installed_and_held(fixture: &Fixture, operator: &Client) {
    fixture
        .repush_catalog(
            widget_catalog(&fixture.env, |_, bundle| bundle == V1),
            "only-1.0.0",
        )
        .await;
    fixture.subscribe("widgets", |_| {}).await;
    fixture.wait_installed("widgets", V1).await;
    fixture.wait_csv_phase(V1, "Succeeded").await;
    set_upgradeable(operator, V1, "False", "a data migration is running").await;
    fixture
        .env
        .wait_for::<OperatorCondition>(NAMESPACE, V1, TIMEOUT, |condition| {
            let observed = condition
                .status
                .as_ref()
                .and_then(|status| status.condition(UPGRADEABLE));
            observed.is_some_and(|observed| {
                observed.status == "False"
                    && observed.observed_generation == condition.metadata.generation
            })
        })
        .await;
}

/// Publishes v1.1.0 (which replaces v1.0.0) and waits until the CSV, its InstallPlan and the
/// Subscription say the upgrade is held, with the operator's message.
async fn upgrade_is_held(fixture: &Fixture, message: &str) {
    fixture
        .repush_catalog(
            widget_catalog(&fixture.env, |channel, bundle| {
                channel == "stable" && (bundle == V1 || bundle == V11)
            }),
            "stable-1.1.0",
        )
        .await;
    let held = fixture
        .env
        .wait_for::<ClusterServiceVersion>(NAMESPACE, V11, TIMEOUT, |csv| {
            csv.status.as_ref().and_then(|s| s.reason.as_deref()) == Some(NOT_UPGRADEABLE)
        })
        .await;
    let status = held.status.unwrap();
    assert_eq!(status.phase, Some(Phase::Pending));
    assert!(
        status
            .message
            .as_deref()
            .unwrap_or_default()
            .contains(message),
        "{status:?}"
    );
    let plan = fixture
        .wait_plan(V11, "the InstallPlan is held", |plan| {
            let installed = plan
                .status
                .iter()
                .flat_map(|status| status.conditions.iter().flatten())
                .find(|c| c.type_.as_deref() == Some("Installed"));
            installed.is_some_and(|c| c.reason.as_deref() == Some(NOT_UPGRADEABLE))
        })
        .await;
    assert_eq!(plan_phase(&plan), "Installing");
    fixture
        .wait_subscription("widgets", "the Subscription says why", |sub| {
            condition(sub, "InstallPlanPending").is_some_and(|c| {
                c.status == "True" && c.message.as_deref().unwrap_or_default().contains(message)
            })
        })
        .await;
    // The running operator is untouched while it waits.
    for deployment in DEPLOYMENTS {
        let names = condition_names(&fixture.env, NAMESPACE, deployment);
        assert!(names.iter().all(|name| name.as_deref() == Some(V1)));
    }
    assert!(
        fixture
            .env
            .api
            .get::<OperatorCondition>(NAMESPACE, V11)
            .is_none(),
        "nothing of v1.1.0 is installed while it waits"
    );
}

/// A held upgrade is at rest: no writes to what it holds for a while, once the writes that
/// follow the hold (the install's Operator mirrors its components' new conditions) are done.
async fn held_without_writes(fixture: &Fixture) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        fixture.env.api.reset_counts();
        tokio::time::sleep(Duration::from_secs(1)).await;
        if fixture.env.api.request_counts().writes_to("operators") == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the Operator keeps being written"
        );
    }
    fixture.env.api.reset_counts();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let writes: Vec<String> = fixture
        .env
        .api
        .request_log()
        .into_iter()
        .filter(|request| request.agent.as_deref() == Some(MANAGER_AGENT))
        .filter(|request| request.key.verb.is_write())
        // The polling fixture's CatalogSource records every poll.
        .filter(|request| request.key.resource != "catalogsources")
        .map(|request| request.describe())
        .collect();
    assert!(writes.is_empty(), "writes while held: {writes:#?}");
}

/// The upgrade went through: v1.1.0 installed, v1.0.0 and its OperatorCondition gone, the
/// Deployments naming the new one.
async fn upgraded(fixture: &Fixture) {
    fixture.wait_installed("widgets", V11).await;
    fixture.wait_csv_phase(V11, "Succeeded").await;
    fixture
        .env
        .wait_until("v1.0.0 and its OperatorCondition gone", TIMEOUT, || {
            fixture
                .env
                .api
                .get::<ClusterServiceVersion>(NAMESPACE, V1)
                .is_none()
                && fixture
                    .env
                    .api
                    .get::<OperatorCondition>(NAMESPACE, V1)
                    .is_none()
        })
        .await;
    assert!(
        fixture
            .env
            .api
            .get::<OperatorCondition>(NAMESPACE, V11)
            .is_some()
    );
    for deployment in DEPLOYMENTS {
        let names = condition_names(&fixture.env, NAMESPACE, deployment);
        assert!(
            names.iter().all(|name| name.as_deref() == Some(V11)),
            "{deployment}: {names:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_holds_its_upgrade_with_its_own_permissions_until_it_flips() {
    let fixture = fixture_without_resync().await;
    let operator = operator_client(&fixture);
    installed_and_held(&fixture, &operator).await;
    // Its Role names its own OperatorCondition only.
    let others: Api<OperatorCondition> = Api::namespaced(operator.clone(), NAMESPACE);
    let denied = others.get("another-operator.v1").await.unwrap_err();
    assert!(
        matches!(&denied, kube::Error::Api(status) if status.code == 403),
        "{denied:?}"
    );

    upgrade_is_held(&fixture, "a data migration is running").await;
    held_without_writes(&fixture).await;

    set_upgradeable(&operator, V1, "True", "the migration is done").await;
    upgraded(&fixture).await;
    let requests = fixture.env.manager_requests();
    ops_support::assert_allowed_by_rbac(&requests);
    // DESIGN invariant 6: the observed status went by patch to the status subresource.
    assert!(requests.get_subresource(Verb::Patch, "operatorconditions", "status") > 0);
    assert_eq!(
        requests.get_subresource(Verb::Update, "operatorconditions", "status"),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_override_releases_a_held_upgrade_and_both_versions_read_it() {
    let fixture = fixture_without_resync().await;
    let operator = operator_client(&fixture);
    installed_and_held(&fixture, &operator).await;
    upgrade_is_held(&fixture, "a data migration is running").await;

    // v2 (storage) and v1 (served, without spec.conditions) read the same object.
    let admin = fixture.env.client.clone();
    let v2 = Api::<OperatorCondition>::namespaced(admin.clone(), NAMESPACE)
        .get(V1)
        .await
        .unwrap();
    assert_eq!(v2.spec.conditions.as_ref().unwrap()[0].status, "False");
    let v1_api = Api::<OperatorConditionV1>::namespaced(admin, NAMESPACE);
    let v1 = v1_api.get(V1).await.unwrap();
    assert_eq!(v1.spec.deployments, v2.spec.deployments);
    assert_eq!(
        v1.status
            .as_ref()
            .unwrap()
            .condition(UPGRADEABLE)
            .unwrap()
            .status,
        "False",
        "the observed condition, read through v1"
    );

    // The admin overrides through v1, as OLM's documentation does it.
    v1_api
        .patch(
            V1,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"overrides": [{
                "type": "Upgradeable",
                "status": "True",
                "reason": "UpgradeApproved",
                "message": "the admin accepts the risk"
            }]}})),
        )
        .await
        .unwrap();
    upgraded(&fixture).await;
    ops_support::assert_allowed_by_rbac(&fixture.env.manager_requests());
}
