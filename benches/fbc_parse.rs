//! Parser throughput on a generated catalog (no third-party data needed): YAML in opm's style
//! with base64 bundle objects and CSV metadata, and the same catalog as a JSON stream.
//! `scripts/bench-catalog.sh` is the end-to-end benchmark against real catalogs.

// A benchmark crate: a failed expectation aborts the benchmark, which is what we want.
#![allow(clippy::expect_used)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use opcat::fbc::{Catalog, DeclarativeConfig};

/// One package with `bundles` bundles in a replaces chain, each with a 16 KB base64 object
/// and a block-scalar description.
fn generated_yaml(bundles: usize) -> String {
    use base64::Engine as _;
    let manifest = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","data":{{"blob":"{}"}}}}"#,
        "x".repeat(12_000)
    );
    let object = base64::engine::general_purpose::STANDARD.encode(manifest);
    let mut out = String::from(
        "---\nschema: olm.package\nname: gen\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: gen\nname: stable\nentries:\n",
    );
    for i in 0..bundles {
        let _ = writeln!(out, "- name: gen.v1.0.{i}");
        if i > 0 {
            let _ = write!(
                out,
                "  replaces: gen.v1.0.{}\n  skipRange: '>=0.1.0 <1.0.{i}'\n",
                i - 1
            );
        }
    }
    for i in 0..bundles {
        let _ = write!(
            out,
            "---\nimage: quay.io/gen/bundle@sha256:{digest}\nname: gen.v1.0.{i}\npackage: gen\nproperties:\n- type: olm.gvk\n  value:\n    group: gen.example.com\n    kind: Gen\n    version: v1\n- type: olm.package\n  value:\n    packageName: gen\n    version: 1.0.{i}\n- type: olm.csv.metadata\n  value:\n    description: |-\n      # Gen operator\n\n      Generated description line one.\n      Generated description line two: \"quoted\".\n    displayName: Gen Operator\n    keywords:\n    - gen\n    - 'bench mark'\n- type: olm.bundle.object\n  value:\n    data: {object}\nrelatedImages:\n- image: quay.io/gen/operator@sha256:{digest}\n  name: manager\nschema: olm.bundle\n",
            digest = "a".repeat(64),
        );
    }
    out
}

fn parse(c: &mut Criterion) {
    let yaml = generated_yaml(200);
    let config =
        DeclarativeConfig::parse(&yaml, Path::new("gen.yaml")).expect("generated YAML parses");
    let mut json = Vec::new();
    opcat::fbc::render::render(&config, &mut json).expect("render");
    let json = String::from_utf8(json).expect("UTF-8");

    let mut group = c.benchmark_group("fbc");
    group.throughput(Throughput::Bytes(yaml.len() as u64));
    group.bench_function("parse_yaml", |b| {
        b.iter(|| DeclarativeConfig::parse(black_box(&yaml), Path::new("gen.yaml")).expect("parse"))
    });
    group.bench_function("parse_and_validate_yaml", |b| {
        b.iter(|| {
            let config =
                DeclarativeConfig::parse(black_box(&yaml), Path::new("gen.yaml")).expect("parse");
            Catalog::new(config).expect("valid")
        })
    });
    group.throughput(Throughput::Bytes(json.len() as u64));
    group.bench_function("parse_json_stream", |b| {
        b.iter(|| DeclarativeConfig::parse(black_box(&json), Path::new("gen.json")).expect("parse"))
    });
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
