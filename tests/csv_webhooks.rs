//! Operators with webhooks and API services, through the CSV reconciler (issue 11): the
//! certificate, the Service, the webhook configurations, the CRD conversion and the APIService
//! are created with a CA bundle that verifies the serving certificate in a real TLS handshake;
//! a converged install writes nothing; a certificate near expiry is rotated with one rollout and
//! every CA bundle follows; an upgrade replaces the webhooks; an uninstall leaves nothing.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod ops_support;
mod support;
mod webhook_support;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use csv_support::*;
use fake_apiserver::Verb;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Secret, Service};
use k8s_openapi::api::rbac::v1::{ClusterRoleBinding, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::jiff::Timestamp;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};
use opcat::api::ClusterServiceVersion;
use opcat::api::ClusterServiceVersionPhase as Phase;
use opcat::controller::clock::{Clock, ManualClock};
use opcat::controller::context::Settings;
use support::Env;
use webhook_support::{conversion_client, handshake, handshake_at};

const NS: &str = "webhooks";
const SECRET: &str = "registry-creds";
const PACKAGE: &str = "webhook-operator";
const DEPLOYMENT: &str = "webhook-operator.controller";
const SERVICE: &str = "webhook-operator-controller-service";
const CERT_SECRET: &str = "webhook-operator-controller-service-cert";
const CRD: &str = "gizmos.webhook.example.com";

fn fixture(package: &str, version: &str) -> PathBuf {
    support::repo_root()
        .join("tests/fixtures/bundles")
        .join(package)
        .join(version)
}

/// Pushes the fixture bundle and creates its CSV in `namespace`, as the InstallPlan reconciler
/// would.
async fn install(
    env: &Env,
    namespace: &str,
    package: &str,
    version: &str,
) -> ClusterServiceVersion {
    let dir = fixture(package, version);
    let image = push_bundle(
        env,
        &dir,
        &format!("opcat-examples/{package}-bundle:v{version}"),
    )
    .await;
    env.create(&installed_csv(&dir, namespace, package, &image))
        .await
}

/// The namespaces (with `kube-system`, where OLM's auth-reader binding goes), the catalog with
/// its pull secret and an OperatorGroup in `namespace` targeting `targets`.
async fn cluster(env: &Env, namespace: &str, targets: &[&str]) {
    namespaces(env, &[namespace, "kube-system"]).await;
    catalog_with_secrets(env, &[SECRET]).await;
    operator_group(env, namespace, "group", targets).await;
}

fn settings() -> Settings {
    Settings {
        resync: Duration::from_millis(500),
        ..Env::settings()
    }
}

fn text(secret: &Secret, key: &str) -> String {
    String::from_utf8(secret.data.as_ref().unwrap()[key].0.clone()).unwrap()
}

/// CA, serving certificate and key of a certificate Secret.
fn material(secret: &Secret) -> (String, String, String) {
    (
        text(secret, "ca.crt"),
        text(secret, "tls.crt"),
        text(secret, "tls.key"),
    )
}

fn validating(env: &Env, webhook: &str) -> Option<ValidatingWebhookConfiguration> {
    env.api
        .list::<ValidatingWebhookConfiguration>(None)
        .into_iter()
        .find(|config| config.webhooks.as_ref().unwrap()[0].name == webhook)
}

fn mutating(env: &Env, webhook: &str) -> Option<MutatingWebhookConfiguration> {
    env.api
        .list::<MutatingWebhookConfiguration>(None)
        .into_iter()
        .find(|config| config.webhooks.as_ref().unwrap()[0].name == webhook)
}

fn bundle_of(config: &Option<k8s_openapi::ByteString>) -> String {
    String::from_utf8(config.as_ref().expect("a caBundle").0.clone()).unwrap()
}

/// Every CA bundle opcat wrote for the webhook operator: the two configurations' and the
/// CRD conversion's.
fn ca_bundles(env: &Env) -> Vec<String> {
    let validating = validating(env, "vgizmo.webhook.example.com").unwrap();
    let mutating = mutating(env, "mgizmo.webhook.example.com").unwrap();
    let conversion = conversion_client(&env.api.get::<CustomResourceDefinition>("", CRD).unwrap());
    vec![
        bundle_of(&validating.webhooks.unwrap()[0].client_config.ca_bundle),
        bundle_of(&mutating.webhooks.unwrap()[0].client_config.ca_bundle),
        bundle_of(&conversion.ca_bundle),
    ]
}

fn pod_annotation(env: &Env, name: &str, key: &str) -> Option<String> {
    env.api
        .get::<Deployment>(NS, name)?
        .spec?
        .template
        .metadata?
        .annotations?
        .get(key)
        .cloned()
}

fn sha256_hex(text: &str) -> String {
    opcat::certificates::pem_sha256(text)
}

/// Everything of opcat's, as `objects_marked_by_opcat`, plus webhook configurations and
/// APIServices.
fn everything_of_opcats(env: &Env) -> BTreeSet<String> {
    let mut found = objects_marked_by_opcat(env);
    let marked = |labels: Option<&std::collections::BTreeMap<String, String>>| {
        labels.is_some_and(|labels| labels.keys().any(|key| key.starts_with("opcat.dev/")))
    };
    for config in env.api.list::<ValidatingWebhookConfiguration>(None) {
        if marked(config.metadata.labels.as_ref()) {
            found.insert(format!(
                "ValidatingWebhookConfiguration {}",
                config.name_any()
            ));
        }
    }
    for config in env.api.list::<MutatingWebhookConfiguration>(None) {
        if marked(config.metadata.labels.as_ref()) {
            found.insert(format!(
                "MutatingWebhookConfiguration {}",
                config.name_any()
            ));
        }
    }
    for service in env.api.list::<APIService>(None) {
        if marked(service.metadata.labels.as_ref()) {
            found.insert(format!("APIService {}", service.name_any()));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_kinds_of_webhooks_install_with_a_certificate_their_ca_bundles_verify() {
    logs();
    let mut env = env_without_gc().await;
    cluster(&env, NS, &[""]).await;
    let csv = install(&env, NS, PACKAGE, "0.1.0").await;
    env.start_manager_with(settings());
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;

    // The certificate Secret: TLS, opcat's, owned by the CSV.
    let secret = env
        .api
        .get::<Secret>(NS, CERT_SECRET)
        .expect("certificate Secret");
    assert_eq!(secret.type_.as_deref(), Some("kubernetes.io/tls"));
    let labels = secret.labels();
    assert_eq!(labels["opcat.dev/serving-certificate"], "true");
    assert_eq!(labels["opcat.dev/csv"], csv.name_any());
    assert_eq!(secret.owner_references()[0].uid, csv.uid().unwrap());
    let (ca, cert, key) = material(&secret);
    assert_eq!(secret.annotations()["olmcahash"], sha256_hex(&ca));

    // The Service routes 443 to the webhook server's port.
    let service = env
        .api
        .get::<Service>(NS, SERVICE)
        .expect("webhook Service");
    let port = &service.spec.unwrap().ports.unwrap()[0];
    assert_eq!(
        (port.port, port.target_port.clone()),
        (
            443,
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(9443))
        )
    );

    // Every CA bundle is the Secret's CA, and it verifies the Secret's certificate for the
    // name the API server calls, in a real TLS handshake.
    for bundle in ca_bundles(&env) {
        assert_eq!(bundle, ca);
        handshake(&bundle, &cert, &key, &format!("{SERVICE}.{NS}.svc")).unwrap();
    }
    let config = validating(&env, "vgizmo.webhook.example.com").unwrap();
    let webhook = &config.webhooks.unwrap()[0];
    let reference = webhook.client_config.service.as_ref().unwrap();
    assert_eq!(
        (reference.name.as_str(), reference.namespace.as_str()),
        (SERVICE, NS)
    );
    assert_eq!(reference.path.as_deref(), Some("/validate-gizmo"));
    assert_eq!(reference.port, Some(443));
    // AllNamespaces: every namespace (the API server's default, `{}`).
    assert_eq!(
        webhook.namespace_selector.clone().unwrap_or_default(),
        Default::default()
    );
    let crd = env.api.get::<CustomResourceDefinition>("", CRD).unwrap();
    let service_ref = conversion_client(&crd).service.unwrap();
    assert_eq!(
        (
            service_ref.name,
            service_ref.namespace,
            service_ref.path,
            service_ref.port
        ),
        (
            SERVICE.to_owned(),
            NS.to_owned(),
            Some("/convert".to_owned()),
            Some(443)
        )
    );

    // The Deployment mounts the certificate and names its CA.
    assert_eq!(
        pod_annotation(&env, DEPLOYMENT, "olmcahash"),
        Some(sha256_hex(&ca))
    );
    let pod = env
        .api
        .get::<Deployment>(NS, DEPLOYMENT)
        .unwrap()
        .spec
        .unwrap()
        .template
        .spec
        .unwrap();
    let secrets: Vec<_> = pod
        .volumes
        .unwrap()
        .into_iter()
        .filter_map(|volume| volume.secret?.secret_name)
        .collect();
    assert_eq!(
        secrets,
        [CERT_SECRET, CERT_SECRET],
        "kubebuilder's volume replaced"
    );

    // Converged: no writes, reconcile after reconcile.
    tokio::time::sleep(Duration::from_secs(1)).await;
    env.api.reset_counts();
    env.wait_until("several reconciles", TIMEOUT, || {
        env.api.request_counts().get(Verb::Get, "secrets") >= 5
    })
    .await;
    assert_eq!(
        env.api.request_counts().writes(),
        0,
        "a converged webhook install makes no writes:\n{}",
        env.api.request_counts()
    );

    // The ClusterRole allows all of it, and the new rules were needed.
    let requests = env.manager_requests();
    ops_support::assert_allowed_by_rbac(&requests);
    for (verb, resource) in [
        (Verb::Patch, "validatingwebhookconfigurations"),
        (Verb::Patch, "mutatingwebhookconfigurations"),
        (Verb::Watch, "validatingwebhookconfigurations"),
        (Verb::Watch, "mutatingwebhookconfigurations"),
        (Verb::Watch, "apiservices"),
        (Verb::Patch, "customresourcedefinitions"),
    ] {
        assert!(requests.get(verb, resource) > 0, "no {verb} {resource}");
    }

    // A deleted configuration comes back (watched by label).
    let name = validating(&env, "vgizmo.webhook.example.com")
        .unwrap()
        .name_any();
    let api: Api<ValidatingWebhookConfiguration> = Api::all(env.client.clone());
    api.delete(&name, &Default::default()).await.unwrap();
    env.wait_until("the configuration is restored", TIMEOUT, || {
        env.api
            .get::<ValidatingWebhookConfiguration>("", &name)
            .is_some()
    })
    .await;

    // Deleting the certificate Secret forces a rotation (docs/operating.md): a new CA, every
    // bundle follows, the old CA is not trusted any more.
    let secrets: Api<Secret> = Api::namespaced(env.client.clone(), NS);
    secrets
        .delete(CERT_SECRET, &Default::default())
        .await
        .unwrap();
    env.wait_until("a new certificate", TIMEOUT, || {
        env.api
            .get::<Secret>(NS, CERT_SECRET)
            .is_some_and(|secret| text(&secret, "ca.crt") != ca)
    })
    .await;
    let secret = env.api.get::<Secret>(NS, CERT_SECRET).unwrap();
    let new_ca = text(&secret, "ca.crt");
    env.wait_until("every CA bundle follows", TIMEOUT, || {
        ca_bundles(&env).iter().all(|bundle| *bundle == new_ca)
    })
    .await;
    for bundle in ca_bundles(&env) {
        let host = format!("{SERVICE}.{NS}.svc");
        handshake(
            &bundle,
            &text(&secret, "tls.crt"),
            &text(&secret, "tls.key"),
            &host,
        )
        .unwrap();
        assert!(
            handshake(&bundle, &cert, &key, &host).is_err(),
            "the old CA is gone"
        );
    }

    // Uninstall: nothing of opcat's is left but the CRD, whose conversion is None again.
    delete_csv(&env, NS, &csv.name_any()).await;
    wait_gone(&env, NS, &csv.name_any()).await;
    assert_eq!(
        everything_of_opcats(&env),
        BTreeSet::from([format!("CustomResourceDefinition /{CRD}")]),
    );
    let crd = env.api.get::<CustomResourceDefinition>("", CRD).unwrap();
    assert_eq!(crd.spec.conversion.unwrap().strategy, "None");
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_near_expiry_is_rotated_every_ca_bundle_follows_and_pods_roll_once() {
    logs();
    let mut env = Env::new().await;
    cluster(&env, NS, &[""]).await;
    let csv = install(&env, NS, PACKAGE, "0.1.0").await;
    let clock = Arc::new(ManualClock::new(Timestamp::now()));
    env.start_manager_with_clock(settings(), clock.clone());
    wait_phase(&env, NS, &csv.name_any(), Phase::Succeeded).await;
    let old_ca = text(&env.api.get::<Secret>(NS, CERT_SECRET).unwrap(), "ca.crt");
    let generation = || {
        env.api
            .get::<Deployment>(NS, DEPLOYMENT)
            .unwrap()
            .metadata
            .generation
            .unwrap()
    };
    let before = generation();

    // Not yet due: 700 days on, nothing changes.
    clock.advance(Duration::from_secs(700 * 86_400));
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        text(&env.api.get::<Secret>(NS, CERT_SECRET).unwrap(), "ca.crt"),
        old_ca
    );
    assert_eq!(generation(), before);

    // A day before the serving certificate ends (two years less a day): rotated.
    clock.advance(Duration::from_secs(28 * 86_400 + 3600));
    env.wait_until("the certificate is rotated", TIMEOUT, || {
        text(&env.api.get::<Secret>(NS, CERT_SECRET).unwrap(), "ca.crt") != old_ca
    })
    .await;
    let secret = env.api.get::<Secret>(NS, CERT_SECRET).unwrap();
    let (new_ca, cert, key) = material(&secret);
    env.wait_until("every CA bundle follows", TIMEOUT, || {
        ca_bundles(&env)
            .iter()
            .all(|bundle| bundle.starts_with(&new_ca))
    })
    .await;
    for bundle in ca_bundles(&env) {
        // The new CA verifies the new certificate; the old one stays trusted for the rollout.
        assert!(bundle.ends_with(&old_ca), "old CA kept for a day");
        let host = format!("{SERVICE}.{NS}.svc");
        handshake_at(&bundle, &cert, &key, &host, clock.now()).unwrap();
        handshake_at(&new_ca, &cert, &key, &host, clock.now()).unwrap();
    }
    assert_eq!(
        pod_annotation(&env, DEPLOYMENT, "olmcahash"),
        Some(sha256_hex(&new_ca))
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(generation(), before + 1, "one rollout for the rotation");
    // Users are told, and no event or status shows key material.
    let events = env
        .api
        .list::<k8s_openapi::api::events::v1::Event>(Some(NS));
    let reasons: Vec<_> = events.iter().filter_map(|e| e.reason.clone()).collect();
    for reason in ["ServingCertificateIssued", "ServingCertificateRotated"] {
        assert!(reasons.iter().any(|r| r == reason), "{reason}: {reasons:?}");
    }
    let key_body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    let status = serde_json::to_string(
        &env.api
            .get::<ClusterServiceVersion>(NS, &csv.name_any())
            .unwrap()
            .status,
    )
    .unwrap();
    for text in events.iter().filter_map(|e| e.note.clone()).chain([status]) {
        assert!(
            !text.contains("-----BEGIN") && !text.contains(&key_body[..20]),
            "{text}"
        );
    }

    // The next day the old CA leaves the bundles; the pods are not restarted for that.
    clock.advance(Duration::from_secs(86_400));
    env.wait_until("the old CA leaves every bundle", TIMEOUT, || {
        ca_bundles(&env).iter().all(|bundle| *bundle == new_ca)
    })
    .await;
    assert_eq!(
        text(&env.api.get::<Secret>(NS, CERT_SECRET).unwrap(), "tls.crt"),
        cert
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(generation(), before + 1, "still one rollout");
    env.wait_quiet("after the rotation").await;
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_replaces_the_webhooks_of_the_old_version() {
    logs();
    let mut env = Env::new().await;
    cluster(&env, NS, &[""]).await;
    let old = install(&env, NS, PACKAGE, "0.1.0").await;
    env.start_manager_with(settings());
    wait_phase(&env, NS, &old.name_any(), Phase::Succeeded).await;
    let kept = validating(&env, "vgizmo.webhook.example.com").unwrap();
    let ca = text(&env.api.get::<Secret>(NS, CERT_SECRET).unwrap(), "ca.crt");

    let new = install(&env, NS, PACKAGE, "0.2.0").await;
    wait_phase(&env, NS, &new.name_any(), Phase::Succeeded).await;
    wait_gone(&env, NS, &old.name_any()).await;

    // The webhook both versions have is updated in place and belongs to the new CSV.
    let updated = validating(&env, "vgizmo.webhook.example.com").unwrap();
    assert_eq!(updated.name_any(), kept.name_any());
    assert_eq!(updated.labels()["opcat.dev/csv"], new.name_any());
    let webhook = &updated.webhooks.unwrap()[0];
    assert_eq!(
        webhook
            .client_config
            .service
            .as_ref()
            .unwrap()
            .path
            .as_deref(),
        Some("/validate-gizmo-v2")
    );
    // The dropped one is gone, the new one exists; the certificate is kept.
    assert!(mutating(&env, "mgizmo.webhook.example.com").is_none());
    assert!(validating(&env, "vgadget.webhook.example.com").is_some());
    let secret = env.api.get::<Secret>(NS, CERT_SECRET).unwrap();
    assert_eq!(text(&secret, "ca.crt"), ca);
    assert_eq!(secret.labels()["opcat.dev/csv"], new.name_any());
    assert_eq!(bundle_of(&webhook.client_config.ca_bundle), ca);
    // The old CSV's cleanup left the conversion to the new one.
    let crd = env.api.get::<CustomResourceDefinition>("", CRD).unwrap();
    assert_eq!(crd.spec.conversion.unwrap().strategy, "Webhook");
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owned_api_service_installs_and_webhooks_are_scoped_to_the_target_namespace() {
    logs();
    let mut env = env_without_gc().await;
    let ns = "metrics";
    namespaces(&env, &["elsewhere"]).await;
    cluster(&env, ns, &[ns]).await;
    let csv = install(&env, ns, "metrics-operator", "0.1.0").await;
    env.start_manager_with(settings());
    wait_phase(&env, ns, &csv.name_any(), Phase::Succeeded).await;

    let secret = env
        .api
        .get::<Secret>(ns, "metrics-server-service-cert")
        .unwrap();
    let (ca, cert, key) = material(&secret);
    let api_service = env
        .api
        .get::<APIService>("", "v1beta1.metrics.example.com")
        .expect("APIService");
    // Succeeded waits for the aggregator, as OLM's install check does.
    let available = api_service.status.unwrap().conditions.unwrap();
    assert_eq!(
        (available[0].type_.as_str(), available[0].status.as_str()),
        ("Available", "True")
    );
    let spec = api_service.spec.unwrap();
    let reference = spec.service.unwrap();
    assert_eq!(
        (
            reference.name.as_deref(),
            reference.namespace.as_deref(),
            reference.port
        ),
        (Some("metrics-server-service"), Some(ns), Some(8443))
    );
    let bundle = bundle_of(&spec.ca_bundle);
    assert_eq!(bundle, ca);
    handshake(&bundle, &cert, &key, "metrics-server-service.metrics.svc").unwrap();
    let service = env
        .api
        .get::<Service>(ns, "metrics-server-service")
        .unwrap();
    let ports: Vec<i32> = service
        .spec
        .unwrap()
        .ports
        .unwrap()
        .iter()
        .map(|port| port.port)
        .collect();
    assert_eq!(ports, [443, 8443]);
    // What an aggregated API server needs to delegate authentication, as OLM grants it.
    assert!(
        env.api
            .list::<ClusterRoleBinding>(None)
            .iter()
            .any(|binding| {
                binding.role_ref.name == "system:auth-delegator"
                    && binding
                        .labels()
                        .get("opcat.dev/csv-namespace")
                        .map(String::as_str)
                        == Some(ns)
            })
    );
    assert!(
        env.api
            .list::<RoleBinding>(Some("kube-system"))
            .iter()
            .any(|binding| {
                binding.role_ref.name == "extension-apiserver-authentication-reader"
            })
    );

    // The webhook's namespace selector selects exactly the target namespace.
    let config = validating(&env, "vpodmetrics.metrics.example.com").unwrap();
    let selector = config.webhooks.unwrap()[0]
        .namespace_selector
        .clone()
        .unwrap();
    let expression = &selector.match_expressions.unwrap()[0];
    let query = format!(
        "{} in ({})",
        expression.key,
        expression.values.clone().unwrap().join(",")
    );
    let selected: Vec<String> = Api::<Namespace>::all(env.client.clone())
        .list(&ListParams::default().labels(&query))
        .await
        .unwrap()
        .items
        .iter()
        .map(|namespace| namespace.name_any())
        .collect();
    assert_eq!(selected, [ns]);

    delete_csv(&env, ns, &csv.name_any()).await;
    wait_gone(&env, ns, &csv.name_any()).await;
    assert_eq!(everything_of_opcats(&env), BTreeSet::new());
    ops_support::assert_allowed_by_rbac(&env.manager_requests());
    env.stop_manager().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_secret_in_the_certificates_place_is_left_alone_and_reported() {
    logs();
    let mut env = Env::new().await;
    cluster(&env, NS, &[""]).await;
    let foreign = Secret {
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
            name: Some(CERT_SECRET.to_owned()),
            namespace: Some(NS.to_owned()),
            ..Default::default()
        },
        string_data: Some([("tls.crt".to_owned(), "theirs".to_owned())].into()),
        ..Secret::default()
    };
    env.create(&foreign).await;
    let csv = install(&env, NS, PACKAGE, "0.1.0").await;
    env.start_manager_with(settings());
    let failed = wait_phase(&env, NS, &csv.name_any(), Phase::Failed).await;
    let message = failed.status.unwrap().message.unwrap();
    assert!(
        message.contains(&format!(
            "Secret {NS}/{CERT_SECRET} exists and is not managed by opcat"
        )),
        "{message}"
    );
    let secret = env.api.get::<Secret>(NS, CERT_SECRET).unwrap();
    assert_eq!(text(&secret, "tls.crt"), "theirs");
    assert!(secret.meta().labels.is_none());
    env.stop_manager().await;
}
