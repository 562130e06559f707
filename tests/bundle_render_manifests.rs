//! Rendering the `gizmo` fixture: bundle manifests (fresh metadata, namespaces, CRDs kept),
//! the bundle's ServiceAccounts, pod template annotations, pull-secret copies next to the
//! template's own entries, extra labels, refusals and determinism.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;

use std::collections::BTreeMap;

use bundle_support::{
    Install, deployment, find, fixture, keys, load, name, of_kind, pod_annotations, pod_spec,
    pull_secret_names, targets,
};
use kube::api::DynamicObject;
use opcat::bundle::ownership::RETAIN_LABEL;
use opcat::bundle::{RenderError, TargetNamespaces};

fn labels(object: &DynamicObject) -> BTreeMap<String, String> {
    object.metadata.labels.clone().unwrap_or_default()
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
        4,
        "gizmo, gizmo-auditor, gizmo-leader, and the OperatorCondition's"
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
    let mut webhook = load(&fixture("webhook"));
    webhook.csv.spec.webhook_definitions.as_mut().unwrap()[0].deployment_name =
        Some("gone".to_owned());
    let error = Install::own(&webhook, "ops")
        .try_render(&webhook)
        .unwrap_err();
    assert!(matches!(error, RenderError::Invalid(_)), "{error}");
    assert_eq!(error.kind(), "InvalidWebhookDescription");

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

#[test]
fn only_the_rbac_opcat_names_is_marked_as_named_by_opcat() {
    let bundle = load(&fixture("gizmo"));
    let rendered = Install::own(&bundle, "gizmos").render(&bundle);
    // The bundle's own RBAC manifests keep the names it chose: the controller looks for a
    // foreign object there before applying.
    for (kind, name_) in [
        ("Role", "gizmo-leader"),
        ("RoleBinding", "gizmo-leader"),
        ("ClusterRole", "gizmo-viewer"),
    ] {
        let namespace = (kind != "ClusterRole").then_some("gizmos");
        let object = find(&rendered.rbac, kind, namespace, name_);
        assert!(!rendered.has_hashed_name(object), "{kind} {name_}");
    }
    let hashed: Vec<&DynamicObject> = rendered
        .rbac
        .iter()
        .filter(|object| rendered.has_hashed_name(object))
        .collect();
    assert!(!hashed.is_empty(), "the CSV's permissions render RBAC");
    assert_eq!(hashed.len(), rendered.hashed_names.len());
    for object in rendered.in_apply_order() {
        if !hashed.contains(&object) {
            continue;
        }
        let kind = object.types.as_ref().unwrap().kind.as_str();
        assert!(
            ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"].contains(&kind),
            "{kind} {}",
            name(object)
        );
    }
}
