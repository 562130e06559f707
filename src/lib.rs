//! opcat: an operator catalog controller for Kubernetes.
//!
//! The crate is split by responsibility (see `docs/development.md`):
//! pure modules (`fbc`, `graph`, `resolve`, `dependency`, `semver_range`, `bundle`, `copied_csv`,
//! `certificates`, `pull_secrets`, `operator_conditions`, `operator_group_roles`) never talk to
//! a cluster or a registry; `registry` talks only to OCI registries; `controller` is the only
//! code that talks to the Kubernetes API.

pub mod admin;
pub mod api;
pub mod bundle;
pub mod certificates;
pub mod clearing_cache;
pub mod cli;
pub mod controller;
pub mod copied_csv;
pub mod dependency;
pub mod failure;
pub mod fbc;
pub mod go_duration;
pub mod graph;
pub mod interner;
pub mod metrics;
pub mod operator_conditions;
pub mod operator_group_roles;
pub mod package_server;
pub mod pull_secrets;
pub mod registry;
pub mod registry_grpc;
pub mod resolve;
pub mod semver_range;
pub mod telemetry;
pub mod timing;
