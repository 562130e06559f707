//! Builders for small catalogs used by the FBC, resolution and CLI tests.
#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use opcat::fbc::{Catalog, DeclarativeConfig};
use serde_json::{Value, json};

/// `tests/fixtures/fbc/<name>`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fbc")
        .join(name)
}

/// An `olm.package` blob.
pub fn package(name: &str, default_channel: &str) -> Value {
    json!({"schema": "olm.package", "name": name, "defaultChannel": default_channel})
}

/// An `olm.channel` blob.
pub fn channel(package: &str, name: &str, entries: Value) -> Value {
    json!({"schema": "olm.channel", "package": package, "name": name, "entries": entries})
}

/// An `olm.bundle` blob with an image and an `olm.package` property.
pub fn bundle(package: &str, name: &str, version: &str) -> Value {
    json!({
        "schema": "olm.bundle", "package": package, "name": name,
        "image": format!("registry.example.com/{package}-bundle:{}", version.replace('+', "_")),
        "properties": [{"type": "olm.package", "value": {"packageName": package, "version": version}}]
    })
}

/// The blobs as one JSON stream, parsed.
pub fn config(blobs: &[Value]) -> DeclarativeConfig {
    let text: String = blobs.iter().map(|b| format!("{b}\n")).collect();
    DeclarativeConfig::parse(&text, Path::new("test.json")).unwrap_or_else(|e| panic!("{e:?}"))
}

/// The blobs as a validated catalog.
pub fn catalog(blobs: &[Value]) -> Catalog {
    Catalog::new(config(blobs)).unwrap_or_else(|e| panic!("{e}"))
}

/// A package with one channel: `entries` (JSON array of entries) and a bundle per entry; the
/// version of each bundle is given in `versions` by entry name.
pub fn one_channel(
    package_name: &str,
    channel_name: &str,
    entries: Value,
    versions: &[(&str, &str)],
) -> Vec<Value> {
    let mut blobs = vec![
        package(package_name, channel_name),
        channel(package_name, channel_name, entries),
    ];
    for (name, version) in versions {
        blobs.push(bundle(package_name, name, version));
    }
    blobs
}

/// Runs the `opcat` binary with `args`.
pub fn opcat(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_opcat"))
        .args(args)
        .output()
        .expect("run opcat")
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).unwrap()
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).unwrap()
}
