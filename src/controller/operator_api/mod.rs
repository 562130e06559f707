//! The Operator reconciler: one cluster-scoped `operators.coreos.com/v1` Operator per install,
//! named `<package>.<namespace>`, as OLM's operator and adoption controllers keep it
//! (`pkg/controller/operators/operator_controller.go`, `adoption_controller.go`,
//! `decorators/operator.go`):
//!
//! - every object opcat creates for an install carries the component label
//!   `operators.coreos.com/<package>.<namespace>` (put there where the objects are built: the
//!   render, the CSV, the InstallPlan, the pull-secret copies); the user's Subscription gets it
//!   here, by one patch, once;
//! - the Operator exists while the install has a component: created when the install starts,
//!   brought back when deleted while components exist, deleted when none is left;
//! - `status.components` holds the label selector (the key `Exists`) and the references to the
//!   components with their conditions ([`components`]), written only when it changed.
//!
//! Keyed by install (package, namespace) on its own queue ([`super::work_queue`]): an install
//! whose Operator is gone must still be reconciled. Every read is from the stores the controller
//! keeps and from the Operator watch ([`observed`]), so a converged cluster makes no request.
//! Steps: dereference ([`components`]) → build (the status) → apply ([`write`]).

mod components;
mod observed;
mod triggers;
mod write;

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use kube::runtime::controller::Action;
use kube::{Resource, ResourceExt};

pub use observed::{Observed, Operators, status_hash};

use super::context::Context;
use super::manager::Shutdown;
use super::stores::Reflectors;
use super::work_queue::Queue;
use crate::api::operator::{Components, component_label_key, component_selector, operator_name};
use crate::api::{ClusterServiceVersion, OperatorStatus, Subscription};
use crate::controller::apply::ApplyError;
use crate::failure::ReconcileFailure;

/// Name of this controller in logs and metrics.
const CONTROLLER: &str = crate::metrics::controllers::OPERATOR;

/// One install: a package in a namespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Install {
    pub package: Arc<str>,
    pub namespace: Arc<str>,
}

impl Install {
    pub fn new(package: &str, namespace: &str) -> Self {
        Self {
            package: package.into(),
            namespace: namespace.into(),
        }
    }

    /// The install an Operator named `name` stands for: a namespace name holds no dot, so it
    /// is what follows the last one.
    pub fn of_operator(name: &str) -> Option<Self> {
        let (package, namespace) = name.rsplit_once('.')?;
        (!package.is_empty() && !namespace.is_empty()).then(|| Self::new(package, namespace))
    }

    /// `<package>.<namespace>`.
    pub fn operator_name(&self) -> String {
        operator_name(&self.package, &self.namespace)
    }

    /// The component label key.
    pub fn label_key(&self) -> String {
        component_label_key(&self.operator_name())
    }
}

/// Why an Operator reconcile failed; retried with the shared back-off.
#[derive(Debug, thiserror::Error)]
pub enum OperatorApiError {
    /// A write of the Operator or of a Subscription's label failed.
    #[error(transparent)]
    Write(#[from] Box<ApplyError>),
}

impl From<ApplyError> for OperatorApiError {
    fn from(error: ApplyError) -> Self {
        Self::Write(Box::new(error))
    }
}

impl ReconcileFailure for OperatorApiError {
    fn kind(&self) -> &'static str {
        match self {
            Self::Write(error) => error.kind(),
        }
    }

    fn is_transient(&self) -> bool {
        match self {
            Self::Write(error) => error.is_transient(),
        }
    }
}

/// Builds the controller; the future runs until `shutdown`.
pub fn controller(
    context: Arc<Context>,
    reflectors: &Reflectors,
    shutdown: Shutdown,
) -> BoxFuture<'static, ()> {
    let (queue, receiver) = Queue::<Install>::new();
    let operators = Operators::default();
    let (changed, operator_events) = tokio::sync::mpsc::unbounded_channel();
    let watch = operators.clone().drive(context.client.clone(), changed);
    let triggers = triggers::run(context.clone(), reflectors, operator_events, queue.clone());
    let worker = {
        let context = context.clone();
        let shutdown = shutdown.clone();
        async move {
            if context.stores.wait_until_ready().await.is_err() || !operators.wait_listed().await {
                return;
            }
            for install in triggers::every_install(&context, &operators.names()) {
                queue.push(install);
            }
            super::work_queue::serve(
                &context,
                CONTROLLER,
                &queue,
                receiver,
                shutdown,
                |install: &Install| {
                    super::wiring::backoff_key(CONTROLLER, &install.namespace, &install.package)
                },
                |install: Install| reconcile(&context, &operators, install),
            )
            .await;
        }
    };
    async move {
        tokio::select! {
            _ = worker => {}
            _ = triggers => {}
            _ = watch => {}
            _ = shutdown => {}
        }
    }
    .boxed()
}

/// Brings the Operator of `install` in line with its components.
async fn reconcile(
    context: &Context,
    operators: &Operators,
    install: Install,
) -> Result<Action, OperatorApiError> {
    let name = install.operator_name();
    let key = install.label_key();
    let observed = operators.get(&name);
    let refs = components::components(context, &install);
    if refs.is_empty() {
        if observed.is_some_and(|observed| !observed.deleting) {
            write::delete(context, &name).await?;
        }
        return Ok(Action::await_change());
    }
    // The Subscription is a component: labelled once, as OLM's adoption controller does; so is
    // a CSV an older opcat created without the label.
    for subscription in components::subscriptions(context, &install) {
        if subscription.label(&key).is_none() {
            let name = subscription.name_any();
            write::label::<Subscription>(context, &install.namespace, &name, &key).await?;
        }
    }
    for csv in components::csvs(context, &install) {
        if csv.meta().deletion_timestamp.is_some() {
            continue;
        }
        if csv.label(&key).is_none() {
            let name = csv.name_any();
            write::label::<ClusterServiceVersion>(context, &install.namespace, &name, &key).await?;
        }
        // The CRDs it owns, shared with other installs: labelled by a patch of this label
        // alone (their applies carry no component label).
        for crd in components::unlabelled_crds(context, &csv, &key) {
            write::label_crd(context, &crd, &key).await?;
        }
    }
    let status = OperatorStatus {
        components: Some(Components {
            label_selector: Some(component_selector(&name)),
            refs: Some(refs),
        }),
    };
    match observed {
        // Being deleted: it is created again once gone (its deletion is a watch event).
        Some(observed) if observed.deleting => {}
        Some(observed) if observed.status == status_hash(Some(&status)) => {}
        Some(_) => write::status(context, &name, &status).await?,
        None => {
            write::create(context, &name).await?;
            write::status(context, &name, &status).await?;
        }
    }
    Ok(Action::await_change())
}
