//! Copies are created first and read only when the create says the name is taken (issue 12: a
//! GET per wanted copy missing from the label-selected cache, two per first install, only to
//! find out that nothing was there). A `POST` never overwrites, so creating first is safe; the
//! 409 `AlreadyExists` is then answered by one GET:
//!
//! - the Secret is the same catalog's copy (opcat's label and catalog labels; the cache had not
//!   seen it yet): it is taken as written;
//! - anything else is a foreign Secret holding the copy's name (DESIGN invariant 3): its name is
//!   remembered here, the reconcile fails with the 409 and is retried, and from then on the
//!   reconcile reads that name (GET) so that the plan sees the foreign Secret and reports the
//!   `PullSecretConflict` condition, as it always did. A name is forgotten once a read finds no
//!   foreign Secret there.
//!
//! Touches nothing: the memory and the test of ownership are pure.

use std::collections::BTreeSet;
use std::sync::Mutex;

use k8s_openapi::api::core::v1::Secret;

use crate::pull_secrets::names::{
    CATALOG_NAME_LABEL, MANAGED_LABEL, MANAGED_VALUE, SOURCE_NAMESPACE_LABEL,
};

/// Names of copies a foreign Secret was found to hold, by namespace.
#[derive(Debug, Default)]
pub struct NameClashes {
    names: Mutex<BTreeSet<(String, String)>>,
}

impl NameClashes {
    /// The remembered clashing names in `namespace`.
    pub fn in_namespace(&self, namespace: &str) -> Vec<String> {
        let Ok(names) = self.names.lock() else {
            return Vec::new();
        };
        names
            .range((namespace.to_owned(), String::new())..)
            .take_while(|(ns, _)| ns == namespace)
            .map(|(_, name)| name.clone())
            .collect()
    }

    /// Remembers that a foreign Secret holds `namespace/name`.
    pub fn record(&self, namespace: &str, name: &str) {
        if let Ok(mut names) = self.names.lock() {
            names.insert((namespace.to_owned(), name.to_owned()));
        }
    }

    /// Forgets `namespace/name` (no foreign Secret there any more).
    pub fn forget(&self, namespace: &str, name: &str) {
        if let Ok(mut names) = self.names.lock() {
            names.remove(&(namespace.to_owned(), name.to_owned()));
        }
    }
}

/// Whether `existing` is opcat's copy from the same catalog as `desired`: it carries opcat's
/// label and the same source-namespace and catalog labels. Only then may a create that found
/// the name taken treat it as its own (DESIGN invariant 3).
pub fn same_catalog_copy(desired: &Secret, existing: &Secret) -> bool {
    let label = |secret: &Secret, key: &str| {
        secret
            .metadata
            .labels
            .as_ref()
            .and_then(|labels| labels.get(key))
            .cloned()
    };
    label(existing, MANAGED_LABEL).as_deref() == Some(MANAGED_VALUE)
        && [SOURCE_NAMESPACE_LABEL, CATALOG_NAME_LABEL]
            .iter()
            .all(|key| {
                let wanted = label(desired, key);
                wanted.is_some() && label(existing, key) == wanted
            })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn secret(labels: &[(&str, &str)]) -> Secret {
        Secret {
            metadata: ObjectMeta {
                name: Some("copy".into()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect::<BTreeMap<_, _>>(),
                ),
                ..ObjectMeta::default()
            },
            ..Secret::default()
        }
    }

    #[test]
    fn only_opcats_copy_of_the_same_catalog_is_taken_as_its_own() {
        let ours = [
            (MANAGED_LABEL, MANAGED_VALUE),
            (SOURCE_NAMESPACE_LABEL, "olm"),
            (CATALOG_NAME_LABEL, "examples"),
        ];
        let desired = secret(&ours);
        assert!(same_catalog_copy(&desired, &secret(&ours)));
        assert!(!same_catalog_copy(&desired, &secret(&[])), "foreign");
        assert!(
            !same_catalog_copy(&desired, &secret(&ours[1..])),
            "without opcat's label"
        );
        let other_catalog = [
            (MANAGED_LABEL, MANAGED_VALUE),
            (SOURCE_NAMESPACE_LABEL, "olm"),
            (CATALOG_NAME_LABEL, "other"),
        ];
        assert!(!same_catalog_copy(&desired, &secret(&other_catalog)));
    }

    #[test]
    fn clashes_are_remembered_per_namespace_until_forgotten() {
        let clashes = NameClashes::default();
        clashes.record("b", "copy-1");
        clashes.record("a", "copy-2");
        clashes.record("a", "copy-1");
        clashes.record("ab", "copy-3");
        assert_eq!(clashes.in_namespace("a"), ["copy-1", "copy-2"]);
        clashes.forget("a", "copy-1");
        assert_eq!(clashes.in_namespace("a"), ["copy-2"]);
        assert!(clashes.in_namespace("c").is_empty());
    }
}
