//! The shared third-party test data (real catalogs and bundles nobody here wrote, never copied
//! into the repository): `$OPCAT_SHARED_DATA`, else `../shared/data` beside the workspace.
//! `scripts/test.sh` checks it against its `SHA256SUMS` and exports `OPCAT_SHARED_DATA`.

use std::path::PathBuf;

/// The data directory; panics with what to do when it is not there (tests fail, never skip).
pub fn shared_data_dir() -> PathBuf {
    let dir = std::env::var_os("OPCAT_SHARED_DATA").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data"),
        PathBuf::from,
    );
    assert!(
        dir.join("SHA256SUMS").is_file(),
        "third-party test data not found at {} (set OPCAT_SHARED_DATA to the shared data \
         directory; scripts/test.sh checks and sets it)",
        dir.display()
    );
    dir
}
