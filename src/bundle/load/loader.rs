//! Reading the files of one bundle and collecting its objects, warnings and problems.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kube::api::DynamicObject;
use serde_json::Value;

use super::{Bundle, BundleObject, LoadError, LoadReport, LoadWarning, ManifestProblem};
use crate::api::ClusterServiceVersion;
use crate::bundle::document::{first_document, quantities_to_strings};
use crate::bundle::kinds::{
    self, CLUSTER_SERVICE_VERSION, CRD_API_VERSION, CRD_API_VERSION_V1BETA1,
    CUSTOM_RESOURCE_DEFINITION,
};

/// Collects the manifests and problems of one bundle.
#[derive(Default)]
pub(super) struct Loader {
    /// The manifests directory, relative to the bundle directory.
    manifests: String,
    /// (shown path, file name, document) of each ClusterServiceVersion.
    csvs: Vec<(String, String, Value)>,
    objects: Vec<BundleObject>,
    metadata: BTreeMap<String, Value>,
    warnings: Vec<LoadWarning>,
    /// CRDs refused for their API version (kept for `LoadReport`).
    refused_crds: Vec<BundleObject>,
    pub(super) problems: Vec<ManifestProblem>,
}

impl Loader {
    /// A loader for a bundle whose manifests live in `manifests` (relative to the bundle).
    pub(super) fn new(manifests: &str) -> Self {
        Self {
            manifests: manifests.to_owned(),
            ..Self::default()
        }
    }

    pub(super) fn manifest(&mut self, shown: &str, name: String, path: &Path) {
        if let Some(value) = self.read_document(shown, &name, path) {
            self.document(shown, name, value);
        }
    }

    /// One manifest already parsed (read from a file, or sent by a catalog).
    pub(super) fn document(&mut self, shown: &str, name: String, mut value: Value) {
        self.default_api_version(&name, &mut value);
        let object: DynamicObject = match serde_path_to_error::deserialize(&value) {
            Ok(object) => object,
            Err(error) => {
                return self.problems.push(ManifestProblem::NotAnObject {
                    file: shown.to_owned(),
                    message: error.to_string(),
                });
            }
        };
        let (api_version, kind) = match &object.types {
            Some(types) if !types.kind.is_empty() && !types.api_version.is_empty() => {
                (types.api_version.clone(), types.kind.clone())
            }
            _ => {
                return self.problems.push(ManifestProblem::NotAnObject {
                    file: shown.to_owned(),
                    message: "apiVersion and kind are required".to_owned(),
                });
            }
        };
        let object_name = object.metadata.name.clone().unwrap_or_default();
        if object_name.is_empty() {
            return self.problems.push(ManifestProblem::NotAnObject {
                file: shown.to_owned(),
                message: format!("{kind} has no metadata.name"),
            });
        }
        if kind == CLUSTER_SERVICE_VERSION {
            return self.csvs.push((shown.to_owned(), name, value));
        }
        if !kinds::is_allowed(&kind) {
            return self.problems.push(ManifestProblem::UnsupportedKind {
                file: shown.to_owned(),
                kind,
                api_version,
            });
        }
        if kind == CUSTOM_RESOURCE_DEFINITION && api_version != CRD_API_VERSION {
            self.refused_crds.push(BundleObject { file: name, object });
            let file = shown.to_owned();
            return self
                .problems
                .push(if api_version == CRD_API_VERSION_V1BETA1 {
                    ManifestProblem::CrdV1beta1 {
                        file,
                        name: object_name,
                    }
                } else {
                    ManifestProblem::CrdApiVersion {
                        file,
                        name: object_name,
                        api_version,
                    }
                });
        }
        self.objects.push(BundleObject { file: name, object });
    }

    /// Fills in a missing `apiVersion` for the kinds OLM creates with typed clients.
    fn default_api_version(&mut self, name: &str, value: &mut Value) {
        let Value::Object(fields) = value else {
            return;
        };
        if fields.get("apiVersion").is_some_and(|v| !v.is_null()) {
            return;
        }
        let Some(kind) = fields
            .get("kind")
            .and_then(Value::as_str)
            .map(str::to_owned)
        else {
            return;
        };
        if let Some(api_version) = kinds::typed_client_api_version(&kind) {
            fields.insert("apiVersion".to_owned(), Value::from(api_version));
            self.warnings.push(LoadWarning::DefaultedApiVersion {
                file: name.to_owned(),
                kind,
                api_version,
            });
        }
    }

    pub(super) fn metadata(&mut self, shown: &str, name: String, path: &Path) {
        let Some(value) = self.read_document(shown, &name, path) else {
            return;
        };
        // The annotations file (whatever its name) is `bundle::annotations`' business.
        if value.get("annotations").is_none() {
            self.metadata.insert(name, value);
        }
    }

    /// The first document of a file; problems and warnings are recorded.
    fn read_document(&mut self, shown: &str, name: &str, path: &Path) -> Option<Value> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(error) => {
                self.problems.push(ManifestProblem::Read {
                    file: shown.to_owned(),
                    error,
                });
                return None;
            }
        };
        match first_document(&text) {
            Ok(document) => {
                if document.ignored > 0 {
                    self.warnings.push(LoadWarning::ExtraDocuments {
                        file: name.to_owned(),
                        ignored: document.ignored,
                    });
                }
                if document.value.is_none() {
                    self.problems.push(ManifestProblem::Empty {
                        file: shown.to_owned(),
                    });
                }
                document.value
            }
            Err(message) => {
                self.problems.push(ManifestProblem::Syntax {
                    file: shown.to_owned(),
                    message,
                });
                None
            }
        }
    }

    pub(super) fn finish(self, dir: &Path) -> Result<Bundle, LoadError> {
        let report = self.finish_report(dir);
        match report.bundle {
            Some(bundle) if report.problems.is_empty() => Ok(bundle),
            _ => Err(LoadError::Invalid {
                dir: dir.to_path_buf(),
                problems: report.problems,
            }),
        }
    }

    /// Everything loaded, with every problem: the bundle whenever exactly one valid
    /// ClusterServiceVersion was found (its objects are the manifests that were accepted).
    pub(super) fn finish_report(mut self, dir: &Path) -> LoadReport {
        self.check_duplicates();
        let csv = match self.csvs.len() {
            0 => {
                self.problems.push(ManifestProblem::NoCsv);
                None
            }
            1 => self.csvs.pop().and_then(|(shown, name, value)| {
                let csv = parse_csv(&shown, value)
                    .map_err(|problem| self.problems.push(problem))
                    .ok()?;
                Some((name, csv))
            }),
            _ => {
                self.problems.push(ManifestProblem::SeveralCsvs {
                    files: self.csvs.iter().map(|(shown, ..)| shown.clone()).collect(),
                });
                None
            }
        };
        LoadReport {
            bundle: csv.map(|(csv_file, csv)| Bundle {
                dir: dir.to_path_buf(),
                csv_file,
                csv,
                objects: self.objects,
                metadata: self.metadata,
                warnings: self.warnings,
            }),
            problems: self.problems,
            refused_crds: self.refused_crds,
        }
    }

    fn check_duplicates(&mut self) {
        let mut seen: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
        for object in &self.objects {
            seen.entry((object.kind(), object.name()))
                .or_default()
                .push(display_path(&self.manifests, &object.file));
        }
        let duplicates = seen
            .into_iter()
            .filter(|(_, files)| files.len() > 1)
            .map(|((kind, name), files)| ManifestProblem::Duplicate {
                kind: kind.to_owned(),
                name: name.to_owned(),
                files,
            })
            .collect::<Vec<_>>();
        self.problems.extend(duplicates);
    }
}

fn parse_csv(file: &str, mut value: Value) -> Result<ClusterServiceVersion, ManifestProblem> {
    quantities_to_strings(&mut value);
    serde_path_to_error::deserialize(value).map_err(|error| ManifestProblem::InvalidCsv {
        file: file.to_owned(),
        message: error.to_string(),
    })
}

/// Regular files of `dir` (following links), sorted by name; sub-directories and dot-files are
/// skipped, as opm does.
pub(super) fn list_files(dir: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') || path.is_dir() {
            continue;
        }
        files.push((name, path));
    }
    files.sort();
    Ok(files)
}

/// `manifests/<name>` for messages (`<name>` when the directory is the bundle root).
pub(super) fn display_path(dir: &str, name: &str) -> String {
    let dir = dir.trim_end_matches('/');
    if dir.is_empty() || dir == "." {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}
