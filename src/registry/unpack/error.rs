//! Why a layer was refused: the entry and the rule it broke, or the limit it crossed.

use std::io;
use std::path::PathBuf;

use super::MAX_PATH_BYTES;

/// Why a layer was refused.
#[derive(Debug, thiserror::Error)]
pub enum UnpackError {
    /// The entry would escape the root or is of a forbidden kind.
    #[error("layer entry {path:?} refused: {reason}")]
    Unsafe {
        /// The entry path as written in the layer.
        path: String,
        /// Why.
        reason: UnsafeReason,
    },
    /// A limit was exceeded.
    #[error("layer entry {path:?} exceeds the {limit} limit of {max}")]
    Limit {
        /// The entry that crossed the limit.
        path: String,
        /// Which limit.
        limit: &'static str,
        /// The configured maximum.
        max: u64,
    },
    /// The decompressed stream is larger than any acceptable layer.
    #[error("layer stream exceeds {max} bytes after decompression")]
    StreamTooLarge {
        /// The bound.
        max: u64,
    },
    /// The tar stream itself is broken.
    #[error("layer is not a valid tar stream")]
    Tar(#[source] io::Error),
    /// A file-system operation failed.
    #[error("cannot write {path}")]
    Io {
        /// The path being written.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
}

impl UnpackError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            UnpackError::Unsafe { .. } => "unsafe_layer",
            UnpackError::Limit { .. } | UnpackError::StreamTooLarge { .. } => "limit_exceeded",
            UnpackError::Tar(_) => "malformed_layer",
            UnpackError::Io { .. } => "io",
        }
    }
}

/// What made an entry unsafe.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UnsafeReason {
    /// A `..` component.
    #[error("path contains \"..\"")]
    ParentDir,
    /// A leading `/`.
    #[error("absolute path")]
    Absolute,
    /// Over-long path.
    #[error("path longer than {MAX_PATH_BYTES} bytes")]
    TooLong,
    /// A symlink target that is absolute or leaves the root.
    #[error("symlink target {target:?} points outside the image root")]
    SymlinkEscapes {
        /// The link target.
        target: String,
    },
    /// A symlink chain that loops.
    #[error("symlink loop")]
    SymlinkLoop,
    /// A hard link to something that is not a regular file inside the root.
    #[error("hard link target {target:?} is not a regular file inside the image root")]
    BadHardlink {
        /// The link target.
        target: String,
    },
    /// An ancestor of the entry is a symlink.
    #[error("would write through symlink {link:?}")]
    ThroughSymlink {
        /// The symlink on the way.
        link: String,
    },
    /// An ancestor of the entry is a regular file.
    #[error("parent {parent:?} is not a directory")]
    ParentNotDirectory {
        /// The blocking path.
        parent: String,
    },
    /// Devices, FIFOs and other special files.
    #[error("{0} entries are not allowed")]
    SpecialFile(&'static str),
    /// A whiteout that names nothing sensible.
    #[error("invalid whiteout")]
    BadWhiteout,
}
