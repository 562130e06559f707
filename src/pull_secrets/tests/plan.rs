use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{MARKER, World, catalog, csv, entries, service_account, source};
use crate::pull_secrets::copy::{CopyAction, DOCKERCFG_KEY, DOCKERCFG_TYPE};
use crate::pull_secrets::names::{
    ADDED_PULL_SECRETS_ANNOTATION, CATALOG_NAME_LABEL, MANAGED_LABEL, SOURCE_NAME_LABEL,
    SOURCE_NAMESPACE_LABEL,
};
use crate::pull_secrets::owners::CatalogRef;
use crate::pull_secrets::plan::DeletionReason;
use crate::pull_secrets::scope::NotPropagated;
use crate::pull_secrets::selector::SelectorError;
use crate::pull_secrets::vocabulary::{
    CONDITION_PULL_SECRET_CONFLICT, CONDITION_PULL_SECRET_SOURCE_MISSING,
    CONDITION_PULL_SECRETS_NOT_PROPAGATED, ConditionStatus, EVENT_PULL_SECRET_ATTACHED,
    EVENT_PULL_SECRET_COPIED, EVENT_PULL_SECRET_DELETED, EVENT_PULL_SECRET_DETACHED,
    EVENT_PULL_SECRET_ROTATED, PullSecretCondition,
};

const OPENSHIFT: &str = "operator-dockercfg-q8w2n";

fn copy(secret: &str) -> String {
    catalog().copy_name(secret)
}

fn owner_names(world: &World, secret: &str) -> Vec<String> {
    world.secrets[&copy(secret)]
        .metadata
        .owner_references
        .iter()
        .flatten()
        .map(|owner| owner.name.clone())
        .collect()
}

fn condition<'a>(conditions: &'a [PullSecretCondition], type_: &str) -> &'a PullSecretCondition {
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .expect("condition present")
}

/// One operator using its own ServiceAccount (with a user's and OpenShift's entries) and
/// `default` (a Deployment that names none).
fn operator_world() -> World {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator", "default"])]);
    world.put_service_account(service_account("operator", Some(&["user-pull", OPENSHIFT])));
    world
}

#[test]
fn install_copies_attaches_and_then_makes_zero_writes() {
    let mut world = operator_world();
    let first = world.plan();
    assert!(matches!(first.copy_writes[0].action, CopyAction::Create(_)));
    assert_eq!(first.pod_template_secrets, [copy("quay-pull")]);
    let events: Vec<&str> = first.events().iter().map(|e| e.reason).collect();
    assert_eq!(
        events,
        [
            EVENT_PULL_SECRET_COPIED,
            EVENT_PULL_SECRET_ATTACHED,
            EVENT_PULL_SECRET_ATTACHED
        ]
    );
    world.apply(&first);

    let converged = world.plan();
    assert!(converged.is_converged(), "{converged:?}");
    assert_eq!(converged.pod_template_secrets, [copy("quay-pull")]);
    assert_eq!(
        entries(world.service_account("operator")),
        ["user-pull", OPENSHIFT, &copy("quay-pull")]
    );
    assert_eq!(
        entries(world.service_account("default")),
        [copy("quay-pull")]
    );
    assert_eq!(owner_names(&world, "quay-pull"), ["op.v1"]);
    assert!(converged.events().is_empty());
    let conditions = converged.conditions();
    for type_ in [
        CONDITION_PULL_SECRET_CONFLICT,
        CONDITION_PULL_SECRETS_NOT_PROPAGATED,
        CONDITION_PULL_SECRET_SOURCE_MISSING,
    ] {
        assert_eq!(
            condition(&conditions, type_).status,
            ConditionStatus::False,
            "{type_}"
        );
    }
}

#[test]
fn foreign_entries_stay_in_place_through_attach_rotate_and_detach() {
    let mut world = operator_world();
    world.converge();
    // A user appends after ours, OpenShift's entry sits first.
    let mut sa = world.service_account("operator").clone();
    sa.image_pull_secrets.get_or_insert_default().push(
        k8s_openapi::api::core::v1::LocalObjectReference {
            name: "later-user".to_owned(),
        },
    );
    world.put_service_account(sa);

    world.sources.insert(
        "quay-pull".to_owned(),
        source("quay-pull", "rotated-password"),
    );
    let rotation = world.plan();
    assert_eq!(rotation.copy_writes.len(), 1);
    assert!(
        rotation.service_account_edits.is_empty(),
        "rotation keeps the name: no SA write"
    );
    assert_eq!(rotation.events()[0].reason, EVENT_PULL_SECRET_ROTATED);
    let uid_before = world.secrets[&copy("quay-pull")].metadata.uid.clone();
    world.apply(&rotation);
    assert_eq!(
        world.secrets[&copy("quay-pull")].metadata.uid,
        uid_before,
        "updated in place"
    );
    assert_eq!(
        world.secrets[&copy("quay-pull")].data,
        world.sources["quay-pull"].data
    );
    assert!(world.plan().is_converged());
    assert_eq!(
        entries(world.service_account("operator")),
        ["user-pull", OPENSHIFT, &copy("quay-pull"), "later-user"]
    );

    // Uninstall: the CSV leaves, its ServiceAccounts are still passed for the detach.
    world.csvs.clear();
    world.leaving_service_accounts = vec!["operator".to_owned(), "default".to_owned()];
    let uninstall = world.plan();
    assert_eq!(uninstall.deletions[0].reason, DeletionReason::Unused);
    assert!(uninstall.pod_template_secrets.is_empty());
    world.apply(&uninstall);
    assert!(world.plan().is_converged());
    assert_eq!(
        entries(world.service_account("operator")),
        ["user-pull", OPENSHIFT, "later-user"]
    );
    assert_eq!(world.service_account("default").image_pull_secrets, None);
    assert!(world.secrets.is_empty());
    assert_eq!(
        world.opcat_marks(),
        Vec::<String>::new(),
        "nothing of opcat's remains"
    );
}

#[test]
fn two_csvs_share_one_copy_until_the_last_is_uninstalled() {
    let mut world = World::new(
        &["quay-pull"],
        vec![
            csv("alpha.v1", &["alpha", "default"]),
            csv("beta.v1", &["beta", "default"]),
        ],
    );
    world.converge();
    assert_eq!(world.secrets.len(), 1);
    assert_eq!(owner_names(&world, "quay-pull"), ["alpha.v1", "beta.v1"]);

    world.csvs.retain(|csv| csv.name != "alpha.v1");
    world.leaving_service_accounts = vec!["alpha".to_owned(), "default".to_owned()];
    let plan = world.plan();
    assert!(plan.deletions.is_empty(), "beta still uses the copy");
    let detached: Vec<&str> = plan
        .service_account_edits
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    assert_eq!(detached, ["alpha"], "default is still used by beta");
    world.apply(&plan);
    assert!(world.plan().is_converged());
    assert_eq!(owner_names(&world, "quay-pull"), ["beta.v1"]);
    assert_eq!(world.service_account("alpha").image_pull_secrets, None);
    assert_eq!(
        entries(world.service_account("default")),
        [copy("quay-pull")]
    );

    world.csvs.clear();
    world.leaving_service_accounts = vec!["beta".to_owned(), "default".to_owned()];
    world.converge();
    assert!(world.secrets.is_empty());
    assert_eq!(world.opcat_marks(), Vec::<String>::new());
}

#[test]
fn a_name_removed_from_spec_secrets_is_detached_and_deleted_and_a_new_one_propagated() {
    let mut world = World::new(
        &["old-pull", "keep-pull"],
        vec![csv("op.v1", &["operator"])],
    );
    world.converge();
    world.secret_names = vec!["keep-pull".to_owned(), "new-pull".to_owned()];
    world
        .sources
        .insert("new-pull".to_owned(), source("new-pull", MARKER));
    let plan = world.plan();
    assert_eq!(plan.deletions.len(), 1);
    assert_eq!(plan.deletions[0].name, copy("old-pull"));
    assert_eq!(plan.deletions[0].reason, DeletionReason::RemovedFromCatalog);
    let reasons: Vec<&str> = plan.events().iter().map(|e| e.reason).collect();
    assert!(
        reasons.contains(&EVENT_PULL_SECRET_DETACHED)
            && reasons.contains(&EVENT_PULL_SECRET_DELETED)
    );
    world.apply(&plan);
    assert!(world.plan().is_converged());
    let mut expected = vec![copy("keep-pull"), copy("new-pull")];
    expected.sort();
    assert_eq!(
        entries(world.service_account("operator")),
        [copy("keep-pull"), copy("new-pull")]
    );
    assert_eq!(world.secrets.keys().cloned().collect::<Vec<_>>(), expected);
}

#[test]
fn missing_source_keeps_the_existing_copy_and_reports_it() {
    let mut world = World::new(
        &["quay-pull", "never-created"],
        vec![csv("op.v1", &["operator"])],
    );
    world.sources.remove("never-created");
    world.converge();
    world.sources.remove("quay-pull");
    let plan = world.plan();
    assert!(plan.is_converged(), "no delete, no write: {plan:?}");
    assert_eq!(plan.missing_sources, ["never-created", "quay-pull"]);
    assert_eq!(
        plan.pod_template_secrets,
        [copy("quay-pull")],
        "the kept copy stays attached"
    );
    let missing = plan.source_condition();
    assert_eq!(missing.status, ConditionStatus::True);
    assert!(
        missing.message.contains("secret olm/quay-pull not found"),
        "{}",
        missing.message
    );
    assert!(world.secrets.contains_key(&copy("quay-pull")));

    // A second CSV arriving while the source is missing becomes an owner of the kept copy.
    world.csvs.push(csv("other.v1", &["other"]));
    world.put_service_account(service_account("other", None));
    world.converge();
    assert_eq!(owner_names(&world, "quay-pull"), ["op.v1", "other.v1"]);
    assert_eq!(entries(world.service_account("other")), [copy("quay-pull")]);
}

#[test]
fn invalid_source_type_is_reported_and_copies_nothing() {
    let mut world = World::new(&["opaque"], vec![csv("op.v1", &["operator"])]);
    let opaque = world.sources.get_mut("opaque").expect("fixture");
    opaque.type_ = Some("Opaque".to_owned());
    let plan = world.plan();
    assert!(plan.copy_writes.is_empty());
    assert_eq!(plan.invalid_sources.len(), 1);
    let condition = plan.source_condition();
    assert_eq!(condition.reason, "SourceSecretInvalid");
    assert!(
        condition.message.contains("olm/opaque has type \"Opaque\""),
        "{}",
        condition.message
    );
}

#[test]
fn source_type_change_recreates_our_copy() {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator"])]);
    world.converge();
    let legacy = world.sources.get_mut("quay-pull").expect("fixture");
    legacy.type_ = Some(DOCKERCFG_TYPE.to_owned());
    let dockercfg =
        format!(r#"{{"registry.example.com":{{"password":"{MARKER}","username":"robot"}}}}"#);
    legacy.data = Some(BTreeMap::from([(
        DOCKERCFG_KEY.to_owned(),
        k8s_openapi::ByteString(dockercfg.into_bytes()),
    )]));
    let plan = world.plan();
    assert!(matches!(
        plan.copy_writes[0].action,
        CopyAction::Recreate { .. }
    ));
    world.apply(&plan);
    assert!(world.plan().is_converged());
    assert_eq!(
        world.secrets[&copy("quay-pull")].type_.as_deref(),
        Some(DOCKERCFG_TYPE)
    );
}

#[test]
fn foreign_secret_with_a_copy_name_is_untouched_and_reported() {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator"])]);
    let foreign = Secret {
        metadata: ObjectMeta {
            name: Some(copy("quay-pull")),
            labels: Some(BTreeMap::from([("app".to_owned(), "theirs".to_owned())])),
            ..ObjectMeta::default()
        },
        type_: Some("Opaque".to_owned()),
        ..Secret::default()
    };
    world.put_secret(foreign);
    let before = world.secrets.clone();
    let plan = world.converge();
    assert_eq!(
        world.secrets, before,
        "never created, updated, adopted or deleted"
    );
    assert_eq!(plan.conflicts.len(), 1);
    assert!(
        plan.pod_template_secrets.is_empty(),
        "a foreign secret is never attached"
    );
    assert_eq!(world.service_account("operator").image_pull_secrets, None);
    let conflict = condition(&plan.conditions(), CONDITION_PULL_SECRET_CONFLICT).clone();
    assert_eq!(conflict.status, ConditionStatus::True);
    assert!(
        conflict
            .message
            .contains(&format!("secret team-a/{}", copy("quay-pull"))),
        "{}",
        conflict.message
    );

    // Uninstall leaves it alone too.
    world.csvs.clear();
    world.leaving_service_accounts = vec!["operator".to_owned()];
    world.converge();
    assert_eq!(world.secrets, before);
}

#[test]
fn deleted_or_edited_copy_is_restored() {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator"])]);
    world.converge();
    let pristine = world.secrets[&copy("quay-pull")].data.clone();
    let mut edited = world.secrets[&copy("quay-pull")].clone();
    edited.data = Some(BTreeMap::new());
    world.put_secret(edited);
    world.converge();
    assert_eq!(world.secrets[&copy("quay-pull")].data, pristine);
    world.secrets.clear();
    world.converge();
    assert_eq!(world.secrets[&copy("quay-pull")].data, pristine);
}

#[test]
fn not_selected_namespace_gets_no_copies_and_loses_existing_ones() {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator"])]);
    world.converge();
    world.scope = Some(NotPropagated::NotSelected {
        namespace: "team-a".to_owned(),
        catalog: catalog(),
        selector: "tier=gold".to_owned(),
    });
    let plan = world.plan();
    assert_eq!(plan.deletions[0].reason, DeletionReason::NotPropagated);
    let condition = condition(&plan.conditions(), CONDITION_PULL_SECRETS_NOT_PROPAGATED).clone();
    assert_eq!(
        (condition.status, condition.reason),
        (ConditionStatus::True, "NamespaceNotSelected")
    );
    world.apply(&plan);
    assert!(world.plan().is_converged());
    assert!(world.secrets.is_empty());
    assert_eq!(world.service_account("operator").image_pull_secrets, None);
    assert!(world.plan().pod_template_secrets.is_empty());
}

#[test]
fn invalid_selector_copies_nothing_new_and_keeps_what_exists() {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator"])]);
    world.converge();
    world.secret_names.push("second-pull".to_owned());
    world
        .sources
        .insert("second-pull".to_owned(), source("second-pull", MARKER));
    world
        .sources
        .insert("quay-pull".to_owned(), source("quay-pull", "rotated"));
    world.scope = Some(NotPropagated::InvalidSelector {
        catalog: catalog(),
        selector: "tier in (gold".to_owned(),
        error: SelectorError::Empty,
    });
    let plan = world.plan();
    assert!(plan.is_converged(), "{plan:?}");
    assert_eq!(plan.pod_template_secrets, [copy("quay-pull")]);
    assert_eq!(world.secrets.len(), 1);
}

#[test]
fn missing_service_accounts_are_reported() {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator", "not-yet"])]);
    world.service_accounts.remove("not-yet");
    let plan = world.plan();
    assert_eq!(plan.missing_service_accounts, ["not-yet"]);
}

#[test]
fn copies_of_another_catalog_are_not_ours_to_delete() {
    let mut world = World::new(&["quay-pull"], vec![csv("op.v1", &["operator"])]);
    let other = CatalogRef {
        namespace: "olm".to_owned(),
        name: "other-catalog".to_owned(),
    };
    let other_copy = Secret {
        metadata: ObjectMeta {
            name: Some(other.copy_name("quay-pull")),
            labels: Some(other.copy_labels("quay-pull")),
            ..ObjectMeta::default()
        },
        ..source("quay-pull", MARKER)
    };
    world.put_secret(other_copy);
    let mut sa = world.service_account("operator").clone();
    sa.image_pull_secrets = Some(vec![k8s_openapi::api::core::v1::LocalObjectReference {
        name: other.copy_name("quay-pull"),
    }]);
    sa.metadata.annotations = Some(BTreeMap::from([(
        ADDED_PULL_SECRETS_ANNOTATION.to_owned(),
        format!("[\"{}\"]", other.copy_name("quay-pull")),
    )]));
    world.put_service_account(sa);
    world.converge();
    world.csvs.clear();
    world.leaving_service_accounts = vec!["operator".to_owned()];
    world.converge();
    assert_eq!(world.secrets.len(), 1, "the other catalog's copy stays");
    assert_eq!(
        entries(world.service_account("operator")),
        [other.copy_name("quay-pull")]
    );
    let labels = world
        .secrets
        .values()
        .next()
        .and_then(|s| s.metadata.labels.clone())
        .unwrap_or_default();
    assert_eq!(labels[CATALOG_NAME_LABEL], "other-catalog");
    assert_eq!(labels[MANAGED_LABEL], "true");
    assert_eq!(labels[SOURCE_NAMESPACE_LABEL], "olm");
    assert_eq!(labels[SOURCE_NAME_LABEL], "quay-pull");
}

#[test]
fn copies_selector_selects_exactly_this_catalogs_copies() {
    let selector =
        crate::pull_secrets::parse_selector(&catalog().copies_selector()).expect("valid");
    use kube::core::SelectorExt;
    assert!(selector.matches(&catalog().copy_labels("anything")));
    let other = CatalogRef {
        namespace: "olm".to_owned(),
        name: "other".to_owned(),
    };
    assert!(!selector.matches(&other.copy_labels("anything")));
}
