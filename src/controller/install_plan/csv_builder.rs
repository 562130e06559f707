//! Pure: the ClusterServiceVersion an InstallPlan creates from each of its bundles, and the
//! plan's steps (no client).
//!
//! The CSV is the bundle's, in the plan's namespace, with opcat's contract on top
//! ([`crate::controller::keys::csv`]): the bundle image pinned to the digest just pulled, the
//! bundle's own catalog (whose pull secrets the CSV reconciler propagates), its Subscription,
//! the InstallPlan and package, the properties later resolutions read; the finalizer already
//! set so that no CSV exists, even briefly, without cleanup; `spec.replaces` rewritten to the
//! installed CSV it upgrades (empty for a first install), as OLM does; no status.

use std::collections::BTreeMap;

use kube::api::ObjectMeta;
use kube::{Resource, ResourceExt};

use crate::api::install_plan::{Step, StepResource};
use crate::api::install_plan_status::STEP_CREATED;
use crate::api::operator::component_labels;
use crate::api::{ClusterServiceVersion, FINALIZER, InstallPlan};
use crate::bundle::Bundle;
use crate::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};
use crate::controller::keys;
use crate::controller::plan_record::PlanEntry;
use crate::pull_secrets::names::label_value;

/// Where the bundle comes from.
pub struct CsvInputs<'a> {
    pub plan: &'a InstallPlan,
    /// The plan's record of this bundle.
    pub entry: &'a PlanEntry,
    pub bundle_csv: &'a ClusterServiceVersion,
    /// The bundle image pinned to its digest.
    pub pinned_image: &'a str,
    /// The [`keys::csv::PROPERTIES`] annotation.
    pub properties: &'a str,
}

/// The CSV to create.
pub fn build_csv(inputs: &CsvInputs<'_>) -> ClusterServiceVersion {
    let plan = inputs.plan;
    let entry = inputs.entry;
    let source = inputs.bundle_csv;
    let (catalog_namespace, catalog_name) = (&entry.catalog_namespace, &entry.catalog_name);

    let mut labels: BTreeMap<String, String> = source.labels().clone();
    labels.insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned());
    labels.insert(
        keys::csv::CATALOG_NAMESPACE_LABEL.to_owned(),
        label_value(catalog_namespace),
    );
    labels.insert(
        keys::csv::CATALOG_NAME_LABEL.to_owned(),
        label_value(catalog_name),
    );
    if !entry.package.is_empty() {
        labels.extend(component_labels(
            &entry.package,
            &plan.namespace().unwrap_or_default(),
        ));
    }

    let mut annotations: BTreeMap<String, String> = source.annotations().clone();
    annotations.insert(
        keys::csv::BUNDLE_IMAGE.to_owned(),
        inputs.pinned_image.to_owned(),
    );
    annotations.insert(
        keys::csv::CATALOG.to_owned(),
        format!("{catalog_namespace}/{catalog_name}"),
    );
    annotations.insert(keys::csv::INSTALL_PLAN.to_owned(), plan.name_any());
    for (key, value) in [
        (keys::csv::SUBSCRIPTION, &entry.subscription),
        (keys::csv::PACKAGE, &entry.package),
    ] {
        if !value.is_empty() {
            annotations.insert(key.to_owned(), value.clone());
        }
    }
    annotations.insert(
        keys::csv::PROPERTIES.to_owned(),
        inputs.properties.to_owned(),
    );

    let mut spec = source.spec.clone();
    spec.replaces = entry
        .replaces
        .clone()
        .filter(|replaces| !replaces.is_empty());

    ClusterServiceVersion {
        metadata: ObjectMeta {
            name: source.metadata.name.clone(),
            namespace: plan.namespace(),
            labels: Some(labels),
            annotations: Some(annotations),
            finalizers: Some(vec![FINALIZER.to_owned()]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    }
}

/// The plan's steps: the CSV (`csv_status`: `Created`, or `Present` when it already existed),
/// then one per bundle manifest, in file order. The manifests are applied by the CSV
/// reconciler, which owns them from here on; their steps say `Created` once the CSV that
/// installs them exists (what OLM shows for a completed plan).
pub fn steps(bundle: &Bundle, catalog: (&str, &str), csv_status: &str) -> Vec<Step> {
    let csv_name = bundle.name().to_owned();
    let (catalog_namespace, catalog_name) = catalog;
    let resource = |api_version: &str, kind: &str, name: &str| {
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        StepResource {
            source_name: catalog_name.to_owned(),
            source_namespace: catalog_namespace.to_owned(),
            group: group.to_owned(),
            version: version.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            manifest: None,
        }
    };
    let csv_step = Step {
        resolving: csv_name.clone(),
        resource: resource(
            &ClusterServiceVersion::api_version(&()),
            &ClusterServiceVersion::kind(&()),
            &csv_name,
        ),
        optional: None,
        status: csv_status.to_owned(),
    };
    std::iter::once(csv_step)
        .chain(bundle.objects.iter().map(|object| Step {
            resolving: csv_name.clone(),
            resource: resource(object.api_version(), object.kind(), object.name()),
            optional: None,
            status: STEP_CREATED.to_owned(),
        }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{Approval, InstallPlanSpec};

    fn plan() -> InstallPlan {
        let mut plan = InstallPlan::new(
            "install-abcde",
            InstallPlanSpec {
                cluster_service_version_names: vec!["widget.v2".into()],
                approval: Approval::Automatic,
                approved: true,
                ..InstallPlanSpec::default()
            },
        );
        plan.metadata.namespace = Some("ops".into());
        plan
    }

    fn entry(replaces: Option<&str>) -> PlanEntry {
        PlanEntry {
            name: "widget.v2".into(),
            package: "widget".into(),
            catalog_namespace: "olm".into(),
            catalog_name: "catalog".into(),
            replaces: replaces.map(str::to_owned),
            subscription: "widgets".into(),
            ..PlanEntry::default()
        }
    }

    const PROPERTIES: &str = r#"{"properties":[]}"#;

    fn bundle_csv() -> ClusterServiceVersion {
        let mut csv = ClusterServiceVersion::new("widget.v2", Default::default());
        csv.metadata.namespace = Some("placeholder".into());
        csv.metadata.labels = Some(BTreeMap::from([("tier".to_owned(), "ops".to_owned())]));
        csv.metadata.annotations = Some(BTreeMap::from([(
            "capabilities".to_owned(),
            "Basic Install".to_owned(),
        )]));
        csv.spec.replaces = Some("widget.v1.5".into());
        csv.spec.version = Some("2.0.0".into());
        csv
    }

    #[test]
    fn the_csv_carries_the_contract_and_the_finalizer() {
        let plan = plan();
        let source = bundle_csv();
        let csv = build_csv(&CsvInputs {
            plan: &plan,
            entry: &entry(Some("widget.v1")),
            bundle_csv: &source,
            pinned_image: "registry.example.com/widget-bundle@sha256:abc",
            properties: PROPERTIES,
        });
        assert_eq!(csv.name_any(), "widget.v2");
        assert_eq!(csv.namespace().as_deref(), Some("ops"));
        assert_eq!(csv.finalizers(), [FINALIZER]);
        assert_eq!(csv.status, None);
        assert_eq!(csv.spec.replaces.as_deref(), Some("widget.v1"));
        assert_eq!(csv.spec.version.as_deref(), Some("2.0.0"));
        let labels = csv.labels();
        assert_eq!(labels["tier"], "ops");
        assert_eq!(labels[MANAGED_BY_LABEL], "opcat");
        assert_eq!(labels[keys::csv::CATALOG_NAMESPACE_LABEL], "olm");
        assert_eq!(labels[keys::csv::CATALOG_NAME_LABEL], "catalog");
        let annotations = csv.annotations();
        assert_eq!(annotations["capabilities"], "Basic Install");
        assert_eq!(
            annotations[keys::csv::BUNDLE_IMAGE],
            "registry.example.com/widget-bundle@sha256:abc"
        );
        assert_eq!(annotations[keys::csv::CATALOG], "olm/catalog");
        assert_eq!(annotations[keys::csv::SUBSCRIPTION], "widgets");
        assert_eq!(annotations[keys::csv::INSTALL_PLAN], "install-abcde");
        assert_eq!(annotations[keys::csv::PACKAGE], "widget");
        assert_eq!(annotations[keys::csv::PROPERTIES], PROPERTIES);
    }

    #[test]
    fn a_first_install_replaces_nothing() {
        let plan = plan();
        let source = bundle_csv();
        let csv = build_csv(&CsvInputs {
            plan: &plan,
            entry: &entry(None),
            bundle_csv: &source,
            pinned_image: "x@sha256:abc",
            properties: PROPERTIES,
        });
        assert_eq!(csv.spec.replaces, None);
    }
}
