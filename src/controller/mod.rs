//! The controller manager: one reconciler per kind, each split into dereference → validate →
//! build → apply → status. This module and its children are the only code that talks to the
//! Kubernetes API.

pub mod apply;
pub mod attached_service_account;
pub mod backoff;
pub mod catalog_source;
pub mod catalogs;
pub mod clock;
pub mod compact_meta;
pub mod context;
pub mod csv;
pub mod deployment_rollout;
pub mod drift;
pub mod events;
pub mod install_plan;
pub mod installed_operators;
pub mod keys;
pub mod leader;
pub mod manager;
pub mod namespace_index;
pub mod own_writes;
pub mod owned_objects;
pub mod plan_record;
pub mod resources;
pub mod source_secrets;
pub mod status_diff;
mod store_trim;
pub mod stores;
pub mod subscription;
pub mod wiring;
