//! Consent: may a catalog's pull secrets be copied into a namespace?
//!
//! Two parties decide. The catalog's admin may restrict the namespaces with a label selector in
//! the CatalogSource annotation [`PROPAGATE_TO_ANNOTATION`]; without it every namespace that
//! installs from the catalog is allowed. A namespace may opt out with the label
//! [`NAMESPACE_OPT_OUT_LABEL`]`=`[`NAMESPACE_OPT_OUT_VALUE`]. The selector fails closed: an
//! annotation that does not parse (or is empty) allows no namespace at all, since guessing the
//! admin's intent could leak credentials.
//!
//! Namespace labels are writable by whoever may edit the namespace, so a selector on an ordinary
//! label lets those people pull the credentials in (secretgen renamed its namespace selector to
//! `dangerous...` for this reason). The label `kubernetes.io/metadata.name`, set by the API
//! server and immutable, is always safe: `kubernetes.io/metadata.name in (team-a,team-b)`. It is
//! added here from the namespace name when absent, as the API server does.

use std::collections::BTreeMap;
use std::fmt;

use kube::core::SelectorExt;

#[cfg(doc)]
use super::names::NAMESPACE_OPT_OUT_VALUE;
use super::names::{NAMESPACE_OPT_IN_VALUE, NAMESPACE_OPT_OUT_LABEL, PROPAGATE_TO_ANNOTATION};
use super::owners::CatalogRef;
use super::selector::{SelectorError, parse_selector};
use super::vocabulary::{
    REASON_INVALID_PROPAGATION_SELECTOR, REASON_NAMESPACE_NOT_SELECTED, REASON_NAMESPACE_OPTED_OUT,
};

/// Label the API server sets on every namespace to its name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Why a catalog's pull secrets are not copied into a namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotPropagated {
    /// The namespace carries the opt-out label.
    OptedOut { namespace: String, value: String },
    /// The catalog's selector does not select the namespace.
    NotSelected {
        namespace: String,
        catalog: CatalogRef,
        selector: String,
    },
    /// The catalog's selector annotation is unusable; no namespace is allowed.
    InvalidSelector {
        catalog: CatalogRef,
        selector: String,
        error: SelectorError,
    },
}

impl NotPropagated {
    /// Condition reason for `PullSecretsNotPropagated`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::OptedOut { .. } => REASON_NAMESPACE_OPTED_OUT,
            Self::NotSelected { .. } => REASON_NAMESPACE_NOT_SELECTED,
            Self::InvalidSelector { .. } => REASON_INVALID_PROPAGATION_SELECTOR,
        }
    }

    /// Whether consent was withdrawn (existing copies are removed) rather than unknowable (an
    /// invalid selector: nothing new is copied, and what exists stays until the admin fixes the
    /// annotation, instead of revoking credentials everywhere over a typo).
    pub fn withdraws_copies(&self) -> bool {
        !matches!(self, Self::InvalidSelector { .. })
    }
}

impl fmt::Display for NotPropagated {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::OptedOut { namespace, value } => write!(
                f,
                "namespace {namespace} opted out of pull-secret propagation with label \
                 {NAMESPACE_OPT_OUT_LABEL}={value}"
            ),
            Self::NotSelected {
                namespace,
                catalog,
                selector,
            } => write!(
                f,
                "namespace {namespace} is not selected by annotation {PROPAGATE_TO_ANNOTATION}=\
                 {selector:?} on catalog source {catalog}"
            ),
            Self::InvalidSelector {
                catalog,
                selector,
                error,
            } => write!(
                f,
                "annotation {PROPAGATE_TO_ANNOTATION}={selector:?} on catalog source {catalog} is \
                 not a valid label selector ({error}); its pull secrets are copied nowhere until \
                 it is fixed"
            ),
        }
    }
}

/// Decides whether `catalog` (with `catalog_annotations`) may copy its pull secrets into
/// `namespace` (with `namespace_labels`).
pub fn propagation_allowed(
    catalog: &CatalogRef,
    catalog_annotations: Option<&BTreeMap<String, String>>,
    namespace: &str,
    namespace_labels: Option<&BTreeMap<String, String>>,
) -> Result<(), NotPropagated> {
    let selector = catalog_annotations
        .and_then(|annotations| annotations.get(PROPAGATE_TO_ANNOTATION))
        .map(|text| {
            parse_selector(text)
                .map(|parsed| (text, parsed))
                .map_err(|error| NotPropagated::InvalidSelector {
                    catalog: catalog.clone(),
                    selector: text.clone(),
                    error,
                })
        })
        .transpose()?;
    let mut labels = namespace_labels.cloned().unwrap_or_default();
    // `disabled` opts out; so does any value other than `enabled`: the owner meant something.
    if let Some(value) = labels.get(NAMESPACE_OPT_OUT_LABEL)
        && value != NAMESPACE_OPT_IN_VALUE
    {
        return Err(NotPropagated::OptedOut {
            namespace: namespace.to_owned(),
            value: value.clone(),
        });
    }
    labels
        .entry(NAMESPACE_NAME_LABEL.to_owned())
        .or_insert_with(|| namespace.to_owned());
    match selector {
        Some((text, parsed)) if !parsed.matches(&labels) => Err(NotPropagated::NotSelected {
            namespace: namespace.to_owned(),
            catalog: catalog.clone(),
            selector: text.clone(),
        }),
        _ => Ok(()),
    }
}
