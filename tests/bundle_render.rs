//! Rendering bundles for an install: where RBAC goes for each install mode, names, labels and
//! owners, Deployments (annotations, pull secrets), ServiceAccounts, CRDs and other objects.
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
use opcat::bundle::ownership::{CSV_ANNOTATION, CSV_LABEL, RETAIN_LABEL, csv_selector};
use opcat::bundle::{RenderError, RenderedBundle, TargetNamespaces};

const NS: &str = "widgets";

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
        4,
        "Role + RoleBinding for two accounts: {rbac:#?}"
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
    assert_eq!(of_kind(&rendered.rbac, "Role").len(), 4);
    assert_eq!(of_kind(&rendered.rbac, "RoleBinding").len(), 4);
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
        of_kind(&rendered.rbac, "Role").len(),
        2,
        "still in the install namespace"
    );
    assert_eq!(of_kind(&rendered.rbac, "RoleBinding").len(), 2);
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
    for role in of_kind(&rendered.rbac, "Role") {
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
    let spec = bundle.csv.spec.install.spec.as_mut().unwrap();
    spec.permissions.as_mut().unwrap()[0].rules[0]
        .verbs
        .push("deletecollection".to_owned());
    let after = Install::own(&bundle, NS).render(&bundle);
    let names = |rendered: &RenderedBundle| -> Vec<String> {
        of_kind(&rendered.rbac, "Role")
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
            assert!(
                container
                    .env
                    .iter()
                    .flatten()
                    .all(|var| var.name != "OPERATOR_CONDITION_NAME"),
                "opcat serves no OperatorCondition API"
            );
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
fn bundle_manifests_get_fresh_metadata_in_the_install_namespace() {
    let bundle = load(&fixture("gizmo"));
    let rendered = Install::own(&bundle, "gizmos").render(&bundle);

    let config_map = find(
        &rendered.others,
        "ConfigMap",
        Some("gizmos"),
        "gizmo-settings",
    );
    let meta = &config_map.metadata;
    assert!(meta.uid.is_none() && meta.resource_version.is_none());
    assert!(meta.creation_timestamp.is_none());
    assert_eq!(config_map.data["data"]["level"], "info");

    let priority = find(&rendered.others, "PriorityClass", None, "gizmo-critical");
    assert!(priority.metadata.owner_references.is_none());

    let crd = find(
        &rendered.crds,
        "CustomResourceDefinition",
        None,
        "gizmos.example.com",
    );
    assert!(
        crd.data.get("status").is_none(),
        "status is the API server's"
    );
    assert_eq!(labels(crd)[RETAIN_LABEL], "true");

    let role = find(&rendered.rbac, "Role", Some("gizmos"), "gizmo-leader");
    assert_eq!(role.metadata.owner_references.as_ref().unwrap().len(), 1);
    find(
        &rendered.rbac,
        "RoleBinding",
        Some("gizmos"),
        "gizmo-leader",
    );
    find(&rendered.rbac, "ClusterRole", None, "gizmo-viewer");
    // Two identical `permissions` entries for `gizmo` render one Role.
    assert_eq!(
        of_kind(&rendered.rbac, "Role").len(),
        3,
        "gizmo, gizmo-auditor, gizmo-leader"
    );
}

#[test]
fn bundle_service_accounts_keep_their_settings_but_not_their_pull_secrets() {
    let bundle = load(&fixture("gizmo"));
    let rendered = Install::own(&bundle, "gizmos").render(&bundle);
    let names: Vec<_> = rendered
        .service_accounts
        .iter()
        .map(|o| name(o).to_owned())
        .collect();
    assert_eq!(names, ["gizmo", "gizmo-auditor"], "never `default`");
    let gizmo = find(
        &rendered.service_accounts,
        "ServiceAccount",
        Some("gizmos"),
        "gizmo",
    );
    assert_eq!(gizmo.data["automountServiceAccountToken"], false);
    assert_eq!(
        gizmo.metadata.annotations.as_ref().unwrap()["eks.amazonaws.com/role-arn"],
        "arn:aws:iam::123456789012:role/gizmo"
    );
    assert_eq!(labels(gizmo)["app"], "gizmo");
    assert!(gizmo.data.get("imagePullSecrets").is_none());
    assert!(gizmo.data.get("secrets").is_none());
    assert_eq!(
        rendered.bundle_pull_secrets,
        BTreeMap::from([
            ("default".to_owned(), vec!["default-vendor".to_owned()]),
            ("gizmo".to_owned(), vec!["gizmo-vendor".to_owned()]),
        ])
    );
}

#[test]
fn pod_template_annotations_merge_template_and_csv_without_bookkeeping() {
    let bundle = load(&fixture("gizmo"));
    let rendered = Install::own(&bundle, "gizmos").render(&bundle);
    let annotations = pod_annotations(&deployment(&rendered, "gizmo-controller"));
    assert_eq!(annotations["shared"], "from-csv", "the CSV wins");
    assert_eq!(annotations["template-only"], "kept");
    assert_eq!(annotations["capabilities"], "Basic Install");
    assert_eq!(
        annotations["olm.targetNamespaces"], "gizmos",
        "never the stale CSV value"
    );
    assert!(!annotations.contains_key("kubectl.kubernetes.io/last-applied-configuration"));
    assert!(
        !annotations.keys().any(|key| key.starts_with("opcat.dev/")),
        "opcat's CSV annotations change without the bundle changing: {annotations:?}"
    );
}

#[test]
fn pull_secret_copies_follow_the_templates_own_entries() {
    let bundle = load(&fixture("gizmo"));
    let rendered = Install::own(&bundle, "gizmos").render(&bundle);
    let controller = deployment(&rendered, "gizmo-controller");
    assert_eq!(
        pull_secret_names(pod_spec(&controller)),
        [
            "vendor-pull",
            "acme-catalog-pull-abcdef0123",
            "vendor-catalog-pull-0123456789"
        ]
    );
    assert_eq!(
        controller.spec.as_ref().unwrap().revision_history_limit,
        Some(1),
        "OLM sets 1 whatever the bundle says"
    );

    let mut install = Install::own(&bundle, "gizmos");
    install.pull_secrets.clear();
    let rendered = install.render(&bundle);
    assert_eq!(
        pull_secret_names(pod_spec(&deployment(&rendered, "gizmo-controller"))),
        ["vendor-pull"]
    );
    assert!(
        pod_spec(&deployment(&rendered, "gizmo-web"))
            .image_pull_secrets
            .is_none()
    );
}

#[test]
fn extra_labels_are_added_and_never_override_opcat_labels() {
    let bundle = load(&fixture("gizmo"));
    let mut install = Install::own(&bundle, "gizmos");
    install.extra_labels = BTreeMap::from([
        ("opcat.dev/subscription".to_owned(), "gizmo".to_owned()),
        (
            "app.kubernetes.io/managed-by".to_owned(),
            "someone-else".to_owned(),
        ),
    ]);
    let rendered = install.render(&bundle);
    for object in rendered.in_apply_order() {
        let labels = labels(object);
        assert_eq!(labels["opcat.dev/subscription"], "gizmo");
        assert_eq!(labels["app.kubernetes.io/managed-by"], "opcat");
    }

    install.extra_labels = BTreeMap::from([("bad key!".to_owned(), "x".to_owned())]);
    let error = install.try_render(&bundle).unwrap_err();
    assert!(
        matches!(error, RenderError::InvalidExtraLabel { .. }),
        "{error}"
    );
}

#[test]
fn rendering_refuses_what_cannot_be_installed() {
    let webhook = load(&fixture("webhook"));
    let error = Install::own(&webhook, "ops")
        .try_render(&webhook)
        .unwrap_err();
    assert!(matches!(error, RenderError::Invalid(_)), "{error}");
    assert_eq!(error.kind(), "UnsupportedFeature");

    let tiny = load(&fixture("minimal"));
    let error = Install::new(&tiny, "ops", targets(&["team-a"]))
        .try_render(&tiny)
        .unwrap_err();
    assert!(matches!(error, RenderError::InstallMode(_)), "{error}");
    assert!(error.to_string().contains("SingleNamespace"), "{error}");
}

#[test]
fn rendering_is_deterministic() {
    let bundle = load(&fixture("gizmo"));
    let install = Install::new(&bundle, "gizmos", targets(&["b", "a"]));
    let first =
        serde_json::to_string(&install.render(&bundle).in_apply_order().collect::<Vec<_>>())
            .unwrap();
    for _ in 0..3 {
        let again =
            serde_json::to_string(&install.render(&bundle).in_apply_order().collect::<Vec<_>>())
                .unwrap();
        assert_eq!(first, again);
    }
    let all = Install::new(&bundle, "gizmos", TargetNamespaces::All).render(&bundle);
    for group in [
        &all.service_accounts,
        &all.rbac,
        &all.crds,
        &all.deployments,
        &all.others,
    ] {
        let keys = keys(group);
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(
            keys, sorted,
            "each group is sorted by kind, namespace, name"
        );
    }
}
