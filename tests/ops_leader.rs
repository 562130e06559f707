//! Leader election with two replicas in one process against one in-memory API server: one
//! leads, the other stands by; a dead or cut-off leader is replaced and stops writing before the
//! lease can be taken; a graceful stop hands the lease over at once.
//!
//! Each replica runs a small "work" term instead of the reconcilers: it creates the ConfigMaps
//! `job-0..N` one after another (100 ms each), recording when its term starts and ends and
//! every write, so the tests can check that terms of different replicas never overlap and that
//! the work completes across a failover.
// Test helpers outside #[test] functions: a failed step aborts the test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ops_support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use futures::FutureExt;
use futures::future::BoxFuture;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use opcat::admin::{Health, Phase};
use opcat::controller::leader::lease::LeaseTimings;
use opcat::controller::leader::{Elector, LeaderConfig};
use opcat::controller::manager::Shutdown;
use opcat::metrics::Metrics;
use ops_support::{Network, api_server, wait_until};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const NAMESPACE: &str = "opcat-system";
const WORK_NAMESPACE: &str = "work";
const LEASE: &str = "opcat-leader";
const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Clone, Debug, PartialEq, Eq)]
enum What {
    Start,
    /// The term was dropped mid-work (abandoned), not finished.
    Abandoned,
    End,
    Write(usize),
}

/// Everything the replicas did, in order.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(String, What, Instant)>>>);

impl Log {
    fn record(&self, who: &str, what: What) {
        self.0
            .lock()
            .unwrap()
            .push((who.to_owned(), what, Instant::now()));
    }

    fn events(&self) -> Vec<(String, What, Instant)> {
        self.0.lock().unwrap().clone()
    }

    fn count(&self, who: &str, what: &What) -> usize {
        self.events()
            .iter()
            .filter(|(w, x, _)| w == who && x == what)
            .count()
    }

    fn first(&self, who: &str, what: &What) -> Option<Instant> {
        self.events()
            .into_iter()
            .find(|(w, x, _)| w == who && x == what)
            .map(|(_, _, at)| at)
    }

    fn jobs_done(&self) -> BTreeSet<usize> {
        self.events()
            .into_iter()
            .filter_map(|(_, what, _)| match what {
                What::Write(job) => Some(job),
                _ => None,
            })
            .collect()
    }

    /// Terms as `(who, start, end)`; a running term ends at `now`.
    fn terms(&self) -> Vec<(String, Instant, Instant)> {
        let mut open: Vec<(String, Instant)> = Vec::new();
        let mut terms = Vec::new();
        for (who, what, at) in self.events() {
            match what {
                What::Start => open.push((who, at)),
                What::End => {
                    let index = open.iter().position(|(w, _)| *w == who).unwrap();
                    let (who, start) = open.remove(index);
                    terms.push((who, start, at));
                }
                What::Write(_) | What::Abandoned => {}
            }
        }
        let now = Instant::now();
        terms.extend(open.into_iter().map(|(who, start)| (who, start, now)));
        terms.sort_by_key(|(_, start, _)| *start);
        terms
    }

    /// No two terms overlap: each ends before the next one starts.
    fn assert_one_writer_at_a_time(&self) {
        let terms = self.terms();
        for pair in terms.windows(2) {
            let (first, _, first_end) = &pair[0];
            let (second, second_start, _) = &pair[1];
            assert!(
                first_end <= second_start,
                "{first}'s term overlapped {second}'s by {:?}",
                first_end.duration_since(*second_start)
            );
        }
    }
}

/// Records a term's end however it ends (finished, or dropped: abandoned).
struct TermGuard {
    log: Log,
    who: String,
    finished: bool,
}

impl Drop for TermGuard {
    fn drop(&mut self) {
        if !self.finished {
            self.log.record(&self.who, What::Abandoned);
        }
        self.log.record(&self.who, What::End);
    }
}

fn job(name: &str, who: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(WORK_NAMESPACE.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("written-by".to_owned(), who.to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// The work term of replica `who`: creates the missing jobs, 100 ms each, until shutdown.
fn work(
    who: &str,
    client: kube::Client,
    log: Log,
    jobs: usize,
) -> impl FnMut(Shutdown) -> BoxFuture<'static, ()> + Send + 'static {
    let who = who.to_owned();
    move |shutdown: Shutdown| {
        let (who, client, log) = (who.clone(), client.clone(), log.clone());
        async move {
            log.record(&who, What::Start);
            let mut guard = TermGuard {
                log: log.clone(),
                who: who.clone(),
                finished: false,
            };
            do_jobs(&who, client, &log, jobs, shutdown).await;
            guard.finished = true;
        }
        .boxed()
    }
}

/// Creates the missing jobs in order until shutdown; a job in progress is finished first.
async fn do_jobs(who: &str, client: kube::Client, log: &Log, jobs: usize, shutdown: Shutdown) {
    let api: Api<ConfigMap> = Api::namespaced(client, WORK_NAMESPACE);
    for index in 0..jobs {
        let name = format!("job-{index}");
        loop {
            if shutdown.clone().now_or_never().is_some() {
                return;
            }
            match api.get_opt(&name).await {
                Ok(Some(_)) => break,
                Ok(None) => {}
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            }
            // The "reconcile".
            tokio::time::sleep(Duration::from_millis(100)).await;
            match api.create(&PostParams::default(), &job(&name, who)).await {
                Ok(_) => {
                    log.record(who, What::Write(index));
                    break;
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
    shutdown.await;
}

/// One replica: its own client (through a network the test can cut), health and metrics.
struct Replica {
    name: String,
    network: Network,
    health: Arc<Health>,
    metrics: Arc<Metrics>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), opcat::controller::leader::LeaderError>>>,
}

impl Replica {
    fn start(
        api: &FakeApiServer,
        name: &str,
        timings: LeaseTimings,
        log: &Log,
        jobs: usize,
    ) -> Self {
        let (client, network) = Network::client(api.client());
        let health = Arc::new(Health::default());
        let metrics = Arc::new(Metrics::new());
        let config = LeaderConfig {
            namespace: NAMESPACE.to_owned(),
            lease_name: LEASE.to_owned(),
            identity: name.to_owned(),
            timings,
        };
        let elector = Elector::new(
            client.clone(),
            config,
            health.clone(),
            metrics.clone(),
            Duration::from_secs(10),
        );
        let mut term = work(name, client, log.clone(), jobs);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            elector
                .run(&mut term, async move {
                    let _ = stopped.await;
                })
                .await
        });
        Self {
            name: name.to_owned(),
            network,
            health,
            metrics,
            stop: Some(stop),
            task: Some(task),
        }
    }

    fn leads(&self) -> bool {
        self.metrics.is_leader()
    }

    /// A crash: the network goes, then the process.
    async fn kill(&mut self) {
        self.network.cut();
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// SIGTERM: stop and wait for the elector to return.
    async fn stop(&mut self) -> Result<(), opcat::controller::leader::LeaderError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self.task.take().expect("running");
        tokio::time::timeout(TIMEOUT, task)
            .await
            .expect("stops within the timeout")
            .expect("task")
    }
}

fn holder(api: &FakeApiServer) -> Option<String> {
    api.get::<Lease>(NAMESPACE, LEASE)
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
}

fn short_timings() -> LeaseTimings {
    LeaseTimings::new(Duration::from_secs(3), Duration::from_secs(2)).expect("timings")
}

/// Starts two replicas and waits until one leads; returns (leader, standby).
async fn two_replicas(
    api: &FakeApiServer,
    timings: LeaseTimings,
    log: &Log,
    jobs: usize,
) -> (Replica, Replica) {
    let a = Replica::start(api, "replica-a", timings, log, jobs);
    let b = Replica::start(api, "replica-b", timings, log, jobs);
    wait_until("one replica leads", TIMEOUT, || a.leads() || b.leads()).await;
    if a.leads() { (a, b) } else { (b, a) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_leads_and_a_standby_takes_over_when_the_leader_dies() {
    let api = api_server(&[NAMESPACE, WORK_NAMESPACE]).await;
    let log = Log::default();
    let jobs = 30;
    let (mut leader, standby) = two_replicas(&api, short_timings(), &log, jobs).await;

    // Exactly one leads, for several lease periods; the standby is ready and idle.
    wait_until("some work is done", TIMEOUT, || log.jobs_done().len() >= 5).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(leader.leads() && !standby.leads());
    assert_eq!(holder(&api).as_deref(), Some(leader.name.as_str()));
    assert_eq!(standby.health.phase(), Phase::Standby);
    assert!(standby.health.phase().is_ready(), "a standby is ready");
    assert_eq!(
        log.count(&standby.name, &What::Start),
        0,
        "the standby never worked"
    );
    assert_eq!(
        log.count(&leader.name, &What::Start),
        1,
        "no leadership flapping"
    );

    let killed_at = Instant::now();
    leader.kill().await;
    wait_until("the standby takes over", TIMEOUT, || standby.leads()).await;
    let took_over = log
        .first(&standby.name, &What::Start)
        .expect("standby term");
    wait_until("all the work is done", TIMEOUT, || {
        log.jobs_done().len() == jobs
    })
    .await;

    assert_eq!(holder(&api).as_deref(), Some(standby.name.as_str()));
    assert_eq!(log.jobs_done(), (0..jobs).collect::<BTreeSet<_>>());
    log.assert_one_writer_at_a_time();
    println!(
        "failover after the leader died: {:.2}s (lease 3s, renew deadline 2s)",
        took_over.duration_since(killed_at).as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_cut_off_from_the_api_stops_before_its_lease_can_be_taken() {
    let api = api_server(&[NAMESPACE, WORK_NAMESPACE]).await;
    let log = Log::default();
    let timings = short_timings();
    let (leader, standby) = two_replicas(&api, timings, &log, 1_000).await;
    wait_until("some work is done", TIMEOUT, || log.jobs_done().len() >= 3).await;

    // The leader keeps running but cannot reach the API server: it cannot renew.
    let last_renewal = api
        .get::<Lease>(NAMESPACE, LEASE)
        .and_then(|lease| lease.spec?.renew_time)
        .expect("renewed");
    leader.network.cut();
    wait_until("the cut-off leader stops reconciling", TIMEOUT, || {
        !leader.leads()
    })
    .await;
    let stopped = log
        .first(&leader.name, &What::End)
        .expect("leader term ended");
    wait_until("the standby takes over", TIMEOUT, || standby.leads()).await;
    let took_over = log
        .first(&standby.name, &What::Start)
        .expect("standby term");

    assert!(
        stopped < took_over,
        "the old leader stopped before the new one started"
    );
    assert_eq!(
        log.count(&leader.name, &What::Abandoned),
        1,
        "a leader that cannot prove its lease drops its work at once"
    );
    log.assert_one_writer_at_a_time();
    let renewed = api
        .get::<Lease>(NAMESPACE, LEASE)
        .and_then(|lease| lease.spec?.renew_time)
        .expect("renewed by the new leader");
    assert!(renewed.0 > last_renewal.0);
    assert_eq!(holder(&api).as_deref(), Some(standby.name.as_str()));

    // Back on the network, the old leader stays a standby.
    leader.network.heal();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(!leader.leads() && standby.leads());
    assert_eq!(log.count(&leader.name, &What::Start), 1);
    assert_eq!(holder(&api).as_deref(), Some(standby.name.as_str()));
    log.assert_one_writer_at_a_time();
    println!(
        "cut-off leader stopped {:.2}s before the standby took over",
        took_over.duration_since(stopped).as_secs_f64()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_finishes_in_flight_work_and_hands_the_lease_over_at_once() {
    let api = api_server(&[NAMESPACE, WORK_NAMESPACE]).await;
    let log = Log::default();
    // A long lease: the standby taking over well before it would expire proves the release.
    let timings =
        LeaseTimings::new(Duration::from_secs(30), Duration::from_secs(4)).expect("timings");
    let jobs = 1_000;
    let (mut leader, standby) = two_replicas(&api, timings, &log, jobs).await;
    wait_until("some work is done", TIMEOUT, || log.jobs_done().len() >= 3).await;

    let renewed_before_stop = api
        .get::<Lease>(NAMESPACE, LEASE)
        .and_then(|lease| lease.spec?.renew_time)
        .expect("renewed")
        .0;
    let stop_at = Instant::now();
    let stop_at_wall = k8s_openapi::jiff::Timestamp::now();
    let result = leader.stop().await;
    let stopped_in = stop_at.elapsed();
    assert!(result.is_ok(), "{result:?}");
    assert_eq!(leader.health.phase(), Phase::ShuttingDown);
    assert!(!leader.leads());
    wait_until("the standby takes over", TIMEOUT, || standby.leads()).await;
    let took_over = log
        .first(&standby.name, &What::Start)
        .expect("standby term");

    let handover = took_over.duration_since(stop_at);
    // The lease the old leader held when it stopped would have expired at its last renewal
    // plus the lease duration (later, if it renewed once more); the standby took it before
    // that, so it was released.
    let expiry = renewed_before_stop
        .checked_add(k8s_openapi::jiff::SignedDuration::try_from(timings.lease_duration()).unwrap())
        .unwrap();
    let took_over_wall = stop_at_wall
        .checked_add(k8s_openapi::jiff::SignedDuration::try_from(handover).unwrap())
        .unwrap();
    assert!(
        took_over_wall < expiry,
        "the standby took over at {took_over_wall}, not before the old lease expired at \
         {expiry}: the lease was not released"
    );
    assert_eq!(holder(&api).as_deref(), Some(standby.name.as_str()));
    log.assert_one_writer_at_a_time();
    // The job in flight at the stop was finished, not abandoned, and none was skipped.
    assert_eq!(log.count(&leader.name, &What::Abandoned), 0);
    let done = log.jobs_done();
    assert_eq!(
        done,
        (0..done.len()).collect::<BTreeSet<_>>(),
        "no job skipped"
    );
    println!(
        "graceful stop took {:.2}s; the standby took over {:.2}s after the stop (lease 30s)",
        stopped_in.as_secs_f64(),
        handover.as_secs_f64()
    );
}
