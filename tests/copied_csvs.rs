//! Copied CSVs (issue 27, item 3): tenants in the target namespaces of an operator see its CSV
//! there, as with OLM. A copy follows the original's status, goes when its namespace leaves the
//! OperatorGroup and when the operator is uninstalled, is not an install itself, and copies of
//! AllNamespaces installs go while the OLMConfig `cluster` disables them. A converged cluster
//! costs no request, copies included.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use csv_support::*;
use fake_apiserver::DeploymentMode;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use opcat::api::ClusterServiceVersionPhase as Phase;
use opcat::api::olm_config::{CLUSTER, OLMConfig, OLMConfigSpec};
use opcat::api::{ClusterServiceVersion, OperatorCondition};
use opcat::controller::context::Settings;
use serde_json::json;
use support::Env;

const NS: &str = "ops";
const PACKAGE: &str = "widget-operator";
const SECRET: &str = "registry-creds";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// widget-operator 1.0.0 with MultiNamespace supported, pushed; returns the CSV to create.
async fn multi_namespace_widget(env: &Env) -> ClusterServiceVersion {
    let dir = env.registry.scratch("widget-1.0.0-multi");
    copy_dir(&env.images.bundles_dir.join(PACKAGE).join("1.0.0"), &dir);
    let manifests = dir.join("manifests");
    for entry in std::fs::read_dir(&manifests).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("kind: ClusterServiceVersion") {
            let multi = text.replace(
                "type: MultiNamespace\n      supported: false",
                "type: MultiNamespace\n      supported: true",
            );
            assert_ne!(
                multi, text,
                "the example CSV lists MultiNamespace unsupported"
            );
            std::fs::write(&path, multi).unwrap();
        }
    }
    let image = push_bundle(
        env,
        &dir,
        "opcat-examples/widget-operator-bundle:v1.0.0-multi",
    )
    .await;
    installed_csv(&dir, NS, PACKAGE, &image)
}

/// The namespaces holding a copy of `name` (label `olm.copiedFrom`).
fn copies_of(env: &Env, name: &str) -> BTreeSet<String> {
    env.api
        .list::<ClusterServiceVersion>(None)
        .into_iter()
        .filter(|csv| csv.name_any() == name && csv.labels().contains_key("olm.copiedFrom"))
        .map(|csv| csv.namespace().unwrap())
        .collect()
}

async fn wait_copies(env: &Env, name: &str, want: &[&str]) {
    let want: BTreeSet<String> = want.iter().map(|ns| (*ns).to_owned()).collect();
    env.wait_until(&format!("copies of {name} in {want:?}"), TIMEOUT, || {
        copies_of(env, name) == want
    })
    .await;
}

async fn wait_copy_phase(
    env: &Env,
    namespace: &str,
    name: &str,
    phase: Phase,
) -> ClusterServiceVersion {
    env.wait_for::<ClusterServiceVersion>(namespace, name, TIMEOUT, |csv| {
        csv.status.as_ref().and_then(|status| status.phase) == Some(phase)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_follow_a_multi_namespace_install_its_targets_and_its_uninstall() {
    logs();
    let mut env = Env::new().await;
    namespaces(&env, &[NS, "team-a", "team-b", "team-c"]).await;
    catalog_with_secrets(&env, &[SECRET]).await;
    operator_group(&env, NS, "ops-group", &[NS, "team-a", "team-b"]).await;
    let original = env.create(&multi_namespace_widget(&env).await).await;
    let name = original.name_any();
    env.api
        .set_deployment_mode(DeploymentMode::HeldUntilReleased);
    let settings = Settings {
        resync: Duration::from_millis(500),
        ..Env::settings()
    };
    env.start_manager_with(settings);

    // Copies appear while the operator installs, and follow its phase.
    wait_phase(&env, NS, &name, Phase::Installing).await;
    wait_copies(&env, &name, &["team-a", "team-b"]).await;
    wait_copy_phase(&env, "team-a", &name, Phase::Installing).await;
    for deployment in ["widget-controller", "widget-dashboard"] {
        env.api.release_deployment(NS, deployment);
    }
    let installed = wait_phase(&env, NS, &name, Phase::Succeeded).await;
    let copy = wait_copy_phase(&env, "team-b", &name, Phase::Succeeded).await;
    wait_copy_phase(&env, "team-a", &name, Phase::Succeeded).await;

    // As OLM makes it: the whole spec (what the console shows), the status with reason Copied,
    // no target-namespaces annotation, no component label, no cleanup of its own.
    let status = copy.status.clone().unwrap();
    assert_eq!(status.reason.as_deref(), Some("Copied"));
    assert_eq!(
        status.message.as_deref(),
        Some("The operator is running in ops but is managing this namespace")
    );
    assert_eq!(copy.spec, installed.spec);
    assert!(copy.spec.description.is_some(), "the copy is the whole CSV");
    assert_eq!(copy.labels()["olm.copiedFrom"], NS);
    assert!(
        !copy
            .labels()
            .keys()
            .any(|key| key.starts_with("operators.coreos.com/")),
        "{:?}",
        copy.labels()
    );
    assert!(!copy.annotations().contains_key("olm.targetNamespaces"));
    let mut carried = copy.annotations().clone();
    carried.retain(|key, _| !key.starts_with("olm.operatorframework.io/"));
    let mut original_annotations = installed.annotations().clone();
    original_annotations.remove("olm.targetNamespaces");
    assert_eq!(
        carried, original_annotations,
        "every other annotation is carried"
    );
    assert!(carried.contains_key("alm-examples"), "{carried:?}");
    assert!(copy.finalizers().is_empty());
    assert!(
        env.api
            .get::<ClusterServiceVersion>("team-c", &name)
            .is_none()
    );

    // A copy is not an install: nothing is installed or propagated for it.
    assert!(
        env.api
            .get::<Secret>("team-a", &copy_name(SECRET))
            .is_none()
    );
    assert!(env.api.get::<OperatorCondition>("team-a", &name).is_none());
    let stored = env.context().stores.csvs.state();
    assert!(
        stored
            .iter()
            .all(|csv| csv.namespace().as_deref() == Some(NS)),
        "copies reach no reconciler's store"
    );

    // Converged: looking at the copies again (a foreign edit of one, resyncs of the CSV) costs
    // no request.
    env.wait_quiet("the copies to converge").await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    env.api.reset_counts();
    let before = env.reconciles(opcat::metrics::controllers::COPIED_CSV);
    let team_a: Api<ClusterServiceVersion> = Api::namespaced(env.client.clone(), "team-a");
    team_a
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"example.com/touched": "yes"}}})),
        )
        .await
        .unwrap();
    env.wait_until("the copies looked at again", TIMEOUT, || {
        env.reconciles(opcat::metrics::controllers::COPIED_CSV) > before
    })
    .await;
    let resyncs = env.reconciles(opcat::metrics::controllers::CSV);
    env.wait_until("several resyncs", TIMEOUT, || {
        env.reconciles(opcat::metrics::controllers::CSV) >= resyncs + 4.0
    })
    .await;
    let requests = env.manager_requests_since_reset();
    assert!(
        requests.is_empty(),
        "converged copies must be checked from the caches; the manager sent:\n{}",
        requests.join("\n")
    );

    // A copy someone deleted comes back.
    team_a.delete(&name, &Default::default()).await.unwrap();
    wait_copy_phase(&env, "team-a", &name, Phase::Succeeded).await;

    // A namespace that leaves the group loses its copy.
    set_operator_group_targets(&env, NS, "ops-group", &[NS, "team-a"]).await;
    wait_copies(&env, &name, &["team-a"]).await;

    // Uninstall: the copies go with the operator.
    delete_csv(&env, NS, &name).await;
    wait_gone(&env, NS, &name).await;
    wait_copies(&env, &name, &[]).await;
    env.stop_manager().await;
}

fn every_namespace_but(env: &Env, except: &str) -> Vec<String> {
    env.api
        .list::<Namespace>(None)
        .into_iter()
        .map(|namespace| namespace.name_any())
        .filter(|namespace| namespace != except)
        .collect()
}

async fn wait_copies_everywhere(env: &Env, name: &str) {
    env.wait_until(
        &format!("copies of {name} in every namespace"),
        TIMEOUT,
        || {
            let want: BTreeSet<String> = every_namespace_but(env, NS).into_iter().collect();
            copies_of(env, name) == want
        },
    )
    .await;
}

async fn set_disabled(env: &Env, disabled: bool) {
    let api: Api<OLMConfig> = Api::all(env.client.clone());
    api.patch(
        CLUSTER,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"features": {"disableCopiedCSVs": disabled}}})),
    )
    .await
    .unwrap();
}

async fn wait_condition(env: &Env, status: &str, reason: &str) {
    env.wait_for::<OLMConfig>("", CLUSTER, TIMEOUT, |config| {
        config
            .status
            .as_ref()
            .and_then(|status| status.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|condition| {
                condition.type_ == "DisabledCopiedCSVs"
                    && condition.status == status
                    && condition.reason == reason
            })
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_of_an_all_namespaces_install_go_while_olm_config_disables_them() {
    logs();
    let mut env = Env::new().await;
    namespaces(&env, &[NS, "team-a", "team-b"]).await;
    catalog_with_secrets(&env, &[SECRET]).await;
    operator_group(&env, NS, "global", &[""]).await;
    let name = install(&env, NS, PACKAGE, "1.0.0").await.name_any();
    env.create(&OLMConfig::new(CLUSTER, OLMConfigSpec::default()))
        .await;
    env.start_manager();
    wait_phase(&env, NS, &name, Phase::Succeeded).await;
    wait_copies_everywhere(&env, &name).await;
    assert!(copies_of(&env, &name).contains("team-a"));
    // A namespace created later gets its copy.
    namespaces(&env, &["team-c"]).await;
    wait_copies_everywhere(&env, &name).await;
    assert!(copies_of(&env, &name).contains("team-c"));
    wait_condition(&env, "False", "CopiedCSVsEnabled").await;

    set_disabled(&env, true).await;
    wait_copies(&env, &name, &[]).await;
    wait_condition(&env, "True", "CopiedCSVsDisabled").await;
    // The operator itself is untouched.
    wait_phase(&env, NS, &name, Phase::Succeeded).await;

    set_disabled(&env, false).await;
    wait_copies_everywhere(&env, &name).await;
    wait_condition(&env, "False", "CopiedCSVsEnabled").await;
    env.stop_manager().await;
}
