use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;

use super::*;
use crate::api::catalog_source::{CatalogSourceStatus, GrpcConnectionState};
use crate::api::csv_status::ClusterServiceVersionStatus;
use crate::api::install_plan::InstallPlanStatus;
use crate::api::{
    Approval, CatalogSourceSpec, ClusterServiceVersionSpec, InstallPlanSpec, SubscriptionSpec,
    SubscriptionStatus,
};
use crate::controller::catalogs::LoadedCatalog;
use crate::controller::keys;
use crate::controller::plan_record::{BUNDLES, PlanEntry, encode};
use crate::fbc::{Catalog, DeclarativeConfig};
use crate::registry::Digest;

const DEMO: &str = r#"
schema: olm.package
name: demo
defaultChannel: stable
---
schema: olm.channel
package: demo
name: stable
entries:
  - name: demo.v1.0.0
  - name: demo.v1.1.0
    replaces: demo.v1.0.0
---
schema: olm.bundle
package: demo
name: demo.v1.0.0
image: registry.example.com/demo-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.0.0}
---
schema: olm.bundle
package: demo
name: demo.v1.1.0
image: registry.example.com/demo-bundle:v1.1.0
properties:
  - type: olm.package
    value: {packageName: demo, version: 1.1.0}
"#;

/// `needy` requires package etcd >=0.9.0, which only the `private` catalog has.
const NEEDY: &str = r#"
schema: olm.package
name: needy
defaultChannel: stable
---
schema: olm.channel
package: needy
name: stable
entries:
  - name: needy.v1.0.0
---
schema: olm.bundle
package: needy
name: needy.v1.0.0
image: registry.example.com/needy-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: needy, version: 1.0.0}
  - type: olm.package.required
    value: {packageName: etcd, versionRange: ">=0.9.0"}
"#;

const ETCD: &str = r#"
schema: olm.package
name: etcd
defaultChannel: alpha
---
schema: olm.channel
package: etcd
name: alpha
entries:
  - name: etcd.v0.9.4
---
schema: olm.bundle
package: etcd
name: etcd.v0.9.4
image: registry.example.com/etcd-bundle:v0.9.4
properties:
  - type: olm.package
    value: {packageName: etcd, version: 0.9.4}
  - type: olm.gvk
    value: {group: etcd.database.coreos.com, kind: EtcdCluster, version: v1beta2}
"#;

fn loaded(text: &str) -> LoadedCatalog {
    let config = DeclarativeConfig::parse(text, Path::new("catalog.yaml")).unwrap();
    LoadedCatalog {
        digest: Digest::sha256_of(text.as_bytes()),
        image: "registry.example.com/catalog:latest".into(),
        catalog: Catalog::new(config).unwrap(),
        loaded_at: jiff::Timestamp::UNIX_EPOCH,
    }
}

fn source(namespace: &str, name: &str, state: Option<&str>) -> CatalogSource {
    CatalogSource {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            ..ObjectMeta::default()
        },
        spec: CatalogSourceSpec::default(),
        status: state.map(|state| CatalogSourceStatus {
            connection_state: Some(GrpcConnectionState {
                last_observed_state: state.into(),
                ..GrpcConnectionState::default()
            }),
            ..CatalogSourceStatus::default()
        }),
    }
}

fn subscription(
    package: &str,
    starting_csv: Option<&str>,
    installed: Option<&str>,
) -> Subscription {
    let mut subscription = Subscription::new(
        package,
        SubscriptionSpec {
            catalog_source: "catalog".into(),
            catalog_source_namespace: "olm".into(),
            package: package.into(),
            starting_csv: starting_csv.map(str::to_owned),
            ..SubscriptionSpec::default()
        },
    );
    subscription.metadata.namespace = Some("ops".into());
    subscription.metadata.uid = Some(format!("{package}-uid"));
    subscription.status = installed.map(|name| SubscriptionStatus {
        installed_csv: Some(name.into()),
        ..SubscriptionStatus::new(Time(jiff::Timestamp::UNIX_EPOCH))
    });
    subscription
}

fn plan(csv: &str) -> InstallPlan {
    InstallPlan::new(
        "install-x",
        InstallPlanSpec {
            cluster_service_version_names: vec![csv.into()],
            approval: Approval::Automatic,
            approved: true,
            ..InstallPlanSpec::default()
        },
    )
}

fn csvs(
    entries: &[(&str, ClusterServiceVersionPhase)],
) -> BTreeMap<String, Arc<ClusterServiceVersion>> {
    entries
        .iter()
        .map(|(name, phase)| {
            let package = name.split_once('.').map_or(*name, |(package, _)| package);
            let csv = ClusterServiceVersion {
                metadata: ObjectMeta {
                    name: Some((*name).into()),
                    annotations: Some(BTreeMap::from([(
                        keys::csv::PACKAGE.to_owned(),
                        package.to_owned(),
                    )])),
                    ..ObjectMeta::default()
                },
                spec: ClusterServiceVersionSpec {
                    version: name.rsplit_once(".v").map(|(_, v)| v.to_owned()),
                    ..ClusterServiceVersionSpec::default()
                },
                status: Some(ClusterServiceVersionStatus {
                    phase: Some(*phase),
                    ..ClusterServiceVersionStatus::default()
                }),
            };
            ((*name).to_owned(), Arc::new(csv))
        })
        .collect()
}

/// The catalogs a namespace sees: `olm/catalog` (demo and needy) and `olm/private` (etcd).
struct World {
    sources: Vec<(CatalogSource, Option<LoadedCatalog>)>,
    subscriptions: Vec<Arc<Subscription>>,
    namespace_plans: Vec<InstallPlan>,
}

impl World {
    fn new() -> Self {
        Self {
            sources: vec![
                (
                    source("olm", "catalog", Some("READY")),
                    Some(loaded(&format!("{DEMO}---{NEEDY}"))),
                ),
                (source("olm", "private", Some("READY")), Some(loaded(ETCD))),
            ],
            subscriptions: vec![],
            namespace_plans: vec![],
        }
    }

    fn only_own_catalog() -> Self {
        let mut world = Self::new();
        world.sources.truncate(1);
        world
    }

    fn run(
        &self,
        subscription: &Subscription,
        plans: &[InstallPlan],
        csvs: &BTreeMap<String, Arc<ClusterServiceVersion>>,
    ) -> Decision {
        let seen: Vec<SeenCatalog<'_>> = self
            .sources
            .iter()
            .map(|(source, loaded)| SeenCatalog {
                source,
                loaded: loaded.as_ref(),
            })
            .collect();
        decide(&Inputs {
            subscription,
            plans,
            namespace_plans: &self.namespace_plans,
            csvs,
            catalogs: &seen,
            subscriptions: &self.subscriptions,
        })
    }
}

fn install_of(decision: &Decision) -> &Install {
    match &decision.step {
        Step::Install(install) => install,
        other => panic!("expected an install, got {other:?}"),
    }
}

fn installs(decision: &Decision) -> (&str, Option<&str>) {
    let install = install_of(decision);
    let own = install.entries.last().unwrap();
    (own.name.as_str(), own.replaces.as_deref())
}

#[test]
fn first_install_takes_the_channel_head_or_the_starting_csv() {
    let world = World::new();
    let none = csvs(&[]);
    let head = world.run(&subscription("demo", None, None), &[], &none);
    assert_eq!(installs(&head), ("demo.v1.1.0", None));
    assert_eq!(head.installed, None);
    let install = install_of(&head);
    assert_eq!(install.own_csv(), Some("demo.v1.1.0"));
    assert!(install.new_subscriptions.is_empty());
    let entry = &install.entries[0];
    assert_eq!(entry.catalog(), "olm/catalog");
    assert_eq!(entry.subscription, "demo");
    assert_eq!(entry.version, "1.1.0");
    assert!(entry.catalog_digest.starts_with("sha256:"));
    assert_eq!(entry.properties.len(), 1, "its olm.package property");
    let starting = world.run(&subscription("demo", Some("demo.v1.0.0"), None), &[], &none);
    assert_eq!(installs(&starting), ("demo.v1.0.0", None));
}

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
fn nothing_is_resolved_while_the_latest_plan_has_no_csv() {
    let world = World::new();
    let decision = world.run(
        &subscription("demo", None, None),
        &[plan("demo.v1.0.0")],
        &csvs(&[]),
    );
    assert_eq!(decision.step, Step::PlanInFlight);
    assert!(!decision.step.resolved());
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

#[test]
fn upgrades_wait_for_the_installed_csv_to_succeed() {
    let world = World::new();
    let plans = [plan("demo.v1.0.0")];
    let installing = csvs(&[("demo.v1.0.0", ClusterServiceVersionPhase::Installing)]);
    let decision = world.run(&subscription("demo", None, None), &plans, &installing);
    assert_eq!(decision.step, Step::InstalledNotSucceeded);
    assert_eq!(decision.installed.as_deref(), Some("demo.v1.0.0"));

    let succeeded = csvs(&[("demo.v1.0.0", ClusterServiceVersionPhase::Succeeded)]);
    let decision = world.run(&subscription("demo", None, None), &plans, &succeeded);
    assert_eq!(installs(&decision), ("demo.v1.1.0", Some("demo.v1.0.0")));
}

#[test]
fn the_latest_installed_csv_stays() {
    let world = World::new();
    let decision = world.run(
        &subscription("demo", None, Some("demo.v1.1.0")),
        &[],
        &csvs(&[("demo.v1.1.0", ClusterServiceVersionPhase::Succeeded)]),
    );
    assert_eq!(decision.step, Step::AtLatest);
    assert!(decision.step.resolved());
    assert_eq!(decision.installed.as_deref(), Some("demo.v1.1.0"));
}

#[test]
fn resolution_failures_use_olm_wording() {
    let world = World::new();
    let mut missing_package = subscription("demo", None, None);
    missing_package.spec.package = "nope".into();
    let decision = world.run(&missing_package, &[], &csvs(&[]));
    assert_eq!(
        decision.step,
        Step::ResolutionFailed {
            reason: "ConstraintsNotSatisfiable",
            message: "constraints not satisfiable: no operators found in package nope in the \
                      catalog referenced by subscription demo, subscription demo exists"
                .into(),
        }
    );
    let mut missing_channel = subscription("demo", None, None);
    missing_channel.spec.channel = Some("fast".into());
    let decision = world.run(&missing_channel, &[], &csvs(&[]));
    let Step::ResolutionFailed { message, .. } = decision.step else {
        panic!("expected a failure");
    };
    assert!(
        message.contains("no operators found in channel fast of package demo"),
        "{message}"
    );

    let mut elsewhere = subscription("demo", None, None);
    elsewhere.spec.catalog_source = "missing".into();
    let decision = world.run(&elsewhere, &[], &csvs(&[]));
    let Step::ResolutionFailed { message, .. } = decision.step else {
        panic!("expected a failure");
    };
    assert_eq!(
        message,
        "constraints not satisfiable: no operators found from catalog missing in namespace olm \
         referenced by subscription demo, subscription demo exists"
    );
}

#[test]
fn a_deleted_csv_with_its_plan_still_present_is_not_reinstalled() {
    let world = World::new();
    let decision = world.run(
        &subscription("demo", None, Some("demo.v1.1.0")),
        &[plan("demo.v1.1.0")],
        &csvs(&[]),
    );
    assert_eq!(decision.step, Step::PlanInFlight);
    assert_eq!(decision.installed, None);
}
