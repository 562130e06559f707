//! A third-party client checks `opcat catalog serve` (issue 25): Python `grpcio` compiles
//! `proto/registry.proto` with `grpcio-tools`, calls every RPC of `api.Registry` and the health
//! service on the shared certified-operators v4.16 catalog (the real `opcat` binary serving),
//! and compares each answer with `opcat catalog render` of the same catalog
//! (`tests/python/registry_grpc_check.py`). The virtualenv comes from
//! `scripts/install-test-deps.sh`; without it, or without grpcio in it, the test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod serve_support;

use std::path::PathBuf;
use std::process::Command;

use serve_support::CatalogServe;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The test tools' Python, with grpcio and grpcio-tools importable.
fn python() -> PathBuf {
    let venv = std::env::var_os("OPCAT_TEST_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set"))
                .join(".cache/opcat-test-tools/venv")
        });
    let python = venv.join("bin/python");
    let imports = Command::new(&python)
        .args(["-c", "import grpc, grpc_tools.protoc, yaml"])
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "the test tools' virtualenv {} is missing ({error}): run scripts/install-test-deps.sh",
                venv.display()
            )
        });
    assert!(
        imports.status.success(),
        "grpcio, grpcio-tools or PyYAML is missing from {}: run scripts/install-test-deps.sh\n{}",
        venv.display(),
        String::from_utf8_lossy(&imports.stderr)
    );
    python
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_grpcio_reads_every_rpc_of_the_certified_catalog_as_render_describes_it() {
    let python = python();
    let catalog =
        test_registry::shared_data_dir().join("fbc/large/certified-operators/catalogs/v4.16");
    assert!(catalog.is_dir(), "{} is missing", catalog.display());
    let scratch = tempfile::tempdir().unwrap();
    let rendered = scratch.path().join("render.json");
    let render = Command::new(env!("CARGO_BIN_EXE_opcat"))
        .args(["catalog", "render"])
        .arg(&catalog)
        .stdout(std::fs::File::create(&rendered).unwrap())
        .status()
        .expect("run opcat catalog render");
    assert!(render.success(), "opcat catalog render: {render}");

    let server = CatalogServe::start(&catalog).await;
    let address = server.address.clone();
    let check = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(repo_root().join("tests/python/registry_grpc_check.py"))
            .arg("--proto")
            .arg(repo_root().join("proto/registry.proto"))
            .args(["--address", &address, "--render"])
            .arg(&rendered)
            .output()
            .expect("run the Python client")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&check.stdout);
    println!("{stdout}");
    assert!(
        check.status.success(),
        "the Python client found differences:\n{stdout}\n{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let summary = stdout.lines().last().unwrap_or_default();
    let passed: usize = summary
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_default();
    assert!(passed > 5_000, "every RPC was checked: {summary}");
    server.stop().await;
}
