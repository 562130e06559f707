//! File-system operations of the extractor: never following links, taming modes, and bounding
//! the decompressed stream.

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::UnpackError;

pub(super) fn dir_mode(mode: u32) -> u32 {
    (mode & 0o755) | 0o700
}

pub(super) fn file_mode(mode: u32) -> u32 {
    (mode & 0o755) | 0o600
}

pub(super) fn set_mode(path: &Path, mode: u32) -> Result<(), UnpackError> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| io_error(path, e))
}

pub(super) fn create_dir(path: &Path) -> Result<(), UnpackError> {
    fs::create_dir(path).map_err(|e| io_error(path, e))
}

/// Removes whatever is at `path` (a later entry replaces an earlier one), never following links.
pub(super) fn remove_existing(path: &Path) -> Result<(), UnpackError> {
    if fs::symlink_metadata(path).is_ok() {
        remove_any(path)?;
    }
    Ok(())
}

pub(super) fn remove_any(path: &Path) -> Result<(), UnpackError> {
    let meta = fs::symlink_metadata(path).map_err(|e| io_error(path, e))?;
    let result = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    result.map_err(|e| io_error(path, e))
}

pub(super) fn io_error(path: &Path, source: io::Error) -> UnpackError {
    UnpackError::Io {
        path: path.to_owned(),
        source,
    }
}

pub(super) fn tar_error(source: io::Error) -> UnpackError {
    // Our stream bound surfaces through the tar reader as an I/O error; keep it recognisable.
    if let Some(max) = source
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<StreamTooLarge>())
        .map(|e| e.0)
    {
        return UnpackError::StreamTooLarge { max };
    }
    UnpackError::Tar(source)
}

#[derive(Debug, thiserror::Error)]
#[error("decompressed layer larger than {0} bytes")]
pub(super) struct StreamTooLarge(u64);

pub(super) struct LimitedReader<R> {
    pub(super) inner: R,
    pub(super) remaining: u64,
    pub(super) max: u64,
}

impl<R: Read> Read for LimitedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let read = self.inner.read(buf)?;
        self.remaining = self
            .remaining
            .checked_sub(read as u64)
            .ok_or_else(|| io::Error::other(StreamTooLarge(self.max)))?;
        Ok(read)
    }
}
