//! Replays every input kept under `fuzz/regressions/` (seeds and any crash the fuzzers found)
//! through the same checks the fuzz targets run.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../fuzz/harness.rs"]
mod harness;

use std::path::PathBuf;

fn inputs(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression inputs in {}",
        dir.display()
    );
    files
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p, bytes)
        })
        .collect()
}

#[test]
fn dockerconfig_regressions() {
    for (path, bytes) in inputs("dockerconfig") {
        eprintln!("replaying {}", path.display());
        harness::dockerconfig(&bytes);
    }
}

#[test]
fn tar_extract_regressions() {
    for (path, bytes) in inputs("tar_extract") {
        eprintln!("replaying {}", path.display());
        harness::tar_extract(&bytes);
    }
}
