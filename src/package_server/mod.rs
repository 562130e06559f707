//! The PackageManifest API (`packages.operators.coreos.com/v1`), served by opcat itself as an
//! aggregated API server, as OLM's packageserver serves it (`operator-lifecycle-manager:
//! pkg/package-server/`): read-only (get, list, the `icon` subresource; no watch), built at
//! request time from the catalogs the controller has loaded for resolution (the manifests are
//! kept until their catalog changes: [`memo`]).
//!
//! Split by job, pure at the bottom:
//! - [`types`]: the API types and their JSON; [`describe`] and [`build`]: a PackageManifest
//!   from a catalog's package and its CatalogSource; [`selector`]: label and field selectors;
//!   [`storage`]: get, list and icon over the loaded catalogs, [`memo`]: the manifests built
//!   from each, kept until it changes; [`table`], [`discovery`],
//!   [`openapi`], [`status`]: what a Kubernetes API server answers besides objects;
//!   [`request`]: what a request asks (authorizer attributes, media type);
//! - [`auth_config`] (the cluster's `extension-apiserver-authentication` ConfigMap), [`authn`]
//!   (front-proxy certificate and headers, client certificates, TokenReview) and [`authz`]
//!   (SubjectAccessReview), both cached briefly ([`ttl_cache`]); [`reviews`] is the only code
//!   that talks to the cluster;
//! - [`tls`] (serving certificate replaced in place, client certificates requested),
//!   [`serve`] (HTTP/1.1 and HTTP/2), [`handlers`] and [`body`].
//!
//! [`PackageServer`] is the process-wide handle: the controller's leader publishes its
//! catalogs, the serving certificate and the authentication configuration into it
//! (`controller::package_api`); until catalogs are published every request gets 503, which
//! keeps kube-aggregator's `APIService` unavailable on a replica that could not answer.
//! Every request is authenticated and authorized by the cluster (DESIGN invariant 13).

pub mod auth_config;
pub mod authn;
pub mod authz;
pub mod body;
pub mod build;
pub mod describe;
pub mod discovery;
pub mod handlers;
pub mod memo;
pub mod openapi;
pub mod request;
pub mod reviews;
pub mod selector;
pub mod serve;
pub mod status;
pub mod storage;
pub mod table;
pub mod tls;
pub mod ttl_cache;
pub mod types;

use std::sync::{Arc, RwLock};

use self::auth_config::AuthConfig;
use self::authn::{Authenticators, TokenCache};
use self::authz::AccessCache;
use self::reviews::Reviewer;
use self::storage::Catalogs;
use self::tls::{CertResolver, TlsError};

pub use self::serve::{ServeError, bind};

/// The package API server's state, shared by the listener and the controller that feeds it.
pub struct PackageServer {
    catalogs: RwLock<Option<Arc<dyn Catalogs>>>,
    authenticators: RwLock<Arc<Authenticators>>,
    certificate: Arc<CertResolver>,
    reviewer: Arc<dyn Reviewer>,
    tokens: TokenCache,
    access: AccessCache,
    memo: memo::Memo,
}

impl PackageServer {
    /// A server asking `reviewer` about tokens and access; it serves nothing (503) until
    /// [`PackageServer::publish`], and completes no handshake until
    /// [`PackageServer::set_certificate`].
    pub fn new(reviewer: Arc<dyn Reviewer>) -> Arc<Self> {
        Arc::new(Self {
            catalogs: RwLock::new(None),
            authenticators: RwLock::new(Arc::new(Authenticators::new(AuthConfig::default()))),
            certificate: Arc::new(CertResolver::default()),
            reviewer,
            tokens: TokenCache::default(),
            access: AccessCache::default(),
            memo: memo::Memo::default(),
        })
    }

    /// Serves `catalogs` from now on.
    pub fn publish(&self, catalogs: Arc<dyn Catalogs>) {
        self.memo.clear();
        if let Ok(mut current) = self.catalogs.write() {
            *current = Some(catalogs);
        }
    }

    /// Stops serving catalogs (503 from now on): the term that loaded them ended.
    pub fn withdraw(&self) {
        if let Ok(mut current) = self.catalogs.write() {
            *current = None;
        }
        self.memo.clear();
    }

    /// Whether catalogs are published.
    pub fn is_publishing(&self) -> bool {
        self.catalogs.read().is_ok_and(|current| current.is_some())
    }

    fn catalogs(&self) -> Option<Arc<dyn Catalogs>> {
        self.catalogs.read().ok()?.clone()
    }

    /// Authenticates with `config` from now on.
    pub fn set_auth_config(&self, config: AuthConfig) {
        let authenticators = Arc::new(Authenticators::new(config));
        if let Ok(mut current) = self.authenticators.write() {
            *current = authenticators;
        }
    }

    /// Whether front-proxy requests can be authenticated.
    pub fn has_auth_config(&self) -> bool {
        self.authenticators().has_request_header()
    }

    fn authenticators(&self) -> Arc<Authenticators> {
        self.authenticators
            .read()
            .map(|current| current.clone())
            .unwrap_or_else(|_| Arc::new(Authenticators::new(AuthConfig::default())))
    }

    /// Serves `cert_pem` with `key_pem` from the next handshake on.
    pub fn set_certificate(&self, cert_pem: &str, key_pem: &str) -> Result<(), TlsError> {
        self.certificate.set(cert_pem, key_pem)
    }

    /// Whether a serving certificate is loaded.
    pub fn has_certificate(&self) -> bool {
        self.certificate.is_set()
    }
}
