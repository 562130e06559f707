//! The long-lived [`Registry`]: trust configuration, limits and cache, plus the credential
//! loop every operation goes through.
//!
//! Credentials are tried the kubelet's way: every credential the keyring matches, in order,
//! each with its own oci-client `Client` (its auth store never replaces an entry, so a client
//! per credential guarantees one credential never leaks into another attempt); anonymous only
//! when no credential matches. Those clients are kept, one per credential (see
//! [`Registry::client_for`]): building one loads the system's root certificates, which cost
//! more CPU than everything else an install does (scripts/bench-scale.sh, 1,000 installs).

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, RegistryOperation};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use super::cache::ImageCache;
use super::digest::Digest;
use super::error::{Operation, RegistryError, Tried};
use super::failure::{Failure, classify};
use super::keyring::{Keyring, MatchedCredential};
use super::recent::RecentTags;
use super::reference::{ImageRef, is_host_port};
use super::unpack::UnpackLimits;
use crate::clearing_cache::ClearingCache;

/// Which registries to trust and how.
#[derive(Debug, Clone, Default)]
pub struct TrustConfig {
    /// PEM bundles of extra root CAs (added to the system roots).
    pub extra_root_certs_pem: Vec<Vec<u8>>,
    /// `host[:port]` of registries spoken to over plain HTTP. Only loopback hosts are accepted.
    pub insecure_hosts: BTreeSet<String>,
}

/// Everything a [`Registry`] is built from.
#[derive(Debug, Clone)]
pub struct RegistryOptions {
    /// Where unpacked images are cached.
    pub cache_dir: PathBuf,
    /// CAs and plain-HTTP hosts.
    pub trust: TrustConfig,
    /// Unpack limits per image.
    pub limits: UnpackLimits,
    /// TCP/TLS connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait for any read from the registry.
    pub read_timeout: Duration,
}

impl RegistryOptions {
    /// Defaults (10 s connect, 60 s read, default limits, no extra trust) for `cache_dir`.
    pub fn new(cache_dir: impl Into<PathBuf>) -> RegistryOptions {
        RegistryOptions {
            cache_dir: cache_dir.into(),
            trust: TrustConfig::default(),
            limits: UnpackLimits::default(),
            connect_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(60),
        }
    }
}

/// Which credential got through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullAuth {
    /// The credential from this pull secret.
    Secret(String),
    /// No pull secret matched the registry; the request was anonymous and succeeded.
    AnonymousNoMatch,
}

/// The result of [`Registry::check_pullable`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullCheck {
    /// What the reference resolves to now.
    pub digest: Digest,
    /// The credential that worked.
    pub auth: PullAuth,
}

/// Talks to OCI registries. Build one per process and share it; pass credentials per call.
pub struct Registry {
    pub(crate) options: RegistryOptions,
    certificates: Vec<Certificate>,
    pub(crate) cache: ImageCache,
    inflight: Mutex<HashMap<Digest, Arc<tokio::sync::Mutex<()>>>>,
    /// One client per credential, by [`credential_key`].
    clients: ClearingCache<[u8; 32], Client>,
    /// Tags resolved recently, for [`Registry::fetch_reusing`].
    pub(crate) recent: RecentTags,
}

/// Clients kept (distinct credentials; a rotation adds one). The cache is emptied when full.
const MAX_CLIENTS: usize = 64;

/// The registry auth of a credential the keyring matched (opcat's credentials are username and
/// password; identity tokens are refused when the keyring is built).
pub(crate) fn basic_auth(matched: &MatchedCredential<'_>) -> RegistryAuth {
    RegistryAuth::Basic(
        matched.credential.username().to_owned(),
        matched.credential.password().to_owned(),
    )
}

/// What identifies a credential among the kept clients: a digest, so the map holds no
/// credential in the clear beyond what the clients themselves hold.
pub(crate) fn credential_key(auth: &RegistryAuth) -> [u8; 32] {
    use sha2::Digest as _;
    let mut hasher = sha2::Sha256::new();
    match auth {
        RegistryAuth::Anonymous => hasher.update(b"anonymous"),
        RegistryAuth::Basic(username, password) => {
            hasher.update(b"basic\0");
            hasher.update(username.as_bytes());
            hasher.update(b"\0");
            hasher.update(password.as_bytes());
        }
        RegistryAuth::Bearer(token) => {
            hasher.update(b"bearer\0");
            hasher.update(token.as_bytes());
        }
    }
    hasher.finalize().into()
}

/// A client that authenticated, and which credential it carries.
pub(crate) struct Authorized {
    pub(crate) client: Client,
    pub(crate) auth: PullAuth,
}

impl Authorized {
    /// Attributes a failure after authorization (a blob 401, a 404...) to this credential.
    pub(crate) fn error(
        &self,
        failure: Failure,
        operation: Operation,
        image: &ImageRef,
        keyring: &Keyring,
    ) -> RegistryError {
        let tried = tried(&[(self.auth.clone(), failure.clone())], keyring);
        failure.into_error(operation, &image.to_string(), image.registry(), tried)
    }
}

/// Checks that `pem` is a PEM file holding at least one certificate; the error completes a
/// sentence whose subject names the file (`<file> contains no certificate`).
pub fn check_ca_bundle(pem: &[u8]) -> Result<(), String> {
    let certs: Vec<CertificateDer<'_>> = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("is not valid PEM: {e}"))?;
    if certs.is_empty() {
        return Err("contains no certificate".to_owned());
    }
    Ok(())
}

impl Registry {
    /// Validates the trust configuration and opens the cache. Installs the process-wide rustls
    /// crypto provider if none is installed yet.
    pub fn new(options: RegistryOptions) -> Result<Registry, RegistryError> {
        super::install_crypto_provider();
        let mut certificates = Vec::new();
        for (index, pem) in options.trust.extra_root_certs_pem.iter().enumerate() {
            check_ca_bundle(pem)
                .map_err(|e| RegistryError::Trust(format!("CA bundle #{} {e}", index + 1)))?;
            certificates.push(Certificate {
                encoding: CertificateEncoding::Pem,
                data: pem.clone(),
            });
        }
        // Plain HTTP is only ever used for hosts named explicitly; which hosts a caller may name
        // is its policy (the CLI allows loopback only, `opcat run --insecure-registry` any
        // named registry). Here the names must at least be bare `host[:port]`.
        if let Some(host) = options
            .trust
            .insecure_hosts
            .iter()
            .find(|host| !is_host_port(host))
        {
            return Err(RegistryError::Trust(format!(
                "plain-HTTP registry {host:?} must be written as HOST or HOST:PORT (no scheme, no path)"
            )));
        }
        let cache = ImageCache::open(&options.cache_dir)
            .map_err(|e| RegistryError::Trust(format!("cannot open the image cache: {e}")))?;
        Ok(Registry {
            options,
            certificates,
            cache,
            inflight: Mutex::new(HashMap::new()),
            clients: ClearingCache::new(MAX_CLIENTS),
            recent: RecentTags::default(),
        })
    }

    /// The image cache.
    pub fn cache(&self) -> &ImageCache {
        &self.cache
    }

    /// The client of the credential `auth`: the same one for every call with that credential
    /// (its tokens are that credential's; [`Client::auth`] still asks the registry at every
    /// attempt), a new one for another credential. A clone shares the original's auth store,
    /// tokens and connection pool.
    fn client_for(&self, auth: &RegistryAuth) -> Result<Client, RegistryError> {
        let key = credential_key(auth);
        if let Some(client) = self.clients.get(&key) {
            return Ok(client);
        }
        // A concurrent first call may have stored one already: that one is kept.
        Ok(self.clients.insert_or_keep(key, self.new_client()?))
    }

    /// A fresh oci-client client (no stored auth, no tokens).
    fn new_client(&self) -> Result<Client, RegistryError> {
        let insecure: Vec<String> = self.options.trust.insecure_hosts.iter().cloned().collect();
        let config = ClientConfig {
            protocol: if insecure.is_empty() {
                ClientProtocol::Https
            } else {
                ClientProtocol::HttpsExcept(insecure)
            },
            extra_root_certificates: self.certificates.clone(),
            connect_timeout: Some(self.options.connect_timeout),
            read_timeout: Some(self.options.read_timeout),
            use_monolithic_push: true,
            ..ClientConfig::default()
        };
        // `Client::new` would silently fall back to a default config on error; refuse instead.
        Client::try_from(config).map_err(|e| RegistryError::Trust(e.to_string()))
    }

    /// Runs `probe` with each credential the keyring has for `image` until one is accepted
    /// (kubelet order), or anonymously when none matches. Returns the authorized client and
    /// the probe's value.
    pub(crate) async fn authorize<T, F, Fut>(
        &self,
        image: &ImageRef,
        keyring: &Keyring,
        operation: Operation,
        mut probe: F,
    ) -> Result<(Authorized, T), RegistryError>
    where
        F: FnMut(Client) -> Fut,
        Fut: std::future::Future<Output = Result<T, Failure>>,
    {
        let reference = image.as_oci();
        let op = match operation {
            Operation::Pull => RegistryOperation::Pull,
            Operation::Push => RegistryOperation::Push,
        };
        let matched = keyring.lookup(image);
        let attempts: Vec<(PullAuth, RegistryAuth)> = if matched.is_empty() {
            vec![(PullAuth::AnonymousNoMatch, RegistryAuth::Anonymous)]
        } else {
            matched
                .iter()
                .map(|m| (PullAuth::Secret(m.secret.to_owned()), basic_auth(m)))
                .collect()
        };
        let mut failures: Vec<(PullAuth, Failure)> = Vec::new();
        for (who, auth) in attempts {
            let client = self.client_for(&auth)?;
            let attempt = async {
                // Authenticate first so a token server's refusal is reported as such
                // (oci-client would otherwise fall back to anonymous requests silently).
                client.auth(reference, &auth, op).await.map_err(classify)?;
                probe(client.clone()).await
            };
            match attempt.await {
                Ok(value) => {
                    tracing::debug!(%image, credential = ?who, "registry accepted credential");
                    return Ok((Authorized { client, auth: who }, value));
                }
                Err(failure) if failure.is_auth_related() => failures.push((who, failure)),
                Err(failure) => {
                    return Err(failure.into_error(
                        operation,
                        &image.to_string(),
                        image.registry(),
                        tried(&failures, keyring),
                    ));
                }
            }
        }
        let tried = tried(&failures, keyring);
        let worst = failures
            .into_iter()
            .map(|(_, failure)| failure)
            .max_by_key(Failure::rank)
            .unwrap_or(Failure::Unauthorized(String::new()));
        Err(worst.into_error(operation, &image.to_string(), image.registry(), tried))
    }

    /// Resolves `image` to the digest of its manifest (or index) with a HEAD request. A pinned
    /// reference is still checked against the registry.
    pub async fn resolve_digest(
        &self,
        image: &ImageRef,
        keyring: &Keyring,
    ) -> Result<Digest, RegistryError> {
        Ok(self.check_pullable(image, keyring).await?.digest)
    }

    /// Checks that the kubelet's credentials for `image` can read its manifest, and reports
    /// which credential worked — or that none matched and anonymous access was enough.
    pub async fn check_pullable(
        &self,
        image: &ImageRef,
        keyring: &Keyring,
    ) -> Result<PullCheck, RegistryError> {
        let reference = image.as_oci().clone();
        let (authorized, digest) = self
            .authorize(image, keyring, Operation::Pull, |client| {
                let reference = reference.clone();
                async move {
                    client
                        .fetch_manifest_digest(&reference, &RegistryAuth::Anonymous)
                        .await
                        .map_err(classify)
                }
            })
            .await?;
        let digest = digest
            .parse::<Digest>()
            .map_err(|e| RegistryError::Server {
                operation: Operation::Pull,
                image: image.to_string(),
                registry: image.registry().to_owned(),
                detail: format!("registry sent an unusable digest: {e}"),
            })?;
        if let Some(pinned) = image.digest()
            && pinned != digest
        {
            return Err(RegistryError::DigestMismatch {
                operation: Operation::Pull,
                image: image.to_string(),
                what: "manifest".to_owned(),
                expected: pinned.to_string(),
                actual: digest.to_string(),
            });
        }
        Ok(PullCheck {
            digest,
            auth: authorized.auth,
        })
    }

    /// A per-digest lock so concurrent fetches of one image unpack it once.
    pub(crate) fn lock_for(&self, digest: &Digest) -> Arc<tokio::sync::Mutex<()>> {
        let mut inflight = match self.inflight.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        // Forget locks nobody holds any more, so the map stays small.
        inflight.retain(|_, lock| Arc::strong_count(lock) > 1);
        inflight.entry(digest.clone()).or_default().clone()
    }
}

fn tried(failures: &[(PullAuth, Failure)], keyring: &Keyring) -> Tried {
    let secrets: Vec<(String, &'static str)> = failures
        .iter()
        .filter_map(|(who, failure)| match who {
            PullAuth::Secret(name) => Some((name.clone(), failure.outcome())),
            PullAuth::AnonymousNoMatch => None,
        })
        .collect();
    if secrets.is_empty() {
        Tried::Anonymous {
            available: keyring
                .secret_names()
                .into_iter()
                .map(str::to_owned)
                .collect(),
        }
    } else {
        Tried::Secrets(secrets)
    }
}
