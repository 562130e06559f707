//! `opcat run`: the controller manager, with its admin server and (optionally) leader election.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::CliResult;
use super::cluster_client;
use super::run_args::Args;
use crate::admin::{AdminServer, Health};
use crate::controller::clock::SystemClock;
use crate::controller::context::Settings;
use crate::controller::leader::lease::{LeaseTimings, TimingsError};
use crate::controller::leader::term::{Term, manager_term_with};
use crate::controller::leader::{Elector, LeaderConfig};
use crate::controller::manager;
use crate::controller::olm_coexistence::{self, CoexistenceError};
use crate::controller::package_api::PackageApi;
use crate::controller::stores::Scope;
use crate::metrics::Metrics;
use crate::package_server::PackageServer;
use crate::package_server::reviews::KubeReviewer;
use crate::registry::{Registry, RegistryOptions, TrustConfig};
use crate::telemetry;

/// Where Kubernetes mounts the pod's namespace.
const SERVICE_ACCOUNT_NAMESPACE_FILE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

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
    #[error("the controllers stopped by themselves (see the errors logged above)")]
    ManagerStopped,
    #[error(transparent)]
    PackageApi(crate::package_server::ServeError),
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
    let config_source = cluster_client::source_from_environment(
        args.kubeconfig.as_deref(),
        args.context.as_deref(),
    )?;
    let kube_config = cluster_client::config(&config_source, args.context.as_deref()).await?;

    let metrics = Arc::new(Metrics::new());
    let health = Arc::new(Health::default());
    let _admin = AdminServer::start(args.admin_address, health.clone(), metrics.clone()).await?;

    let package_listener = match package_api_namespace(&args) {
        Some(namespace) => Some((
            namespace,
            crate::package_server::bind(args.package_api_address)
                .await
                .map_err(RunError::PackageApi)?,
        )),
        None => None,
    };

    let client = cluster_client::connect(kube_config, config_source).await?;
    manager::check_crds(&client).await?;
    check_olm(&client, args.allow_olm_coexistence).await?;
    let package_api = package_listener.map(|(namespace, listener)| {
        let server = PackageServer::new(Arc::new(KubeReviewer::new(client.clone())));
        health.watch_package_api(server.clone());
        let serving = server.clone();
        // Serves until the process exits: a stopping leader still answers while it leaves the
        // Service (the term removes its pod's label first).
        tokio::spawn(async move {
            if let Err(error) = serving.serve(listener, std::future::pending()).await {
                tracing::error!(error = %crate::failure::error_chain(&error), "package API stopped");
            }
        });
        tracing::info!(address = %args.package_api_address, %namespace, "package API listening");
        PackageApi {
            server,
            namespace,
            service: args.package_api_service.clone(),
            secret: args.package_api_secret.clone(),
            pod: std::env::var("POD_NAME").ok().filter(|pod| !pod.trim().is_empty()),
        }
    });

    let settings = Settings {
        scope: args
            .namespace
            .clone()
            .map_or(Scope::Cluster, Scope::Namespace),
        concurrency: args.concurrency,
        resync: args.resync,
        bundle_tag_ttl: args.bundle_tag_ttl,
        default_poll_interval: args.poll_default,
        catalog_server_check: args.catalog_server_check,
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
    let mut start_term = manager_term_with(
        client.clone(),
        registry,
        Arc::new(SystemClock),
        settings,
        metrics.clone(),
        health.clone(),
        package_api,
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

/// Refuses to start next to OLM's controllers, unless allowed (then it only warns).
async fn check_olm(client: &kube::Client, allowed: bool) -> Result<(), CoexistenceError> {
    if !allowed {
        return olm_coexistence::refuse_if_olm_runs(client).await;
    }
    match olm_coexistence::find(client).await {
        Ok(found) if found.is_empty() => {}
        Ok(found) => {
            let found: Vec<String> = found.iter().map(ToString::to_string).collect();
            tracing::warn!(
                olm = %found.join(", "),
                "OLM runs alongside opcat (--allow-olm-coexistence): both reconcile the same \
                 Subscriptions, InstallPlans and CSVs"
            );
        }
        Err(error) => tracing::warn!(
            error = %crate::failure::error_chain(&error),
            "cannot tell whether OLM runs (--allow-olm-coexistence)"
        ),
    }
    Ok(())
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

/// opcat's namespace for the package API, or `None` when the API is off: disabled, or opcat
/// runs outside a pod without --package-api-namespace (a local run: there is no Service to
/// serve behind).
fn package_api_namespace(args: &Args) -> Option<String> {
    if args.disable_package_api {
        tracing::info!("package API disabled (--disable-package-api)");
        return None;
    }
    let namespace = args.package_api_namespace.clone().or_else(own_namespace);
    if namespace.is_none() {
        tracing::info!(
            "package API off: not running in a pod; set --package-api-namespace to serve it"
        );
    }
    namespace
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

#[cfg(test)]
mod tests {
    use super::*;

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
