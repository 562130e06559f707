//! Least privilege (DESIGN invariant 12): what a copy holds, by the kubelet's matching, and how
//! the plan keeps it in step with the operators installed.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use super::{World, catalog, csv, entries, source};
use crate::pull_secrets::copy::{
    CopyAction, CopyError, DOCKER_CONFIG_JSON_KEY, DOCKERCFG_KEY, DOCKERCFG_TYPE,
};
use crate::pull_secrets::names::{
    PULL_SECRET_SCOPE_ANNOTATION, PULL_SECRET_SCOPE_IMAGES, PULL_SECRET_SCOPE_WHOLE,
    REGISTRIES_ANNOTATION,
};
use crate::pull_secrets::plan::DeletionReason;
use crate::pull_secrets::scoping::{CopyScope, copies_whole, scope_source};
use crate::pull_secrets::vocabulary::{
    CONDITION_PULL_SECRETS_SCOPED, ConditionStatus, REASON_SCOPED_TO_IMAGES,
    REASON_WHOLE_SECRETS_COPIED,
};

/// The cluster-wide pull secret of an OpenShift-style cluster: four registries, entries of
/// every shape, keys out of order and spaced as a human would write them.
const FOUR_REGISTRIES: &str = r#"{
  "auths": {
    "registry.redhat.io": {"auth": "cmg6c2VjcmV0LXJo", "email": "ops@example.com"},
    "cloud.openshift.com": {"auth": "Y2xvdWQ6c2VjcmV0LWNsb3Vk", "email": "ops@example.com"},
    "registry.connect.redhat.com": {"username": "partner", "password": "secret-connect",
                                    "identitytoken": "tok-connect"},
    "quay.io": {"auth": "cXVheTpzZWNyZXQtcXVheQ=="}
  },
  "credsStore": "desktop"
}"#;

fn pull_secret(type_: &str, key: &str, document: &str) -> Secret {
    let mut secret = source("global-pull", "unused");
    secret.type_ = Some(type_.to_owned());
    secret.data = Some(BTreeMap::from([(
        key.to_owned(),
        ByteString(document.as_bytes().to_vec()),
    )]));
    secret
}

fn four_registries() -> Secret {
    pull_secret(
        "kubernetes.io/dockerconfigjson",
        DOCKER_CONFIG_JSON_KEY,
        FOUR_REGISTRIES,
    )
}

fn images(images: &[&str]) -> CopyScope {
    CopyScope::of(None, images.iter().copied())
}

fn text(data: &BTreeMap<String, ByteString>, key: &str) -> String {
    String::from_utf8(data[key].0.clone()).unwrap()
}

#[test]
fn an_operator_on_one_registry_gets_that_registrys_entry_whole_and_nothing_else() {
    let scoped = scope_source(
        &four_registries(),
        &images(&[
            "registry.connect.redhat.com/acme/operator@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "registry.connect.redhat.com/acme/operand:v2",
        ]),
    )
    .unwrap();
    assert_eq!(scoped.registries, ["registry.connect.redhat.com"]);
    assert_eq!(
        scoped.left_out,
        ["cloud.openshift.com", "quay.io", "registry.redhat.io"]
    );
    assert_eq!(
        text(&scoped.data, DOCKER_CONFIG_JSON_KEY),
        r#"{"auths":{"registry.connect.redhat.com":{"identitytoken":"tok-connect","password":"secret-connect","username":"partner"}}}"#,
        "the entry whole, keys sorted, compact, credsStore dropped"
    );
    assert_eq!(scoped.data.len(), 1);
    assert_eq!(
        scoped.registries_annotation(),
        "registry.connect.redhat.com"
    );
}

#[test]
fn the_same_entries_give_the_same_bytes_whatever_their_order_and_spacing() {
    let reordered = r#"{"auths":{"quay.io":{"auth":"cXVheTpzZWNyZXQtcXVheQ=="},
        "registry.connect.redhat.com":{"password":"secret-connect","identitytoken":"tok-connect","username":"partner"}}}"#;
    let scope = images(&["quay.io/acme/a:1", "registry.connect.redhat.com/acme/b:1"]);
    let first = scope_source(&four_registries(), &scope).unwrap();
    let second = scope_source(
        &pull_secret(
            "kubernetes.io/dockerconfigjson",
            DOCKER_CONFIG_JSON_KEY,
            reordered,
        ),
        &scope,
    )
    .unwrap();
    assert_eq!(first.data, second.data);
    assert_eq!(first.registries, ["quay.io", "registry.connect.redhat.com"]);
}

#[test]
fn wildcards_ports_and_paths_match_as_the_kubelet_matches_them() {
    let document = r#"{"auths":{
        "*.example.com": {"auth": "d2lsZDpjYXJk"},
        "registry.example.com/team-a": {"auth": "dGVhbTphYWE="},
        "registry.example.com:5000": {"auth": "cG9ydDpwcA=="},
        "https://index.docker.io/v1/": {"auth": "aHViOmh1Yg=="}
    }}"#;
    let secret = pull_secret(
        "kubernetes.io/dockerconfigjson",
        DOCKER_CONFIG_JSON_KEY,
        document,
    );
    let kept = |list: &[&str]| scope_source(&secret, &images(list)).unwrap().registries;
    assert_eq!(
        kept(&["mirror.example.com/x/y:1"]),
        ["*.example.com"],
        "a glob covers one label"
    );
    assert!(
        kept(&["a.b.example.com/x:1", "example.com/x:1"]).is_empty(),
        "not two labels, not the bare domain"
    );
    assert_eq!(
        kept(&["registry.example.com/team-a/operator:v1"]),
        ["*.example.com", "registry.example.com/team-a"],
        "the path-scoped key and the glob both cover team-a"
    );
    assert_eq!(
        kept(&["registry.example.com/team-b/operator:v1"]),
        ["*.example.com"],
        "team-a's credential is not team-b's"
    );
    assert_eq!(
        kept(&["registry.example.com:5000/team-b/operator:v1"]),
        ["registry.example.com:5000"],
        "ports must be equal: the port-less glob does not cover :5000"
    );
    assert_eq!(
        kept(&["busybox:1.36"]),
        ["https://index.docker.io/v1/"],
        "Docker Hub's legacy key covers images that name no registry"
    );
    assert!(kept(&[]).is_empty());
    assert!(kept(&["not a reference!"]).is_empty());
}

#[test]
fn dockercfg_sources_keep_their_layout() {
    let document = r#"{"quay.io":{"auth":"cXVheTpx","email":"a@b.c"},"registry.redhat.io":{"auth":"cmg6cg=="}}"#;
    let secret = pull_secret(DOCKERCFG_TYPE, DOCKERCFG_KEY, document);
    let scoped = scope_source(&secret, &images(&["quay.io/acme/op:1"])).unwrap();
    assert_eq!(
        text(&scoped.data, DOCKERCFG_KEY),
        r#"{"quay.io":{"auth":"cXVheTpx","email":"a@b.c"}}"#
    );
    assert_eq!(scoped.left_out, ["registry.redhat.io"]);
}

#[test]
fn the_opt_out_copies_the_data_as_it_is() {
    let secret = four_registries();
    let scoped = scope_source(&secret, &CopyScope::Whole).unwrap();
    assert_eq!(Some(&scoped.data), secret.data.as_ref());
    assert_eq!(scoped.registries.len(), 4);
    assert!(scoped.left_out.is_empty());

    let annotations =
        |value: &str| BTreeMap::from([(PULL_SECRET_SCOPE_ANNOTATION.to_owned(), value.to_owned())]);
    assert!(copies_whole(Some(&annotations(PULL_SECRET_SCOPE_WHOLE))));
    assert!(!copies_whole(Some(&annotations(PULL_SECRET_SCOPE_IMAGES))));
    assert!(!copies_whole(Some(&annotations("everything"))));
    assert!(!copies_whole(None));
    assert_eq!(
        CopyScope::of(Some(&annotations(PULL_SECRET_SCOPE_WHOLE)), ["quay.io/a:1"]),
        CopyScope::Whole
    );
}

#[test]
fn unreadable_sources_are_errors_that_show_no_data() {
    let broken = pull_secret(
        "kubernetes.io/dockerconfigjson",
        DOCKER_CONFIG_JSON_KEY,
        r#"{"auths":{"quay.io":{"auth":"hunter2-not-base64!"}}}"#,
    );
    let error = scope_source(&broken, &images(&["quay.io/a:1"])).unwrap_err();
    assert!(matches!(error, CopyError::Unreadable { .. }));
    let message = error.to_string();
    assert!(message.contains("olm/global-pull"), "{message}");
    assert!(message.contains("quay.io"), "{message}");
    assert!(!message.contains("hunter2"), "{message}");
    // The opt-out copies bytes it does not need to read, as before.
    assert!(scope_source(&broken, &CopyScope::Whole).is_ok());

    let scoped = scope_source(&four_registries(), &images(&["quay.io/a:1"])).unwrap();
    let shown = format!("{scoped:?}");
    assert!(shown.contains("quay.io"), "{shown}");
    assert!(
        !shown.contains("cXVhe") && !shown.contains("secret-"),
        "{shown}"
    );
}

/// A World whose source is the four-registry secret and whose operators run `images`.
fn four_registry_world(operators: &[(&str, &[&str])]) -> World {
    let csvs = operators
        .iter()
        .map(|(name, images)| {
            let mut csv = csv(name, &[*name, "default"]);
            csv.images = images.iter().map(|image| (*image).to_owned()).collect();
            csv
        })
        .collect();
    let mut world = World::new(&["global-pull"], csvs);
    world
        .sources
        .insert("global-pull".to_owned(), four_registries());
    world
}

fn copy_registries(world: &World) -> String {
    let copy = &world.secrets[&catalog().copy_name("global-pull")];
    copy.metadata.annotations.as_ref().unwrap()[REGISTRIES_ANNOTATION].clone()
}

#[test]
fn a_second_operator_widens_the_copy_in_place_and_its_uninstall_narrows_it() {
    let connect = "registry.connect.redhat.com/acme/operator:v1";
    let quay = "quay.io/other/operator:v3";
    let mut world = four_registry_world(&[("acme.v1", &[connect])]);
    let plan = world.converge();
    assert_eq!(copy_registries(&world), "registry.connect.redhat.com");
    let scoped = &plan.scoped_condition();
    assert_eq!(
        (scoped.type_, scoped.status, scoped.reason),
        (
            CONDITION_PULL_SECRETS_SCOPED,
            ConditionStatus::True,
            REASON_SCOPED_TO_IMAGES
        )
    );
    assert!(
        scoped
            .message
            .contains("holds [registry.connect.redhat.com]"),
        "{}",
        scoped.message
    );
    let uid = world.secrets[&catalog().copy_name("global-pull")]
        .metadata
        .uid
        .clone();

    let mut second = csv("other.v3", &["other.v3"]);
    second.images = [quay.to_owned()].into();
    world.csvs.push(second);
    world.put_service_account(super::service_account("other.v3", None));
    let widen = world.plan();
    assert!(matches!(
        widen.copy_writes[0].action,
        CopyAction::Update { changes, .. } if changes.data && changes.owners
    ));
    world.converge();
    assert_eq!(
        copy_registries(&world),
        "quay.io,registry.connect.redhat.com"
    );
    let copy = &world.secrets[&catalog().copy_name("global-pull")];
    assert_eq!(copy.metadata.uid, uid, "the same Secret, updated in place");

    world.csvs.retain(|csv| csv.name != "other.v3");
    world.converge();
    assert_eq!(copy_registries(&world), "registry.connect.redhat.com");
    assert_eq!(
        world.secrets[&catalog().copy_name("global-pull")]
            .metadata
            .uid,
        uid
    );
    assert_eq!(world.plan().copy_writes, [], "converged: no writes");
}

#[test]
fn a_source_no_image_needs_is_neither_copied_nor_attached_and_the_report_says_why() {
    let mut world = four_registry_world(&[("acme.v1", &["ghcr.io/acme/operator:v1"])]);
    let plan = world.converge();
    assert!(world.secrets.is_empty(), "no copy");
    assert!(plan.pod_template_secrets.is_empty());
    assert!(entries(world.service_account("acme.v1")).is_empty());
    let message = plan.scoped_condition().message;
    assert!(
        message.contains(
            "secret olm/global-pull left out: none of its registries [cloud.openshift.com, \
             quay.io, registry.connect.redhat.com, registry.redhat.io] serves an image"
        ),
        "{message}"
    );

    // An operator that needed it is upgraded to images elsewhere: the copy goes, detached first.
    let mut world = four_registry_world(&[("acme.v1", &["quay.io/acme/operator:v1"])]);
    world.converge();
    assert_eq!(
        entries(world.service_account("acme.v1")),
        [catalog().copy_name("global-pull")]
    );
    world.csvs[0].images = ["ghcr.io/acme/operator:v2".to_owned()].into();
    let plan = world.plan();
    assert_eq!(plan.deletions.len(), 1);
    assert_eq!(plan.deletions[0].reason, DeletionReason::NoMatchingEntry);
    assert_eq!(plan.service_account_edits.len(), 2, "detached from both");
    world.converge();
    assert!(world.secrets.is_empty());
    assert!(entries(world.service_account("acme.v1")).is_empty());
}

#[test]
fn the_catalogs_opt_out_copies_whole_secrets_and_says_so() {
    let mut world = four_registry_world(&[("acme.v1", &["ghcr.io/acme/operator:v1"])]);
    world.copy_whole = true;
    let plan = world.converge();
    let copy = &world.secrets[&catalog().copy_name("global-pull")];
    assert_eq!(copy.data, four_registries().data, "byte for byte");
    let condition = plan.scoped_condition();
    assert_eq!(
        (condition.status, condition.reason),
        (ConditionStatus::False, REASON_WHOLE_SECRETS_COPIED)
    );
    assert!(
        condition
            .message
            .contains("opcat.dev/pull-secret-scope: whole"),
        "{}",
        condition.message
    );

    // Opting back in narrows the same copy.
    world.copy_whole = false;
    world.csvs[0].images = ["quay.io/acme/operator:v1".to_owned()].into();
    world.converge();
    assert_eq!(copy_registries(&world), "quay.io");
}
