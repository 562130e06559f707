//! Safe extraction of image layers (tar streams) into a directory.
//!
//! Refused, with an error naming the entry: paths with `..` or a leading `/`; symlinks whose
//! target is absolute or resolves outside the root; hard links to anything but a regular file
//! inside the root; any write through a symlink (an entry whose parent is a symlink); device,
//! FIFO and other special entries; content beyond [`UnpackLimits`]. OCI whiteouts (`.wh.NAME`,
//! `.wh..wh..opq`) delete what lower layers put there. Permissions are reduced to `0o755` (no
//! setuid/setgid/sticky, nothing group/world writable); owners and times are not applied.
//!
//! The caller unpacks into a fresh private directory and renames it into place only after
//! every layer and every digest checked out (see `pull`), so a refusal leaves nothing behind.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use tar::EntryType;

mod error;
mod fsops;
mod paths;

pub use error::{UnpackError, UnsafeReason};

use fsops::{
    LimitedReader, create_dir, dir_mode, file_mode, io_error, remove_any, remove_existing,
    set_mode, tar_error,
};
use paths::{check_resolved_symlink, check_symlink_target, clean_path};

const WHITEOUT_PREFIX: &str = ".wh.";
const OPAQUE_WHITEOUT: &str = ".wh..wh..opq";
const MAX_PATH_BYTES: usize = 4096;
/// `ELOOP` on Linux (`io::ErrorKind::FilesystemLoop` is not stable).
const ELOOP: i32 = 40;

/// Limits on what one image may unpack to (all layers together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnpackLimits {
    /// Total bytes of regular-file content.
    pub max_total_bytes: u64,
    /// Number of entries (files, directories, links).
    pub max_files: u64,
    /// Bytes of one regular file.
    pub max_file_bytes: u64,
}

impl Default for UnpackLimits {
    /// 1 GiB in total, 100 000 entries, 256 MiB per file: far above real catalogs (the largest
    /// public one is ~60 MB in ~50 files) and far below what hurts a controller's node.
    fn default() -> Self {
        UnpackLimits {
            max_total_bytes: 1 << 30,
            max_files: 100_000,
            max_file_bytes: 256 << 20,
        }
    }
}

impl UnpackLimits {
    /// Bound on the decompressed tar stream: file content plus generous room for headers
    /// (three 512-byte blocks and a long name per entry). Stops decompression bombs made of
    /// headers rather than files.
    pub fn max_stream_bytes(&self) -> u64 {
        self.max_total_bytes
            .saturating_add(self.max_files.saturating_mul(8 * 1024))
            .saturating_add(1 << 20)
    }
}

/// Counts after unpacking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnpackStats {
    /// Entries created (files, directories, links).
    pub entries: u64,
    /// Bytes of regular-file content written.
    pub bytes: u64,
}

/// Unpacks the layers of one image, in order, into `root`.
pub struct Unpacker {
    root: PathBuf,
    limits: UnpackLimits,
    stats: UnpackStats,
}

impl Unpacker {
    /// An unpacker writing into `root`, which must exist and be empty (or hold lower layers).
    pub fn new(root: &Path, limits: UnpackLimits) -> Unpacker {
        Unpacker {
            root: root.to_owned(),
            limits,
            stats: UnpackStats::default(),
        }
    }

    /// Extracts one layer's (uncompressed) tar stream, applying its whiteouts to lower layers.
    pub fn unpack_layer(&mut self, stream: impl Read) -> Result<(), UnpackError> {
        let limited = LimitedReader {
            inner: stream,
            remaining: self.limits.max_stream_bytes(),
            max: self.limits.max_stream_bytes(),
        };
        let mut archive = tar::Archive::new(limited);
        let mut this_layer: HashSet<PathBuf> = HashSet::new();
        for entry in archive.entries().map_err(tar_error)? {
            let entry = entry.map_err(tar_error)?;
            self.unpack_entry(entry, &mut this_layer)?;
        }
        // Drain the end-of-archive padding so the caller's digest covers the whole blob.
        let mut rest = archive.into_inner();
        io::copy(&mut rest, &mut io::sink()).map_err(tar_error)?;
        Ok(())
    }

    /// Checks that no symlink resolves outside the root (a chain of individually harmless
    /// links can), and returns the totals.
    pub fn finish(self) -> Result<UnpackStats, UnpackError> {
        let canonical_root = fs::canonicalize(&self.root).map_err(|source| UnpackError::Io {
            path: self.root.clone(),
            source,
        })?;
        let mut pending = vec![self.root.clone()];
        while let Some(dir) = pending.pop() {
            let listing = fs::read_dir(&dir).map_err(|source| UnpackError::Io {
                path: dir.clone(),
                source,
            })?;
            for item in listing {
                let item = item.map_err(|source| UnpackError::Io {
                    path: dir.clone(),
                    source,
                })?;
                let file_type = item.file_type().map_err(|source| UnpackError::Io {
                    path: item.path(),
                    source,
                })?;
                if file_type.is_dir() {
                    pending.push(item.path());
                } else if file_type.is_symlink() {
                    check_resolved_symlink(&self.root, &canonical_root, &item.path())?;
                }
            }
        }
        Ok(self.stats)
    }

    fn unpack_entry<R: Read>(
        &mut self,
        mut entry: tar::Entry<'_, R>,
        this_layer: &mut HashSet<PathBuf>,
    ) -> Result<(), UnpackError> {
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let unsafe_entry = |reason| UnpackError::Unsafe {
            path: shown.clone(),
            reason,
        };
        let kind = entry.header().entry_type();
        if matches!(kind, EntryType::XGlobalHeader) {
            return Ok(());
        }
        let relative = clean_path(&raw).map_err(unsafe_entry)?;
        let Some(name) = relative.file_name() else {
            // The root directory itself (".", "./"): nothing to create.
            return Ok(());
        };
        let name_bytes = name.as_bytes();
        if name_bytes.starts_with(WHITEOUT_PREFIX.as_bytes()) {
            return self.apply_whiteout(&relative, this_layer, &shown);
        }
        self.count_entry(&shown)?;
        let target = self.root.join(&relative);
        self.make_parents(&relative)
            .map_err(|e| e.for_entry(&shown))?;
        match kind {
            EntryType::Directory => {
                match fs::symlink_metadata(&target) {
                    Ok(meta) if meta.is_dir() => {}
                    Ok(_) => {
                        remove_any(&target)?;
                        create_dir(&target)?;
                    }
                    Err(_) => create_dir(&target)?,
                }
                set_mode(&target, dir_mode(entry.header().mode().unwrap_or(0o755)))?;
            }
            EntryType::Regular | EntryType::Continuous => {
                let size = entry.size();
                if size > self.limits.max_file_bytes {
                    return Err(self.limit(&shown, "single-file size", self.limits.max_file_bytes));
                }
                if self.stats.bytes.saturating_add(size) > self.limits.max_total_bytes {
                    return Err(self.limit(&shown, "total size", self.limits.max_total_bytes));
                }
                remove_existing(&target)?;
                let mut file = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&target)
                    .map_err(|source| io_error(&target, source))?;
                let written = io::copy(&mut entry, &mut file).map_err(tar_error)?;
                self.stats.bytes += written;
                set_mode(&target, file_mode(entry.header().mode().unwrap_or(0o644)))?;
            }
            EntryType::Symlink => {
                let link = entry.link_name_bytes().unwrap_or_default().into_owned();
                check_symlink_target(&relative, &link).map_err(unsafe_entry)?;
                remove_existing(&target)?;
                symlink(OsStr::from_bytes(&link), &target)
                    .map_err(|source| io_error(&target, source))?;
            }
            EntryType::Link => {
                let link = entry.link_name_bytes().unwrap_or_default().into_owned();
                let bad = || UnsafeReason::BadHardlink {
                    target: String::from_utf8_lossy(&link).into_owned(),
                };
                let source_rel = clean_path(&link).map_err(|_| unsafe_entry(bad()))?;
                self.check_parents(&source_rel)
                    .map_err(|_| unsafe_entry(bad()))?;
                let source = self.root.join(&source_rel);
                match fs::symlink_metadata(&source) {
                    Ok(meta) if meta.is_file() && source_rel != relative => {}
                    _ => return Err(unsafe_entry(bad())),
                }
                remove_existing(&target)?;
                fs::hard_link(&source, &target).map_err(|e| io_error(&target, e))?;
            }
            EntryType::Char => {
                return Err(unsafe_entry(UnsafeReason::SpecialFile("character device")));
            }
            EntryType::Block => {
                return Err(unsafe_entry(UnsafeReason::SpecialFile("block device")));
            }
            EntryType::Fifo => return Err(unsafe_entry(UnsafeReason::SpecialFile("FIFO"))),
            _ => return Err(unsafe_entry(UnsafeReason::SpecialFile("special or sparse"))),
        }
        this_layer.insert(relative);
        Ok(())
    }

    fn apply_whiteout(
        &mut self,
        relative: &Path,
        this_layer: &HashSet<PathBuf>,
        shown: &str,
    ) -> Result<(), UnpackError> {
        let unsafe_entry = |reason| UnpackError::Unsafe {
            path: shown.to_owned(),
            reason,
        };
        let parent = relative.parent().unwrap_or(Path::new(""));
        let name = relative.file_name().unwrap_or_default().as_bytes();
        // A whiteout's directory must be real: deleting through a symlink would reach outside.
        self.check_parents(relative)
            .map_err(|e| e.for_entry(shown))?;
        let dir = self.root.join(parent);
        if name == OPAQUE_WHITEOUT.as_bytes() {
            let Ok(listing) = fs::read_dir(&dir) else {
                return Ok(()); // nothing below to hide
            };
            for item in listing {
                let item = item.map_err(|source| io_error(&dir, source))?;
                if !this_layer.contains(&parent.join(item.file_name())) {
                    remove_any(&item.path())?;
                }
            }
            return Ok(());
        }
        let hidden = &name[WHITEOUT_PREFIX.len()..];
        if hidden.is_empty() || hidden == b"." || hidden == b".." || hidden.starts_with(b".wh.") {
            // `.wh..wh.*` other than opaque are AUFS bookkeeping; anything else is bogus.
            if hidden.starts_with(b".wh.") {
                return Ok(());
            }
            return Err(unsafe_entry(UnsafeReason::BadWhiteout));
        }
        let victim = dir.join(OsStr::from_bytes(hidden));
        if fs::symlink_metadata(&victim).is_ok() {
            remove_any(&victim)?;
        }
        Ok(())
    }

    fn count_entry(&mut self, shown: &str) -> Result<(), UnpackError> {
        if self.stats.entries >= self.limits.max_files {
            return Err(self.limit(shown, "entry count", self.limits.max_files));
        }
        self.stats.entries += 1;
        Ok(())
    }

    fn limit(&self, shown: &str, limit: &'static str, max: u64) -> UnpackError {
        UnpackError::Limit {
            path: shown.to_owned(),
            limit,
            max,
        }
    }

    /// Creates missing ancestors of `relative` as real directories; refuses symlinks and files
    /// on the way.
    fn make_parents(&mut self, relative: &Path) -> Result<(), ParentError> {
        let mut current = self.root.clone();
        let mut shown = PathBuf::new();
        let Some(parent) = relative.parent() else {
            return Ok(());
        };
        for component in parent.components() {
            current.push(component);
            shown.push(component);
            match fs::symlink_metadata(&current) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(ParentError::Unsafe(UnsafeReason::ThroughSymlink {
                        link: shown.display().to_string(),
                    }));
                }
                Ok(_) => {
                    return Err(ParentError::Unsafe(UnsafeReason::ParentNotDirectory {
                        parent: shown.display().to_string(),
                    }));
                }
                Err(_) => {
                    fs::create_dir(&current).map_err(|e| ParentError::Io(current.clone(), e))?;
                }
            }
        }
        Ok(())
    }

    /// Like [`Self::make_parents`] but creates nothing: missing ancestors are fine.
    fn check_parents(&self, relative: &Path) -> Result<(), ParentError> {
        let mut current = self.root.clone();
        let mut shown = PathBuf::new();
        for component in relative.parent().into_iter().flat_map(Path::components) {
            current.push(component);
            shown.push(component);
            if let Ok(meta) = fs::symlink_metadata(&current)
                && meta.file_type().is_symlink()
            {
                return Err(ParentError::Unsafe(UnsafeReason::ThroughSymlink {
                    link: shown.display().to_string(),
                }));
            }
        }
        Ok(())
    }
}

enum ParentError {
    Unsafe(UnsafeReason),
    Io(PathBuf, io::Error),
}

impl ParentError {
    fn for_entry(self, shown: &str) -> UnpackError {
        match self {
            ParentError::Unsafe(reason) => UnpackError::Unsafe {
                path: shown.to_owned(),
                reason,
            },
            ParentError::Io(path, source) => UnpackError::Io { path, source },
        }
    }
}
