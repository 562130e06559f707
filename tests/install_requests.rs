//! The API requests of one install (issue 12): a Subscription to a catalog with a pull secret,
//! through its InstallPlan and CSV to `Succeeded`, stays within a budget of Events and status
//! writes, and creates its pull-secret copies and the RBAC opcat names without reading first.
//! Counted from the in-memory API server's per-client counters, not timed.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod subscription_support;
mod support;

use fake_apiserver::{RequestCounts, Verb};
use subscription_support::Fixture;

/// Requests with `verb` on `resource` (`subresource`, "" for the object itself) between two
/// snapshots of the manager's counters.
fn delta(
    before: &RequestCounts,
    after: &RequestCounts,
    verb: Verb,
    resource: &str,
    subresource: &str,
) -> u64 {
    after.get_subresource(verb, resource, subresource)
        - before.get_subresource(verb, resource, subresource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_install_publishes_one_event_and_writes_each_status_once_per_transition() {
    let fixture = Fixture::start().await;
    let env = &fixture.env;
    env.wait_quiet("the catalog loaded").await;
    let before = env.manager_requests();
    env.api.keep_log_of(support::MANAGER_AGENT);

    fixture.subscribe("widgets", |_| {}).await;
    let csv = "widget-operator.v1.2.0";
    fixture.wait_installed("widgets", csv).await;
    fixture.wait_csv_phase(csv, "Succeeded").await;
    env.wait_quiet("the install").await;
    let after = env.manager_requests();
    let count = |verb, resource, subresource| delta(&before, &after, verb, resource, subresource);

    let log: Vec<String> = env
        .api
        .request_log_of(support::MANAGER_AGENT)
        .iter()
        .filter(|request| !matches!(request.key.verb, Verb::List | Verb::Watch))
        .map(fake_apiserver::LoggedRequest::describe)
        .collect();
    let report = format!(
        "the manager's requests for one install, in order:\n{}\nall of them since the start:\n{after}",
        log.join("\n")
    );
    // InstallPlanCreated; no Event per copy, ServiceAccount, CSV or routine step.
    assert_eq!(count(Verb::Create, "events", ""), 1, "{report}");
    // The plan completes in one pass: Complete, without an Installing write first.
    assert_eq!(count(Verb::Patch, "installplans", "status"), 1, "{report}");
    // Pending and InstallReady ride on the first phase written; Installing waits for the
    // Deployments for a moment: Succeeded, and at most one Installing before it.
    assert!(
        count(Verb::Patch, "clusterserviceversions", "status") <= 2,
        "{report}"
    );
    // No write in the reconcile that created the plan; the plan's completion, the CSV and its
    // pull-secret report are awaited and written together.
    assert_eq!(count(Verb::Patch, "subscriptions", "status"), 1, "{report}");
    // The RBAC opcat names with a hash over its content is created without a GET first;
    // objects the bundle names are still looked up, so a foreign one is not taken over.
    for resource in ["roles", "rolebindings", "clusterrolebindings"] {
        assert_eq!(count(Verb::Get, resource, ""), 0, "{resource}: {report}");
        assert!(count(Verb::Patch, resource, "") > 0, "{resource}: {report}");
    }
    // So are OLM's provided-API and OperatorGroup roles, and none is read afterwards: the
    // aggregation controller filling the group roles' rules is a write opcat tolerates, told
    // apart from anyone else's by the roles' managedFields.
    assert_eq!(count(Verb::Get, "clusterroles", ""), 0, "{report}");
    assert!(count(Verb::Patch, "clusterroles", "") > 0, "{report}");
    // The OperatorCondition: one apply, from its watch; nothing to observe into its status yet.
    assert_eq!(count(Verb::Get, "operatorconditions", ""), 0, "{report}");
    assert_eq!(count(Verb::Patch, "operatorconditions", ""), 1, "{report}");
    assert_eq!(
        count(Verb::Patch, "operatorconditions", "status"),
        0,
        "{report}"
    );
    assert_eq!(count(Verb::Get, "deployments", ""), 2, "{report}");
    assert_eq!(count(Verb::Get, "services", ""), 1, "{report}");
    // Copies are created first: no GET of a copy's name to find nothing there.
    assert_eq!(count(Verb::Get, "secrets", ""), 0, "{report}");
    assert_eq!(count(Verb::Create, "secrets", ""), 1, "{report}");
}
