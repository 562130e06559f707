//! Pull-secret propagation (issue 6 items 1–3): copies, attachment before the Deployments,
//! foreign entries kept in place, in-place rotation, name conflicts, removal from the catalog,
//! and repair of copies someone changed.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod ops_support;
mod support;

use std::collections::BTreeMap;

use csv_support::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use opcat::api::ClusterServiceVersionPhase as Phase;
use serde_json::json;
use support::Env;

const PACKAGE: &str = "widget-operator";
const CREDS: &str = "registry-creds";
const MIRROR: &str = "mirror-creds";

fn source_data(env: &Env, name: &str) -> BTreeMap<String, ByteString> {
    env.api
        .get::<Secret>(CATALOG_NAMESPACE, name)
        .unwrap()
        .data
        .unwrap()
}

/// New data for a source: the registry's entry with a new `email`. (An entry for another
/// registry would not reach the copies: they hold only what the operator's images need, see
/// `pull_secrets_least_privilege`.) Written as opcat writes copies, keys sorted and compact, so
/// a copy's data equals its source's.
async fn rotate(env: &Env, name: &str, marker: &str) {
    let config = json!({"auths": {
        env.registry.host.clone(): {"auth": base64_auth(env), "email": format!("{marker}@example.com")},
    }});
    let api: Api<Secret> = Api::namespaced(env.client.clone(), CATALOG_NAMESPACE);
    let mut secret = api.get(name).await.unwrap();
    secret.data = Some(BTreeMap::from([(
        ".dockerconfigjson".to_owned(),
        ByteString(config.to_string().into_bytes()),
    )]));
    api.replace(name, &PostParams::default(), &secret)
        .await
        .unwrap();
}

fn base64_auth(env: &Env) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(env.registry.creds())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_secrets_two_namespaces_copies_are_attached_before_any_deployment_exists() {
    logs();
    let mut env = Env::new().await;
    catalog_with_secrets(&env, &[CREDS, MIRROR]).await;
    let mut recorders: Vec<(&str, Recorder)> = Vec::new();
    for ns in ["team-a", "team-b"] {
        recorders.push((ns, Recorder::start(&env, ns).await));
    }
    install_widget_in(&env, &["team-a", "team-b"]).await;
    env.start_manager();
    let copies = vec![copy_name(MIRROR), copy_name(CREDS)];
    let mut sorted = copies.clone();
    sorted.sort();

    for (ns, recorder) in &recorders {
        let csv = wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
        for source in [CREDS, MIRROR] {
            let copy = env.api.get::<Secret>(ns, &copy_name(source)).expect("copy");
            let original = env.api.get::<Secret>(CATALOG_NAMESPACE, source).unwrap();
            assert_eq!(
                copy.type_.as_deref(),
                Some("kubernetes.io/dockerconfigjson")
            );
            assert_eq!(copy.data, original.data, "same data");
            assert!(copy.name_any().len() <= 253);
            let labels = copy.labels();
            assert_eq!(labels["opcat.dev/managed"], "true");
            assert_eq!(labels["opcat.dev/source-namespace"], CATALOG_NAMESPACE);
            assert_eq!(labels["opcat.dev/source-name"], source);
            assert_eq!(
                copy.annotations()["opcat.dev/source-uid"],
                original.uid().unwrap()
            );
            let owner = &copy.owner_references()[0];
            assert_eq!(
                (owner.name.as_str(), owner.uid.as_str()),
                (csv.name_any().as_str(), csv.uid().unwrap().as_str())
            );
            assert_eq!(owner.controller, Some(false));
        }
        // Every ServiceAccount the bundle uses: both permission accounts and `default` (the
        // dashboard Deployment names none).
        for sa in ["widget-controller", "widget-auditor", "default"] {
            assert_eq!(sa_pull_secrets(&env, ns, sa), sorted, "{ns}/{sa}");
            let added = env.api.get::<ServiceAccount>(ns, sa).unwrap().annotations()
                ["opcat.dev/added-pull-secrets"]
                .clone();
            assert_eq!(serde_json::from_str::<Vec<String>>(&added).unwrap(), sorted);
        }
        for deployment in ["widget-controller", "widget-dashboard"] {
            assert_eq!(template_pull_secrets(&env, ns, deployment), sorted);
        }

        // Order: copies exist and every ServiceAccount lists them before any Deployment exists.
        let seen = recorder.seen();
        let first_deployment = seen
            .iter()
            .filter(|s| s.kind == "Deployment")
            .map(|s| s.resource_version)
            .min()
            .expect("deployments seen");
        for copy in &copies {
            let created = seen
                .iter()
                .filter(|s| s.kind == "Secret" && &s.name == copy)
                .map(|s| s.resource_version)
                .min()
                .expect("copy seen");
            assert!(
                created < first_deployment,
                "copy {copy} created at {created}, first Deployment at {first_deployment}"
            );
        }
        for sa in ["widget-controller", "widget-auditor", "default"] {
            let attached = seen
                .iter()
                .filter(|s| s.kind == "ServiceAccount" && s.name == sa)
                .filter(|s| copies.iter().all(|c| s.pull_secrets.contains(c)))
                .map(|s| s.resource_version)
                .min()
                .expect("attachment seen");
            assert!(
                attached < first_deployment,
                "{ns}/{sa} attached at {attached}, first Deployment at {first_deployment}"
            );
        }
    }
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_entries_stay_in_place_through_install_rotation_upgrade_and_uninstall() {
    let mut env = Env::new().await;
    let ns = "team-a";
    catalog_with_secrets(&env, &[CREDS]).await;
    namespaces(&env, &[ns]).await;
    // A user's ServiceAccount, and OpenShift-style entries on it and on `default`.
    foreign_service_account(
        &env,
        ns,
        "widget-controller",
        &["other-secret", "widget-controller-dockercfg-x"],
    )
    .await;
    env.wait_until("default ServiceAccount", TIMEOUT, || {
        env.api.get::<ServiceAccount>(ns, "default").is_some()
    })
    .await;
    foreign_service_account(
        &env,
        ns,
        "default",
        &["other-secret", "default-dockercfg-x"],
    )
    .await;
    install_widget_in(&env, &[ns]).await;
    env.start_manager();
    wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
    let copy = copy_name(CREDS);
    let expected_controller = vec![
        "other-secret".to_owned(),
        "widget-controller-dockercfg-x".to_owned(),
        copy.clone(),
    ];
    let expected_default = vec![
        "other-secret".to_owned(),
        "default-dockercfg-x".to_owned(),
        copy.clone(),
    ];
    assert_eq!(
        sa_pull_secrets(&env, ns, "widget-controller"),
        expected_controller
    );
    assert_eq!(sa_pull_secrets(&env, ns, "default"), expected_default);
    let user_sa = env
        .api
        .get::<ServiceAccount>(ns, "widget-controller")
        .unwrap();
    assert!(
        !user_sa
            .labels()
            .contains_key("app.kubernetes.io/managed-by"),
        "a ServiceAccount that existed is never taken over"
    );

    // Rotation.
    rotate(&env, CREDS, "rotated-1").await;
    env.wait_until("copy rotated", TIMEOUT, || {
        env.api.get::<Secret>(ns, &copy).and_then(|s| s.data) == Some(source_data(&env, CREDS))
    })
    .await;
    assert_eq!(
        sa_pull_secrets(&env, ns, "widget-controller"),
        expected_controller
    );
    assert_eq!(sa_pull_secrets(&env, ns, "default"), expected_default);

    // Upgrade.
    let v11 = install(&env, ns, PACKAGE, "1.1.0").await;
    wait_phase(&env, ns, &v11.name_any(), Phase::Succeeded).await;
    wait_gone(&env, ns, "widget-operator.v1.0.0").await;
    assert_eq!(
        sa_pull_secrets(&env, ns, "widget-controller"),
        expected_controller
    );
    assert_eq!(sa_pull_secrets(&env, ns, "default"), expected_default);

    // Uninstall: back to exactly what the user had.
    delete_csv(&env, ns, &v11.name_any()).await;
    wait_gone(&env, ns, &v11.name_any()).await;
    for (sa, entries) in [
        ("widget-controller", "widget-controller-dockercfg-x"),
        ("default", "default-dockercfg-x"),
    ] {
        let account = env
            .api
            .get::<ServiceAccount>(ns, sa)
            .expect("kept: opcat did not create it");
        assert_eq!(sa_pull_secrets(&env, ns, sa), ["other-secret", entries]);
        assert!(
            !account
                .annotations()
                .keys()
                .any(|k| k.starts_with("opcat.dev/")),
            "{sa}: {:?}",
            account.annotations()
        );
    }
    assert!(env.api.get::<Secret>(ns, &copy).is_none());
    // Install, rotation, upgrade and uninstall: every request is one the ClusterRole allows.
    ops_support::assert_allowed_by_rbac(&env.manager_requests());
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rotating_a_source_updates_every_copy_in_place() {
    let mut env = Env::new().await;
    catalog_with_secrets(&env, &[CREDS]).await;
    let teams = ["team-a", "team-b", "team-c"];
    install_widget_in(&env, &teams).await;
    env.start_manager();
    let copy = copy_name(CREDS);
    let mut before = Vec::new();
    for ns in teams {
        wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
        before.push(env.api.get::<Secret>(ns, &copy).unwrap());
    }
    env.wait_quiet("installed").await;
    let requests_before = env.manager_requests();
    // The manager's Secret watch lags its writes, as on a busy API server: the CSV reconciles
    // a rotation triggers must not plan from copies the watch has not updated yet.
    env.api
        .set_watch_lag("secrets", std::time::Duration::from_millis(500));

    rotate(&env, CREDS, "rotated-2").await;
    let rotated = source_data(&env, CREDS);
    for (ns, old) in teams.into_iter().zip(before) {
        let new = env
            .wait_for::<Secret>(ns, &copy, TIMEOUT, |s| s.data.as_ref() == Some(&rotated))
            .await;
        assert_eq!(
            new.uid(),
            old.uid(),
            "{ns}: updated in place, not recreated"
        );
        assert_ne!(new.data, old.data);
    }
    env.wait_quiet("rotated").await;

    // The fast path: one replace per copy, and the CSV reconciles that follow find the copies
    // in sync (no second write, no reconcile of each copy's echo).
    let delta = RequestDelta::since(&requests_before, &env.manager_requests());
    assert_eq!(delta.secret_writes, teams.len() as u64, "{delta:?}");
    assert_eq!(delta.secret_updates, teams.len() as u64, "{delta:?}");
    assert!(
        delta.secret_lists <= teams.len() as u64,
        "at most the label-selected sweep of each CSV's reconcile, once: {delta:?}"
    );
    // One summary on the CatalogSource, no Event per copy (issue 12: 10,000 namespaces made
    // 10,000 Events).
    for ns in teams {
        assert!(
            rotated_events(&env, ns).is_empty(),
            "{ns}: no Event per copy"
        );
    }
    assert_eq!(
        rotated_events(&env, CATALOG_NAMESPACE),
        [format!(
            "updated the data of 3 pull-secret copies of secret {CATALOG_NAMESPACE}/{CREDS} in place"
        )]
    );
    assert_secrets_read_narrowly(&env.api.collection_reads_of(support::MANAGER_AGENT));
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_skips_the_copy_of_a_namespace_that_opted_out() {
    let mut env = Env::new().await;
    catalog_with_secrets(&env, &[CREDS]).await;
    install_widget_in(&env, &["team-a", "team-b", "team-c"]).await;
    env.start_manager();
    let copy = copy_name(CREDS);
    for ns in ["team-a", "team-b", "team-c"] {
        wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
    }
    let old = env.api.get::<Secret>("team-c", &copy).unwrap();
    // team-c opts out after the install; its copy is detached, and its deletion is made to fail
    // so that the copy is still there when the source rotates.
    env.api.inject_failure(
        fake_apiserver::Fault::new(500)
            .verb(fake_apiserver::Verb::Delete)
            .resource("secrets")
            .name(copy.clone())
            .times(usize::MAX),
    );
    let opt_out =
        json!({"metadata": {"labels": {"opcat.dev/pull-secret-propagation": "disabled"}}});
    Api::<k8s_openapi::api::core::v1::Namespace>::all(env.client.clone())
        .patch("team-c", &PatchParams::default(), &Patch::Merge(&opt_out))
        .await
        .unwrap();
    env.wait_until("team-c detached", TIMEOUT, || {
        sa_pull_secrets(&env, "team-c", "default").is_empty()
    })
    .await;
    let requests_before = env.manager_requests();

    rotate(&env, CREDS, "rotated-3").await;
    let rotated = source_data(&env, CREDS);
    for ns in ["team-a", "team-b"] {
        env.wait_for::<Secret>(ns, &copy, TIMEOUT, |s| s.data.as_ref() == Some(&rotated))
            .await;
    }
    // Both were written by the fast path, which writes a rotation's copies before the CSV
    // reconciles run; team-c's was not among them, and no reconcile rotates it either.
    // The summary event follows the copies' writes: wait for it rather than read it at once.
    env.wait_until("the rotation summary event", TIMEOUT, || {
        !rotated_events(&env, CATALOG_NAMESPACE).is_empty()
    })
    .await;
    let kept = env.api.get::<Secret>("team-c", &copy).unwrap();
    assert_eq!(kept.data, old.data, "the opted-out copy keeps its data");
    assert_eq!(kept.uid(), old.uid());
    let delta = RequestDelta::since(&requests_before, &env.manager_requests());
    assert_eq!(delta.secret_updates, 2, "{delta:?}");
    assert_eq!(
        rotated_events(&env, CATALOG_NAMESPACE),
        [format!(
            "updated the data of 2 pull-secret copies of secret {CATALOG_NAMESPACE}/{CREDS} in place"
        )],
        "the summary counts only the copies written"
    );
    env.stop_manager().await;
}

/// Manager requests on Secrets between two snapshots.
#[derive(Debug)]
struct RequestDelta {
    secret_writes: u64,
    secret_updates: u64,
    secret_lists: u64,
}

impl RequestDelta {
    fn since(
        before: &fake_apiserver::RequestCounts,
        after: &fake_apiserver::RequestCounts,
    ) -> Self {
        let update = fake_apiserver::Verb::Update;
        let list = fake_apiserver::Verb::List;
        Self {
            secret_writes: after.writes_to("secrets") - before.writes_to("secrets"),
            secret_updates: after.get(update, "secrets") - before.get(update, "secrets"),
            secret_lists: after.get(list, "secrets") - before.get(list, "secrets"),
        }
    }
}

/// Notes of the `PullSecretRotated` events in `namespace`.
fn rotated_events(env: &Env, namespace: &str) -> Vec<String> {
    env.api
        .list::<k8s_openapi::api::events::v1::Event>(Some(namespace))
        .into_iter()
        .filter(|event| event.reason.as_deref() == Some("PullSecretRotated"))
        .filter_map(|event| event.note)
        .collect()
}

/// DESIGN invariant 11: Secrets are listed and watched by name or by a label only opcat's own
/// objects carry (copies: `opcat.dev/managed=true`; Secrets a bundle ships and webhook serving
/// certificates: `app.kubernetes.io/managed-by=opcat` with the CSV's or the certificate
/// label), never wholesale.
fn assert_secrets_read_narrowly(reads: &[fake_apiserver::CollectionRead]) {
    let secrets: Vec<_> = reads
        .iter()
        .filter(|read| read.group.is_empty() && read.resource == "secrets")
        .collect();
    assert!(
        secrets
            .iter()
            .any(|read| read.verb == fake_apiserver::Verb::Watch),
        "secrets are watched: {reads:?}"
    );
    for read in secrets {
        let by_label = read.label_selector.split(',').any(|term| {
            term == "opcat.dev/managed=true" || term == "app.kubernetes.io/managed-by=opcat"
        });
        let by_name =
            read.field_selector.starts_with("metadata.name=") && !read.namespace.is_empty();
        assert!(by_label || by_name, "a wholesale Secret read: {read:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_secret_holding_a_copy_name_is_untouched_and_reported() {
    let mut env = Env::new().await;
    let ns = "team-a";
    catalog_with_secrets(&env, &[CREDS, MIRROR]).await;
    namespaces(&env, &[ns]).await;
    let squatter = Secret {
        metadata: ObjectMeta {
            name: Some(copy_name(CREDS)),
            namespace: Some(ns.to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        data: Some(BTreeMap::from([(
            "note".to_owned(),
            ByteString(b"mine".to_vec()),
        )])),
        ..Secret::default()
    };
    let squatter = env.create(&squatter).await;
    install_widget_in(&env, &[ns]).await;
    env.start_manager();
    wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
    let csv = wait_report(
        &env,
        ns,
        "widget-operator.v1.0.0",
        "PullSecretConflict",
        "True",
    )
    .await;
    let (_, reason, message) = report(&csv)["PullSecretConflict"].clone();
    assert_eq!(reason, "SecretNameInUse");
    assert!(
        message.contains(&format!("secret {ns}/{}", copy_name(CREDS))),
        "{message}"
    );

    let after = env.api.get::<Secret>(ns, &copy_name(CREDS)).unwrap();
    assert_eq!(
        after.resource_version(),
        squatter.resource_version(),
        "never written"
    );
    assert_eq!(after.data, squatter.data);
    // The other copy is propagated; the squatter is attached nowhere.
    assert_eq!(sa_pull_secrets(&env, ns, "default"), [copy_name(MIRROR)]);
    assert_eq!(
        template_pull_secrets(&env, ns, "widget-controller"),
        [copy_name(MIRROR)]
    );

    // A rotation of its source (the fast path, then the CSV reconcile) leaves it alone too.
    rotate(&env, CREDS, "rotated-while-squatted").await;
    env.wait_quiet("after the rotation").await;
    let rotated = env.api.get::<Secret>(ns, &copy_name(CREDS)).unwrap();
    assert_eq!(
        rotated.resource_version(),
        squatter.resource_version(),
        "never written by a rotation"
    );

    // Uninstall leaves it alone too.
    delete_csv(&env, ns, "widget-operator.v1.0.0").await;
    wait_gone(&env, ns, "widget-operator.v1.0.0").await;
    let kept = env
        .api
        .get::<Secret>(ns, &copy_name(CREDS))
        .expect("never deleted");
    assert_eq!(kept.resource_version(), squatter.resource_version());
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_secret_from_the_catalog_detaches_and_deletes_its_copies() {
    let mut env = Env::new().await;
    let ns = "team-a";
    catalog_with_secrets(&env, &[CREDS, MIRROR]).await;
    install_widget_in(&env, &[ns]).await;
    env.start_manager();
    wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
    env.wait_until("both copies", TIMEOUT, || {
        env.api.get::<Secret>(ns, &copy_name(MIRROR)).is_some()
    })
    .await;

    patch_catalog(&env, json!({"spec": {"secrets": [CREDS]}})).await;
    env.wait_until("mirror copy deleted", TIMEOUT, || {
        env.api.get::<Secret>(ns, &copy_name(MIRROR)).is_none()
    })
    .await;
    for sa in ["widget-controller", "widget-auditor", "default"] {
        assert_eq!(sa_pull_secrets(&env, ns, sa), [copy_name(CREDS)], "{sa}");
    }
    for deployment in ["widget-controller", "widget-dashboard"] {
        assert_eq!(
            template_pull_secrets(&env, ns, deployment),
            [copy_name(CREDS)],
            "{deployment}"
        );
    }

    // Added back: propagated again.
    patch_catalog(&env, json!({"spec": {"secrets": [CREDS, MIRROR]}})).await;
    env.wait_until("mirror copy attached again", TIMEOUT, || {
        sa_pull_secrets(&env, ns, "default").contains(&copy_name(MIRROR))
    })
    .await;
    env.wait_until("templates list it again", TIMEOUT, || {
        template_pull_secrets(&env, ns, "widget-dashboard").contains(&copy_name(MIRROR))
    })
    .await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_deleted_or_edited_by_someone_is_restored() {
    let mut env = Env::new().await;
    let ns = "team-a";
    catalog_with_secrets(&env, &[CREDS]).await;
    install_widget_in(&env, &[ns]).await;
    env.start_manager();
    wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
    let copy = copy_name(CREDS);
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), ns);

    secrets
        .delete(&copy, &DeleteParams::default())
        .await
        .unwrap();
    let restored = env.wait_for::<Secret>(ns, &copy, TIMEOUT, |_| true).await;
    assert_eq!(restored.data, Some(source_data(&env, CREDS)));

    let tampered = json!({"data": {".dockerconfigjson": "e30="}});
    secrets
        .patch(&copy, &PatchParams::default(), &Patch::Merge(&tampered))
        .await
        .unwrap();
    let source = source_data(&env, CREDS);
    env.wait_for::<Secret>(ns, &copy, TIMEOUT, |s| s.data.as_ref() == Some(&source))
        .await;
    env.stop_manager().await;
}
