//! Which installs an event concerns: the Subscriptions, CSVs, InstallPlans, pull-secret copies,
//! Deployments and OperatorConditions the shared watches see (applied or deleted), and the
//! Operators themselves (one deleted while its install has components comes back). Reads the
//! stores only.

use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use kube::ResourceExt;
use kube::runtime::reflector::ObjectRef;
use tokio::sync::mpsc;

use super::Install;
use super::components::install_of_csv;
use crate::api::operator::COMPONENT_LABEL_PREFIX;
use crate::controller::context::Context;
use crate::controller::csv::triggers as csv_triggers;
use crate::controller::plan_record;
use crate::controller::stored_copy::StoredCopy;
use crate::controller::stored_object::{StoredCsv, StoredPlan, StoredSubscription};
use crate::controller::stores::Reflectors;
use crate::controller::work_queue::Queue;

/// How long an event waits before its install is looked at: an install's objects change in
/// bursts (its CSV's phases, its Deployments' conditions, its Subscription's status; opcat's
/// own create and status write of the Operator), and one status write after a burst is enough.
const SETTLE: Duration = Duration::from_secs(1);

/// The install of a Subscription.
fn of_subscription(subscription: &StoredSubscription) -> Option<Install> {
    let namespace = subscription.namespace()?;
    (!subscription.spec.package.is_empty())
        .then(|| Install::new(&subscription.spec.package, &namespace))
}

/// The installs an InstallPlan serves (its recorded bundles' packages).
fn of_plan(plan: &StoredPlan) -> Vec<Install> {
    let Some(namespace) = plan.namespace() else {
        return Vec::new();
    };
    plan_record::entries(&plan.object())
        .unwrap_or_default()
        .iter()
        .map(|entry| Install::new(&entry.package, &namespace))
        .collect()
}

/// The installs a copy may belong to: those of the CSVs in its namespace, and those its
/// component labels name.
fn of_copy(context: &Context, copy: &StoredCopy) -> Vec<Install> {
    let mut installs = csvs_installs(
        context,
        csv_triggers::copy(&context.stores.namespaced.csvs, copy),
    );
    let secret = copy.to_secret();
    installs.extend(
        secret
            .labels()
            .keys()
            .filter_map(|key| Install::of_operator(key.strip_prefix(COMPONENT_LABEL_PREFIX)?)),
    );
    installs
}

fn csvs_installs(context: &Context, refs: Vec<ObjectRef<StoredCsv>>) -> Vec<Install> {
    refs.iter()
        .filter_map(|csv| context.stores.csvs.get(csv))
        .filter_map(|csv| install_of_csv(&csv))
        .collect()
}

/// The install of the CSV `namespace/name`, from the store.
fn of_csv_named(context: &Context, namespace: Option<String>, name: &str) -> Vec<Install> {
    let Some(namespace) = namespace else {
        return Vec::new();
    };
    csvs_installs(context, vec![ObjectRef::new(name).within(&namespace)])
}

/// Every install the stores know, and the install of every Operator: what a start looks at.
pub fn every_install(context: &Context, operators: &[String]) -> Vec<Install> {
    let stores = &context.stores;
    let mut installs: Vec<Install> = stores
        .subscriptions
        .state()
        .iter()
        .filter_map(|subscription| of_subscription(subscription))
        .collect();
    installs.extend(
        stores
            .csvs
            .state()
            .iter()
            .filter_map(|csv| install_of_csv(csv)),
    );
    installs.extend(
        operators
            .iter()
            .filter_map(|name| Install::of_operator(name)),
    );
    installs
}

/// Feeds `queue` from the watches until they stop.
pub fn run(
    context: Arc<Context>,
    reflectors: &Reflectors,
    operator_events: mpsc::UnboundedReceiver<String>,
    queue: Queue<Install>,
) -> futures::future::BoxFuture<'static, ()> {
    let subscriptions = futures::stream::select(
        reflectors.subscriptions.subscribe(),
        reflectors.subscriptions.subscribe_deleted(),
    );
    let csvs = futures::stream::select(
        reflectors.csvs.subscribe(),
        reflectors.csvs.subscribe_deleted(),
    );
    let plans = futures::stream::select(
        reflectors.install_plans.subscribe(),
        reflectors.install_plans.subscribe_deleted(),
    );
    let copies = futures::stream::select(
        reflectors.copies.subscribe(),
        reflectors.copies.subscribe_deleted(),
    );
    let deployments = reflectors.deployments.subscribe();
    let conditions = futures::stream::select(
        reflectors.operator_conditions.subscribe(),
        reflectors.operator_conditions.subscribe_deleted(),
    );
    let mut operator_events = operator_events;
    let operators = futures::stream::poll_fn(move |cx| operator_events.poll_recv(cx));

    let installs = {
        let context = context.clone();
        let subscriptions = subscriptions.filter_map(|s| std::future::ready(of_subscription(&s)));
        let csvs = csvs.filter_map(|csv| std::future::ready(install_of_csv(&csv)));
        let plans = plans.flat_map(|plan| futures::stream::iter(of_plan(&plan)));
        let copies = {
            let context = context.clone();
            copies.flat_map(move |copy| futures::stream::iter(of_copy(&context, &copy)))
        };
        let deployments = {
            let context = context.clone();
            deployments.flat_map(move |deployment| {
                let refs = csv_triggers::deployment(&deployment.full_meta());
                futures::stream::iter(csvs_installs(&context, refs))
            })
        };
        let conditions = conditions.flat_map(move |condition| {
            futures::stream::iter(of_csv_named(
                &context,
                condition.namespace(),
                &condition.name_any(),
            ))
        });
        futures::stream::select_all([
            subscriptions.boxed(),
            csvs.boxed(),
            plans.boxed(),
            copies.boxed(),
            deployments.boxed(),
            conditions.boxed(),
        ])
    };
    let operators = operators.filter_map(|name| std::future::ready(Install::of_operator(&name)));
    futures::stream::select(installs, operators)
        .for_each(move |install| {
            queue.push_settled(install, SETTLE);
            std::future::ready(())
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operator_name_splits_at_its_last_dot() {
        assert_eq!(
            Install::of_operator("etcd.io.team-a"),
            Some(Install::new("etcd.io", "team-a"))
        );
        assert_eq!(Install::of_operator("nodot"), None);
        assert_eq!(Install::of_operator("trailing."), None);
    }
}
