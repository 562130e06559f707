//! Shared setup of the Subscription and InstallPlan tests: the harness's registry and API server,
//! a CatalogSource `olm/examples` with the registry's pull secret, and catalogs published the way
//! an admin does it: pushed as an image and named in the CatalogSource, loaded by the real
//! CatalogSource reconciler.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use kube::ResourceExt;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use opcat::api::catalog_source::{RegistryPoll, UpdateStrategy};
use opcat::api::{
    CatalogSource, CatalogSourceSpec, ClusterServiceVersion, InstallPlan, Subscription,
    SubscriptionSpec,
};
use opcat::fbc::{Catalog, DeclarativeConfig};
use opcat::registry::ImageRef;
use serde_json::json;

use crate::support::{Env, REGISTRY_PASSWORD, REGISTRY_USER, keyring_for};

pub mod phases;

/// Namespace of the example CatalogSource.
pub const CATALOG_NAMESPACE: &str = "olm";
/// Name of the example CatalogSource.
pub const CATALOG: &str = "examples";
/// Its pull secret.
pub const PULL_SECRET: &str = "registry-creds";
/// Namespace the tests subscribe in.
pub const NAMESPACE: &str = "operators";
/// Generous: the machine is slow and shared.
pub const TIMEOUT: Duration = Duration::from_secs(90);

/// The tag [`Fixture::start_polling`]'s CatalogSource names and polls.
pub const LIVE_CATALOG_TAG: &str = "live";

/// A CatalogSource in `olm` for `image`, with the pull secret.
fn catalog_source(name: &str, image: &str) -> CatalogSource {
    let mut catalog = CatalogSource::new(
        name,
        CatalogSourceSpec {
            source_type: "grpc".into(),
            image: Some(image.to_owned()),
            secrets: Some(vec![PULL_SECRET.into()]),
            ..CatalogSourceSpec::default()
        },
    );
    catalog.metadata.namespace = Some(CATALOG_NAMESPACE.into());
    catalog
}

/// A running manager with the example catalog available.
pub struct Fixture {
    pub env: Env,
}

impl Fixture {
    /// Registry, API server, manager (with a short resync so steady-state checks see many
    /// reconciles), namespaces, the pull secret and the CatalogSource with the full example
    /// catalog loaded.
    pub async fn start() -> Self {
        Self::start_in(Env::new().await).await
    }

    /// [`Fixture::start`] in `env` (a registry with more users, say).
    pub async fn start_in(env: Env) -> Self {
        let fixture = Self::start_bare_in(env).await;
        fixture.create_catalog_source(CATALOG).await;
        fixture
            .load_catalog(full_catalog(&fixture.env), "full")
            .await;
        fixture
    }

    /// Registry, API server, manager, namespaces, pull secret and OperatorGroup; no catalog.
    pub async fn start_bare() -> Self {
        Self::start_bare_in(Env::new().await).await
    }

    async fn start_bare_in(mut env: Env) -> Self {
        env.start_manager_with(opcat::controller::context::Settings {
            resync: Duration::from_millis(500),
            ..Env::settings()
        });
        env.namespace(CATALOG_NAMESPACE).await;
        env.create(&env.pull_secret(CATALOG_NAMESPACE, PULL_SECRET))
            .await;
        let fixture = Self { env };
        fixture.tenant(NAMESPACE).await;
        fixture
    }

    /// Creates `namespace` with its own OperatorGroup (own namespace), so the installer can
    /// install there.
    pub async fn tenant(&self, namespace: &str) {
        self.env.namespace(namespace).await;
        self.env
            .create(&opcat::api::OperatorGroup {
                metadata: meta_in(namespace, "operators"),
                spec: opcat::api::OperatorGroupSpec {
                    target_namespaces: Some(vec![namespace.to_owned()]),
                    ..Default::default()
                },
                status: None,
            })
            .await;
    }

    /// Creates a CatalogSource in `olm` for the example catalog image, with the pull secret.
    pub async fn create_catalog_source(&self, name: &str) {
        self.create_catalog_source_for(name, &self.env.images.catalog.clone())
            .await;
    }

    /// Creates a CatalogSource in `olm` for `image`, with the pull secret.
    pub async fn create_catalog_source_for(&self, name: &str, image: &str) {
        self.env.create(&catalog_source(name, image)).await;
    }

    /// Publishes `config` as the catalog image tag `variant` and points the CatalogSource at it,
    /// then waits until the CatalogSource reconciler has loaded it (a new digest triggers the
    /// Subscriptions, as after a catalog poll).
    pub async fn load_catalog(&self, config: DeclarativeConfig, variant: &str) {
        let image = self
            .env
            .registry
            .image(&format!("opcat-examples/catalog:{variant}"));
        let digest = self.push_catalog(config, &image, variant).await;
        let api: Api<CatalogSource> = Api::namespaced(self.env.client.clone(), CATALOG_NAMESPACE);
        api.patch(
            CATALOG,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"image": image}})),
        )
        .await
        .expect("point the CatalogSource at the new image");
        self.wait_catalog_served(&digest).await;
    }

    /// Re-pushes the catalog image the CatalogSource already names ([`LIVE_CATALOG_TAG`]) with
    /// `config`, without touching the CatalogSource, and waits until its `registryPoll` found and
    /// loaded the new digest: how a catalog maintainer ships a release. Needs a fixture from
    /// [`Fixture::start_polling`].
    pub async fn repush_catalog(&self, config: DeclarativeConfig, variant: &str) {
        let image = self.live_catalog_image();
        let digest = self.push_catalog(config, &image, variant).await;
        self.wait_catalog_served(&digest).await;
    }

    /// Like [`Fixture::start`], but the CatalogSource names one tag ([`LIVE_CATALOG_TAG`],
    /// first holding the full example catalog) and polls it every second; publish with
    /// [`Fixture::repush_catalog`]. Every poll writes `latestImageRegistryPoll`, so this fixture
    /// is not for zero-writes checks.
    pub async fn start_polling() -> Self {
        let fixture = Self::start_bare().await;
        let image = fixture.live_catalog_image();
        let digest = fixture
            .push_catalog(full_catalog(&fixture.env), &image, "live-full")
            .await;
        let mut catalog = catalog_source(CATALOG, &image);
        catalog.spec.update_strategy = Some(UpdateStrategy {
            registry_poll: Some(RegistryPoll {
                interval: Some("1s".into()),
            }),
        });
        fixture.env.create(&catalog).await;
        fixture.wait_catalog_served(&digest).await;
        fixture
    }

    fn live_catalog_image(&self) -> String {
        self.env
            .registry
            .image(&format!("opcat-examples/catalog:{LIVE_CATALOG_TAG}"))
    }

    /// Builds `config` as a catalog image and pushes it as `image`; returns its digest.
    async fn push_catalog(&self, config: DeclarativeConfig, image: &str, variant: &str) -> String {
        let keyring = keyring_for(&self.env.registry);
        push_catalog_image(&self.env, config, image, variant, &keyring).await
    }

    /// Waits until the CatalogSource is READY serving `digest`.
    async fn wait_catalog_served(&self, digest: &str) {
        wait_catalog_ready(&self.env, CATALOG_NAMESPACE, CATALOG, digest).await;
    }

    /// Creates a Subscription in [`NAMESPACE`] for `package` from `olm/examples`.
    pub async fn subscribe(&self, name: &str, edit: impl FnOnce(&mut SubscriptionSpec)) {
        self.subscribe_in(NAMESPACE, name, edit).await;
    }

    /// Creates a Subscription in `namespace` for `package` from `olm/examples`.
    pub async fn subscribe_in(
        &self,
        namespace: &str,
        name: &str,
        edit: impl FnOnce(&mut SubscriptionSpec),
    ) {
        let mut spec = SubscriptionSpec {
            catalog_source: CATALOG.into(),
            catalog_source_namespace: CATALOG_NAMESPACE.into(),
            package: "widget-operator".into(),
            ..SubscriptionSpec::default()
        };
        edit(&mut spec);
        let mut subscription = Subscription::new(name, spec);
        subscription.metadata.namespace = Some(namespace.into());
        self.env.create(&subscription).await;
    }

    /// Waits until the Subscription satisfies `ready`.
    pub async fn wait_subscription(
        &self,
        name: &str,
        what: &str,
        ready: impl Fn(&Subscription) -> bool,
    ) -> Subscription {
        let found = self
            .env
            .wait_for::<Subscription>(NAMESPACE, name, TIMEOUT, |sub| ready(sub))
            .await;
        assert!(ready(&found), "{what}");
        found
    }

    /// Waits until the Subscription has a condition of `type_` with `status`.
    pub async fn wait_condition(&self, name: &str, type_: &str, status: &str) -> Subscription {
        self.wait_subscription(name, type_, |sub| {
            condition(sub, type_).is_some_and(|c| c.status == status)
        })
        .await
    }

    /// The InstallPlans in [`NAMESPACE`], oldest first.
    pub fn plans(&self) -> Vec<InstallPlan> {
        let mut plans = self.env.api.list::<InstallPlan>(Some(NAMESPACE));
        plans.sort_by_key(|plan| plan.spec.generation);
        plans
    }

    /// The InstallPlans in [`NAMESPACE`] for `csv`.
    pub fn plans_for(&self, csv: &str) -> Vec<InstallPlan> {
        self.plans()
            .into_iter()
            .filter(|plan| {
                plan.spec
                    .cluster_service_version_names
                    .iter()
                    .any(|c| c == csv)
            })
            .collect()
    }

    /// Waits for the (single) InstallPlan for `csv` to satisfy `ready`.
    pub async fn wait_plan(
        &self,
        csv: &str,
        what: &str,
        ready: impl Fn(&InstallPlan) -> bool,
    ) -> InstallPlan {
        self.env
            .wait_until(what, TIMEOUT, || self.plans_for(csv).iter().any(&ready))
            .await;
        let plans = self.plans_for(csv);
        assert_eq!(
            plans.len(),
            1,
            "exactly one InstallPlan for {csv}: {plans:#?}"
        );
        plans.into_iter().next().unwrap()
    }

    /// Waits for the plan of `csv` to reach `phase`.
    pub async fn wait_plan_phase(&self, csv: &str, phase: &str) -> InstallPlan {
        self.wait_plan(
            csv,
            &format!("InstallPlan for {csv} reaches {phase}"),
            |plan| plan_phase(plan) == phase,
        )
        .await
    }

    /// Waits until `csv` is installed for Subscription `name`: its InstallPlan complete, the CSV
    /// created, the Subscription at the latest known version with it installed and no plan
    /// pending. Only for a CSV that stays installed: the Subscription records a CSV an
    /// automatic upgrade replaces for as long as it takes to plan the upgrade, which can fall
    /// between two polls; check such a CSV with [`phases::CsvPhases`].
    pub async fn wait_installed(&self, name: &str, csv: &str) -> Subscription {
        self.wait_plan_phase(csv, "Complete").await;
        self.wait_csv(csv).await;
        self.wait_subscription(name, &format!("{csv} installed"), |sub| {
            sub.status.as_ref().is_some_and(|s| {
                s.installed_csv.as_deref() == Some(csv)
                    && s.state.as_deref() == Some("AtLatestKnown")
            }) && condition(sub, "InstallPlanPending").is_none()
        })
        .await
    }

    /// Waits for the upgrade `from` → `to`: its InstallPlan completes with the `replaces`
    /// annotation, and the new CSV replaces the old one.
    pub async fn wait_upgrade(&self, from: &str, to: &str) -> InstallPlan {
        let plan = self.wait_plan_phase(to, "Complete").await;
        let entries = opcat::controller::plan_record::entries(&plan).expect("plan record");
        let entry = entries
            .iter()
            .find(|entry| entry.name == to)
            .expect("entry");
        assert_eq!(entry.replaces.as_deref(), Some(from));
        let csv = self.wait_csv(to).await;
        assert_eq!(csv.spec.replaces.as_deref(), Some(from));
        plan
    }

    /// Waits for the CSV to exist.
    pub async fn wait_csv(&self, name: &str) -> ClusterServiceVersion {
        self.env
            .wait_for::<ClusterServiceVersion>(NAMESPACE, name, TIMEOUT, |_| true)
            .await
    }

    /// Sets a CSV's phase, as the CSV reconciler would.
    pub async fn wait_csv_phase(&self, name: &str, phase: &str) -> ClusterServiceVersion {
        self.env
            .wait_for::<ClusterServiceVersion>(NAMESPACE, name, TIMEOUT, |csv| {
                csv.status
                    .as_ref()
                    .and_then(|status| status.phase)
                    .is_some_and(|current| current.as_str() == phase)
            })
            .await
    }

    /// Approves an InstallPlan.
    pub async fn approve(&self, plan: &str) {
        let api: Api<InstallPlan> = Api::namespaced(self.env.client.clone(), NAMESPACE);
        api.patch(
            plan,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"approved": true}})),
        )
        .await
        .expect("approve InstallPlan");
    }

    /// Replaces the pull secret's content.
    pub async fn set_pull_secret(&self, dockerconfigjson: &str) {
        let api: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(self.env.client.clone(), CATALOG_NAMESPACE);
        let secret = crate::support::pull_secret(CATALOG_NAMESPACE, PULL_SECRET, dockerconfigjson);
        api.replace(PULL_SECRET, &PostParams::default(), &secret)
            .await
            .expect("replace pull secret");
    }

    /// A dockerconfigjson with a wrong password for the test registry.
    pub fn wrong_credentials(&self) -> String {
        test_registry::dockerconfigjson(&self.env.registry.host, REGISTRY_USER, "not-the-password")
    }

    /// The right credentials.
    pub fn right_credentials(&self) -> String {
        test_registry::dockerconfigjson(&self.env.registry.host, REGISTRY_USER, REGISTRY_PASSWORD)
    }

    /// Waits until convergence has finished (a full second without writes, at most 30 s: a
    /// controller that keeps writing never gets there and fails here), then asserts that nothing
    /// is written for `settle` either.
    pub async fn assert_no_writes_for(&self, settle: Duration, what: &str) {
        self.env.wait_quiet(what).await;
        self.env.api.reset_counts();
        tokio::time::sleep(settle).await;
        let counts = self.env.api.request_counts();
        let writes: Vec<_> = counts
            .iter()
            .filter(|(key, count)| key.verb.is_write() && *count > 0)
            .map(|(key, count)| format!("{key:?} x{count}"))
            .collect();
        if counts.writes() != 0 {
            // Show how the CSVs got there: their phase history.
            let history: Vec<String> = self
                .env
                .api
                .list::<ClusterServiceVersion>(Some(NAMESPACE))
                .iter()
                .map(|csv| {
                    let phases: Vec<String> = csv
                        .status
                        .iter()
                        .flat_map(|status| status.conditions.iter().flatten())
                        .map(|c| format!("{:?}/{}", c.phase, c.reason.as_deref().unwrap_or("")))
                        .collect();
                    format!("{}: {}", csv.name_any(), phases.join(" -> "))
                })
                .collect();
            panic!("{what}: writes at steady state: {writes:?}; CSV history: {history:#?}");
        }
    }
}

/// Builds `config` as a catalog image and pushes it as `image` with `keyring`; returns its
/// digest.
pub async fn push_catalog_image(
    env: &Env,
    config: DeclarativeConfig,
    image: &str,
    variant: &str,
    keyring: &opcat::registry::Keyring,
) -> String {
    Catalog::new(config.clone()).expect("test catalog is valid");
    let dir = env.registry.scratch(&format!("catalog-{variant}"));
    let mut json = Vec::new();
    opcat::fbc::render::render(&config, &mut json).expect("render catalog");
    std::fs::write(dir.join("catalog.json"), json).expect("write catalog");
    let built = opcat::registry::push::build_catalog_image(&dir).expect("build catalog image");
    let reference: ImageRef = image.parse().expect("catalog image reference");
    env.opcat_registry
        .push(&reference, &built, keyring)
        .await
        .expect("push catalog image")
        .to_string()
}

/// Waits until the CatalogSource `namespace/name` is READY serving `digest`.
pub async fn wait_catalog_ready(env: &Env, namespace: &str, name: &str, digest: &str) {
    env.wait_for::<CatalogSource>(namespace, name, TIMEOUT, |catalog| {
        catalog.status.as_ref().is_some_and(|status| {
            status.resolved_image_digest.as_deref() == Some(digest)
                && status
                    .connection_state
                    .as_ref()
                    .is_some_and(|state| state.last_observed_state == "READY")
        })
    })
    .await;
}

/// The phase of an InstallPlan ("" before its first status).
pub fn plan_phase(plan: &InstallPlan) -> &str {
    plan.status
        .as_ref()
        .map_or("", |status| status.phase.as_str())
}

/// The Subscription condition of `type_`.
pub fn condition<'a>(
    subscription: &'a Subscription,
    type_: &str,
) -> Option<&'a opcat::api::subscription::SubscriptionCondition> {
    subscription
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// The example catalog, as pushed to the test registry.
pub fn full_catalog(env: &Env) -> DeclarativeConfig {
    opcat::fbc::load(&env.images.catalog_dir).expect("example catalog loads")
}

/// The example catalog with only the widget-operator entries `keep(channel, bundle)` accepts
/// (channels left empty are dropped; bundles no channel lists are dropped).
pub fn widget_catalog(env: &Env, keep: impl Fn(&str, &str) -> bool) -> DeclarativeConfig {
    let mut config = opcat::fbc::load(&env.images.catalog_dir).expect("example catalog loads");
    filter(&mut config, "widget-operator", keep);
    config
}

fn filter(config: &mut DeclarativeConfig, package: &str, keep: impl Fn(&str, &str) -> bool) {
    for channel in config.channels.iter_mut().filter(|c| c.package == package) {
        let name = channel.name.clone();
        channel.entries.retain(|entry| keep(&name, &entry.name));
    }
    config
        .channels
        .retain(|channel| channel.package != package || !channel.entries.is_empty());
    let listed: BTreeSet<String> = config
        .channels
        .iter()
        .filter(|c| c.package == package)
        .flat_map(|c| c.entries.iter().map(|e| e.name.clone()))
        .collect();
    config
        .bundles
        .retain(|bundle| bundle.package != package || listed.contains(&bundle.name));
}

/// Writes `files` (relative path → content) under `dir`.
pub fn write_tree(dir: &Path, files: &BTreeMap<&str, String>) {
    for (path, content) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }
}

/// The CSV names of the InstallPlans, oldest first.
pub fn plan_csvs(plans: &[InstallPlan]) -> Vec<String> {
    plans
        .iter()
        .flat_map(|plan| plan.spec.cluster_service_version_names.clone())
        .collect()
}

/// Name of an object.
pub fn name_of<K: kube::Resource>(object: &K) -> String {
    object.name_any()
}

/// Metadata with a name and namespace.
pub fn meta_in(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ObjectMeta::default()
    }
}

/// Metadata with a name in [`NAMESPACE`].
pub fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(NAMESPACE.into()),
        ..ObjectMeta::default()
    }
}
