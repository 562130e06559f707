//! Benchmark of the package API (issue 24), run by `scripts/bench-package-api.sh`: the shared
//! certified-operators v4.16 and community-operators v4.21 catalogs loaded as opcat holds them,
//! served in the global catalog namespace over TLS; a user with a bearer token lists every
//! package in a namespace again and again (TokenReview and SubjectAccessReview answered from
//! the caches after the first request). Prints p50/p99 latency of lists that build the
//! manifests from the catalogs (cold: the catalogs are published again before each) and of
//! lists answered from what the server keeps (warm), with and without the client's parse; where
//! a cold list's time goes in process; and the server's resident memory with the catalogs
//! loaded, before the first request, after serving and at rest. Not a timed test: targets are printed,
//! not asserted.
//!
//! The server runs in a process of its own ([`server`], this executable started again with
//! `BENCH_PACKAGE_API_ROLE=server`) on opcat's allocator, so its memory is not mixed with the
//! client's parse of the lists.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod server;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use kube::api::{Api, ApiResource, DynamicObject, ListParams};

/// As `opcat` itself (src/main.rs).
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const ROLE: &str = "BENCH_PACKAGE_API_ROLE";

fn main() {
    if std::env::var(ROLE).as_deref() == Ok("server") {
        server::main();
    } else {
        client();
    }
}

/// The server process, driven through its standard input and output.
struct Server {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Server {
    fn start() -> (Self, server::Ready) {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(ROLE, "server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        let mut server = Self {
            child,
            input,
            output,
        };
        let ready = serde_json::from_str(&server.line()).unwrap();
        (server, ready)
    }

    fn line(&mut self) -> String {
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "the server process exited");
        line
    }

    fn ask(&mut self, command: &str) -> String {
        writeln!(self.input, "{command}").unwrap();
        self.line()
    }

    fn cpu(&self) -> Duration {
        server::cpu_time(&self.child.id().to_string())
    }

    fn rss(&self) -> f64 {
        server::rss_mib(&self.child.id().to_string())
    }

    fn finish(self) -> server::InProcess {
        let Self {
            mut child,
            input,
            mut output,
        } = self;
        drop(input);
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        child.wait().unwrap();
        serde_json::from_str(&line).unwrap()
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index.min(sorted.len() - 1)]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn client() {
    opcat::registry::install_crypto_provider();
    let requests: usize = std::env::var("BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let (mut server, ready) = Server::start();
    let mut config = kube::Config::new(format!("https://{}", ready.address).parse().unwrap());
    config.root_cert = Some(vec![
        rustls::pki_types::pem::PemObject::from_pem_slice(ready.ca_pem.as_bytes())
            .map(|der: rustls::pki_types::CertificateDer<'static>| der.to_vec())
            .unwrap(),
    ]);
    config.tls_server_name = Some("opcat-package-api.opcat-system.svc".into());
    config.auth_info.token = Some("bench-token".to_owned().into());
    let client = kube::Client::try_from(config).unwrap();
    let resource = ApiResource {
        group: "packages.operators.coreos.com".into(),
        version: "v1".into(),
        api_version: "packages.operators.coreos.com/v1".into(),
        kind: "PackageManifest".into(),
        plural: "packagemanifests".into(),
    };
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "team-a", &resource);
    let idle = server.rss();
    let mut peak = idle;

    // Cold: the catalogs are published again before each request, which drops what the server
    // built from them, so every list builds the manifests from the catalogs.
    let cold_requests = (requests / 10).max(5);
    let mut cold = Vec::with_capacity(cold_requests);
    for _ in 0..cold_requests {
        assert_eq!(server.ask("publish").trim(), "published");
        let start = Instant::now();
        api.list(&ListParams::default()).await.unwrap();
        cold.push(start.elapsed());
        peak = peak.max(server.rss());
    }

    // Warm: as a client sees it (kube parses every item), then the body alone.
    let mut items = 0;
    let cpu_before = server.cpu();
    let mut warm = Vec::with_capacity(requests);
    for _ in 0..requests {
        let start = Instant::now();
        items = api.list(&ListParams::default()).await.unwrap().items.len();
        warm.push(start.elapsed());
        peak = peak.max(server.rss());
    }
    let mut body_bytes = 0;
    let mut raw = Vec::with_capacity(requests);
    for _ in 0..requests {
        let request = http::Request::get(
            "/apis/packages.operators.coreos.com/v1/namespaces/team-a/packagemanifests",
        )
        .body(Vec::new())
        .unwrap();
        let start = Instant::now();
        body_bytes = client.request_text(request).await.unwrap().len();
        raw.push(start.elapsed());
        peak = peak.max(server.rss());
    }
    // The server's own CPU per warm list: what a list costs it, waiting for a core left out.
    let cpu_per_list = (server.cpu() - cpu_before).as_secs_f64() * 1000.0 / (2 * requests) as f64;
    let serving = server.rss();
    // At rest: jemalloc returns freed pages over 10 s (dirty_decay_ms), counted on its
    // allocations; opcat keeps allocating (watches, leases), here a trickle of small requests.
    tokio::time::sleep(Duration::from_secs(11)).await;
    for _ in 0..100 {
        let request = http::Request::get("/apis/packages.operators.coreos.com/v1")
            .body(Vec::new())
            .unwrap();
        client.request_text(request).await.unwrap();
    }
    let at_rest = server.rss();
    let in_process = server.finish();

    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let p = |latencies: &mut Vec<Duration>, q: f64| {
        latencies.sort();
        ms(percentile(latencies, q))
    };
    let loaded = ready.rss_loaded;
    println!("| measure | value | target |");
    println!("|---|---|---|");
    println!("| packages per list | {items} | |");
    println!(
        "| list body | {:.1} MB | |",
        body_bytes as f64 / 1_000_000.0
    );
    println!("| requests (cold / warm) | {cold_requests} / {requests} | |");
    println!(
        "| cold list p50 / p99 (manifests built per request) | {:.1} / {:.1} ms | |",
        p(&mut cold, 0.50),
        p(&mut cold, 0.99)
    );
    println!("| list p50 | {:.1} ms | |", p(&mut warm, 0.50));
    println!("| list p99 | {:.1} ms | < 50 ms |", p(&mut warm, 0.99));
    println!(
        "| list p50 / p99, body not parsed | {:.1} / {:.1} ms | |",
        p(&mut raw, 0.50),
        p(&mut raw, 0.99)
    );
    println!("| server CPU per warm list | {cpu_per_list:.1} ms | |");
    println!(
        "| in process: build / list / serialize | {:.1} / {:.1} / {:.1} ms | |",
        in_process.build, in_process.list, in_process.serialize
    );
    println!(
        "| server RSS before loading | {:.0} MiB | |",
        ready.rss_before
    );
    println!("| server RSS with the catalogs (no API request yet) | {loaded:.0} MiB | |");
    println!("| server RSS, API up, before the first request | {idle:.0} MiB | |");
    println!(
        "| server RSS after serving (peak) | {serving:.0} MiB ({peak:.0} MiB) | < {:.0} MiB |",
        loaded * 1.1
    );
    println!(
        "| server RSS increase | {:+.1} % | < 10 % |",
        (serving / loaded - 1.0) * 100.0
    );
    println!(
        "| server RSS at rest, 11 s later: increase | {at_rest:.0} MiB: {:+.1} % | < 10 % |",
        (at_rest / loaded - 1.0) * 100.0
    );
}
