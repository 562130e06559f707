//! The operator-registry gRPC API (`api.Registry`, `grpc.health.v1`): the client opcat uses for
//! `spec.address` CatalogSources and the server of `opcat catalog serve`, over the same catalog
//! model as catalog images ([`crate::fbc::Catalog`]). Talks to the network only; never to
//! Kubernetes.
//!
//! - [`api`]: the messages and service stubs, generated at build time from `proto/registry.proto`
//!   (opcat's own file, written from the documented API of operator-framework/operator-registry
//!   `pkg/api/registry.proto`: same package, service, methods, messages and field numbers).
//! - [`to_api`] and [`from_api`] (pure): catalog model to messages and back.
//! - [`queries`] (pure): the answer of every query of the service.
//! - [`server`]: the service, with health and reflection, as `opm serve` offers them.
//! - [`client`]: health check and full read of a server, as OLM reads one.
//! - [`probe`]: a `grpc_health_probe` for catalog images built on opcat's image.

pub mod api;
pub mod client;
pub mod from_api;
pub mod probe;
pub mod queries;
pub mod server;
pub mod structs;
#[cfg(test)]
mod test_catalog;
pub mod to_api;

pub use client::{CatalogServer, ClientError, ServedCatalog};
pub use server::{RegistryService, ServeError, serve};
