//! Pure: the operators installed in a namespace, as dependency resolution sees them (no client).
//!
//! Read from the CSVs opcat created: the package (annotation `opcat.dev/package`, else the
//! recorded `olm.package` property), the version (`spec.version`), the catalog (annotation
//! `opcat.dev/catalog`), the APIs it provides (owned CRDs and API services, and recorded
//! `olm.gvk` properties) and its own dependencies (the properties annotation OLM's
//! `operatorframework.io/properties` the InstallPlan reconciler wrote, see
//! [`crate::controller::plan_record`]). A CSV being deleted, or replaced by a newer CSV that
//! exists, is not installed any more: the newer one is.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube::ResourceExt;
use serde::Deserialize;

use crate::api::ClusterServiceVersion;
use crate::controller::keys;
use crate::controller::plan_record::parse_properties;
use crate::dependency::{
    CatalogId, Constraint, Dependency, InstalledOperator, bundle_dependencies,
};
use crate::fbc::property::{Gvk, Property};
use crate::semver_range::Range;

/// The recorded properties annotation: `{"properties": [...]}`.
#[derive(Deserialize)]
struct PropertiesAnnotation {
    #[serde(default)]
    properties: Vec<serde_json::Value>,
}

/// The operators installed among `csvs` (one namespace's CSVs, by name), by CSV name.
pub fn installed_operators(
    csvs: &BTreeMap<String, Arc<ClusterServiceVersion>>,
) -> Vec<InstalledOperator> {
    let replaced: BTreeSet<&str> = csvs
        .values()
        .filter(|csv| csv.metadata.deletion_timestamp.is_none())
        .filter_map(|csv| csv.spec.replaces.as_deref())
        .collect();
    csvs.values()
        .filter(|csv| csv.metadata.deletion_timestamp.is_none())
        .filter(|csv| !replaced.contains(csv.name_any().as_str()))
        .map(|csv| installed_operator(csv))
        .collect()
}

/// One CSV as an installed operator.
pub fn installed_operator(csv: &ClusterServiceVersion) -> InstalledOperator {
    let annotations = csv.annotations();
    let properties: Vec<Property> = annotations
        .get(keys::csv::PROPERTIES)
        .and_then(|text| serde_json::from_str::<PropertiesAnnotation>(text).ok())
        .and_then(|annotation| parse_properties(&annotation.properties).ok())
        .unwrap_or_default();
    let package = annotations
        .get(keys::csv::PACKAGE)
        .cloned()
        .or_else(|| {
            properties.iter().find_map(|property| match property {
                Property::Package(package) => Some(package.package_name.clone()),
                _ => None,
            })
        })
        .unwrap_or_default();
    let version = csv
        .spec
        .version
        .as_deref()
        .and_then(|version| semver::Version::parse(version.trim_start_matches('v')).ok());
    let catalog = annotations
        .get(keys::csv::CATALOG)
        .and_then(|value| keys::split_ref(value))
        .map(|(namespace, name)| CatalogId::new(namespace, name));
    let name = csv.name_any();
    let dependencies = bundle_dependencies(&crate::fbc::Bundle {
        name: name.clone(),
        package: package.clone(),
        image: String::new(),
        version: version
            .clone()
            .unwrap_or_else(|| semver::Version::new(0, 0, 0)),
        release: Default::default(),
        properties: properties.clone(),
        related_images: Vec::new(),
        deprecation: None,
    })
    // Recorded when the CSV was installed, from a dependency that resolved: a malformed
    // one cannot be there; if it is, the CSV counts as needing nothing.
    .unwrap_or_default();
    InstalledOperator {
        csv: name,
        package,
        version,
        catalog,
        provides: provided(csv, &properties),
        dependencies,
    }
}

/// The APIs a CSV provides: its owned CRDs and API services, and recorded `olm.gvk`
/// properties; sorted, without repeats.
fn provided(csv: &ClusterServiceVersion, properties: &[Property]) -> Vec<Gvk> {
    let mut provided: BTreeSet<Gvk> = BTreeSet::new();
    let crds = csv
        .spec
        .custom_resource_definitions
        .as_ref()
        .and_then(|definitions| definitions.owned.as_deref())
        .unwrap_or_default();
    for crd in crds {
        // `<plural>.<group>`.
        let group = crd.name.split_once('.').map_or("", |(_, group)| group);
        provided.insert(Gvk {
            group: group.to_owned(),
            kind: crd.kind.clone(),
            version: crd.version.clone(),
        });
    }
    let services = csv
        .spec
        .api_service_definitions
        .as_ref()
        .and_then(|definitions| definitions.owned.as_deref())
        .unwrap_or_default();
    for service in services {
        provided.insert(Gvk {
            group: service.group.clone(),
            kind: service.kind.clone(),
            version: service.version.clone(),
        });
    }
    for property in properties {
        if let Property::Gvk(gvk) = property {
            provided.insert(gvk.clone());
        }
    }
    provided.into_iter().collect()
}

/// Whether one of `operators` meets `dependency` (one operator must match the whole
/// constraint, as in OLM: `all` of several things from the same bundle).
pub fn is_met(dependency: &Dependency, operators: &[InstalledOperator]) -> bool {
    operators
        .iter()
        .any(|operator| matches(&dependency.constraint, operator))
}

/// Whether `operator` matches `constraint`.
pub fn matches(constraint: &Constraint, operator: &InstalledOperator) -> bool {
    match constraint {
        Constraint::Package { package, range } => {
            operator.package == *package
                && (range.trim().is_empty()
                    || operator.version.as_ref().is_some_and(|version| {
                        Range::parse(range).is_ok_and(|range| range.contains(version))
                    }))
        }
        Constraint::Gvk(gvk) => operator.provides.contains(gvk),
        Constraint::All(all) => all.iter().all(|inner| matches(inner, operator)),
        Constraint::Any(any) => any.iter().any(|inner| matches(inner, operator)),
        Constraint::Not(inner) => !matches(inner, operator),
    }
}

#[cfg(test)]
#[path = "installed_operators_tests.rs"]
mod tests;
