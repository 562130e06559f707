//! Which CSVs an event concerns (pure over the stores): the mappers of the controller's
//! secondary watches. Each returns the CSVs opcat manages that must look again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};

use super::observe::catalog_of;
use crate::api::{CatalogSource, OperatorGroup};
use crate::bundle::ownership::{CSV_ANNOTATION, CSV_NAMESPACE_LABEL};
use crate::controller::keys::csv as csv_keys;
use crate::controller::source_secrets::SecretKey;
use crate::controller::stored_copy::StoredCopy;
use crate::controller::stored_namespace::StoredNamespace;
use crate::controller::stored_object::{StoredCsv, StoredSubscription};
use crate::controller::stores::Indexed;
use crate::pull_secrets::names::{PROPAGATE_TO_ANNOTATION, PULL_SECRET_SCOPE_ANNOTATION};
use crate::pull_secrets::owners::is_csv_owner;

type Refs = Vec<ObjectRef<StoredCsv>>;

fn refs<'a>(csvs: impl Iterator<Item = &'a Arc<StoredCsv>>) -> Refs {
    csvs.map(|csv| ObjectRef::from_obj(csv.as_ref())).collect()
}

/// CSVs in `namespace`.
pub fn in_namespace(csvs: &Indexed<StoredCsv>, namespace: &str) -> Refs {
    refs(csvs.in_namespace(namespace).iter())
}

/// The CSV a Deployment with metadata `deployment` belongs to: its CSV ownerReference, else its
/// ownership labels.
pub fn deployment(deployment: &ObjectMeta) -> Refs {
    let Some(namespace) = deployment.namespace.clone() else {
        return Vec::new();
    };
    let labels = |key: &str| {
        deployment
            .labels
            .as_ref()
            .and_then(|labels| labels.get(key))
    };
    let mut found: Refs = deployment
        .owner_references
        .iter()
        .flatten()
        .filter(|owner| is_csv_owner(owner))
        .map(|owner| ObjectRef::new(&owner.name).within(&namespace))
        .collect();
    if found.is_empty()
        && labels(CSV_NAMESPACE_LABEL) == Some(&namespace)
        && let Some(name) = deployment
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.get(CSV_ANNOTATION))
            .or_else(|| labels(crate::bundle::ownership::CSV_LABEL))
    {
        found.push(ObjectRef::new(name).within(&namespace));
    }
    found
}

/// The CSV that `csv` replaces (it may now go `Replacing` or `Deleting`).
pub fn replaced(csv: &StoredCsv) -> Refs {
    match (csv.spec.replaces.as_deref(), csv.namespace()) {
        (Some(replaces), Some(namespace)) if !replaces.is_empty() => {
            vec![ObjectRef::new(replaces).within(&namespace)]
        }
        _ => Vec::new(),
    }
}

/// CSVs in the OperatorGroup's namespace.
pub fn operator_group(csvs: &Indexed<StoredCsv>, group: &OperatorGroup) -> Refs {
    group
        .namespace()
        .map(|namespace| in_namespace(csvs, &namespace))
        .unwrap_or_default()
}

/// CSVs installed for the Subscription.
pub fn subscription(csvs: &Indexed<StoredCsv>, subscription: &StoredSubscription) -> Refs {
    let (Some(namespace), name) = (subscription.namespace(), subscription.name_any()) else {
        return Vec::new();
    };
    refs(
        csvs.in_namespace(&namespace)
            .iter()
            .filter(|csv| csv.annotation(csv_keys::SUBSCRIPTION) == Some(name.as_str())),
    )
}

/// CSVs installed from the CatalogSource `namespace/name`.
pub fn from_catalog(csvs: &Indexed<StoredCsv>, namespace: &str, name: &str) -> Refs {
    refs(csvs.state().iter().filter(|csv| {
        catalog_of(csv)
            .is_some_and(|catalog| catalog.namespace == namespace && catalog.name == name)
    }))
}

/// What of a CatalogSource concerns its CSVs: `spec.secrets`, the propagation selector and the
/// pull-secret scope (whole copies or not). Status updates (every poll) do not.
pub fn catalog_fingerprint(catalog: &CatalogSource) -> String {
    let selector = catalog.annotations().get(PROPAGATE_TO_ANNOTATION);
    let scope = catalog.annotations().get(PULL_SECRET_SCOPE_ANNOTATION);
    let secrets: Vec<&str> = catalog.spec.secret_names().collect();
    serde_json::json!([secrets, selector, scope]).to_string()
}

/// What of a Subscription concerns its CSVs: `spec.config`. Status updates (the Subscription
/// reconciler mirrors the CSV's report there) do not.
pub fn subscription_fingerprint(subscription: &StoredSubscription) -> String {
    serde_json::to_string(&subscription.spec.config).unwrap_or_default()
}

/// Maps events of a kind to CSVs only when the part of the object the CSVs depend on changed
/// (or the object is seen for the first time): a status update of a CatalogSource or
/// Subscription is not a reason to look at every CSV installed from it again.
pub struct Changes<K> {
    csvs: Indexed<StoredCsv>,
    fingerprint: fn(&K) -> String,
    targets: fn(&Indexed<StoredCsv>, &K) -> Refs,
    seen: Mutex<HashMap<(String, String), String>>,
}

impl<K: kube::Resource> Changes<K> {
    pub fn new(
        csvs: Indexed<StoredCsv>,
        fingerprint: fn(&K) -> String,
        targets: fn(&Indexed<StoredCsv>, &K) -> Refs,
    ) -> Self {
        Self {
            csvs,
            fingerprint,
            targets,
            seen: Mutex::default(),
        }
    }

    /// The CSVs to reconcile for this event.
    pub fn map(&self, object: &K) -> Refs {
        let key = (object.namespace().unwrap_or_default(), object.name_any());
        let fingerprint = (self.fingerprint)(object);
        let changed = match self.seen.lock() {
            Ok(mut seen) => seen.insert(key, fingerprint.clone()) != Some(fingerprint),
            Err(_) => true,
        };
        if changed {
            (self.targets)(&self.csvs, object)
        } else {
            Vec::new()
        }
    }
}

/// CSVs installed from `catalog`.
pub fn catalog(csvs: &Indexed<StoredCsv>, catalog: &CatalogSource) -> Refs {
    from_catalog(
        csvs,
        &catalog.namespace().unwrap_or_default(),
        &catalog.name_any(),
    )
}

/// CSVs from the catalogs that list the source Secret `key` in `spec.secrets` (rotation
/// fan-out: every namespace that holds a copy).
pub fn source_secret(
    csvs: &Indexed<StoredCsv>,
    catalogs: &Store<CatalogSource>,
    key: &SecretKey,
) -> Refs {
    let (namespace, secret) = key;
    catalogs
        .state()
        .iter()
        .filter(|catalog| {
            catalog.namespace().as_deref() == Some(namespace.as_str())
                && catalog.spec.secret_names().any(|name| name == secret)
        })
        .flat_map(|catalog| from_catalog(csvs, namespace, &catalog.name_any()))
        .collect()
}

/// CSVs in the namespace of a copy (a deleted or edited copy is restored).
pub fn copy(csvs: &Indexed<StoredCsv>, copy: &StoredCopy) -> Refs {
    copy.namespace()
        .map(|namespace| in_namespace(csvs, &namespace))
        .unwrap_or_default()
}

/// CSVs in the namespace (its opt-out label may have changed).
pub fn namespace(csvs: &Indexed<StoredCsv>, namespace: &StoredNamespace) -> Refs {
    in_namespace(csvs, namespace.name())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    use crate::controller::deployment_rollout::DeploymentRollout;

    use super::*;
    use crate::controller::namespace_index::sorted_names as names;

    fn store<K>(objects: Vec<K>) -> Store<K>
    where
        K: kube::Resource<DynamicType = ()> + Clone + 'static,
    {
        let (reader, mut writer) = kube::runtime::reflector::store::<K>();
        for object in objects {
            writer.apply_watcher_event(&kube::runtime::watcher::Event::Apply(object));
        }
        reader
    }

    /// A CSV as the store holds it.
    fn csv(namespace: &str, name: &str, catalog: &str) -> StoredCsv {
        let mut csv = crate::api::ClusterServiceVersion::new(name, Default::default());
        csv.metadata.namespace = Some(namespace.to_owned());
        csv.metadata.annotations = Some(BTreeMap::from([(
            csv_keys::CATALOG.to_owned(),
            catalog.to_owned(),
        )]));
        StoredCsv::from(csv)
    }

    fn catalog(secrets: &[&str]) -> CatalogSource {
        let mut catalog = CatalogSource::new("private", Default::default());
        catalog.metadata.namespace = Some("olm".to_owned());
        catalog.spec.secrets = Some(secrets.iter().map(|s| (*s).to_owned()).collect());
        catalog
    }

    #[test]
    fn a_source_secret_change_reaches_every_csv_of_every_catalog_that_lists_it() {
        let csvs = Indexed::of([
            csv("team-a", "op.v1", "olm/private"),
            csv("team-b", "op.v1", "olm/private"),
            csv("team-c", "op.v1", "olm/other"),
        ]);
        let catalogs = store(vec![catalog(&["creds"])]);
        let key = ("olm".to_owned(), "creds".to_owned());
        assert_eq!(
            names(source_secret(&csvs, &catalogs, &key)),
            ["team-a/op.v1", "team-b/op.v1"]
        );
        let unrelated = ("olm".to_owned(), "other-secret".to_owned());
        assert!(source_secret(&csvs, &catalogs, &unrelated).is_empty());
    }

    #[test]
    fn catalog_events_trigger_only_when_secrets_or_the_selector_change() {
        let csvs = Indexed::of([csv("team-a", "op.v1", "olm/private")]);
        let changes = Changes::new(csvs, catalog_fingerprint, super::catalog);
        let mut catalog = catalog(&["creds"]);
        assert_eq!(changes.map(&catalog).len(), 1, "first sight");
        catalog.status = Some(Default::default());
        assert!(
            changes.map(&catalog).is_empty(),
            "a status update is not a change"
        );
        catalog.spec.secrets = Some(vec!["creds".to_owned(), "mirror".to_owned()]);
        assert_eq!(changes.map(&catalog).len(), 1);
        catalog.metadata.annotations = Some(BTreeMap::from([(
            PROPAGATE_TO_ANNOTATION.to_owned(),
            "team=a".to_owned(),
        )]));
        assert_eq!(changes.map(&catalog).len(), 1);
    }

    /// The metadata the store keeps of `deployment`.
    fn stored(deployment: Deployment) -> ObjectMeta {
        DeploymentRollout::from(deployment).full_meta()
    }

    #[test]
    fn a_deployment_maps_to_its_owning_csv_or_its_labels() {
        let owned = Deployment {
            metadata: ObjectMeta {
                name: Some("op".to_owned()),
                namespace: Some("ns".to_owned()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "operators.coreos.com/v1alpha1".to_owned(),
                    kind: "ClusterServiceVersion".to_owned(),
                    name: "op.v1".to_owned(),
                    uid: "u".to_owned(),
                    ..OwnerReference::default()
                }]),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        assert_eq!(
            deployment(&stored(owned)),
            vec![ObjectRef::new("op.v1").within("ns")]
        );
        let labelled = Deployment {
            metadata: ObjectMeta {
                name: Some("op".to_owned()),
                namespace: Some("ns".to_owned()),
                labels: Some(crate::bundle::ownership::ownership_labels("op.v2", "ns")),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        assert_eq!(
            deployment(&stored(labelled)),
            vec![ObjectRef::new("op.v2").within("ns")]
        );
        let foreign = Deployment {
            metadata: ObjectMeta {
                name: Some("x".to_owned()),
                namespace: Some("ns".to_owned()),
                labels: Some(BTreeMap::new()),
                ..ObjectMeta::default()
            },
            ..Deployment::default()
        };
        assert!(deployment(&stored(foreign)).is_empty());
    }
}
