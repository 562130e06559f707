//! CatalogSource reconciler, what goes wrong: wrong, missing and absent credentials (and their
//! fixes, picked up through the by-name source Secret watch), sources opcat does not serve, and
//! catalog images without a file-based catalog. Real `docker-registry` with basic auth,
//! in-memory API server, the manager in-process.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

mod catalog_source_common;

use catalog_source_common::*;
use opcat::api::CatalogSource;
use opcat::api::CatalogSourceSpec;
use support::Env;

async fn env_in_namespace() -> Env {
    let env = Env::new().await;
    env.namespace(NS).await;
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_credentials_fail_with_401_until_the_secret_is_fixed_in_place() {
    let mut env = env_in_namespace().await;
    env.create(&support::pull_secret(
        NS,
        "catalog-pull",
        &wrong_password_config(&env),
    ))
    .await;
    env.start_manager();
    let image = env.images.catalog.clone();
    let created = env
        .create(&catalog_source("private", &image, &["catalog-pull"]))
        .await;

    let failing = wait_state(&env, "private", "TRANSIENT_FAILURE").await;
    let text = message(&failing);
    assert_eq!(reason(&failing), "RegistryServerError");
    assert!(text.contains("401 Unauthorized"), "{text}");
    assert!(
        text.contains(&env.registry.host),
        "names the registry: {text}"
    );
    assert!(
        text.contains("opcat-examples/catalog"),
        "names the image: {text}"
    );
    assert!(
        text.contains("\"catalog-pull\""),
        "names the secret tried: {text}"
    );
    let ready = condition(&failing, "Ready").unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "ImagePullFailed")
    );
    assert!(env.context().catalogs.get(NS, "private").is_none());
    wait_event(&env, "private", "CatalogLoadFailed").await;

    // Fix the Secret's data; the CatalogSource itself is not touched.
    set_secret_config(&env, "catalog-pull", &env.registry.dockerconfigjson()).await;
    let ready = wait_state(&env, "private", "READY").await;
    assert_eq!(ready.metadata.generation, created.metadata.generation);
    assert_eq!(ready.spec, created.spec);
    assert!(env.context().catalogs.get(NS, "private").is_some());
    assert_no_secret_data(&env);
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_pull_secret_against_an_authenticated_registry_is_a_clear_401() {
    let mut env = env_in_namespace().await;
    env.start_manager();
    env.create(&catalog_source("anonymous", &env.images.catalog, &[]))
        .await;
    let failing = wait_state(&env, "anonymous", "TRANSIENT_FAILURE").await;
    let text = message(&failing);
    assert!(text.contains("401 Unauthorized"), "{text}");
    assert!(text.contains(&env.registry.host), "{text}");
    assert!(
        text.contains("no credential matches this registry, tried anonymously"),
        "{text}"
    );
    let secrets = condition(&failing, "PullSecretSourceMissing").unwrap();
    assert_eq!(secrets.status, "False");
    assert_eq!(secrets.message, "spec.secrets names no pull secrets");
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_pull_secret_is_a_condition_until_it_is_created() {
    let mut env = env_in_namespace().await;
    env.start_manager();
    env.create(&catalog_source("waiting", &env.images.catalog, &["later"]))
        .await;
    let failing = wait_until(&env, "waiting", |c| {
        state(c) == Some("TRANSIENT_FAILURE")
            && condition(c, "PullSecretSourceMissing").is_some_and(|s| s.status == "True")
    })
    .await;
    let missing = condition(&failing, "PullSecretSourceMissing").unwrap();
    assert_eq!(missing.reason, "SourceSecretNotFound");
    assert!(
        missing
            .message
            .contains("Secret \"later\" not found in namespace \"olm\""),
        "{}",
        missing.message
    );
    let ready = condition(&failing, "Ready").unwrap();
    assert_eq!(
        ready.reason, "PullSecretInvalid",
        "the 401 is explained by the missing secret"
    );

    create_pull_secret(&env, "later").await;
    let ready = wait_state(&env, "waiting", "READY").await;
    let present = condition(&ready, "PullSecretSourceMissing").unwrap();
    assert_eq!(
        (present.status.as_str(), present.reason.as_str()),
        ("False", "SourceSecretsPresent")
    );
    assert_no_secret_data(&env);
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unusable_pull_secret_is_named_and_the_pull_uses_the_others() {
    let mut env = env_in_namespace().await;
    let mut opaque = env.pull_secret(NS, "opaque");
    opaque.type_ = Some("Opaque".to_owned());
    env.create(&opaque).await;
    create_pull_secret(&env, "catalog-pull").await;
    env.start_manager();
    env.create(&catalog_source(
        "mixed",
        &env.images.catalog,
        &["opaque", "catalog-pull"],
    ))
    .await;
    let ready = wait_until(&env, "mixed", |c| {
        state(c) == Some("READY")
            && condition(c, "PullSecretSourceMissing").is_some_and(|s| s.status == "True")
    })
    .await;
    let invalid = condition(&ready, "PullSecretSourceMissing").unwrap();
    assert_eq!(invalid.reason, "SourceSecretInvalid");
    assert!(
        invalid.message.contains("\"opaque\""),
        "{}",
        invalid.message
    );
    assert!(
        invalid.message.contains("\"Opaque\""),
        "{}",
        invalid.message
    );
    assert_no_secret_data(&env);
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_sources_are_spec_invalid_and_empty_ones_wait_without_contacting_a_registry() {
    let mut env = env_in_namespace().await;
    env.start_manager();
    let requests = env.registry.requests("/v2/");
    let spec = |source_type: &str| CatalogSourceSpec {
        source_type: source_type.to_owned(),
        ..CatalogSourceSpec::default()
    };
    let sources = [
        (
            "address",
            CatalogSourceSpec {
                address: Some("catalog.olm.svc".to_owned()),
                ..spec("grpc")
            },
        ),
        (
            "configmap",
            CatalogSourceSpec {
                config_map: Some("operators".to_owned()),
                ..spec("configmap")
            },
        ),
        (
            "internal",
            CatalogSourceSpec {
                config_map: Some("operators".to_owned()),
                ..spec("internal")
            },
        ),
        ("unknown", spec("http")),
    ];
    for (name, spec) in sources.iter().chain([&("empty", spec("grpc"))]) {
        let mut catalog = catalog_source(name, "unused", &[]);
        catalog.spec = spec.clone();
        env.create(&catalog).await;
    }
    for (name, _) in &sources {
        let catalog: CatalogSource =
            wait_until(&env, name, |c| reason(c) == "SpecInvalidError").await;
        let text = message(&catalog);
        let expected = if *name == "address" {
            "spec.address \"catalog.olm.svc\" is not HOST:PORT: the port is missing"
        } else {
            "opcat serves catalogs from images and registry servers: set spec.sourceType: grpc \
             and spec.image or spec.address; configMap catalogs are not supported"
        };
        assert!(text.ends_with(expected), "{name}: {text}");
        assert_eq!(state(&catalog), Some("TRANSIENT_FAILURE"), "{name}");
        assert_eq!(condition(&catalog, "Ready").unwrap().reason, "SpecInvalid");
        assert!(env.context().catalogs.get(NS, name).is_none());
    }
    // Neither image nor address: a wait (operator-sdk sets the address later), not an error.
    let empty: CatalogSource = wait_until(&env, "empty", |c| {
        condition(c, "Ready").is_some_and(|ready| ready.reason == "NoSource")
    })
    .await;
    assert_eq!(reason(&empty), "");
    assert_eq!(state(&empty), None);
    assert_eq!(
        env.registry.requests("/v2/"),
        requests,
        "no registry contact"
    );
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_catalog_image_without_a_catalog_directory_says_so() {
    let mut env = env_in_namespace().await;
    create_pull_secret(&env, "catalog-pull").await;
    // A valid FBC, but under /catalog, and no configs label: opm's default is /configs.
    let content = env.registry.scratch("nolabel-content");
    support::copy_rewritten(
        &env.images.catalog_dir,
        &content.join("catalog"),
        &env.registry.host,
    );
    let layout = test_registry::tools::umoci_image(&env.registry.scratch("nolabel"), &content, &[]);
    let tagged = env.registry.image("opcat-examples/nolabel:v1");
    let digest = test_registry::tools::skopeo_push(&layout, &env.registry, &tagged, "oci");
    let pinned = env
        .registry
        .image(&format!("opcat-examples/nolabel@{digest}"));
    env.start_manager();
    env.create(&catalog_source("tagged", &tagged, &["catalog-pull"]))
        .await;
    env.create(&catalog_source("pinned", &pinned, &["catalog-pull"]))
        .await;

    for name in ["tagged", "pinned"] {
        let failing = wait_state(&env, name, "TRANSIENT_FAILURE").await;
        let text = message(&failing);
        assert!(text.contains(&digest), "{name}: names the digest: {text}");
        assert!(
            text.contains(
                "has no file-based catalog: the image has no label \
                 operators.operatorframework.io.index.configs.v1 and no /configs directory"
            ),
            "{name}: {text}"
        );
        assert_eq!(
            condition(&failing, "Ready").unwrap().reason,
            "CatalogInvalid"
        );
        assert!(env.context().catalogs.get(NS, name).is_none());
    }
    env.stop_manager().await;
}
