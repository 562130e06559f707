//! Registries that lie or misbehave (served in-process, since the real one will not): content
//! that does not match its digest, hostile layers, 403, hangs, indexes. After every failure the
//! cache holds no image and no staging directory, and nothing is written outside it.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod registry_support;

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use opcat::registry::digest::Digest;
use opcat::registry::manifest::{DOCKER_MANIFEST, OCI_INDEX, OCI_LAYER_GZIP, OCI_MANIFEST};
use opcat::registry::{ImageRef, Keyring, Registry, RegistryError, RegistryOptions};
use test_registry::{FakeRegistry, Reply};

/// An image served by the fake registry; the parts can be tampered with before `serve`.
struct FakeImage {
    repository: String,
    config: Vec<u8>,
    layers: Vec<Vec<u8>>,
    layer_media_type: String,
}

impl FakeImage {
    fn new(layers: Vec<Vec<u8>>) -> FakeImage {
        FakeImage {
            repository: "test/image".to_owned(),
            config: br#"{"architecture":"amd64","os":"linux","config":{"Labels":{"k":"v"}}}"#
                .to_vec(),
            layers,
            layer_media_type: OCI_LAYER_GZIP.to_owned(),
        }
    }

    fn descriptor(media_type: &str, bytes: &[u8]) -> serde_json::Value {
        serde_json::json!({
            "mediaType": media_type,
            "digest": Digest::sha256_of(bytes).to_string(),
            "size": bytes.len(),
        })
    }

    fn manifest(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": Self::descriptor("application/vnd.oci.image.config.v1+json", &self.config),
            "layers": self.layers.iter().map(|l| Self::descriptor(&self.layer_media_type, l)).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    /// Serves manifest (by tag `v1` and by digest), config and layers; returns the manifest digest.
    fn serve(&self, fake: &FakeRegistry) -> Digest {
        let manifest = self.manifest();
        let digest = Digest::sha256_of(&manifest);
        let reply = Reply::Ok {
            content_type: Some(OCI_MANIFEST.to_owned()),
            digest: Some(digest.to_string()),
            body: manifest,
        };
        fake.set(
            &format!("/v2/{}/manifests/v1", self.repository),
            reply.clone(),
        );
        fake.set(
            &format!("/v2/{}/manifests/{digest}", self.repository),
            reply,
        );
        for blob in std::iter::once(&self.config).chain(&self.layers) {
            self.serve_blob(fake, &Digest::sha256_of(blob), blob.clone());
        }
        digest
    }

    fn serve_blob(&self, fake: &FakeRegistry, digest: &Digest, body: Vec<u8>) {
        fake.set(
            &format!("/v2/{}/blobs/{digest}", self.repository),
            Reply::body(body),
        );
    }

    fn tag(&self, fake: &FakeRegistry) -> ImageRef {
        format!("{}/{}:v1", fake.host, self.repository)
            .parse()
            .unwrap()
    }
}

fn layer(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let tar = tar_layer(entries);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

fn tar_layer(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, data) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_entry_type(tar::EntryType::Regular);
        let old = header.as_old_mut();
        old.name[..path.len()].copy_from_slice(path.as_bytes());
        header.set_cksum();
        builder.append(&header, *data).unwrap();
    }
    builder.into_inner().unwrap()
}

struct Setup {
    fake: FakeRegistry,
    work: tempfile::TempDir,
    registry: Registry,
}

fn setup(read_timeout: Duration) -> Setup {
    let fake = FakeRegistry::start();
    let work = tempfile::tempdir().unwrap();
    fs::create_dir(work.path().join("outside")).unwrap();
    let mut options = RegistryOptions::new(work.path().join("cache"));
    options.trust.insecure_hosts.insert(fake.host.clone());
    options.read_timeout = read_timeout;
    opcat::registry::install_crypto_provider();
    let registry = Registry::new(options).unwrap();
    Setup {
        fake,
        work,
        registry,
    }
}

impl Setup {
    async fn fetch_err(&self, image: &ImageRef) -> RegistryError {
        let err = self
            .registry
            .fetch(image, &Keyring::empty())
            .await
            .unwrap_err();
        self.assert_nothing_left();
        err
    }

    fn assert_nothing_left(&self) {
        let cache = self.work.path().join("cache");
        let images: Vec<_> = walk(&cache.join("images"));
        assert!(images.is_empty(), "cache holds {images:?}");
        assert_eq!(
            fs::read_dir(cache.join("tmp")).unwrap().count(),
            0,
            "staging left behind"
        );
        assert_eq!(
            fs::read_dir(self.work.path().join("outside"))
                .unwrap()
                .count(),
            0
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for item in fs::read_dir(dir).into_iter().flatten().flatten() {
        out.push(item.path());
        out.extend(walk(&item.path()));
    }
    out
}

#[tokio::test]
async fn a_good_image_is_fetched_from_the_fake_registry() {
    let s = setup(Duration::from_secs(10));
    let image = FakeImage::new(vec![layer(&[("configs/a.json", b"{}")])]);
    let digest = image.serve(&s.fake);
    let unpacked = s
        .registry
        .fetch(&image.tag(&s.fake), &Keyring::empty())
        .await
        .unwrap();
    assert_eq!(unpacked.digest, digest);
    assert_eq!(
        fs::read(unpacked.root.join("configs/a.json")).unwrap(),
        b"{}"
    );
}

#[tokio::test]
async fn manifest_that_does_not_match_the_pinned_digest() {
    let s = setup(Duration::from_secs(10));
    let image = FakeImage::new(vec![layer(&[("a", b"1")])]);
    image.serve(&s.fake);
    let claimed = Digest::sha256_of(b"some other manifest");
    // The registry serves a different manifest under the claimed digest, with a matching lie
    // in its header.
    s.fake.set(
        &format!("/v2/{}/manifests/{claimed}", image.repository),
        Reply::Ok {
            content_type: Some(OCI_MANIFEST.to_owned()),
            digest: Some(claimed.to_string()),
            body: image.manifest(),
        },
    );
    let pinned: ImageRef = format!("{}/{}@{claimed}", s.fake.host, image.repository)
        .parse()
        .unwrap();
    let err = s.fetch_err(&pinned).await;
    assert_eq!(err.kind(), "digest_mismatch");
    let message = err.to_string();
    assert!(
        message.contains("manifest does not match its digest"),
        "{message}"
    );
    assert!(
        message.contains(&format!("expected {claimed}")),
        "{message}"
    );
}

#[tokio::test]
async fn manifest_with_a_lying_digest_header() {
    let s = setup(Duration::from_secs(10));
    let image = FakeImage::new(vec![layer(&[("a", b"1")])]);
    image.serve(&s.fake);
    s.fake.set(
        &format!("/v2/{}/manifests/v1", image.repository),
        Reply::Ok {
            content_type: Some(OCI_MANIFEST.to_owned()),
            digest: Some(Digest::sha256_of(b"lie").to_string()),
            body: image.manifest(),
        },
    );
    let err = s.fetch_err(&image.tag(&s.fake)).await;
    assert_eq!(err.kind(), "digest_mismatch", "{err}");
}

#[tokio::test]
async fn layer_that_does_not_match_its_digest() {
    let s = setup(Duration::from_secs(10));
    let good = tar_layer(&[("configs/a.json", b"{\"schema\":\"olm.package\"}")]);
    let mut image = FakeImage::new(vec![good.clone()]);
    image.layer_media_type = "application/vnd.oci.image.layer.v1.tar".to_owned();
    image.serve(&s.fake);
    // Same length, different content: a valid tar that would unpack fine.
    let evil = tar_layer(&[("configs/a.json", b"{\"schema\":\"olm.evil!!!\"}")]);
    assert_eq!(evil.len(), good.len());
    image.serve_blob(&s.fake, &Digest::sha256_of(&good), evil.clone());
    let err = s.fetch_err(&image.tag(&s.fake)).await;
    assert_eq!(err.kind(), "digest_mismatch");
    assert_eq!(
        err.to_string(),
        format!(
            "pull of {}: layer 1 ({}) does not match its digest: expected {}, got {}",
            image.tag(&s.fake),
            Digest::sha256_of(&good),
            Digest::sha256_of(&good),
            Digest::sha256_of(&evil)
        )
    );
}

#[tokio::test]
async fn truncated_and_oversized_layers() {
    let s = setup(Duration::from_secs(10));
    let good = layer(&[("a", &[5; 5000])]);
    let image = FakeImage::new(vec![good.clone()]);
    image.serve(&s.fake);
    let digest = Digest::sha256_of(&good);
    image.serve_blob(&s.fake, &digest, good[..good.len() / 2].to_vec());
    let message = s.fetch_err(&image.tag(&s.fake)).await.to_string();
    assert!(
        message.contains(&format!(
            "{} bytes instead of the declared {}",
            good.len() / 2,
            good.len()
        )),
        "{message}"
    );
    let mut longer = good.clone();
    longer.extend_from_slice(&[0; 100]);
    image.serve_blob(&s.fake, &digest, longer);
    let err = s.fetch_err(&image.tag(&s.fake)).await;
    assert_eq!(err.kind(), "digest_mismatch", "{err}");
}

#[tokio::test]
async fn config_that_does_not_match_its_digest() {
    let s = setup(Duration::from_secs(10));
    let image = FakeImage::new(vec![layer(&[("a", b"1")])]);
    image.serve(&s.fake);
    image.serve_blob(
        &s.fake,
        &Digest::sha256_of(&image.config),
        br#"{"architecture":"amd64","os":"linux","config":{"Labels":{"k":"EVIL"}}}"#.to_vec(),
    );
    let err = s.fetch_err(&image.tag(&s.fake)).await;
    assert_eq!(err.kind(), "digest_mismatch");
    assert!(
        err.to_string()
            .contains("image config does not match its digest"),
        "{err}"
    );
}

#[tokio::test]
async fn hostile_layers_over_the_wire_leave_nothing_behind() {
    let cases: [(&str, &[u8]); 3] = [
        ("../outside/evil", b"x"),
        ("/abs-evil", b"x"),
        ("ok/../../outside/evil", b"x"),
    ];
    for (path, data) in cases {
        let s = setup(Duration::from_secs(10));
        // A good lower layer, then the hostile one: the good part must not survive either.
        let image = FakeImage::new(vec![
            layer(&[("configs/good", b"1")]),
            layer(&[(path, data)]),
        ]);
        image.serve(&s.fake);
        let err = s.fetch_err(&image.tag(&s.fake)).await;
        assert_eq!(err.kind(), "unsafe_layer", "{path}: {err}");
        assert!(err.to_string().contains("layer 2 (sha256:"), "{err}");
        assert!(
            err.to_string()
                .contains(&format!("layer entry {path:?} refused")),
            "{err}"
        );
    }
}

#[tokio::test]
async fn forbidden_is_reported_as_such() {
    let s = setup(Duration::from_secs(10));
    s.fake.set(
        "/v2/secret/image/manifests/v1",
        Reply::Error {
            status: 403,
            code: "DENIED".to_owned(),
        },
    );
    let image: ImageRef = format!("{}/secret/image:v1", s.fake.host).parse().unwrap();
    let err = s.fetch_err(&image).await;
    assert_eq!(err.kind(), "forbidden");
    assert_eq!(
        err.to_string(),
        format!(
            "pull of {image}: registry {} answered 403 Forbidden (DENIED: denied); \
             no credential matches this registry, tried anonymously",
            s.fake.host
        )
    );
}

#[tokio::test]
async fn a_registry_that_hangs_times_out() {
    let s = setup(Duration::from_millis(500));
    s.fake.set("/v2/slow/image/manifests/v1", Reply::Hang);
    let image: ImageRef = format!("{}/slow/image:v1", s.fake.host).parse().unwrap();
    let err = s.fetch_err(&image).await;
    assert_eq!(err.kind(), "timeout");
    assert_eq!(
        err.to_string(),
        format!(
            "pull of {image}: registry {} did not answer in time",
            s.fake.host
        )
    );
}

#[tokio::test]
async fn index_picks_linux_amd64() {
    let s = setup(Duration::from_secs(10));
    let amd64 = FakeImage::new(vec![layer(&[("which", b"amd64")])]);
    let arm64 = FakeImage::new(vec![layer(&[("which", b"arm64")])]);
    let amd64_digest = amd64.serve(&s.fake);
    let arm64_manifest = arm64.manifest();
    for blob in std::iter::once(&arm64.config).chain(&arm64.layers) {
        arm64.serve_blob(&s.fake, &Digest::sha256_of(blob), blob.clone());
    }
    let entry = |digest: &Digest, size: usize, arch: &str| {
        serde_json::json!({
            "mediaType": DOCKER_MANIFEST, "digest": digest.to_string(), "size": size,
            "platform": {"os": "linux", "architecture": arch},
        })
    };
    let index = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [
            entry(&Digest::sha256_of(&arm64_manifest), arm64_manifest.len(), "arm64"),
            entry(&amd64_digest, amd64.manifest().len(), "amd64"),
        ],
    }))
    .unwrap();
    let index_digest = Digest::sha256_of(&index);
    s.fake.set(
        "/v2/test/image/manifests/multi",
        Reply::Ok {
            content_type: Some(OCI_INDEX.to_owned()),
            digest: Some(index_digest.to_string()),
            body: index,
        },
    );
    let image: ImageRef = format!("{}/test/image:multi", s.fake.host).parse().unwrap();
    let unpacked = s.registry.fetch(&image, &Keyring::empty()).await.unwrap();
    assert_eq!(unpacked.digest, index_digest);
    assert_eq!(unpacked.manifest_digest, amd64_digest);
    assert_eq!(fs::read(unpacked.root.join("which")).unwrap(), b"amd64");
}

#[tokio::test]
async fn unsupported_layer_media_type() {
    let s = setup(Duration::from_secs(10));
    let mut image = FakeImage::new(vec![layer(&[("a", b"1")])]);
    image.layer_media_type = "application/vnd.oci.image.layer.v1.tar+zstd".to_owned();
    image.serve(&s.fake);
    let err = s.fetch_err(&image.tag(&s.fake)).await;
    assert_eq!(err.kind(), "unsupported");
    assert!(
        err.to_string().ends_with(
            "unsupported layer media type \"application/vnd.oci.image.layer.v1.tar+zstd\""
        ),
        "{err}"
    );
}

#[test]
fn plain_http_hosts_must_be_bare_host_and_port() {
    let work = tempfile::tempdir().unwrap();
    let mut options = RegistryOptions::new(work.path());
    options
        .trust
        .insecure_hosts
        .insert("http://registry.example.com:5000".to_owned());
    let err = Registry::new(options).err().unwrap();
    assert_eq!(
        err.to_string(),
        "invalid registry trust configuration: plain-HTTP registry \"http://registry.example.com:5000\" must be written as HOST or HOST:PORT (no scheme, no path)"
    );
    // A named, non-loopback registry is allowed (opcat run --insecure-registry).
    let mut options = RegistryOptions::new(work.path());
    options
        .trust
        .insecure_hosts
        .insert("registry.internal:5000".to_owned());
    assert!(Registry::new(options).is_ok());
}

#[test]
fn cli_plain_http_is_refused_for_non_loopback_registries() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_opcat"))
        .args([
            "catalog",
            "validate",
            "registry.example.com:5000/catalog:v1",
            "--plain-http",
            "registry.example.com:5000",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains(
            "--plain-http is only allowed for loopback registries, not \"registry.example.com:5000\""
        ),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_ca_file_without_certificates_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let mut options = RegistryOptions::new(work.path());
    options
        .trust
        .extra_root_certs_pem
        .push(b"not a certificate".to_vec());
    let err = Registry::new(options).err().unwrap();
    assert_eq!(
        err.to_string(),
        "invalid registry trust configuration: CA bundle #1 contains no certificate"
    );
}
