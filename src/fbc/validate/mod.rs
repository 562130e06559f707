//! `opm validate` rules (olm-api.md §5.5), every problem collected, none fatal to the others.
//!
//! Messages are `opm`'s (`declcfg_to_model.go`, `model.go`), arranged in `opm`'s tree: catalog-
//! wide problems at the top, then one node per package (`invalid package "foo"`) holding its
//! problems, a node per channel (`invalid channel "alpha"`, with entry problems under
//! `invalid bundle "x"`) and a node per bundle blob (`invalid bundle "x"`). Each message names
//! the package, channel and bundle through its place in the tree or its own text.
//!
//! Where `opm` stops at the first problem, we continue. Two wording choices: a `defaultChannel`
//! that names no channel is reported as `default channel "x" not found in channels list` (as
//! `opm`'s newer all-errors validator does; its older converter synthesises an empty channel and
//! reports `channel must contain at least one bundle`); version and `skipRange` parse errors
//! carry the Rust parsers' explanations instead of blang/semver's.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use super::blob::{BundleBlob, ChannelBlob, PackageBlob};
use super::config::DeclarativeConfig;
use super::problem::{Problem, ValidationError};
use super::property::{Property, types};
use super::version::{Release, normalized_name, version_string};
use crate::graph::ChannelGraph;
use crate::semver_range::Range;

mod deprecations;

use deprecations::check_deprecations;

#[derive(Default)]
struct PackageReport {
    head: Vec<Problem>,
    channels: BTreeMap<String, Vec<Problem>>,
    bundles: BTreeMap<String, Vec<Problem>>,
    tail: Vec<Problem>,
}

#[derive(Default)]
struct Index<'a> {
    packages: BTreeMap<&'a str, &'a PackageBlob>,
    channels: BTreeMap<&'a str, BTreeMap<&'a str, &'a ChannelBlob>>,
    /// Entry names over all channels of a package.
    entries: BTreeMap<&'a str, BTreeSet<&'a str>>,
    bundles: BTreeMap<&'a str, BTreeSet<&'a str>>,
    /// version string → bundle names, per package.
    versions: BTreeMap<&'a str, BTreeMap<String, Vec<&'a str>>>,
}

/// Checks a loaded catalog with `opm validate`'s rules and reports every problem.
pub fn validate(config: &DeclarativeConfig) -> Result<(), ValidationError> {
    let mut top: Vec<Problem> = Vec::new();
    let mut reports: BTreeMap<String, PackageReport> = BTreeMap::new();
    let mut index = Index::default();

    for package in &config.packages {
        let name = package.name.as_str();
        if name.is_empty() {
            top.push(Problem::leaf("config contains package with no name"));
            continue;
        }
        if index.packages.contains_key(name) {
            top.push(Problem::leaf(format!("duplicate package {name:?}")));
            continue;
        }
        let dns = dns1123_label_errors(name);
        if !dns.is_empty() {
            top.push(Problem::leaf(format!(
                "invalid package name {name:?}: [{}]",
                dns.join(" ")
            )));
        }
        index.packages.insert(name, package);
    }

    for channel in &config.channels {
        check_channel(channel, &mut index, &mut top, &mut reports);
    }
    for bundle in &config.bundles {
        check_bundle(bundle, &mut index, &mut top, &mut reports);
    }

    for (&package, blob) in &index.packages {
        let report = reports.entry(package.to_owned()).or_default();
        let entries = index.entries.get(package).cloned().unwrap_or_default();
        let bundles = index.bundles.get(package).cloned().unwrap_or_default();
        let missing: Vec<&str> = entries.difference(&bundles).copied().collect();
        if !missing.is_empty() {
            report.tail.push(Problem::leaf(format!(
                "no olm.bundle blobs found in package {package:?} for olm.channel entries [{}]",
                missing.join(" ")
            )));
        }
        let channels = index.channels.get(package);
        if channels.is_none_or(BTreeMap::is_empty) {
            report
                .tail
                .push(Problem::leaf("package must contain at least one channel"));
        }
        if blob.default_channel.is_empty() {
            report
                .tail
                .push(Problem::leaf("default channel must be set"));
        } else if channels.is_some_and(|c| !c.contains_key(blob.default_channel.as_str())) {
            report.tail.push(Problem::leaf(format!(
                "default channel {:?} not found in channels list",
                blob.default_channel
            )));
        }
        if let Some(versions) = index.versions.get(package) {
            let dupes: Vec<String> = versions
                .iter()
                .filter(|(_, names)| names.len() > 1)
                .map(|(version, names)| {
                    let mut names = names.clone();
                    names.sort_unstable();
                    format!("{{{version}: [{}]}}", names.join(", "))
                })
                .collect();
            if !dupes.is_empty() {
                report.tail.push(Problem::leaf(format!(
                    "duplicate versions found in bundles: [{}]",
                    dupes.join(" ")
                )));
            }
        }
    }

    check_deprecations(config, &index, &mut top, &mut reports);

    for (package, report) in reports {
        let mut children = report.head;
        for (channel, problems) in report.channels {
            children.extend(Problem::node(
                format!("invalid channel {channel:?}"),
                problems,
            ));
        }
        for (bundle, problems) in report.bundles {
            children.extend(Problem::node(
                format!("invalid bundle {bundle:?}"),
                problems,
            ));
        }
        children.extend(report.tail);
        top.extend(Problem::node(
            format!("invalid package {package:?}"),
            children,
        ));
    }
    match ValidationError::from_problems(top) {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

fn check_channel<'a>(
    channel: &'a ChannelBlob,
    index: &mut Index<'a>,
    top: &mut Vec<Problem>,
    reports: &mut BTreeMap<String, PackageReport>,
) {
    let package = channel.package.as_str();
    if !index.packages.contains_key(package) {
        top.push(Problem::leaf(format!(
            "unknown package {package:?} for channel {:?}",
            channel.name
        )));
        return;
    }
    let report = reports.entry(package.to_owned()).or_default();
    if channel.name.is_empty() {
        report.head.push(Problem::leaf(format!(
            "package {package:?} contains channel with no name"
        )));
        return;
    }
    let known = index.channels.entry(package).or_default();
    if known.contains_key(channel.name.as_str()) {
        report.head.push(Problem::leaf(format!(
            "package {package:?} has duplicate channel {:?}",
            channel.name
        )));
        return;
    }
    known.insert(&channel.name, channel);

    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    let all_entries = index.entries.entry(package).or_default();
    for entry in &channel.entries {
        all_entries.insert(&entry.name);
        if !seen.insert(entry.name.as_str()) {
            problems.push(Problem::leaf(format!(
                "invalid package {package:?}, channel {:?}: duplicate entry {:?}",
                channel.name, entry.name
            )));
        }
    }
    if let Err(error) = ChannelGraph::new(&channel.entries) {
        problems.push(Problem::leaf(error.to_string()));
    }
    for entry in &channel.entries {
        let mut entry_problems = Vec::new();
        if entry.name.is_empty() {
            entry_problems.push(Problem::leaf("name must be set"));
        }
        for (i, skip) in entry.skips.iter().enumerate() {
            if skip.is_empty() {
                entry_problems.push(Problem::leaf(format!("skip[{i}] is empty")));
            }
        }
        if let Some(range) = &entry.skip_range
            && let Err(error) = Range::parse(range)
        {
            entry_problems.push(Problem::leaf(format!(
                "invalid skipRange {range:?}: {error}"
            )));
        }
        problems.extend(Problem::node(
            format!("invalid bundle {:?}", entry.name),
            entry_problems,
        ));
    }
    if !problems.is_empty() {
        report.channels.insert(channel.name.clone(), problems);
    }
}

fn check_bundle<'a>(
    bundle: &'a BundleBlob,
    index: &mut Index<'a>,
    top: &mut Vec<Problem>,
    reports: &mut BTreeMap<String, PackageReport>,
) {
    let package = bundle.package.as_str();
    let name = bundle.name.as_str();
    if package.is_empty() {
        top.push(Problem::leaf(format!(
            "package name must be set for bundle {name:?}"
        )));
        return;
    }
    if !index.packages.contains_key(package) {
        top.push(Problem::leaf(format!(
            "unknown package {package:?} for bundle {name:?}"
        )));
        return;
    }
    let report = reports.entry(package.to_owned()).or_default();
    if !index.bundles.entry(package).or_default().insert(name) {
        report.head.push(Problem::leaf(format!(
            "package {package:?} has duplicate bundle {name:?}"
        )));
        return;
    }
    let mut problems = Vec::new();
    let package_properties: Vec<_> = bundle
        .properties
        .iter()
        .filter_map(|p| match p {
            Property::Package(value) => Some(value),
            _ => None,
        })
        .collect();
    if let [property] = package_properties.as_slice() {
        if property.package_name != package {
            problems.push(Problem::leaf(format!(
                "package {package:?} does not match {:?} property {:?}",
                types::PACKAGE,
                property.package_name
            )));
        }
        match semver::Version::parse(&property.version) {
            Err(error) => problems.push(Problem::leaf(format!(
                "error parsing bundle {name:?} version {:?}: {error}",
                property.version
            ))),
            Ok(version) => match Release::parse(&property.release) {
                Err(error) => problems.push(Problem::leaf(format!(
                    "error parsing bundle {name:?} release version {:?}: {error}",
                    property.release
                ))),
                Ok(release) => {
                    if let Some(normalized) = normalized_name(package, &version, &release)
                        && normalized != name
                    {
                        problems.push(Problem::leaf(format!(
                            "name {name:?} does not match normalized name {normalized:?}"
                        )));
                    }
                    if !version.build.is_empty() && !release.is_empty() {
                        problems.push(Problem::leaf(
                            "cannot use build metadata in version with a release version",
                        ));
                    }
                    index
                        .versions
                        .entry(package)
                        .or_default()
                        .entry(version_string(&version, &release))
                        .or_default()
                        .push(name);
                }
            },
        }
    } else {
        problems.push(Problem::leaf(format!(
            "package {package:?} bundle {name:?} must have exactly 1 {:?} property, found {}",
            types::PACKAGE,
            package_properties.len()
        )));
    }
    let has_objects = bundle
        .properties
        .iter()
        .any(|p| matches!(p, Property::BundleObject(_)));
    if bundle.image.is_empty() && !has_objects {
        problems.push(Problem::leaf("bundle image must be set"));
    }
    if let Some(problem) = image_problem(&bundle.image, "image") {
        problems.push(problem);
    }
    for (i, related) in bundle.related_images.iter().enumerate() {
        if let Some(problem) = image_problem(&related.image, &format!("relatedImages[{i}].image")) {
            problems.push(problem);
        }
    }
    if !index.entries.get(package).is_some_and(|e| e.contains(name)) {
        problems.push(Problem::leaf(format!(
            "package {package:?}, bundle {name:?} not found in any channel entries"
        )));
    }
    if !problems.is_empty() {
        report.bundles.insert(name.to_owned(), problems);
    }
}

/// `opm` checks non-empty pull specs with docker's reference parser.
fn image_problem(image: &str, field: &str) -> Option<Problem> {
    if image.is_empty() {
        return None;
    }
    super::image_ref::check(image).err().map(|error| {
        Problem::leaf(format!(
            "invalid image pull spec {image:?} in {field}: {error}"
        ))
    })
}

/// Kubernetes `IsDNS1123Label`, with its messages.
fn dns1123_label_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push("must be no more than 63 characters".to_owned());
    }
    let label = |s: &str| {
        let b = s.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    if !label(value) {
        if value.split('.').all(label) {
            errors.push("must not contain dots".to_owned());
        } else {
            errors.push(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".to_owned(),
            );
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_labels_like_kubernetes() {
        assert!(dns1123_label_errors("etcd-operator").is_empty());
        assert_eq!(dns1123_label_errors("foo.bar"), ["must not contain dots"]);
        assert_eq!(dns1123_label_errors("Foo").len(), 1);
        assert_eq!(
            dns1123_label_errors(&"a".repeat(64)),
            ["must be no more than 63 characters"]
        );
    }
}
