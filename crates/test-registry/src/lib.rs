//! Test-only harness for opcat's registry code.
//!
//! - [`Distribution`]: the real CNCF distribution registry (Debian `docker-registry`) on a free
//!   127.0.0.1 port, TLS from a CA made at test time, htpasswd basic auth or token auth, started
//!   with a scrubbed environment and killed on drop.
//! - [`TokenIssuer`]: an in-process token server (loopback TLS) issuing the RS256 JWTs
//!   distribution 2.8 accepts, with per-user repository scopes.
//! - [`FakeRegistry`]: an in-process plain-HTTP registry that serves whatever bytes a test gives
//!   it, to lie about digests or misbehave in ways the real registry will not.
//! - [`tools`]: `umoci` and `skopeo` helpers.
//! - [`shared_data_dir`]: where the shared third-party test data is.
//!
//! Every helper panics with a clear message when something it needs is missing: tests fail, they
//! never skip. `scripts/install-test-deps.sh` installs the tools.

mod distribution;
mod fake;
mod shared_data;
mod tls;
mod token;
pub mod tools;

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;

pub use distribution::{Auth, Distribution, User};
pub use fake::{FakeRegistry, Reply};
pub use shared_data::shared_data_dir;
pub use tls::TestCa;
pub use token::TokenIssuer;

/// A free TCP port on 127.0.0.1 (bound and released; the tiny race is acceptable in tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("cannot bind a free port on 127.0.0.1")
}

/// Path of a program on `PATH`, or a panic telling how to install it.
pub fn require_tool(name: &str) -> PathBuf {
    let found = Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name}"))
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()));
    found.unwrap_or_else(|| {
        panic!("`{name}` is not installed: run scripts/install-test-deps.sh (tests never skip)")
    })
}

/// A `.dockerconfigjson` document with one basic-auth entry.
pub fn dockerconfigjson(registry: &str, username: &str, password: &str) -> String {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    serde_json::json!({ "auths": { registry: { "auth": auth } } }).to_string()
}

/// A Kubernetes Secret manifest (YAML) of type `kubernetes.io/dockerconfigjson`.
pub fn pull_secret_yaml(name: &str, dockerconfigjson: &str) -> String {
    use base64::Engine as _;
    let data = base64::engine::general_purpose::STANDARD.encode(dockerconfigjson);
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: {name}\n\
         type: kubernetes.io/dockerconfigjson\ndata:\n  .dockerconfigjson: {data}\n"
    )
}
