//! What the benchmark observes: request tallies from the API server's counters, and
//! convergence read straight from its store (not counted as requests).

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use fake_apiserver::{FakeApiServer, LoggedRequest, Verb};
use k8s_openapi::ByteString;
use serde_json::Value;

use opcat::metrics::controllers;

use crate::cluster::{BENCH_AGENT, Cluster, SUBSCRIPTION};
use crate::support;

/// The controller's requests by verb and resource (`secrets`, `subscriptions/status`).
#[derive(Clone, Debug, Default)]
pub struct Tally(BTreeMap<(Verb, String), u64>);

impl Tally {
    /// The controller's requests in the server's request log since the last reset (which this
    /// empties): every request but the benchmark's own ([`BENCH_AGENT`]). Objects a user would
    /// create are seeded into the store directly and make no requests.
    pub fn of(api: &FakeApiServer) -> Self {
        Self::from_log(&api.take_request_log())
    }

    fn from_log(log: &[LoggedRequest]) -> Self {
        let mut tally = BTreeMap::new();
        for request in log
            .iter()
            .filter(|request| request.agent.as_deref() != Some(BENCH_AGENT))
        {
            let key = &request.key;
            let mut resource = if key.resource.is_empty() {
                "(discovery)".to_owned()
            } else {
                key.resource.clone()
            };
            if !key.subresource.is_empty() {
                resource.push('/');
                resource.push_str(&key.subresource);
            }
            *tally.entry((key.verb, resource)).or_default() += 1;
        }
        Self(tally)
    }

    /// Every `(verb, resource)` with its count.
    pub fn iter(&self) -> impl Iterator<Item = (&(Verb, String), u64)> {
        self.0.iter().map(|(key, count)| (key, *count))
    }

    /// Requests with `verb`.
    pub fn verb(&self, verb: Verb) -> u64 {
        self.by_verb().get(&verb).copied().unwrap_or(0)
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

    /// Writes to `resource` and its subresources.
    pub fn writes_to(&self, resource: &str) -> u64 {
        self.0
            .iter()
            .filter(|((verb, key), _)| {
                verb.is_write()
                    && (key == resource
                        || key
                            .strip_prefix(resource)
                            .is_some_and(|rest| rest.starts_with('/')))
            })
            .map(|(_, count)| count)
            .sum()
    }

    pub fn writes(&self) -> u64 {
        self.sum(|verb| verb.is_write())
    }

    pub fn reads(&self) -> u64 {
        self.sum(|verb| !verb.is_write())
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
/// Reads in place ([`FakeApiServer::inspect`]): polling copies nothing.
pub fn installed(cluster: &Cluster, namespace: &str, expected: &Expected) -> bool {
    let api = cluster.api();
    let group = "operators.coreos.com";
    let csv = api
        .inspect(group, "subscriptions", namespace, SUBSCRIPTION, |sub| {
            let state = sub.pointer("/status/state").and_then(Value::as_str);
            let csv = sub.pointer("/status/installedCSV").and_then(Value::as_str);
            csv.filter(|_| state == Some("AtLatestKnown"))
                .map(str::to_owned)
        })
        .flatten();
    let Some(csv) = csv else {
        return false;
    };
    let succeeded = api.inspect(group, "clusterserviceversions", namespace, &csv, |csv| {
        csv.pointer("/status/phase").and_then(Value::as_str) == Some("Succeeded")
    });
    succeeded == Some(true) && copies_carry(cluster, namespace, expected)
}

/// Whether every copy in `namespace` exists with the expected data: the same keys, each the
/// same JSON document (a copy holds the source's entries its images need, each whole, written
/// sorted and compact: issue 23; the bench's source holds only entries the operator needs).
pub fn copies_carry(cluster: &Cluster, namespace: &str, expected: &Expected) -> bool {
    expected.iter().all(|(copy, data)| {
        cluster
            .api()
            .inspect("", "secrets", namespace, copy, |secret| {
                let Some(stored) = secret.get("data").and_then(Value::as_object) else {
                    return false;
                };
                stored.len() == data.len()
                    && data.iter().all(|(key, bytes)| {
                        let want = serde_json::from_slice::<Value>(&bytes.0).ok();
                        let have = stored
                            .get(key)
                            .and_then(Value::as_str)
                            .and_then(|text| BASE64.decode(text).ok())
                            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok());
                        want.is_some() && want == have
                    })
            })
            .unwrap_or(false)
    })
}

/// Polls until `done` holds for every namespace; returns the time from `start`. Panics after
/// `timeout` naming one namespace still pending. Polls every 100 ms, or twice as long as the
/// last poll took: a poll reads every pending namespace under the API server's lock, and at
/// 10,000 namespaces back-to-back polls would take a core and the lock from what is measured.
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
        let poll = Instant::now();
        pending.retain(|namespace| !done(namespace));
        let interval = Duration::from_millis(100).max(poll.elapsed() * 2);
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
        tokio::time::sleep(interval).await;
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

/// How many objects the controller's watches select, by kind: every Namespace, Subscription,
/// OperatorGroup and CatalogSource, the pull-secret copies, and what opcat created (labelled
/// `app.kubernetes.io/managed-by=opcat`). The denominator of "RSS per cached object".
pub fn watched_objects(cluster: &Cluster) -> BTreeMap<&'static str, usize> {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
    use opcat::api::{
        CatalogSource, ClusterServiceVersion, InstallPlan, MANAGED_LABEL, OperatorGroup,
        Subscription,
    };
    use opcat::bundle::ownership::{MANAGED_BY_LABEL, MANAGED_BY_VALUE};

    fn count<K>(cluster: &Cluster, keep: impl Fn(&K) -> bool) -> usize
    where
        K: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        cluster
            .api()
            .list::<K>(None)
            .iter()
            .filter(|o| keep(o))
            .count()
    }
    fn ours<K: kube::Resource>(object: &K) -> bool {
        object
            .meta()
            .labels
            .as_ref()
            .and_then(|labels| labels.get(MANAGED_BY_LABEL))
            .is_some_and(|value| value == MANAGED_BY_VALUE)
    }
    let copy = |secret: &Secret| {
        secret
            .metadata
            .labels
            .as_ref()
            .is_some_and(|labels| labels.contains_key(MANAGED_LABEL))
    };
    BTreeMap::from([
        ("namespaces", count::<Namespace>(cluster, |_| true)),
        ("subscriptions", count::<Subscription>(cluster, |_| true)),
        ("operatorgroups", count::<OperatorGroup>(cluster, |_| true)),
        ("catalogsources", count::<CatalogSource>(cluster, |_| true)),
        (
            "clusterserviceversions",
            count::<ClusterServiceVersion>(cluster, ours),
        ),
        ("installplans", count::<InstallPlan>(cluster, ours)),
        ("deployments", count::<Deployment>(cluster, ours)),
        ("secrets (copies)", count::<Secret>(cluster, copy)),
        (
            "serviceaccounts (opcat's)",
            count::<ServiceAccount>(cluster, ours),
        ),
        ("roles", count::<Role>(cluster, ours)),
        ("rolebindings", count::<RoleBinding>(cluster, ours)),
        ("clusterroles", count::<ClusterRole>(cluster, ours)),
        (
            "clusterrolebindings",
            count::<ClusterRoleBinding>(cluster, ours),
        ),
    ])
}

/// Reconciles finished per controller (opcat's `opcat_reconcile_total`), to see how many times
/// each object was looked at, not only what that cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reconciles(pub BTreeMap<&'static str, u64>);

impl Reconciles {
    /// The counter of every controller in opcat's `/metrics` text.
    pub fn parse(metrics: &str) -> Self {
        let counts = controllers::ALL
            .iter()
            .filter_map(|&controller| {
                let series = format!("opcat_reconcile_total{{controller=\"{controller}\"}}");
                let count = support::metric_value(metrics, &series)?;
                Some((controller, count as u64))
            })
            .collect();
        Self(counts)
    }

    /// The reconciles since `earlier`.
    pub fn since(&self, earlier: &Self) -> Self {
        let counts = self
            .0
            .iter()
            .map(|(&controller, count)| {
                let before = earlier.0.get(controller).copied().unwrap_or(0);
                (controller, count.saturating_sub(before))
            })
            .collect();
        Self(counts)
    }

    /// `controller per-Subscription, …` for `n` Subscriptions.
    pub fn per_subscription(&self, n: usize) -> String {
        self.0
            .iter()
            .map(|(controller, count)| format!("{controller} {:.2}", *count as f64 / n as f64))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
