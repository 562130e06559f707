//! What opcat left in the cluster: every object of the kinds it creates or touches that carries
//! an `opcat.dev/` label or annotation. Reads only.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;

use crate::cluster::{Cluster, ClusterError, Olm};

/// Whether the metadata carries a label or annotation of opcat's.
pub fn marked(
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> bool {
    let has = |map: Option<&BTreeMap<String, String>>| {
        map.into_iter()
            .flatten()
            .any(|(key, _)| key.starts_with("opcat.dev/"))
    };
    has(labels) || has(annotations)
}

/// `Kind namespace/name` (or `Kind name` for cluster-scoped objects).
pub fn describe(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

/// Every object marked by opcat, as `Kind namespace/name`, sorted.
pub async fn marked_by_opcat(cluster: &Cluster) -> Result<BTreeSet<String>, ClusterError> {
    let mut found = BTreeSet::new();
    typed::<Secret>(cluster, &mut found).await?;
    typed::<ServiceAccount>(cluster, &mut found).await?;
    typed::<Deployment>(cluster, &mut found).await?;
    typed::<Service>(cluster, &mut found).await?;
    typed::<ConfigMap>(cluster, &mut found).await?;
    typed::<Role>(cluster, &mut found).await?;
    typed::<RoleBinding>(cluster, &mut found).await?;
    typed::<ClusterRole>(cluster, &mut found).await?;
    typed::<ClusterRoleBinding>(cluster, &mut found).await?;
    typed::<CustomResourceDefinition>(cluster, &mut found).await?;
    for kind in Olm::ALL {
        for object in cluster.olm_list(kind, None).await? {
            let meta: ObjectMeta =
                serde_json::from_value(object["metadata"].clone()).unwrap_or_default();
            if marked(meta.labels.as_ref(), meta.annotations.as_ref()) {
                found.insert(describe(
                    object["kind"].as_str().unwrap_or_default(),
                    meta.namespace.as_deref(),
                    meta.name.as_deref().unwrap_or_default(),
                ));
            }
        }
    }
    Ok(found)
}

async fn typed<K>(cluster: &Cluster, found: &mut BTreeSet<String>) -> Result<(), ClusterError>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug,
{
    for object in cluster.list::<K>(None, "").await? {
        let meta = object.meta();
        if marked(meta.labels.as_ref(), meta.annotations.as_ref()) {
            found.insert(describe(
                &K::kind(&()),
                meta.namespace.as_deref(),
                meta.name.as_deref().unwrap_or_default(),
            ));
        }
    }
    Ok(())
}

/// The kind of a `Kind namespace/name` entry.
pub fn kind_of(entry: &str) -> &str {
    entry.split(' ').next().unwrap_or_default()
}

/// Groups entries by kind: `Deployment: a, b`.
pub fn by_kind(entries: &BTreeSet<String>) -> Vec<String> {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for entry in entries {
        let (kind, name) = entry.split_once(' ').unwrap_or((entry, ""));
        groups.entry(kind).or_default().push(name);
    }
    groups
        .into_iter()
        .map(|(kind, names)| format!("{kind}: {}", names.join(", ")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_opcat_dev_keys_mark_an_object() {
        let labels: BTreeMap<String, String> =
            [("opcat.dev/csv".to_owned(), "x".to_owned())].into();
        let other: BTreeMap<String, String> =
            [("app.kubernetes.io/name".to_owned(), "x".to_owned())].into();
        assert!(marked(Some(&labels), None));
        assert!(marked(None, Some(&labels)));
        assert!(!marked(Some(&other), Some(&other)));
        assert!(!marked(None, None));
    }

    #[test]
    fn entries_group_by_kind() {
        let entries: BTreeSet<String> = [
            "Deployment widgets/a".to_owned(),
            "Deployment widgets/b".to_owned(),
            "CustomResourceDefinition widgets.example.opcat.dev".to_owned(),
        ]
        .into();
        assert_eq!(
            by_kind(&entries),
            [
                "CustomResourceDefinition: widgets.example.opcat.dev",
                "Deployment: widgets/a, widgets/b"
            ]
        );
        assert_eq!(kind_of("Deployment widgets/a"), "Deployment");
    }
}
