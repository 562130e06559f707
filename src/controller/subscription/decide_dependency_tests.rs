//! The decisions that involve dependencies: other catalogs, other Subscriptions, shared plans.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::tests::*;
use super::*;
use crate::api::install_plan::InstallPlanStatus;
use crate::controller::plan_record::{BUNDLES, PlanEntry, encode};

#[test]
fn a_dependency_from_another_catalog_gets_its_own_subscription_and_goes_first() {
    let world = World::new();
    let decision = world.run(&subscription("needy", None, None), &[], &csvs(&[]));
    let install = install_of(&decision);
    let names: Vec<&str> = install.csvs().collect();
    assert_eq!(names, ["etcd.v0.9.4", "needy.v1.0.0"]);
    let dependency = &install.entries[0];
    assert_eq!(dependency.catalog(), "olm/private");
    assert_eq!(dependency.subscription, "etcd-alpha-private-olm");
    let required = dependency.required_by.as_ref().unwrap();
    assert_eq!(required.csv, "needy.v1.0.0");
    assert!(required.requirement.contains("etcd"), "{required:?}");
    assert_eq!(install.new_subscriptions.len(), 1);
    let new = &install.new_subscriptions[0];
    assert_eq!(new.spec.starting_csv.as_deref(), Some("etcd.v0.9.4"));
    assert_eq!(new.spec.catalog_source, "private");
    assert_eq!(install.dependencies().collect::<Vec<_>>(), ["etcd.v0.9.4"]);

    // A Subscription to the package already in the namespace serves the plan instead.
    let mut world = World::new();
    let mut mine = subscription("etcd", None, None);
    mine.metadata.name = Some("my-etcd".into());
    world.subscriptions.push(Arc::new(mine));
    let decision = world.run(&subscription("needy", None, None), &[], &csvs(&[]));
    let install = install_of(&decision);
    assert!(install.new_subscriptions.is_empty());
    assert_eq!(install.existing_subscriptions, ["my-etcd"]);
    assert_eq!(install.entries[0].subscription, "my-etcd");
}

#[test]
fn an_installed_dependency_is_reused_and_one_being_installed_is_waited_for() {
    let world = World::new();
    let installed = csvs(&[("etcd.v0.9.4", ClusterServiceVersionPhase::Succeeded)]);
    let decision = world.run(&subscription("needy", None, None), &[], &installed);
    let install = install_of(&decision);
    assert_eq!(install.csvs().collect::<Vec<_>>(), ["needy.v1.0.0"]);

    let mut world = World::new();
    let mut other = plan("etcd.v0.9.4");
    other.metadata.name = Some("install-other".into());
    other.status = Some(InstallPlanStatus {
        phase: "RequiresApproval".into(),
        ..InstallPlanStatus::default()
    });
    world.namespace_plans.push(other);
    let decision = world.run(&subscription("needy", None, None), &[], &csvs(&[]));
    assert_eq!(
        decision.step,
        Step::DependencyInFlight {
            csv: "etcd.v0.9.4".into(),
            plan: "install-other".into()
        }
    );
    assert!(!decision.step.resolved());
}

#[test]
fn an_unmet_dependency_names_the_chain_and_the_catalogs_left_out() {
    let mut world = World::only_own_catalog();
    world
        .sources
        .push((source("olm", "broken", Some("TRANSIENT_FAILURE")), None));
    let decision = world.run(&subscription("needy", None, None), &[], &csvs(&[]));
    let Step::ResolutionFailed { reason, message } = &decision.step else {
        panic!("expected a failure: {decision:?}");
    };
    assert_eq!(*reason, "ConstraintsNotSatisfiable");
    assert!(
        message.starts_with("constraints not satisfiable: "),
        "{message}"
    );
    assert!(
        message.contains("needy.v1.0.0") && message.contains("etcd"),
        "{message}"
    );
    assert!(
        message.ends_with(" (catalog sources olm/broken could not be read and were not searched)"),
        "{message}"
    );
}

#[test]
fn a_visible_catalog_still_loading_is_waited_for() {
    let mut world = World::new();
    world.sources[1].1 = None;
    world.sources[1].0.status = None;
    let sub = subscription("demo", None, None);
    // Its first load (no status yet): an expected wait, so a condition (DESIGN invariant 7).
    assert_eq!(
        world.run(&sub, &[], &csvs(&[])).step,
        Step::CatalogNotLoaded { quiet: false }
    );
    // READY but not in memory (a restart): quiet.
    world.sources[1].0 = source("olm", "private", Some("READY"));
    assert_eq!(
        world.run(&sub, &[], &csvs(&[])).step,
        Step::CatalogNotLoaded { quiet: true }
    );
    // The Subscription's own catalog, likewise.
    let mut world = World::new();
    world.sources[0].1 = None;
    assert_eq!(
        world.run(&sub, &[], &csvs(&[])).step,
        Step::CatalogNotLoaded { quiet: true }
    );
    world.sources[0].0.status = None;
    assert_eq!(
        world.run(&sub, &[], &csvs(&[])).step,
        Step::CatalogNotLoaded { quiet: false }
    );
}

#[test]
fn a_shared_plan_is_in_flight_for_each_subscription_until_its_own_csv_exists() {
    let world = World::new();
    let entry = |name: &str, subscription: &str| PlanEntry {
        name: name.into(),
        subscription: subscription.into(),
        ..PlanEntry::default()
    };
    let mut shared = plan("etcd.v0.9.4");
    shared.spec.cluster_service_version_names = vec!["etcd.v0.9.4".into(), "needy.v1.0.0".into()];
    shared.metadata.annotations = Some(BTreeMap::from([(
        BUNDLES.to_owned(),
        encode(&[
            entry("etcd.v0.9.4", "etcd-alpha-private-olm"),
            entry("needy.v1.0.0", "needy"),
        ]),
    )]));
    let mut dependency = subscription("etcd", Some("etcd.v0.9.4"), None);
    dependency.metadata.name = Some("etcd-alpha-private-olm".into());
    dependency.spec.catalog_source = "private".into();
    let plans = [shared];
    let only_etcd = csvs(&[("etcd.v0.9.4", ClusterServiceVersionPhase::Succeeded)]);
    // The dependency's CSV exists: its Subscription has it installed, and it is the latest.
    let decision = world.run(&dependency, &plans, &only_etcd);
    assert_eq!(decision.installed.as_deref(), Some("etcd.v0.9.4"));
    assert_eq!(decision.step, Step::AtLatest);
    // The dependent's does not yet: in flight.
    let decision = world.run(&subscription("needy", None, None), &plans, &only_etcd);
    assert_eq!(decision.step, Step::PlanInFlight);
}
