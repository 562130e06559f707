//! Least-privilege copies (issue 23, DESIGN invariant 12): a copy holds only the entries of its
//! source that an image of the operators using it needs, by the kubelet's matching; it follows
//! installs, uninstalls and rotations in place; a source no image needs is not copied and the
//! report says so; the CatalogSource's opt-out copies whole secrets. Real controller, in-memory
//! API server, real registry (the preflight pulls with the copies).
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod log_support;
mod support;

use std::collections::BTreeMap;

use base64::Engine;
use csv_support::*;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use opcat::api::{CatalogSource, CatalogSourceSpec, ClusterServiceVersionPhase as Phase};
use serde_json::{Value, json};
use support::{Env, REGISTRY_PASSWORD, REGISTRY_USER};

const GLOBAL: &str = "global-pull";
const CREDS: &str = "registry-creds";
const UNRELATED: &str = "unrelated-creds";
const NS: &str = "team-a";
const WIDGET: &str = "widget-operator.v1.0.0";
const GADGET: &str = "gadget-operator.v0.1.0";
/// A password on the registries the operators do not use: it must reach no copy and no text.
const MARKER: &str = "n0t-for-this-namespace-Xq81";

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// The test registry's entry, with an `email` (entries are copied whole).
fn registry_entry(email: &str) -> Value {
    json!({"auth": b64(&format!("{REGISTRY_USER}:{REGISTRY_PASSWORD}")), "email": email})
}

/// An OpenShift-style global pull secret: three registries the examples never use, and the
/// test registry playing `registry.connect.redhat.com`.
fn four_registries(env: &Env, email: &str, marker: &str) -> Value {
    json!({"auths": {
        "cloud.openshift.com": {"auth": b64(&format!("cloud:{marker}")), "email": email},
        "quay.io": {"auth": b64(&format!("quay:{marker}"))},
        "registry.redhat.io": {"username": "rh", "password": marker},
        env.registry.host.clone(): registry_entry(email),
    }})
}

fn secret(name: &str, type_: &str, key: &str, document: &Value) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(CATALOG_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        type_: Some(type_.to_owned()),
        data: Some(BTreeMap::from([(
            key.to_owned(),
            ByteString(document.to_string().into_bytes()),
        )])),
        ..Secret::default()
    }
}

fn dockerconfigjson(name: &str, document: &Value) -> Secret {
    secret(
        name,
        "kubernetes.io/dockerconfigjson",
        ".dockerconfigjson",
        document,
    )
}

/// The catalog namespace, `sources`, and the CatalogSource naming them, with `annotations`.
async fn catalog_with(env: &Env, sources: &[Secret], annotations: BTreeMap<String, String>) {
    namespaces(env, &[CATALOG_NAMESPACE]).await;
    for source in sources {
        env.create(source).await;
    }
    let catalog = CatalogSource {
        metadata: ObjectMeta {
            name: Some(CATALOG.to_owned()),
            namespace: Some(CATALOG_NAMESPACE.to_owned()),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: CatalogSourceSpec {
            source_type: "grpc".to_owned(),
            image: Some(env.images.catalog.clone()),
            secrets: Some(sources.iter().map(|s| s.name_any()).collect()),
            ..CatalogSourceSpec::default()
        },
        status: None,
    };
    env.create(&catalog).await;
}

async fn replace_source(env: &Env, name: &str, key: &str, document: &Value) {
    let api: Api<Secret> = Api::namespaced(env.client.clone(), CATALOG_NAMESPACE);
    let mut source = api.get(name).await.unwrap();
    source.data = Some(BTreeMap::from([(
        key.to_owned(),
        ByteString(document.to_string().into_bytes()),
    )]));
    api.replace(name, &PostParams::default(), &source)
        .await
        .unwrap();
}

fn copy_of(env: &Env, source: &str) -> Option<Secret> {
    env.api.get::<Secret>(NS, &copy_name(source))
}

fn registries(copy: &Secret) -> String {
    copy.annotations()
        .get("opcat.dev/registries")
        .cloned()
        .unwrap_or_default()
}

fn document(copy: &Secret, key: &str) -> String {
    String::from_utf8(copy.data.as_ref().unwrap()[key].0.clone()).unwrap()
}

/// Waits until the copy of `source` holds exactly the registries `wanted` (`,`-joined).
async fn wait_registries(env: &Env, source: &str, wanted: &str) -> Secret {
    env.wait_for::<Secret>(NS, &copy_name(source), TIMEOUT, |copy| {
        registries(copy) == wanted
    })
    .await
}

/// No marker, raw or base64, in opcat's logs, the events, the CSVs' annotations and status, or
/// any copy.
fn assert_marker_nowhere(env: &Env, marker: &str) {
    let needles = [
        marker.to_owned(),
        b64(marker),
        b64(&format!("quay:{marker}")),
    ];
    let events: Vec<k8s_openapi::api::events::v1::Event> = env.api.list(None);
    let core: Vec<k8s_openapi::api::core::v1::Event> = env.api.list(None);
    let csvs: Vec<opcat::api::ClusterServiceVersion> = env.api.list(Some(NS));
    let copies: Vec<Secret> = env.api.list(Some(NS));
    let logs = log_support::capture_logs().text();
    assert!(
        logs.contains("pull-secret copy written"),
        "logs were captured"
    );
    let text = format!(
        "{logs} {} {} {} {}",
        serde_json::to_string(&events).unwrap(),
        serde_json::to_string(&core).unwrap(),
        serde_json::to_string(&csvs).unwrap(),
        serde_json::to_string(&copies).unwrap(),
    );
    assert!(text.contains("PullSecretsScoped"), "the report was read");
    for needle in &needles {
        assert!(!text.contains(needle.as_str()), "secret data leaked");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copy_holds_what_its_operators_pull_and_follows_installs_uninstalls_and_rotation() {
    log_support::capture_logs();
    let mut env = Env::new().await;
    let host = env.registry.host.clone();
    catalog_with(
        &env,
        &[dockerconfigjson(
            GLOBAL,
            &four_registries(&env, "ops@example.com", MARKER),
        )],
        BTreeMap::new(),
    )
    .await;
    install_widget_in(&env, &[NS]).await;
    env.start_manager();

    // One operator on one registry: one entry, whole, and the operator's image pulls with it.
    wait_phase(&env, NS, WIDGET, Phase::Succeeded).await;
    let csv = wait_report(&env, NS, WIDGET, "PullCredentialsReady", "True").await;
    assert_eq!(
        report(&csv)["PullCredentialsReady"].2,
        "1 of 1 images resolved with the pull secrets"
    );
    let copy = wait_registries(&env, GLOBAL, &host).await;
    assert_eq!(
        document(&copy, ".dockerconfigjson"),
        json!({"auths": {host.clone(): registry_entry("ops@example.com")}}).to_string()
    );
    let (status, reason, message) = report(&csv)["PullSecretsScoped"].clone();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "ScopedToImages")
    );
    assert!(
        message.contains(&format!(
            "secret olm/{GLOBAL} as {NS}/{} holds [{host}]",
            copy_name(GLOBAL)
        )),
        "{message}"
    );
    for sa in ["widget-controller", "default"] {
        assert_eq!(sa_pull_secrets(&env, NS, sa), [copy_name(GLOBAL)]);
    }
    let uid = copy.uid();

    // A second operator from the catalog whose operand lives on quay.io widens the same copy.
    let image = csv_support::pinned(&env, "opcat-examples/gadget-operator-bundle:v0.1.0").await;
    let dir = env.images.bundles_dir.join("gadget-operator/0.1.0");
    let mut gadget = installed_csv(&dir, NS, "gadget-operator", &image);
    gadget.spec.related_images.get_or_insert_default().push(
        serde_json::from_value(
            json!({"name": "operand", "image": "quay.io/acme/gadget-operand:v1"}),
        )
        .unwrap(),
    );
    env.create(&gadget).await;
    let widened = wait_registries(&env, GLOBAL, &format!("{host},quay.io")).await;
    assert_eq!(widened.uid(), uid, "updated in place");
    let auths =
        &serde_json::from_str::<Value>(&document(&widened, ".dockerconfigjson")).unwrap()["auths"];
    assert_eq!(
        auths.as_object().unwrap().keys().collect::<Vec<_>>(),
        [&host, "quay.io"]
    );

    // Uninstalling it narrows the copy again, still in place.
    wait_phase(&env, NS, GADGET, Phase::Succeeded).await;
    delete_csv(&env, NS, GADGET).await;
    wait_gone(&env, NS, GADGET).await;
    let narrowed = wait_registries(&env, GLOBAL, &host).await;
    assert_eq!(narrowed.uid(), uid);

    // Rotation: the filtered data is rewritten in place.
    replace_source(
        &env,
        GLOBAL,
        ".dockerconfigjson",
        &four_registries(&env, "rotated@example.com", "r0tated-marker-Zt3"),
    )
    .await;
    let wanted =
        json!({"auths": {host.clone(): registry_entry("rotated@example.com")}}).to_string();
    let rotated = env
        .wait_for::<Secret>(NS, &copy_name(GLOBAL), TIMEOUT, |copy| {
            document(copy, ".dockerconfigjson") == wanted
        })
        .await;
    assert_eq!(rotated.uid(), uid, "same Secret: rotation in place");
    assert_eq!(registries(&rotated), host);
    wait_report(&env, NS, WIDGET, "PullCredentialsReady", "True").await;

    assert_marker_nowhere(&env, MARKER);
    assert_marker_nowhere(&env, "r0tated-marker-Zt3");
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dockercfg_path_scoped_and_wildcard_entries_are_matched_as_the_kubelet_matches_them() {
    log_support::capture_logs();
    let mut env = Env::new().await;
    let host = env.registry.host.clone(); // 127.0.0.1:<port>
    let (address, port) = host.rsplit_once(':').unwrap();
    let wildcard = format!("*.{}:{port}", address.split_once('.').unwrap().1);
    let good = json!({"auth": b64(&format!("{REGISTRY_USER}:{REGISTRY_PASSWORD}"))});
    let config = json!({
        format!("{host}/opcat-examples"): good,
        format!("{host}/other-team"): {"auth": b64(&format!("other:{MARKER}"))},
        wildcard.clone(): good,
        "*.example.com": {"auth": b64(&format!("example:{MARKER}"))},
        format!("{address}:1"): {"auth": b64(&format!("port:{MARKER}"))},
    });
    catalog_with(
        &env,
        &[secret(
            CREDS,
            "kubernetes.io/dockercfg",
            ".dockercfg",
            &config,
        )],
        BTreeMap::new(),
    )
    .await;
    install_widget_in(&env, &[NS]).await;
    env.start_manager();

    wait_phase(&env, NS, WIDGET, Phase::Succeeded).await;
    let copy = wait_registries(&env, CREDS, &format!("{wildcard},{host}/opcat-examples")).await;
    assert_eq!(copy.type_.as_deref(), Some("kubernetes.io/dockercfg"));
    assert_eq!(
        document(&copy, ".dockercfg"),
        json!({format!("{host}/opcat-examples"): good, wildcard: good}).to_string(),
        "the .dockercfg layout, only the entries covering opcat-examples/* on this host:port"
    );
    let csv = wait_report(&env, NS, WIDGET, "PullCredentialsReady", "True").await;
    assert_eq!(
        report(&csv)["PullCredentialsReady"].2,
        "1 of 1 images resolved with the pull secrets"
    );
    assert_marker_nowhere(&env, MARKER);
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_no_image_needs_is_not_copied_and_the_report_and_preflight_say_so() {
    log_support::capture_logs();
    let mut env = Env::new().await;
    let unrelated = json!({"auths": {
        "quay.io": {"auth": b64(&format!("quay:{MARKER}"))},
        "registry.redhat.io": {"auth": b64(&format!("rh:{MARKER}"))},
    }});
    catalog_with(
        &env,
        &[
            env.pull_secret(CATALOG_NAMESPACE, CREDS),
            dockerconfigjson(UNRELATED, &unrelated),
        ],
        BTreeMap::new(),
    )
    .await;
    install_widget_in(&env, &[NS]).await;
    env.start_manager();

    wait_phase(&env, NS, WIDGET, Phase::Succeeded).await;
    let csv = wait_report(&env, NS, WIDGET, "PullSecretsScoped", "True").await;
    let message = &report(&csv)["PullSecretsScoped"].2;
    assert!(
        message.contains(&format!(
            "secret olm/{UNRELATED} left out: none of its registries [quay.io, registry.redhat.io] \
             serves an image of the operators from catalog source olm/{CATALOG} in namespace {NS}"
        )),
        "{message}"
    );
    assert!(copy_of(&env, UNRELATED).is_none(), "not copied");
    assert!(copy_of(&env, CREDS).is_some());
    for sa in ["widget-controller", "widget-auditor", "default"] {
        assert_eq!(sa_pull_secrets(&env, NS, sa), [copy_name(CREDS)], "{sa}");
    }
    assert_eq!(
        template_pull_secrets(&env, NS, "widget-controller"),
        [copy_name(CREDS)]
    );

    // Only the unrelated secret left: nothing is copied or attached, and the preflight says
    // the operator's image has no credential.
    patch_catalog(&env, json!({"spec": {"secrets": [UNRELATED]}})).await;
    env.wait_until("the copy of the removed secret is deleted", TIMEOUT, || {
        copy_of(&env, CREDS).is_none()
    })
    .await;
    let csv = env
        .wait_for::<opcat::api::ClusterServiceVersion>(NS, WIDGET, TIMEOUT, |csv| {
            report(csv)
                .get("PullCredentialsReady")
                .is_some_and(|(_, _, message)| message.contains("no credentials for registry"))
        })
        .await;
    let message = &report(&csv)["PullCredentialsReady"].2;
    assert!(message.contains(&env.registry.host), "{message}");
    assert!(copy_of(&env, UNRELATED).is_none());
    assert!(sa_pull_secrets(&env, NS, "widget-controller").is_empty());
    assert_marker_nowhere(&env, MARKER);
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalogs_opt_out_copies_whole_secrets_and_opting_back_in_narrows_in_place() {
    log_support::capture_logs();
    let mut env = Env::new().await;
    let host = env.registry.host.clone();
    let source = dockerconfigjson(GLOBAL, &four_registries(&env, "ops@example.com", MARKER));
    catalog_with(
        &env,
        std::slice::from_ref(&source),
        BTreeMap::from([("opcat.dev/pull-secret-scope".to_owned(), "whole".to_owned())]),
    )
    .await;
    install_widget_in(&env, &[NS]).await;
    env.start_manager();

    wait_phase(&env, NS, WIDGET, Phase::Succeeded).await;
    let copy = wait_registries(
        &env,
        GLOBAL,
        &format!("{host},cloud.openshift.com,quay.io,registry.redhat.io"),
    )
    .await;
    assert_eq!(copy.data, source.data, "the whole secret, byte for byte");
    let csv = wait_report(&env, NS, WIDGET, "PullSecretsScoped", "False").await;
    let (_, reason, message) = report(&csv)["PullSecretsScoped"].clone();
    assert_eq!(reason, "WholeSecretsCopied");
    assert!(
        message.contains("opcat.dev/pull-secret-scope: whole"),
        "{message}"
    );

    patch_catalog(
        &env,
        json!({"metadata": {"annotations": {"opcat.dev/pull-secret-scope": null}}}),
    )
    .await;
    let narrowed = wait_registries(&env, GLOBAL, &host).await;
    assert_eq!(narrowed.uid(), copy.uid(), "in place");
    wait_report(&env, NS, WIDGET, "PullSecretsScoped", "True").await;
    env.stop_manager().await;
}
