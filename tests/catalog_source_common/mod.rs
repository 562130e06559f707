//! Helpers shared by the CatalogSource integration tests (`tests/catalog_source_*.rs`). Each test
//! file declares `mod support;` before this module.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Api, ObjectMeta, PostParams};
use opcat::api::catalog_source::{RegistryPoll, UpdateStrategy};
use opcat::api::{CatalogSource, CatalogSourceSpec};

use crate::support::{Env, REGISTRY_PASSWORD};

/// Namespace of the catalogs.
pub const NS: &str = "olm";
/// Generous: the machine is slow and shared.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// A `grpc` CatalogSource for `image` with these pull secrets.
pub fn catalog_source(name: &str, image: &str, secrets: &[&str]) -> CatalogSource {
    CatalogSource {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(NS.to_owned()),
            ..ObjectMeta::default()
        },
        spec: CatalogSourceSpec {
            source_type: "grpc".to_owned(),
            image: Some(image.to_owned()),
            secrets: (!secrets.is_empty())
                .then(|| secrets.iter().map(|s| (*s).to_owned()).collect()),
            display_name: Some("Private operators".to_owned()),
            ..CatalogSourceSpec::default()
        },
        status: None,
    }
}

/// The same CatalogSource polling at `interval`.
pub fn polling(mut catalog: CatalogSource, interval: &str) -> CatalogSource {
    catalog.spec.update_strategy = Some(UpdateStrategy {
        registry_poll: Some(RegistryPoll {
            interval: Some(interval.to_owned()),
        }),
    });
    catalog
}

/// `status.connectionState.lastObservedState`.
pub fn state(catalog: &CatalogSource) -> Option<&str> {
    Some(
        catalog
            .status
            .as_ref()?
            .connection_state
            .as_ref()?
            .last_observed_state
            .as_str(),
    )
}

/// `status.message` (empty when unset).
pub fn message(catalog: &CatalogSource) -> &str {
    catalog
        .status
        .as_ref()
        .and_then(|s| s.message.as_deref())
        .unwrap_or_default()
}

/// `status.reason` (empty when unset).
pub fn reason(catalog: &CatalogSource) -> &str {
    catalog
        .status
        .as_ref()
        .and_then(|s| s.reason.as_deref())
        .unwrap_or_default()
}

/// A condition of the status.
pub fn condition<'a>(catalog: &'a CatalogSource, type_: &str) -> Option<&'a Condition> {
    catalog
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Waits until the CatalogSource's last observed state is `wanted`.
pub async fn wait_state(env: &Env, name: &str, wanted: &str) -> CatalogSource {
    env.wait_for::<CatalogSource>(NS, name, TIMEOUT, |c| state(c) == Some(wanted))
        .await
}

/// Waits until the CatalogSource satisfies `check`.
pub async fn wait_until(
    env: &Env,
    name: &str,
    check: impl Fn(&CatalogSource) -> bool,
) -> CatalogSource {
    env.wait_for::<CatalogSource>(NS, name, TIMEOUT, check)
        .await
}

/// A Secret in [`NS`] with the registry's credentials.
pub async fn create_pull_secret(env: &Env, name: &str) -> Secret {
    env.create(&env.pull_secret(NS, name)).await
}

/// Replaces a Secret's `.dockerconfigjson` (a rotation or a fix), keeping its name.
pub async fn set_secret_config(env: &Env, name: &str, dockerconfigjson: &str) {
    let api: Api<Secret> = Api::namespaced(env.client.clone(), NS);
    let mut secret = api.get(name).await.expect("get secret");
    let fresh = crate::support::pull_secret(NS, name, dockerconfigjson);
    secret.data = fresh.data;
    api.replace(name, &PostParams::default(), &secret)
        .await
        .expect("replace secret");
}

/// `.dockerconfigjson` with the registry's user and a wrong password.
pub fn wrong_password_config(env: &Env) -> String {
    test_registry::dockerconfigjson(&env.registry.host, &env.registry.user().username, "wrong")
}

/// Events about `name`.
pub fn events(env: &Env, name: &str) -> Vec<Event> {
    env.api
        .list::<Event>(Some(NS))
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .collect()
}

/// Waits until an event with `reason` about `name` exists.
pub async fn wait_event(env: &Env, name: &str, reason: &str) {
    env.wait_until(&format!("{reason} event about {name}"), TIMEOUT, || {
        events(env, name)
            .iter()
            .any(|e| e.reason.as_deref() == Some(reason))
    })
    .await;
}

/// DESIGN invariant 8: the registry password (plain or inside base64 credentials) appears in no
/// CatalogSource status and no event.
pub fn assert_no_secret_data(env: &Env) {
    let statuses: Vec<String> = env
        .api
        .list::<CatalogSource>(Some(NS))
        .iter()
        .map(|c| serde_json::to_string(&c.status).unwrap())
        .collect();
    let events: Vec<String> = env
        .api
        .list::<Event>(Some(NS))
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect();
    let auth = opcat_base64(&format!(
        "{}:{REGISTRY_PASSWORD}",
        env.registry.user().username
    ));
    for text in statuses.iter().chain(&events) {
        assert!(
            !text.contains(REGISTRY_PASSWORD),
            "secret data leaked: {text}"
        );
        assert!(!text.contains(&auth), "secret data leaked: {text}");
    }
}

fn opcat_base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}
