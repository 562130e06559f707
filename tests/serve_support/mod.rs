//! `opcat catalog serve` run as the real binary, for tests that need a registry server.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// How long the server may take to start (debug build, shared machine).
pub const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `opcat catalog serve`.
pub struct CatalogServe {
    child: Child,
    /// `127.0.0.1:PORT` it listens on.
    pub address: String,
}

impl CatalogServe {
    /// Serves the catalog at `source` on a free loopback port.
    pub async fn start(source: &Path) -> Self {
        Self::start_on(source, "127.0.0.1:0").await
    }

    /// Serves the catalog at `source` on `listen`.
    pub async fn start_on(source: &Path, listen: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_opcat"))
            .args(["catalog", "serve"])
            .arg(source)
            .args(["--listen", listen, "--log-format", "json"])
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("start opcat catalog serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let address = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await.expect("read the server's log") {
                let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                if event["message"] == "serving registry" {
                    return event["address"].as_str().expect("address").to_owned();
                }
            }
            panic!("opcat catalog serve exited before serving");
        })
        .await
        .expect("opcat catalog serve starts");
        // Keep draining the log so the server never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self { child, address }
    }

    /// Stops the server with SIGTERM (as the kubelet does) and waits for it to exit.
    pub async fn stop(mut self) {
        terminate(&self.child);
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("the server stops after SIGTERM")
            .expect("wait for the server");
        assert!(status.success(), "a stopped server exits 0: {status}");
    }
}

/// Sends SIGTERM to `child` (by its own pid).
pub fn terminate(child: &Child) {
    let pid = child.id().expect("the server runs");
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -TERM {pid}");
}

/// Writes `config` (rendered) as `dir/catalog.json`; returns `dir`.
pub fn write_catalog(dir: &Path, config: &opcat::fbc::DeclarativeConfig) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).expect("catalog dir");
    let mut json = Vec::new();
    opcat::fbc::render::render(config, &mut json).expect("render catalog");
    std::fs::write(dir.join("catalog.json"), json).expect("write catalog");
    dir.to_path_buf()
}
