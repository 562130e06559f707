//! `Registry::fetch`: manifest → config → layers, streamed through hash, gunzip and the safe
//! unpacker in one pass, into a staging directory that is committed to the cache only when every
//! digest matched and every entry was accepted.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use futures::StreamExt as _;
use oci_client::Client;
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use tokio::sync::mpsc;

use super::cache::UnpackedImage;
use super::client::{Authorized, Registry};
use super::digest::{Digest, Hasher};
use super::error::{Operation, RegistryError};
use super::failure::{Failure, classify};
use super::keyring::Keyring;
use super::manifest::{
    ACCEPTED_MANIFEST_TYPES, Descriptor, ImageManifest, MAX_DOCUMENT_BYTES, Manifest,
    check_layer_media_type, config_labels, parse_manifest, select_platform,
};
use super::reference::ImageRef;
use super::stream::{ChannelReader, HashingReader};
use super::unpack::{UnpackError, UnpackLimits, Unpacker};

/// Chunks buffered between the network and the unpacker (bounded memory).
const CHANNEL_CHUNKS: usize = 16;

/// What one [`Registry::fetch_tracked`] transferred, readable once it returned (successful or
/// not): the bytes of manifests, config and layers received from the registry, and whether the
/// image came from the on-disk cache.
#[derive(Debug, Default)]
pub struct Transfer {
    downloaded: AtomicU64,
    from_cache: AtomicBool,
}

impl Transfer {
    /// Bytes received from the registry (response bodies of manifests, config and layers).
    pub fn downloaded(&self) -> u64 {
        self.downloaded.load(Ordering::Relaxed)
    }

    /// Whether the image was served from the on-disk cache (no layer was downloaded).
    pub fn from_cache(&self) -> bool {
        self.from_cache.load(Ordering::Relaxed)
    }

    fn received(&self, bytes: usize) {
        self.downloaded
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    fn cache_hit(&self, cached: UnpackedImage) -> UnpackedImage {
        self.from_cache.store(true, Ordering::Relaxed);
        cached
    }
}

impl Registry {
    /// Pulls `image` (by tag or digest) and unpacks it into the cache, or returns the cached copy.
    ///
    /// A pinned reference already in the cache needs no network. A tag is resolved first, and
    /// the blobs are only downloaded when that digest is not cached. Concurrent calls for the
    /// same digest unpack it once.
    pub async fn fetch(
        &self,
        image: &ImageRef,
        keyring: &Keyring,
    ) -> Result<UnpackedImage, RegistryError> {
        self.fetch_tracked(image, keyring, &Transfer::default())
            .await
    }

    /// [`Registry::fetch`], recording in `transfer` what was downloaded (for metrics).
    pub async fn fetch_tracked(
        &self,
        image: &ImageRef,
        keyring: &Keyring,
        transfer: &Transfer,
    ) -> Result<UnpackedImage, RegistryError> {
        if let Some(cached) = image.digest().and_then(|d| self.cache.get(&d)) {
            tracing::debug!(%image, digest = %cached.digest, "image cache hit");
            return Ok(transfer.cache_hit(cached));
        }
        let reference = image.as_oci().clone();
        let (authorized, (top_bytes, _)) = self
            .authorize(image, keyring, Operation::Pull, |client| {
                let reference = reference.clone();
                async move { fetch_manifest(&client, &reference).await }
            })
            .await?;
        transfer.received(top_bytes.len());
        let ctx = Ctx {
            image,
            client: &authorized.client,
            authorized: &authorized,
            keyring,
            transfer,
        };
        let digest = ctx.verify_document("manifest", &top_bytes, image.digest())?;
        if let Some(cached) = self.cache.get(&digest) {
            tracing::debug!(%image, %digest, "image cache hit");
            return Ok(transfer.cache_hit(cached));
        }
        let lock = self.lock_for(&digest);
        let _guard = lock.lock().await;
        if let Some(cached) = self.cache.get(&digest) {
            return Ok(transfer.cache_hit(cached));
        }

        let (manifest, manifest_digest) = match parse_manifest(&top_bytes)
            .map_err(|e| ctx.manifest(e))?
        {
            Manifest::Image(manifest) => (manifest, digest.clone()),
            Manifest::Index(entries) => {
                let entry = select_platform(&entries).map_err(|e| ctx.manifest(e))?;
                let pinned = image.with_digest(&entry.digest);
                let (bytes, _) = fetch_manifest(ctx.client, pinned.as_oci())
                    .await
                    .map_err(|f| ctx.failure(f))?;
                transfer.received(bytes.len());
                let platform_digest =
                    ctx.verify_document("platform manifest", &bytes, Some(entry.digest.clone()))?;
                match parse_manifest(&bytes).map_err(|e| ctx.manifest(e))? {
                    Manifest::Image(manifest) => (manifest, platform_digest),
                    Manifest::Index(_) => {
                        return Err(ctx.manifest(super::manifest::ManifestError::Malformed {
                            what: "image index",
                            detail: "entry points to another index".to_owned(),
                        }));
                    }
                }
            }
        };
        let labels = ctx.fetch_config(&manifest).await?;
        let staging = self.cache.stage().map_err(|source| RegistryError::Cache {
            operation: Operation::Pull,
            image: image.to_string(),
            source,
        })?;
        let mut unpacker = Unpacker::new(&staging.rootfs(), self.options.limits);
        for (index, layer) in manifest.layers.iter().enumerate() {
            unpacker = ctx
                .stream_layer(index + 1, layer, unpacker, self.options.limits)
                .await?;
        }
        let stats = tokio::task::spawn_blocking(move || unpacker.finish())
            .await
            .map_err(|e| ctx.failure(Failure::Server(format!("unpack task failed: {e}"))))?
            .map_err(|source| RegistryError::Unpack {
                operation: Operation::Pull,
                image: image.to_string(),
                layer: manifest.layers.len(),
                digest: manifest_digest.clone(),
                source,
            })?;
        let unpacked = UnpackedImage {
            root: staging.rootfs(),
            digest: digest.clone(),
            manifest_digest,
            labels,
            reference: image.to_string(),
        };
        let committed =
            self.cache
                .commit(staging, unpacked)
                .map_err(|source| RegistryError::Cache {
                    operation: Operation::Pull,
                    image: image.to_string(),
                    source,
                })?;
        tracing::info!(%image, %digest, entries = stats.entries, bytes = stats.bytes, "pulled and unpacked image");
        Ok(committed)
    }
}

/// GETs a manifest with every accepted media type. oci-client checks the body against the
/// reference digest and the `Docker-Content-Digest` header; we check again ourselves.
async fn fetch_manifest(
    client: &Client,
    reference: &oci_client::Reference,
) -> Result<(Bytes, String), Failure> {
    client
        .pull_manifest_raw(
            reference,
            &RegistryAuth::Anonymous,
            &ACCEPTED_MANIFEST_TYPES,
        )
        .await
        .map_err(classify)
}

struct Ctx<'a> {
    image: &'a ImageRef,
    client: &'a Client,
    authorized: &'a Authorized,
    keyring: &'a Keyring,
    transfer: &'a Transfer,
}

impl Ctx<'_> {
    fn failure(&self, failure: Failure) -> RegistryError {
        self.authorized
            .error(failure, Operation::Pull, self.image, self.keyring)
    }

    fn manifest(&self, source: super::manifest::ManifestError) -> RegistryError {
        RegistryError::Manifest {
            operation: Operation::Pull,
            image: self.image.to_string(),
            source,
        }
    }

    fn mismatch(&self, what: String, expected: &Digest, actual: String) -> RegistryError {
        RegistryError::DigestMismatch {
            operation: Operation::Pull,
            image: self.image.to_string(),
            what,
            expected: expected.to_string(),
            actual,
        }
    }

    /// Hashes a document; it must match `expected` when given. Returns its digest.
    fn verify_document(
        &self,
        what: &str,
        bytes: &[u8],
        expected: Option<Digest>,
    ) -> Result<Digest, RegistryError> {
        if bytes.len() as u64 > MAX_DOCUMENT_BYTES {
            return Err(RegistryError::TooLarge {
                operation: Operation::Pull,
                image: self.image.to_string(),
                what: what.to_owned(),
                size: bytes.len() as u64,
                max: MAX_DOCUMENT_BYTES,
            });
        }
        let Some(expected) = expected else {
            return Ok(Digest::sha256_of(bytes));
        };
        let mut hasher = Hasher::new(expected.algorithm());
        hasher.update(bytes);
        let actual = hasher.finish();
        if actual != expected {
            return Err(self.mismatch(what.to_owned(), &expected, actual.to_string()));
        }
        Ok(actual)
    }

    async fn fetch_config(
        &self,
        manifest: &ImageManifest,
    ) -> Result<BTreeMap<String, String>, RegistryError> {
        let config = &manifest.config;
        if config.size > MAX_DOCUMENT_BYTES {
            return Err(RegistryError::TooLarge {
                operation: Operation::Pull,
                image: self.image.to_string(),
                what: "image config".to_owned(),
                size: config.size,
                max: MAX_DOCUMENT_BYTES,
            });
        }
        let mut bytes = Vec::new();
        let mut stream = self
            .client
            .pull_blob_stream(self.image.as_oci(), &oci_descriptor(config))
            .await
            .map_err(|e| self.failure(classify(e)))?;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    self.transfer.received(chunk.len());
                    bytes.extend_from_slice(&chunk);
                }
                // oci-client reports its own digest check as a stream error at the end; ours
                // below gives the better message.
                Err(error) if is_digest_verdict(&error) => break,
                Err(error) => {
                    return Err(self.failure(super::failure::classify_transport(&error)));
                }
            }
            if bytes.len() as u64 > config.size {
                break;
            }
        }
        self.verify_document("image config", &bytes, Some(config.digest.clone()))?;
        config_labels(&bytes).map_err(|e| self.manifest(e))
    }

    /// Downloads one layer and feeds it to the unpacker on a blocking thread, hashing the
    /// compressed bytes on the way. The digest verdict beats the unpack verdict: a layer that
    /// does not match its digest is reported as such even if its tar was also refused.
    async fn stream_layer(
        &self,
        number: usize,
        layer: &Descriptor,
        mut unpacker: Unpacker,
        limits: UnpackLimits,
    ) -> Result<Unpacker, RegistryError> {
        check_layer_media_type(&layer.media_type).map_err(|e| self.manifest(e))?;
        let what = format!("layer {number} ({})", layer.digest);
        if layer.size > limits.max_stream_bytes() {
            return Err(RegistryError::TooLarge {
                operation: Operation::Pull,
                image: self.image.to_string(),
                what,
                size: layer.size,
                max: limits.max_stream_bytes(),
            });
        }
        let mut stream = self
            .client
            .pull_blob_stream(self.image.as_oci(), &oci_descriptor(layer))
            .await
            .map_err(|e| self.failure(classify(e)))?;
        let (sender, receiver) = mpsc::channel::<io::Result<Bytes>>(CHANNEL_CHUNKS);
        let expected = layer.digest.clone();
        let unpack = tokio::task::spawn_blocking(move || {
            let mut input = HashingReader::new(ChannelReader::new(receiver), &expected);
            let result = unpack_stream(&mut unpacker, &mut input);
            // Whatever happened, read the rest so the verdict on the digest is complete.
            let _ = io::copy(&mut input, &mut io::sink());
            (unpacker, result, input.finish())
        });
        let size = layer.size;
        let mut sent: u64 = 0;
        let mut transport_error = None;
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) => {
                    self.transfer.received(chunk.len());
                    sent += chunk.len() as u64;
                    let overflow = sent > size;
                    if sender.send(Ok(chunk)).await.is_err() || overflow {
                        break; // the unpacker stopped, or the blob is longer than declared
                    }
                }
                Err(error) => {
                    if !is_digest_verdict(&error) {
                        transport_error = Some(super::failure::classify_transport(&error));
                    }
                    break;
                }
            }
        }
        drop(sender);
        let (unpacker, result, (actual, received)) = unpack
            .await
            .map_err(|e| self.failure(Failure::Server(format!("unpack task failed: {e}"))))?;
        if let Some(failure) = transport_error {
            return Err(self.failure(failure));
        }
        if received != size || actual != layer.digest {
            let actual = if received == size {
                actual.to_string()
            } else {
                format!("{received} bytes instead of the declared {size}")
            };
            return Err(self.mismatch(what, &layer.digest, actual));
        }
        result.map_err(|source| RegistryError::Unpack {
            operation: Operation::Pull,
            image: self.image.to_string(),
            layer: number,
            digest: layer.digest.clone(),
            source,
        })?;
        Ok(unpacker)
    }
}

/// oci-client's streams end with an error when the content does not hash to its digest; that is
/// a verdict on the content (ours is computed independently), not a transport failure.
fn is_digest_verdict(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.is::<oci_client::errors::DigestError>())
}

fn oci_descriptor(descriptor: &Descriptor) -> OciDescriptor {
    OciDescriptor {
        media_type: descriptor.media_type.clone(),
        digest: descriptor.digest.to_string(),
        size: i64::try_from(descriptor.size).unwrap_or(i64::MAX),
        ..OciDescriptor::default()
    }
}

/// Sniffs gzip (magic `1f 8b`) and unpacks the (decompressed) tar stream.
pub fn unpack_stream(unpacker: &mut Unpacker, input: &mut impl Read) -> Result<(), UnpackError> {
    let mut buffered = BufReader::with_capacity(64 * 1024, input);
    let head = buffered.fill_buf().map_err(UnpackError::Tar)?;
    if head.starts_with(&[0x1f, 0x8b]) {
        // Multi-member gzip is valid gzip; a single-member decoder would stop early.
        let mut decoder = flate2::bufread::MultiGzDecoder::new(buffered);
        unpacker.unpack_layer(&mut decoder)?;
        // Read to the end so the gzip trailer (CRC, length) is checked.
        io::copy(&mut decoder, &mut io::sink()).map_err(UnpackError::Tar)?;
        Ok(())
    } else {
        unpacker.unpack_layer(&mut buffered)
    }
}
