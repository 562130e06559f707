//! Shared helpers for the bundle tests: fixture paths, loading, one install's render context,
//! and lookups in a rendered bundle.
#![allow(dead_code)] // each test crate uses a different subset

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::PodSpec;
use kube::api::DynamicObject;
use opcat::api::subscription::SubscriptionConfig;
use opcat::bundle::ownership::CsvOwner;
use opcat::bundle::render::ServingCertificate;
use opcat::bundle::serving::served_deployments;
use opcat::bundle::{Bundle, RenderContext, RenderError, RenderedBundle, TargetNamespaces, render};
use opcat::certificates::{Material, ServiceIdentity};

/// Root of this repository.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `tests/fixtures/bundles/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/bundles").join(name)
}

/// `bundles/widget-operator/<version>`.
pub fn widget(version: &str) -> PathBuf {
    repo_root().join("bundles/widget-operator").join(version)
}

/// Loads a bundle that must load.
pub fn load(dir: &Path) -> Bundle {
    Bundle::load(dir).unwrap_or_else(|error| panic!("{} must load: {error}", dir.display()))
}

/// The UID the test CSVs have "in the cluster".
pub const CSV_UID: &str = "6f1d2c3b-0000-4000-8000-0000000000c5";

/// One install: everything [`RenderContext`] borrows, owned.
pub struct Install {
    pub csv: CsvOwner,
    pub namespace: String,
    pub targets: TargetNamespaces,
    pub operator_group: String,
    pub config: Option<SubscriptionConfig>,
    pub pull_secrets: Vec<String>,
    pub extra_labels: BTreeMap<String, String>,
    /// A serving certificate per Deployment that serves webhooks or API services.
    pub certificates: BTreeMap<String, Material>,
    pub serving: BTreeMap<String, ServingCertificate>,
}

impl Install {
    /// An install of `bundle` into `namespace` watching `targets`, with two pull-secret copies.
    pub fn new(bundle: &Bundle, namespace: &str, targets: TargetNamespaces) -> Self {
        Self {
            csv: CsvOwner {
                name: bundle.name().to_owned(),
                uid: CSV_UID.to_owned(),
            },
            namespace: namespace.to_owned(),
            targets,
            operator_group: "og".to_owned(),
            config: None,
            pull_secrets: vec![
                "vendor-catalog-pull-0123456789".to_owned(),
                "acme-catalog-pull-abcdef0123".to_owned(),
            ],
            extra_labels: BTreeMap::new(),
            certificates: BTreeMap::new(),
            serving: BTreeMap::new(),
        }
        .with_certificates(bundle)
    }

    /// Issues a serving certificate for each Deployment of `bundle` that serves webhooks or API
    /// services, as the controller does on a first install.
    fn with_certificates(mut self, bundle: &Bundle) -> Self {
        let now = opcat::controller::clock::Clock::now(&opcat::controller::clock::SystemClock);
        for served in served_deployments(&bundle.csv) {
            let identity = ServiceIdentity {
                service: served.service.clone(),
                namespace: self.namespace.clone(),
            };
            let material = opcat::certificates::issue(&identity, now).expect("issue certificate");
            self.serving.insert(
                served.deployment.clone(),
                ServingCertificate {
                    ca_bundle: material.ca_bundle(),
                    ca_hash: material.ca_hash(),
                },
            );
            self.certificates.insert(served.deployment, material);
        }
        self
    }

    /// OwnNamespace install into `namespace`.
    pub fn own(bundle: &Bundle, namespace: &str) -> Self {
        Self::new(bundle, namespace, targets(&[namespace]))
    }

    /// AllNamespaces install into `namespace`.
    pub fn all(bundle: &Bundle, namespace: &str) -> Self {
        Self::new(bundle, namespace, TargetNamespaces::All)
    }

    pub fn with_config(mut self, config: SubscriptionConfig) -> Self {
        self.config = Some(config);
        self
    }

    pub fn context(&self) -> RenderContext<'_> {
        RenderContext {
            csv: &self.csv,
            install_namespace: &self.namespace,
            targets: &self.targets,
            operator_group: &self.operator_group,
            subscription_config: self.config.as_ref(),
            pull_secret_names: &self.pull_secrets,
            extra_labels: &self.extra_labels,
            serving_certificates: &self.serving,
        }
    }

    pub fn try_render(&self, bundle: &Bundle) -> Result<RenderedBundle, RenderError> {
        render(bundle, &self.context())
    }

    pub fn render(&self, bundle: &Bundle) -> RenderedBundle {
        self.try_render(bundle)
            .unwrap_or_else(|error| panic!("{} must render: {error}", bundle.name()))
    }
}

/// Listed target namespaces.
pub fn targets(namespaces: &[&str]) -> TargetNamespaces {
    TargetNamespaces::namespaces(namespaces.iter().copied()).expect("valid target namespaces")
}

pub fn kind(object: &DynamicObject) -> &str {
    object.types.as_ref().map_or("", |t| t.kind.as_str())
}

pub fn name(object: &DynamicObject) -> &str {
    object.metadata.name.as_deref().unwrap_or_default()
}

pub fn namespace(object: &DynamicObject) -> Option<&str> {
    object.metadata.namespace.as_deref()
}

/// `(kind, namespace, name)` of each object.
pub fn keys(objects: &[DynamicObject]) -> Vec<(String, Option<String>, String)> {
    objects
        .iter()
        .map(|o| {
            (
                kind(o).to_owned(),
                namespace(o).map(str::to_owned),
                name(o).to_owned(),
            )
        })
        .collect()
}

/// The objects of `kind`.
pub fn of_kind<'a>(objects: &'a [DynamicObject], wanted: &str) -> Vec<&'a DynamicObject> {
    objects.iter().filter(|o| kind(o) == wanted).collect()
}

/// The object of `kind` named `name` in `namespace` (panics when absent).
pub fn find<'a>(
    objects: &'a [DynamicObject],
    wanted_kind: &str,
    wanted_namespace: Option<&str>,
    wanted_name: &str,
) -> &'a DynamicObject {
    objects
        .iter()
        .find(|o| {
            kind(o) == wanted_kind && namespace(o) == wanted_namespace && name(o) == wanted_name
        })
        .unwrap_or_else(|| {
            panic!(
                "no {wanted_kind} {wanted_name} in {wanted_namespace:?} among {:#?}",
                keys(objects)
            )
        })
}

/// The rendered Deployment `name`, typed.
pub fn deployment(rendered: &RenderedBundle, wanted: &str) -> Deployment {
    rendered
        .deployments
        .iter()
        .find(|o| name(o) == wanted)
        .unwrap_or_else(|| panic!("no Deployment {wanted}"))
        .clone()
        .try_parse()
        .expect("a rendered Deployment parses as a Deployment")
}

/// The pod spec of a rendered Deployment.
pub fn pod_spec(deployment: &Deployment) -> &PodSpec {
    deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.template.spec.as_ref())
        .expect("pod spec")
}

/// The pod template annotations of a rendered Deployment.
pub fn pod_annotations(deployment: &Deployment) -> BTreeMap<String, String> {
    deployment
        .spec
        .as_ref()
        .and_then(|spec| spec.template.metadata.as_ref())
        .and_then(|meta| meta.annotations.clone())
        .unwrap_or_default()
}

/// `imagePullSecrets` names of a pod spec, in order.
pub fn pull_secret_names(pod: &PodSpec) -> Vec<String> {
    pod.image_pull_secrets
        .iter()
        .flatten()
        .map(|entry| entry.name.clone())
        .collect()
}

/// A YAML document parsed as `T` (for configs written inline in tests).
pub fn yaml<T: serde::de::DeserializeOwned>(text: &str) -> T {
    serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("test YAML does not parse: {e}"))
}

/// A bundle in a temporary directory: the `minimal` fixture's CSV as `manifests/csv.yaml`, then
/// `files` (paths relative to the bundle root; a file named like the CSV replaces it).
pub fn temp_bundle(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    let csv = std::fs::read_to_string(
        fixture("minimal").join("manifests/tiny.clusterserviceversion.yaml"),
    )
    .expect("minimal CSV");
    for (path, content) in [("manifests/csv.yaml", csv.as_str())]
        .into_iter()
        .chain(files.iter().copied())
    {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a file path has a parent"))
            .expect("create directory");
        std::fs::write(&path, content).expect("write file");
    }
    dir
}

/// The minimal fixture's CSV text, for tests that change it.
pub fn minimal_csv() -> String {
    std::fs::read_to_string(fixture("minimal").join("manifests/tiny.clusterserviceversion.yaml"))
        .expect("minimal CSV")
}
