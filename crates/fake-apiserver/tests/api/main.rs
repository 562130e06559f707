//! Behaviour of the fake API server, exercised through the real `kube::Client` (and
//! `kube::runtime`), one module per behaviour the server promises. Each test's doc comment
//! names the Kubernetes behaviour it mirrors.

// Test code: a failed unwrap is a failed test (clippy's allow-unwrap-in-tests does not reach
// helper functions of integration tests).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admission;
mod aggregation;
mod apiservice;
mod apply;
mod authn;
mod backend;
mod common;
mod controllers;
mod crd_conversion;
mod crud;
mod discovery;
mod escalation;
mod finalizers;
mod gc;
mod metadata;
mod patches;
mod rbac;
mod resources;
mod reviews;
mod role_aggregation;
mod runtime_controller;
mod scale;
mod serving;
mod status_subresource;
mod test_control;
mod watch;
