//! `opcat run`: wires the shared watches, the source-secret watches and the reconcilers, and
//! runs them until shutdown.

use std::future::Future;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client};

use super::clock::Clock;
use super::context::{Context, Settings};
use super::stores::Reflectors;
use super::{
    catalog_source, copied_csvs, csv, install_plan, operator_api, operator_condition, subscription,
};
use crate::metrics::{Metrics, Sample};
use crate::registry::Registry;

/// A shutdown signal every controller can wait on.
pub type Shutdown = Shared<BoxFuture<'static, ()>>;

/// The CRDs opcat serves; it refuses to start without them.
pub const REQUIRED_CRDS: [&str; 8] = [
    "catalogsources.operators.coreos.com",
    "subscriptions.operators.coreos.com",
    "clusterserviceversions.operators.coreos.com",
    "installplans.operators.coreos.com",
    "operatorgroups.operators.coreos.com",
    "operatorconditions.operators.coreos.com",
    "olmconfigs.operators.coreos.com",
    "operators.operators.coreos.com",
];

/// Why the manager could not start.
#[derive(Debug, thiserror::Error)]
pub enum ManagerError {
    #[error(
        "the cluster lacks opcat's CustomResourceDefinitions {missing:?}; install them with \
         `kubectl apply --server-side -k deploy/crds` (or `opcat crds | kubectl apply --server-side -f -`)"
    )]
    MissingCrds { missing: Vec<String> },
    #[error("cannot read CustomResourceDefinition {name}")]
    ReadCrd {
        name: String,
        #[source]
        source: kube::Error,
    },
}

/// Checks that opcat's CRDs are installed.
pub async fn check_crds(client: &Client) -> Result<(), ManagerError> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let mut missing = Vec::new();
    for name in REQUIRED_CRDS {
        match api.get_opt(name).await {
            Ok(Some(_)) => {}
            Ok(None) => missing.push(name.to_owned()),
            Err(source) => {
                return Err(ManagerError::ReadCrd {
                    name: name.to_owned(),
                    source,
                });
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(ManagerError::MissingCrds { missing })
    }
}

/// A started manager: its context (for readiness and tests) and the future that runs it.
pub struct Running {
    pub context: Arc<Context>,
    pub future: BoxFuture<'static, ()>,
}

/// Builds the controllers. Nothing runs until the returned future is polled; it completes when
/// `shutdown` fires and every controller has finished its in-flight reconciles.
pub fn start(
    client: Client,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Running {
    start_with_metrics(
        client,
        registry,
        clock,
        settings,
        Arc::new(Metrics::new()),
        shutdown,
    )
}

/// [`start`], reporting into the process's `metrics`; the gauges sampled at scrape time read
/// this manager's catalogs and stores while it lives.
pub fn start_with_metrics(
    client: Client,
    registry: Arc<Registry>,
    clock: Arc<dyn Clock>,
    settings: Settings,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Running {
    let shutdown: Shutdown = shutdown.boxed().shared();
    let reflectors = Reflectors::new(client.clone(), settings.scope.clone());
    let context = Arc::new(
        Context::new(
            client.clone(),
            registry,
            reflectors.stores(),
            clock,
            settings,
        )
        .with_metrics(metrics.clone()),
    );
    let weak = Arc::downgrade(&context);
    metrics.set_sampler(move || {
        let context = weak.upgrade()?;
        let counts = context.catalogs.counts();
        Some(Sample {
            catalogs: counts.catalogs,
            packages: counts.packages,
            bundles: counts.bundles,
            pull_secret_copies: context.stores.copies.len(),
        })
    });

    let controllers = vec![
        catalog_source::controller(context.clone(), &reflectors, shutdown.clone()),
        subscription::controller(context.clone(), &reflectors, shutdown.clone()),
        install_plan::controller(context.clone(), &reflectors, shutdown.clone()),
        csv::controller(context.clone(), &reflectors, shutdown.clone()),
        operator_condition::controller(context.clone(), &reflectors, shutdown.clone()),
        copied_csvs::controller(context.clone(), &reflectors, shutdown.clone()),
        operator_api::controller(context.clone(), &reflectors, shutdown.clone()),
    ];
    let source_secrets = context.source_secrets.clone().run(
        client,
        context.stores.catalog_sources.clone(),
        reflectors.catalog_sources.subscribe(),
    );
    let mut background: Vec<BoxFuture<'static, ()>> = reflectors.drive();
    background.push(source_secrets.boxed());

    let future = async move {
        let watches = futures::future::join_all(background);
        tokio::select! {
            _ = futures::future::join_all(controllers) => {
                tracing::info!("controllers stopped");
            }
            _ = watches => {
                tracing::error!("watches ended unexpectedly");
            }
        }
    }
    .boxed();
    Running { context, future }
}
