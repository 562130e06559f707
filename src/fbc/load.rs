//! Loading a catalog from disk: the only file I/O of the FBC code (olm-api.md §5.4).
//!
//! A directory is walked recursively and **every regular file** is parsed, whatever its name,
//! except files matched by `.indexignore` files (gitignore syntax, anywhere in the tree) and
//! the `.indexignore` files themselves. Hidden files are not skipped (opm does not skip them).
//! Files are parsed in parallel; the result is ordered by path, so it is deterministic (opm's
//! order is not). Each worker holds one file's text at a time and keeps only the parsed blobs.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::config::{DeclarativeConfig, DocumentError};

/// The name of the ignore files `opm` honours.
pub const INDEX_IGNORE: &str = ".indexignore";

/// Why a catalog could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The path does not exist or cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// Walking the directory failed (unreadable directory, bad `.indexignore`).
    #[error("cannot walk catalog directory {}: {message}", path.display())]
    Walk {
        /// The root.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// A file is not UTF-8 text.
    #[error("{}: not UTF-8 text", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// Documents that are not valid blobs; all of them are listed.
    #[error("invalid catalog content:\n{}", list(.0))]
    Documents(Vec<DocumentError>),
}

fn list(errors: &[DocumentError]) -> String {
    errors
        .iter()
        .map(|e| format!("  {e}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl LoadError {
    /// A short, stable label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            LoadError::Read { .. } => "read",
            LoadError::Walk { .. } => "walk",
            LoadError::NotText { .. } => "not_text",
            LoadError::Documents(_) => "invalid_document",
        }
    }
}

/// How to load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Number of files parsed at once (default: the number of CPUs).
    pub threads: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }
}

/// Loads the catalog at `path` (a directory or a single file) with default options.
pub fn load(path: &Path) -> Result<DeclarativeConfig, LoadError> {
    load_with(path, LoadOptions::default())
}

/// Loads the catalog at `path` (a directory or a single file).
pub fn load_with(path: &Path, options: LoadOptions) -> Result<DeclarativeConfig, LoadError> {
    let metadata = std::fs::metadata(path).map_err(|source| LoadError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let files = if metadata.is_dir() {
        catalog_files(path)?
    } else {
        vec![(path.to_path_buf(), metadata.len())]
    };
    parse_files(&files, options.threads.max(1))
}

/// The files of a catalog directory, sorted by path, with their sizes.
pub fn catalog_files(root: &Path) -> Result<Vec<(PathBuf, u64)>, LoadError> {
    let walk_error = |message: String| LoadError::Walk {
        path: root.to_path_buf(),
        message,
    };
    let mut files = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .add_custom_ignore_filename(INDEX_IGNORE)
        .follow_links(false)
        .build();
    for entry in walker {
        let entry = entry.map_err(|e| walk_error(e.to_string()))?;
        if entry.depth() == 0 || entry.file_name() == INDEX_IGNORE {
            continue;
        }
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            continue;
        }
        // Like opm, a symlink is read through (and fails if it points to a directory).
        let metadata = std::fs::metadata(entry.path()).map_err(|source| LoadError::Read {
            path: entry.path().to_path_buf(),
            source,
        })?;
        if metadata.is_dir() {
            return Err(walk_error(format!(
                "{} is a link to a directory",
                entry.path().display()
            )));
        }
        files.push((entry.into_path(), metadata.len()));
    }
    files.sort();
    Ok(files)
}

enum FileOutcome {
    Parsed(DeclarativeConfig),
    Invalid(Vec<DocumentError>),
    Failed(LoadError),
}

fn parse_file(path: &Path) -> FileOutcome {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(source) => {
            return FileOutcome::Failed(LoadError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return FileOutcome::Failed(LoadError::NotText {
            path: path.to_path_buf(),
        });
    };
    match DeclarativeConfig::parse(&text, path) {
        Ok(config) => FileOutcome::Parsed(config),
        Err(errors) => FileOutcome::Invalid(errors),
    }
}

/// Parses `files` on up to `threads` threads, largest files first (better balance), and merges
/// the results in path order.
fn parse_files(files: &[(PathBuf, u64)], threads: usize) -> Result<DeclarativeConfig, LoadError> {
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(files[i].1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<FileOutcome>>> =
        Mutex::new(std::iter::repeat_with(|| None).take(files.len()).collect());
    let worker = || {
        loop {
            let slot = next.fetch_add(1, Ordering::Relaxed);
            let Some(&index) = order.get(slot) else {
                break;
            };
            let outcome = parse_file(&files[index].0);
            if let Ok(mut results) = results.lock() {
                results[index] = Some(outcome);
            }
        }
    };
    let threads = threads.min(files.len()).max(1);
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(worker);
        }
        worker();
    });
    let results = results
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut config = DeclarativeConfig::default();
    let mut errors = Vec::new();
    for outcome in results.into_iter().flatten() {
        match outcome {
            FileOutcome::Parsed(c) => config.merge(c),
            FileOutcome::Invalid(e) => errors.extend(e),
            FileOutcome::Failed(e) => return Err(e),
        }
    }
    if errors.is_empty() {
        Ok(config)
    } else {
        Err(LoadError::Documents(errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn walks_every_file_and_honours_indexignore() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "a/catalog.yaml",
            "schema: olm.package\nname: a\n",
        );
        write(
            dir.path(),
            "b/no-extension",
            "{\"schema\":\"olm.package\",\"name\":\"b\"}",
        );
        write(
            dir.path(),
            ".hidden.json",
            "{\"schema\":\"olm.package\",\"name\":\"h\"}",
        );
        write(dir.path(), "c/.indexignore", "*.md\nskip/\n");
        write(dir.path(), "c/README.md", "not a catalog");
        write(dir.path(), "c/skip/x.yaml", "not: a catalog\n");
        write(dir.path(), "c/keep.yaml", "schema: olm.package\nname: c\n");
        let config = load(dir.path()).unwrap();
        let names: Vec<&str> = config.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(
            names,
            ["h", "a", "b", "c"],
            "path order: .hidden.json, a/, b/, c/"
        );
    }

    #[test]
    fn loads_a_single_file_and_reports_all_errors() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            "one.yaml",
            "name: x\n---\nschema: olm.package\nname: ok\n",
        );
        write(dir.path(), "two.yaml", "a: [\n");
        let err = load(dir.path()).unwrap_err();
        let LoadError::Documents(errors) = &err else {
            panic!("{err}")
        };
        assert_eq!(errors.len(), 2);
        assert_eq!(err.kind(), "invalid_document");
        let single = load(&dir.path().join("one.yaml")).unwrap_err();
        assert!(
            single.to_string().contains("one.yaml:1: object"),
            "{single}"
        );
        assert!(matches!(
            load(&dir.path().join("missing")),
            Err(LoadError::Read { .. })
        ));
    }

    #[test]
    fn binary_files_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("blob"), [0xff, 0xfe, 0x00]).unwrap();
        assert_eq!(load(dir.path()).unwrap_err().kind(), "not_text");
    }
}
