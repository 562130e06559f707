//! Image references (`host[:port]/repo[:tag][@digest]`), normalised the way Docker does it.

use std::fmt;
use std::str::FromStr;

use super::digest::Digest;

/// A parsed image reference.
///
/// `busybox` means `docker.io/library/busybox:latest`; a reference with a digest is *pinned*.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ImageRef {
    inner: oci_client::Reference,
}

/// Why a string is not an image reference.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not a valid image reference: {reason}")]
pub struct ReferenceError {
    text: String,
    reason: String,
}

impl ReferenceError {
    /// A bounded label for metrics and condition reasons.
    pub fn kind(&self) -> &'static str {
        "invalid_reference"
    }
}

impl ImageRef {
    /// The registry host as written (`docker.io` for Docker Hub images), with its port if any.
    pub fn registry(&self) -> &str {
        self.inner.registry()
    }

    /// The repository path, e.g. `library/busybox`.
    pub fn repository(&self) -> &str {
        self.inner.repository()
    }

    /// The tag, if any (`latest` is filled in when neither tag nor digest was given).
    pub fn tag(&self) -> Option<&str> {
        self.inner.tag()
    }

    /// The pinned digest, if any.
    pub fn digest(&self) -> Option<Digest> {
        // The digest was validated at parse time; an algorithm we cannot verify (sha384) is
        // treated as "not pinned" and re-resolved.
        self.inner.digest().and_then(|d| d.parse().ok())
    }

    /// The same repository pinned to `digest` (the tag is dropped).
    pub fn with_digest(&self, digest: &Digest) -> ImageRef {
        ImageRef {
            inner: oci_client::Reference::with_digest(
                self.inner.registry().to_owned(),
                self.inner.repository().to_owned(),
                digest.to_string(),
            ),
        }
    }

    /// The reference in the form oci-client expects.
    pub(crate) fn as_oci(&self) -> &oci_client::Reference {
        &self.inner
    }

    /// `true` when the registry host is a loopback address (`127.x`, `[::1]`, `localhost`).
    pub fn is_loopback(&self) -> bool {
        is_loopback_host(self.registry())
    }
}

/// `true` when `text` is a bare `host`, `host:port` or `[v6]:port` (no scheme, path or spaces).
pub fn is_host_port(text: &str) -> bool {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        match rest.split_once(']') {
            Some((host, rest)) => (host, rest.strip_prefix(':')),
            None => return false,
        }
    } else {
        match text.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    let host_ok = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
    let port_ok = port.is_none_or(|port| !port.is_empty() && port.parse::<u16>().is_ok());
    host_ok && port_ok
}

/// `true` when `host_port` (`host`, `host:port` or `[v6]:port`) names the loopback interface.
pub fn is_loopback_host(host_port: &str) -> bool {
    let host = if let Some(rest) = host_port.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host_port.split(':').next().unwrap_or_default()
    };
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

impl FromStr for ImageRef {
    type Err = ReferenceError;

    /// Parses with [`crate::fbc::image_ref`] (the same grammar as `oci_client::Reference`, which
    /// the tests below compare) and normalises the way oci-client does. Not oci-client's own
    /// parser: its regex keeps a match cache per thread that made 19 MB of the controller's
    /// heap peak (heaptrack, 1,000 installs) for parsing a few catalog and bundle references.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parts = crate::fbc::image_ref::split(text).map_err(|e| ReferenceError {
            text: text.to_owned(),
            reason: e.to_string(),
        })?;
        let (registry, repository) = split_domain(parts.name);
        let inner = match (parts.tag, parts.digest) {
            (Some(tag), Some(digest)) => oci_client::Reference::with_tag_and_digest(
                registry,
                repository,
                tag.to_owned(),
                digest.to_owned(),
            ),
            (None, Some(digest)) => {
                oci_client::Reference::with_digest(registry, repository, digest.to_owned())
            }
            (tag, None) => oci_client::Reference::with_tag(
                registry,
                repository,
                tag.unwrap_or(DEFAULT_TAG).to_owned(),
            ),
        };
        if let Some(digest) = inner.digest() {
            digest.parse::<Digest>().map_err(|e| ReferenceError {
                text: text.to_owned(),
                reason: e.to_string(),
            })?;
        }
        Ok(ImageRef { inner })
    }
}

/// The tag of a reference written with neither tag nor digest.
const DEFAULT_TAG: &str = "latest";

/// Docker Hub's canonical registry name (image references and keyrings normalise to it).
pub(super) const DOCKER_HUB: &str = "docker.io";

/// Splits a valid name into registry and repository, normalising Docker Hub names
/// (`busybox` is `docker.io/library/busybox`) as oci-client and Docker do
/// (distribution/reference `splitDomain`).
fn split_domain(name: &str) -> (String, String) {
    let (registry, repository) = match name.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => (first, rest),
        _ => (DOCKER_HUB, name),
    };
    let registry = if registry == "index.docker.io" {
        DOCKER_HUB
    } else {
        registry
    };
    let repository = if registry == DOCKER_HUB && !repository.contains('/') {
        format!("library/{repository}")
    } else {
        repository.to_owned()
    };
    (registry.to_owned(), repository)
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.inner.whole())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_hub_short_names_are_normalised() {
        let image: ImageRef = "busybox".parse().unwrap();
        assert_eq!(image.registry(), "docker.io");
        assert_eq!(image.repository(), "library/busybox");
        assert_eq!(image.tag(), Some("latest"));
        assert!(image.digest().is_none());
    }

    #[test]
    fn host_port_and_digest() {
        let text = format!("127.0.0.1:5000/catalogs/x@sha256:{}", "b".repeat(64));
        let image: ImageRef = text.parse().unwrap();
        assert_eq!(image.registry(), "127.0.0.1:5000");
        assert_eq!(image.repository(), "catalogs/x");
        assert!(image.digest().is_some());
        assert!(image.is_loopback());
        assert_eq!(image.to_string(), text);
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback_host("localhost:5000"));
        assert!(is_loopback_host("[::1]:5000"));
        assert!(is_loopback_host("127.0.0.2"));
        assert!(!is_loopback_host("registry.example.com:5000"));
        assert!(!is_loopback_host("10.0.0.1:5000"));
        assert!(is_host_port("registry.internal:5000"));
        assert!(is_host_port("10.0.0.1"));
        assert!(is_host_port("[::1]:5000"));
        assert!(!is_host_port("http://registry:5000"));
        assert!(!is_host_port("registry:5000/path"));
        assert!(!is_host_port("registry:http"));
        assert!(!is_host_port(""));
    }

    #[test]
    fn parses_as_the_registry_client_does() {
        let sha = format!("sha256:{}", "f".repeat(64));
        let cases = [
            "busybox".to_owned(),
            "busybox:1.36".to_owned(),
            "library/busybox".to_owned(),
            "docker.io/busybox".to_owned(),
            "index.docker.io/busybox".to_owned(),
            "index.docker.io/foo/bar:v1".to_owned(),
            "localhost/foo".to_owned(),
            "localhost:5000/foo/bar:v2".to_owned(),
            "test.com:tag".to_owned(),
            "test.com:5000".to_owned(),
            "test.com/repo:tag".to_owned(),
            "foo_bar.com:8080".to_owned(),
            "lowercase:Uppercase".to_owned(),
            "quay.io/foo/bar:v1".to_owned(),
            format!("quay.io/foo/bar@{sha}"),
            format!("quay.io/foo/bar:v1@{sha}"),
            format!("busybox@{sha}"),
            format!("127.0.0.1:5000/catalogs/x@{sha}"),
            "[::1]:5000/foo".to_owned(),
            "Uppercase/repo".to_owned(),
            "a..b/c".to_owned(),
            "x@sha256:abc".to_owned(),
            "x@md5:ffffffffffffffffffffffffffffffff".to_owned(),
            "".to_owned(),
            "a b".to_owned(),
            "a".repeat(256),
        ];
        for case in cases {
            let ours = case.parse::<ImageRef>().map(|image| image.inner);
            let theirs = oci_client::Reference::from_str(&case);
            match (ours, theirs) {
                (Ok(ours), Ok(theirs)) => assert_eq!(ours, theirs, "{case:?}"),
                (Err(_), Err(_)) => {}
                (ours, theirs) => panic!("{case:?}: ours {ours:?}, oci-client {theirs:?}"),
            }
        }
    }

    #[test]
    fn rejects_garbage() {
        let err = "Not A Ref!".parse::<ImageRef>().unwrap_err();
        assert!(err.to_string().contains("not a valid image reference"));
    }
}
