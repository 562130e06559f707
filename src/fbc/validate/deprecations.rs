//! `opm validate`'s rules for `olm.deprecations` blobs: one per known package, each entry
//! naming an existing bundle, channel or the package itself, with a message.

use std::collections::{BTreeMap, HashSet};

use super::{Index, PackageReport};
use crate::fbc::blob::{PackageScopedReference, schemas};
use crate::fbc::config::DeclarativeConfig;
use crate::fbc::problem::Problem;

fn go_reference(reference: &PackageScopedReference) -> String {
    format!(
        "declcfg.PackageScopedReference{{Schema:{:?}, Name:{:?}}}",
        reference.schema, reference.name
    )
}

pub(super) fn check_deprecations(
    config: &DeclarativeConfig,
    index: &Index<'_>,
    top: &mut Vec<Problem>,
    reports: &mut BTreeMap<String, PackageReport>,
) {
    let mut seen_packages = HashSet::new();
    for (i, deprecation) in config.deprecations.iter().enumerate() {
        let package = deprecation.package.as_str();
        if package.is_empty() {
            top.push(Problem::leaf(format!(
                "package name must be set for deprecation item {i}"
            )));
            continue;
        }
        if !index.packages.contains_key(package) {
            top.push(Problem::leaf(format!(
                "cannot apply deprecations to an unknown package {package:?}"
            )));
            continue;
        }
        if !seen_packages.insert(package) {
            top.push(Problem::leaf(format!(
                "expected a maximum of one deprecation per package: {package:?}"
            )));
            continue;
        }
        let report = reports.entry(package.to_owned()).or_default();
        let mut references = HashSet::new();
        for (j, entry) in deprecation.entries.iter().enumerate() {
            let reference = &entry.reference;
            if reference.schema.is_empty() {
                report.tail.push(Problem::leaf(format!(
                    "schema must be set for deprecation entry [{j}] for package {package:?}"
                )));
                continue;
            }
            if !references.insert(reference) {
                report.tail.push(Problem::leaf(format!(
                    "duplicate deprecation entry {} for package {package:?}",
                    go_reference(reference)
                )));
                continue;
            }
            let name = reference.name.as_str();
            let problem = match reference.schema.as_str() {
                schemas::BUNDLE
                    if !index.bundles.get(package).is_some_and(|b| b.contains(name)) =>
                {
                    Some(format!(
                        "cannot deprecate bundle {name:?} for package {package:?}: bundle not found"
                    ))
                }
                schemas::CHANNEL
                    if !index
                        .channels
                        .get(package)
                        .is_some_and(|c| c.contains_key(name)) =>
                {
                    Some(format!(
                        "cannot deprecate channel {name:?} for package {package:?}: channel not found"
                    ))
                }
                schemas::PACKAGE if !name.is_empty() => Some(format!(
                    "package name must be empty for deprecated package {package:?} (specified {name:?})"
                )),
                schemas::BUNDLE | schemas::CHANNEL | schemas::PACKAGE => None,
                _ => Some(format!(
                    "cannot deprecate object {} referenced by entry {j} for package {package:?}: object schema unknown",
                    go_reference(reference)
                )),
            };
            report.tail.extend(problem.map(Problem::leaf));
            if entry.message.is_empty() {
                report.tail.push(Problem::leaf(format!(
                    "invalid deprecation entry [{j}] for package {package:?}: message must be set"
                )));
            }
        }
    }
}
