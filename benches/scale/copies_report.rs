//! The copied-CSV runs (`--copied-csvs`, issue 27) side by side: one row per N and switch
//! position, what the copies add at each N, the requests of each phase, and the targets: a
//! converged cluster makes no request, copies on or off; a copy costs what OLM's minimum is
//! (create, status, status hash: 3 writes) and is held as metadata only.

use crate::report::{RSS_TARGET, RunReport, VERBS, by_size, mb, phases, spread};
use crate::scenario::Scenario;

/// Writes one copy needs: create it, write its status, record the status's hash (a status
/// subresource ignores the status of a create, and the hash must follow the status).
pub const WRITES_PER_COPY: f64 = 3.0;
/// Resident memory one copy may add to the controller at steady state: its metadata-only
/// store entry (a few hashes and names), with the allocator's slack.
pub const RSS_PER_COPY: f64 = 2_000.0;

/// One row per N and switch position, then what copies add at each N, then each run's
/// requests by phase.
pub fn table(reports: &[&RunReport]) -> String {
    let mut text = String::from(
        "| namespaces | copied CSVs | runs | converge | requests / namespace to converge (get, list, watch, create, update, patch, delete) | steady state: writes, reads | switch flipped: time until every copy is gone (on) or made (off) | its requests (writes) | controller peak RSS | CPU to converge: opcat, API server |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    let secs = |digits: usize| move |v: f64| format!("{v:.digits$} s");
    let plain = |digits: usize| move |v: f64| format!("{v:.digits$}");
    let groups = by_size(reports);
    for (n, runs) in &groups {
        let verbs = VERBS
            .map(|verb| {
                spread(
                    runs,
                    |r| r.per_subscription(r.converge_requests.verb(verb)),
                    plain(2),
                )
            })
            .join(", ");
        text.push_str(&format!(
            "| {n} | {} | {} | {} | {} ({verbs}) | {}, {} | {} | {} ({}) | {} | {}, {} |\n",
            if copies(runs[0]) { "on" } else { "off" },
            runs.len(),
            spread(runs, |r| r.converge.as_secs_f64(), secs(1)),
            spread(
                runs,
                |r| r.per_subscription(r.converge_requests.total()),
                plain(2)
            ),
            spread(runs, |r| r.steady_requests.writes() as f64, plain(0)),
            spread(runs, |r| r.steady_requests.reads() as f64, plain(0)),
            spread(runs, |r| r.fan_out.as_secs_f64(), secs(2)),
            spread(runs, |r| r.rotation_requests.total() as f64, plain(0)),
            spread(runs, |r| r.rotation_requests.writes() as f64, plain(0)),
            spread(runs, |r| r.memory.peak as f64, |v| mb(v as u64)),
            spread(runs, |r| r.converge_cpu.controller.as_secs_f64(), secs(1)),
            spread(runs, |r| r.converge_cpu.api_server.as_secs_f64(), secs(1)),
        ));
    }
    text.push('\n');
    for (n, on, off) in pairs(reports) {
        let cost = Cost::of(on, off);
        text.push_str(&format!(
            "- N={n}: copies add {:.2} writes ({:.2} to CSVs) and {:.2} reads per copy ({} \
             copies), {:+.1} s to converge; RSS per copy {:.0} bytes at steady state ({} on, \
             {} off), {:.0} bytes at the peak ({} on, {} off)\n",
            cost.writes,
            cost.csv_writes,
            cost.reads,
            on.converged_copies,
            on.converge.as_secs_f64() - off.converge.as_secs_f64(),
            cost.steady_rss,
            mb(on.steady_memory.rss),
            mb(off.steady_memory.rss),
            cost.peak_rss,
            mb(on.memory.peak),
            mb(off.memory.peak),
        ));
    }
    for (_, runs) in &groups {
        text.push_str(&phases(runs[0]));
    }
    text
}

fn copies(run: &RunReport) -> bool {
    run.scenario == Scenario::AllNamespaces { copies: true }
}

/// The first run with copies on and the first with copies off of each N.
fn pairs<'a>(reports: &[&'a RunReport]) -> Vec<(usize, &'a RunReport, &'a RunReport)> {
    let mut sizes: Vec<usize> = reports.iter().map(|r| r.n).collect();
    sizes.dedup();
    sizes
        .into_iter()
        .filter_map(|n| {
            let first = |on: bool| {
                reports
                    .iter()
                    .copied()
                    .find(|r| r.n == n && copies(r) == on)
            };
            Some((n, first(true)?, first(false)?))
        })
        .collect()
}

/// What copies cost, per copy: the converge with copies on against the one with copies off.
struct Cost {
    /// Every write, and the writes to CSVs (the copies', and the original's status).
    writes: f64,
    csv_writes: f64,
    reads: f64,
    peak_rss: f64,
    /// Resident memory after the steady window.
    steady_rss: f64,
}

impl Cost {
    fn of(on: &RunReport, off: &RunReport) -> Self {
        let copies = on.converged_copies.max(1) as f64;
        let per = |on: u64, off: u64| (on as f64 - off as f64) / copies;
        let csv_writes =
            |run: &RunReport| run.converge_requests.writes_to("clusterserviceversions");
        Self {
            writes: per(
                on.converge_requests.writes(),
                off.converge_requests.writes(),
            ),
            csv_writes: per(csv_writes(on), csv_writes(off)),
            reads: per(on.converge_requests.reads(), off.converge_requests.reads()),
            peak_rss: per(on.memory.peak, off.memory.peak),
            steady_rss: per(on.steady_memory.rss, off.steady_memory.rss),
        }
    }
}

/// The copied-CSV targets of each run: `(run, target, met)`.
pub fn targets(reports: &[&RunReport]) -> Vec<(String, String, bool)> {
    let mut checks = Vec::new();
    for r in reports {
        let run = format!("N={} ({})", r.n, r.scenario);
        checks.push((
            run.clone(),
            format!(
                "steady state: {} writes, {} reads = 0, 0",
                r.steady_requests.writes(),
                r.steady_requests.reads()
            ),
            r.steady_requests.total() == 0,
        ));
        checks.push((
            run,
            format!("controller peak RSS {} ≤ 400 MB", mb(r.memory.peak)),
            r.memory.peak <= RSS_TARGET,
        ));
    }
    for (n, on, off) in pairs(reports) {
        let cost = Cost::of(on, off);
        let run = format!("N={n}");
        checks.push((
            run.clone(),
            format!(
                "writes to CSVs per copy {:.2} ≤ {WRITES_PER_COPY}",
                cost.csv_writes
            ),
            cost.csv_writes <= WRITES_PER_COPY,
        ));
        checks.push((
            run,
            format!(
                "RSS per copy at steady state {:.0} bytes ≤ {RSS_PER_COPY}",
                cost.steady_rss
            ),
            cost.steady_rss <= RSS_PER_COPY,
        ));
    }
    checks
}

/// What the smoke run asserts of a copied-CSV run: no request at steady state; the copies
/// there (on) or not (off) after converging and the other way after the switch; the switch's
/// writes to CSVs exactly one delete per copy (on → off) or [`WRITES_PER_COPY`] per copy made
/// (off → on): a write planned from a store that had not shown the last ones yet would add
/// some; no WARN or ERROR line from the copied-CSV reconciler.
pub fn smoke_check(report: &RunReport) {
    let scenario = report.scenario;
    assert_eq!(
        report.steady_requests.total(),
        0,
        "smoke ({scenario}): requests at steady state:\n{}",
        report.steady_requests
    );
    let on = copies(report);
    let (with, without) = if on {
        (report.converged_copies, report.final_copies)
    } else {
        (report.final_copies, report.converged_copies)
    };
    assert!(
        with >= report.n && without == 0,
        "smoke ({scenario}): {} copied CSVs after converging, {} after the switch",
        report.converged_copies,
        report.final_copies
    );
    let writes = report.rotation_requests.writes_to("clusterserviceversions");
    let expected = if on { with } else { with * 3 } as u64;
    assert_eq!(
        writes, expected,
        "smoke ({scenario}): CSV writes when the switch flipped for {with} copies:\n{}",
        report.rotation_requests
    );
    let copies_warnings: Vec<&String> = report
        .warnings
        .iter()
        .filter(|line| line.contains("copied_csvs"))
        .collect();
    assert!(
        copies_warnings.is_empty(),
        "smoke ({scenario}): WARN/ERROR lines of the copied-CSV reconciler:\n{copies_warnings:?}"
    );
}
