//! CatalogSource reconciler, loading and serving catalogs: a private catalog with its pull
//! secret, steady state, restart from the disk cache, polls that find a re-pushed image (at the
//! spec's interval or `--poll-default`), an invalid poll interval, deletion, and what the metrics
//! count. Real `docker-registry` with basic auth, in-memory API server, the manager in-process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod catalog_source_common;
mod ops_support;

use std::path::PathBuf;
use std::time::Duration;

use catalog_source_common::*;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use opcat::api::CatalogSource;
use opcat::controller::context::Settings;
use opcat::registry::ImageRef;
use opcat::registry::push::{BuiltImage, build_catalog_image};
use ops_support::assert_allowed_by_rbac;
use support::Env;

/// A running manager serving the example catalog as CatalogSource `name` (pull secret
/// `catalog-pull`, polling at `interval` if given), once it is READY.
async fn serving(name: &str, interval: Option<&str>, settings: Settings) -> (Env, CatalogSource) {
    let mut env = Env::new().await;
    env.namespace(NS).await;
    create_pull_secret(&env, "catalog-pull").await;
    env.start_manager_with(settings);
    let mut catalog = catalog_source(name, &env.images.catalog, &["catalog-pull"]);
    if let Some(interval) = interval {
        catalog = polling(catalog, interval);
    }
    env.create(&catalog).await;
    let ready = wait_state(&env, name, "READY").await;
    (env, ready)
}

/// The digest the registry serves for `image` now.
async fn registry_digest(env: &Env, image: &str) -> String {
    let image: ImageRef = image.parse().unwrap();
    env.opcat_registry
        .resolve_digest(&image, &support::keyring_for(&env.registry))
        .await
        .unwrap()
        .to_string()
}

/// A copy of the example catalog plus `extra` files (relative path, content).
fn catalog_dir(env: &Env, name: &str, extra: &[(String, String)]) -> PathBuf {
    let dir = env.registry.scratch(name);
    support::copy_rewritten(&env.images.catalog_dir, &dir, &env.registry.host);
    for (path, content) in extra {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
    dir
}

/// Builds a catalog image from `dir` and pushes it to the example catalog's tag.
async fn push_catalog(env: &Env, dir: &std::path::Path) -> String {
    let built = opcat::registry::push::build_catalog_image(dir).unwrap();
    let image: ImageRef = env.images.catalog.parse().unwrap();
    env.opcat_registry
        .push(&image, &built, &support::keyring_for(&env.registry))
        .await
        .unwrap();
    built.digest.to_string()
}

fn extra_package(env: &Env) -> (String, String) {
    (
        "extra-operator/catalog.yaml".to_owned(),
        format!(
            "---\nschema: olm.package\nname: extra-operator\ndefaultChannel: stable\n\
             ---\nschema: olm.channel\npackage: extra-operator\nname: stable\nentries:\n  - name: extra-operator.v1.0.0\n\
             ---\nschema: olm.bundle\npackage: extra-operator\nname: extra-operator.v1.0.0\n\
             image: {}/opcat-examples/extra-operator-bundle:v1.0.0\nproperties:\n  - type: olm.package\n    \
             value:\n      packageName: extra-operator\n      version: 1.0.0\n",
            env.registry.host
        ),
    )
}

fn digest_of(catalog: &CatalogSource) -> Option<&str> {
    catalog.status.as_ref()?.resolved_image_digest.as_deref()
}

fn package_count(catalog: &CatalogSource) -> Option<i64> {
    catalog.status.as_ref()?.package_count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_catalog_with_its_pull_secret_becomes_ready_and_is_served() {
    let (mut env, catalog) = serving("private", None, Env::settings()).await;
    let image = env.images.catalog.clone();
    let status = catalog.status.as_ref().unwrap();
    let digest = registry_digest(&env, &image).await;
    assert_eq!(
        status.resolved_image_digest.as_deref(),
        Some(digest.as_str())
    );
    assert_eq!(
        status.package_count,
        Some(2),
        "gadget-operator and widget-operator"
    );
    let connection = status.connection_state.as_ref().unwrap();
    assert_eq!(connection.address.as_deref(), Some(image.as_str()));
    assert!(connection.last_connect.is_some());
    assert!(status.latest_image_registry_poll.is_some());
    assert_eq!(status.reason, None);
    let ready = condition(&catalog, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("True", "CatalogLoaded")
    );
    let secrets = condition(&catalog, "PullSecretSourceMissing").unwrap();
    assert_eq!(
        (secrets.status.as_str(), secrets.reason.as_str()),
        ("False", "SourceSecretsPresent")
    );

    let loaded = env
        .context()
        .catalogs
        .get(NS, "private")
        .expect("catalog in memory");
    assert_eq!(loaded.digest.to_string(), digest);
    let packages: Vec<&str> = loaded.catalog.packages().map(|p| p.name.as_str()).collect();
    assert_eq!(packages, ["gadget-operator", "widget-operator"]);
    wait_event(&env, "private", "CatalogLoaded").await;
    assert_no_secret_data(&env);
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_converged_catalog_makes_no_writes_and_no_registry_requests() {
    let settings = Settings {
        // Reconcile converged objects often, so the quiet period below covers many of them.
        resync: Duration::from_millis(200),
        ..Env::settings()
    };
    let (mut env, _) = serving("quiet", None, settings).await;
    wait_event(&env, "quiet", "CatalogLoaded").await;

    // A change that is not ours triggers a reconcile; nothing about the catalog changed.
    let api: Api<CatalogSource> = Api::namespaced(env.client.clone(), NS);
    api.patch(
        "quiet",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"annotations": {"team": "platform"}}})),
    )
    .await
    .unwrap();
    env.api.reset_counts();
    let registry_before = env.registry.requests("/v2/");
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        env.api.request_counts().writes(),
        0,
        "steady state writes nothing: {:?}",
        env.api.request_counts().iter().collect::<Vec<_>>()
    );
    assert_eq!(
        env.registry.requests("/v2/"),
        registry_before,
        "no poll is due"
    );

    // The reconciler is alive: a spec change still shows up in status.
    api.patch(
        "quiet",
        &PatchParams::default(),
        &Patch::Merge(
            serde_json::json!({"spec": {"updateStrategy": {"registryPoll": {"interval": "soon"}}}}),
        ),
    )
    .await
    .unwrap();
    wait_until(&env, "quiet", |c| reason(c) == "InvalidIntervalError").await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_manager_serves_the_catalog_from_the_disk_cache() {
    let (mut env, before) = serving("cached", None, Env::settings()).await;
    let blobs = env.registry.requests("/blobs/");
    let manifests = env.registry.requests("/manifests/");
    assert!(
        blobs > 0,
        "the first load downloaded the image:\n{}",
        env.registry.log()
    );

    env.stop_manager().await;
    env.reopen_registry();
    env.api.reset_counts();
    env.start_manager();
    let context = env.context();
    env.wait_until("catalog restored in memory", TIMEOUT, || {
        context.catalogs.get(NS, "cached").is_some()
    })
    .await;
    // Give the reconcile that restored it time to finish (it would write status next).
    tokio::time::sleep(Duration::from_secs(1)).await;

    let loaded = context.catalogs.get(NS, "cached").unwrap();
    assert_eq!(Some(loaded.digest.to_string().as_str()), digest_of(&before));
    assert_eq!(
        env.registry.requests("/blobs/"),
        blobs,
        "no download after a restart"
    );
    assert_eq!(
        env.registry.requests("/manifests/"),
        manifests,
        "no poll is due, so no registry request at all"
    );
    assert_eq!(env.api.request_counts().writes(), 0, "status is unchanged");
    let after = env.api.get::<CatalogSource>(NS, "cached").unwrap();
    assert_eq!(after.status, before.status);
    assert_eq!(
        env.metric(r#"opcat_catalog_pulls_total{result="cached"}"#),
        Some(1.0)
    );
    assert_eq!(
        env.metric(r#"opcat_catalog_pulls_total{result="pulled"}"#),
        Some(0.0)
    );
    assert_eq!(env.metric("opcat_catalog_pull_bytes_total"), Some(0.0));
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_re_pushed_under_the_same_tag_is_loaded_at_the_next_poll() {
    let (mut env, first) = serving("polled", Some("1s"), Env::settings()).await;
    assert_eq!(package_count(&first), Some(2));

    let dir = catalog_dir(&env, "catalog-v2", &[extra_package(&env)]);
    let pushed = push_catalog(&env, &dir).await;
    assert_ne!(Some(pushed.as_str()), digest_of(&first));

    let updated = wait_until(&env, "polled", |c| digest_of(c) == Some(pushed.as_str())).await;
    assert_eq!(state(&updated), Some("READY"));
    assert_eq!(package_count(&updated), Some(3));
    let loaded = env.context().catalogs.get(NS, "polled").unwrap();
    assert!(loaded.catalog.package("extra-operator").is_some());
    wait_event(&env, "polled", "CatalogUpdated").await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_registry_poll_the_catalog_is_polled_at_the_poll_default() {
    let settings = Settings {
        default_poll_interval: Some(Duration::from_secs(1)),
        ..Env::settings()
    };
    let (mut env, first) = serving("defaulted", None, settings).await;
    assert_eq!(package_count(&first), Some(2));

    let dir = catalog_dir(&env, "catalog-v2", &[extra_package(&env)]);
    let pushed = push_catalog(&env, &dir).await;
    let updated = wait_until(&env, "defaulted", |c| digest_of(c) == Some(pushed.as_str())).await;
    assert_eq!(package_count(&updated), Some(3));
    wait_event(&env, "defaulted", "CatalogUpdated").await;

    // Two images loaded, each downloaded exactly once: polls that find the digest already
    // served download and count nothing.
    let size = |built: &BuiltImage| {
        (built.manifest.len() + built.config.len() + built.layer.bytes.len()) as f64
    };
    let first_image = build_catalog_image(&env.images.catalog_dir).unwrap();
    let second_image = build_catalog_image(&dir).unwrap();
    assert_eq!(
        env.metric(r#"opcat_catalog_pulls_total{result="pulled"}"#),
        Some(2.0)
    );
    assert_eq!(
        env.metric("opcat_catalog_pull_bytes_total"),
        Some(size(&first_image) + size(&second_image))
    );
    assert!(
        env.metric(r#"opcat_reconcile_total{controller="catalogsource"}"#) >= Some(3.0),
        "every poll is a reconcile"
    );
    assert_allowed_by_rbac(&env.manager_requests());
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_re_push_keeps_serving_the_previous_catalog() {
    let (mut env, good) = serving("guarded", Some("1s"), Env::settings()).await;
    let good_digest = digest_of(&good).unwrap().to_owned();

    // Seven packages without channels: more problems than a message lists.
    let broken: Vec<(String, String)> = (0..7)
        .map(|i| {
            (
                format!("broken/{i}.yaml"),
                format!("---\nschema: olm.package\nname: broken-{i}\ndefaultChannel: none\n"),
            )
        })
        .collect();
    let dir = catalog_dir(&env, "catalog-broken", &broken);
    let pushed = push_catalog(&env, &dir).await;

    let failing = wait_state(&env, "guarded", "TRANSIENT_FAILURE").await;
    let text = message(&failing);
    assert_eq!(reason(&failing), "RegistryServerError");
    assert!(text.contains(&pushed), "names the new digest: {text}");
    assert!(text.contains("is not a valid file-based catalog"), "{text}");
    assert!(text.contains("problems: "), "counts the problems: {text}");
    assert!(text.contains("broken-"), "lists the first problems: {text}");
    assert!(text.contains("and "), "says how many more: {text}");
    assert!(
        text.contains(&format!(
            "still serving the catalog loaded earlier ({good_digest})"
        )),
        "{text}"
    );
    assert_eq!(digest_of(&failing), Some(good_digest.as_str()));
    let ready = condition(&failing, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "CatalogInvalid")
    );
    let served = env.context().catalogs.get(NS, "guarded").unwrap();
    assert_eq!(
        served.digest.to_string(),
        good_digest,
        "Subscriptions keep resolving"
    );
    wait_event(&env, "guarded", "CatalogLoadFailed").await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_poll_interval_is_reported_and_the_catalog_still_served() {
    let (mut env, catalog) = serving("sloppy", Some("every hour"), Env::settings()).await;
    assert_eq!(reason(&catalog), "InvalidIntervalError");
    let text = message(&catalog);
    assert!(
        text.contains("\"every hour\""),
        "quotes the bad value: {text}"
    );
    assert!(text.contains("polling every 15m instead"), "{text}");
    assert_eq!(condition(&catalog, "Ready").unwrap().status, "True");
    assert!(env.context().catalogs.get(NS, "sloppy").is_some());
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_catalog_source_is_no_longer_served() {
    let (mut env, _) = serving("doomed", None, Env::settings()).await;
    let context = env.context();
    assert!(context.catalogs.get(NS, "doomed").is_some());

    let api: Api<CatalogSource> = Api::namespaced(env.client.clone(), NS);
    api.delete("doomed", &DeleteParams::default())
        .await
        .unwrap();
    env.wait_until("catalog dropped from memory", TIMEOUT, || {
        context.catalogs.get(NS, "doomed").is_none()
    })
    .await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_pull_secret_is_used_at_once_without_waiting_for_a_poll() {
    // No poll interval: only a change can make opcat contact the registry again.
    let (mut env, before) = serving("rotating", None, Env::settings()).await;
    let polled = |c: &CatalogSource| c.status.as_ref()?.latest_image_registry_poll.clone();
    let manifests = env.registry.requests("/manifests/");
    // Status times have second precision: make sure a new poll shows.
    tokio::time::sleep(Duration::from_millis(1100)).await;

    // Rotate: same registry, new credentials document (an extra entry), new resourceVersion.
    let rotated = serde_json::json!({"auths": {
        env.registry.host.clone(): {
            "username": env.registry.user().username,
            "password": env.registry.user().password,
        },
        "mirror.example.com": {"username": "other", "password": "other"},
    }});
    set_secret_config(&env, "catalog-pull", &rotated.to_string()).await;
    let after = wait_until(&env, "rotating", |c| polled(c) != polled(&before)).await;
    assert_eq!(state(&after), Some("READY"));
    assert!(env.registry.requests("/manifests/") > manifests);
    assert_eq!(
        digest_of(&after),
        digest_of(&before),
        "same image, nothing re-loaded"
    );
    env.stop_manager().await;
}
