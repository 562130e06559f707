//! Tests against third-party catalogs in `/work/shared/data` (see its README). Every behaviour
//! checked here is also covered by tests on our own fixtures (`tests/fbc_*.rs`,
//! `tests/resolve_*.rs`, `tests/cli_catalog*.rs`).

// A test crate: a panic in a helper is a test failure.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// The shared third-party data directory: `OPCAT_SHARED_DATA`, else `<repo>/../shared/data`.
/// Fails (never skips) when it is missing.
fn opcat_test_data_dir() -> PathBuf {
    let dir = std::env::var_os("OPCAT_SHARED_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"),
        PathBuf::from,
    );
    assert!(
        dir.join("fbc").is_dir(),
        "third-party test data not found at {} (set OPCAT_SHARED_DATA to the shared data directory)",
        dir.display()
    );
    dir
}

fn fbc_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![opcat_test_data_dir().join("fbc")];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read data dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The fast YAML path and the full YAML parser give the same JSON value for every document of
/// every third-party catalog, and the fast path handles almost all of them.
#[test]
fn third_party_fast_yaml_path_equals_full_parser() {
    let (mut docs, mut fast_docs) = (0, 0);
    for path in fbc_files() {
        let text = std::fs::read_to_string(&path).expect("read catalog file");
        if text.trim_start().starts_with('{') || path.ends_with(".indexignore") {
            continue;
        }
        for doc in opcat::fbc::yaml::documents(&text) {
            docs += 1;
            let full = opcat::fbc::yaml::to_json_full(doc.text).unwrap_or_else(|e| {
                panic!("{}:{}: full parser: {e}", path.display(), doc.first_line)
            });
            let Some(fast) = opcat::fbc::yaml::to_json_fast(doc.text) else {
                eprintln!("fast path bailed: {}:{}", path.display(), doc.first_line);
                continue;
            };
            fast_docs += 1;
            let full: serde_json::Value = serde_json::from_str(&full).expect("full JSON");
            let fast: serde_json::Value = serde_json::from_str(&fast).expect("fast JSON");
            assert!(
                fast == full,
                "{}:{}: fast path and full parser disagree",
                path.display(),
                doc.first_line
            );
        }
    }
    assert!(
        docs > 1000,
        "expected the real catalogs, found {docs} documents"
    );
    assert_eq!(
        fast_docs, docs,
        "the fast path should handle every real document"
    );
}
