//! The real `opcat run` binary, as an admin runs it: against the in-memory API server over HTTP
//! (a kubeconfig), the real `docker-registry` with TLS (`--ca-file`) and basic auth, the example
//! operator pushed with the real `opcat bundle push` / `opcat catalog push`, and the
//! `deploy/examples/` manifests. It installs from the private catalog end to end, survives a
//! SIGTERM in the middle of the install and a restart (converges, one InstallPlan, every request
//! allowed by `deploy/rbac.yaml`), still follows a pull-secret rotation afterwards, and its logs
//! never carry the registry passwords, in clear or in base64.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ops_support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use base64::Engine as _;
use fake_apiserver::FakeApiServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};
use kube::ResourceExt;
use opcat_demo::cluster::{Cluster, Olm, wait_for};
use opcat_demo::examples::{self, Manifest};
use opcat_demo::opcat_process::{OpcatProcess, RunConfig};
use opcat_demo::publish::{self, PushConfig};
use serde_json::Value;
use test_registry::{Auth, Distribution, User};

const NAMESPACE: &str = "widgets";
const CSV: &str = "widget-operator.v1.2.0";
const SUBSCRIPTION: &str = "widget-operator";
const TIMEOUT: Duration = Duration::from_secs(120);

fn opcat() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_opcat"))
}

fn text<'v>(object: &'v Value, pointer: &str) -> &'v str {
    opcat_demo::narrate::text(object, pointer)
}

/// The registry (users `reader` and `rotated`) with the examples pushed by the opcat CLI.
async fn registry_with_examples(work: &std::path::Path) -> (Distribution, User, User) {
    let reader = User::new("e2e-reader", &opcat_demo::random_password());
    let rotated = User::new("e2e-rotated", &opcat_demo::random_password());
    let users = vec![reader.clone(), rotated.clone()];
    let registry = tokio::task::spawn_blocking(move || Distribution::start(Auth::Basic(users)))
        .await
        .unwrap();
    let push_secret = work.join("push-secret.yaml");
    std::fs::write(
        &push_secret,
        test_registry::pull_secret_yaml("push", &registry.dockerconfigjson()),
    )
    .unwrap();
    let config = PushConfig {
        opcat: opcat(),
        registry_host: registry.host.clone(),
        pull_secret: push_secret,
        ca_file: registry.ca.ca_pem.clone(),
    };
    let repo = ops_support::repo_root();
    let content = work.join("content");
    tokio::task::spawn_blocking(move || publish::push_examples(&config, &repo, &content))
        .await
        .unwrap()
        .expect("push the examples with the opcat CLI");
    (registry, reader, rotated)
}

/// `deploy/examples` for the widgets install, the pull Secret carrying `reader`'s credentials.
fn widgets_manifests(registry: &Distribution, reader: &User) -> Vec<Manifest> {
    let all = examples::load(
        &ops_support::repo_root().join("deploy/examples"),
        &registry.host,
    )
    .unwrap();
    let mut manifests = examples::from_files(
        &all,
        &[
            "namespaces.yaml",
            "pull-secret.yaml",
            "catalog-source.yaml",
            "operator-group.yaml",
            "subscription.yaml",
        ],
    );
    let credentials =
        test_registry::dockerconfigjson(&registry.host, &reader.username, &reader.password);
    for manifest in &mut manifests {
        if manifest.kind() == "Secret" {
            examples::set_dockerconfigjson(manifest, &credentials);
        }
    }
    manifests
}

async fn install_plans(cluster: &Cluster) -> Vec<String> {
    cluster
        .olm_list(Olm::InstallPlan, Some(NAMESPACE))
        .await
        .unwrap()
        .iter()
        .map(|plan| text(plan, "/metadata/name").to_owned())
        .collect()
}

/// Waits until no write reaches the API server for one second, checking on the way that every
/// request opcat made is allowed by `deploy/rbac.yaml` (the test itself sends nothing then).
async fn wait_quiet_within_rbac(api: &FakeApiServer, what: &str) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        api.reset_counts();
        tokio::time::sleep(Duration::from_secs(1)).await;
        let counts = api.request_counts();
        ops_support::assert_allowed_by_rbac(&counts);
        if counts.writes() == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: still writing after {TIMEOUT:?}:\n{counts}"
        );
    }
}

/// The installed operator as the admin sees it: Subscription at the latest CSV, CSV
/// Succeeded, the pull-secret copy on every ServiceAccount and Deployment of the namespace.
/// Returns the copy.
async fn assert_installed(cluster: &Cluster, opcat: &OpcatProcess) -> Secret {
    let diagnose = |error: opcat_demo::cluster::ClusterError| async move {
        let plans = cluster.olm_list(Olm::InstallPlan, Some(NAMESPACE)).await;
        panic!(
            "{error}\nInstallPlans: {plans:#?}\nopcat's log:\n{}",
            opcat.log()
        )
    };
    let subscription = match cluster
        .wait_olm(
            (Olm::Subscription, NAMESPACE, SUBSCRIPTION),
            "the Subscription to be AtLatestKnown",
            TIMEOUT,
            |s| text(s, "/status/state") == "AtLatestKnown",
        )
        .await
    {
        Ok(subscription) => subscription,
        Err(error) => diagnose(error).await,
    };
    assert_eq!(text(&subscription, "/status/installedCSV"), CSV);
    if let Err(error) = cluster
        .wait_olm(
            (Olm::ClusterServiceVersion, NAMESPACE, CSV),
            "the CSV to succeed",
            TIMEOUT,
            |c| text(c, "/status/phase") == "Succeeded",
        )
        .await
    {
        diagnose(error).await;
    }
    let copies: Vec<Secret> = cluster
        .list(Some(NAMESPACE), "opcat.dev/managed=true")
        .await
        .unwrap();
    assert_eq!(copies.len(), 1, "one copy of the pull secret: {copies:?}");
    let copy = copies[0].name_any();
    let deployments: Vec<Deployment> = cluster.list(Some(NAMESPACE), "").await.unwrap();
    assert_eq!(deployments.len(), 2, "the bundle's two Deployments");
    for deployment in &deployments {
        let lines = opcat_demo::narrate::deployment(deployment);
        assert!(
            lines[1].contains(&copy),
            "{} lacks the copy: {lines:?}",
            deployment.name_any()
        );
    }
    let accounts: Vec<ServiceAccount> = cluster.list(Some(NAMESPACE), "").await.unwrap();
    for name in ["default", "widget-auditor", "widget-controller"] {
        let account = accounts
            .iter()
            .find(|a| a.name_any() == name)
            .unwrap_or_else(|| panic!("ServiceAccount {name} missing"));
        let names = opcat_demo::narrate::pull_secret_names(account);
        assert!(names.contains(&copy), "{name}: {names:?}");
    }
    copies.into_iter().next().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opcat_run_installs_from_a_private_catalog_survives_a_restart_and_never_logs_secrets() {
    let work = tempfile::tempdir().unwrap();
    let (registry, reader, rotated) = registry_with_examples(work.path()).await;
    let api = ops_support::api_server(&[]).await;
    let http = api.serve_http().await.unwrap();
    let cluster = Cluster {
        client: api.client(),
    };
    let cache_dir = work.path().join("cache");
    std::fs::create_dir_all(&cache_dir).unwrap();
    let config = RunConfig {
        binary: opcat(),
        kubeconfig: http.kubeconfig_path().to_owned(),
        ca_files: vec![registry.ca.ca_pem.clone()],
        cache_dir,
        admin_address: std::net::SocketAddr::from(([127, 0, 0, 1], test_registry::free_port())),
        // opcat at debug: the most it ever says about credentials.
        log_filter: "info,opcat=debug".to_owned(),
        log_file: work.path().join("opcat.log"),
        extra_args: Vec::new(),
    };
    let mut first = OpcatProcess::start(&config).unwrap();
    first.wait_reconciling(TIMEOUT).await.unwrap();

    // The admin applies the examples; a little API latency keeps the install in flight longer.
    api.set_latency(Duration::from_millis(10));
    let manifests = widgets_manifests(&registry, &reader);
    for manifest in &manifests {
        examples::apply(&cluster.client, manifest).await.unwrap();
    }
    let plans = wait_for("opcat to create an InstallPlan", TIMEOUT, || async {
        let plans = install_plans(&cluster).await;
        Ok(if plans.is_empty() {
            Err("none".to_owned())
        } else {
            Ok(plans)
        })
    })
    .await
    .unwrap();

    // SIGTERM as soon as the install started: a graceful stop, exit 0.
    let status = first.terminate(Duration::from_secs(60)).await.unwrap();
    assert!(status.success(), "SIGTERM exit: {status}\n{}", first.log());
    api.set_latency(Duration::ZERO);

    // The restarted process finishes the install (or finds it done) without a second plan.
    let mut second = OpcatProcess::start(&config).unwrap();
    second.wait_reconciling(TIMEOUT).await.unwrap();
    let copy = assert_installed(&cluster, &second).await;
    wait_quiet_within_rbac(&api, "after the restart").await;
    assert_eq!(
        install_plans(&cluster).await,
        plans,
        "the restart made no second InstallPlan"
    );
    let csv = cluster
        .olm(Olm::ClusterServiceVersion, NAMESPACE, CSV)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(text(&csv, "/status/phase"), "Succeeded");

    // It still follows the source after the restart: rotation reaches the copy in place.
    let rotated_json =
        test_registry::dockerconfigjson(&registry.host, &rotated.username, &rotated.password);
    let mut secret = examples::from_files(&manifests, &["pull-secret.yaml"]).remove(0);
    examples::set_dockerconfigjson(&mut secret, &rotated_json);
    examples::apply(&cluster.client, &secret).await.unwrap();
    let after = wait_for("the copy to carry the rotated data", TIMEOUT, || async {
        let found = cluster.get::<Secret>(NAMESPACE, &copy.name_any()).await?;
        Ok(match found {
            Some(s)
                if s.data.as_ref().and_then(|d| d.get(".dockerconfigjson"))
                    == Some(&k8s_openapi::ByteString(rotated_json.clone().into_bytes())) =>
            {
                Ok(s)
            }
            other => Err(format!("{:?}", other.map(|s| s.metadata.resource_version))),
        })
    })
    .await
    .unwrap();
    assert_eq!(after.uid(), copy.uid(), "updated in place, not recreated");

    let status = second.terminate(Duration::from_secs(60)).await.unwrap();
    assert!(status.success(), "SIGTERM exit: {status}\n{}", second.log());

    // Both runs' logs: they did the work, and never said a password.
    let log = second.log();
    assert!(
        log.contains(CSV) && log.contains("opcat-examples"),
        "the log shows the install:\n{log}"
    );
    let base64 = base64::engine::general_purpose::STANDARD;
    for user in [&reader, &rotated] {
        let pair = format!("{}:{}", user.username, user.password);
        let json = test_registry::dockerconfigjson(&registry.host, &user.username, &user.password);
        for (what, needle) in [
            ("password", user.password.clone()),
            ("base64 of the password", base64.encode(&user.password)),
            ("base64 of user:password", base64.encode(&pair)),
            ("base64 of the dockerconfigjson", base64.encode(&json)),
        ] {
            assert!(
                !log.contains(&needle),
                "{}'s {what} is in opcat's log:\n{log}",
                user.username
            );
        }
    }
}
