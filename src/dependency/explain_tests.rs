//! Explanations of unsatisfiable resolutions: what is missing, what conflicts, and malformed
//! dependencies, named as a user can act on them.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::test_support::*;
use super::{SolveError, solve};

#[test]
fn a_missing_api_and_a_range_nobody_offers_are_named() {
    let (g, v, k) = ETCD;
    let ops = CatalogBuilder::default()
        .package("etcd-operator", &[("0.9.4", vec![requires_api(g, v, k)])])
        .package("app", &[("1.0.0", vec![requires_package("db", ">=2.0.0")])])
        .package("db", &[("1.0.0", vec![]), ("1.1.0", vec![])])
        .build();
    let catalogs = || vec![visible("team-a", "ops", 0, &ops)];
    assert_eq!(
        unsatisfiable(solve(&problem("etcd-operator", catalogs(), vec![]))),
        "etcd-operator.v0.9.4 requires API etcd.database.coreos.com/v1beta2 EtcdCluster; \
         no catalog visible to namespace team-a provides it"
    );
    assert_eq!(
        unsatisfiable(solve(&problem("app", catalogs(), vec![]))),
        "app.v1.0.0 requires package db >=2.0.0; no version of db in that range is visible to \
         namespace team-a (found 1.0.0, 1.1.0)"
    );
}

#[test]
fn the_chain_to_what_is_missing_is_named_with_the_failure_message() {
    let ops = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![requires_package("db", ">=1.0.0")])])
        .package(
            "db",
            &[(
                "1.0.0",
                vec![constraint(json!({
                    "failureMessage": "db needs a storage operator",
                    "package": {"packageName": "storage", "versionRange": ">=1.0.0"}
                }))],
            )],
        )
        .build();
    assert_eq!(
        unsatisfiable(solve_app(&ops)),
        "app.v1.0.0 requires package db >=1.0.0; db.v1.0.0 requires package storage >=1.0.0; \
         no catalog visible to namespace team-a provides it (db needs a storage operator)"
    );
}

#[test]
fn two_required_ranges_in_conflict_name_both_requirers() {
    let ops = CatalogBuilder::default()
        .package(
            "app",
            &[(
                "1.0.0",
                vec![
                    requires_package("etcd", ">=2.0.0"),
                    requires_package("helper", ">=1.0.0"),
                ],
            )],
        )
        .package(
            "helper",
            &[("1.0.0", vec![requires_package("etcd", "<2.0.0")])],
        )
        .package("etcd", &[("1.0.0", vec![]), ("2.0.0", vec![])])
        .build();
    assert_eq!(
        unsatisfiable(solve_app(&ops)),
        "app.v1.0.0 requires package etcd >=2.0.0 and helper.v1.0.0 requires package etcd <2.0.0; \
         no single bundle of package etcd satisfies all of them (a namespace holds one bundle \
         per package)"
    );
}

#[test]
fn two_operators_cannot_provide_one_api() {
    let (g, v, k) = ETCD;
    let ops = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![provides_api(g, v, k)])])
        .build();
    let mut other = installed("etcd.v0.9.2", "etcd", "0.9.2");
    other.provides = vec![gvk(g, v, k)];
    assert_eq!(
        unsatisfiable(solve(&problem(
            "app",
            vec![visible("team-a", "ops", 0, &ops)],
            vec![other]
        ))),
        "app.v1.0.0 and the installed etcd.v0.9.2 both provide API \
         etcd.database.coreos.com/v1beta2 EtcdCluster; only one operator in a namespace may \
         provide an API"
    );
}

#[test]
fn a_cel_constraint_is_refused_naming_bundle_and_catalog() {
    let ops = CatalogBuilder::default()
        .package(
            "app",
            &[(
                "1.0.0",
                vec![constraint(
                    json!({"cel": {"rule": "properties.exists(p, true)"}}),
                )],
            )],
        )
        .build();
    let error = solve(&problem(
        "app",
        vec![visible("team-a", "ops", 0, &ops)],
        vec![],
    ));
    let Err(SolveError::InvalidDependency(error)) = error else {
        panic!("{error:?}")
    };
    assert_eq!(
        error.to_string(),
        "bundle app.v1.0.0 in catalog team-a/ops: olm.constraint has a cel rule \
         (\"properties.exists(p, true)\"), which opcat does not evaluate; only package, gvk, \
         all, any and not constraints are supported"
    );
}

#[test]
fn every_requirement_nothing_meets_is_named() {
    let (g, v, k) = ETCD;
    let ops = CatalogBuilder::default()
        .package(
            "app",
            &[(
                "1.0.0",
                vec![
                    requires_api(g, v, k),
                    requires_api("monitoring.coreos.com", "v1", "PodMonitor"),
                ],
            )],
        )
        .build();
    assert_eq!(
        unsatisfiable(solve_app(&ops)),
        "app.v1.0.0 requires API etcd.database.coreos.com/v1beta2 EtcdCluster; no catalog \
         visible to namespace team-a provides it\n\
         app.v1.0.0 requires API monitoring.coreos.com/v1 PodMonitor; no catalog visible to \
         namespace team-a provides it"
    );
}
