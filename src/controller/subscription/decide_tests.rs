use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::ObjectMeta;

use super::*;
use crate::api::catalog_source::{CatalogSourceStatus, GrpcConnectionState};
use crate::api::csv_status::ClusterServiceVersionStatus;
use crate::api::{
    Approval, CatalogSourceSpec, ClusterServiceVersionSpec, InstallPlanSpec, SubscriptionSpec,
    SubscriptionStatus,
};
use crate::controller::catalogs::LoadedCatalog;
use crate::controller::keys;
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

pub(super) fn loaded(text: &str) -> LoadedCatalog {
    let config = DeclarativeConfig::parse(text, Path::new("catalog.yaml")).unwrap();
    LoadedCatalog {
        digest: Digest::sha256_of(text.as_bytes()),
        image: "registry.example.com/catalog:latest".into(),
        catalog: Catalog::new(config).unwrap(),
        loaded_at: jiff::Timestamp::UNIX_EPOCH,
    }
}

pub(super) fn source(namespace: &str, name: &str, state: Option<&str>) -> CatalogSource {
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

pub(super) fn subscription(
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

pub(super) fn plan(csv: &str) -> InstallPlan {
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

pub(super) fn csvs(
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
pub(super) struct World {
    pub(super) sources: Vec<(CatalogSource, Option<LoadedCatalog>)>,
    pub(super) subscriptions: Vec<Arc<Subscription>>,
    pub(super) namespace_plans: Vec<InstallPlan>,
}

impl World {
    pub(super) fn new() -> Self {
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

    pub(super) fn only_own_catalog() -> Self {
        let mut world = Self::new();
        world.sources.truncate(1);
        world
    }

    pub(super) fn run(
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

pub(super) fn install_of(decision: &Decision) -> &Install {
    match &decision.step {
        Step::Install(install) => install,
        other => panic!("expected an install, got {other:?}"),
    }
}

pub(super) fn installs(decision: &Decision) -> (&str, Option<&str>) {
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
