//! Everything opcat does with OCI registries: credentials, pull, safe unpack, cache, push.
//!
//! The controller holds one long-lived [`Registry`] (trust configuration, unpack limits, the
//! on-disk cache) and passes a [`Keyring`] built from the relevant pull secrets with every call:
//!
//! ```no_run
//! # async fn demo(secrets: Vec<opcat::registry::PullSecret>) -> Result<(), Box<dyn std::error::Error>> {
//! use opcat::registry::{Keyring, Registry, RegistryOptions};
//! opcat::registry::install_crypto_provider();
//! let registry = Registry::new(RegistryOptions::new("/var/cache/opcat"))?;
//! let (keyring, secret_errors) = Keyring::from_secrets(&secrets);
//! let image = "registry.example.com/catalogs/ops:v1".parse()?;
//! let unpacked = registry.fetch(&image, &keyring).await?;
//! println!("{} at {}", unpacked.digest, unpacked.root.display());
//! # Ok(()) }
//! ```
//!
//! Invariants: secret data never appears in `Debug`, `Display`, logs or errors (8); nothing is
//! returned from an image whose blobs failed verification or whose unpack was refused — the
//! unpack happens in a temporary directory that is renamed into the cache only on success (9).

pub mod cache;
pub mod client;
pub mod credentials;
pub mod digest;
pub mod error;
mod failure;
pub mod keyring;
pub mod layer;
pub mod manifest;
pub mod pull;
pub mod push;
pub mod recent;
pub mod reference;
pub mod secret;
pub mod secret_file;
pub mod source;
mod stream;
pub mod unpack;

pub use cache::{ImageCache, UnpackedImage};
pub use client::{PullAuth, PullCheck, Registry, RegistryOptions, TrustConfig};
pub use credentials::Credential;
pub use digest::Digest;
pub use error::RegistryError;
pub use keyring::{Keyring, MatchedCredential};
pub use pull::Transfer;
pub use reference::ImageRef;
pub use secret::{PullSecret, SecretError};
pub use unpack::UnpackLimits;

/// Installs rustls' `ring` crypto provider as the process default. Idempotent; call it before
/// building a [`Registry`] (oci-client is built without a provider of its own).
pub fn install_crypto_provider() {
    // Err means a provider is already installed, which is all we need.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
