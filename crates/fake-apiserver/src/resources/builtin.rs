//! The builtin kinds opcat touches, with the list/map semantics from `k8s.io/api` markers
//! (`+listType`, `+listMapKey`, `+patchMergeKey`, `+mapType`, `+structType`) for the paths
//! where SMP and SSA behave differently from "replace the value".

use std::sync::Arc;

use serde_json::json;

use super::ResourceInfo;
use crate::schema::Schema;

const NAME_NAMESPACE: &[&str] = &["metadata.name", "metadata.namespace"];

pub(super) struct Spec {
    pub(super) group: &'static str,
    pub(super) version: &'static str,
    pub(super) kind: &'static str,
    pub(super) plural: &'static str,
    pub(super) short_names: &'static [&'static str],
    pub(super) categories: &'static [&'static str],
    pub(super) namespaced: bool,
    pub(super) has_status: bool,
    pub(super) tracks_generation: bool,
    pub(super) extra_field_labels: &'static [&'static str],
    pub(super) schema: fn() -> Schema,
    pub(super) create_only: bool,
}

/// A kind with no status, generation, categories or extra field labels, and the base schema.
pub(super) fn plain(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    short_names: &'static [&'static str],
    namespaced: bool,
) -> Spec {
    Spec {
        group,
        version,
        kind,
        plural,
        short_names,
        categories: &[],
        namespaced,
        has_status: false,
        tracks_generation: false,
        extra_field_labels: &[],
        schema: base,
        create_only: false,
    }
}

/// Paths every object has (`ObjectMeta`).
pub(crate) fn object_meta(root: &mut Schema, prefix: &str) {
    root.set_all(
        prefix,
        &[
            ("labels", Schema::string_map()),
            ("annotations", Schema::string_map()),
            ("finalizers", Schema::set_list()),
            ("ownerReferences", Schema::map_list(&["uid"])),
            ("managedFields", Schema::atomic_list()),
        ],
    );
}

pub(super) fn base() -> Schema {
    let mut s = Schema::open_struct();
    object_meta(&mut s, "metadata");
    s
}

fn container_fields(root: &mut Schema, list: &str) {
    let tcp = json!("TCP");
    root.set(list, Schema::map_list(&["name"]));
    root.set_all(
        &format!("{list}[]"),
        &[
            ("env", Schema::map_list(&["name"])),
            ("envFrom", Schema::atomic_list()),
            (
                "ports",
                Schema::map_list(&["containerPort", "protocol"]).with_key_default("protocol", tcp),
            ),
            ("volumeMounts", Schema::map_list(&["mountPath"])),
            ("volumeDevices", Schema::map_list(&["devicePath"])),
            ("args", Schema::atomic_list()),
            ("command", Schema::atomic_list()),
            ("resources.limits", Schema::string_map()),
            ("resources.requests", Schema::string_map()),
        ],
    );
}

/// `PodTemplateSpec` at `prefix` (`spec.template` for a Deployment).
fn pod_template(root: &mut Schema, prefix: &str) {
    object_meta(root, &format!("{prefix}.metadata"));
    let spec = format!("{prefix}.spec");
    container_fields(root, &format!("{spec}.containers"));
    container_fields(root, &format!("{spec}.initContainers"));
    root.set_all(
        &spec,
        &[
            ("imagePullSecrets", Schema::map_list(&["name"])),
            ("volumes", Schema::map_list(&["name"])),
            ("tolerations", Schema::atomic_list()),
            ("nodeSelector", Schema::Atomic),
            ("hostAliases", Schema::map_list(&["ip"])),
        ],
    );
}

pub(super) fn conditions(root: &mut Schema) {
    root.set("status.conditions", Schema::map_list(&["type"]));
}

fn deployment() -> Schema {
    let mut s = base();
    s.set("spec.selector", Schema::Atomic);
    pod_template(&mut s, "spec.template");
    conditions(&mut s);
    s
}

fn service_account() -> Schema {
    let mut s = base();
    // `+listType=atomic`, no patch strategy: replaced whole by SMP and SSA.
    s.set("imagePullSecrets", Schema::atomic_list());
    s.set("secrets", Schema::map_list(&["name"]));
    s
}

fn secret() -> Schema {
    let mut s = base();
    s.set("data", Schema::string_map());
    s.set("stringData", Schema::string_map());
    s
}

fn config_map() -> Schema {
    let mut s = base();
    s.set("data", Schema::string_map());
    s.set("binaryData", Schema::string_map());
    s
}

fn service() -> Schema {
    let mut s = base();
    s.set(
        "spec.ports",
        Schema::map_list(&["port", "protocol"]).with_key_default("protocol", json!("TCP")),
    );
    s.set("spec.selector", Schema::Atomic);
    s.set("spec.clusterIPs", Schema::atomic_list());
    s.set("spec.ipFamilies", Schema::atomic_list());
    conditions(&mut s);
    s
}

fn namespace() -> Schema {
    let mut s = base();
    s.set("spec.finalizers", Schema::atomic_list());
    conditions(&mut s);
    s
}

fn role() -> Schema {
    let mut s = base();
    s.set("rules", Schema::atomic_list());
    s
}

fn binding() -> Schema {
    let mut s = base();
    s.set("subjects", Schema::atomic_list());
    s.set("roleRef", Schema::Atomic);
    s
}

fn crd() -> Schema {
    let mut s = base();
    s.set("spec.versions", Schema::atomic_list());
    s.set("status.storedVersions", Schema::atomic_list());
    conditions(&mut s);
    s
}

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

fn specs() -> Vec<Spec> {
    let mut specs = vec![
        Spec {
            has_status: true,
            extra_field_labels: &["status.phase"],
            schema: namespace,
            ..plain("", "v1", "Namespace", "namespaces", &["ns"], false)
        },
        Spec {
            extra_field_labels: &["type"],
            schema: secret,
            ..plain("", "v1", "Secret", "secrets", &[], true)
        },
        Spec {
            schema: service_account,
            ..plain("", "v1", "ServiceAccount", "serviceaccounts", &["sa"], true)
        },
        Spec {
            schema: config_map,
            ..plain("", "v1", "ConfigMap", "configmaps", &["cm"], true)
        },
        Spec {
            has_status: true,
            categories: &["all"],
            extra_field_labels: &["spec.clusterIP", "spec.type"],
            schema: service,
            ..plain("", "v1", "Service", "services", &["svc"], true)
        },
        Spec {
            extra_field_labels: EVENT_FIELDS,
            ..plain("", "v1", "Event", "events", &["ev"], true)
        },
        Spec {
            has_status: true,
            tracks_generation: true,
            categories: &["all"],
            schema: deployment,
            ..plain("apps", "v1", "Deployment", "deployments", &["deploy"], true)
        },
        Spec {
            schema: role,
            ..plain(
                "rbac.authorization.k8s.io",
                "v1",
                "Role",
                "roles",
                &[],
                true,
            )
        },
        Spec {
            schema: binding,
            ..plain(
                "rbac.authorization.k8s.io",
                "v1",
                "RoleBinding",
                "rolebindings",
                &[],
                true,
            )
        },
        Spec {
            schema: role,
            ..plain(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRole",
                "clusterroles",
                &[],
                false,
            )
        },
        Spec {
            schema: binding,
            ..plain(
                "rbac.authorization.k8s.io",
                "v1",
                "ClusterRoleBinding",
                "clusterrolebindings",
                &[],
                false,
            )
        },
        Spec {
            has_status: true,
            tracks_generation: true,
            categories: super::registration::API_EXTENSIONS,
            schema: crd,
            ..plain(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
                "customresourcedefinitions",
                &["crd", "crds"],
                false,
            )
        },
        plain("coordination.k8s.io", "v1", "Lease", "leases", &[], true),
        // Pods only as objects (no kubelet): the package API's serving label.
        plain("", "v1", "Pod", "pods", &["po"], true),
        Spec {
            extra_field_labels: &[
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "reason",
                "reportingController",
                "type",
            ],
            ..plain("events.k8s.io", "v1", "Event", "events", &["ev"], true)
        },
    ];
    specs.extend(super::registration::specs());
    specs.extend(
        crate::auth::reviews::KINDS
            .iter()
            .map(|&(group, plural, kind, namespaced)| Spec {
                create_only: true,
                ..plain(group, "v1", kind, plural, &[], namespaced)
            }),
    );
    specs
}

/// Every builtin resource.
pub(crate) fn all() -> Vec<ResourceInfo> {
    specs()
        .into_iter()
        .map(|s| {
            let mut field_labels = NAME_NAMESPACE.to_vec();
            field_labels.extend_from_slice(s.extra_field_labels);
            ResourceInfo {
                group: s.group.to_string(),
                versions: vec![s.version.to_string()],
                kind: s.kind.to_string(),
                plural: s.plural.to_string(),
                singular: s.kind.to_lowercase(),
                short_names: s.short_names.iter().map(|n| (*n).to_string()).collect(),
                categories: s.categories.iter().map(|c| (*c).to_string()).collect(),
                namespaced: s.namespaced,
                has_status: s.has_status,
                tracks_generation: s.tracks_generation,
                builtin: true,
                field_labels,
                create_only: s.create_only,
                schema: Arc::new((s.schema)()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ListKind;

    #[test]
    fn pull_secret_lists_have_the_upstream_semantics() {
        let sa = service_account();
        assert_eq!(sa.field("imagePullSecrets").list_kind(), &ListKind::Atomic);
        let d = deployment();
        let pod = d.field("spec").field("template").field("spec");
        assert!(
            matches!(pod.field("imagePullSecrets").list_kind(), ListKind::Map { keys, .. } if keys == &["name"])
        );
        assert!(matches!(
            pod.field("containers").items().field("env").list_kind(),
            ListKind::Map { .. }
        ));
    }
}
