//! How rendered objects say who they belong to, and the names opcat generates for them.
//!
//! # Labels
//!
//! Every object rendered for a CSV carries
//!
//! | key | value |
//! |---|---|
//! | `app.kubernetes.io/managed-by` | `opcat` |
//! | `opcat.dev/csv` | the CSV's name, through [`label_value`] (readable prefix + hash when longer than 63 characters) |
//! | `opcat.dev/csv-namespace` | the install namespace |
//!
//! plus the annotation `opcat.dev/csv` with the full CSV name when the label had to be hashed.
//! The controller finds "everything of this CSV" with [`csv_selector`]. CRDs also carry
//! `opcat.dev/retain-on-uninstall=true`: opcat never deletes a CRD (deleting it deletes every
//! custom resource of its kind), and the orphan sweep skips objects with that label.
//!
//! # Owner references
//!
//! Objects in the install namespace get a non-controller, non-blocking ownerReference to the CSV
//! ([`CsvOwner::owner_reference`], as OLM's `AddNonBlockingOwner`). `controller: true` is not
//! needed for the controller's `.owns()` watches: kube-runtime 5 maps a child to every owner
//! whose `apiVersion` and `kind` match (`ObjectRef::from_owner_ref`), whatever `controller` says;
//! and a controller reference would make the hand-over of a Deployment from one CSV to the CSV
//! that replaces it fail ("only one reference can have Controller set to true"). Objects in other
//! namespaces and cluster-scoped objects get labels only: an ownerReference must point into the
//! object's own namespace, and the garbage collector deletes objects whose owner it cannot find.
//!
//! # Generated names
//!
//! RBAC objects rendered from `permissions`/`clusterPermissions` are named
//! `<csv>-<service account>-<hash>` ([`generated_name`]): the readable part is there for humans
//! (cut, and with every character other than `[a-z0-9]` turned into `-`), the hash covers the
//! scope, install namespace, CSV, service account and rules. A changed rule set gets a new name
//! (the old object is swept), and two installs of the same operator in different namespaces never
//! share a cluster-scoped name. The result is a DNS-1123 subdomain of at most 253 characters.

use std::collections::BTreeMap;

use crate::pull_secrets::names::{HASH_LEN, MAX_NAME_LEN, label_value, short_hash};

pub use crate::pull_secrets::CsvOwner;

/// Label naming the tool that manages the object.
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Value of [`MANAGED_BY_LABEL`] on everything opcat renders.
pub const MANAGED_BY_VALUE: &str = "opcat";
/// Label: the CSV an object was rendered for (through [`label_value`]).
pub const CSV_LABEL: &str = "opcat.dev/csv";
/// Label: the namespace of that CSV (the install namespace).
pub const CSV_NAMESPACE_LABEL: &str = "opcat.dev/csv-namespace";
/// Annotation with the full CSV name, set when [`CSV_LABEL`] had to be shortened.
pub const CSV_ANNOTATION: &str = "opcat.dev/csv";
/// Label on objects opcat never deletes (CRDs).
pub const RETAIN_LABEL: &str = "opcat.dev/retain-on-uninstall";
/// Value of [`RETAIN_LABEL`].
pub const RETAIN_VALUE: &str = "true";

// Bumping this renames every generated RBAC object; the orphan sweep deletes the old ones.
const NAME_SCHEME: &str = "opcat.dev/rbac-name/v1";

/// Value of [`CSV_LABEL`] for a CSV name.
pub fn csv_label_value(csv_name: &str) -> String {
    label_value(csv_name)
}

/// The labels every object rendered for `csv_name` in `install_namespace` carries.
pub fn ownership_labels(csv_name: &str, install_namespace: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_VALUE.to_owned()),
        (CSV_LABEL.to_owned(), csv_label_value(csv_name)),
        (
            CSV_NAMESPACE_LABEL.to_owned(),
            label_value(install_namespace),
        ),
    ])
}

/// The annotations every object rendered for `csv_name` carries: the full name, when the label
/// had to be shortened.
pub fn ownership_annotations(csv_name: &str) -> BTreeMap<String, String> {
    if csv_label_value(csv_name) == csv_name {
        BTreeMap::new()
    } else {
        BTreeMap::from([(CSV_ANNOTATION.to_owned(), csv_name.to_owned())])
    }
}

/// Label selector (`kubectl -l` syntax) of every object rendered for `csv_name` in
/// `install_namespace`.
pub fn csv_selector(csv_name: &str, install_namespace: &str) -> String {
    ownership_labels(csv_name, install_namespace)
        .into_iter()
        .map(|(key, value)| format!("{key}={value}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `<readable>-<hash>`: `readable` made DNS-safe and cut to fit, the hash over `hashed`. Always
/// a valid DNS-1123 subdomain of at most 253 characters.
pub fn generated_name(readable: &str, hashed: &[&str]) -> String {
    let mut parts = Vec::with_capacity(hashed.len() + 1);
    parts.push(NAME_SCHEME);
    parts.extend_from_slice(hashed);
    let hash = short_hash(&parts);
    let mut safe = String::with_capacity(readable.len());
    for c in readable.chars().map(|c| c.to_ascii_lowercase()) {
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() {
            c
        } else {
            '-'
        };
        // Collapse runs of '-' so the readable part stays readable.
        if !(c == '-' && safe.ends_with('-')) {
            safe.push(c);
        }
    }
    safe.truncate(MAX_NAME_LEN - 1 - HASH_LEN);
    let safe = safe.trim_matches('-');
    if safe.is_empty() {
        hash
    } else {
        format!("{safe}-{hash}")
    }
}
