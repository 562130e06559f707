//! The quickstart demo (`scripts/demo.sh`): opcat's main job on the embedded example, on one
//! machine, without a Kubernetes cluster.
//!
//! It starts the real CNCF `docker-registry` with TLS and basic auth, pushes `bundles/` and
//! `catalog/` with the real `opcat bundle push` / `opcat catalog push`, starts an **in-memory
//! stand-in** for the Kubernetes API (`fake-apiserver`, over HTTP with a kubeconfig), runs the
//! real `opcat run` binary against it, applies the `deploy/examples/` manifests as an admin
//! would, and narrates what opcat did: the catalog, the install, the pull-secret copy on every
//! ServiceAccount and Deployment, an in-place rotation and an uninstall that leaves only the CRD.
//!
//! The pieces are public so the end-to-end tests drive the same steps: [`examples`] (the
//! manifests, applied with server-side apply), [`opcat_process`] (the `opcat run` child process)
//! and [`publish`] (pushing with the CLI).

pub mod cluster;
pub mod examples;
pub mod inventory;
pub mod narrate;
pub mod opcat_process;
pub mod publish;
mod story;

pub use story::{DemoError, Options, Summary, run};
