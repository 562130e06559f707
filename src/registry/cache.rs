//! On-disk cache of unpacked images, keyed by manifest digest.
//!
//! Layout under the cache directory:
//!
//! ```text
//! images/<algorithm>/<hex>/rootfs/      the unpacked file system
//! images/<algorithm>/<hex>/image.json   digest, labels, source reference
//! tmp/<random>/                         unpacks in progress (never read)
//! ```
//!
//! An image directory appears only by `rename(2)` of a fully unpacked and verified staging
//! directory, so its existence means it is complete, across crashes and processes. Two writers
//! racing for one digest both unpack; the first rename wins and the second is discarded.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::digest::Digest;

const METADATA_FILE: &str = "image.json";
const ROOTFS_DIR: &str = "rootfs";
/// Staging directories older than this are leftovers of a crashed process.
const STALE_STAGING_AGE: Duration = Duration::from_secs(3600);

/// The cache directory.
#[derive(Debug, Clone)]
pub struct ImageCache {
    root: PathBuf,
}

/// An image unpacked in the cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnpackedImage {
    /// The unpacked file system (read-only by convention).
    pub root: PathBuf,
    /// The digest the image was resolved to (the index digest for multi-platform images):
    /// the cache key and what belongs in status.
    pub digest: Digest,
    /// The digest of the platform manifest actually unpacked (equal to `digest` for
    /// single-platform images).
    pub manifest_digest: Digest,
    /// The image config's labels.
    pub labels: BTreeMap<String, String>,
    /// The reference it was first pulled as (informational).
    pub reference: String,
}

impl UnpackedImage {
    /// Path inside the image named by a label such as
    /// `operators.operatorframework.io.index.configs.v1` (`/configs` when the label is absent
    /// and `default` is given). `None` when the label points outside the root.
    pub fn dir_from_label(&self, label: &str, default: Option<&str>) -> Option<PathBuf> {
        let value = self.labels.get(label).map(String::as_str).or(default)?;
        let mut path = self.root.clone();
        for part in value.split('/') {
            match part {
                "" | "." => {}
                ".." => return None,
                part => path.push(part),
            }
        }
        Some(path)
    }
}

/// Why the cache failed.
#[derive(Debug, thiserror::Error)]
#[error("image cache {path}: {action} failed")]
pub struct CacheError {
    path: PathBuf,
    action: &'static str,
    #[source]
    source: io::Error,
}

impl CacheError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        "io"
    }
}

fn cache_error(path: &Path, action: &'static str) -> impl FnOnce(io::Error) -> CacheError {
    let path = path.to_owned();
    move |source| CacheError {
        path,
        action,
        source,
    }
}

/// A directory being filled; removed on drop unless committed.
#[derive(Debug)]
pub struct Staging {
    dir: tempfile::TempDir,
}

impl Staging {
    /// Where the image's files go.
    pub fn rootfs(&self) -> PathBuf {
        self.dir.path().join(ROOTFS_DIR)
    }
}

impl ImageCache {
    /// Opens (creating if needed) the cache at `root` and removes stale staging directories.
    pub fn open(root: &Path) -> Result<ImageCache, CacheError> {
        for dir in [root.join("images"), root.join("tmp")] {
            fs::create_dir_all(&dir).map_err(cache_error(&dir, "creating the directory"))?;
        }
        let cache = ImageCache {
            root: root.to_owned(),
        };
        cache.remove_stale_staging();
        Ok(cache)
    }

    /// The cache directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn image_dir(&self, digest: &Digest) -> PathBuf {
        self.root
            .join("images")
            .join(digest.algorithm().name())
            .join(digest.hex())
    }

    /// The cached image for `digest`, if complete.
    pub fn get(&self, digest: &Digest) -> Option<UnpackedImage> {
        let dir = self.image_dir(digest);
        let bytes = fs::read(dir.join(METADATA_FILE)).ok()?;
        let mut image: UnpackedImage = serde_json::from_slice(&bytes).ok()?;
        if image.digest != *digest {
            return None;
        }
        // The cache directory may have moved since the metadata was written.
        image.root = dir.join(ROOTFS_DIR);
        image.root.is_dir().then_some(image)
    }

    /// A fresh staging directory with an empty `rootfs/`.
    pub fn stage(&self) -> Result<Staging, CacheError> {
        let tmp = self.root.join("tmp");
        let dir = tempfile::Builder::new()
            .prefix("unpack-")
            .tempdir_in(&tmp)
            .map_err(cache_error(&tmp, "creating a staging directory"))?;
        let rootfs = dir.path().join(ROOTFS_DIR);
        fs::create_dir(&rootfs).map_err(cache_error(&rootfs, "creating the staging rootfs"))?;
        Ok(Staging { dir })
    }

    /// Moves a fully unpacked and verified staging directory into place. If another writer got
    /// there first, its copy is kept and returned.
    pub fn commit(
        &self,
        staging: Staging,
        mut image: UnpackedImage,
    ) -> Result<UnpackedImage, CacheError> {
        let target = self.image_dir(&image.digest);
        image.root = target.join(ROOTFS_DIR);
        let metadata = staging.dir.path().join(METADATA_FILE);
        let bytes = serde_json::to_vec_pretty(&image).map_err(|e| CacheError {
            path: metadata.clone(),
            action: "encoding metadata",
            source: io::Error::other(e),
        })?;
        fs::write(&metadata, bytes).map_err(cache_error(&metadata, "writing metadata"))?;
        let parent = target.parent().unwrap_or(&self.root);
        fs::create_dir_all(parent).map_err(cache_error(parent, "creating the directory"))?;
        match fs::rename(staging.dir.path(), &target) {
            Ok(()) => {
                // The staging path no longer exists; nothing for TempDir to clean.
                let _ = staging.dir.keep();
                Ok(image)
            }
            Err(error) => match self.get(&image.digest) {
                // Someone else committed the same digest first; ours is dropped (and removed).
                Some(existing) => Ok(existing),
                None => Err(cache_error(&target, "moving the unpacked image into place")(error)),
            },
        }
    }

    /// Deletes a cached image (for garbage collection by the caller).
    pub fn remove(&self, digest: &Digest) -> Result<(), CacheError> {
        let dir = self.image_dir(digest);
        // Move it aside first so readers never see a half-deleted image.
        let doomed = self
            .root
            .join("tmp")
            .join(format!("remove-{}", digest.hex()));
        match fs::rename(&dir, &doomed) {
            Ok(()) => fs::remove_dir_all(&doomed).map_err(cache_error(&doomed, "removing")),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(cache_error(&dir, "removing")(e)),
        }
    }

    fn remove_stale_staging(&self) {
        let tmp = self.root.join("tmp");
        let Ok(listing) = fs::read_dir(&tmp) else {
            return;
        };
        let now = SystemTime::now();
        for item in listing.flatten() {
            let age = item
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|modified| now.duration_since(modified).ok());
            if age.is_some_and(|age| age > STALE_STAGING_AGE)
                && let Err(error) = fs::remove_dir_all(item.path())
            {
                tracing::warn!(path = %item.path().display(), %error, "cannot remove stale staging directory");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(digest: &Digest) -> UnpackedImage {
        UnpackedImage {
            root: PathBuf::new(),
            digest: digest.clone(),
            manifest_digest: digest.clone(),
            labels: BTreeMap::from([("l".to_owned(), "/configs".to_owned())]),
            reference: "r.io/x:1".to_owned(),
        }
    }

    #[test]
    fn commit_then_get_and_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ImageCache::open(dir.path()).unwrap();
        let digest = Digest::sha256_of(b"m");
        assert!(cache.get(&digest).is_none());
        let staging = cache.stage().unwrap();
        fs::write(staging.rootfs().join("f"), b"x").unwrap();
        let committed = cache.commit(staging, image(&digest)).unwrap();
        assert_eq!(fs::read(committed.root.join("f")).unwrap(), b"x");
        let reopened = ImageCache::open(dir.path()).unwrap();
        assert_eq!(reopened.get(&digest), Some(committed));
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn second_commit_of_same_digest_keeps_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ImageCache::open(dir.path()).unwrap();
        let digest = Digest::sha256_of(b"m");
        let first = cache.stage().unwrap();
        let second = cache.stage().unwrap();
        fs::write(first.rootfs().join("who"), b"first").unwrap();
        fs::write(second.rootfs().join("who"), b"second").unwrap();
        cache.commit(first, image(&digest)).unwrap();
        let kept = cache.commit(second, image(&digest)).unwrap();
        assert_eq!(fs::read(kept.root.join("who")).unwrap(), b"first");
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn dropped_staging_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ImageCache::open(dir.path()).unwrap();
        drop(cache.stage().unwrap());
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn label_dirs_stay_inside_the_root() {
        let mut unpacked = image(&Digest::sha256_of(b"m"));
        unpacked.root = PathBuf::from("/cache/rootfs");
        assert_eq!(
            unpacked.dir_from_label("l", None),
            Some(PathBuf::from("/cache/rootfs/configs"))
        );
        assert_eq!(
            unpacked.dir_from_label("missing", Some("/configs")),
            Some(PathBuf::from("/cache/rootfs/configs"))
        );
        unpacked.labels.insert("l".into(), "/../etc".into());
        assert_eq!(unpacked.dir_from_label("l", None), None);
    }
}
