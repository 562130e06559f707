//! `opcat bundle validate`: every problem of a registry+v1 bundle directory at once, as
//! `operator-sdk bundle validate` reports them (operator-framework/api `pkg/validation`:
//! bundle, CSV and CRD validators; operator-registry `pkg/lib/bundle`: annotations and
//! `dependencies.yaml`), plus what opcat refuses to install ([`validate_for_install`]).
//!
//! Errors mean opcat (or OLM) would refuse or mis-install the bundle; warnings are accepted
//! but worth a look. Only reading the directory is I/O ([`check_bundle_dir`] calls the loaders);
//! the checks are pure.

mod csv;
mod dependencies;

use std::fmt;
use std::path::{Path, PathBuf};

use super::annotations::{ANNOTATIONS_FILE, BundleAnnotations};
use super::load::{Bundle, LoadReport, ManifestProblem};
use super::validate::validate_for_install;

/// The media type opcat installs.
pub const REGISTRY_V1: &str = "registry+v1";

/// How bad a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// The bundle would be refused or misbehave: exit code 1.
    Error,
    /// Accepted, but worth a look.
    Warning,
}

/// One problem, with the file it is about (relative to the bundle directory) when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// Error or warning.
    pub severity: Severity,
    /// The file, e.g. `manifests/x.clusterserviceversion.yaml`.
    pub file: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl Finding {
    fn error(file: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            file: file.map(str::to_owned),
            message: message.into(),
        }
    }

    fn warning(file: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            file: file.map(str::to_owned),
            message: message.into(),
        }
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            // Load problems already name their file.
            Some(file) if !self.message.contains(file.as_str()) => {
                write!(f, "{file}: {}", self.message)
            }
            _ => f.write_str(&self.message),
        }
    }
}

/// Everything `bundle validate` found in one bundle directory.
#[derive(Debug)]
pub struct BundleReport {
    /// The directory.
    pub dir: PathBuf,
    /// The ClusterServiceVersion's name, when one could be read.
    pub csv: Option<String>,
    /// The package, from the annotations.
    pub package: Option<String>,
    /// How many manifests were read (the CSV included).
    pub manifests: usize,
    /// Every finding, errors first, then in the order found.
    pub findings: Vec<Finding>,
}

impl BundleReport {
    /// The errors.
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
    }

    /// The warnings.
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
    }

    /// Whether there is no error (warnings allowed).
    pub fn is_valid(&self) -> bool {
        self.errors().next().is_none()
    }
}

/// Reads the bundle in `dir` (`metadata/annotations.yaml` names where its manifests and
/// metadata are; `manifests/` and `metadata/` when it cannot be read) and checks everything.
pub fn check_bundle_dir(dir: &Path) -> BundleReport {
    let mut findings = Vec::new();
    let annotations = match BundleAnnotations::read(dir) {
        Ok(annotations) => {
            findings.extend(annotation_findings(&annotations));
            Some(annotations)
        }
        Err(error) => {
            findings.push(Finding::error(
                Some(ANNOTATIONS_FILE),
                without_dir(&crate::failure::error_chain(&error), dir),
            ));
            None
        }
    };
    let (manifests, metadata) = annotations.as_ref().map_or(("manifests", "metadata"), |a| {
        (
            a.manifests_dir.trim_end_matches('/'),
            a.metadata_dir.trim_end_matches('/'),
        )
    });
    let report = Bundle::load_report(dir, manifests, metadata);
    let count = report.bundle.as_ref().map_or(0, |b| b.objects.len() + 1);
    findings.extend(bundle_findings(&report, manifests));
    findings.sort_by_key(|f| f.severity);
    BundleReport {
        dir: dir.to_path_buf(),
        csv: report.bundle.as_ref().map(|b| b.name().to_owned()),
        package: annotations.map(|a| a.package),
        manifests: count,
        findings,
    }
}

/// `bundle annotations <dir>/metadata/annotations.yaml lack ...` → without the directory, which
/// the report names once.
fn without_dir(message: &str, dir: &Path) -> String {
    let prefix = format!("{}/", dir.display());
    message.replace(&prefix, "")
}

fn annotation_findings(annotations: &BundleAnnotations) -> Vec<Finding> {
    let file = Some(ANNOTATIONS_FILE);
    let mut findings = Vec::new();
    if annotations.media_type != REGISTRY_V1 {
        findings.push(Finding::error(
            file,
            format!(
                "media type {:?} is not supported: opcat (like OLM v0) installs {REGISTRY_V1} \
                 bundles",
                annotations.media_type
            ),
        ));
    }
    if let Some(default) = &annotations.default_channel
        && !annotations.channels.contains(default)
    {
        findings.push(Finding::error(
            file,
            format!(
                "default channel {default:?} is not one of the bundle's channels ({})",
                annotations.channels.join(", ")
            ),
        ));
    }
    findings
}

/// The load problems and warnings, then (when a CSV was read) the CSV, CRD, dependency and
/// install checks. `manifests` is the manifests directory, relative to the bundle.
pub fn bundle_findings(report: &LoadReport, manifests: &str) -> Vec<Finding> {
    let mut findings: Vec<Finding> = report
        .problems
        .iter()
        .map(|problem| Finding::error(problem_file(problem), problem.to_string()))
        .collect();
    let Some(bundle) = &report.bundle else {
        return findings;
    };
    let csv_file = match manifests {
        "" | "." => bundle.csv_file.clone(),
        dir => format!("{dir}/{}", bundle.csv_file),
    };
    let csv_file = Some(csv_file.as_str());
    findings.extend(
        bundle
            .warnings
            .iter()
            .map(|warning| Finding::warning(None, warning.to_string())),
    );
    findings.extend(csv::csv_findings(bundle, csv_file));
    // CRDs refused for their API version still count as shipped by the bundle.
    findings.extend(csv::crd_findings(bundle, &report.refused_crds, csv_file));
    findings.extend(dependencies::dependency_findings(bundle));
    if let Err(error) = validate_for_install(&bundle.csv) {
        findings.extend(
            error
                .problems
                .iter()
                .map(|problem| Finding::error(csv_file, problem.to_string())),
        );
    }
    findings
}

fn problem_file(problem: &ManifestProblem) -> Option<&str> {
    match problem {
        ManifestProblem::Read { file, .. }
        | ManifestProblem::Syntax { file, .. }
        | ManifestProblem::Empty { file }
        | ManifestProblem::NotAnObject { file, .. }
        | ManifestProblem::InvalidCsv { file, .. }
        | ManifestProblem::UnsupportedKind { file, .. }
        | ManifestProblem::CrdV1beta1 { file, .. }
        | ManifestProblem::CrdApiVersion { file, .. } => Some(file),
        ManifestProblem::NoCsv
        | ManifestProblem::SeveralCsvs { .. }
        | ManifestProblem::Duplicate { .. } => None,
    }
}
