//! Who copies belong to: the CatalogSource that names the source Secrets ([`CatalogRef`]), and
//! the ClusterServiceVersions that use and own the copies ([`CsvOwner`]).

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use super::names::{
    CATALOG_NAME_LABEL, MANAGED_LABEL, MANAGED_VALUE, SOURCE_NAME_LABEL, SOURCE_NAMESPACE_LABEL,
    copy_name, label_value,
};

/// `apiVersion` of the ClusterServiceVersions that own copies.
pub const CSV_API_VERSION: &str = "operators.coreos.com/v1alpha1";
/// `kind` of the objects that own copies.
pub const CSV_KIND: &str = "ClusterServiceVersion";
/// API group of [`CSV_KIND`].
pub const CSV_GROUP: &str = "operators.coreos.com";

/// Whether an ownerReference points at a CSV (any version): the owners opcat manages on a copy.
pub fn is_csv_owner(owner: &OwnerReference) -> bool {
    owner.kind == CSV_KIND
        && owner
            .api_version
            .split_once('/')
            .is_some_and(|(group, _)| group == CSV_GROUP)
}

/// A CatalogSource, by namespace and name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CatalogRef {
    /// Namespace of the CatalogSource, which is also the namespace of its `spec.secrets`.
    pub namespace: String,
    /// Name of the CatalogSource.
    pub name: String,
}

impl CatalogRef {
    /// Name of the copy of `secret_name` from this catalog (see [`copy_name`]).
    pub fn copy_name(&self, secret_name: &str) -> String {
        copy_name(&self.namespace, &self.name, secret_name)
    }

    /// Labels that identify a copy of `secret_name` from this catalog.
    pub fn copy_labels(&self, secret_name: &str) -> BTreeMap<String, String> {
        BTreeMap::from([
            (MANAGED_LABEL.to_owned(), MANAGED_VALUE.to_owned()),
            (
                SOURCE_NAMESPACE_LABEL.to_owned(),
                label_value(&self.namespace),
            ),
            (SOURCE_NAME_LABEL.to_owned(), label_value(secret_name)),
            (CATALOG_NAME_LABEL.to_owned(), label_value(&self.name)),
        ])
    }

    /// Label selector (`kubectl -l` syntax) for the watch/list of every copy of this catalog's
    /// secrets in a namespace.
    pub fn copies_selector(&self) -> String {
        format!(
            "{MANAGED_LABEL}={MANAGED_VALUE},{SOURCE_NAMESPACE_LABEL}={},{CATALOG_NAME_LABEL}={}",
            label_value(&self.namespace),
            label_value(&self.name)
        )
    }

    /// Whether `secret` carries our managed label and names this catalog.
    pub fn is_catalog_copy(&self, secret: &Secret) -> bool {
        let labels = secret.metadata.labels.as_ref();
        let label = |key: &str| {
            labels
                .and_then(|labels| labels.get(key))
                .map(String::as_str)
        };
        label(MANAGED_LABEL) == Some(MANAGED_VALUE)
            && label(SOURCE_NAMESPACE_LABEL) == Some(label_value(&self.namespace).as_str())
            && label(CATALOG_NAME_LABEL) == Some(label_value(&self.name).as_str())
    }
}

/// The `(source-namespace, source-name)` label values every copy of source Secret
/// `namespace/name` carries (see [`label_value`]).
pub fn source_label_values(namespace: &str, name: &str) -> (String, String) {
    (label_value(namespace), label_value(name))
}

/// Which source `copy` copies, as its labels say: its `(source-namespace, source-name)` label
/// values, comparable with [`source_label_values`]. `None` when a label is missing.
pub fn copy_source_labels(copy: &Secret) -> Option<(String, String)> {
    let labels = copy.metadata.labels.as_ref()?;
    Some((
        labels.get(SOURCE_NAMESPACE_LABEL)?.clone(),
        labels.get(SOURCE_NAME_LABEL)?.clone(),
    ))
}

impl fmt::Display for CatalogRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// An installed ClusterServiceVersion that uses the copies, as an owner.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CsvOwner {
    /// `metadata.name` of the CSV.
    pub name: String,
    /// `metadata.uid` of the CSV.
    pub uid: String,
}

impl CsvOwner {
    /// Non-controller, non-blocking ownerReference to this CSV.
    ///
    /// Not a controller reference: several CSVs share one copy, and none of them controls it.
    /// `blockOwnerDeletion: false`: opcat's CSV finalizer already decides when a copy goes; a
    /// blocking reference would make a foreground deletion of the CSV wait on a copy that another
    /// CSV still uses, and setting it requires permission to update the CSV's finalizers
    /// (`OwnerReferencesPermissionEnforcement`). OLM adds copied objects' owners the same way
    /// (`AddNonBlockingOwner`).
    pub fn owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: CSV_API_VERSION.to_owned(),
            kind: CSV_KIND.to_owned(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(false),
            block_owner_deletion: Some(false),
        }
    }
}
