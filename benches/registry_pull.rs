//! Pull-path benchmark (run by `scripts/bench-registry.sh`; `cargo test --benches` runs it as a
//! smoke on the small example catalog).
//!
//! Pushes the large third-party catalog (`fbc/large/certified-operators/catalogs/v4.16`, ~52 MB)
//! to a real distribution registry on loopback (TLS + basic auth), then measures, in the same
//! run and with `hyperfine`:
//! - baseline: `skopeo copy docker://IMAGE oci:DIR` plus `tar -xzf` of its layer;
//! - `opcat bundle unpack IMAGE DIR`: pull, verify every digest, unpack safely (streamed);
//! - `opcat catalog validate IMAGE`: the above plus parsing the FBC.
//!
//! Peak RSS of each command comes from GNU time (`%M`). Env: `OPCAT_BIN` (default: the
//! binary cargo built for this run, optimised under `cargo bench`), `OPCAT_SHARED_DATA`,
//! `BENCH_RUNS` (default 5).
// Benchmark driver: failing loudly is the right behaviour.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use opcat::registry::push::build_catalog_image;
use opcat::registry::{ImageRef, Keyring, Registry, RegistryOptions};
use test_registry::{Distribution, pull_secret_yaml, require_tool};

fn main() {
    // `cargo bench` passes `--bench` and measures. `cargo test --benches` (scripts/test.sh) runs
    // the same driver as a smoke so it cannot rot: the small example catalog, every command once,
    // the same correctness check, no timing.
    let measure = std::env::args().any(|arg| arg == "--bench");
    let opcat = std::env::var_os("OPCAT_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_opcat")), PathBuf::from);
    let catalog = if measure {
        test_registry::shared_data_dir().join("fbc/large/certified-operators/catalogs/v4.16")
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("catalog")
    };
    let runs: u32 = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    require_tool("skopeo");

    let dist = Distribution::basic("bench", "bench-pass");
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let image = dist.image("catalogs/measured:v1");
    let built = build_catalog_image(&catalog).unwrap();
    let uncompressed: u64 = du(&catalog);
    push(&dist, &image, &built, w);
    // A one-file image: the process's fixed memory cost, to separate it from what the layer adds.
    let tiny_dir = w.join("tiny");
    std::fs::create_dir(&tiny_dir).unwrap();
    std::fs::write(
        tiny_dir.join("catalog.json"),
        "{\"schema\":\"olm.package\",\"name\":\"x\"}",
    )
    .unwrap();
    let tiny_image = dist.image("catalogs/tiny:v1");
    push(
        &dist,
        &tiny_image,
        &build_catalog_image(&tiny_dir).unwrap(),
        w,
    );
    let secret = w.join("secret.yaml");
    std::fs::write(&secret, pull_secret_yaml("bench", &dist.dockerconfigjson())).unwrap();

    let flags = format!(
        "--pull-secret {} --ca-file {}",
        secret.display(),
        dist.ca.pem_path().display()
    );
    let d = w.display();
    let baseline = format!(
        "rm -rf {d}/oci {d}/untar && skopeo copy -q --src-creds {creds} --src-cert-dir {cd} \
         docker://{image} oci:{d}/oci:v1 && mkdir {d}/untar && tar -xzf {d}/oci/blobs/sha256/{hex} -C {d}/untar",
        creds = dist.creds(),
        cd = dist.ca.cert_dir.display(),
        hex = built.layer.digest.hex(),
    );
    let unpack = format!(
        "rm -rf {d}/out && {} bundle unpack {image} {d}/out {flags}",
        opcat.display()
    );
    let validate = format!(
        "rm -rf {d}/cache && {} catalog validate {image} {flags} --cache-dir {d}/cache",
        opcat.display()
    );
    let commands = [
        ("baseline (skopeo copy + tar -xzf)", baseline),
        ("opcat bundle unpack", unpack),
        ("opcat catalog validate IMAGE", validate),
    ];

    // Correctness first: every command works, and both pulls give the same files.
    for (_, command) in &commands {
        sh(command);
    }
    sh(&format!("diff -r {d}/untar/configs {d}/out/configs"));
    if !measure {
        println!(
            "registry_pull smoke: all commands ran and agree on {}",
            catalog.display()
        );
        return;
    }

    let hyperfine = require_tool("hyperfine");

    let json = w.join("hyperfine.json");
    let mut bench = Command::new(hyperfine);
    bench
        .args([
            "--warmup",
            "1",
            "--runs",
            &runs.to_string(),
            "--style",
            "basic",
            "--export-json",
        ])
        .arg(&json);
    for (name, command) in &commands {
        bench.args(["-n", name, command]);
    }
    assert!(bench.status().unwrap().success(), "hyperfine failed");
    let results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();

    let layer = built.layer.bytes.len() as u64;
    println!(
        "\ncatalog: {} ({} files, {:.1} MB uncompressed, layer {:.1} MB gzip)",
        catalog.display(),
        files(&catalog),
        mb(uncompressed),
        mb(layer)
    );
    println!("| command | mean (s) | ± (s) | vs baseline | peak RSS (MB) | RSS / layer |");
    println!("|---|---|---|---|---|---|");
    let base = results["results"][0]["mean"].as_f64().unwrap();
    for (index, (name, command)) in commands.iter().enumerate() {
        let result = &results["results"][index];
        let mean = result["mean"].as_f64().unwrap();
        let rss = peak_rss_kb(command) * 1024;
        println!(
            "| {name} | {mean:.3} | {:.3} | {:.2}× | {:.1} | {:.2}× |",
            result["stddev"].as_f64().unwrap_or_default(),
            mean / base,
            mb(rss),
            rss as f64 / layer as f64
        );
    }
    let tiny_rss = peak_rss_kb(&format!(
        "rm -rf {d}/tiny-out && {} bundle unpack {tiny_image} {d}/tiny-out {flags}",
        opcat.display()
    )) * 1024;
    let big_rss = peak_rss_kb(&commands[1].1) * 1024;
    println!(
        "opcat's peak RSS on a one-file image: {:.1} MB; the {:.1} MB layer adds {:.1} MB ({:.2}× the layer)",
        mb(tiny_rss),
        mb(layer),
        mb(big_rss.saturating_sub(tiny_rss)),
        big_rss.saturating_sub(tiny_rss) as f64 / layer as f64
    );
}

fn push(dist: &Distribution, image: &str, built: &opcat::registry::push::BuiltImage, work: &Path) {
    opcat::registry::install_crypto_provider();
    let mut options = RegistryOptions::new(work.join("push-cache"));
    options
        .trust
        .extra_root_certs_pem
        .push(std::fs::read(dist.ca.pem_path()).unwrap());
    let registry = Registry::new(options).unwrap();
    let secret = opcat::registry::PullSecret {
        name: "bench".into(),
        type_: "kubernetes.io/dockerconfigjson".into(),
        data: [(
            ".dockerconfigjson".to_owned(),
            dist.dockerconfigjson().into_bytes(),
        )]
        .into(),
    };
    let (keyring, _) = Keyring::from_secrets(&[secret]);
    let image: ImageRef = image.parse().unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(registry.push(&image, built, &keyring))
        .unwrap();
}

fn sh(command: &str) {
    let status = Command::new("sh").arg("-c").arg(command).status().unwrap();
    assert!(status.success(), "failed: {command}");
}

fn peak_rss_kb(command: &str) -> u64 {
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M", "sh", "-c", command])
        .output()
        .expect("GNU time (/usr/bin/time) is needed: apt-get install time");
    assert!(out.status.success(), "failed: {command}");
    let text = String::from_utf8_lossy(&out.stderr);
    text.lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0)
}

fn du(dir: &Path) -> u64 {
    walk(dir)
        .iter()
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .sum()
}

fn files(dir: &Path) -> usize {
    walk(dir).len()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for item in std::fs::read_dir(dir).unwrap() {
        let path = item.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}
