//! Checks shared by the fuzz targets and by `tests/registry_fuzz_regressions.rs`, which replays
//! every input kept under `fuzz/regressions/`.

use std::path::Path;

use opcat::registry::credentials::{ConfigFormat, parse_config};
use opcat::registry::pull::unpack_stream;
use opcat::registry::secret_file::pull_secret_from_bytes;
use opcat::registry::unpack::{UnpackLimits, Unpacker};
use opcat::registry::{ImageRef, Keyring};

/// Parses arbitrary bytes as both dockerconfig layouts and as a pull-secret file; whatever
/// parses goes into a keyring that is then queried. Nothing may panic, and credentials always
/// print redacted.
pub fn dockerconfig(data: &[u8]) {
    let mut keyring = Keyring::empty();
    for format in [ConfigFormat::DockerConfigJson, ConfigFormat::DockerCfg] {
        match parse_config(data, format) {
            Ok(parsed) => keyring.add_config("fuzz", &parsed),
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
    if let Ok(secret) = pull_secret_from_bytes(Path::new("fuzz.yaml"), data)
        && let Ok(parsed) = secret.parse()
    {
        for entry in &parsed.entries {
            // Redaction is unconditional: the Debug text never depends on the secret.
            assert_eq!(
                format!("{:?}", entry.credential),
                "Credential { username: <redacted>, password: <redacted> }"
            );
        }
        keyring.add_config(&secret.name, &parsed);
    }
    for image in [
        "busybox",
        "quay.io/org/app:1",
        "127.0.0.1:5000/a/b@sha256:0000000000000000000000000000000000000000000000000000000000000000",
        "a.example.com/x",
    ] {
        if let Ok(image) = image.parse::<ImageRef>() {
            let _ = keyring.lookup(&image);
        }
    }
}

/// Unpacks arbitrary bytes (gzip-sniffed tar) into a sandbox with small limits; whatever the
/// outcome, nothing may appear outside the target directory.
pub fn tar_extract(data: &[u8]) {
    let base = tempfile::tempdir().expect("temp dir");
    let root = base.path().join("root");
    let outside = base.path().join("outside");
    std::fs::create_dir(&root).expect("root");
    std::fs::create_dir(&outside).expect("outside");
    let limits = UnpackLimits {
        max_total_bytes: 1 << 20,
        max_files: 200,
        max_file_bytes: 256 << 10,
    };
    let mut unpacker = Unpacker::new(&root, limits);
    // `--LAYER-` separates layers, so later layers see earlier ones (whiteouts, links).
    let ok = split_layers(data)
        .into_iter()
        .all(|layer| unpack_stream(&mut unpacker, &mut &layer[..]).is_ok());
    if ok {
        let _ = unpacker.finish();
    }
    let beside: Vec<_> = std::fs::read_dir(base.path())
        .expect("list base")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        beside.len(),
        2,
        "entries created next to the root: {beside:?}"
    );
    assert_eq!(
        std::fs::read_dir(&outside).expect("list outside").count(),
        0,
        "something was written outside the root"
    );
}

fn split_layers(mut data: &[u8]) -> Vec<&[u8]> {
    const MARKER: &[u8] = b"--LAYER-";
    let mut layers = Vec::new();
    while let Some(at) = data.windows(MARKER.len()).position(|w| w == MARKER) {
        layers.push(&data[..at]);
        data = &data[at + MARKER.len()..];
    }
    layers.push(data);
    layers
}
