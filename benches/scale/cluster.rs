//! The cluster the controller runs against: the real `docker-registry` (TLS, basic auth, two
//! users) holding the example catalog and bundles, and the in-memory API server served over
//! HTTP. Objects a user would create are seeded straight into the server's store, so they are
//! not counted as the controller's requests.

use std::collections::BTreeMap;

use fake_apiserver::{FakeApiServer, HttpHandle};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use opcat::api::olm_config::{CLUSTER, Features, OLMConfig, OLMConfigSpec};
use opcat::api::{
    CatalogSource, CatalogSourceSpec, OperatorGroup, OperatorGroupSpec, Subscription,
    SubscriptionSpec,
};
use opcat::pull_secrets::CatalogRef;
use test_registry::{Auth, Distribution, User};

use crate::support::{self, Env, REGISTRY_PASSWORD, REGISTRY_USER};

/// Namespace of the CatalogSource and its secrets.
pub const CATALOG_NAMESPACE: &str = "olm";
/// The CatalogSource every Subscription uses.
pub const CATALOG: &str = "bench";
/// Its `spec.secrets`: credentials for the registry (rotated by the benchmark) and for a
/// mirror no image uses.
pub const SOURCES: [&str; 2] = ["registry-creds", "mirror-creds"];
/// The source the rotation changes, and the only one copied: the mirror's credentials match no
/// image of the operator, and least-privilege copies (issue 23) leave such a source out.
pub const ROTATED: &str = SOURCES[0];
/// The package every Subscription installs.
pub const PACKAGE: &str = "widget-operator";
/// Name of the Subscription in each namespace.
pub const SUBSCRIPTION: &str = "widget-operator";
/// Namespace of the AllNamespaces operator (copied-CSV runs).
pub const OPERATOR_NAMESPACE: &str = "operators";

/// Tag of the benchmark's own requests in the API server's request log.
pub const BENCH_AGENT: &str = "bench";
/// The registry user the rotated secret switches to.
const ROTATED_USER: &str = "catalog-reader-rotated";
const ROTATED_PASSWORD: &str = "r0tated-Pa55-never-logged";
const DATA_KEY: &str = ".dockerconfigjson";

/// Registry and API server.
pub struct Cluster {
    pub env: Env,
    pub http: HttpHandle,
    pub catalog: CatalogRef,
}

impl Cluster {
    /// Starts the registry (examples pushed) and the API server (CRDs installed, served over
    /// HTTP from `api_runtime`, so its CPU time is its own: see [`crate::cpu`]).
    pub async fn start(api_runtime: &tokio::runtime::Handle) -> Self {
        let registry = Distribution::start(Auth::Basic(vec![
            User::new(REGISTRY_USER, REGISTRY_PASSWORD),
            User::new(ROTATED_USER, ROTATED_PASSWORD),
        ]));
        let env = Env::with_registry(FakeApiServer::new(), registry).await;
        let api = env.api.clone();
        let http = api_runtime
            .spawn(async move { api.serve_http().await })
            .await
            .expect("the API server's runtime")
            .expect("serve the API over HTTP");
        Self {
            env,
            http,
            catalog: CatalogRef {
                namespace: CATALOG_NAMESPACE.to_owned(),
                name: CATALOG.to_owned(),
            },
        }
    }

    /// Requests the registry has answered so far, refusals included.
    pub fn registry_requests(&self) -> usize {
        self.env.registry.requests("/v2/")
    }

    pub fn api(&self) -> &FakeApiServer {
        &self.env.api
    }

    /// The catalog's namespace, its two source secrets and the CatalogSource.
    pub fn seed_catalog(&self) {
        self.seed(&namespace(CATALOG_NAMESPACE));
        let registry = &self.env.registry;
        self.seed(&support::pull_secret(
            CATALOG_NAMESPACE,
            SOURCES[0],
            &registry.dockerconfigjson(),
        ));
        self.seed(&support::pull_secret(
            CATALOG_NAMESPACE,
            SOURCES[1],
            &test_registry::dockerconfigjson("mirror.opcat.invalid", "mirror", "mirror-pass"),
        ));
        let mut catalog = CatalogSource::new(
            CATALOG,
            CatalogSourceSpec {
                source_type: "grpc".into(),
                image: Some(self.env.images.catalog.clone()),
                secrets: Some(SOURCES.iter().map(|s| (*s).to_owned()).collect()),
                ..CatalogSourceSpec::default()
            },
        );
        catalog.metadata.namespace = Some(CATALOG_NAMESPACE.into());
        self.seed(&catalog);
    }

    /// A namespace with an OperatorGroup (own namespace) and a Subscription to the package.
    pub fn seed_tenant(&self, name: &str) {
        self.seed(&namespace(name));
        self.seed_subscription(
            name,
            OperatorGroupSpec {
                target_namespaces: Some(vec![name.to_owned()]),
                ..OperatorGroupSpec::default()
            },
        );
    }

    /// A namespace with nothing in it (a tenant of the AllNamespaces operator).
    pub fn seed_namespace(&self, name: &str) {
        self.seed(&namespace(name));
    }

    /// [`OPERATOR_NAMESPACE`] with an OperatorGroup that targets every namespace (no targets, no
    /// selector) and a Subscription to the package.
    pub fn seed_all_namespaces_operator(&self) {
        self.seed(&namespace(OPERATOR_NAMESPACE));
        self.seed_subscription(OPERATOR_NAMESPACE, OperatorGroupSpec::default());
    }

    /// The OLMConfig `cluster` with `spec.features.disableCopiedCSVs`.
    pub fn seed_olm_config(&self, disable_copies: bool) {
        self.seed(&OLMConfig::new(CLUSTER, olm_config_spec(disable_copies)));
    }

    /// Flips `disableCopiedCSVs` through the API as an admin would (one PATCH, tagged
    /// [`BENCH_AGENT`]).
    pub async fn set_copies_disabled(&self, disable_copies: bool) {
        let api: Api<OLMConfig> = Api::all(self.api().client_as(BENCH_AGENT));
        let patch = serde_json::json!({ "spec": olm_config_spec(disable_copies) });
        api.patch(CLUSTER, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("flip disableCopiedCSVs");
    }

    /// An OperatorGroup `tenant` with `spec` and a Subscription to the package in `name`.
    fn seed_subscription(&self, name: &str, spec: OperatorGroupSpec) {
        self.seed(&OperatorGroup {
            metadata: meta(name, "tenant"),
            spec,
            status: None,
        });
        let mut subscription = Subscription::new(
            SUBSCRIPTION,
            SubscriptionSpec {
                catalog_source: CATALOG.into(),
                catalog_source_namespace: CATALOG_NAMESPACE.into(),
                package: PACKAGE.into(),
                ..SubscriptionSpec::default()
            },
        );
        subscription.metadata.namespace = Some(name.to_owned());
        self.seed(&subscription);
    }

    fn seed<K>(&self, object: &K)
    where
        K: kube::Resource<DynamicType = ()> + serde::Serialize + serde::de::DeserializeOwned,
    {
        self.api()
            .seed(object)
            .unwrap_or_else(|error| panic!("seed {}: {error}", K::kind(&())));
    }

    /// The data of source `name` as stored.
    pub fn source_data(&self, name: &str) -> BTreeMap<String, ByteString> {
        self.api()
            .get::<Secret>(CATALOG_NAMESPACE, name)
            .and_then(|secret| secret.data)
            .unwrap_or_else(|| panic!("source secret {CATALOG_NAMESPACE}/{name} has no data"))
    }

    /// Rotates [`ROTATED`] to the second registry user's credentials, through the API as an
    /// admin would (one PATCH request, tagged [`BENCH_AGENT`] so it is not counted as the
    /// controller's).
    /// Returns the new data.
    pub async fn rotate(&self) -> BTreeMap<String, ByteString> {
        let registry = &self.env.registry;
        let rotated =
            test_registry::dockerconfigjson(&registry.host, ROTATED_USER, ROTATED_PASSWORD);
        let data = BTreeMap::from([(DATA_KEY.to_owned(), ByteString(rotated.into_bytes()))]);
        let api: Api<Secret> =
            Api::namespaced(self.api().client_as(BENCH_AGENT), CATALOG_NAMESPACE);
        let patch = serde_json::json!({ "data": data });
        api.patch(ROTATED, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("rotate the source secret");
        data
    }
}

/// Tenant namespace names: `tenant-0001` ... (sorted like numbers).
pub fn tenants(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("tenant-{i:04}")).collect()
}

fn olm_config_spec(disable_copies: bool) -> OLMConfigSpec {
    OLMConfigSpec {
        features: Some(Features {
            disable_copied_csvs: Some(disable_copies),
            ..Features::default()
        }),
    }
}

fn namespace(name: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    }
}

fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: Some(namespace.to_owned()),
        ..ObjectMeta::default()
    }
}
