//! A client of a registry server (network only): health check and a full read of its catalog.
//!
//! What OLM does with a `spec.address` CatalogSource (`pkg/controller/registry/grpc/source.go`,
//! `pkg/controller/registry/resolver/source_registry.go`, operator-registry `pkg/client/`):
//! plaintext HTTP/2 to `HOST:PORT`, `grpc.health.v1.Health/Check` with service `Registry`, then
//! `ListBundles` (streamed) and `GetPackage` for each package the bundles name. The messages
//! become catalog content through [`super::from_api`]; the caller validates it like the content
//! of a catalog image.

use std::time::Duration;

use prost::Message as _;
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

use super::api;
use super::api::registry_client::RegistryClient;
use super::from_api::{CatalogBuilder, ConvertError};
use crate::fbc::DeclarativeConfig;
use crate::registry::Digest;

/// How long a connection attempt may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a health check may take (OLM's probes use 10 s).
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);
/// How long reading a whole catalog may take.
pub const READ_TIMEOUT: Duration = Duration::from_secs(300);
/// Largest message accepted (a bundle with its manifests); gRPC's default of 4 MiB is too small
/// for bundles with large CRDs.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The service OLM health-checks.
pub const HEALTH_SERVICE: &str = "Registry";

/// Why a server could not be read. Messages name the address and what failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The address is not `HOST:PORT`.
    #[error("{address:?} is not a HOST:PORT address: {detail}")]
    InvalidAddress { address: String, detail: String },
    /// No connection could be made.
    #[error("catalog server {address} cannot be reached: {detail}")]
    Unreachable { address: String, detail: String },
    /// The health service answered something other than `SERVING`.
    #[error("catalog server {address} reports service {HEALTH_SERVICE:?} as {status}")]
    NotServing { address: String, status: String },
    /// A call failed.
    #[error("catalog server {address} failed {method}: {detail}")]
    Call {
        address: String,
        method: &'static str,
        detail: String,
    },
    /// A message is not catalog content.
    #[error("catalog server {address} sent a bundle opcat cannot read: {source}")]
    Content {
        address: String,
        #[source]
        source: Box<ConvertError>,
    },
}

impl ClientError {
    /// Bounded label for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::InvalidAddress { .. } => "invalid_address",
            ClientError::Unreachable { .. } => "unreachable",
            ClientError::NotServing { .. } => "not_serving",
            ClientError::Call { .. } => "call_failed",
            ClientError::Content { .. } => "invalid_content",
        }
    }
}

/// What one read of a server gave.
#[derive(Debug)]
pub struct ServedCatalog {
    /// The catalog content (not validated yet).
    pub config: DeclarativeConfig,
    /// `ListBundles` messages received.
    pub bundles: usize,
    /// Their encoded size.
    pub bytes: u64,
}

/// The URI of a `HOST:PORT` address (`[v6]:PORT` for IPv6), or why it is not one.
pub fn endpoint_uri(address: &str) -> Result<http::Uri, String> {
    let (host, port) = address
        .rsplit_once(':')
        .ok_or_else(|| "the port is missing".to_owned())?;
    if host.is_empty() {
        return Err("the host is missing".to_owned());
    }
    port.parse::<u16>()
        .map_err(|_| format!("port {port:?} is not a number from 0 to 65535"))?;
    if host.contains(['/', '?', '#', '@', ' ']) || (host.contains(':') && !host.starts_with('[')) {
        return Err(format!("host {host:?} is not a host name or IP address"));
    }
    format!("http://{address}")
        .parse()
        .map_err(|error: http::uri::InvalidUri| error.to_string())
}

/// A connection to one registry server (made on first use, re-made after failures).
#[derive(Clone, Debug)]
pub struct CatalogServer {
    address: String,
    channel: Channel,
}

impl CatalogServer {
    /// A client of the server at `address` (`HOST:PORT`); nothing is sent yet.
    pub fn new(address: &str) -> Result<Self, ClientError> {
        let uri = endpoint_uri(address).map_err(|detail| ClientError::InvalidAddress {
            address: address.to_owned(),
            detail,
        })?;
        let channel = Endpoint::from(uri)
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_nodelay(true)
            .connect_lazy();
        Ok(Self {
            address: address.to_owned(),
            channel,
        })
    }

    /// The address this client talks to.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// `Health/Check` of service `Registry`: `Ok` when it is `SERVING`.
    pub async fn check(&self) -> Result<(), ClientError> {
        let mut health = HealthClient::new(self.channel.clone());
        let request = HealthCheckRequest {
            service: HEALTH_SERVICE.to_owned(),
        };
        let answer = tokio::time::timeout(CHECK_TIMEOUT, health.check(request))
            .await
            .map_err(|_| self.unreachable(format!("no answer within {CHECK_TIMEOUT:?}")))?
            .map_err(|status| self.failed("Health/Check", &status))?;
        let status = answer.into_inner().status();
        if status == ServingStatus::Serving {
            Ok(())
        } else {
            Err(ClientError::NotServing {
                address: self.address.clone(),
                status: status.as_str_name().to_owned(),
            })
        }
    }

    /// Reads every bundle and the packages they belong to.
    pub async fn read(&self) -> Result<ServedCatalog, ClientError> {
        tokio::time::timeout(READ_TIMEOUT, self.read_all())
            .await
            .map_err(|_| ClientError::Call {
                address: self.address.clone(),
                method: "ListBundles",
                detail: format!("the catalog was not read within {READ_TIMEOUT:?}"),
            })?
    }

    async fn read_all(&self) -> Result<ServedCatalog, ClientError> {
        let mut registry =
            RegistryClient::new(self.channel.clone()).max_decoding_message_size(MAX_MESSAGE_BYTES);
        let mut builder = CatalogBuilder::default();
        let (mut bundles, mut bytes) = (0, 0u64);
        let mut stream = registry
            .list_bundles(api::ListBundlesRequest {})
            .await
            .map_err(|status| self.failed("ListBundles", &status))?
            .into_inner();
        while let Some(bundle) = stream
            .message()
            .await
            .map_err(|status| self.failed("ListBundles", &status))?
        {
            bundles += 1;
            bytes += bundle.encoded_len() as u64;
            builder
                .add_bundle(bundle)
                .map_err(|source| ClientError::Content {
                    address: self.address.clone(),
                    source: Box::new(source),
                })?;
        }
        for name in builder.packages_needed() {
            let package = registry
                .get_package(api::GetPackageRequest { name })
                .await
                .map_err(|status| self.failed("GetPackage", &status))?;
            builder.add_package(package.into_inner());
        }
        Ok(ServedCatalog {
            config: builder.finish(),
            bundles,
            bytes,
        })
    }

    fn unreachable(&self, detail: String) -> ClientError {
        ClientError::Unreachable {
            address: self.address.clone(),
            detail,
        }
    }

    fn failed(&self, method: &'static str, status: &tonic::Status) -> ClientError {
        match status.code() {
            tonic::Code::Unavailable | tonic::Code::DeadlineExceeded => {
                self.unreachable(status_detail(status))
            }
            _ => ClientError::Call {
                address: self.address.clone(),
                method,
                detail: status_detail(status),
            },
        }
    }
}

/// `code: message`, plus the transport's cause when the status carries one.
fn status_detail(status: &tonic::Status) -> String {
    let mut detail = format!("{:?}: {}", status.code(), status.message());
    let mut source = std::error::Error::source(status);
    while let Some(cause) = source {
        detail.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    detail
}

/// The digest of catalog content: `sha256` of its `catalog render` form, so the same content
/// read twice (in any message order) has the same digest.
pub fn content_digest(config: &DeclarativeConfig) -> Digest {
    let mut rendered = Vec::new();
    // Rendering into memory cannot fail for I/O reasons.
    let _ = crate::fbc::render::render(config, &mut rendered);
    Digest::sha256_of(&rendered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_host_and_port() {
        for good in [
            "10.0.0.7:50051",
            "catalog.olm.svc:50051",
            "localhost:1",
            "[::1]:50051",
        ] {
            assert!(endpoint_uri(good).is_ok(), "{good}");
        }
        for (bad, why) in [
            ("catalog.olm.svc", "port is missing"),
            (":50051", "host is missing"),
            ("host:http", "not a number"),
            ("host:70000", "not a number"),
            ("http://host:1", "not a host name"),
            ("::1:50051", "not a host name"),
        ] {
            let error = endpoint_uri(bad).unwrap_err();
            assert!(error.contains(why), "{bad}: {error}");
        }
    }
}
