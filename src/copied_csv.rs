//! Pure: the copies of a ClusterServiceVersion that OLM keeps in the target namespaces of its
//! OperatorGroup ("copied CSVs"), so that tenants see the operator in their namespace (the
//! console's per-namespace "Installed Operators"). No client.
//!
//! Follows OLM (`pkg/controller/operators/olm/operatorgroup.go`: `csvCopyPrototype`,
//! `copyableCSVHash`, `copyToNamespace`, `ensureCSVsInNamespaces`; `IsUncopiable` in
//! operator-framework/api): a copy has the original's name, spec and status; its annotations
//! without `olm.targetNamespaces` and `kubectl.kubernetes.io/last-applied-configuration`; its
//! labels without the `operators.coreos.com/` component labels, plus `olm.copiedFrom=<operator
//! namespace>`; status reason `Copied` and message "The operator is running in <ns> but is
//! managing this namespace" (the phase and everything else follow the original). Like OLM since
//! 0.28, a copy carries hashes of what it was written from (`nonStatusCopyHash`,
//! `statusCopyHash`), so a reader of the copies' metadata alone knows which are current: a
//! converged cluster is checked without reading or writing a copy.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::api::csv_reasons;
use crate::api::olm_keys::{COPIED_FROM, TARGET_NAMESPACES};
use crate::api::{ClusterServiceVersion, ClusterServiceVersionStatus};

/// Annotation on a copy: hash of the non-status part it was written from.
pub const NON_STATUS_HASH: &str = "olm.operatorframework.io/nonStatusCopyHash";
/// Annotation on a copy: hash of the status it was last written with.
pub const STATUS_HASH: &str = "olm.operatorframework.io/statusCopyHash";
// Prefix of OLM's component labels (`operators.coreos.com/<package>.<namespace>`), which a copy
// must not carry: it is not a component of the install in its namespace.
pub use crate::api::operator::COMPONENT_LABEL_PREFIX;
/// The annotation `kubectl apply` keeps (large; OLM drops it from copies).
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Reasons that keep a CSV from being copied (OLM's `uncopiableReasons`).
const UNCOPIABLE_REASONS: [&str; 8] = [
    csv_reasons::COPIED,
    csv_reasons::INVALID_INSTALL_MODES,
    csv_reasons::NO_TARGET_NAMESPACES,
    csv_reasons::UNSUPPORTED_OPERATOR_GROUP,
    csv_reasons::NO_OPERATOR_GROUP,
    csv_reasons::TOO_MANY_OPERATOR_GROUPS,
    csv_reasons::INTER_OPERATOR_GROUP_OWNER_CONFLICT,
    csv_reasons::CANNOT_MODIFY_STATIC_OPERATOR_GROUP_PROVIDED_APIS,
];

/// The status message of a copy of a CSV installed in `namespace` (OLM's text).
pub fn copied_message(namespace: &str) -> String {
    format!("The operator is running in {namespace} but is managing this namespace")
}

/// Whether a CSV with `status` is not copied now (OLM's `IsUncopiable`): no phase yet, or a
/// reason saying its OperatorGroup does not fit. Its existing copies are left as they are.
pub fn is_uncopiable(status: Option<&ClusterServiceVersionStatus>) -> bool {
    let Some(status) = status.filter(|status| status.phase.is_some()) else {
        return true;
    };
    status
        .reason
        .as_deref()
        .is_some_and(|reason| UNCOPIABLE_REASONS.contains(&reason))
}

/// Whether `csv` is a copy (OLM's `IsCopied`): labelled `olm.copiedFrom`, or reason `Copied`.
pub fn is_copy(csv: &ClusterServiceVersion) -> bool {
    csv.metadata
        .labels
        .as_ref()
        .is_some_and(|labels| labels.contains_key(COPIED_FROM))
        || csv
            .status
            .as_ref()
            .and_then(|status| status.reason.as_deref())
            == Some(csv_reasons::COPIED)
}

/// The copy of `original` (installed in its namespace) for any target namespace, without
/// namespace and hashes (OLM's `csvCopyPrototype`).
pub fn prototype(original: &ClusterServiceVersion) -> ClusterServiceVersion {
    let from = original.metadata.namespace.clone().unwrap_or_default();
    let annotations: BTreeMap<String, String> = original
        .metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(key, _)| {
            !matches!(
                key.as_str(),
                TARGET_NAMESPACES | LAST_APPLIED | NON_STATUS_HASH | STATUS_HASH
            )
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let mut labels: BTreeMap<String, String> = original
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(key, _)| !key.starts_with(COMPONENT_LABEL_PREFIX))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    labels.insert(COPIED_FROM.to_owned(), from.clone());
    let mut status = original.status.clone().unwrap_or_default();
    status.reason = Some(csv_reasons::COPIED.to_owned());
    status.message = Some(copied_message(&from));
    let mut copy = ClusterServiceVersion::new(
        original.metadata.name.as_deref().unwrap_or_default(),
        original.spec.clone(),
    );
    copy.metadata.annotations = Some(annotations);
    copy.metadata.labels = Some(labels);
    copy.status = Some(status);
    copy
}

/// The hashes a copy written from a prototype carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hashes {
    /// Of name, labels, annotations and spec.
    pub non_status: String,
    /// Of the status.
    pub status: String,
}

impl Hashes {
    /// The hashes of `prototype` (from [`prototype`]).
    pub fn of(prototype: &ClusterServiceVersion) -> Self {
        let meta = &prototype.metadata;
        Self {
            non_status: hash(&(&meta.name, &meta.labels, &meta.annotations, &prototype.spec)),
            status: hash(&prototype.status),
        }
    }
}

/// Hex of the first 16 bytes of the SHA-256 of `value`'s JSON (maps serialise sorted).
fn hash(value: &impl Serialize) -> String {
    let mut hasher = Sha256::new();
    // Serialising plain data into a Vec cannot fail; if it ever did, the hash of nothing only
    // makes the copy look out of date, and it is written again.
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    hasher.update(&bytes);
    hex::encode(&hasher.finalize()[..16])
}

/// The copy to write in `namespace`: the prototype there, with its non-status hash (the status
/// hash is written after the status, see [`Plan`]).
pub fn for_namespace(
    prototype: &ClusterServiceVersion,
    namespace: &str,
    hashes: &Hashes,
) -> ClusterServiceVersion {
    let mut copy = prototype.clone();
    copy.metadata.namespace = Some(namespace.to_owned());
    copy.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(NON_STATUS_HASH.to_owned(), hashes.non_status.clone());
    copy
}

/// Which namespaces an OperatorGroup's targets put copies in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach<'a> {
    /// `status.namespaces` is `[""]`: every namespace.
    AllNamespaces,
    /// The named namespaces.
    Namespaces(&'a [String]),
}

impl<'a> Reach<'a> {
    /// The reach of an OperatorGroup's resolved `status.namespaces`.
    pub fn of(targets: &'a [String]) -> Self {
        if targets.iter().any(String::is_empty) {
            Self::AllNamespaces
        } else {
            Self::Namespaces(targets)
        }
    }
}

/// The namespaces that should hold a copy of a CSV installed in `origin`: its targets that exist
/// and are not being deleted (`live`), except `origin`; none for an AllNamespaces install when
/// `copies_disabled` (OLMConfig `spec.features.disableCopiedCSVs`).
pub fn wanted_namespaces<'n>(
    origin: &str,
    reach: Reach<'_>,
    live: impl IntoIterator<Item = &'n str>,
    copies_disabled: bool,
) -> BTreeSet<&'n str> {
    let live = live.into_iter().filter(|namespace| *namespace != origin);
    match reach {
        Reach::AllNamespaces if copies_disabled => BTreeSet::new(),
        Reach::AllNamespaces => live.collect(),
        Reach::Namespaces(targets) => live
            .filter(|namespace| targets.iter().any(|target| target == namespace))
            .collect(),
    }
}

/// What an existing copy says it was written from (its hash annotations; `None` when absent).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written<'a> {
    pub non_status: Option<&'a str>,
    pub status: Option<&'a str>,
}

/// The writes that bring the copies of one CSV in line, by namespace, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// No copy yet: create it, then write its status, then its status hash.
    pub create: Vec<String>,
    /// The non-status part is out of date: apply it (then the status, if that is too).
    pub update: Vec<String>,
    /// The status is out of date: write it, then its status hash.
    pub status: Vec<String>,
    /// A copy where none is wanted: delete it.
    pub delete: Vec<String>,
}

impl Plan {
    /// Whether nothing needs writing.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty()
            && self.update.is_empty()
            && self.status.is_empty()
            && self.delete.is_empty()
    }
}

/// Compares the wanted namespaces with the existing copies (by namespace). `keep` names
/// namespaces whose existing copies are neither written nor deleted (being deleted with their
/// namespace). With `copiable` false (see [`is_uncopiable`]), no copy is created or written;
/// unwanted ones are still deleted.
pub fn plan<'a>(
    wanted: &BTreeSet<&str>,
    existing: &BTreeMap<&str, Written<'a>>,
    keep: &BTreeSet<&str>,
    hashes: &Hashes,
    copiable: bool,
) -> Plan {
    let mut plan = Plan::default();
    for namespace in wanted {
        match existing.get(namespace) {
            None if copiable => plan.create.push((*namespace).to_owned()),
            None => {}
            Some(_) if !copiable => {}
            Some(written) => {
                if written.non_status != Some(hashes.non_status.as_str()) {
                    plan.update.push((*namespace).to_owned());
                }
                if written.status != Some(hashes.status.as_str()) {
                    plan.status.push((*namespace).to_owned());
                }
            }
        }
    }
    plan.delete = existing
        .keys()
        .filter(|namespace| !wanted.contains(*namespace) && !keep.contains(*namespace))
        .map(|namespace| (*namespace).to_owned())
        .collect();
    plan
}

#[cfg(test)]
#[path = "copied_csv_tests.rs"]
mod tests;
