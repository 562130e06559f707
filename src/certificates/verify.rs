//! Does stored material still serve its Service? Checked as a client would: rustls' webpki
//! verifier with the CA as the only trusted root, for every DNS name the certificate must hold,
//! at `now` and one refresh window later; plus the private key must be the certificate's.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use rustls::RootCertStore;
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::crypto::ring::{default_provider, sign::any_supported_type};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::sign::CertifiedKey;

use super::material::Material;
use super::{REFRESH_WINDOW, ServiceIdentity};

/// Why stored material must be replaced. The messages name certificates' roles and DNS names,
/// never their content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Stale {
    /// Nothing stored yet.
    #[error("no serving certificate yet")]
    Missing,
    /// A part does not decode.
    #[error("the stored {part} cannot be read")]
    Unreadable {
        /// Which part (`CA certificate`, `serving certificate`, `private key`).
        part: &'static str,
    },
    /// The private key is not the serving certificate's.
    #[error("the stored private key does not belong to the serving certificate")]
    KeyMismatch,
    /// The serving certificate does not verify for a name today (another CA, another Service,
    /// expired).
    #[error("the serving certificate does not verify for {name} against its CA: {reason}")]
    NotTrusted {
        /// The DNS name.
        name: String,
        /// The verifier's reason.
        reason: String,
    },
    /// It verifies today, but not one refresh window from now.
    #[error("the serving certificate or its CA expires within {hours} hours")]
    ExpiresSoon {
        /// The refresh window, in hours.
        hours: u64,
    },
}

impl Stale {
    /// Whether this is the planned end of a certificate's life (its CA may stay trusted while
    /// the rollout replaces the pods), rather than material that cannot be trusted.
    pub fn is_expiry(&self) -> bool {
        matches!(self, Self::ExpiresSoon { .. })
    }
}

/// Checks `material` for `identity` at `now`.
pub fn check(material: &Material, identity: &ServiceIdentity, now: Timestamp) -> Result<(), Stale> {
    let ca = CertificateDer::from_pem_slice(material.ca_pem().as_bytes()).map_err(|_| {
        Stale::Unreadable {
            part: "CA certificate",
        }
    })?;
    let cert = CertificateDer::from_pem_slice(material.cert_pem().as_bytes()).map_err(|_| {
        Stale::Unreadable {
            part: "serving certificate",
        }
    })?;
    let key = PrivateKeyDer::from_pem_slice(material.key_pem().as_bytes())
        .ok()
        .and_then(|key| any_supported_type(&key).ok())
        .ok_or(Stale::Unreadable {
            part: "private key",
        })?;
    CertifiedKey::new(vec![cert.clone()], key)
        .keys_match()
        .map_err(|_| Stale::KeyMismatch)?;

    let mut roots = RootCertStore::empty();
    roots.add(ca).map_err(|error| Stale::NotTrusted {
        name: identity.dns_names().join(", "),
        reason: format!("the CA is not usable: {error}"),
    })?;
    let verifier =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::new(default_provider()))
            .build()
            .map_err(|error| Stale::NotTrusted {
                name: identity.dns_names().join(", "),
                reason: error.to_string(),
            })?;
    let at = |instant: Timestamp| {
        UnixTime::since_unix_epoch(Duration::from_secs(
            u64::try_from(instant.as_second()).unwrap_or(0),
        ))
    };
    let later = now.checked_add(REFRESH_WINDOW).unwrap_or(Timestamp::MAX);
    for name in identity.dns_names() {
        let server = ServerName::try_from(name.clone()).map_err(|error| Stale::NotTrusted {
            name: name.clone(),
            reason: error.to_string(),
        })?;
        verifier
            .verify_server_cert(&cert, &[], &server, &[], at(now))
            .map_err(|error| Stale::NotTrusted {
                name: name.clone(),
                reason: error.to_string(),
            })?;
        if verifier
            .verify_server_cert(&cert, &[], &server, &[], at(later))
            .is_err()
        {
            return Err(Stale::ExpiresSoon {
                hours: REFRESH_WINDOW.as_secs() / 3600,
            });
        }
    }
    Ok(())
}
