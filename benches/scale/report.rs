//! Results of one run, the Markdown tables of all runs (the spread over rounds of each N) and
//! issue 12's targets.

use std::collections::BTreeMap;
use std::time::Duration;

use fake_apiserver::Verb;

use crate::controller::Memory;
use crate::cpu::Cpu;
use crate::measure::{Reconciles, Tally};
use crate::scenario::Scenario;

/// Issue 12 targets.
pub const CONVERGE_1000_TARGET: Duration = Duration::from_secs(15);
pub const REQUESTS_PER_SUBSCRIPTION_TARGET: f64 = 40.0;
pub const STEADY_PER_SUBSCRIPTION_TARGET: f64 = 1.0;
pub const FAN_OUT_TARGET: Duration = Duration::from_secs(10);
pub const RSS_TARGET: u64 = 400 * 1000 * 1000;

pub const VERBS: [Verb; 7] = [
    Verb::Get,
    Verb::List,
    Verb::Watch,
    Verb::Create,
    Verb::Update,
    Verb::Patch,
    Verb::Delete,
];

/// What one run measured.
pub struct RunReport {
    /// Subscriptions, one per namespace; or namespaces of the AllNamespaces operator.
    pub n: usize,
    pub scenario: Scenario,
    /// Copied CSVs in the cluster after the steady window, and at the end.
    pub converged_copies: usize,
    pub final_copies: usize,
    pub concurrency: u16,
    pub resync: String,
    /// From the first object created until every namespace is installed.
    pub converge: Duration,
    /// The controller's requests until it stopped writing after convergence.
    pub converge_requests: Tally,
    pub converge_cpu: Cpu,
    /// Requests the registry answered while converging (auth probes, manifests, blobs).
    pub converge_registry_requests: usize,
    /// Reconciles per controller in each phase.
    pub converge_reconciles: Reconciles,
    pub steady_window: Duration,
    pub steady_requests: Tally,
    pub steady_cpu: Cpu,
    pub steady_reconciles: Reconciles,
    /// From the rotating PATCH until every copy carries the new data.
    pub fan_out: Duration,
    /// The controller's requests until it stopped writing after the rotation.
    pub rotation_requests: Tally,
    pub rotation_cpu: Cpu,
    pub rotation_reconciles: Reconciles,
    /// Memory once ready in the empty cluster, after convergence, after the steady window, and
    /// at the end (peak = `VmHWM`).
    pub idle_memory: Memory,
    pub converged_memory: Memory,
    pub steady_memory: Memory,
    pub memory: Memory,
    /// Objects the controller's watches select, by kind, at steady state.
    pub watched: BTreeMap<&'static str, usize>,
    /// WARN/ERROR log lines.
    pub warnings: Vec<String>,
}

impl RunReport {
    pub fn per_subscription(&self, count: u64) -> f64 {
        count as f64 / self.n as f64
    }

    /// Requests per Subscription per resync period at steady state.
    pub fn steady_per_subscription(&self) -> f64 {
        let periods = self.steady_window.as_secs_f64() / parse_duration(&self.resync).as_secs_f64();
        self.per_subscription(self.steady_requests.total()) / periods
    }

    /// Resident memory the cluster's objects added, per namespace (steady state over idle).
    pub fn rss_per_namespace(&self) -> f64 {
        self.steady_memory.rss.saturating_sub(self.idle_memory.rss) as f64 / self.n as f64
    }

    /// Resident memory added per object the watches select.
    pub fn rss_per_object(&self) -> f64 {
        let objects: usize = self.watched.values().sum();
        self.steady_memory.rss.saturating_sub(self.idle_memory.rss) as f64 / objects.max(1) as f64
    }

    /// Everything measured, with the request breakdowns.
    pub fn details(&self) -> String {
        let cpu = |cpu: &Cpu| {
            format!(
                "CPU opcat {:.1} s, API server {:.1} s, registry {:.1} s",
                cpu.controller.as_secs_f64(),
                cpu.api_server.as_secs_f64(),
                cpu.registry.as_secs_f64()
            )
        };
        let mut text = format!(
            "== N = {} ({}; concurrency {}, resync {}) ==\n\
             idle: RSS {}\n\
             converge: {:.1} s, {} requests ({:.1} per {unit}), {}, RSS {} (peak {})\n{}\
             steady ({} s window): {} writes, {} reads ({:.2} requests per {unit} per resync), {}, RSS {} (peak {})\n{}\
             {}: {:.2} s, {} requests ({} writes), {}\n{}\
             end: RSS {}, peak {}; {:.1} kB per namespace, {:.2} kB per watched object ({:?}); {} copied CSVs after the steady window; {} WARN/ERROR log lines\n",
            self.n,
            self.scenario,
            self.concurrency,
            self.resync,
            mb(self.idle_memory.rss),
            self.converge.as_secs_f64(),
            self.converge_requests.total(),
            self.per_subscription(self.converge_requests.total()),
            cpu(&self.converge_cpu),
            mb(self.converged_memory.rss),
            mb(self.converged_memory.peak),
            self.converge_requests,
            self.steady_window.as_secs(),
            self.steady_requests.writes(),
            self.steady_requests.reads(),
            self.steady_per_subscription(),
            cpu(&self.steady_cpu),
            mb(self.steady_memory.rss),
            mb(self.steady_memory.peak),
            self.steady_requests,
            self.scenario.change(),
            self.fan_out.as_secs_f64(),
            self.rotation_requests.total(),
            self.rotation_requests.writes(),
            cpu(&self.rotation_cpu),
            self.rotation_requests,
            mb(self.memory.rss),
            mb(self.memory.peak),
            self.rss_per_namespace() / 1e3,
            self.rss_per_object() / 1e3,
            self.watched,
            self.converged_copies,
            self.warnings.len(),
            unit = self.scenario.unit(),
        );
        text.push_str(&format!(
            "reconciles per {}: converge {}; steady {}; {} {}\n",
            self.scenario.unit(),
            self.converge_reconciles.per_subscription(self.n),
            self.steady_reconciles.per_subscription(self.n),
            self.scenario.change(),
            self.rotation_reconciles.per_subscription(self.n),
        ));
        for line in self.warnings.iter().take(10) {
            text.push_str("    ");
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// `min–max` of the runs (one value when they agree to the shown precision).
pub fn spread(
    runs: &[&RunReport],
    value: impl Fn(&RunReport) -> f64,
    show: impl Fn(f64) -> String,
) -> String {
    let values: Vec<f64> = runs.iter().map(|run| value(run)).collect();
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let (min, max) = (show(min), show(max));
    if min == max {
        min
    } else {
        format!("{min}–{max}")
    }
}

/// Runs grouped by N and scenario, in the order first run.
pub fn by_size<'a>(reports: &[&'a RunReport]) -> Vec<(usize, Vec<&'a RunReport>)> {
    let mut groups: Vec<(usize, Vec<&RunReport>)> = Vec::new();
    for &report in reports {
        let same =
            |runs: &Vec<&RunReport>| runs[0].n == report.n && runs[0].scenario == report.scenario;
        match groups.iter_mut().find(|(_, runs)| same(runs)) {
            Some((_, runs)) => runs.push(report),
            None => groups.push((report.n, vec![report])),
        }
    }
    groups
}

/// The runs of each kind of scenario.
fn split(reports: &[RunReport]) -> (Vec<&RunReport>, Vec<&RunReport>) {
    reports
        .iter()
        .partition(|report| report.scenario == Scenario::Subscriptions)
}

/// The tables of every scenario run.
pub fn tables(reports: &[RunReport]) -> String {
    let (subscriptions, copies) = split(reports);
    let mut text = String::new();
    if !subscriptions.is_empty() {
        text.push_str(&table(&subscriptions));
    }
    if !copies.is_empty() {
        text.push_str(&crate::copies_report::table(&copies));
    }
    text
}

/// The targets of every run: `(run, target, met)`.
pub fn all_targets(reports: &[RunReport]) -> Vec<(String, String, bool)> {
    let (subscriptions, copies) = split(reports);
    let mut checks = targets(&subscriptions);
    checks.extend(crate::copies_report::targets(&copies));
    checks
}

/// The README tables: one row per N with the spread over its runs, then the requests of each
/// phase by verb and resource (first run of each N).
fn table(reports: &[&RunReport]) -> String {
    let mut text = String::from(
        "| Subscriptions | runs | converge | requests / Subscription to converge (get, list, watch, create, update, patch, delete) | steady state: requests / Subscription / resync period (writes) | rotation fan-out | rotation requests (writes) | controller peak RSS | RSS / namespace | CPU to converge: opcat, API server, registry |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let secs = |digits: usize| move |v: f64| format!("{v:.digits$} s");
    let plain = |digits: usize| move |v: f64| format!("{v:.digits$}");
    for (n, runs) in by_size(reports) {
        let verbs = VERBS
            .map(|verb| {
                spread(
                    &runs,
                    |r| r.per_subscription(r.converge_requests.verb(verb)),
                    plain(1),
                )
            })
            .join(", ");
        text.push_str(&format!(
            "| {n} | {} | {} | {} ({verbs}) | {} ({}) | {} | {} ({}) | {} | {} | {}, {}, {} |\n",
            runs.len(),
            spread(&runs, |r| r.converge.as_secs_f64(), secs(1)),
            spread(
                &runs,
                |r| r.per_subscription(r.converge_requests.total()),
                plain(1)
            ),
            spread(&runs, RunReport::steady_per_subscription, plain(2)),
            spread(&runs, |r| r.steady_requests.writes() as f64, plain(0)),
            spread(&runs, |r| r.fan_out.as_secs_f64(), secs(2)),
            spread(&runs, |r| r.rotation_requests.total() as f64, plain(0)),
            spread(&runs, |r| r.rotation_requests.writes() as f64, plain(0)),
            spread(&runs, |r| r.memory.peak as f64, |v| mb(v as u64)),
            spread(
                &runs,
                |r| r.rss_per_namespace() / 1e3,
                |v| format!("{v:.1} kB")
            ),
            spread(&runs, |r| r.converge_cpu.controller.as_secs_f64(), secs(1)),
            spread(&runs, |r| r.converge_cpu.api_server.as_secs_f64(), secs(1)),
            spread(&runs, |r| r.converge_cpu.registry.as_secs_f64(), secs(1)),
        ));
    }
    for (_, runs) in by_size(reports) {
        text.push_str(&phases(runs[0]));
    }
    text
}

/// The requests of each phase by verb and resource.
pub fn phases(run: &RunReport) -> String {
    let n = run.n;
    let mut rows: BTreeMap<(Verb, String), [u64; 3]> = BTreeMap::new();
    for (phase, tally) in [
        &run.converge_requests,
        &run.steady_requests,
        &run.rotation_requests,
    ]
    .into_iter()
    .enumerate()
    {
        for (key, count) in tally.iter() {
            rows.entry(key.clone()).or_default()[phase] += count;
        }
    }
    let mut text = format!(
        "\nN = {n} ({}), first run: the controller's requests by verb and resource\n\n\
         | verb | resource | converge | steady ({} s) | {} |\n|---|---|---|---|---|\n",
        run.scenario,
        run.steady_window.as_secs(),
        run.scenario.change(),
    );
    for ((verb, resource), [converge, steady, rotation]) in &rows {
        text.push_str(&format!(
            "| {verb} | {resource} | {converge} | {steady} | {rotation} |\n"
        ));
    }
    let totals = [
        &run.converge_requests,
        &run.steady_requests,
        &run.rotation_requests,
    ]
    .map(|tally| tally.total().to_string());
    text.push_str(&format!("| all | | {} |\n", totals.join(" | ")));
    text.push_str(&format!(
        "\nRegistry requests to converge: {} ({:.2} per {})\n",
        run.converge_registry_requests,
        run.converge_registry_requests as f64 / n as f64,
        run.scenario.unit(),
    ));
    text.push_str(&format!(
        "\nCPU time (opcat / API server / registry): converge {:.1} s / {:.1} s / {:.1} s; steady {:.1} s / {:.1} s; {} {:.1} s / {:.1} s\n",
        run.converge_cpu.controller.as_secs_f64(),
        run.converge_cpu.api_server.as_secs_f64(),
        run.converge_cpu.registry.as_secs_f64(),
        run.steady_cpu.controller.as_secs_f64(),
        run.steady_cpu.api_server.as_secs_f64(),
        run.scenario.change(),
        run.rotation_cpu.controller.as_secs_f64(),
        run.rotation_cpu.api_server.as_secs_f64(),
    ));
    text
}

/// Issue 12 targets for each run: `(run, target, met)`.
fn targets(reports: &[&RunReport]) -> Vec<(String, String, bool)> {
    let mut checks = Vec::new();
    let smallest = reports.iter().min_by_key(|r| r.n);
    for &r in reports {
        let run = format!("N={}", r.n);
        if r.n == 1000 {
            checks.push((
                run.clone(),
                format!("converge {:.1} s ≤ 15 s", r.converge.as_secs_f64()),
                r.converge <= CONVERGE_1000_TARGET,
            ));
        }
        let per = r.per_subscription(r.converge_requests.total());
        checks.push((
            run.clone(),
            format!("requests per Subscription to converge {per:.1} ≤ 40"),
            per <= REQUESTS_PER_SUBSCRIPTION_TARGET,
        ));
        checks.push((
            run.clone(),
            format!(
                "steady state: {:.2} requests per Subscription per resync period ≤ 1, {} writes = 0",
                r.steady_per_subscription(),
                r.steady_requests.writes()
            ),
            r.steady_per_subscription() <= STEADY_PER_SUBSCRIPTION_TARGET
                && r.steady_requests.writes() == 0,
        ));
        checks.push((
            run.clone(),
            format!("rotation fan-out {:.2} s ≤ 10 s", r.fan_out.as_secs_f64()),
            r.fan_out <= FAN_OUT_TARGET,
        ));
        checks.push((
            run.clone(),
            format!("controller peak RSS {} ≤ 400 MB", mb(r.memory.peak)),
            r.memory.peak <= RSS_TARGET,
        ));
        if let Some(small) = smallest.filter(|small| small.n < r.n) {
            let per_small = small.converge.as_secs_f64() / small.n as f64;
            let per_large = r.converge.as_secs_f64() / r.n as f64;
            checks.push((
                run.clone(),
                format!(
                    "converge time per Subscription {:.2} ms vs {:.2} ms at N={} (linear or better)",
                    per_large * 1e3,
                    per_small * 1e3,
                    small.n
                ),
                // 10% of noise allowed on the shared machine.
                per_large <= per_small * 1.1,
            ));
        }
    }
    checks
}

/// `90s`, `1m`, `500ms` (what the benchmark passes to `opcat run --resync`).
pub fn parse_duration(text: &str) -> Duration {
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let value: u64 = digits.parse().unwrap_or(0);
    match &text[digits.len()..] {
        "ms" => Duration::from_millis(value),
        "m" => Duration::from_secs(value * 60),
        "h" => Duration::from_secs(value * 3600),
        _ => Duration::from_secs(value),
    }
}

/// Bytes as MB (10^6, as the figures).
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
