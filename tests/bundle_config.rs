//! Subscription `spec.config` applied to the operator's Deployments with OLM v0's merge rules,
//! one rule per test, on the `gizmo` fixture: its `gizmo-controller` Deployment has two
//! containers (`manager`, `sidecar`), an init container, env, envFrom, volumes, mounts,
//! tolerations, a node selector and node + pod anti-affinity.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod bundle_support;

use bundle_support::{Install, deployment, fixture, load, pod_annotations, pod_spec, yaml};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use opcat::api::subscription::SubscriptionConfig;

/// The fixture's CSV: the name of its OperatorCondition.
const CSV: &str = "gizmo-operator.v1.0.0";

/// `gizmo-controller` rendered with `config` (YAML of a Subscription's `spec.config`).
fn controller_with(config: &str) -> Deployment {
    let bundle = load(&fixture("gizmo"));
    let config: SubscriptionConfig = yaml(config);
    let rendered = Install::own(&bundle, "gizmos")
        .with_config(config)
        .render(&bundle);
    deployment(&rendered, "gizmo-controller")
}

fn container<'a>(pod: &'a PodSpec, name: &str) -> &'a Container {
    pod.containers.iter().find(|c| c.name == name).unwrap()
}

fn env_of(container: &Container) -> Vec<(String, String)> {
    container
        .env
        .iter()
        .flatten()
        .map(|var| {
            let value = var
                .value
                .clone()
                .unwrap_or_else(|| "<valueFrom>".to_owned());
            (var.name.clone(), value)
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn env_is_merged_by_name_in_every_container_but_not_init_containers() {
    let deployment = controller_with(
        "env:\n  - {name: LOG_LEVEL, value: debug}\n  - {name: HTTP_PROXY, value: http://proxy:3128}\n",
    );
    let pod = pod_spec(&deployment);
    assert_eq!(
        env_of(container(pod, "manager")),
        pairs(&[
            ("LOG_LEVEL", "debug"),
            ("WATCH_NAMESPACE", "<valueFrom>"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("OPERATOR_CONDITION_NAME", CSV),
        ]),
        "overridden in place, new ones appended, OLM's own last"
    );
    assert_eq!(
        env_of(container(pod, "sidecar")),
        pairs(&[
            ("LOG_LEVEL", "debug"),
            ("HTTP_PROXY", "http://proxy:3128"),
            ("OPERATOR_CONDITION_NAME", CSV),
        ])
    );
    let init = &pod.init_containers.as_ref().unwrap()[0];
    assert!(init.env.is_none(), "OLM leaves init containers alone");
}

#[test]
fn the_operator_condition_name_wins_over_a_config_variable_of_that_name() {
    let deployment = controller_with("env:\n  - {name: OPERATOR_CONDITION_NAME, value: mine}\n");
    let names: Vec<_> = env_of(container(pod_spec(&deployment), "manager"))
        .into_iter()
        .filter(|(name, _)| name == "OPERATOR_CONDITION_NAME")
        .collect();
    assert_eq!(
        names,
        pairs(&[("OPERATOR_CONDITION_NAME", CSV)]),
        "as OLM injects it after the config"
    );
}

#[test]
fn an_env_override_replaces_the_whole_variable() {
    let deployment = controller_with("env:\n  - {name: WATCH_NAMESPACE, value: everywhere}\n");
    let manager = container(pod_spec(&deployment), "manager");
    let watch = manager
        .env
        .iter()
        .flatten()
        .find(|v| v.name == "WATCH_NAMESPACE")
        .unwrap();
    assert_eq!(watch.value.as_deref(), Some("everywhere"));
    assert!(watch.value_from.is_none());
}

#[test]
fn env_from_sources_are_appended_once() {
    let deployment = controller_with(
        "envFrom:\n  - configMapRef: {name: gizmo-env}\n  - secretRef: {name: gizmo-secrets}\n",
    );
    let pod = pod_spec(&deployment);
    let names = |c: &Container| -> Vec<String> {
        c.env_from
            .iter()
            .flatten()
            .map(|source| {
                source
                    .config_map_ref
                    .as_ref()
                    .map(|r| format!("configMap/{}", r.name))
                    .or_else(|| {
                        source
                            .secret_ref
                            .as_ref()
                            .map(|r| format!("secret/{}", r.name))
                    })
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(
        names(container(pod, "manager")),
        ["configMap/gizmo-env", "secret/gizmo-secrets"],
        "an identical source is not repeated"
    );
    assert_eq!(
        names(container(pod, "sidecar")),
        ["configMap/gizmo-env", "secret/gizmo-secrets"]
    );
}

#[test]
fn volumes_are_replaced_by_name_and_new_ones_appended() {
    let deployment = controller_with(
        "volumes:\n  - name: config\n    secret: {secretName: gizmo-config-v2}\n  - name: certs\n    emptyDir: {}\n",
    );
    let volumes = pod_spec(&deployment).volumes.clone().unwrap();
    let names: Vec<&str> = volumes.iter().map(|v| v.name.as_str()).collect();
    assert_eq!(names, ["config", "cache", "certs"]);
    assert!(
        volumes[0].config_map.is_none(),
        "the whole volume is replaced"
    );
    assert_eq!(
        volumes[0].secret.as_ref().unwrap().secret_name.as_deref(),
        Some("gizmo-config-v2")
    );
}

#[test]
fn volume_mounts_are_replaced_by_name_in_every_container() {
    let deployment = controller_with(
        "volumeMounts:\n  - {name: config, mountPath: /config, readOnly: true}\n  - {name: certs, mountPath: /certs}\n",
    );
    let pod = pod_spec(&deployment);
    let mounts = |c: &Container| -> Vec<(String, String)> {
        c.volume_mounts
            .iter()
            .flatten()
            .map(|m| (m.name.clone(), m.mount_path.clone()))
            .collect()
    };
    assert_eq!(
        mounts(container(pod, "manager")),
        pairs(&[("config", "/config"), ("certs", "/certs")]),
        "matched by name (not path), replaced in place"
    );
    assert_eq!(
        mounts(container(pod, "sidecar")),
        pairs(&[("config", "/config"), ("certs", "/certs")])
    );
    assert!(
        pod.init_containers.as_ref().unwrap()[0]
            .volume_mounts
            .is_none()
    );
}

#[test]
fn tolerations_are_appended_unless_identical() {
    let deployment = controller_with(
        "tolerations:\n  - {key: dedicated, operator: Equal, value: gizmo, effect: NoSchedule}\n  - {key: spot, operator: Exists, effect: NoExecute, tolerationSeconds: 120}\n",
    );
    let tolerations = pod_spec(&deployment).tolerations.clone().unwrap();
    let keys: Vec<_> = tolerations.iter().map(|t| t.key.clone().unwrap()).collect();
    assert_eq!(keys, ["dedicated", "spot"]);
    assert_eq!(tolerations[1].toleration_seconds, Some(120));
}

#[test]
fn resources_replace_every_containers_resources_whole() {
    let deployment = controller_with("resources:\n  limits: {memory: 256Mi}\n");
    let pod = pod_spec(&deployment);
    for name in ["manager", "sidecar"] {
        let resources = container(pod, name).resources.clone().unwrap();
        assert!(
            resources.requests.is_none(),
            "{name}: the bundle's requests are gone, not merged"
        );
        assert_eq!(resources.limits.unwrap()["memory"].0, "256Mi");
    }
    assert!(pod.init_containers.as_ref().unwrap()[0].resources.is_none());
}

#[test]
fn node_selector_replaces_and_empty_clears() {
    let deployment = controller_with("nodeSelector: {zone: west}\n");
    let selector = pod_spec(&deployment).node_selector.clone().unwrap();
    assert_eq!(selector.len(), 1);
    assert_eq!(selector["zone"], "west");

    let deployment = controller_with("nodeSelector: {}\n");
    assert!(pod_spec(&deployment).node_selector.is_none());
}

#[test]
fn affinity_parts_left_unset_are_kept() {
    let deployment = controller_with(
        "affinity:\n  podAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      - topologyKey: zone\n        labelSelector: {matchLabels: {app: db}}\n",
    );
    let affinity = pod_spec(&deployment).affinity.clone().unwrap();
    assert!(
        affinity.node_affinity.is_some(),
        "not in the override: kept"
    );
    assert!(
        affinity.pod_anti_affinity.is_some(),
        "not in the override: kept"
    );
    let pod_affinity = affinity.pod_affinity.unwrap();
    assert_eq!(
        pod_affinity
            .required_during_scheduling_ignored_during_execution
            .unwrap()[0]
            .topology_key,
        "zone"
    );
}

#[test]
fn affinity_parts_that_are_set_replace_the_bundles() {
    let deployment = controller_with(
        "affinity:\n  nodeAffinity:\n    preferredDuringSchedulingIgnoredDuringExecution:\n      - weight: 1\n        preference:\n          matchExpressions: [{key: disk, operator: In, values: [ssd]}]\n",
    );
    let node = pod_spec(&deployment)
        .affinity
        .clone()
        .unwrap()
        .node_affinity
        .unwrap();
    assert!(
        node.required_during_scheduling_ignored_during_execution
            .is_none()
    );
    assert_eq!(
        node.preferred_during_scheduling_ignored_during_execution
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn an_empty_affinity_erases_it() {
    let deployment = controller_with("affinity: {}\n");
    assert!(pod_spec(&deployment).affinity.is_none());
}

#[test]
fn an_empty_affinity_part_erases_that_part_only() {
    let deployment = controller_with("affinity:\n  nodeAffinity: {}\n");
    let affinity = pod_spec(&deployment).affinity.clone().unwrap();
    assert!(affinity.node_affinity.is_none());
    assert!(affinity.pod_anti_affinity.is_some());

    // OLM removes the whole affinity here; opcat removes what was asked (see config.rs).
    let deployment = controller_with("affinity:\n  podAntiAffinity: {}\n");
    let affinity = pod_spec(&deployment).affinity.clone().unwrap();
    assert!(affinity.pod_anti_affinity.is_none());
    assert!(affinity.node_affinity.is_some());

    let deployment = controller_with("affinity:\n  nodeAffinity: {}\n  podAntiAffinity: {}\n");
    assert!(
        pod_spec(&deployment).affinity.is_none(),
        "an affinity left empty is removed"
    );
}

#[test]
fn annotations_are_added_to_deployment_and_pods_without_overriding() {
    let deployment = controller_with(
        "annotations:\n  team: gizmos\n  shared: from-subscription\n  olm.targetNamespaces: hijacked\n",
    );
    let on_deployment = deployment.metadata.annotations.clone().unwrap();
    assert_eq!(on_deployment["team"], "gizmos");
    assert_eq!(on_deployment["shared"], "from-subscription");
    let on_pods = pod_annotations(&deployment);
    assert_eq!(on_pods["team"], "gizmos");
    assert_eq!(
        on_pods["shared"], "from-csv",
        "existing pod annotations win"
    );
    assert_eq!(on_pods["olm.targetNamespaces"], "gizmos");
}

#[test]
fn the_selector_is_accepted_and_ignored_as_in_olm() {
    let with_selector = controller_with("selector: {matchLabels: {app: other}}\n");
    let bundle = load(&fixture("gizmo"));
    let without = deployment(
        &Install::own(&bundle, "gizmos").render(&bundle),
        "gizmo-controller",
    );
    assert_eq!(with_selector, without);
}

#[test]
fn the_pull_secret_copies_survive_any_config() {
    let deployment =
        controller_with("env:\n  - {name: A, value: b}\nnodeSelector: {}\naffinity: {}\n");
    let names: Vec<_> = pod_spec(&deployment)
        .image_pull_secrets
        .iter()
        .flatten()
        .map(|s| s.name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "vendor-pull",
            "acme-catalog-pull-abcdef0123",
            "vendor-catalog-pull-0123456789"
        ]
    );
}
