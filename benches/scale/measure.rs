//! What the benchmark observes: request tallies from the API server's counters, and
//! convergence read straight from its store (not counted as requests).

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use fake_apiserver::{FakeApiServer, RequestCounts, Verb};
use k8s_openapi::ByteString;
use serde_json::Value;

use crate::cluster::{Cluster, SUBSCRIPTION};

/// Requests by verb and resource (`secrets`, `subscriptions/status`).
#[derive(Clone, Debug, Default)]
pub struct Tally(BTreeMap<(Verb, String), u64>);

impl Tally {
    /// The server's counters now.
    pub fn of(api: &FakeApiServer) -> Self {
        Self::from_counts(&api.request_counts())
    }

    fn from_counts(counts: &RequestCounts) -> Self {
        let mut tally = BTreeMap::new();
        for (key, count) in counts.iter() {
            let mut resource = if key.resource.is_empty() {
                "(discovery)".to_owned()
            } else {
                key.resource.clone()
            };
            if !key.subresource.is_empty() {
                resource.push('/');
                resource.push_str(&key.subresource);
            }
            *tally.entry((key.verb, resource)).or_default() += count;
        }
        Self(tally)
    }

    /// Removes requests the benchmark itself made.
    pub fn without(mut self, verb: Verb, resource: &str, count: u64) -> Self {
        let key = (verb, resource.to_owned());
        let entry = self.0.entry(key.clone()).or_default();
        *entry = entry
            .checked_sub(count)
            .unwrap_or_else(|| panic!("fewer than {count} {verb} {resource} requests counted"));
        if *entry == 0 {
            self.0.remove(&key);
        }
        self
    }

    /// Totals by verb.
    pub fn by_verb(&self) -> BTreeMap<Verb, u64> {
        let mut verbs = BTreeMap::new();
        for ((verb, _), count) in &self.0 {
            *verbs.entry(*verb).or_default() += count;
        }
        verbs
    }

    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    pub fn writes(&self) -> u64 {
        self.sum(|verb| verb.is_write())
    }

    pub fn reads(&self) -> u64 {
        self.sum(|verb| !verb.is_write())
    }

    /// Write requests by resource.
    pub fn writes_by_resource(&self) -> BTreeMap<String, u64> {
        let mut resources = BTreeMap::new();
        for ((verb, resource), count) in &self.0 {
            if verb.is_write() {
                *resources.entry(format!("{verb} {resource}")).or_default() += count;
            }
        }
        resources
    }

    fn sum(&self, pred: impl Fn(Verb) -> bool) -> u64 {
        self.0
            .iter()
            .filter(|((verb, _), _)| pred(*verb))
            .map(|(_, count)| count)
            .sum()
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for ((verb, resource), count) in &self.0 {
            writeln!(f, "    {verb:<7} {resource:<40} {count:>8}")?;
        }
        Ok(())
    }
}

/// The data every copy must carry: copy name → the source's data.
pub type Expected = Vec<(String, BTreeMap<String, ByteString>)>;

/// Whether the tenant namespace is installed: its Subscription `AtLatestKnown` with an
/// installed CSV, that CSV `Succeeded`, and every copy present with the expected data.
pub fn installed(cluster: &Cluster, namespace: &str, expected: &Expected) -> bool {
    let api = cluster.api();
    let Some(subscription) = api.raw(
        "operators.coreos.com",
        "v1alpha1",
        "subscriptions",
        namespace,
        SUBSCRIPTION,
    ) else {
        return false;
    };
    if subscription
        .pointer("/status/state")
        .and_then(Value::as_str)
        != Some("AtLatestKnown")
    {
        return false;
    }
    let Some(csv) = subscription
        .pointer("/status/installedCSV")
        .and_then(Value::as_str)
    else {
        return false;
    };
    let phase = api
        .raw(
            "operators.coreos.com",
            "v1alpha1",
            "clusterserviceversions",
            namespace,
            csv,
        )
        .and_then(|csv| {
            csv.pointer("/status/phase")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    phase.as_deref() == Some("Succeeded") && copies_carry(cluster, namespace, expected)
}

/// Whether every copy in `namespace` exists with the expected data.
pub fn copies_carry(cluster: &Cluster, namespace: &str, expected: &Expected) -> bool {
    expected.iter().all(|(copy, data)| {
        cluster
            .api()
            .raw("", "v1", "secrets", namespace, copy)
            .and_then(|secret| secret.get("data").cloned())
            .is_some_and(|live| live == serde_json::to_value(data).unwrap_or_default())
    })
}

/// Polls every 100 ms until `done` holds for every namespace; returns the time from `start`.
/// Panics after `timeout` naming one namespace still pending.
pub async fn wait_all(
    what: &str,
    namespaces: &[String],
    start: Instant,
    timeout: Duration,
    mut alive: impl FnMut(),
    done: impl Fn(&str) -> bool,
) -> Duration {
    let mut pending: Vec<&String> = namespaces.iter().collect();
    loop {
        pending.retain(|namespace| !done(namespace));
        if pending.is_empty() {
            return start.elapsed();
        }
        alive();
        assert!(
            start.elapsed() < timeout,
            "{what}: {} of {} namespaces still pending after {timeout:?}, e.g. {}",
            pending.len(),
            namespaces.len(),
            pending[0]
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until no write request reaches the server for `quiet`; returns how long it took.
/// Panics after `limit`.
pub async fn wait_quiet(api: &FakeApiServer, quiet: Duration, limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let before = api.request_counts().writes();
        tokio::time::sleep(quiet).await;
        let after = api.request_counts();
        if after.writes() == before {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "still writing after {limit:?}:\n{after}"
        );
    }
}
