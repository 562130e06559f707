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

/// A random password (hex) for the registry's users, so nothing secret is written in a source
/// file and a test can look for it in logs.
pub fn random_password() -> String {
    let mut bytes = [0u8; 12];
    if let Ok(mut random) = std::fs::File::open("/dev/urandom") {
        use std::io::Read as _;
        let _ = random.read_exact(&mut bytes);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let mut text: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    text.push_str(&format!("{nanos:08x}"));
    text
}
