//! `opcat run`: the controller manager.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::CliResult;
use crate::controller::clock::SystemClock;
use crate::controller::context::Settings;
use crate::controller::manager;
use crate::controller::stores::Scope;
use crate::registry::{Registry, RegistryOptions, TrustConfig};
use crate::telemetry::{self, LogFormat};

/// Run the controller manager against the cluster of the current kubeconfig (or the in-cluster
/// service account).
///
/// opcat serves OLM v0's CatalogSource, Subscription, InstallPlan, ClusterServiceVersion and
/// OperatorGroup, installs operators from private catalogs, and gives their workloads the
/// catalog's pull secrets. Its CRDs must be installed first (`kubectl apply --server-side -k
/// deploy/crds`).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Watch and manage only this namespace (default: all namespaces).
    #[arg(long, env = "OPCAT_NAMESPACE", value_name = "NAMESPACE")]
    pub namespace: Option<String>,

    /// Directory for unpacked catalog and bundle images, keyed by digest; survives restarts so
    /// an unchanged image is not pulled again.
    #[arg(
        long,
        env = "OPCAT_CACHE_DIR",
        value_name = "DIR",
        default_value = "/var/cache/opcat"
    )]
    pub cache_dir: PathBuf,

    /// Extra root CA (PEM) for registries with an internal CA. Repeatable.
    #[arg(
        long = "ca-file",
        env = "OPCAT_CA_FILES",
        value_delimiter = ',',
        value_name = "PEM"
    )]
    pub ca_files: Vec<PathBuf>,

    /// Talk plain HTTP (no TLS) to this registry, `host[:port]`, e.g. an internal registry
    /// without certificates. Only the registries named here; repeatable. Credentials sent to it
    /// travel unencrypted.
    #[arg(
        long = "insecure-registry",
        env = "OPCAT_INSECURE_REGISTRIES",
        value_delimiter = ',',
        value_name = "HOST[:PORT]"
    )]
    pub insecure_registries: Vec<String>,

    /// Maximum parallel reconciles per controller.
    #[arg(long, env = "OPCAT_CONCURRENCY", default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,

    /// Log format.
    #[arg(long, env = "OPCAT_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Errors `opcat run` reports before the controllers start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot read CA file {path}")]
    CaFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot build a Kubernetes client from the kubeconfig or in-cluster config")]
    Client(#[source] kube::Error),
}

pub async fn execute(args: Args) -> CliResult {
    telemetry::init(args.log_format, "info")?;
    crate::registry::install_crypto_provider();

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
    let registry = Arc::new(Registry::new(options)?);

    let client = kube::Client::try_default()
        .await
        .map_err(RunError::Client)?;
    manager::check_crds(&client).await?;

    let settings = Settings {
        scope: args
            .namespace
            .clone()
            .map_or(Scope::Cluster, Scope::Namespace),
        concurrency: args.concurrency,
        instance: std::env::var("POD_NAME").ok(),
        ..Settings::default()
    };
    tracing::info!(
        namespace = args.namespace.as_deref().unwrap_or("*"),
        cache_dir = %args.cache_dir.display(),
        "starting opcat"
    );
    let running = manager::start(
        client,
        registry,
        Arc::new(SystemClock),
        settings,
        shutdown_signal(),
    );
    running.future.await;
    tracing::info!("opcat stopped");
    Ok(ExitCode::SUCCESS)
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(error) => {
                    tracing::error!(%error, "cannot listen for SIGTERM; only Ctrl-C stops opcat");
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received; shutting down"),
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received; shutting down"),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    // Give in-flight reconciles a moment to see the signal before the runtime is dropped.
    tokio::time::sleep(Duration::from_millis(10)).await;
}
