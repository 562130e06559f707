//! Tags resolved recently, so a burst of pulls of one tag with one set of credentials asks the
//! registry once: [`Registry::fetch_reusing`].
//!
//! A thousand namespaces subscribing to one operator make a thousand InstallPlans for the same
//! bundle image, pulled with the same catalog credentials. Pulling by tag asks the registry for
//! the manifest every time (two requests with basic auth, each counted against registries' pull
//! rate limits); the blobs are already cached by digest. Here the digest a tag resolved to is
//! kept for a bounded time per image reference and credential set, so a later pull within that
//! time takes the cached image without a request. Only successes are kept: a refused credential
//! or an outage is asked again at every pull. Different credentials never share a resolution:
//! each set must have been accepted by the registry itself.

use std::time::{Duration, Instant};

use sha2::Digest as _;

use super::cache::UnpackedImage;
use super::client::{Registry, basic_auth, credential_key};
use super::digest::Digest;
use super::error::RegistryError;
use super::keyring::Keyring;
use super::reference::ImageRef;
use crate::clearing_cache::ClearingCache;

/// Resolutions kept; the table is emptied when full (a burst refills it with one pull).
const MAX_ENTRIES: usize = 1024;

/// What a resolution is valid for: the reference as written and a digest of the credentials
/// the keyring offers for it (in the order they are tried), so the table holds no secret.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResolutionKey {
    image: String,
    credentials: [u8; 32],
}

impl ResolutionKey {
    /// The key of pulling `image` with `keyring`.
    pub fn new(image: &ImageRef, keyring: &Keyring) -> Self {
        let mut hasher = sha2::Sha256::new();
        for matched in keyring.lookup(image) {
            hasher.update(credential_key(&basic_auth(&matched)));
        }
        Self {
            image: image.to_string(),
            credentials: hasher.finalize().into(),
        }
    }
}

/// Digests that tags resolved to, and when.
pub struct RecentTags {
    resolved: ClearingCache<ResolutionKey, (Digest, Instant)>,
}

impl Default for RecentTags {
    fn default() -> Self {
        Self {
            resolved: ClearingCache::new(MAX_ENTRIES),
        }
    }
}

impl RecentTags {
    /// The digest `key` resolved to at most `max_age` before `now`.
    pub fn get(&self, key: &ResolutionKey, now: Instant, max_age: Duration) -> Option<Digest> {
        let (digest, at) = self.resolved.get(key)?;
        (now.saturating_duration_since(at) <= max_age).then_some(digest)
    }

    /// Records that `key` resolved to `digest` at `now` (a newer resolution replaces an older).
    pub fn record(&self, key: ResolutionKey, digest: Digest, now: Instant) {
        self.resolved.insert(key, (digest, now));
    }
}

impl Registry {
    /// [`Registry::fetch`], except that a tag these credentials resolved at most `max_age` ago
    /// is taken at that digest without asking the registry, as long as the image is still in
    /// the cache. A zero `max_age` or a pinned reference is plain [`Registry::fetch`].
    pub async fn fetch_reusing(
        &self,
        image: &ImageRef,
        keyring: &Keyring,
        max_age: Duration,
    ) -> Result<UnpackedImage, RegistryError> {
        if image.digest().is_some() || max_age.is_zero() {
            return self.fetch(image, keyring).await;
        }
        let key = ResolutionKey::new(image, keyring);
        if let Some(digest) = self.recent.get(&key, Instant::now(), max_age)
            && let Some(cached) = self.cache.get(&digest)
        {
            tracing::debug!(%image, %digest, "tag resolved recently with these credentials");
            return Ok(cached);
        }
        let unpacked = self.fetch(image, keyring).await?;
        self.recent
            .record(key, unpacked.digest.clone(), Instant::now());
        Ok(unpacked)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::registry::PullSecret;
    use crate::registry::credentials::DOCKER_CONFIG_JSON_TYPE;

    fn keyring(user: &str, password: &str) -> Keyring {
        let config = serde_json::json!({
            "auths": {"registry.example.com": {"username": user, "password": password}}
        });
        let secret = PullSecret {
            name: "creds".into(),
            type_: DOCKER_CONFIG_JSON_TYPE.into(),
            data: BTreeMap::from([(".dockerconfigjson".into(), config.to_string().into_bytes())]),
        };
        let (keyring, errors) = Keyring::from_secrets(&[secret]);
        assert!(errors.is_empty(), "{errors:?}");
        keyring
    }

    fn digest(byte: char) -> Digest {
        format!("sha256:{}", byte.to_string().repeat(64))
            .parse()
            .expect("digest")
    }

    #[test]
    fn a_resolution_is_reused_for_the_same_image_and_credentials_until_it_is_too_old() {
        let image: ImageRef = "registry.example.com/ops/bundle:v1".parse().expect("image");
        let key = ResolutionKey::new(&image, &keyring("reader", "secret-1"));
        let recent = RecentTags::default();
        let start = Instant::now();
        let max_age = Duration::from_secs(60);
        assert_eq!(recent.get(&key, start, max_age), None);
        recent.record(key.clone(), digest('a'), start);
        let later = start + Duration::from_secs(60);
        assert_eq!(recent.get(&key, later, max_age), Some(digest('a')));
        let too_late = start + Duration::from_secs(61);
        assert_eq!(recent.get(&key, too_late, max_age), None);
    }

    #[test]
    fn other_credentials_or_another_tag_do_not_share_a_resolution() {
        let image: ImageRef = "registry.example.com/ops/bundle:v1".parse().expect("image");
        let other_tag: ImageRef = "registry.example.com/ops/bundle:v2".parse().expect("image");
        let key = ResolutionKey::new(&image, &keyring("reader", "secret-1"));
        let recent = RecentTags::default();
        let now = Instant::now();
        recent.record(key.clone(), digest('a'), now);
        let max_age = Duration::from_secs(60);
        for other in [
            ResolutionKey::new(&image, &keyring("reader", "secret-2")),
            ResolutionKey::new(&image, &keyring("writer", "secret-1")),
            ResolutionKey::new(&image, &Keyring::empty()),
            ResolutionKey::new(&other_tag, &keyring("reader", "secret-1")),
        ] {
            assert_ne!(other, key);
            assert_eq!(recent.get(&other, now, max_age), None);
        }
        assert_eq!(
            ResolutionKey::new(&image, &keyring("reader", "secret-1")),
            key,
            "the same credentials from another Secret copy share it"
        );
    }

    #[test]
    fn the_key_holds_no_secret() {
        let image: ImageRef = "registry.example.com/ops/bundle:v1".parse().expect("image");
        let key = ResolutionKey::new(&image, &keyring("reader", "s3cret-Pa55"));
        let shown = format!("{key:?}");
        assert!(
            !shown.contains("s3cret-Pa55") && !shown.contains("reader"),
            "{shown}"
        );
    }
}
