//! Path rules of the extractor: what an entry path or link target may look like, and the final
//! check that no symlink resolves outside the root.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::fsops::io_error;
use super::{ELOOP, MAX_PATH_BYTES, UnpackError, UnsafeReason};

/// Turns a tar path into a relative path without `.`/empty components; refuses `..`, `/…`.
pub(super) fn clean_path(raw: &[u8]) -> Result<PathBuf, UnsafeReason> {
    if raw.len() > MAX_PATH_BYTES {
        return Err(UnsafeReason::TooLong);
    }
    if raw.first() == Some(&b'/') {
        return Err(UnsafeReason::Absolute);
    }
    let mut clean = PathBuf::new();
    for part in raw.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => return Err(UnsafeReason::ParentDir),
            _ => clean.push(OsStr::from_bytes(part)),
        }
    }
    Ok(clean)
}

/// A symlink at `relative` pointing to `target` must be relative and, resolved lexically from
/// the link's directory, stay inside the root.
pub(super) fn check_symlink_target(relative: &Path, target: &[u8]) -> Result<(), UnsafeReason> {
    let escapes = || UnsafeReason::SymlinkEscapes {
        target: String::from_utf8_lossy(target).into_owned(),
    };
    if target.is_empty() || target.first() == Some(&b'/') || target.len() > MAX_PATH_BYTES {
        return Err(escapes());
    }
    let mut depth: usize = relative.parent().map_or(0, |p| p.components().count());
    for part in target.split(|b| *b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => depth = depth.checked_sub(1).ok_or_else(escapes)?,
            _ => depth += 1,
        }
    }
    Ok(())
}

pub(super) fn check_resolved_symlink(
    root: &Path,
    canonical_root: &Path,
    link: &Path,
) -> Result<(), UnpackError> {
    let shown = link
        .strip_prefix(root)
        .unwrap_or(link)
        .display()
        .to_string();
    match fs::canonicalize(link) {
        Ok(resolved) if resolved.starts_with(canonical_root) => Ok(()),
        Ok(_) => Err(UnpackError::Unsafe {
            path: shown,
            reason: UnsafeReason::SymlinkEscapes {
                target: fs::read_link(link)
                    .map(|t| t.display().to_string())
                    .unwrap_or_default(),
            },
        }),
        // Dangling links cannot be read through; their lexical check already passed.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) if e.raw_os_error() == Some(ELOOP) => Err(UnpackError::Unsafe {
            path: shown,
            reason: UnsafeReason::SymlinkLoop,
        }),
        Err(source) => Err(io_error(link, source)),
    }
}
