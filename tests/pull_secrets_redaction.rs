//! DESIGN invariant 8: secret data never appears in opcat's logs, events, status, annotations or
//! errors, through install, rotation, a failed credential, a name conflict, an API error and an
//! uninstall. (Its own test binary: it installs the process-wide log subscriber.)
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod log_support;
mod support;

use base64::Engine;
use csv_support::*;
use fake_apiserver::{Fault, Verb};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use opcat::api::{ClusterServiceVersion, ClusterServiceVersionPhase as Phase};
use support::{Env, REGISTRY_PASSWORD, REGISTRY_USER};

const CREDS: &str = "registry-creds";
const MIRROR: &str = "mirror-creds";
const ROTATED_PASSWORD: &str = "r0tated-Pa55-never-logged";

fn forbidden(env: &Env) -> Vec<String> {
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let mut needles = vec![
        REGISTRY_PASSWORD.to_owned(),
        b64(REGISTRY_PASSWORD),
        b64(&format!("{REGISTRY_USER}:{REGISTRY_PASSWORD}")),
        b64(&env.registry.dockerconfigjson()),
        ROTATED_PASSWORD.to_owned(),
        b64(ROTATED_PASSWORD),
    ];
    needles.push(b64(&test_registry::dockerconfigjson(
        &env.registry.host,
        REGISTRY_USER,
        ROTATED_PASSWORD,
    )));
    needles
}

fn assert_clean(what: &str, text: &str, needles: &[String]) {
    for needle in needles {
        assert!(
            !text.contains(needle.as_str()),
            "{what} contains secret data ({} chars matched)",
            needle.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secret_data_never_reaches_logs_events_status_annotations_or_errors() {
    let captured = log_support::capture_logs();

    let mut env = Env::new().await;
    let ns = "team-a";
    catalog_with_secrets(&env, &[CREDS, MIRROR]).await;
    namespaces(&env, &[ns]).await;
    // A name conflict and an API error on the way.
    // A foreign Secret with the registry's credentials holds a copy's name.
    let squatter = env.pull_secret(ns, &copy_name(MIRROR));
    env.create(&squatter).await;
    env.api
        .inject_failure(Fault::new(500).verb(Verb::Create).resource("secrets"));
    operator_group(&env, ns, "group", &[ns]).await;
    install(&env, ns, "widget-operator", "1.0.0").await;
    env.start_manager();
    wait_phase(&env, ns, "widget-operator.v1.0.0", Phase::Succeeded).await;
    wait_report(
        &env,
        ns,
        "widget-operator.v1.0.0",
        "PullSecretConflict",
        "True",
    )
    .await;

    // Rotation to a password the registry rejects: preflight failure, rotation events.
    let rejected =
        test_registry::dockerconfigjson(&env.registry.host, REGISTRY_USER, ROTATED_PASSWORD);
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), CATALOG_NAMESPACE);
    let mut source = secrets.get(CREDS).await.unwrap();
    source.data = Some(
        [(
            ".dockerconfigjson".to_owned(),
            ByteString(rejected.into_bytes()),
        )]
        .into(),
    );
    secrets
        .replace(CREDS, &PostParams::default(), &source)
        .await
        .unwrap();
    wait_report(
        &env,
        ns,
        "widget-operator.v1.0.0",
        "PullCredentialsReady",
        "False",
    )
    .await;
    let last_csv = env
        .api
        .get::<ClusterServiceVersion>(ns, "widget-operator.v1.0.0")
        .unwrap();

    delete_csv(&env, ns, "widget-operator.v1.0.0").await;
    wait_gone(&env, ns, "widget-operator.v1.0.0").await;
    env.stop_manager().await;

    let needles = forbidden(&env);
    let logs = captured.text();
    assert!(
        logs.contains("pull-secret copy written"),
        "logs were captured"
    );
    assert_clean("logs", &logs, &needles);

    let events: Vec<k8s_openapi::api::events::v1::Event> = env.api.list(None);
    assert!(!events.is_empty(), "events were published");
    assert_clean("events", &serde_json::to_string(&events).unwrap(), &needles);
    let core_events: Vec<k8s_openapi::api::core::v1::Event> = env.api.list(None);
    assert_clean(
        "core events",
        &serde_json::to_string(&core_events).unwrap(),
        &needles,
    );

    let mut csv_text = serde_json::to_string(&last_csv.status).unwrap();
    csv_text.push_str(&serde_json::to_string(&last_csv.metadata.annotations).unwrap());
    assert!(csv_text.contains("PullCredentialsReady"));
    assert_clean("CSV status and annotations", &csv_text, &needles);
}
