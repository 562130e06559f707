use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use kube::api::ObjectMeta;

use super::*;
use crate::api::csv_status::ClusterServiceVersionStatus;
use crate::api::{
    Approval, ClusterServiceVersionSpec, InstallPlanSpec, SubscriptionSpec, SubscriptionStatus,
};
use crate::fbc::DeclarativeConfig;

const CATALOG: &str = r#"
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

fn catalog() -> Catalog {
    let config = DeclarativeConfig::parse(CATALOG, Path::new("demo.yaml")).unwrap();
    Catalog::new(config).unwrap()
}

fn subscription(starting_csv: Option<&str>, installed: Option<&str>) -> Subscription {
    let mut subscription = Subscription::new(
        "demo",
        SubscriptionSpec {
            catalog_source: "catalog".into(),
            catalog_source_namespace: "olm".into(),
            package: "demo".into(),
            starting_csv: starting_csv.map(str::to_owned),
            ..SubscriptionSpec::default()
        },
    );
    subscription.metadata.namespace = Some("ops".into());
    subscription.status = installed.map(|name| SubscriptionStatus {
        installed_csv: Some(name.into()),
        ..SubscriptionStatus::new(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ))
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
            let csv = ClusterServiceVersion {
                metadata: ObjectMeta {
                    name: Some((*name).into()),
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

fn run(
    subscription: &Subscription,
    plans: &[InstallPlan],
    csvs: &BTreeMap<String, Arc<ClusterServiceVersion>>,
    catalog: CatalogState<'_>,
) -> Decision {
    decide(&Inputs {
        subscription,
        plans,
        csvs,
        catalog,
    })
}

fn installs(decision: &Decision) -> (&str, Option<&str>) {
    match &decision.step {
        Step::Install(bundle) => (bundle.name.as_str(), bundle.replaces.as_deref()),
        other => panic!("expected an install, got {other:?}"),
    }
}

#[test]
fn first_install_takes_the_channel_head_or_the_starting_csv() {
    let catalog = catalog();
    let none = csvs(&[]);
    let head = run(
        &subscription(None, None),
        &[],
        &none,
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(installs(&head), ("demo.v1.1.0", None));
    assert_eq!(head.installed, None);
    let starting = run(
        &subscription(Some("demo.v1.0.0"), None),
        &[],
        &none,
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(installs(&starting), ("demo.v1.0.0", None));
}

#[test]
fn nothing_is_resolved_while_the_latest_plan_has_no_csv() {
    let catalog = catalog();
    let decision = run(
        &subscription(None, None),
        &[plan("demo.v1.0.0")],
        &csvs(&[]),
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(decision.step, Step::PlanInFlight);
    assert!(!decision.step.resolved());
}

#[test]
fn upgrades_wait_for_the_installed_csv_to_succeed() {
    let catalog = catalog();
    let plans = [plan("demo.v1.0.0")];
    let installing = csvs(&[("demo.v1.0.0", ClusterServiceVersionPhase::Installing)]);
    let decision = run(
        &subscription(None, None),
        &plans,
        &installing,
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(decision.step, Step::InstalledNotSucceeded);
    assert_eq!(decision.installed.as_deref(), Some("demo.v1.0.0"));

    let succeeded = csvs(&[("demo.v1.0.0", ClusterServiceVersionPhase::Succeeded)]);
    let decision = run(
        &subscription(None, None),
        &plans,
        &succeeded,
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(installs(&decision), ("demo.v1.1.0", Some("demo.v1.0.0")));
}

#[test]
fn the_latest_installed_csv_stays() {
    let catalog = catalog();
    let decision = run(
        &subscription(None, Some("demo.v1.1.0")),
        &[],
        &csvs(&[("demo.v1.1.0", ClusterServiceVersionPhase::Succeeded)]),
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(decision.step, Step::AtLatest);
    assert!(decision.step.resolved());
    assert_eq!(decision.installed.as_deref(), Some("demo.v1.1.0"));
}

#[test]
fn resolution_failures_use_olm_wording() {
    let catalog = catalog();
    let mut missing_package = subscription(None, None);
    missing_package.spec.package = "nope".into();
    let decision = run(
        &missing_package,
        &[],
        &csvs(&[]),
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(
        decision.step,
        Step::ResolutionFailed {
            reason: "ConstraintsNotSatisfiable",
            message: "constraints not satisfiable: no operators found in package nope in the \
                      catalog referenced by subscription demo, subscription demo exists"
                .into(),
        }
    );
    let mut missing_channel = subscription(None, None);
    missing_channel.spec.channel = Some("fast".into());
    let decision = run(
        &missing_channel,
        &[],
        &csvs(&[]),
        CatalogState::Loaded(&catalog),
    );
    let Step::ResolutionFailed { message, .. } = decision.step else {
        panic!("expected a failure");
    };
    assert!(
        message.contains("no operators found in channel fast of package demo"),
        "{message}"
    );

    let decision = run(
        &subscription(None, None),
        &[],
        &csvs(&[]),
        CatalogState::Missing,
    );
    let Step::ResolutionFailed { message, .. } = decision.step else {
        panic!("expected a failure");
    };
    assert_eq!(
        message,
        "constraints not satisfiable: no operators found from catalog catalog in namespace olm \
         referenced by subscription demo, subscription demo exists"
    );
}

#[test]
fn an_unloaded_catalog_is_quiet_only_when_ready() {
    let none = csvs(&[]);
    let sub = subscription(None, None);
    assert_eq!(
        run(&sub, &[], &none, CatalogState::NotLoaded { ready: true }).step,
        Step::CatalogNotLoaded { quiet: true }
    );
    assert_eq!(
        run(&sub, &[], &none, CatalogState::NotLoaded { ready: false }).step,
        Step::CatalogNotLoaded { quiet: false }
    );
}

#[test]
fn a_deleted_csv_with_its_plan_still_present_is_not_reinstalled() {
    let catalog = catalog();
    let decision = run(
        &subscription(None, Some("demo.v1.1.0")),
        &[plan("demo.v1.1.0")],
        &csvs(&[]),
        CatalogState::Loaded(&catalog),
    );
    assert_eq!(decision.step, Step::PlanInFlight);
    assert_eq!(decision.installed, None);
}
