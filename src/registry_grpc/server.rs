//! The `api.Registry` server over one validated catalog, with the standard health service
//! (`grpc.health.v1`, serving for `""`, `Registry` and `api.Registry`) and server reflection,
//! on plaintext HTTP/2 like `opm serve` (operator-registry `cmd/opm/serve/serve.go`,
//! `pkg/server/server.go`).
//!
//! Answers are computed per request from the catalog in memory ([`super::queries`]); streams
//! are produced on a blocking thread one message at a time into a channel of
//! [`STREAM_BUFFER`] messages, so a `ListBundles` of any catalog holds a few messages, never the
//! whole answer, and stops as soon as the client goes away.
//!
//! Errors are gRPC statuses: `NOT_FOUND` for what the catalog does not hold (upstream answers
//! `UNKNOWN` with the same message), `INVALID_ARGUMENT` for bad requests, `INTERNAL` for content
//! that cannot be sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status};

use super::api;
use super::api::registry_server::{Registry, RegistryServer};
use super::queries::{self, Api, QueryError};
use super::structs::struct_of;
use super::to_api::{self, Manifests};
use crate::fbc::Catalog;

/// Messages a stream holds before the client reads them.
pub const STREAM_BUFFER: usize = 4;

/// Service names the health service reports as serving (OLM checks `Registry`).
pub const HEALTH_SERVICES: [&str; 3] = ["", "Registry", "api.Registry"];

/// Why the server stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot build the reflection service: {0}")]
    Reflection(String),
    #[error("the gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

type Answer<T> = Result<Response<T>, Status>;
type MessageStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

/// The `api.Registry` service of one catalog.
#[derive(Clone)]
pub struct RegistryService {
    catalog: Arc<Catalog>,
}

impl RegistryService {
    pub fn new(catalog: Arc<Catalog>) -> Self {
        Self { catalog }
    }

    /// Runs `query` on a blocking thread (answers decode manifests).
    async fn unary<T, F>(&self, query: F) -> Answer<T>
    where
        T: Send + 'static,
        F: FnOnce(&Catalog) -> Result<T, QueryError> + Send + 'static,
    {
        let catalog = self.catalog.clone();
        match tokio::task::spawn_blocking(move || query(&catalog)).await {
            Ok(answer) => answer.map(Response::new).map_err(status),
            Err(error) => Err(Status::internal(format!("query failed: {error}"))),
        }
    }

    /// Streams the items `produce` sends, produced on a blocking thread.
    fn stream<T, F>(&self, produce: F) -> Answer<MessageStream<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Catalog, &Sender<T>) + Send + 'static,
    {
        let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
        let catalog = self.catalog.clone();
        tokio::task::spawn_blocking(move || produce(&catalog, &Sender(sender)));
        Ok(Response::new(Box::pin(ReceiverStream::new(receiver))))
    }

    /// Streams a short list computed at once (errors before the first message, as upstream).
    async fn listed<T, F>(&self, query: F) -> Answer<MessageStream<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Catalog) -> Result<Vec<T>, QueryError> + Send + 'static,
    {
        let items = self.unary(query).await?.into_inner();
        Ok(Response::new(Box::pin(futures::stream::iter(
            items.into_iter().map(Ok),
        ))))
    }
}

/// The sending half of a stream; `send` says whether the client still listens.
struct Sender<T>(mpsc::Sender<Result<T, Status>>);

impl<T> Sender<T> {
    fn send(&self, item: Result<T, Status>) -> bool {
        self.0.blocking_send(item).is_ok()
    }
}

/// The gRPC status of a query error.
fn status(error: QueryError) -> Status {
    let message = error.to_string();
    match error {
        QueryError::InvalidArgument(_) => Status::invalid_argument(message),
        QueryError::Convert(_) => Status::internal(message),
        _ => Status::not_found(message),
    }
}

fn api_of<'a>(group: &'a str, version: &'a str, kind: &'a str) -> Api<'a> {
    Api {
        group,
        version,
        kind,
    }
}

#[tonic::async_trait]
impl Registry for RegistryService {
    type ListPackagesStream = MessageStream<api::PackageName>;
    type GetChannelEntriesThatReplaceStream = MessageStream<api::ChannelEntry>;
    type GetChannelEntriesThatProvideStream = MessageStream<api::ChannelEntry>;
    type GetLatestChannelEntriesThatProvideStream = MessageStream<api::ChannelEntry>;
    type ListBundlesStream = MessageStream<api::Bundle>;
    type ListPackageCustomSchemasStream = MessageStream<prost_types::Struct>;

    async fn list_packages(
        &self,
        _: Request<api::ListPackageRequest>,
    ) -> Answer<Self::ListPackagesStream> {
        self.listed(|catalog| {
            Ok(queries::package_names(catalog)
                .into_iter()
                .map(|name| api::PackageName { name })
                .collect())
        })
        .await
    }

    async fn get_package(&self, request: Request<api::GetPackageRequest>) -> Answer<api::Package> {
        let name = request.into_inner().name;
        self.unary(move |catalog| queries::package(catalog, &name))
            .await
    }

    async fn get_bundle(&self, request: Request<api::GetBundleRequest>) -> Answer<api::Bundle> {
        let request = request.into_inner();
        self.unary(move |catalog| {
            queries::bundle(
                catalog,
                &request.pkg_name,
                &request.channel_name,
                &request.csv_name,
            )
        })
        .await
    }

    async fn get_bundle_for_channel(
        &self,
        request: Request<api::GetBundleInChannelRequest>,
    ) -> Answer<api::Bundle> {
        let request = request.into_inner();
        self.unary(move |catalog| {
            queries::bundle_for_channel(catalog, &request.pkg_name, &request.channel_name)
        })
        .await
    }

    async fn get_channel_entries_that_replace(
        &self,
        request: Request<api::GetAllReplacementsRequest>,
    ) -> Answer<Self::GetChannelEntriesThatReplaceStream> {
        let name = request.into_inner().csv_name;
        self.listed(move |catalog| queries::entries_that_replace(catalog, &name))
            .await
    }

    async fn get_bundle_that_replaces(
        &self,
        request: Request<api::GetReplacementRequest>,
    ) -> Answer<api::Bundle> {
        let request = request.into_inner();
        self.unary(move |catalog| {
            queries::bundle_that_replaces(
                catalog,
                &request.csv_name,
                &request.pkg_name,
                &request.channel_name,
            )
        })
        .await
    }

    async fn get_channel_entries_that_provide(
        &self,
        request: Request<api::GetAllProvidersRequest>,
    ) -> Answer<Self::GetChannelEntriesThatProvideStream> {
        let request = request.into_inner();
        self.listed(move |catalog| {
            let api = api_of(&request.group, &request.version, &request.kind);
            queries::entries_that_provide(catalog, &api)
        })
        .await
    }

    async fn get_latest_channel_entries_that_provide(
        &self,
        request: Request<api::GetLatestProvidersRequest>,
    ) -> Answer<Self::GetLatestChannelEntriesThatProvideStream> {
        let request = request.into_inner();
        self.listed(move |catalog| {
            let api = api_of(&request.group, &request.version, &request.kind);
            queries::latest_entries_that_provide(catalog, &api)
        })
        .await
    }

    async fn get_default_bundle_that_provides(
        &self,
        request: Request<api::GetDefaultProviderRequest>,
    ) -> Answer<api::Bundle> {
        let request = request.into_inner();
        self.unary(move |catalog| {
            let api = api_of(&request.group, &request.version, &request.kind);
            queries::default_bundle_that_provides(catalog, &api)
        })
        .await
    }

    async fn list_bundles(
        &self,
        _: Request<api::ListBundlesRequest>,
    ) -> Answer<Self::ListBundlesStream> {
        self.stream(|catalog, sender| {
            for view in queries::bundles_in_channels(catalog) {
                let message = to_api::bundle(view, Manifests::UnlessImage)
                    .map_err(|error| status(QueryError::from(error)));
                let failed = message.is_err();
                if !sender.send(message) || failed {
                    return;
                }
            }
        })
    }

    async fn list_package_custom_schemas(
        &self,
        request: Request<api::ListPackageCustomSchemasRequest>,
    ) -> Answer<Self::ListPackageCustomSchemasStream> {
        let request = request.into_inner();
        // Check the request before the stream starts, as upstream.
        queries::custom_schema_blobs(&self.catalog, &request.schema, &request.package_name)
            .map_err(status)?;
        self.stream(move |catalog, sender| {
            let Ok(blobs) =
                queries::custom_schema_blobs(catalog, &request.schema, &request.package_name)
            else {
                return;
            };
            for meta in blobs {
                let message = struct_of(meta.blob.get()).map_err(|error| {
                    Status::internal(format!("convert custom schema blob to struct: {error}"))
                });
                if !sender.send(message) {
                    return;
                }
            }
        })
    }
}

/// Serves `catalog` on `listener` until `shutdown` completes, then finishes the requests in
/// flight.
pub async fn serve(
    catalog: Arc<Catalog>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    for service in HEALTH_SERVICES {
        health
            .set_service_status(service, tonic_health::ServingStatus::Serving)
            .await;
    }
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|error| ServeError::Reflection(error.to_string()))?;
    let reflection_alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(api::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(|error| ServeError::Reflection(error.to_string()))?;
    let incoming = tonic::transport::server::TcpIncoming::from(listener).with_nodelay(Some(true));
    tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(reflection)
        .add_service(reflection_alpha)
        .add_service(RegistryServer::new(RegistryService::new(catalog)))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}
