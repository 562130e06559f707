//! The controller manager: one reconciler per kind, each split into dereference → validate →
//! build → apply → status. This module and its children are the only code that talks to the
//! Kubernetes API.

pub mod apply;
pub mod drift;
pub mod resources;
