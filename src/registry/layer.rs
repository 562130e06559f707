//! Reproducible image layers from directories.
//!
//! The same directory always gives the same bytes: entries sorted by path, every parent
//! directory listed, owner 0:0 without names, mtime 0, modes normalised to `0755` (directories
//! and executables) or `0644`, gzip header without name or time. Symlinks and special files are
//! refused: catalog and bundle directories hold plain files.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use flate2::Compression;

use super::digest::{Algorithm, Digest, Hasher};

/// A gzip-compressed layer and its digests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The compressed tar.
    pub bytes: Vec<u8>,
    /// Digest of `bytes` (the blob digest).
    pub digest: Digest,
    /// Digest of the uncompressed tar (the config's `rootfs.diff_ids` entry).
    pub diff_id: Digest,
}

/// Why a layer cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum LayerError {
    /// The directory or a file in it cannot be read.
    #[error("cannot read {path}")]
    Read {
        /// The path.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A symlink, socket, device...
    #[error(
        "{path} is not a regular file or directory (symlinks and special files cannot be pushed)"
    )]
    Unsupported {
        /// The path.
        path: PathBuf,
    },
    /// A file name that is not UTF-8.
    #[error("{path} has a file name that is not UTF-8")]
    NotUtf8 {
        /// The path.
        path: PathBuf,
    },
    /// Writing the archive failed.
    #[error("cannot build the layer archive")]
    Archive(#[source] io::Error),
}

impl LayerError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        match self {
            LayerError::Read { .. } | LayerError::Archive(_) => "io",
            LayerError::Unsupported { .. } | LayerError::NotUtf8 { .. } => "invalid_directory",
        }
    }
}

/// One entry to put in a layer.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    /// Path inside the image, relative, `/`-separated, no trailing slash.
    path: String,
    /// Where the content comes from (`None` for directories).
    source: Option<PathBuf>,
    executable: bool,
}

/// Collects the tree under `dir` to be placed at `prefix` inside the image (e.g. `configs`).
/// `prefix` itself and each of its parents become directory entries.
pub struct LayerBuilder {
    entries: Vec<Entry>,
}

impl Default for LayerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl LayerBuilder {
    /// An empty layer.
    pub fn new() -> LayerBuilder {
        LayerBuilder {
            entries: Vec::new(),
        }
    }

    /// Adds `dir`'s contents under `prefix` (relative, e.g. `configs` or `manifests`).
    pub fn add_tree(&mut self, dir: &Path, prefix: &str) -> Result<(), LayerError> {
        let mut parent = String::new();
        for part in prefix.split('/').filter(|p| !p.is_empty()) {
            parent = join(&parent, part);
            self.add_dir(&parent);
        }
        self.walk(dir, &parent)
    }

    fn add_dir(&mut self, path: &str) {
        if !self.entries.iter().any(|e| e.path == path) {
            self.entries.push(Entry {
                path: path.to_owned(),
                source: None,
                executable: true,
            });
        }
    }

    fn walk(&mut self, dir: &Path, prefix: &str) -> Result<(), LayerError> {
        let read = |path: &Path| {
            let path = path.to_owned();
            move |source| LayerError::Read { path, source }
        };
        for item in fs::read_dir(dir).map_err(read(dir))? {
            let item = item.map_err(read(dir))?;
            let path = item.path();
            let name = item
                .file_name()
                .into_string()
                .map_err(|_| LayerError::NotUtf8 { path: path.clone() })?;
            let inner = join(prefix, &name);
            let meta = fs::symlink_metadata(&path).map_err(read(&path))?;
            if meta.is_dir() {
                self.add_dir(&inner);
                self.walk(&path, &inner)?;
            } else if meta.is_file() {
                self.entries.push(Entry {
                    path: inner,
                    source: Some(path),
                    executable: meta.permissions().mode() & 0o111 != 0,
                });
            } else {
                return Err(LayerError::Unsupported { path });
            }
        }
        Ok(())
    }

    /// Writes the sorted tar, gzip-compresses it, and hashes both.
    pub fn build(mut self) -> Result<Layer, LayerError> {
        self.entries.sort();
        let compressed = HashingWriter::new(Vec::new());
        let gzip = flate2::GzBuilder::new()
            .mtime(0)
            .operating_system(255)
            .write(compressed, Compression::default());
        let mut tar = tar::Builder::new(HashingWriter::new(gzip));
        for entry in &self.entries {
            let mut header = tar::Header::new_ustar();
            header.set_uid(0);
            header.set_gid(0);
            header.set_mtime(0);
            header.set_mode(if entry.executable { 0o755 } else { 0o644 });
            match &entry.source {
                None => {
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_size(0);
                    tar.append_data(&mut header, format!("{}/", entry.path), io::empty())
                        .map_err(LayerError::Archive)?;
                }
                Some(source) => {
                    let file = fs::File::open(source).map_err(|e| LayerError::Read {
                        path: source.clone(),
                        source: e,
                    })?;
                    let size = file
                        .metadata()
                        .map_err(|e| LayerError::Read {
                            path: source.clone(),
                            source: e,
                        })?
                        .len();
                    header.set_entry_type(tar::EntryType::Regular);
                    header.set_size(size);
                    tar.append_data(&mut header, &entry.path, io::BufReader::new(file))
                        .map_err(LayerError::Archive)?;
                }
            }
        }
        let uncompressed = tar.into_inner().map_err(LayerError::Archive)?;
        let (gzip, diff_id) = uncompressed.finish();
        let (bytes, digest) = gzip.finish().map_err(LayerError::Archive)?.finish();
        Ok(Layer {
            bytes,
            digest,
            diff_id,
        })
    }
}

fn join(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{prefix}/{name}")
    }
}

/// Hashes everything written through it.
struct HashingWriter<W> {
    inner: W,
    hasher: Hasher,
}

impl<W: Write> HashingWriter<W> {
    fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Hasher::new(Algorithm::Sha256),
        }
    }

    fn finish(self) -> (W, Digest) {
        (self.inner, self.hasher.finish())
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("pkg/b")).unwrap();
        fs::write(dir.path().join("pkg/catalog.yaml"), "schema: olm.package\n").unwrap();
        fs::write(dir.path().join("pkg/b/z.json"), "{}").unwrap();
        fs::write(dir.path().join("a.json"), "{}").unwrap();
        dir
    }

    fn listing(layer: &Layer) -> Vec<(String, u32, u64)> {
        let decoder = flate2::read::GzDecoder::new(&layer.bytes[..]);
        let mut archive = tar::Archive::new(decoder);
        archive
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    e.path().unwrap().display().to_string(),
                    h.mode().unwrap(),
                    h.mtime().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn same_tree_same_digest_sorted_and_normalised() {
        let dir = tree();
        let build = || {
            let mut builder = LayerBuilder::new();
            builder.add_tree(dir.path(), "configs").unwrap();
            builder.build().unwrap()
        };
        let first = build();
        // Touch a file: mtimes must not matter.
        let f = dir.path().join("a.json");
        fs::write(&f, "{}").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
        let second = build();
        assert_eq!(first.digest, second.digest);
        assert_eq!(first.diff_id, second.diff_id);
        let paths: Vec<String> = listing(&first).into_iter().map(|(p, _, _)| p).collect();
        assert_eq!(
            paths,
            [
                "configs/",
                "configs/a.json",
                "configs/pkg/",
                "configs/pkg/b/",
                "configs/pkg/b/z.json",
                "configs/pkg/catalog.yaml"
            ]
        );
        assert!(
            listing(&first)
                .iter()
                .all(|(_, mode, mtime)| *mtime == 0 && (*mode == 0o644 || *mode == 0o755))
        );
    }

    #[test]
    fn symlinks_are_refused() {
        let dir = tree();
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("link")).unwrap();
        let mut builder = LayerBuilder::new();
        let err = builder.add_tree(dir.path(), "configs").unwrap_err();
        assert!(
            err.to_string()
                .contains("symlinks and special files cannot be pushed")
        );
    }
}
