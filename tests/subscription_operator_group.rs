//! OperatorGroup status: target namespaces from `targetNamespaces`, a namespace selector, or all
//! namespaces, and the several-groups condition.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod ops_support;
mod subscription_support;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, DeleteParams, DynamicObject, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::ApiResource;
use opcat::api::{OperatorGroup, OperatorGroupSpec};
use serde_json::json;
use support::Env;

const TIMEOUT: Duration = Duration::from_secs(60);

async fn labelled_namespace(env: &Env, name: &str, team: &str) {
    let api: Api<Namespace> = Api::all(env.client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("team".to_owned(), team.to_owned())])),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    api.create(&PostParams::default(), &namespace)
        .await
        .unwrap();
}

async fn group(env: &Env, namespace: &str, name: &str, spec: OperatorGroupSpec) {
    let mut group = OperatorGroup::new(name, spec);
    group.metadata.namespace = Some(namespace.into());
    env.create(&group).await;
}

async fn wait_targets(env: &Env, namespace: &str, name: &str, expected: &[&str]) -> OperatorGroup {
    env.wait_for::<OperatorGroup>(namespace, name, TIMEOUT, |group| {
        group.status.as_ref().and_then(|s| s.namespaces.as_deref())
            == Some(&expected.iter().map(|s| s.to_string()).collect::<Vec<_>>()[..])
    })
    .await
}

fn has_multiple_condition(group: &OperatorGroup) -> bool {
    group
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| {
            c.iter().any(|c| {
                c.type_ == "MultipleOperatorGroup"
                    && c.status == "True"
                    && c.reason == "MultipleOperatorGroupsFound"
            })
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_group_status_lists_the_target_namespaces() {
    let mut env = Env::new().await;
    env.start_manager();
    labelled_namespace(&env, "team-a", "a").await;
    labelled_namespace(&env, "team-b", "b").await;
    for namespace in ["og-explicit", "og-selector", "og-all", "og-two"] {
        env.namespace(namespace).await;
    }

    group(
        &env,
        "og-explicit",
        "explicit",
        OperatorGroupSpec {
            target_namespaces: Some(vec!["team-b".into(), "team-a".into()]),
            ..OperatorGroupSpec::default()
        },
    )
    .await;
    let explicit = wait_targets(&env, "og-explicit", "explicit", &["team-a", "team-b"]).await;
    assert!(explicit.status.as_ref().unwrap().last_updated.is_some());

    group(
        &env,
        "og-selector",
        "selected",
        OperatorGroupSpec {
            selector: Some(Box::new(LabelSelector {
                match_labels: Some(BTreeMap::from([("team".to_owned(), "a".to_owned())])),
                ..LabelSelector::default()
            })),
            ..OperatorGroupSpec::default()
        },
    )
    .await;
    wait_targets(&env, "og-selector", "selected", &["team-a"]).await;

    // An OperatorGroup written without a spec (the usual "all namespaces" group).
    let resource = ApiResource::erase::<OperatorGroup>(&());
    let dynamic: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), "og-all", &resource);
    let mut spec_less = DynamicObject::new("global", &resource);
    spec_less.metadata.namespace = Some("og-all".into());
    dynamic
        .create(&PostParams::default(), &spec_less)
        .await
        .unwrap();
    wait_targets(&env, "og-all", "global", &[""]).await;

    // Relabelling a namespace changes what the selector matches.
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    namespaces
        .patch(
            "team-b",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .unwrap();
    wait_targets(&env, "og-selector", "selected", &["team-a", "team-b"]).await;

    // Two groups in one namespace: both flagged; removing one clears the other.
    group(&env, "og-two", "first", OperatorGroupSpec::default()).await;
    group(&env, "og-two", "second", OperatorGroupSpec::default()).await;
    for name in ["first", "second"] {
        env.wait_for::<OperatorGroup>("og-two", name, TIMEOUT, has_multiple_condition)
            .await;
    }
    let groups: Api<OperatorGroup> = Api::namespaced(env.client.clone(), "og-two");
    groups
        .delete("second", &DeleteParams::default())
        .await
        .unwrap();
    env.wait_for::<OperatorGroup>("og-two", "first", TIMEOUT, |group| {
        !has_multiple_condition(group)
            && group.status.as_ref().and_then(|s| s.namespaces.as_deref())
                == Some(&[String::new()][..])
    })
    .await;

    // Converged: nothing is written again.
    env.api.reset_counts();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        env.api.request_counts().writes_to("operatorgroups"),
        0,
        "converged OperatorGroups are not written"
    );
    let explicit_again = env
        .api
        .get::<OperatorGroup>("og-explicit", "explicit")
        .unwrap();
    assert_eq!(
        explicit_again.status, explicit.status,
        "lastUpdated unchanged"
    );
    ops_support::assert_allowed_by_rbac(&env.manager_requests());
}
