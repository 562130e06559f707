//! Small catalogs and problems for the dependency tests.

use std::path::Path;

use serde_json::{Value, json};

use super::{
    CatalogId, InstalledOperator, Outcome, Problem, SolveError, SubscriptionRequest, VisibleCatalog,
};
use crate::fbc::property::Gvk;
use crate::fbc::{Catalog, DeclarativeConfig};

/// Builds a catalog: each package has one channel `stable` whose entries replace each other in
/// the order given (the last one is the head).
#[derive(Default)]
pub(super) struct CatalogBuilder {
    blobs: Vec<Value>,
}

impl CatalogBuilder {
    pub(super) fn package(mut self, name: &str, bundles: &[(&str, Vec<Value>)]) -> Self {
        self.blobs
            .push(json!({"schema": "olm.package", "name": name, "defaultChannel": "stable"}));
        let mut entries = Vec::new();
        let mut previous: Option<String> = None;
        for (version, properties) in bundles {
            let bundle = format!("{name}.v{version}");
            let mut entry = json!({"name": bundle});
            if let Some(previous) = &previous {
                entry["replaces"] = json!(previous);
            }
            entries.push(entry);
            let mut all = vec![
                json!({"type": "olm.package", "value": {"packageName": name, "version": version}}),
            ];
            all.extend(properties.iter().cloned());
            self.blobs.push(json!({
                "schema": "olm.bundle", "package": name, "name": bundle,
                "image": format!("registry.example.com/{name}-bundle:v{version}"),
                "properties": all,
            }));
            previous = Some(bundle);
        }
        self.blobs.push(
            json!({"schema": "olm.channel", "package": name, "name": "stable", "entries": entries}),
        );
        self
    }

    pub(super) fn build(self) -> Catalog {
        let text: String = self.blobs.iter().map(|b| format!("{b}\n")).collect();
        let config = DeclarativeConfig::parse(&text, Path::new("test.json"))
            .unwrap_or_else(|e| panic!("{e:?}"));
        Catalog::new(config).unwrap_or_else(|e| panic!("{e}"))
    }
}

pub(super) fn requires_package(package: &str, range: &str) -> Value {
    json!({"type": "olm.package.required", "value": {"packageName": package, "versionRange": range}})
}

pub(super) fn requires_api(group: &str, version: &str, kind: &str) -> Value {
    json!({"type": "olm.gvk.required", "value": {"group": group, "version": version, "kind": kind}})
}

pub(super) fn provides_api(group: &str, version: &str, kind: &str) -> Value {
    json!({"type": "olm.gvk", "value": {"group": group, "version": version, "kind": kind}})
}

pub(super) fn constraint(value: Value) -> Value {
    json!({"type": "olm.constraint", "value": value})
}

pub(super) fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.into(),
        kind: kind.into(),
        version: version.into(),
    }
}

pub(super) fn visible<'a>(
    namespace: &str,
    name: &str,
    priority: i32,
    catalog: &'a Catalog,
) -> VisibleCatalog<'a> {
    VisibleCatalog {
        id: CatalogId::new(namespace, name),
        priority,
        catalog,
    }
}

/// A first install of `package` from catalog `team-a/ops` in namespace `team-a`.
pub(super) fn problem<'a>(
    package: &str,
    catalogs: Vec<VisibleCatalog<'a>>,
    installed: Vec<InstalledOperator>,
) -> Problem<'a> {
    Problem {
        namespace: "team-a",
        subscription: SubscriptionRequest {
            name: format!("{package}-sub"),
            package: package.to_owned(),
            catalog: CatalogId::new("team-a", "ops"),
            ..SubscriptionRequest::default()
        },
        catalogs,
        installed,
    }
}

pub(super) fn installed(csv: &str, package: &str, version: &str) -> InstalledOperator {
    InstalledOperator {
        csv: csv.to_owned(),
        package: package.to_owned(),
        version: Some(semver::Version::parse(version).unwrap_or_else(|e| panic!("{e}"))),
        ..InstalledOperator::default()
    }
}

/// `(csv, catalog, required_by)` of each planned bundle.
pub(super) fn plan(outcome: Result<Outcome, SolveError>) -> Vec<(String, String, Option<String>)> {
    match outcome {
        Ok(Outcome::Install(plan)) => plan
            .bundles
            .into_iter()
            .map(|b| {
                (
                    b.bundle.name,
                    b.catalog.to_string(),
                    b.required_by.map(|(by, what)| format!("{by} {what}")),
                )
            })
            .collect(),
        other => panic!("expected a plan, got {other:?}"),
    }
}

pub(super) fn unsatisfiable(outcome: Result<Outcome, SolveError>) -> String {
    match outcome {
        Err(SolveError::Unsatisfiable { message }) => message,
        other => panic!("expected unsatisfiable, got {other:?}"),
    }
}

pub(super) fn row(csv: &str, catalog: &str, by: Option<&str>) -> (String, String, Option<String>) {
    (csv.to_owned(), catalog.to_owned(), by.map(str::to_owned))
}

/// The etcd operator's API, as the examples of OLM's documentation name it.
pub(super) const ETCD: (&str, &str, &str) = ("etcd.database.coreos.com", "v1beta2", "EtcdCluster");

/// A first install of `app` from the single catalog `team-a/ops`.
pub(super) fn solve_app(ops: &Catalog) -> Result<Outcome, SolveError> {
    super::solve(&problem(
        "app",
        vec![visible("team-a", "ops", 0, ops)],
        vec![],
    ))
}
