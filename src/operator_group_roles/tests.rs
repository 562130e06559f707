//! Expected names and labels are values OLM produced on real clusters (quoted below), or
//! computed outside Rust (Python `hashlib.sha224`, FNV-1a written out) where no cluster value
//! was at hand.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::api::cluster_service_version::{
    ApiServiceDefinitions, ApiServiceDescription, CrdDescription, CustomResourceDefinitions,
};

fn key(kind: &str, version: &str, group: &str) -> ApiKey {
    ApiKey {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

#[test]
fn gvk_hashes_are_olms_fnv_1a_in_hex_without_padding() {
    // An OpenShift cluster's `edit` role aggregating knative-operator's roles: labels
    // `olm.opgroup.permissions/aggregate-to-4fa8c5d8e33af72a-edit` on the role of
    // knativeeventings.operator.knative.dev and `...-fceaacb4e1c6ac8c-edit` on knativeservings.
    let eventing = key("KnativeEventing", "v1alpha1", "operator.knative.dev");
    assert_eq!(
        eventing.gvk_string(),
        "KnativeEventing.v1alpha1.operator.knative.dev"
    );
    assert_eq!(eventing.gvk_hash(), "4fa8c5d8e33af72a");
    assert_eq!(
        eventing.aggregation_label(Level::Edit),
        "olm.opgroup.permissions/aggregate-to-4fa8c5d8e33af72a-edit"
    );
    let serving = key("KnativeServing", "v1alpha1", "operator.knative.dev");
    assert_eq!(serving.gvk_hash(), "fceaacb4e1c6ac8c");
    // Go's %x drops leading zeros: 15 digits here.
    assert_eq!(
        key("KnativeEventing", "v1", "operator.knative.dev").gvk_hash(),
        "d133997d1c4978b"
    );
    assert_eq!(
        key("Widget", "v1alpha1", "example.opcat.dev").gvk_hash(),
        "ef5f4faf7752f381"
    );
}

#[test]
fn group_role_names_are_olms_base62_sha224_of_namespace_group_and_level() {
    // Roles OLM made for OperatorGroup grafana-operator/grafana-operator on a cluster.
    assert_eq!(
        group_role_name("grafana-operator", "grafana-operator", Level::Admin),
        "olm.og.grafana-operator.admin-1ebp7lNSBr25U99APXPVsPKuhgcwrlhDPNjLqu"
    );
    assert_eq!(
        group_role_name("grafana-operator", "grafana-operator", Level::Edit),
        "olm.og.grafana-operator.edit-c1VBngs10rZz3MnjUcLXnblIWjNOe3q81rsqV4"
    );
    assert_eq!(
        group_role_name("team-a", "team-a-group", Level::View),
        "olm.og.team-a-group.view-1fYtc4XY4IvEeFqz5JqGSggX3Hv49KevwV7GIC"
    );
}

#[test]
fn a_long_group_name_is_cut_so_the_role_name_fits_253_characters() {
    let group = "g".repeat(300);
    let name = group_role_name("ns", &group, Level::Admin);
    assert_eq!(name.len(), 253);
    assert_eq!(
        name,
        format!(
            "olm.og.{}.admin-3xRGQP4nqpDzflNyaqvYMsVEZHTQCs0zSkapYU",
            "g".repeat(201)
        )
    );
}

fn spec() -> ClusterServiceVersionSpec {
    ClusterServiceVersionSpec {
        custom_resource_definitions: Some(CustomResourceDefinitions {
            owned: Some(vec![CrdDescription {
                name: "widgets.example.opcat.dev".into(),
                version: "v1alpha1".into(),
                kind: "Widget".into(),
                ..CrdDescription::default()
            }]),
            required: Some(vec![CrdDescription {
                name: "gadgets.example.opcat.dev".into(),
                version: "v1".into(),
                kind: "Gadget".into(),
                ..CrdDescription::default()
            }]),
        }),
        api_service_definitions: Some(Box::new(ApiServiceDefinitions {
            owned: Some(vec![ApiServiceDescription {
                name: "reports".into(),
                group: "metrics.example.com".into(),
                version: "v1beta1".into(),
                kind: "Report".into(),
                ..ApiServiceDescription::default()
            }]),
            required: None,
        })),
        ..ClusterServiceVersionSpec::default()
    }
}

#[test]
fn owned_crds_and_api_services_are_provided_required_ones_are_not() {
    let apis = provided_apis(&spec()).unwrap();
    let keys: Vec<String> = apis.iter().map(|api| api.key.gvk_string()).collect();
    assert_eq!(
        keys,
        [
            "Widget.v1alpha1.example.opcat.dev",
            "Report.v1beta1.metrics.example.com"
        ]
    );
    assert_eq!(apis[0].owner.kind, "CustomResourceDefinition");
    assert_eq!(apis[0].owner.name, "widgets.example.opcat.dev");
    assert_eq!(apis[1].owner.kind, "APIService");
    assert_eq!(apis[1].owner.name, "v1beta1.metrics.example.com");

    let mut bad = spec();
    bad.custom_resource_definitions
        .as_mut()
        .unwrap()
        .owned
        .as_mut()
        .unwrap()[0]
        .name = "widgets".into();
    assert_eq!(
        provided_apis(&bad).unwrap_err().to_string(),
        "owned CustomResourceDefinition \"widgets\" is not named <plural>.<group>"
    );
}

fn rule(role: &ClusterRole) -> &PolicyRule {
    &role.rules.as_ref().unwrap()[0]
}

#[test]
fn a_crd_gets_admin_edit_view_and_crdview_roles_owned_by_it() {
    let apis = provided_apis(&spec()).unwrap();
    let roles = api_roles(&apis[0], "crd-uid");
    let names: Vec<&str> = roles
        .iter()
        .map(|role| role.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "widgets.example.opcat.dev-v1alpha1-admin",
            "widgets.example.opcat.dev-v1alpha1-edit",
            "widgets.example.opcat.dev-v1alpha1-view",
            "widgets.example.opcat.dev-v1alpha1-crdview",
        ]
    );
    assert_eq!(rule(&roles[0]).verbs, ["*"]);
    assert_eq!(
        rule(&roles[1]).verbs,
        ["create", "update", "patch", "delete"]
    );
    assert_eq!(rule(&roles[2]).verbs, ["get", "list", "watch"]);
    for role in &roles[..3] {
        assert_eq!(
            rule(role).api_groups.as_deref(),
            Some(&["example.opcat.dev".to_owned()][..])
        );
        assert_eq!(
            rule(role).resources.as_deref(),
            Some(&["widgets".to_owned()][..])
        );
        assert_eq!(rule(role).resource_names, None);
    }
    let crdview = rule(&roles[3]);
    assert_eq!(crdview.verbs, ["get"]);
    assert_eq!(
        crdview.resource_names.as_deref(),
        Some(&["widgets.example.opcat.dev".to_owned()][..])
    );
    let labels = roles[3].metadata.labels.as_ref().unwrap();
    assert_eq!(
        labels.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "app.kubernetes.io/managed-by",
            "olm.managed",
            "olm.opgroup.permissions/aggregate-to-ef5f4faf7752f381-view",
            "rbac.authorization.k8s.io/aggregate-to-view",
        ]
    );
    let admin_labels = roles[0].metadata.labels.as_ref().unwrap();
    assert_eq!(
        admin_labels["rbac.authorization.k8s.io/aggregate-to-admin"],
        "true"
    );
    assert_eq!(
        admin_labels["olm.opgroup.permissions/aggregate-to-ef5f4faf7752f381-admin"],
        "true"
    );
    for role in &roles {
        let owner = &role.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (
                owner.api_version.as_str(),
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str()
            ),
            (
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                "widgets.example.opcat.dev",
                "crd-uid"
            )
        );
        assert_eq!(owner.controller, Some(false));
        assert_eq!(owner.block_owner_deletion, Some(false));
    }
}

#[test]
fn an_api_service_gets_admin_edit_view_on_its_resource_without_crdview() {
    let apis = provided_apis(&spec()).unwrap();
    let roles = api_roles(&apis[1], "svc-uid");
    let names: Vec<&str> = roles
        .iter()
        .map(|role| role.metadata.name.as_deref().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "reports-v1beta1-admin",
            "reports-v1beta1-edit",
            "reports-v1beta1-view"
        ]
    );
    assert_eq!(
        rule(&roles[0]).resources.as_deref(),
        Some(&["reports".to_owned()][..])
    );
    assert_eq!(
        roles[0].metadata.owner_references.as_ref().unwrap()[0].name,
        "v1beta1.metrics.example.com"
    );
}

#[test]
fn group_roles_aggregate_each_provided_api_in_a_stable_order() {
    let apis: BTreeSet<ApiKey> = [
        key("Widget", "v1alpha1", "example.opcat.dev"),
        key("KnativeServing", "v1alpha1", "operator.knative.dev"),
    ]
    .into();
    let roles = group_roles("team-a", "team-a-group", &apis);
    assert_eq!(roles.len(), 3);
    let admin = &roles[0];
    assert_eq!(
        admin.metadata.name.as_deref(),
        Some("olm.og.team-a-group.admin-89bLlAGwGkE3veNEfmCldXS922S0AFKmrNJnJb")
    );
    let labels = admin.metadata.labels.as_ref().unwrap();
    assert_eq!(labels["olm.owner"], "team-a-group");
    assert_eq!(labels["olm.owner.kind"], "OperatorGroup");
    assert_eq!(labels["olm.owner.namespace"], "team-a");
    assert_eq!(labels["olm.managed"], "true");
    assert!(!labels.contains_key("rbac.authorization.k8s.io/aggregate-to-admin"));
    assert!(admin.metadata.owner_references.is_none());
    assert!(
        admin.rules.is_none(),
        "the aggregation controller fills them"
    );
    let selected: Vec<String> = admin
        .aggregation_rule
        .as_ref()
        .unwrap()
        .cluster_role_selectors
        .as_ref()
        .unwrap()
        .iter()
        .map(|selector| {
            let labels = selector.match_labels.as_ref().unwrap();
            assert_eq!(labels.len(), 1);
            let (key, value) = labels.iter().next().unwrap();
            assert_eq!(value, "true");
            key.clone()
        })
        .collect();
    assert_eq!(
        selected,
        [
            // By group, version, kind.
            "olm.opgroup.permissions/aggregate-to-ef5f4faf7752f381-admin",
            "olm.opgroup.permissions/aggregate-to-fceaacb4e1c6ac8c-admin",
        ]
    );
    assert_eq!(
        group_roles("team-a", "team-a-group", &apis),
        roles,
        "deterministic"
    );
}

#[test]
fn a_group_without_apis_grants_nothing() {
    for role in group_roles("team-a", "team-a-group", &BTreeSet::new()) {
        assert_eq!(role.aggregation_rule, None);
        assert_eq!(role.rules, Some(Vec::new()));
    }
}

#[test]
fn the_provided_apis_annotation_is_sorted_and_appears_once_there_is_an_api() {
    let apis: BTreeSet<ApiKey> = [
        key("Widget", "v1alpha1", "example.opcat.dev"),
        key("KnativeServing", "v1alpha1", "operator.knative.dev"),
        key("EtcdCluster", "v1beta2", "etcd.database.coreos.com"),
    ]
    .into();
    assert_eq!(
        provided_apis_annotation(&apis),
        "EtcdCluster.v1beta2.etcd.database.coreos.com,\
         KnativeServing.v1alpha1.operator.knative.dev,\
         Widget.v1alpha1.example.opcat.dev"
    );
    let none = BTreeSet::new();
    assert_eq!(desired_annotation(None, &none), None);
    assert_eq!(
        desired_annotation(Some("Widget.v1alpha1.example.opcat.dev"), &none),
        Some(String::new())
    );
    assert_eq!(
        desired_annotation(None, &apis).as_deref(),
        Some(provided_apis_annotation(&apis).as_str())
    );
}

#[test]
fn only_the_roles_opcat_made_for_a_group_name_that_group() {
    let apis: BTreeSet<ApiKey> = [key("Widget", "v1", "example.opcat.dev")].into();
    let roles = group_roles("team-a", "group", &apis);
    let group_of = |name: &str, labels: &BTreeMap<String, String>| {
        role_group(name, |key| labels.get(key).map(String::as_str))
            .map(|(namespace, group)| (namespace.to_owned(), group.to_owned()))
    };
    for role in &roles {
        let labels = role.metadata.labels.clone().unwrap();
        let name = role.metadata.name.as_deref().unwrap();
        assert_eq!(
            group_of(name, &labels),
            Some(("team-a".to_owned(), "group".to_owned()))
        );
        // Another role with the group's labels (one OLM made, or anyone's): not the group's.
        let mut foreign = labels.clone();
        foreign.remove(MANAGED_BY_LABEL);
        assert_eq!(group_of(name, &foreign), None, "{name}");
        assert_eq!(group_of("olm.og.group.admin-x", &labels), None);
        // The labels of another group, or of the same group in another namespace.
        let mut other = labels.clone();
        other.insert(OWNER_NAMESPACE_LABEL.to_owned(), "team-b".to_owned());
        assert_eq!(group_of(name, &other), None, "{name}");
    }
    // A provided API's role is not a group's.
    let api = provided_apis(&spec()).unwrap().remove(0);
    for role in api_roles(&api, "uid") {
        let labels = role.metadata.labels.clone().unwrap();
        assert_eq!(
            group_of(role.metadata.name.as_deref().unwrap(), &labels),
            None
        );
    }
}
