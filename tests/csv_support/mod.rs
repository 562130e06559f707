//! What the CSV reconciler's tests seed: what upstream reconcilers would have produced (a
//! CatalogSource with its pull secrets, an OperatorGroup with resolved targets, a Subscription,
//! and the CSV as the InstallPlan reconciler creates it), plus assertions shared by the
//! `csv_*` and `pull_secrets_*` tests.
// Test support: a failed setup step aborts the test with its message; not every binary uses
// every helper.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{LocalObjectReference, Namespace, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Resource, ResourceExt};
use opcat::api::subscription::SubscriptionConfig;
use opcat::api::{
    CatalogSource, CatalogSourceSpec, ClusterServiceVersion, ClusterServiceVersionPhase,
    OperatorGroup, OperatorGroupSpec, Subscription, SubscriptionSpec,
};
use opcat::bundle::Bundle;
use opcat::controller::keys::csv as csv_keys;
use opcat::pull_secrets::CatalogRef;
use opcat::registry::ImageRef;
use serde_json::json;

use crate::support::{Env, keyring_for};

/// Namespace of the CatalogSource and its pull secrets.
pub const CATALOG_NAMESPACE: &str = "olm";
/// Name of the CatalogSource.
pub const CATALOG: &str = "private";
/// How long anything may take on a slow, shared machine.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// The test catalog.
pub fn catalog() -> CatalogRef {
    CatalogRef {
        namespace: CATALOG_NAMESPACE.to_owned(),
        name: CATALOG.to_owned(),
    }
}

/// Name of the copy of source Secret `secret` of the test catalog.
pub fn copy_name(secret: &str) -> String {
    catalog().copy_name(secret)
}

/// Creates namespaces (ignoring ones that exist).
pub async fn namespaces(env: &Env, names: &[&str]) {
    let api: Api<Namespace> = Api::all(env.client.clone());
    for name in names {
        if api.get_opt(name).await.expect("get namespace").is_none() {
            env.namespace(name).await;
        }
    }
}

/// The catalog namespace, the source pull secrets and the CatalogSource naming them.
pub async fn catalog_with_secrets(env: &Env, secrets: &[&str]) -> CatalogSource {
    namespaces(env, &[CATALOG_NAMESPACE]).await;
    for secret in secrets {
        env.create(&env.pull_secret(CATALOG_NAMESPACE, secret))
            .await;
    }
    let catalog = CatalogSource {
        metadata: ObjectMeta {
            name: Some(CATALOG.to_owned()),
            namespace: Some(CATALOG_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        spec: CatalogSourceSpec {
            source_type: "grpc".to_owned(),
            image: Some(env.images.catalog.clone()),
            secrets: Some(secrets.iter().map(|s| (*s).to_owned()).collect()),
            ..CatalogSourceSpec::default()
        },
        status: None,
    };
    env.create(&catalog).await
}

/// Merge-patches the CatalogSource.
pub async fn patch_catalog(env: &Env, patch: serde_json::Value) {
    let api: Api<CatalogSource> = Api::namespaced(env.client.clone(), CATALOG_NAMESPACE);
    api.patch(CATALOG, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch CatalogSource");
}

/// An OperatorGroup targeting `targets` (`[""]`: all namespaces), declared in its spec as a
/// user does; the OperatorGroup controller resolves `status.namespaces` once the manager runs
/// (until then a CSV waits in Pending).
pub async fn operator_group(env: &Env, namespace: &str, name: &str, targets: &[&str]) {
    let group = OperatorGroup {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        spec: OperatorGroupSpec {
            target_namespaces: target_list(targets),
            ..OperatorGroupSpec::default()
        },
        status: None,
    };
    env.create(&group).await;
}

fn target_list(targets: &[&str]) -> Option<Vec<String>> {
    (targets != [""]).then(|| targets.iter().map(|t| (*t).to_owned()).collect())
}

/// Changes an OperatorGroup's `spec.targetNamespaces` and waits for its status to follow.
pub async fn set_operator_group_targets(env: &Env, namespace: &str, name: &str, targets: &[&str]) {
    let api: Api<OperatorGroup> = Api::namespaced(env.client.clone(), namespace);
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"targetNamespaces": target_list(targets)}})),
    )
    .await
    .expect("patch OperatorGroup spec");
    wait_operator_group_targets(env, namespace, name, targets).await;
}

async fn wait_operator_group_targets(env: &Env, namespace: &str, name: &str, targets: &[&str]) {
    let mut want: Vec<String> = targets.iter().map(|t| (*t).to_owned()).collect();
    want.sort();
    env.wait_for::<OperatorGroup>(namespace, name, TIMEOUT, |group| {
        group.status.as_ref().and_then(|s| s.namespaces.as_ref()) == Some(&want)
    })
    .await;
}

/// A Subscription to `package` from the test catalog, carrying `config` for the CSVs these
/// tests seed. Its approval is Manual and nothing approves its plans, so the real Subscription
/// pipeline (which would install the channel head) stays out of the way of the seeded CSV.
pub async fn subscription(
    env: &Env,
    namespace: &str,
    package: &str,
    config: Option<SubscriptionConfig>,
) -> Subscription {
    let subscription = Subscription {
        metadata: ObjectMeta {
            name: Some(package.to_owned()),
            namespace: Some(namespace.to_owned()),
            ..ObjectMeta::default()
        },
        spec: SubscriptionSpec {
            catalog_source: CATALOG.to_owned(),
            catalog_source_namespace: CATALOG_NAMESPACE.to_owned(),
            package: package.to_owned(),
            install_plan_approval: Some(opcat::api::Approval::Manual),
            ..SubscriptionSpec::default()
        },
        status: None,
    };
    let subscription = Subscription {
        spec: SubscriptionSpec {
            config: config.map(Box::new),
            ..subscription.spec
        },
        ..subscription
    };
    env.create(&subscription).await
}

/// The digest-pinned reference of a bundle image pushed by the harness.
pub async fn pinned(env: &Env, repository_and_tag: &str) -> String {
    let image: ImageRef = env
        .registry
        .image(repository_and_tag)
        .parse()
        .expect("image ref");
    let digest = env
        .opcat_registry
        .resolve_digest(&image, &keyring_for(&env.registry))
        .await
        .expect("resolve bundle digest");
    image.with_digest(&digest).to_string()
}

/// Builds and pushes a bundle directory as `opcat-examples/<repository_and_tag>`; returns the
/// digest-pinned reference.
pub async fn push_bundle(env: &Env, dir: &Path, repository_and_tag: &str) -> String {
    let built = opcat::registry::push::build_bundle_image(dir).expect("build bundle");
    let image: ImageRef = env
        .registry
        .image(repository_and_tag)
        .parse()
        .expect("image ref");
    env.opcat_registry
        .push(&image, &built, &keyring_for(&env.registry))
        .await
        .expect("push bundle");
    pinned(env, repository_and_tag).await
}

/// The CSV of an example bundle, as the InstallPlan reconciler creates it: the bundle's CSV in
/// `namespace` with opcat's label, the `controller::keys::csv` annotations (bundle image
/// pinned to its digest) and the finalizer.
pub fn installed_csv(
    bundle_dir: &Path,
    namespace: &str,
    subscription: &str,
    bundle_image: &str,
) -> ClusterServiceVersion {
    let bundle = Bundle::load(bundle_dir).expect("load example bundle");
    let mut csv = bundle.csv;
    let package = bundle_dir
        .parent()
        .and_then(Path::file_name)
        .and_then(|name| name.to_str())
        .unwrap_or_default()
        .to_owned();
    csv.metadata.namespace = Some(namespace.to_owned());
    csv.metadata.labels.get_or_insert_default().insert(
        "app.kubernetes.io/managed-by".to_owned(),
        "opcat".to_owned(),
    );
    csv.metadata.annotations.get_or_insert_default().extend([
        (csv_keys::BUNDLE_IMAGE.to_owned(), bundle_image.to_owned()),
        (
            csv_keys::CATALOG.to_owned(),
            format!("{CATALOG_NAMESPACE}/{CATALOG}"),
        ),
        (csv_keys::SUBSCRIPTION.to_owned(), subscription.to_owned()),
        (csv_keys::PACKAGE.to_owned(), package),
        (csv_keys::INSTALL_PLAN.to_owned(), "install-test".to_owned()),
    ]);
    csv.metadata.finalizers = Some(vec![opcat::api::FINALIZER.to_owned()]);
    csv
}

/// Creates the CSV of example bundle `<package>/<version>` in `namespace`.
pub async fn install(
    env: &Env,
    namespace: &str,
    package: &str,
    version: &str,
) -> ClusterServiceVersion {
    let image = pinned(env, &format!("opcat-examples/{package}-bundle:v{version}")).await;
    let dir = env.images.bundles_dir.join(package).join(version);
    env.create(&installed_csv(&dir, namespace, package, &image))
        .await
}

/// Installs widget-operator v1.0.0 in each namespace, each with its own-namespace
/// OperatorGroup `group`.
pub async fn install_widget_in(env: &Env, namespaces_: &[&str]) {
    namespaces(env, namespaces_).await;
    for ns in namespaces_ {
        operator_group(env, ns, "group", &[ns]).await;
        install(env, ns, "widget-operator", "1.0.0").await;
    }
}

/// An environment whose API server runs no garbage collector: whatever goes away on an
/// uninstall, opcat removed itself.
pub async fn env_without_gc() -> Env {
    Env::with_api(
        fake_apiserver::FakeApiServer::builder()
            .garbage_collector(false)
            .build(),
    )
    .await
}

/// The CSV name of example bundle `<package>/<version>`.
pub fn csv_name(package: &str, version: &str) -> String {
    format!("{package}.v{version}")
}

/// Waits until the CSV reaches `phase`.
pub async fn wait_phase(
    env: &Env,
    namespace: &str,
    name: &str,
    phase: ClusterServiceVersionPhase,
) -> ClusterServiceVersion {
    env.wait_for::<ClusterServiceVersion>(namespace, name, TIMEOUT, |csv| {
        csv.status.as_ref().and_then(|s| s.phase) == Some(phase)
    })
    .await
}

/// Waits until the CSV is gone (its finalizer released).
pub async fn wait_gone(env: &Env, namespace: &str, name: &str) {
    env.wait_until(&format!("CSV {namespace}/{name} deleted"), TIMEOUT, || {
        env.api
            .get::<ClusterServiceVersion>(namespace, name)
            .is_none()
    })
    .await;
}

/// Deletes a CSV (an uninstall).
pub async fn delete_csv(env: &Env, namespace: &str, name: &str) {
    let api: Api<ClusterServiceVersion> = Api::namespaced(env.client.clone(), namespace);
    api.delete(name, &Default::default())
        .await
        .expect("delete CSV");
}

/// The names in a ServiceAccount's `imagePullSecrets`, in order.
pub fn sa_pull_secrets(env: &Env, namespace: &str, name: &str) -> Vec<String> {
    env.api
        .get::<ServiceAccount>(namespace, name)
        .and_then(|sa| sa.image_pull_secrets)
        .unwrap_or_default()
        .into_iter()
        .map(|entry| entry.name)
        .collect()
}

/// The names in a Deployment's pod template `imagePullSecrets`, in order.
pub fn template_pull_secrets(env: &Env, namespace: &str, name: &str) -> Vec<String> {
    env.api
        .get::<Deployment>(namespace, name)
        .and_then(|d| d.spec)
        .and_then(|spec| spec.template.spec)
        .and_then(|pod| pod.image_pull_secrets)
        .unwrap_or_default()
        .into_iter()
        .map(|entry| entry.name)
        .collect()
}

/// A ServiceAccount with `imagePullSecrets` entries someone else put there.
pub async fn foreign_service_account(env: &Env, namespace: &str, name: &str, entries: &[&str]) {
    let api: Api<ServiceAccount> = Api::namespaced(env.client.clone(), namespace);
    let list: Vec<LocalObjectReference> = entries
        .iter()
        .map(|name| LocalObjectReference {
            name: (*name).to_owned(),
        })
        .collect();
    match api.get_opt(name).await.expect("get service account") {
        Some(_) => {
            api.patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"imagePullSecrets": list})),
            )
            .await
            .expect("patch service account");
        }
        None => {
            let sa = ServiceAccount {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    namespace: Some(namespace.to_owned()),
                    ..ObjectMeta::default()
                },
                image_pull_secrets: Some(list),
                ..ServiceAccount::default()
            };
            api.create(&PostParams::default(), &sa)
                .await
                .expect("create service account");
        }
    }
}

/// The report annotation of a CSV, decoded: condition type → (status, reason, message).
pub fn report(csv: &ClusterServiceVersion) -> BTreeMap<String, (String, String, String)> {
    let text = csv
        .annotations()
        .get(csv_keys::PULL_SECRETS_REPORT)
        .map(String::as_str);
    opcat::controller::csv::decode_report(text)
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            (
                c.type_,
                (
                    c.status,
                    c.reason.unwrap_or_default(),
                    c.message.unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// Waits until the CSV's report says `type_` has `status`; returns the CSV.
pub async fn wait_report(
    env: &Env,
    namespace: &str,
    name: &str,
    type_: &str,
    status: &str,
) -> ClusterServiceVersion {
    env.wait_for::<ClusterServiceVersion>(namespace, name, TIMEOUT, |csv| {
        report(csv).get(type_).is_some_and(|(s, _, _)| s == status)
    })
    .await
}

/// Every object in the cluster, of the kinds opcat touches, that carries an `opcat.dev/`
/// label or annotation, as `Kind namespace/name` (CRDs included: they are kept on purpose).
/// Not listed: the ClusterRoles of provided APIs and OperatorGroups, which outlive a CSV on
/// purpose as with OLM (they go with their CRD or group; `tests/operator_group_roles.rs`).
pub fn objects_marked_by_opcat(env: &Env) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    fn marked(meta: &ObjectMeta) -> bool {
        let has = |map: &Option<BTreeMap<String, String>>| {
            map.iter()
                .flatten()
                .any(|(key, _)| key.starts_with("opcat.dev/"))
        };
        let olm_role = meta.labels.iter().flatten().any(|(key, value)| {
            key.starts_with("olm.opgroup.permissions/")
                || (key == "olm.owner.kind" && value == "OperatorGroup")
        });
        (has(&meta.labels) || has(&meta.annotations)) && !olm_role
    }
    macro_rules! scan {
        ($kind:ty) => {
            for object in env.api.list::<$kind>(None) {
                if marked(object.meta()) {
                    found.insert(format!(
                        "{} {}/{}",
                        <$kind as Resource>::kind(&()),
                        object.namespace().unwrap_or_default(),
                        object.name_any()
                    ));
                }
            }
        };
    }
    use k8s_openapi::api::core::v1::{ConfigMap, Service};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    scan!(Secret);
    scan!(ServiceAccount);
    scan!(Deployment);
    scan!(Service);
    scan!(ConfigMap);
    scan!(Role);
    scan!(RoleBinding);
    scan!(ClusterRole);
    scan!(ClusterRoleBinding);
    scan!(CustomResourceDefinition);
    scan!(ClusterServiceVersion);
    scan!(opcat::api::OperatorCondition);
    found
}

/// One write seen by a [`Recorder`].
#[derive(Clone, Debug)]
pub struct Seen {
    pub kind: &'static str,
    pub name: String,
    pub resource_version: u64,
    pub pull_secrets: Vec<String>,
}

/// Records every Secret, ServiceAccount and Deployment write in a namespace, with its
/// `resourceVersion` (the order the API server applied them in).
#[derive(Clone, Default)]
pub struct Recorder {
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recorder {
    /// Starts recording `namespace`; returns once the watches are open (start it before the
    /// manager).
    pub async fn start(env: &Env, namespace: &str) -> Self {
        // The server counts watchers per stored kind; make sure a Deployment exists.
        if env
            .api
            .get::<Deployment>("default", "recorder-anchor")
            .is_none()
        {
            let anchor: Deployment = serde_json::from_value(json!({
                "metadata": {"name": "recorder-anchor", "namespace": "default"},
                "spec": {
                    "selector": {"matchLabels": {"app": "anchor"}},
                    "template": {
                        "metadata": {"labels": {"app": "anchor"}},
                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
                    }
                }
            }))
            .expect("anchor Deployment");
            env.api.seed(&anchor).expect("seed anchor Deployment");
        }
        let recorder = Self::default();
        let rv = |meta: &ObjectMeta| {
            meta.resource_version
                .as_deref()
                .and_then(|rv| rv.parse().ok())
                .unwrap_or(0)
        };
        macro_rules! record {
            ($kind:ty, $name:expr, $secrets:expr) => {{
                let seen = recorder.seen.clone();
                let secrets: fn(&$kind) -> Vec<String> = $secrets;
                env.record_watch(namespace, move |object: $kind| {
                    seen.lock().unwrap().push(Seen {
                        kind: $name,
                        name: object.name_any(),
                        resource_version: rv(object.meta()),
                        pull_secrets: secrets(&object),
                    });
                })
                .await;
            }};
        }
        record!(Secret, "Secret", |_| Vec::new());
        record!(ServiceAccount, "ServiceAccount", |sa| sa
            .image_pull_secrets
            .iter()
            .flatten()
            .map(|e| e.name.clone())
            .collect());
        record!(Deployment, "Deployment", |d| d
            .spec
            .as_ref()
            .and_then(|s| s.template.spec.as_ref())
            .and_then(|p| p.image_pull_secrets.as_ref())
            .into_iter()
            .flatten()
            .map(|e| e.name.clone())
            .collect());
        recorder
    }

    /// Everything seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// Test logs on stderr, filtered by `RUST_LOG` (nothing when unset).
pub fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}
