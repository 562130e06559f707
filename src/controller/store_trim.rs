//! What a shared watch ([`super::stores`]) drops from an object before storing it, and which
//! large parts it shares between stored objects.

use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;

use crate::api::cluster_service_version::{ApiDefinitions, ApiPresentation};
use crate::api::csv_install::StrategyDetailsDeployment;
use crate::api::{
    CatalogSource, ClusterServiceVersion, InstallPlan, OLMConfig, OperatorCondition, OperatorGroup,
    Subscription,
};
use crate::interner::Interner;

use super::attached_service_account::AttachedServiceAccount;
use super::compact_meta::keep_entries;
use super::deployment_rollout::DeploymentRollout;
use super::stored_copy::StoredCopy;
use super::stored_namespace::StoredNamespace;

/// Annotations a bundle's CSV carries for catalogs and consoles only, dropped from stored CSVs
/// (see [`Trim`]'s implementation for [`ClusterServiceVersion`]). `alm-examples` alone is
/// often several kB per CSV.
pub const DROPPED_CSV_ANNOTATIONS: &[&str] = &[
    "alm-examples",
    "capabilities",
    "categories",
    "certified",
    "containerImage",
    "createdAt",
    "description",
    "repository",
    "support",
];

/// The install strategies of stored CSVs: one copy per distinct strategy, however many
/// namespaces installed the bundle.
static INSTALL_STRATEGIES: LazyLock<Interner<StrategyDetailsDeployment>> =
    LazyLock::new(Interner::default);

/// What a shared watch drops from an object before storing it: what no reader of the store
/// needs. The stores are opcat's largest memory (one object per install and kind; at 1,000
/// installs they decide the controller's peak RSS, scripts/bench-scale.sh).
pub(super) trait Trim: Resource {
    /// Drops `metadata.managedFields`: the server's record of which manager owns which field,
    /// which no reconciler reads from a store and which is often larger than the object itself
    /// (1,000 installs: peak RSS 277 MB with them, 175 MB without). Writes never send it back:
    /// server-side apply bodies drop it, and an update without it keeps the server's record.
    fn trim(&mut self) {
        self.meta_mut().managed_fields = None;
    }
}

/// The annotation `kubectl apply` keeps: the whole object as last applied, as large as the
/// object itself, and read by no reconciler.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Drops `metadata.managedFields` and [`LAST_APPLIED`], for the kinds users write with
/// `kubectl apply`. Not for ServiceAccounts: their pull-secret edit patches the annotations
/// map as stored, and a map that looked absent would be replaced whole.
fn trim_user_object(meta: &mut ObjectMeta) {
    meta.managed_fields = None;
    keep_entries(&mut meta.annotations, |key| key != LAST_APPLIED);
}

impl Trim for CatalogSource {
    fn trim(&mut self) {
        trim_user_object(&mut self.metadata);
    }
}
impl Trim for Subscription {
    fn trim(&mut self) {
        trim_user_object(&mut self.metadata);
    }
}
impl Trim for ClusterServiceVersion {
    /// Also drops what only user interfaces read: description, icon, keywords, maintainers,
    /// links, provider, and the presentation of owned and required APIs; and the bundle's
    /// catalog and console annotations ([`DROPPED_CSV_ANNOTATIONS`]). No reconciler reads them
    /// from the store (readers of stored CSVs read opcat's and OLM's annotations by key;
    /// Deployments are rendered from the pulled bundle's CSV, not the stored one), and no write
    /// sends the stored CSV back (status, annotations and finalizers are written by patches
    /// naming their own keys).
    ///
    /// Shares the install strategy (`spec.install.spec`: the Deployments' pod templates and the
    /// RBAC rules, most of the spec) between CSVs equal in it, through [`INSTALL_STRATEGIES`]:
    /// the same bundle installed in 1,000 namespaces keeps one copy. It is kept, not dropped:
    /// the pull-secret planner reads its service accounts.
    fn trim(&mut self) {
        self.metadata.managed_fields = None;
        if let Some(annotations) = &mut self.metadata.annotations {
            annotations.retain(|key, _| !DROPPED_CSV_ANNOTATIONS.contains(&key.as_str()));
        }
        let spec = &mut self.spec;
        spec.description = None;
        spec.icon = None;
        spec.keywords = None;
        spec.maintainers = None;
        spec.links = None;
        spec.provider = None;
        clear_presentation(spec.custom_resource_definitions.as_mut(), |crd| {
            &mut crd.presentation
        });
        clear_presentation(spec.api_service_definitions.as_deref_mut(), |service| {
            &mut service.presentation
        });
        if let Some(strategy) = spec.install.spec.take() {
            spec.install.spec = Some(INSTALL_STRATEGIES.intern(strategy));
        }
    }
}

/// Clears the presentation of every owned and required API of `definitions`.
fn clear_presentation<T>(
    definitions: Option<&mut ApiDefinitions<T>>,
    presentation: impl Fn(&mut T) -> &mut ApiPresentation,
) {
    if let Some(definitions) = definitions {
        for api in definitions
            .owned
            .iter_mut()
            .chain(definitions.required.iter_mut())
            .flatten()
        {
            *presentation(api) = ApiPresentation::default();
        }
    }
}

impl Trim for InstallPlan {
    /// Also drops the steps (`status.plan`) of a finished plan (`Complete` or `Failed`): a
    /// finished plan is a record that no reconciler changes or reads the steps of (the
    /// Subscription reconciler reads its phase, conditions and bundle record). A plan still
    /// in progress keeps them: its reconciler writes its status over the stored one. The steps
    /// are most of a plan in memory: a string per field of each object of the bundle, about
    /// 6 kB for a bundle of 14 objects.
    fn trim(&mut self) {
        self.metadata.managed_fields = None;
        if let Some(status) = &mut self.status
            && status.is_finished()
        {
            status.plan = None;
        }
    }
}
impl Trim for OperatorGroup {
    fn trim(&mut self) {
        trim_user_object(&mut self.metadata);
    }
}
/// Small, one per install: kept whole but for `managedFields`.
impl Trim for OperatorCondition {}

/// One object (`cluster`), small.
impl Trim for OLMConfig {}
/// Copies are stored with compact metadata and shared data by type ([`StoredCopy`]).
impl Trim for StoredCopy {}
/// Namespaces are stored with compact metadata and no annotations by type
/// ([`StoredNamespace`]).
impl Trim for StoredNamespace {}

/// Deployments are stored without their pod template, with compact metadata and only the
/// ownership labels, by type ([`DeploymentRollout`]).
impl Trim for DeploymentRollout {}

/// ServiceAccounts are stored with compact metadata by type ([`AttachedServiceAccount`]).
impl Trim for AttachedServiceAccount {}

#[cfg(test)]
pub(super) mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use kube::api::ObjectMeta;

    use super::*;
    use crate::api::ClusterServiceVersionSpec;
    use crate::api::cluster_service_version::CustomResourceDefinitions;
    use crate::api::csv_install::{
        NamedInstallStrategy, StrategyDeploymentPermissions, StrategyDeploymentSpec,
    };

    /// A CSV `widget.v1` in `namespace` whose one Deployment is `deployment`, with bundle
    /// annotations and presentation fields.
    pub(in crate::controller) fn csv(namespace: &str, deployment: &str) -> ClusterServiceVersion {
        let annotations: BTreeMap<String, String> = [
            ("alm-examples", "[{\"kind\":\"Widget\"}]"),
            ("description", "Widgets."),
            ("capabilities", "Basic Install"),
            ("olm.properties", "{\"properties\":[]}"),
            ("opcat.dev/subscription", "widget"),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value.to_owned()))
        .collect();
        ClusterServiceVersion {
            metadata: ObjectMeta {
                name: Some("widget.v1".into()),
                namespace: Some(namespace.into()),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: ClusterServiceVersionSpec {
                display_name: "Widget".into(),
                version: Some("1.0.0".into()),
                replaces: Some("widget.v0".into()),
                provider: Some(Box::default()),
                custom_resource_definitions: Some(CustomResourceDefinitions::default()),
                install: NamedInstallStrategy {
                    strategy: "deployment".into(),
                    spec: Some(Arc::new(StrategyDetailsDeployment {
                        deployments: vec![StrategyDeploymentSpec {
                            name: deployment.into(),
                            ..StrategyDeploymentSpec::default()
                        }],
                        permissions: Some(vec![StrategyDeploymentPermissions {
                            service_account_name: "widget-sa".into(),
                            rules: Vec::new(),
                        }]),
                        cluster_permissions: None,
                    })),
                },
                ..ClusterServiceVersionSpec::default()
            },
            status: None,
        }
    }

    #[test]
    fn stored_csvs_drop_presentation_but_keep_what_readers_read() {
        let mut stored = csv("a", "widget-operator");
        stored.trim();
        let annotations = stored.metadata.annotations.as_ref().unwrap();
        let keys: Vec<&str> = annotations.keys().map(String::as_str).collect();
        assert_eq!(keys, ["olm.properties", "opcat.dev/subscription"]);
        assert_eq!(stored.spec.provider, None);
        assert_eq!(stored.spec.version.as_deref(), Some("1.0.0"));
        assert_eq!(stored.spec.replaces.as_deref(), Some("widget.v0"));
        assert!(stored.spec.custom_resource_definitions.is_some());
        let original = csv("a", "widget-operator");
        assert_eq!(stored.spec.install, original.spec.install);
        assert_eq!(
            stored.spec.install.permissions()[0].service_account_name,
            "widget-sa"
        );
    }

    #[test]
    fn equal_install_strategies_are_stored_once() {
        let mut first = csv("a", "shared-operator");
        let mut second = csv("b", "shared-operator");
        let mut other = csv("c", "other-operator");
        first.trim();
        second.trim();
        other.trim();
        let strategy =
            |csv: &ClusterServiceVersion| Arc::clone(csv.spec.install.spec.as_ref().unwrap());
        assert!(Arc::ptr_eq(&strategy(&first), &strategy(&second)));
        assert!(!Arc::ptr_eq(&strategy(&first), &strategy(&other)));
        assert_eq!(other.spec.install.deployments()[0].name, "other-operator");
    }

    #[test]
    fn objects_users_apply_are_stored_without_kubectls_copy() {
        let annotations = |list: &[&str]| -> Option<BTreeMap<String, String>> {
            Some(
                list.iter()
                    .map(|key| ((*key).to_owned(), "{}".to_owned()))
                    .collect(),
            )
        };
        let mut subscription = Subscription::new("widgets", Default::default());
        subscription.metadata.annotations = annotations(&[LAST_APPLIED, "example.com/note"]);
        subscription.trim();
        assert_eq!(
            subscription.metadata.annotations,
            annotations(&["example.com/note"])
        );

        let mut group = OperatorGroup::new("tenant", Default::default());
        group.metadata.annotations = annotations(&[LAST_APPLIED]);
        group.trim();
        assert_eq!(group.metadata.annotations, None);
    }

    #[test]
    fn finished_plans_are_stored_without_their_steps() {
        use crate::api::install_plan::{InstallPlanStatus, Step};
        use crate::api::install_plan_status::{PHASE_COMPLETE, PHASE_FAILED, PHASE_INSTALLING};

        let plan = |phase: &str| InstallPlan {
            metadata: ObjectMeta::default(),
            spec: Default::default(),
            status: Some(InstallPlanStatus {
                phase: phase.into(),
                catalog_sources: vec!["examples".into()],
                plan: Some(vec![Step::default()]),
                ..InstallPlanStatus::default()
            }),
        };
        for phase in [PHASE_COMPLETE, PHASE_FAILED] {
            let mut stored = plan(phase);
            stored.trim();
            let status = stored.status.unwrap();
            assert_eq!(status.plan, None, "{phase}");
            assert_eq!(status.phase, phase);
            assert_eq!(status.catalog_sources, ["examples"]);
        }
        let mut installing = plan(PHASE_INSTALLING);
        installing.trim();
        assert_eq!(installing, plan(PHASE_INSTALLING));
    }
}
