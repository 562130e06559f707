//! The solver on small catalogs: every case of issue 13's "Done means", at the pure level.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::test_support::*;
use super::{Constraint, Dependency, Outcome, solve};

#[test]
fn a_package_dependency_comes_from_a_second_catalog() {
    let ops = CatalogBuilder::default()
        .package(
            "app",
            &[("1.0.0", vec![requires_package("etcd", ">=0.9.0")])],
        )
        .build();
    let community = CatalogBuilder::default()
        .package("etcd", &[("0.9.0", vec![]), ("0.9.2", vec![])])
        .build();
    let catalogs = vec![
        visible("olm", "community", 0, &community),
        visible("team-a", "ops", 0, &ops),
    ];
    assert_eq!(
        plan(solve(&problem("app", catalogs, vec![]))),
        vec![
            row(
                "etcd.v0.9.2",
                "olm/community",
                Some("app.v1.0.0 requires package etcd >=0.9.0")
            ),
            row("app.v1.0.0", "team-a/ops", None),
        ]
    );
}

#[test]
fn an_api_dependency_installs_its_provider() {
    let (g, v, k) = ETCD;
    let ops = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![requires_api(g, v, k)])])
        .package("etcd", &[("0.9.4", vec![provides_api(g, v, k)])])
        .build();
    assert_eq!(
        plan(solve_app(&ops)),
        vec![
            row(
                "etcd.v0.9.4",
                "team-a/ops",
                Some("app.v1.0.0 requires API etcd.database.coreos.com/v1beta2 EtcdCluster")
            ),
            row("app.v1.0.0", "team-a/ops", None),
        ]
    );
}

#[test]
fn an_installed_dependency_is_reused_and_kept() {
    let ops = CatalogBuilder::default()
        .package(
            "app",
            &[("1.0.0", vec![requires_package("etcd", ">=0.9.0")])],
        )
        .package("etcd", &[("0.9.2", vec![]), ("0.9.4", vec![])])
        .build();
    let catalogs = || vec![visible("team-a", "ops", 0, &ops)];
    let etcd = installed("etcd.v0.9.2", "etcd", "0.9.2");
    assert_eq!(
        plan(solve(&problem("app", catalogs(), vec![etcd.clone()]))),
        vec![row("app.v1.0.0", "team-a/ops", None)]
    );
    // Too old for a new requirement: kept, and the conflict says so.
    let old = installed("etcd.v0.8.0", "etcd", "0.8.0");
    assert_eq!(
        unsatisfiable(solve(&problem("app", catalogs(), vec![old]))),
        "app.v1.0.0 requires package etcd >=0.9.0 and etcd.v0.8.0 (0.8.0) is installed; no \
         single bundle of package etcd satisfies all of them (a namespace holds one bundle per \
         package, and an installed operator is kept unless its own Subscription upgrades it)"
    );
}

#[test]
fn catalog_priority_decides_between_two_providers() {
    let (g, v, k) = ETCD;
    let app = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![requires_api(g, v, k)])])
        .build();
    let first = CatalogBuilder::default()
        .package("etcd-a", &[("1.0.0", vec![provides_api(g, v, k)])])
        .build();
    let second = CatalogBuilder::default()
        .package("etcd-b", &[("1.0.0", vec![provides_api(g, v, k)])])
        .build();
    let chosen = |a: i32, b: i32| {
        let catalogs = vec![
            visible("team-a", "ops", 0, &app),
            visible("olm", "a", a, &first),
            visible("olm", "b", b, &second),
        ];
        plan(solve(&problem("app", catalogs, vec![])))[0].0.clone()
    };
    assert_eq!(chosen(0, 10), "etcd-b.v1.0.0");
    assert_eq!(chosen(10, 0), "etcd-a.v1.0.0");
    // Equal priority: catalog name; and the Subscription's namespace before the global one.
    assert_eq!(chosen(0, 0), "etcd-a.v1.0.0");
    let catalogs = vec![
        visible("team-a", "ops", 0, &app),
        visible("olm", "a", 0, &first),
        visible("team-a", "b", 0, &second),
    ];
    assert_eq!(
        plan(solve(&problem("app", catalogs, vec![])))[0].0,
        "etcd-b.v1.0.0"
    );
}

#[test]
fn equal_providers_of_an_api_resolve_deterministically_and_exclusively() {
    let (g, v, k) = ETCD;
    let ops = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![requires_api(g, v, k)])])
        .package("zeta-etcd", &[("1.0.0", vec![provides_api(g, v, k)])])
        .package("alpha-etcd", &[("1.0.0", vec![provides_api(g, v, k)])])
        .build();
    for _ in 0..3 {
        let catalogs = vec![visible("team-a", "ops", 0, &ops)];
        assert_eq!(
            plan(solve(&problem("app", catalogs, vec![])))[0].0,
            "alpha-etcd.v1.0.0"
        );
    }
    // An installed provider is reused rather than a second one installed.
    let mut zeta = installed("zeta-etcd.v1.0.0", "zeta-etcd", "1.0.0");
    zeta.provides = vec![gvk(g, v, k)];
    let catalogs = vec![visible("team-a", "ops", 0, &ops)];
    assert_eq!(
        plan(solve(&problem("app", catalogs, vec![zeta]))),
        vec![row("app.v1.0.0", "team-a/ops", None)]
    );
}

#[test]
fn an_upgrade_that_breaks_an_installed_dependent_is_not_chosen() {
    let ops = CatalogBuilder::default()
        .package("db", &[("1.0.0", vec![]), ("2.0.0", vec![])])
        .build();
    let catalogs = || vec![visible("team-a", "ops", 0, &ops)];
    let mut request = problem(
        "db",
        catalogs(),
        vec![installed("db.v1.0.0", "db", "1.0.0")],
    );
    request.subscription.installed = Some("db.v1.0.0".into());
    let upgrade = plan(solve(&request));
    assert_eq!(upgrade, vec![row("db.v2.0.0", "team-a/ops", None)]);

    let mut consumer = installed("consumer.v1.0.0", "consumer", "1.0.0");
    consumer.dependencies = vec![Dependency {
        constraint: Constraint::Package {
            package: "db".into(),
            range: "<2.0.0".into(),
        },
        failure_message: None,
    }];
    request.installed.push(consumer);
    assert_eq!(
        solve(&request),
        Ok(Outcome::AtLatest {
            installed: "db.v1.0.0".into(),
            channel: "stable".into()
        })
    );
}

#[test]
fn transitive_chains_install_deepest_first_and_cycles_end() {
    let ops = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![requires_package("db", ">=1.0.0")])])
        .package(
            "db",
            &[("1.0.0", vec![requires_package("storage", ">=1.0.0")])],
        )
        .package(
            "storage",
            &[("1.0.0", vec![requires_package("db", ">=1.0.0")])],
        )
        .build();
    assert_eq!(
        plan(solve_app(&ops)),
        vec![
            row(
                "storage.v1.0.0",
                "team-a/ops",
                Some("db.v1.0.0 requires package storage >=1.0.0")
            ),
            row(
                "db.v1.0.0",
                "team-a/ops",
                Some("app.v1.0.0 requires package db >=1.0.0")
            ),
            row("app.v1.0.0", "team-a/ops", None),
        ]
    );
}

#[test]
fn the_subscription_resolves_only_from_its_own_catalog() {
    let ops = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![])])
        .build();
    let other = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![]), ("9.0.0", vec![])])
        .build();
    let catalogs = vec![
        visible("team-a", "ops", 0, &ops),
        visible("olm", "other", 100, &other),
    ];
    assert_eq!(
        plan(solve(&problem("app", catalogs, vec![]))),
        vec![row("app.v1.0.0", "team-a/ops", None)]
    );
}

#[test]
fn compound_constraints_select_one_bundle() {
    let ops = CatalogBuilder::default()
        .package(
            "app",
            &[(
                "1.0.0",
                vec![
                    // One etcd bundle that is >=0.9.0 and not 0.9.4: the head is passed over.
                    constraint(json!({"all": {"constraints": [
                        {"package": {"packageName": "etcd", "versionRange": ">=0.9.0"}},
                        {"not": {"constraints": [
                            {"package": {"packageName": "etcd", "versionRange": "0.9.4"}}]}}
                    ]}})),
                    // Either package: the one that exists.
                    constraint(json!({"any": {"constraints": [
                        {"package": {"packageName": "missing", "versionRange": ">=1.0.0"}},
                        {"package": {"packageName": "helper", "versionRange": ">=1.0.0"}}
                    ]}})),
                ],
            )],
        )
        .package(
            "etcd",
            &[("0.9.0", vec![]), ("0.9.2", vec![]), ("0.9.4", vec![])],
        )
        .package("helper", &[("1.0.0", vec![])])
        .build();
    let names: Vec<String> = plan(solve(&problem(
        "app",
        vec![visible("team-a", "ops", 0, &ops)],
        vec![],
    )))
    .into_iter()
    .map(|row| row.0)
    .collect();
    assert_eq!(names, ["etcd.v0.9.2", "helper.v1.0.0", "app.v1.0.0"]);
}

#[test]
fn the_head_whose_dependency_is_missing_gives_way_to_an_older_bundle() {
    let ops = CatalogBuilder::default()
        .package(
            "app",
            &[
                ("1.0.0", vec![]),
                ("2.0.0", vec![requires_package("missing", ">=1.0.0")]),
            ],
        )
        .build();
    assert_eq!(
        plan(solve_app(&ops)),
        vec![row("app.v1.0.0", "team-a/ops", None)]
    );
}

#[test]
fn a_transitive_dependency_prefers_its_requirers_catalog() {
    let ops = CatalogBuilder::default()
        .package("app", &[("1.0.0", vec![requires_package("db", ">=1.0.0")])])
        .build();
    let x = CatalogBuilder::default()
        .package(
            "db",
            &[("1.0.0", vec![requires_package("storage", ">=1.0.0")])],
        )
        .package("storage", &[("1.0.0", vec![])])
        .build();
    let y = CatalogBuilder::default()
        .package("storage", &[("2.0.0", vec![])])
        .build();
    // y has the higher priority, but db comes from x, so x's storage is tried first, as OLM
    // prefers the requiring bundle's catalog.
    let catalogs = vec![
        visible("team-a", "ops", 0, &ops),
        visible("olm", "x", 0, &x),
        visible("olm", "y", 10, &y),
    ];
    assert_eq!(
        plan(solve(&problem("app", catalogs, vec![]))),
        vec![
            row(
                "storage.v1.0.0",
                "olm/x",
                Some("db.v1.0.0 requires package storage >=1.0.0")
            ),
            row(
                "db.v1.0.0",
                "olm/x",
                Some("app.v1.0.0 requires package db >=1.0.0")
            ),
            row("app.v1.0.0", "team-a/ops", None),
        ]
    );
}
