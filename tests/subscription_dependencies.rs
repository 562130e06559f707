//! Operators that depend on other operators (issue 13), through the manager with the in-memory
//! API server and the real registry: the widget operator made to require the gadget operator,
//! which another CatalogSource serves. A dependency installs with a Subscription of its own in
//! the same InstallPlan, pulled and propagated with its own catalog's pull secrets; one already
//! installed is reused; catalog priority picks between providers. Failures are in
//! `subscription_dependency_failures.rs`.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod csv_support;
mod dependency_support;
mod ops_support;
mod subscription_support;
mod support;

use std::time::Duration;

use dependency_support::*;
use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::ResourceExt;
use kube::api::{Api, DeleteParams};
use opcat::api::{Approval, Subscription};
use opcat::controller::{keys, plan_record};
use opcat::fbc::property::Property;
use opcat::pull_secrets::CatalogRef;
use opcat::registry::{Keyring, PullSecret};
use subscription_support::{
    CATALOG, CATALOG_NAMESPACE, Fixture, NAMESPACE, PULL_SECRET, condition, full_catalog, plan_csvs,
};
use support::{Env, REGISTRY_PASSWORD, REGISTRY_USER};
use test_registry::{Distribution, User};

/// What the examples' pull secret may read: the example catalog and operators only.
const EXAMPLE_REPOSITORIES: &[&str] = &[
    "opcat-examples/catalog",
    "opcat-examples/widget-operator-bundle",
    "opcat-examples/widget-operator",
    "opcat-examples/gadget-operator-bundle",
    "opcat-examples/gadget-operator",
];
/// What the private catalog's pull secret may read: its catalog and the gadget operator's copy.
const PRIVATE_REPOSITORIES: &[&str] = &[
    "private/catalog",
    "private/gadget-operator-bundle",
    "private/gadget-operator",
];
const PRIVATE_USER: &str = "private-reader";
const PRIVATE_PASSWORD: &str = "pr1vate-Pa55-never-logged";
const PRIVATE_SECRET: &str = "private-creds";

fn copy_of(catalog: &str, secret: &str) -> String {
    CatalogRef {
        namespace: CATALOG_NAMESPACE.to_owned(),
        name: catalog.to_owned(),
    }
    .copy_name(secret)
}

fn keyring(env: &Env, user: &str, password: &str) -> Keyring {
    let secret = PullSecret::from(&support::pull_secret(
        "test",
        user,
        &test_registry::dockerconfigjson(&env.registry.host, user, password),
    ));
    Keyring::from_secrets([&secret]).0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dependency_from_a_private_catalog_installs_with_its_own_pull_secret_and_stays_after_its_dependent()
 {
    // Two credentials, each good for one catalog's repositories only: a bundle pulled with the
    // wrong catalog's secret would fail.
    let registry = Distribution::token(vec![
        User::scoped(REGISTRY_USER, REGISTRY_PASSWORD, EXAMPLE_REPOSITORIES),
        User::scoped(PRIVATE_USER, PRIVATE_PASSWORD, PRIVATE_REPOSITORIES),
    ]);
    let env = Env::with_registry(FakeApiServer::new(), registry).await;
    let fixture = Fixture::start_in(env).await;
    let env = &fixture.env;
    let private = keyring(env, PRIVATE_USER, PRIVATE_PASSWORD);
    push_gadgets_to(env, "private", &private).await;
    env.create(&support::pull_secret(
        CATALOG_NAMESPACE,
        PRIVATE_SECRET,
        &test_registry::dockerconfigjson(&env.registry.host, PRIVATE_USER, PRIVATE_PASSWORD),
    ))
    .await;
    Served {
        at: (CATALOG_NAMESPACE, "private"),
        repository: "private",
        variant: "v1",
        keyring: &private,
        secrets: &[PRIVATE_SECRET],
        priority: None,
    }
    .serve(env, moved_to(only(full_catalog(env), GADGET), "private"))
    .await;
    subscribe_widgets_needing_gadgets(&fixture, false).await;
    let dependency = dependency_subscription(GADGET, "alpha", (CATALOG_NAMESPACE, "private"));
    assert_eq!(dependency, "gadget-operator-alpha-private-olm");

    // One plan for both, dependency first, owned by both Subscriptions.
    let plan = fixture.wait_plan_phase(WIDGET_HEAD, "Complete").await;
    assert_eq!(
        plan.spec.cluster_service_version_names,
        [GADGET_HEAD, WIDGET_HEAD]
    );
    let owners: Vec<&str> = plan
        .owner_references()
        .iter()
        .map(|owner| owner.name.as_str())
        .collect();
    assert_eq!(owners, [dependency.as_str(), "widgets"]);
    let entries = plan_record::entries(&plan).unwrap();
    assert_eq!(entries[0].catalog(), "olm/private");
    assert_eq!(entries[0].subscription, dependency);
    assert_eq!(entries[0].required_by.as_ref().unwrap().csv, WIDGET_HEAD);
    assert_eq!(entries[1].catalog(), "olm/examples");
    let status = plan.status.as_ref().unwrap();
    assert_eq!(status.catalog_sources, ["private", CATALOG]);

    // The dependency's Subscription, as OLM makes it, recognises the plan and its CSV.
    let sub: Subscription = env.api.get(NAMESPACE, &dependency).unwrap();
    assert_eq!(sub.spec.package, GADGET);
    assert_eq!(sub.spec.catalog_source, "private");
    assert_eq!(sub.spec.catalog_source_namespace, CATALOG_NAMESPACE);
    assert_eq!(sub.spec.starting_csv.as_deref(), Some(GADGET_HEAD));
    assert_eq!(sub.spec.approval(), Approval::Automatic);
    assert!(
        sub.owner_references().is_empty(),
        "it outlives its dependent"
    );
    let installed = fixture.wait_installed(&dependency, GADGET_HEAD).await;
    let reference = installed.status.unwrap().install_plan_ref.unwrap();
    assert_eq!(reference.name, Some(plan.name_any()));
    fixture.wait_installed("widgets", WIDGET_HEAD).await;
    assert_eq!(subscriptions(&fixture), [dependency.as_str(), "widgets"]);
    assert_eq!(plan_csvs(&fixture.plans()), [GADGET_HEAD, WIDGET_HEAD]);

    // Each CSV from its own catalog, with its own catalog's pull secret and no other.
    let gadget = fixture.wait_csv_phase(GADGET_HEAD, "Succeeded").await;
    let widget = fixture.wait_csv_phase(WIDGET_HEAD, "Succeeded").await;
    assert_eq!(gadget.annotations()[keys::csv::CATALOG], "olm/private");
    assert_eq!(gadget.annotations()[keys::csv::SUBSCRIPTION], dependency);
    assert!(
        gadget.annotations()[keys::csv::BUNDLE_IMAGE].contains("/private/gadget-operator-bundle@"),
        "{:?}",
        gadget.annotations()
    );
    assert_eq!(widget.annotations()[keys::csv::CATALOG], "olm/examples");
    let properties = &widget.annotations()[keys::csv::PROPERTIES];
    assert!(
        properties.contains(r#""type":"olm.package.required""#),
        "{properties}"
    );
    let private_copy = copy_of("private", PRIVATE_SECRET);
    let example_copy = copy_of(CATALOG, PULL_SECRET);
    assert_eq!(
        csv_support::sa_pull_secrets(env, NAMESPACE, "gadget-operator"),
        [private_copy.as_str()]
    );
    assert_eq!(
        csv_support::template_pull_secrets(env, NAMESPACE, "gadget-operator"),
        [private_copy.as_str()]
    );
    assert_eq!(
        csv_support::sa_pull_secrets(env, NAMESPACE, "widget-controller"),
        [example_copy.as_str()]
    );
    assert_eq!(
        csv_support::template_pull_secrets(env, NAMESPACE, "widget-controller"),
        [example_copy.as_str()]
    );
    // The preflight resolved each operator's images with its own catalog's credentials.
    for name in [dependency.as_str(), "widgets"] {
        let sub = fixture
            .wait_condition(name, "PullCredentialsReady", "True")
            .await;
        let ready = condition(&sub, "PullCredentialsReady").unwrap();
        assert_eq!(ready.reason.as_deref(), Some("ImagesResolvable"), "{name}");
    }
    // Each Subscription says which registries its copy holds (issue 23): the report mirrored.
    for (name, copy) in [
        (dependency.as_str(), &private_copy),
        ("widgets", &example_copy),
    ] {
        let sub = fixture
            .wait_condition(name, "PullSecretsScoped", "True")
            .await;
        let scoped = condition(&sub, "PullSecretsScoped").unwrap();
        assert_eq!(scoped.reason.as_deref(), Some("ScopedToImages"), "{name}");
        let message = scoped.message.as_deref().unwrap_or_default();
        let holds = format!("as {NAMESPACE}/{copy} holds [{}]", env.registry.host);
        assert!(message.contains(&holds), "{name}: {message}");
    }

    // DESIGN invariant 5 with dependencies: a converged install writes nothing on resync.
    fixture
        .assert_no_writes_for(
            Duration::from_secs(3),
            "converged install with a dependency",
        )
        .await;

    // Uninstalling the widget operator leaves the gadget operator, its Subscription and its
    // pull secret; the widget operator's copy goes.
    csv_support::delete_csv(env, NAMESPACE, WIDGET_HEAD).await;
    csv_support::wait_gone(env, NAMESPACE, WIDGET_HEAD).await;
    env.wait_until("the examples' copy is deleted", TIMEOUT, || {
        env.api.get::<Secret>(NAMESPACE, &example_copy).is_none()
    })
    .await;
    assert!(env.api.get::<Secret>(NAMESPACE, &private_copy).is_some());
    assert_eq!(
        csv_support::sa_pull_secrets(env, NAMESPACE, "gadget-operator"),
        [private_copy.as_str()]
    );
    fixture.wait_csv_phase(GADGET_HEAD, "Succeeded").await;
    assert_eq!(subscriptions(&fixture), [dependency.as_str(), "widgets"]);
    assert_eq!(fixture.plans().len(), 1, "nothing reinstalled");

    // Removing the dependency's Subscription and CSV cleans up as for any operator.
    let subs: Api<Subscription> = Api::namespaced(env.client.clone(), NAMESPACE);
    subs.delete(&dependency, &DeleteParams::default())
        .await
        .unwrap();
    csv_support::delete_csv(env, NAMESPACE, GADGET_HEAD).await;
    csv_support::wait_gone(env, NAMESPACE, GADGET_HEAD).await;
    env.wait_until("the private catalog's copy is deleted", TIMEOUT, || {
        env.api.get::<Secret>(NAMESPACE, &private_copy).is_none()
    })
    .await;
    assert!(
        env.api
            .get::<ServiceAccount>(NAMESPACE, "gadget-operator")
            .is_none_or(|sa| !format!("{:?}", sa.image_pull_secrets).contains(&private_copy))
    );
    assert_eq!(subscriptions(&fixture), ["widgets"]);
    // Creating the dependency's Subscription is among what deploy/rbac.yaml allows.
    ops_support::assert_allowed_by_rbac(&env.manager_requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_required_api_brings_its_provider_and_manual_approval_holds_the_whole_plan() {
    let fixture = Fixture::start().await;
    let env = &fixture.env;
    fixture
        .load_catalog(
            widgets_requiring(env, Property::GvkRequired(gadget_api()), true),
            "needs-gadget-api",
        )
        .await;
    fixture
        .subscribe("widgets", |spec| {
            spec.install_plan_approval = Some(Approval::Manual)
        })
        .await;
    let plan = fixture
        .wait_plan_phase(WIDGET_HEAD, "RequiresApproval")
        .await;
    assert_eq!(
        plan.spec.cluster_service_version_names,
        [GADGET_HEAD, WIDGET_HEAD]
    );
    assert!(!plan.spec.approved);
    let dependency = dependency_subscription(GADGET, "alpha", (CATALOG_NAMESPACE, CATALOG));
    let sub: Subscription = env.api.get(NAMESPACE, &dependency).unwrap();
    assert_eq!(
        sub.spec.approval(),
        Approval::Manual,
        "the parent's approval"
    );
    let entries = plan_record::entries(&plan).unwrap();
    let required = entries[0].required_by.as_ref().unwrap();
    assert!(
        required
            .requirement
            .contains("example.opcat.dev/v1alpha1 Gadget"),
        "{required:?}"
    );
    // Nothing of either operator before approval.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        env.api
            .list::<opcat::api::ClusterServiceVersion>(Some(NAMESPACE))
            .is_empty()
    );
    let waiting = fixture
        .wait_condition(&dependency, "InstallPlanPending", "True")
        .await;
    assert_eq!(
        condition(&waiting, "InstallPlanPending")
            .unwrap()
            .reason
            .as_deref(),
        Some("RequiresApproval")
    );

    fixture.approve(&plan.name_any()).await;
    fixture.wait_installed(&dependency, GADGET_HEAD).await;
    fixture.wait_installed("widgets", WIDGET_HEAD).await;
    assert_eq!(fixture.plans().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installed_dependency_is_reused() {
    let fixture = Fixture::start().await;
    fixture
        .subscribe("my-gadgets", |spec| spec.package = GADGET.into())
        .await;
    fixture.wait_installed("my-gadgets", GADGET_HEAD).await;
    fixture.wait_csv_phase(GADGET_HEAD, "Succeeded").await;

    subscribe_widgets_needing_gadgets(&fixture, true).await;
    let plan = fixture.wait_plan_phase(WIDGET_HEAD, "Complete").await;
    assert_eq!(plan.spec.cluster_service_version_names, [WIDGET_HEAD]);
    fixture.wait_installed("widgets", WIDGET_HEAD).await;
    assert_eq!(subscriptions(&fixture), ["my-gadgets", "widgets"]);
    assert_eq!(plan_csvs(&fixture.plans()), [GADGET_HEAD, WIDGET_HEAD]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_priority_decides_between_two_providers() {
    let fixture = Fixture::start().await;
    let env = &fixture.env;
    let keyring = support::keyring_for(&env.registry);
    let gadgets = only(full_catalog(env), GADGET);
    // The same gadget operator from a catalog in the Subscription's namespace (priority 0) and
    // one in the global catalog namespace (priority 10): priority wins over the namespace.
    env.create(&env.pull_secret(NAMESPACE, PULL_SECRET)).await;
    Served {
        at: (NAMESPACE, "local-gadgets"),
        repository: "opcat-examples",
        variant: "local-gadgets",
        keyring: &keyring,
        secrets: &[PULL_SECRET],
        priority: None,
    }
    .serve(env, gadgets.clone())
    .await;
    Served {
        at: (GLOBAL, "preferred-gadgets"),
        repository: "opcat-examples",
        variant: "preferred-gadgets",
        keyring: &keyring,
        secrets: &[PULL_SECRET],
        priority: Some(10),
    }
    .serve(env, gadgets)
    .await;
    subscribe_widgets_needing_gadgets(&fixture, false).await;
    let plan = fixture.wait_plan_phase(WIDGET_HEAD, "Complete").await;
    let entries = plan_record::entries(&plan).unwrap();
    assert_eq!(entries[0].name, GADGET_HEAD);
    assert_eq!(entries[0].catalog(), "olm/preferred-gadgets");
    let dependency = dependency_subscription(GADGET, "alpha", (GLOBAL, "preferred-gadgets"));
    fixture.wait_installed(&dependency, GADGET_HEAD).await;
    let gadget = fixture.wait_csv(GADGET_HEAD).await;
    assert_eq!(
        gadget.annotations()[keys::csv::CATALOG],
        "olm/preferred-gadgets"
    );
}

use subscription_support::TIMEOUT;
