//! `opcat run`: the controller manager, with its admin server and (optionally) leader election.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::CliResult;
use crate::admin::{AdminServer, Health};
use crate::controller::clock::SystemClock;
use crate::controller::context::Settings;
use crate::controller::leader::lease::{LeaseTimings, TimingsError};
use crate::controller::leader::term::{Term, manager_term};
use crate::controller::leader::{DEFAULT_LEASE_NAME, Elector, LeaderConfig};
use crate::controller::manager;
use crate::controller::stores::Scope;
use crate::metrics::Metrics;
use crate::registry::{Registry, RegistryOptions, TrustConfig};
use crate::telemetry::{self, LogFormat};

/// Where Kubernetes mounts the pod's namespace.
const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// `opcat run --help`.
pub(super) const LONG_ABOUT: &str = "\
Run the controller manager against the cluster of the current kubeconfig (or the in-cluster \
service account).

opcat serves OLM v0's CatalogSource, Subscription, InstallPlan, ClusterServiceVersion and \
OperatorGroup, installs operators from private catalogs, and gives their workloads the catalog's \
pull secrets. Its CRDs must be installed first (kubectl apply --server-side -k deploy/crds).

Every flag can also be set through the environment variable shown with it. Logs go to stderr; \
RUST_LOG filters them (default info, e.g. RUST_LOG=opcat=debug,kube=info). SIGTERM stops \
gracefully: readiness turns off, no new reconciles start, in-flight ones get --shutdown-timeout, \
the leader lease is released, exit code 0. Invalid flag values are refused before anything starts.";

/// The flags of `opcat run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Watch and manage only this namespace (default: all namespaces).
    #[arg(long, env = "OPCAT_NAMESPACE", value_name = "NAMESPACE", value_parser = dns_label)]
    pub namespace: Option<String>,

    /// Directory for unpacked catalog and bundle images, keyed by digest; survives restarts so
    /// an unchanged image is not pulled again. Must be writable.
    #[arg(
        long,
        env = "OPCAT_CACHE_DIR",
        value_name = "DIR",
        default_value = "/var/cache/opcat"
    )]
    pub cache_dir: PathBuf,

    /// Namespace whose CatalogSources every namespace sees: Subscriptions may name catalogs
    /// there, and operator dependencies are resolved from them (besides the Subscription's own
    /// namespace). OLM's default is olm; OpenShift uses openshift-marketplace.
    #[arg(
        long,
        env = "OPCAT_GLOBAL_CATALOG_NAMESPACE",
        value_name = "NAMESPACE",
        default_value = crate::controller::context::DEFAULT_GLOBAL_CATALOG_NAMESPACE,
        value_parser = dns_label
    )]
    pub global_catalog_namespace: String,

    /// Poll interval for CatalogSources without `spec.updateStrategy.registryPoll` (a Go
    /// duration such as 30m). Default: such catalogs are not polled, as in OLM.
    #[arg(
        long,
        env = "OPCAT_POLL_DEFAULT",
        value_name = "DURATION",
        value_parser = positive_duration
    )]
    pub poll_default: Option<Duration>,

    /// Maximum parallel reconciles per controller (1-256).
    #[arg(long, env = "OPCAT_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,

    /// How often a converged object is reconciled again without any event (a Go duration).
    /// Each resync reads from the watch caches and writes nothing unless something drifted.
    #[arg(
        long,
        env = "OPCAT_RESYNC",
        value_name = "DURATION",
        default_value = "10m",
        value_parser = positive_duration
    )]
    pub resync: Duration,

    /// Log format.
    #[arg(long, env = "OPCAT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// How long in-flight reconciles may take after SIGTERM before they are abandoned. Keep it
    /// below the pod's terminationGracePeriodSeconds.
    #[arg(
        long,
        env = "OPCAT_SHUTDOWN_TIMEOUT",
        value_name = "DURATION",
        default_value = "20s",
        value_parser = positive_duration
    )]
    pub shutdown_timeout: Duration,

    /// Extra root CA (PEM) for registries with an internal CA. Repeatable; the environment
    /// variable takes a comma-separated list.
    #[arg(
        long = "ca-file",
        env = "OPCAT_CA_FILES",
        value_delimiter = ',',
        value_name = "PEM",
        help_heading = "Registries"
    )]
    pub ca_files: Vec<PathBuf>,

    /// Talk plain HTTP (no TLS) to this registry, `host[:port]`, e.g. an internal registry
    /// without certificates. Only the registries named here; credentials sent to them travel
    /// unencrypted. Repeatable; the environment variable takes a comma-separated list.
    #[arg(
        long = "insecure-registry",
        env = "OPCAT_INSECURE_REGISTRIES",
        value_delimiter = ',',
        value_name = "HOST[:PORT]",
        help_heading = "Registries"
    )]
    pub insecure_registries: Vec<String>,

    /// Address of the admin HTTP server (/livez, /readyz, /metrics). Use 0.0.0.0:8080 in a
    /// pod so the kubelet and Prometheus can reach it.
    #[arg(
        long,
        env = "OPCAT_ADMIN_ADDRESS",
        value_name = "IP:PORT",
        default_value = "127.0.0.1:8080",
        help_heading = "Admin server"
    )]
    pub admin_address: SocketAddr,

    /// Reconcile only while holding the leader Lease, so that several replicas can run for
    /// availability. Identity: the POD_NAME environment variable (else host name and process
    /// id).
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT",
        value_parser = clap::builder::BoolishValueParser::new(),
        help_heading = "Leader election"
    )]
    pub leader_elect: bool,

    /// How long the Lease is valid after a renewal; a standby takes over this long after the
    /// leader's last renewal. Whole seconds.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_LEASE_DURATION",
        value_name = "DURATION",
        default_value = "15s",
        value_parser = positive_duration,
        help_heading = "Leader election"
    )]
    pub leader_elect_lease_duration: Duration,

    /// The leader stops reconciling when it has not renewed the Lease for this long; it renews
    /// every half of it. Shorter than the lease duration; whole seconds, at least 2s.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_RENEW_DEADLINE",
        value_name = "DURATION",
        default_value = "10s",
        value_parser = positive_duration,
        help_heading = "Leader election"
    )]
    pub leader_elect_renew_deadline: Duration,

    /// Name of the Lease.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_RESOURCE_NAME",
        value_name = "NAME",
        default_value = DEFAULT_LEASE_NAME,
        value_parser = dns_subdomain,
        help_heading = "Leader election"
    )]
    pub leader_elect_resource_name: String,

    /// Namespace of the Lease. Default: the POD_NAMESPACE environment variable, else the
    /// namespace of the pod's service account.
    #[arg(
        long,
        env = "OPCAT_LEADER_ELECT_RESOURCE_NAMESPACE",
        value_name = "NAMESPACE",
        value_parser = dns_label,
        help_heading = "Leader election"
    )]
    pub leader_elect_resource_namespace: Option<String>,
}

/// Errors `opcat run` reports.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot read CA file {path}")]
    CaFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--cache-dir {path} is not a writable directory")]
    CacheDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid leader-election timings")]
    Timings(#[source] TimingsError),
    #[error(
        "cannot tell which namespace the leader-election Lease belongs in: set \
         --leader-elect-resource-namespace or POD_NAMESPACE"
    )]
    LeaseNamespace,
    #[error("cannot build a Kubernetes client from the kubeconfig or in-cluster config")]
    Client(#[source] kube::Error),
    #[error("the controllers stopped by themselves (see the errors logged above)")]
    ManagerStopped,
}

pub async fn execute(args: Args) -> CliResult {
    telemetry::init(args.log_format, "info")?;
    crate::registry::install_crypto_provider();

    // Everything that can be checked without the cluster is checked before anything starts.
    let leader = args
        .leader_elect
        .then(|| leader_config(&args))
        .transpose()?;
    check_cache_dir(&args.cache_dir)?;
    let registry = Arc::new(Registry::new(registry_options(&args)?)?);

    let metrics = Arc::new(Metrics::new());
    let health = Arc::new(Health::default());
    let _admin = AdminServer::start(args.admin_address, health.clone(), metrics.clone()).await?;

    let client = client().await?;
    manager::check_crds(&client).await?;

    let settings = Settings {
        scope: args
            .namespace
            .clone()
            .map_or(Scope::Cluster, Scope::Namespace),
        concurrency: args.concurrency,
        resync: args.resync,
        default_poll_interval: args.poll_default,
        global_catalog_namespace: args.global_catalog_namespace.clone(),
        instance: std::env::var("POD_NAME").ok(),
        ..Settings::default()
    };
    tracing::info!(
        namespace = args.namespace.as_deref().unwrap_or("*"),
        global_catalog_namespace = %args.global_catalog_namespace,
        cache_dir = %args.cache_dir.display(),
        concurrency = args.concurrency,
        leader_elect = args.leader_elect,
        "starting opcat"
    );
    let mut start_term = manager_term(
        client.clone(),
        registry,
        Arc::new(SystemClock),
        settings,
        metrics.clone(),
        health.clone(),
    );
    let stop = shutdown_signal(health.clone());
    match leader {
        Some(config) => {
            Elector::new(client, config, health, metrics, args.shutdown_timeout)
                .run(&mut start_term, stop)
                .await?;
        }
        None => {
            run_without_election(&mut start_term, &metrics, args.shutdown_timeout, stop).await?
        }
    }
    tracing::info!("opcat stopped");
    Ok(ExitCode::SUCCESS)
}

/// One term for the whole life of the process.
async fn run_without_election(
    start_term: &mut (impl FnMut(manager::Shutdown) -> futures::future::BoxFuture<'static, ()> + ?Sized),
    metrics: &Metrics,
    shutdown_timeout: Duration,
    stop: impl Future<Output = ()>,
) -> Result<(), RunError> {
    let mut stop = pin!(stop);
    metrics.set_leader(true);
    let mut term = Term::start(start_term);
    tokio::select! {
        () = term.ended() => {
            metrics.set_leader(false);
            return Err(RunError::ManagerStopped);
        }
        () = &mut stop => {}
    }
    tracing::info!(
        timeout_s = shutdown_timeout.as_secs_f64(),
        "stopping: no new reconciles, waiting for in-flight ones"
    );
    term.stop(shutdown_timeout, std::future::pending()).await;
    metrics.set_leader(false);
    Ok(())
}

fn leader_config(args: &Args) -> Result<LeaderConfig, RunError> {
    let timings = LeaseTimings::new(
        args.leader_elect_lease_duration,
        args.leader_elect_renew_deadline,
    )
    .map_err(RunError::Timings)?;
    let namespace = match &args.leader_elect_resource_namespace {
        Some(namespace) => namespace.clone(),
        None => own_namespace().ok_or(RunError::LeaseNamespace)?,
    };
    Ok(LeaderConfig {
        namespace,
        lease_name: args.leader_elect_resource_name.clone(),
        identity: identity(),
        timings,
    })
}

/// The pod's namespace: `POD_NAMESPACE`, else the service account's namespace file.
fn own_namespace() -> Option<String> {
    namespace_from(
        std::env::var("POD_NAMESPACE").ok(),
        Path::new(SERVICE_ACCOUNT_NAMESPACE_FILE),
    )
}

/// The first non-empty of `from_env` and the content of `file`.
fn namespace_from(from_env: Option<String>, file: &Path) -> Option<String> {
    let nonempty = |namespace: String| {
        let namespace = namespace.trim().to_owned();
        (!namespace.is_empty()).then_some(namespace)
    };
    from_env
        .and_then(nonempty)
        .or_else(|| std::fs::read_to_string(file).ok().and_then(nonempty))
}

/// This replica's identity: the pod name, else `<host name>-<process id>` (local runs).
fn identity() -> String {
    if let Ok(pod) = std::env::var("POD_NAME")
        && !pod.trim().is_empty()
    {
        return pod.trim().to_owned();
    }
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|host| host.trim().to_owned())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "opcat".to_owned());
    format!("{host}-{}", std::process::id())
}

fn registry_options(args: &Args) -> Result<RegistryOptions, RunError> {
    let mut trust = TrustConfig::default();
    for path in &args.ca_files {
        let pem = std::fs::read(path).map_err(|source| RunError::CaFile {
            path: path.clone(),
            source,
        })?;
        trust.extra_root_certs_pem.push(pem);
    }
    trust.insecure_hosts = args.insecure_registries.iter().cloned().collect();
    let mut options = RegistryOptions::new(&args.cache_dir);
    options.trust = trust;
    Ok(options)
}

/// The cache directory exists (or can be created) and takes a file.
fn check_cache_dir(path: &Path) -> Result<(), RunError> {
    let error = |source| RunError::CacheDir {
        path: path.to_owned(),
        source,
    };
    std::fs::create_dir_all(path).map_err(error)?;
    tempfile::tempfile_in(path).map_err(error)?;
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C, after turning readiness off.
async fn shutdown_signal(health: Arc<Health>) {
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received; shutting down"),
                _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received; shutting down"),
            },
            Err(error) => {
                tracing::error!(%error, "cannot listen for SIGTERM; only Ctrl-C stops opcat");
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    health.shutting_down();
}

/// A Go duration greater than zero (`30s`, `15m`, `1h30m`).
fn positive_duration(text: &str) -> Result<Duration, String> {
    let duration = crate::go_duration::parse(text).map_err(|error| error.to_string())?;
    if duration.is_zero() {
        return Err(format!("must be greater than zero, got {text:?}"));
    }
    Ok(duration)
}

/// An RFC 1123 label (namespace names).
fn dns_label(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && text.len() <= 63
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-');
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is not a valid namespace name (lower-case letters, digits and '-', at most \
             63, starting and ending with a letter or digit)"
        ))
    }
}

/// An RFC 1123 subdomain (object names).
fn dns_subdomain(text: &str) -> Result<String, String> {
    let valid = !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| dns_label(label).is_ok());
    if valid {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "{text:?} is not a valid object name (lower-case letters, digits, '-' and '.', at \
             most 253)"
        ))
    }
}

/// `User-Agent` of opcat's requests to the API server, so audit logs (and the scale benchmark)
/// can tell them from everyone else's.
pub const USER_AGENT: &str = concat!("opcat/", env!("CARGO_PKG_VERSION"));

/// The client of the kubeconfig or in-cluster config, identifying itself as [`USER_AGENT`].
async fn client() -> Result<kube::Client, RunError> {
    let mut config = kube::Config::infer()
        .await
        .map_err(|error| RunError::Client(kube::Error::InferConfig(error)))?;
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(USER_AGENT),
    ));
    kube::Client::try_from(config).map_err(RunError::Client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_must_be_positive_go_durations() {
        assert_eq!(positive_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(
            positive_duration("0")
                .unwrap_err()
                .contains("greater than zero")
        );
        assert!(
            positive_duration("10")
                .unwrap_err()
                .contains("missing unit")
        );
        assert!(positive_duration("-5s").unwrap_err().contains("negative"));
    }

    #[test]
    fn names_are_checked_like_the_api_server_does() {
        assert!(dns_label("opcat-system").is_ok());
        assert!(dns_label("Opcat").is_err());
        assert!(dns_label("-x").is_err());
        assert!(dns_label(&"a".repeat(64)).is_err());
        assert!(dns_subdomain("opcat-leader").is_ok());
        assert!(dns_subdomain("opcat.leader").is_ok());
        assert!(dns_subdomain("opcat..leader").is_err());
    }

    #[test]
    fn the_lease_namespace_comes_from_the_pod_or_its_service_account() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("namespace");
        assert_eq!(namespace_from(None, &file), None);
        std::fs::write(&file, "opcat-system\n").expect("write");
        assert_eq!(namespace_from(None, &file).as_deref(), Some("opcat-system"));
        assert_eq!(
            namespace_from(Some("from-env".into()), &file).as_deref(),
            Some("from-env")
        );
        assert_eq!(
            namespace_from(Some(" ".into()), &file).as_deref(),
            Some("opcat-system")
        );
    }

    #[test]
    fn a_cache_dir_that_cannot_be_written_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(check_cache_dir(&dir.path().join("nested/cache")).is_ok());
        let file = dir.path().join("file");
        std::fs::write(&file, "x").expect("write");
        let error = check_cache_dir(&file.join("cache")).expect_err("under a file");
        assert!(
            error.to_string().contains("is not a writable directory"),
            "{error}"
        );
    }
}
