//! Operators whose dependencies cannot be met (issue 13), through the manager with the
//! in-memory API server and the real registry: requirements that conflict or that no catalog
//! satisfies are a `ResolutionFailed` condition naming the chain, resolved again when the catalog
//! is re-pushed (and the dependency then upgrades through its own Subscription); a bundle image
//! that declares more than its catalog entry fails its InstallPlan.
// Test code: helpers outside #[test] functions may unwrap too.
#![allow(clippy::unwrap_used, clippy::expect_used)]
mod dependency_support;
mod subscription_support;
mod support;

use dependency_support::*;
use kube::ResourceExt;
use subscription_support::{
    CATALOG, CATALOG_NAMESPACE, Fixture, NAMESPACE, TIMEOUT, condition, full_catalog, plan_csvs,
};
use support::Env;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsatisfiable_dependencies_are_explained_installed_once_the_catalog_is_fixed_and_upgraded_on_their_own()
 {
    let fixture = Fixture::start_polling().await;
    let env = &fixture.env;
    // Two required ranges that no single gadget operator meets: widget needs >=0.2.0, and the
    // helper it also needs wants <0.2.0.
    let mut conflict = requiring(
        widgets_requiring(env, package_required(GADGET, ">=0.2.0"), true),
        WIDGET,
        package_required("gadget-helper", ">=1.0.0"),
    );
    conflict.merge(helper_package(env, "<0.2.0"));
    fixture.repush_catalog(conflict, "conflict").await;
    fixture.subscribe("widgets", |_| {}).await;
    let failed = fixture
        .wait_condition("widgets", "ResolutionFailed", "True")
        .await;
    let reason = condition(&failed, "ResolutionFailed").unwrap();
    assert_eq!(reason.reason.as_deref(), Some("ConstraintsNotSatisfiable"));
    let message = reason.message.clone().unwrap();
    assert!(
        message.starts_with("constraints not satisfiable: "),
        "{message}"
    );
    for part in [">=0.2.0", "<0.2.0", "gadget-helper", GADGET] {
        assert!(message.contains(part), "{part} not in {message}");
    }

    // A range no catalog satisfies: the condition names the chain.
    fixture
        .repush_catalog(
            widgets_requiring(env, package_required(GADGET, ">=1.0.0"), true),
            "too-new",
        )
        .await;
    let failed = fixture
        .wait_subscription("widgets", "the new failure", |sub| {
            condition(sub, "ResolutionFailed")
                .and_then(|c| c.message.as_deref())
                .is_some_and(|m| m.contains(">=1.0.0"))
        })
        .await;
    let message = condition(&failed, "ResolutionFailed")
        .unwrap()
        .message
        .clone()
        .unwrap();
    assert!(
        message.contains(WIDGET) && message.contains(GADGET),
        "{message}"
    );
    assert!(fixture.plans().is_empty(), "nothing installed: {message}");
    // One warning event per distinct failure (published right after the status).
    let failure_events = || {
        env.api
            .list::<k8s_openapi::api::events::v1::Event>(Some(NAMESPACE))
            .iter()
            .filter(|event| event.reason.as_deref() == Some("ResolutionFailed"))
            .filter_map(|event| event.note.clone())
            .collect::<Vec<_>>()
    };
    env.wait_until("an event for each failure", TIMEOUT, || {
        failure_events().len() >= 2
    })
    .await;
    let notes = failure_events();
    assert!(
        notes.iter().any(|note| note.contains("<0.2.0"))
            && notes.iter().any(|note| note.contains(">=1.0.0")),
        "{notes:#?}"
    );

    // The catalog's maintainers publish a gadget operator that fits (its first release only):
    // it installs.
    fixture
        .repush_catalog(
            without_bundle(
                widgets_requiring(env, package_required(GADGET, ">=0.1.0"), true),
                GADGET_HEAD,
            ),
            "fixed",
        )
        .await;
    fixture.wait_installed("widgets", WIDGET_HEAD).await;
    let dependency = dependency_subscription(GADGET, "alpha", (CATALOG_NAMESPACE, CATALOG));
    fixture.wait_installed(&dependency, GADGET_FIRST).await;
    let fixed = fixture
        .wait_subscription("widgets", "failure cleared", |sub| {
            condition(sub, "ResolutionFailed").is_none()
        })
        .await;
    assert!(fixed.status.is_some());

    // The next gadget release reaches the dependency through its own Subscription, in a plan of
    // its own; the widget operator's stays as it is.
    fixture.wait_csv_phase(GADGET_FIRST, "Succeeded").await;
    fixture
        .repush_catalog(
            widgets_requiring(env, package_required(GADGET, ">=0.1.0"), true),
            "gadget-release",
        )
        .await;
    let upgrade = fixture.wait_upgrade(GADGET_FIRST, GADGET_HEAD).await;
    assert_eq!(upgrade.spec.cluster_service_version_names, [GADGET_HEAD]);
    let owners: Vec<&str> = upgrade
        .owner_references()
        .iter()
        .map(|owner| owner.name.as_str())
        .collect();
    assert_eq!(owners, [dependency.as_str()]);
    fixture.wait_installed(&dependency, GADGET_HEAD).await;
    assert_eq!(
        plan_csvs(&fixture.plans()),
        [GADGET_FIRST, WIDGET_HEAD, GADGET_HEAD]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bundle_image_declaring_more_than_its_catalog_entry_fails_its_plan_with_the_reason() {
    let fixture = Fixture::start().await;
    let env = &fixture.env;
    // The widget operator's image says (metadata/dependencies.yaml) it needs a gadget operator
    // no catalog has; its catalog entry does not say so, so resolution cannot know.
    let dir = env.registry.scratch("widget-with-dependencies");
    support::copy_rewritten(
        &env.images.bundles_dir.join(WIDGET).join("1.2.0"),
        &dir,
        &env.registry.host,
    );
    std::fs::write(
        dir.join("metadata/dependencies.yaml"),
        "dependencies:\n  - type: olm.package\n    value:\n      packageName: gadget-operator\n      version: \">=5.0.0\"\n",
    )
    .unwrap();
    let built = opcat::registry::push::build_bundle_image(&dir).unwrap();
    let image = env
        .registry
        .image("opcat-examples/widget-operator-bundle:v1.2.0-declared");
    env.opcat_registry
        .push(
            &image.parse().unwrap(),
            &built,
            &support::keyring_for(&env.registry),
        )
        .await
        .unwrap();
    let mut catalog = full_catalog(env);
    for bundle in catalog.bundles.iter_mut().filter(|b| b.name == WIDGET_HEAD) {
        bundle.image = image.clone();
    }
    fixture.load_catalog(catalog, "declared").await;
    fixture.subscribe("widgets", |_| {}).await;

    let plan = fixture.wait_plan_phase(WIDGET_HEAD, "Failed").await;
    let message = plan.status.as_ref().unwrap().message.clone().unwrap();
    assert_eq!(
        message,
        "bundle widget-operator.v1.2.0 declares in its metadata/dependencies.yaml that it \
         requires package gadget-operator >=5.0.0, but neither this InstallPlan nor an operator \
         installed in namespace operators provides it"
    );
    assert!(
        env.api
            .list::<opcat::api::ClusterServiceVersion>(Some(NAMESPACE))
            .is_empty()
    );
    let failed = fixture
        .wait_condition("widgets", "InstallPlanFailed", "True")
        .await;
    assert_eq!(
        condition(&failed, "InstallPlanFailed")
            .unwrap()
            .message
            .as_deref(),
        Some(message.as_str())
    );
}

/// A package `gadget-helper` whose only bundle requires the gadget operator in `range` (its
/// image is never pulled: the tests that use it cannot resolve).
fn helper_package(env: &Env, range: &str) -> opcat::fbc::DeclarativeConfig {
    let image = env
        .registry
        .image("opcat-examples/gadget-helper-bundle:v1.0.0");
    let text = format!(
        "schema: olm.package\nname: gadget-helper\ndefaultChannel: stable\n---\n\
         schema: olm.channel\npackage: gadget-helper\nname: stable\nentries:\n  - name: gadget-helper.v1.0.0\n---\n\
         schema: olm.bundle\npackage: gadget-helper\nname: gadget-helper.v1.0.0\nimage: {image}\n\
         properties:\n  - type: olm.package\n    value: {{packageName: gadget-helper, version: 1.0.0}}\n  \
         - type: olm.package.required\n    value: {{packageName: {GADGET}, versionRange: \"{range}\"}}\n"
    );
    opcat::fbc::DeclarativeConfig::parse(&text, std::path::Path::new("helper.yaml"))
        .expect("helper FBC")
}
