//! Rendering the widget example for an install: where RBAC goes for each install mode, names,
//! labels and owners, Deployments (annotations, pull secrets), ServiceAccounts, CRDs, others.
//!
//! Golden files: `tests/fixtures/bundles/golden/`. After an intended change, regenerate them with
//! `OPCAT_UPDATE_GOLDEN=1 cargo test --test bundle_render` and review the diff.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;

use std::collections::BTreeMap;

use bundle_support::{
    CSV_UID, Install, deployment, find, fixture, keys, kind, load, name, namespace, of_kind,
    pod_annotations, pod_spec, pull_secret_names, targets, widget,
};
use kube::api::DynamicObject;
use opcat::bundle::RenderedBundle;
use opcat::bundle::ownership::{CSV_ANNOTATION, CSV_LABEL, RETAIN_LABEL, csv_selector};

const NS: &str = "widgets";
/// The CSV, and the name of its OperatorCondition with the Role and RoleBinding for it.
const CSV: &str = "widget-operator.v1.2.0";

/// The objects of `kind` rendered from the CSV's permissions (not the OperatorCondition's).
fn from_permissions<'a>(objects: &'a [DynamicObject], kind: &str) -> Vec<&'a DynamicObject> {
    of_kind(objects, kind)
        .into_iter()
        .filter(|object| name(object) != CSV)
        .collect()
}

fn labels(object: &DynamicObject) -> BTreeMap<String, String> {
    object.metadata.labels.clone().unwrap_or_default()
}

fn rules(object: &DynamicObject) -> &serde_json::Value {
    &object.data["rules"]
}

/// Checks `rendered` against `tests/fixtures/bundles/golden/<file>` (or rewrites it when
/// `OPCAT_UPDATE_GOLDEN` is set).
fn golden(file: &str, rendered: &RenderedBundle) {
    let objects: Vec<&DynamicObject> = rendered.in_apply_order().collect();
    let actual = serde_saphyr::to_string(&objects).unwrap();
    let path = fixture("golden").join(file);
    if std::env::var_os("OPCAT_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (create it with OPCAT_UPDATE_GOLDEN=1)",
            path.display()
        )
    });
    pretty_assertions::assert_eq!(expected, actual, "{} differs", path.display());
}

#[test]
fn own_namespace_rbac_stays_in_the_install_namespace() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::own(&bundle, NS).render(&bundle);
    let rbac = keys(&rendered.rbac);
    let namespaced: Vec<_> = rbac.iter().filter(|(_, ns, _)| ns.is_some()).collect();
    assert_eq!(
        namespaced.len(),
        6,
        "Role + RoleBinding for two accounts and for the OperatorCondition: {rbac:#?}"
    );
    assert!(
        namespaced
            .iter()
            .all(|(_, ns, _)| ns.as_deref() == Some(NS))
    );
    assert_eq!(
        of_kind(&rendered.rbac, "ClusterRole").len(),
        2,
        "clusterPermissions only"
    );
    assert_eq!(of_kind(&rendered.rbac, "ClusterRoleBinding").len(), 2);
    golden("widget-1.2.0-own-namespace.yaml", &rendered);
}

#[test]
fn single_namespace_rbac_is_repeated_in_the_target_namespace_without_owner() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::new(&bundle, NS, targets(&["team-a"])).render(&bundle);
    for role in of_kind(&rendered.rbac, "Role") {
        let owners = role.metadata.owner_references.as_ref();
        match namespace(role) {
            Some(NS) => assert_eq!(owners.unwrap().len(), 1, "owned in the install namespace"),
            Some("team-a") => assert!(
                owners.is_none(),
                "an ownerReference must not point into another namespace"
            ),
            other => panic!("Role in unexpected namespace {other:?}"),
        }
    }
    assert_eq!(from_permissions(&rendered.rbac, "Role").len(), 4);
    assert_eq!(from_permissions(&rendered.rbac, "RoleBinding").len(), 4);
    for binding in of_kind(&rendered.rbac, "RoleBinding") {
        assert_eq!(
            binding.data["subjects"][0]["namespace"], NS,
            "the subject is the service account in the install namespace"
        );
        assert_eq!(binding.data["roleRef"]["name"], name(binding));
    }
    let controller = deployment(&rendered, "widget-controller");
    assert_eq!(
        pod_annotations(&controller)["olm.targetNamespaces"],
        "team-a"
    );
    golden("widget-1.2.0-single-namespace.yaml", &rendered);
}

#[test]
fn all_namespaces_lifts_permissions_to_cluster_roles_with_namespace_access() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::all(&bundle, NS).render(&bundle);
    assert_eq!(
        from_permissions(&rendered.rbac, "Role").len(),
        2,
        "still in the install namespace"
    );
    assert_eq!(from_permissions(&rendered.rbac, "RoleBinding").len(), 2);
    let cluster_roles = of_kind(&rendered.rbac, "ClusterRole");
    assert_eq!(
        cluster_roles.len(),
        4,
        "two clusterPermissions + two lifted permissions"
    );
    let namespaces_rule = serde_json::json!({
        "apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]
    });
    // Each Role is lifted to a ClusterRole with the Role's rules plus the namespaces rule.
    for role in from_permissions(&rendered.rbac, "Role") {
        let mut lifted_rules = rules(role).as_array().unwrap().clone();
        lifted_rules.push(namespaces_rule.clone());
        let lifted: Vec<_> = cluster_roles
            .iter()
            .filter(|cluster_role| rules(cluster_role).as_array().unwrap() == &lifted_rules)
            .collect();
        assert_eq!(lifted.len(), 1, "lifted {}: {cluster_roles:#?}", name(role));
        let binding = find(&rendered.rbac, "ClusterRoleBinding", None, name(lifted[0]));
        let role_binding = find(&rendered.rbac, "RoleBinding", Some(NS), name(role));
        assert_eq!(binding.data["subjects"], role_binding.data["subjects"]);
        assert_eq!(binding.data["roleRef"]["kind"], "ClusterRole");
    }
    let controller = deployment(&rendered, "widget-controller");
    assert_eq!(pod_annotations(&controller)["olm.targetNamespaces"], "");
    golden("widget-1.2.0-all-namespaces.yaml", &rendered);
}

#[test]
fn rbac_names_are_deterministic_valid_and_distinct_across_installs() {
    let bundle = load(&widget("1.2.0"));
    let first = Install::all(&bundle, NS).render(&bundle);
    let again = Install::all(&bundle, NS).render(&bundle);
    assert_eq!(keys(&first.rbac), keys(&again.rbac));
    for object in &first.rbac {
        let object_name = name(object);
        assert!(
            opcat::pull_secrets::names::is_dns1123_subdomain(object_name),
            "{object_name}"
        );
    }
    let role = name(of_kind(&first.rbac, "Role")[0]);
    assert!(
        role.starts_with("widget-operator-v1-2-0-widget-"),
        "readable prefix: {role}"
    );
    // Role and RoleBinding share a name.
    find(&first.rbac, "RoleBinding", Some(NS), role);

    let elsewhere = Install::all(&bundle, "widgets-2").render(&bundle);
    let cluster_names = |rendered: &RenderedBundle| -> Vec<String> {
        rendered
            .rbac
            .iter()
            .filter(|o| namespace(o).is_none())
            .map(|o| name(o).to_owned())
            .collect()
    };
    for cluster_name in cluster_names(&first) {
        assert!(
            !cluster_names(&elsewhere).contains(&cluster_name),
            "{cluster_name} would be shared by two installs"
        );
    }
}

#[test]
fn a_changed_rule_set_gets_a_new_name() {
    let mut bundle = load(&widget("1.2.0"));
    let before = Install::own(&bundle, NS).render(&bundle);
    let spec = std::sync::Arc::make_mut(bundle.csv.spec.install.spec.as_mut().unwrap());
    spec.permissions.as_mut().unwrap()[0].rules[0]
        .verbs
        .push("deletecollection".to_owned());
    let after = Install::own(&bundle, NS).render(&bundle);
    let names = |rendered: &RenderedBundle| -> Vec<String> {
        from_permissions(&rendered.rbac, "Role")
            .iter()
            .map(|o| name(o).to_owned())
            .collect()
    };
    let (before, after) = (names(&before), names(&after));
    assert_eq!(
        before.iter().filter(|n| after.contains(n)).count(),
        1,
        "only the unchanged account keeps its Role name: {before:?} {after:?}"
    );
}

#[test]
fn every_object_is_labelled_and_owned_where_it_can_be() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::new(&bundle, NS, targets(&["team-a"])).render(&bundle);
    for object in rendered.in_apply_order() {
        let labels = labels(object);
        assert_eq!(
            labels["app.kubernetes.io/managed-by"], "opcat",
            "{object:?}"
        );
        assert_eq!(labels[CSV_LABEL], "widget-operator.v1.2.0");
        assert_eq!(labels["opcat.dev/csv-namespace"], NS);
        let owners = object.metadata.owner_references.clone().unwrap_or_default();
        if namespace(object) == Some(NS) {
            assert_eq!(owners.len(), 1, "{} {}", kind(object), name(object));
            let owner = &owners[0];
            assert_eq!(owner.api_version, "operators.coreos.com/v1alpha1");
            assert_eq!(owner.kind, "ClusterServiceVersion");
            assert_eq!(owner.name, "widget-operator.v1.2.0");
            assert_eq!(owner.uid, CSV_UID);
            assert_eq!(owner.controller, Some(false));
            assert_eq!(owner.block_owner_deletion, Some(false));
        } else {
            assert!(owners.is_empty(), "{} {}", kind(object), name(object));
        }
    }
    assert_eq!(
        csv_selector("widget-operator.v1.2.0", NS),
        "app.kubernetes.io/managed-by=opcat,opcat.dev/csv=widget-operator.v1.2.0,\
         opcat.dev/csv-namespace=widgets"
    );
}

#[test]
fn a_long_csv_name_is_hashed_in_the_label_and_kept_in_an_annotation() {
    let mut bundle = load(&widget("1.2.0"));
    let long = format!("widget-operator.{}.v1.2.0", "x".repeat(60));
    bundle.csv.metadata.name = Some(long.clone());
    let rendered = Install::own(&bundle, NS).render(&bundle);
    for object in rendered.in_apply_order() {
        let label = &labels(object)[CSV_LABEL];
        assert!(label.len() <= 63, "{label}");
        assert_ne!(label, &long);
        let annotations = object.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations[CSV_ANNOTATION], long, "{}", name(object));
        assert!(name(object).len() <= 253);
    }
}

#[test]
fn deployments_carry_olm_annotations_and_the_pull_secret_copies() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::own(&bundle, NS).render(&bundle);
    for deployment_name in ["widget-controller", "widget-dashboard"] {
        let deployment = deployment(&rendered, deployment_name);
        assert_eq!(deployment.metadata.namespace.as_deref(), Some(NS));
        let annotations = pod_annotations(&deployment);
        assert_eq!(annotations["olm.operatorGroup"], "og");
        assert_eq!(annotations["olm.operatorNamespace"], NS);
        assert_eq!(annotations["olm.targetNamespaces"], NS);
        assert_eq!(
            annotations["olm.skipRange"], ">=1.0.0 <1.2.0",
            "CSV annotations"
        );
        assert_eq!(annotations["capabilities"], "Basic Install");
        assert_eq!(
            pull_secret_names(pod_spec(&deployment)),
            [
                "acme-catalog-pull-abcdef0123",
                "vendor-catalog-pull-0123456789"
            ]
        );
        assert_eq!(
            deployment.spec.as_ref().unwrap().revision_history_limit,
            Some(1)
        );
        let labels = deployment.metadata.labels.clone().unwrap();
        assert_eq!(
            labels["app.kubernetes.io/name"], deployment_name,
            "bundle `label`"
        );
        assert_eq!(labels["app.kubernetes.io/part-of"], "widget-operator");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "opcat");
        for container in &pod_spec(&deployment).containers {
            let names: Vec<_> = container
                .env
                .iter()
                .flatten()
                .filter(|var| var.name == "OPERATOR_CONDITION_NAME")
                .map(|var| var.value.as_deref())
                .collect();
            assert_eq!(names, [Some(CSV)], "the OperatorCondition's name, once");
        }
    }
    let dashboard = deployment(&rendered, "widget-dashboard");
    assert_eq!(
        pod_spec(&dashboard).service_account_name,
        None,
        "runs as default"
    );
}

#[test]
fn the_operator_condition_names_the_deployments_and_lets_the_operator_write_it() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::own(&bundle, NS).render(&bundle);
    let condition = &rendered.operator_condition;
    assert_eq!(condition.metadata.name.as_deref(), Some(CSV));
    assert_eq!(condition.metadata.namespace.as_deref(), Some(NS));
    assert_eq!(
        condition.spec.deployments,
        Some(vec!["widget-controller".into(), "widget-dashboard".into()])
    );
    assert_eq!(
        condition.spec.service_accounts,
        Some(vec!["widget-auditor".into(), "widget-controller".into()]),
        "sorted, each once"
    );
    assert_eq!(condition.spec.conditions, None, "the operator's to set");
    let owners = condition.metadata.owner_references.as_ref().unwrap();
    assert_eq!(owners[0].uid, CSV_UID);
    assert!(
        rendered
            .in_apply_order()
            .all(|object| kind(object) != "OperatorCondition"),
        "applied on its own, before the Deployments"
    );
    let role = find(&rendered.rbac, "Role", Some(NS), CSV);
    assert_eq!(
        rules(role),
        &serde_json::json!([{
            "apiGroups": ["operators.coreos.com"],
            "resources": ["operatorconditions"],
            "resourceNames": [CSV],
            "verbs": ["get", "update", "patch"]
        }])
    );
    let binding = find(&rendered.rbac, "RoleBinding", Some(NS), CSV);
    assert_eq!(
        binding.data["subjects"],
        serde_json::json!([
            {"kind": "ServiceAccount", "name": "widget-auditor", "namespace": NS},
            {"kind": "ServiceAccount", "name": "widget-controller", "namespace": NS}
        ])
    );
    assert_eq!(binding.data["roleRef"]["name"], CSV);
}

#[test]
fn service_accounts_are_created_bare_and_default_never() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::own(&bundle, NS).render(&bundle);
    assert_eq!(
        keys(&rendered.service_accounts)
            .into_iter()
            .map(|(_, _, n)| n)
            .collect::<Vec<_>>(),
        ["widget-auditor", "widget-controller"]
    );
    for account in &rendered.service_accounts {
        assert!(account.data.get("imagePullSecrets").is_none());
    }
    assert!(rendered.bundle_pull_secrets.is_empty());
    assert!(rendered.service_account_names.used.contains("default"));
}

#[test]
fn crds_and_others_keep_their_content() {
    let bundle = load(&widget("1.2.0"));
    let rendered = Install::own(&bundle, NS).render(&bundle);
    let crd = find(
        &rendered.crds,
        "CustomResourceDefinition",
        None,
        "widgets.example.opcat.dev",
    );
    assert_eq!(labels(crd)[RETAIN_LABEL], "true");
    assert!(crd.metadata.owner_references.is_none());
    assert_eq!(crd.data["spec"]["names"]["kind"], "Widget");
    let service = find(
        &rendered.others,
        "Service",
        Some(NS),
        "widget-controller-metrics",
    );
    assert_eq!(
        labels(service)["app.kubernetes.io/name"],
        "widget-controller"
    );
    assert_eq!(service.data["spec"]["ports"][0]["port"], 8443);
}

#[test]
fn generated_names_are_valid_for_any_input() {
    use opcat::bundle::ownership::generated_name;
    use opcat::pull_secrets::names::is_dns1123_subdomain;
    let long = "A.b_c-".repeat(80);
    for readable in ["", "...", "--x--", "Op.V1_2", long.as_str()] {
        let generated = generated_name(readable, &["x"]);
        assert!(
            is_dns1123_subdomain(&generated),
            "{readable:?} → {generated:?}"
        );
    }
    assert_eq!(
        generated_name("Op.V1_2", &["x"]),
        generated_name("Op.V1_2", &["x"])
    );
    assert_ne!(
        generated_name("op", &["a-b", "c"]),
        generated_name("op", &["a", "b-c"]),
        "the hash covers the unambiguous tuple"
    );
    assert!(generated_name("Op.V1_2", &["x"]).starts_with("op-v1-2-"));
}
