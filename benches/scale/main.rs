//! Scale benchmark of the controller (issues 5, 6 and 12), run by `scripts/bench-scale.sh`.
//!
//! For each N: the real `opcat run` binary (its own process, so its memory is its own) against
//! the in-memory API server over HTTP and the real `docker-registry` (TLS, basic auth) holding
//! the example catalog and bundles.
//!
//! 1. **Converge from scratch**: a CatalogSource with two source secrets, then N namespaces each
//!    with an OperatorGroup and a Subscription; timed until every Subscription is
//!    `AtLatestKnown` with its CSV `Succeeded` and both pull-secret copies present (read from the
//!    server's store, not counted). Requests are counted until the controller stops writing.
//! 2. **Steady state**: a window longer than the controller's resync: writes (must be 0) and
//!    reads per minute.
//! 3. **Rotation**: one source secret's data changes (one PATCH, not counted); timed until all N
//!    copies carry the new data; the writes it took.
//!
//! With `--copied-csvs` (issue 27), each N is run twice, copied CSVs on and off, with one
//! operator installed for all namespaces and N namespaces that hold nothing else; converged once
//! each of them holds the operator's copied CSV `Succeeded` (copies on), and the third phase
//! flips OLMConfig's `disableCopiedCSVs` until every copy is gone, or made ([`scenario`]).
//!
//! Requests are the controller's only, by verb and resource, from the API server's request log
//! (the benchmark's own rotating PATCH is tagged and left out). Memory: `VmRSS` sampled every
//! 50 ms and `VmHWM` from `/proc/<pid>/status`. CPU time of each phase for the controller and
//! for the API server, which runs on its own runtime threads in this process ([`cpu`]).
//!
//! `cargo bench --bench scale -- [N ...] [--copied-csvs] [--concurrency C] [--resync D]
//! [--steady-secs S]`. Without `--bench` (`cargo test --benches`) it runs a smoke test with N = 3
//! of each scenario against the debug binary and fails if the controller does not converge,
//! writes at steady state (or, copied CSVs, makes any request there), misses a rotated copy or
//! leaves a copy the switch removed, so the driver cannot rot.
// Benchmark driver: a failed step aborts the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

/// The in-memory API server runs in this process, and on glibc's malloc its cost per request
/// grew with its heap (perf at 10,000: `free` and `malloc_consolidate` were the API server's
/// largest entries, nowhere at 1,000), a cost that is the allocator's, not the API's. It runs on
/// jemalloc, as `opcat` itself does.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

mod cluster;
mod controller;
mod copies_report;
mod cpu;
mod measure;
#[path = "../../tests/ops_support/mod.rs"]
mod ops_support;
mod report;
mod scenario;
#[path = "../../tests/support/mod.rs"]
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Parser;

use cluster::{Cluster, ROTATED};
use controller::{Controller, Options};
use cpu::{Cpu, Parties};
use measure::{Expected, Tally};
use opcat::metrics::controllers::{CSV, INSTALL_PLAN, SUBSCRIPTION};
use report::RunReport;
use scenario::Scenario;

/// Scale benchmark of `opcat run`.
#[derive(Debug, Parser)]
struct Args {
    /// Subscriptions per run, one namespace each.
    #[arg(default_values_t = [200, 1000])]
    sizes: Vec<usize>,
    /// One operator installed for all namespaces and N namespaces, each N with copied CSVs on
    /// and off, instead of N Subscriptions.
    #[arg(long)]
    copied_csvs: bool,
    /// `opcat run --concurrency` (parallel reconciles per controller).
    #[arg(long, default_value_t = 16)]
    concurrency: u16,
    /// `opcat run --resync`; the steady window must be longer.
    #[arg(long, default_value = "20s")]
    resync: String,
    /// Length of the steady-state window.
    #[arg(long, default_value_t = 30)]
    steady_secs: u64,
    /// Give up converging after this long.
    #[arg(long, default_value_t = 1800)]
    timeout_secs: u64,
    /// The opcat binary (default: the one cargo built with this benchmark).
    #[arg(long, env = "OPCAT_BIN")]
    opcat: Option<PathBuf>,
    /// The controller's RUST_LOG.
    #[arg(long, default_value = "info")]
    rust_log: String,
    /// Passed by `cargo bench`.
    #[arg(long, hide = true)]
    bench: bool,
}

impl Args {
    /// The runs, in order.
    fn runs(&self) -> Vec<(usize, Scenario)> {
        let scenarios: &[Scenario] = if self.copied_csvs {
            &[
                Scenario::AllNamespaces { copies: true },
                Scenario::AllNamespaces { copies: false },
            ]
        } else {
            &[Scenario::Subscriptions]
        };
        self.sizes
            .iter()
            .flat_map(|&n| scenarios.iter().map(move |&scenario| (n, scenario)))
            .collect()
    }

    /// The smoke run of `cargo test --benches`.
    fn smoke() -> Self {
        Self {
            sizes: vec![3],
            copied_csvs: false,
            concurrency: 4,
            resync: "2s".into(),
            steady_secs: 5,
            timeout_secs: 60,
            opcat: None,
            rust_log: "info".into(),
            bench: false,
        }
    }
}

fn main() {
    let smoke = !std::env::args().any(|arg| arg == "--bench");
    let args = if smoke { Args::smoke() } else { Args::parse() };
    let mut runs = args.runs();
    if smoke {
        runs.extend(
            // More namespaces than the Subscription smoke (they cost little): enough copies
            // for the copy store to lag the writes, which the checks below would see.
            Args {
                sizes: vec![40],
                copied_csvs: true,
                ..Args::smoke()
            }
            .runs(),
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut reports = Vec::new();
    for (index, &(n, scenario)) in runs.iter().enumerate() {
        // The API server's own runtime: its CPU time is measured apart from the benchmark's.
        // A fresh one per run, shut down after it, so nothing of an earlier run's server
        // (connection tasks, watch streams) is left to run in a later one.
        let api_threads = cpu::api_thread_name(index);
        let api_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(&api_threads)
            .enable_all()
            .build()
            .expect("the API server's tokio runtime");
        let report = runtime.block_on(run(n, scenario, &args, api_runtime.handle(), api_threads));
        api_runtime.shutdown_timeout(Duration::from_secs(10));
        eprintln!("{}", report.details());
        reports.push(report);
    }
    println!("{}", report::tables(&reports));
    for (run, check, met) in report::all_targets(&reports) {
        println!("- {run}: {check}: {}", if met { "met" } else { "MISSED" });
    }
    if smoke {
        smoke_checks(&reports);
    }
}

/// What the smoke run asserts.
fn smoke_checks(reports: &[RunReport]) {
    for report in reports {
        if report.scenario != Scenario::Subscriptions {
            copies_report::smoke_check(report);
            continue;
        }
        assert_eq!(
            report.steady_requests.writes(),
            0,
            "smoke: writes at steady state:\n{}",
            report.steady_requests
        );
        for controller in [SUBSCRIPTION, INSTALL_PLAN, CSV] {
            let count = report.converge_reconciles.0.get(controller).copied();
            assert!(
                count.is_some_and(|count| count >= report.n as u64),
                "smoke: {controller} reconciles to converge: {count:?} of {:?}",
                report.converge_reconciles
            );
        }
    }
    eprintln!("scale smoke passed (N=3); run scripts/bench-scale.sh for the benchmark");
}

async fn run(
    n: usize,
    scenario: Scenario,
    args: &Args,
    api_runtime: &tokio::runtime::Handle,
    api_threads: String,
) -> RunReport {
    let binary = args
        .opcat
        .clone()
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_opcat")));
    let timeout = Duration::from_secs(args.timeout_secs);
    eprintln!("N={n} ({scenario}): starting the registry and the API server");
    let cluster = Cluster::start(api_runtime).await;
    let api = cluster.api().clone();
    let mut controller = Controller::start(&Options {
        binary: &binary,
        kubeconfig: cluster.http.kubeconfig_path(),
        ca_file: &cluster.env.registry.ca.ca_pem,
        concurrency: args.concurrency,
        resync: &args.resync,
        rust_log: &args.rust_log,
    })
    .await;
    let tenants = cluster::tenants(n);
    let idle_memory = controller.memory();
    let parties = Parties {
        controller: controller.pid(),
        registry: cluster.env.registry.pid(),
        api_threads,
    };

    // 1. Converge from scratch.
    eprintln!("N={n}: converging");
    let reconciles_before = controller.reconciles().await;
    api.reset_counts();
    let cpu_start = Cpu::now(&parties);
    let registry_before = cluster.registry_requests();
    let start = Instant::now();
    scenario.seed(&cluster, &tenants);
    let mut expected: Expected = vec![(
        cluster.catalog.copy_name(ROTATED),
        cluster.source_data(ROTATED),
    )];
    let converge = measure::wait_all(
        "converge",
        &scenario.converging(&tenants),
        start,
        timeout,
        || controller.assert_running(),
        |namespace| scenario.converged(&cluster, namespace, &expected),
    )
    .await;
    let converged_memory = controller.memory();
    let quiet = Duration::from_secs(2);
    measure::wait_quiet(&api, quiet, timeout).await;
    let converge_requests = Tally::of(&api);
    let converge_cpu = Cpu::now(&parties).since(&cpu_start);
    let converge_registry_requests = cluster.registry_requests() - registry_before;
    let reconciles_converged = controller.reconciles().await;
    let converge_reconciles = reconciles_converged.since(&reconciles_before);

    // 2. Steady state.
    eprintln!("N={n}: converged in {converge:.1?}; steady window");
    let steady_window = Duration::from_secs(args.steady_secs);
    api.reset_counts();
    let cpu_start = Cpu::now(&parties);
    tokio::time::sleep(steady_window).await;
    let steady_requests = Tally::of(&api);
    let steady_cpu = Cpu::now(&parties).since(&cpu_start);
    let reconciles_steady = controller.reconciles().await;
    let steady_reconciles = reconciles_steady.since(&reconciles_converged);
    let steady_memory = controller.memory();
    let watched = measure::watched_objects(&cluster);
    let converged_copies = scenario::copies(&cluster);

    // 3. Rotation, or the copied-CSV switch flipped.
    eprintln!("N={n}: {}", scenario.change());
    api.reset_counts();
    let cpu_start = Cpu::now(&parties);
    let start = Instant::now();
    let fan_out = match scenario {
        Scenario::Subscriptions => {
            let rotated = cluster.rotate().await;
            for (copy, data) in &mut expected {
                if *copy == cluster.catalog.copy_name(ROTATED) {
                    *data = rotated.clone();
                }
            }
            measure::wait_all(
                "rotation",
                &tenants,
                start,
                timeout,
                || controller.assert_running(),
                |tenant| measure::copies_carry(&cluster, tenant, &expected),
            )
            .await
        }
        Scenario::AllNamespaces { copies } => {
            cluster.set_copies_disabled(copies).await;
            let flipped = Scenario::AllNamespaces { copies: !copies };
            measure::wait_all(
                flipped.change(),
                &tenants,
                start,
                timeout,
                || controller.assert_running(),
                |tenant| flipped.converged(&cluster, tenant, &expected),
            )
            .await
        }
    };
    measure::wait_quiet(&api, quiet, timeout).await;
    let rotation_requests = Tally::of(&api);
    let rotation_cpu = Cpu::now(&parties).since(&cpu_start);
    let rotation_reconciles = controller.reconciles().await.since(&reconciles_steady);

    let final_copies = scenario::copies(&cluster);
    let warnings = controller.warnings();
    let memory = controller.stop();
    RunReport {
        n,
        scenario,
        converged_copies,
        final_copies,
        concurrency: args.concurrency,
        resync: args.resync.clone(),
        converge,
        converge_requests,
        converge_cpu,
        converge_registry_requests,
        converge_reconciles,
        steady_window,
        steady_requests,
        steady_cpu,
        steady_reconciles,
        fan_out,
        rotation_requests,
        rotation_cpu,
        rotation_reconciles,
        idle_memory,
        converged_memory,
        steady_memory,
        memory,
        watched,
        warnings,
    }
}
