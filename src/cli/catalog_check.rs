//! What `opcat catalog` says about a catalog beyond `opm validate`'s tree: that a directory is a
//! bundle rather than a catalog, that a catalog is empty, a one-line summary of a valid one, and
//! which files define a package twice (the tree names the package, not the files).

use std::collections::BTreeMap;
use std::path::Path;

use crate::bundle::load::{MANIFESTS_DIR, METADATA_DIR};
use crate::fbc::{self, DeclarativeConfig};

/// The error for a registry+v1 bundle directory (`manifests/` and `metadata/`) given where a
/// catalog is expected, or `None` for anything else.
pub fn bundle_dir_error(path: &Path) -> Option<String> {
    let is_bundle = path.join(MANIFESTS_DIR).is_dir() && path.join(METADATA_DIR).is_dir();
    is_bundle.then(|| {
        format!(
            "{} is a registry+v1 bundle directory ({MANIFESTS_DIR}/ and {METADATA_DIR}/), not a \
             catalog; check it with `opcat bundle validate {}`",
            path.display(),
            path.display()
        )
    })
}

/// The error for a catalog without packages (an empty directory, or files without any
/// `olm.package` blob), or `None`.
pub fn empty_error(path: &Path, config: &DeclarativeConfig) -> Option<String> {
    config.packages.is_empty().then(|| {
        format!(
            "catalog {} has no packages: none of its files holds an olm.package blob",
            path.display()
        )
    })
}

/// `catalog <path> is valid: 2 packages, 3 channels, 7 bundles`.
pub fn summary(path: &Path, config: &DeclarativeConfig) -> String {
    format!(
        "catalog {} is valid: {}, {}, {}",
        path.display(),
        count(config.packages.len(), "package"),
        count(config.channels.len(), "channel"),
        count(config.bundles.len(), "bundle")
    )
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// For each package defined more than once, the files that define it (a file twice if it
/// defines it twice): `duplicate package "a" is defined in a/index.yaml, b/index.yaml`.
/// Reads the files again, so call it only when validation found duplicates.
pub fn duplicate_package_files(path: &Path, config: &DeclarativeConfig) -> Vec<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for package in &config.packages {
        *counts.entry(package.name.as_str()).or_default() += 1;
    }
    let duplicates: Vec<&str> = counts
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(name, _)| name)
        .collect();
    if duplicates.is_empty() {
        return Vec::new();
    }
    let files = if path.is_dir() {
        fbc::catalog_files(path)
            .map(|files| files.into_iter().map(|(file, _)| file).collect())
            .unwrap_or_default()
    } else {
        vec![path.to_path_buf()]
    };
    let mut found: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(parsed) = DeclarativeConfig::parse(&text, &file) else {
            continue;
        };
        for package in &parsed.packages {
            if let Some(name) = duplicates.iter().find(|name| **name == package.name) {
                found
                    .entry(name)
                    .or_default()
                    .push(file.display().to_string());
            }
        }
    }
    found
        .into_iter()
        .map(|(name, files)| {
            format!(
                "duplicate package {name:?} is defined in {}",
                files.join(", ")
            )
        })
        .collect()
}
