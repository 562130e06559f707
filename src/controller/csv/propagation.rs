//! Build (pure): the inputs of `pull_secrets::plan_namespace` from what the reconcile read, and
//! the plan. No client here.
//!
//! The ServiceAccounts a CSV uses come from its bundle for the CSV being reconciled
//! (`bundle::service_accounts`, manifests included). For the other CSVs of the catalog in the
//! namespace they come from their CSV objects (permissions, clusterPermissions, Deployments'
//! pod ServiceAccounts, `default` when a pod names none), plus every ServiceAccount read that is
//! labelled as theirs (a ServiceAccount manifest of their bundle, which opcat created for them):
//! the same set, without pulling every other bundle on every reconcile.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;

use crate::api::{CatalogSource, ClusterServiceVersion};
use crate::bundle::Bundle;
use crate::bundle::ownership::{CSV_LABEL, MANAGED_BY_LABEL, MANAGED_BY_VALUE, csv_label_value};
use crate::pull_secrets::{
    CatalogRef, InstalledCsv, NamespaceInput, NamespacePlan, NotPropagated, RestorePolicy,
    plan_namespace,
};

/// What the reconcile read about one catalog's pull secrets in one namespace.
#[derive(Clone, Debug)]
pub struct PropagationInputs {
    /// The catalog.
    pub catalog: CatalogRef,
    /// `spec.secrets` of its CatalogSource.
    pub secret_names: Vec<String>,
    /// The source Secrets that exist, by name.
    pub sources: BTreeMap<String, Secret>,
    /// CSVs of the catalog in the namespace that are installed and not being deleted.
    pub csvs: Vec<InstalledCsv>,
    /// The catalog's copies in the namespace plus Secrets holding a wanted copy name.
    pub secrets: Vec<Secret>,
    /// ServiceAccounts the CSVs use (and those of a CSV being uninstalled).
    pub service_accounts: Vec<ServiceAccount>,
    /// Consent.
    pub scope: Result<(), NotPropagated>,
    /// The CatalogSource opted out of scoping: copies hold whole secrets.
    pub copy_whole: bool,
}

impl PropagationInputs {
    /// The plan for `namespace`.
    pub fn plan(&self, namespace: &str, now: Timestamp, policy: &RestorePolicy) -> NamespacePlan {
        plan_namespace(&NamespaceInput {
            catalog: &self.catalog,
            namespace,
            secret_names: &self.secret_names,
            sources: &self.sources,
            csvs: &self.csvs,
            secrets: &self.secrets,
            service_accounts: &self.service_accounts,
            scope: &self.scope,
            copy_whole: self.copy_whole,
            now,
            restore_policy: policy,
        })
    }

    /// Every ServiceAccount name the CSVs use.
    pub fn used_service_accounts(&self) -> BTreeSet<String> {
        self.csvs
            .iter()
            .flat_map(|csv| csv.service_accounts.iter().cloned())
            .collect()
    }
}

/// `spec.secrets` of the CatalogSource (none when it is missing), without empty names.
pub fn secret_names(catalog_source: Option<&CatalogSource>) -> Vec<String> {
    catalog_source
        .map(|cs| cs.spec.secret_names().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// The copy names of `secret_names` for `catalog` (the names a Secret must not already hold
/// unless it is the copy).
pub fn wanted_copy_names(catalog: &CatalogRef, secret_names: &[String]) -> BTreeSet<String> {
    secret_names
        .iter()
        .filter(|name| !name.is_empty())
        .map(|name| catalog.copy_name(name))
        .collect()
}

/// The ServiceAccounts a CSV object uses, from its spec (see the module docs).
pub fn spec_service_accounts(csv: &ClusterServiceVersion) -> BTreeSet<String> {
    let bundle = Bundle {
        dir: PathBuf::new(),
        csv_file: String::new(),
        csv: csv.clone(),
        objects: Vec::new(),
        metadata: BTreeMap::new(),
        warnings: Vec::new(),
    };
    crate::bundle::service_accounts(&bundle).used
}

/// `csv` as an installed CSV using `service_accounts`, with the images of its spec (the
/// bundle's: opcat writes the CSV from it), the same whichever CSV of the namespace reconciles.
pub fn installed(csv: &ClusterServiceVersion, service_accounts: BTreeSet<String>) -> InstalledCsv {
    InstalledCsv {
        name: csv.name_any(),
        uid: csv.uid().unwrap_or_default(),
        service_accounts,
        images: crate::bundle::csv_images(csv),
        component_label: super::observe::component_labels(csv).into_keys().next(),
    }
}

/// Whether `catalog_source` opted out of scoping (none: copies stay scoped).
pub fn copy_whole(catalog_source: Option<&CatalogSource>) -> bool {
    crate::pull_secrets::copies_whole(
        catalog_source.and_then(|catalog_source| catalog_source.metadata.annotations.as_ref()),
    )
}

/// Adds to each CSV the ServiceAccounts among `read` that opcat created for it.
pub fn add_labelled_service_accounts(csvs: &mut [InstalledCsv], read: &[ServiceAccount]) {
    for sa in read {
        if let Some(owner) = created_for(sa) {
            for csv in csvs.iter_mut() {
                if csv_label_value(&csv.name) == owner {
                    csv.service_accounts.insert(sa.name_any());
                }
            }
        }
    }
}

/// The CSV label of an object opcat created, if it is one.
pub fn created_for(sa: &ServiceAccount) -> Option<&str> {
    let labels = sa.metadata.labels.as_ref()?;
    if labels.get(MANAGED_BY_LABEL).map(String::as_str) != Some(MANAGED_BY_VALUE) {
        return None;
    }
    labels.get(CSV_LABEL).map(String::as_str)
}

/// Whether opcat may server-side apply this existing ServiceAccount: only one it created
/// (labelled as opcat's). `default` and ServiceAccounts that existed before are only ever
/// given the attach edit, never applied or taken over.
pub fn may_apply(existing: Option<&ServiceAccount>) -> bool {
    existing.is_none_or(|sa| created_for(sa).is_some())
}

/// Copy names of the catalog that are no longer wanted in pod templates but that a live pod
/// template may still list: every catalog name known (`wanted` ∪ existing copies) minus
/// `pod_template_secrets`.
pub fn stale_pod_template_names(
    plan: &NamespacePlan,
    wanted: &BTreeSet<String>,
    secrets: &[Secret],
) -> BTreeSet<String> {
    let keep: BTreeSet<&String> = plan.pod_template_secrets.iter().collect();
    wanted
        .iter()
        .cloned()
        .chain(
            secrets
                .iter()
                .filter(|secret| plan.catalog.is_catalog_copy(secret))
                .map(ResourceExt::name_any),
        )
        .filter(|name| !keep.contains(name))
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;
    use crate::bundle::ownership::ownership_labels;

    fn sa(name: &str, labels: Option<BTreeMap<String, String>>) -> ServiceAccount {
        ServiceAccount {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels,
                ..ObjectMeta::default()
            },
            ..ServiceAccount::default()
        }
    }

    #[test]
    fn service_accounts_opcat_created_for_a_csv_count_as_used_by_it() {
        let mut csvs = vec![InstalledCsv {
            name: "op.v1".to_owned(),
            uid: "u".to_owned(),
            service_accounts: BTreeSet::from(["default".to_owned()]),
            images: BTreeSet::new(),
            component_label: None,
        }];
        let read = [
            sa("manifest-sa", Some(ownership_labels("op.v1", "ns"))),
            sa("someone-elses", None),
            sa("other-csv", Some(ownership_labels("other.v1", "ns"))),
        ];
        add_labelled_service_accounts(&mut csvs, &read);
        assert_eq!(
            csvs[0].service_accounts,
            BTreeSet::from(["default".to_owned(), "manifest-sa".to_owned()])
        );
    }

    #[test]
    fn only_absent_or_opcat_created_service_accounts_are_applied() {
        assert!(may_apply(None));
        assert!(may_apply(Some(&sa(
            "x",
            Some(ownership_labels("op.v1", "ns"))
        ))));
        assert!(!may_apply(Some(&sa("default", None))));
        assert!(!may_apply(Some(&sa("preexisting", None))));
    }
}
