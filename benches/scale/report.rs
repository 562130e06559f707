//! Results of one run and the Markdown table of all runs.

use std::time::Duration;

use fake_apiserver::Verb;

use crate::controller::Memory;
use crate::measure::Tally;

/// Issue 6 targets.
pub const FAN_OUT_TARGET: Duration = Duration::from_secs(5);
pub const RSS_TARGET: u64 = 150 * 1000 * 1000;

/// What one run measured.
pub struct RunReport {
    /// Subscriptions, one per namespace.
    pub n: usize,
    pub concurrency: u16,
    pub resync: String,
    /// From the first object created until every namespace is installed.
    pub converge: Duration,
    /// Requests until the controller stopped writing after convergence.
    pub converge_requests: Tally,
    pub steady_window: Duration,
    pub steady_requests: Tally,
    /// From the rotating PATCH until every copy carries the new data.
    pub fan_out: Duration,
    /// Requests until the controller stopped writing after the rotation (the PATCH excluded).
    pub rotation_requests: Tally,
    /// Memory after convergence, after the steady window, and at the end (peak = `VmHWM`).
    pub converged_memory: Memory,
    pub steady_memory: Memory,
    pub memory: Memory,
    /// WARN/ERROR log lines.
    pub warnings: Vec<String>,
}

impl RunReport {
    /// Reads per minute during the steady window.
    pub fn steady_reads_per_minute(&self) -> f64 {
        self.steady_requests.reads() as f64 * 60.0 / self.steady_window.as_secs_f64()
    }

    /// Everything measured, with the request breakdowns.
    pub fn details(&self) -> String {
        let mut text = format!(
            "== N = {} (concurrency {}, resync {}) ==\n\
             converge: {:.1} s, {} requests ({:.1} per Subscription), RSS {} (peak {})\n{}\
             steady ({} s window): {} writes, {} reads ({:.0}/min), RSS {} (peak {})\n{}\
             rotation fan-out: {:.2} s, {} requests ({} writes)\n{}\
             end: RSS {}, peak {}; {} WARN/ERROR log lines\n",
            self.n,
            self.concurrency,
            self.resync,
            self.converge.as_secs_f64(),
            self.converge_requests.total(),
            self.converge_requests.total() as f64 / self.n as f64,
            mb(self.converged_memory.rss),
            mb(self.converged_memory.peak),
            self.converge_requests,
            self.steady_window.as_secs(),
            self.steady_requests.writes(),
            self.steady_requests.reads(),
            self.steady_reads_per_minute(),
            mb(self.steady_memory.rss),
            mb(self.steady_memory.peak),
            self.steady_requests,
            self.fan_out.as_secs_f64(),
            self.rotation_requests.total(),
            self.rotation_requests.writes(),
            self.rotation_requests,
            mb(self.memory.rss),
            mb(self.memory.peak),
            self.warnings.len(),
        );
        for line in self.warnings.iter().take(10) {
            text.push_str("    ");
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    fn per_subscription(&self, verb: Verb) -> String {
        let count = self
            .converge_requests
            .by_verb()
            .get(&verb)
            .copied()
            .unwrap_or(0);
        format!("{:.1}", count as f64 / self.n as f64)
    }

    fn rotation_writes(&self) -> String {
        self.rotation_requests
            .writes_by_resource()
            .iter()
            .map(|(what, count)| format!("{count} {what}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The README table.
pub fn table(reports: &[RunReport]) -> String {
    let mut text = String::from(
        "| Subscriptions (namespaces) | converge wall time | API requests / Subscription: total (get, list, watch, create, update, patch, delete) | steady state: writes in window | steady reads / min | rotation fan-out | rotation writes | controller peak RSS |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for r in reports {
        let verbs = [
            Verb::Get,
            Verb::List,
            Verb::Watch,
            Verb::Create,
            Verb::Update,
            Verb::Patch,
            Verb::Delete,
        ]
        .map(|verb| r.per_subscription(verb))
        .join(", ");
        text.push_str(&format!(
            "| {} | {:.1} s | {:.1} ({verbs}) | {} in {} s | {:.0} | {:.2} s | {} | {} |\n",
            r.n,
            r.converge.as_secs_f64(),
            r.converge_requests.total() as f64 / r.n as f64,
            r.steady_requests.writes(),
            r.steady_window.as_secs(),
            r.steady_reads_per_minute(),
            r.fan_out.as_secs_f64(),
            r.rotation_writes(),
            mb(r.memory.peak),
        ));
    }
    text
}

/// Issue 6 targets for each run: `(run, target, met)`.
pub fn targets(reports: &[RunReport]) -> Vec<(usize, String, bool)> {
    let mut checks = Vec::new();
    for r in reports {
        checks.push((
            r.n,
            format!("rotation fan-out {:.2} s ≤ 5 s", r.fan_out.as_secs_f64()),
            r.fan_out <= FAN_OUT_TARGET,
        ));
        checks.push((
            r.n,
            format!("steady-state writes {} = 0", r.steady_requests.writes()),
            r.steady_requests.writes() == 0,
        ));
        checks.push((
            r.n,
            format!("controller peak RSS {} ≤ 150 MB", mb(r.memory.peak)),
            r.memory.peak <= RSS_TARGET,
        ));
    }
    checks
}

/// Bytes as MB (10^6, as the figures).
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
