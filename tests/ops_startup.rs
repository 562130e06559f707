//! What `opcat run` says at start-up about the cluster it is pointed at, through the real
//! binary: a missing kubeconfig, an unreachable or too old API server, `--context`, and OLM's
//! own controllers running on the same API group (refused unless --allow-olm-coexistence).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ops_support;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fake_apiserver::{FakeApiServer, HttpHandle};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, PostParams};
use ops_support::api_server;

const TIMEOUT: Duration = Duration::from_secs(60);
const STARTED: &str = "starting opcat";

/// `opcat run` with nothing from this environment but what the test sets.
fn opcat(cache: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_opcat"));
    for (name, _) in std::env::vars() {
        if name.starts_with("OPCAT_")
            || name.starts_with("POD_")
            || name.starts_with("KUBERNETES_")
            || name == "KUBECONFIG"
        {
            command.env_remove(name);
        }
    }
    let home = cache.join("home");
    std::fs::create_dir_all(&home).unwrap();
    command
        .env("RUST_LOG", "info")
        .env("HOME", home)
        .args(["run", "--admin-address", "127.0.0.1:0"])
        .args(["--cache-dir", cache.join("cache").to_str().unwrap()]);
    command
}

/// Runs until exit, or until the log says the controllers start (then kills it): the exit
/// status if it exited by itself, and its stderr.
fn run(command: &mut Command) -> (Option<std::process::ExitStatus>, String) {
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log.reopen().unwrap())
        .spawn()
        .expect("start opcat run");
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let text = std::fs::read_to_string(log.path()).unwrap_or_default();
        if let Some(status) = child.try_wait().unwrap() {
            return (Some(status), std::fs::read_to_string(log.path()).unwrap());
        }
        if text.contains(STARTED) {
            child.kill().unwrap();
            child.wait().unwrap();
            return (None, text);
        }
        assert!(
            Instant::now() < deadline,
            "opcat neither started nor exited:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn refused(outcome: &(Option<std::process::ExitStatus>, String)) -> &str {
    let (status, log) = outcome;
    assert!(
        status.is_some_and(|status| !status.success()),
        "expected a refusal:\n{log}"
    );
    assert!(!log.contains(STARTED), "{log}");
    log
}

fn started(outcome: &(Option<std::process::ExitStatus>, String)) -> &str {
    let (status, log) = outcome;
    assert!(
        status.is_none(),
        "expected a start, exited {status:?}:\n{log}"
    );
    assert!(
        !log.contains('\u{1b}'),
        "ANSI escapes in a log file:\n{log:?}"
    );
    log
}

async fn olm_deployment(api: &FakeApiServer, namespace: &str, name: &str, replicas: i32) {
    let labels = BTreeMap::from([("app".to_owned(), name.to_owned())]);
    let deployment = Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(namespace.into()),
            labels: Some(labels.clone()),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some("olm-operator-serviceaccount".into()),
                    containers: vec![Container {
                        name: name.into(),
                        image: Some("quay.io/operator-framework/olm:v0.32.0".into()),
                        command: Some(vec![if name == "olm-operator" {
                            "/bin/olm".into()
                        } else {
                            "/bin/catalog".into()
                        }]),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    };
    Api::<Deployment>::namespaced(api.client(), namespace)
        .create(&PostParams::default(), &deployment)
        .await
        .expect("create OLM's Deployment");
}

async fn serve(api: &FakeApiServer) -> HttpHandle {
    api.serve_http().await.expect("serve the API over HTTP")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_olm_controllers_are_refused_by_name_unless_coexistence_is_allowed() {
    let api = api_server(&["olm"]).await;
    olm_deployment(&api, "olm", "olm-operator", 1).await;
    olm_deployment(&api, "olm", "catalog-operator", 1).await;
    let http = serve(&api).await;
    let scratch = tempfile::tempdir().unwrap();
    let kubeconfig = http.kubeconfig_path().to_str().unwrap();

    let outcome = run(opcat(scratch.path()).args(["--kubeconfig", kubeconfig]));
    let log = refused(&outcome);
    for expected in [
        "OLM is running in this cluster",
        "Deployment olm/catalog-operator (1 replica)",
        "Deployment olm/olm-operator (1 replica)",
        "kubectl -n olm scale deployment catalog-operator olm-operator --replicas=0",
        "--allow-olm-coexistence",
    ] {
        assert!(log.contains(expected), "{expected:?} missing:\n{log}");
    }

    let outcome = run(opcat(scratch.path())
        .args(["--kubeconfig", kubeconfig])
        .arg("--allow-olm-coexistence"));
    let log = started(&outcome);
    assert!(log.contains("OLM runs alongside opcat"), "{log}");

    // The migration path: OLM scaled to zero is not running.
    let deployments: Api<Deployment> = Api::namespaced(api.client(), "olm");
    for name in ["olm-operator", "catalog-operator"] {
        let patch = serde_json::json!({"spec": {"replicas": 0}});
        deployments
            .patch(name, &Default::default(), &kube::api::Patch::Merge(&patch))
            .await
            .unwrap();
    }
    let outcome = run(opcat(scratch.path()).args(["--kubeconfig", kubeconfig]));
    let log = started(&outcome);
    assert!(!log.contains("OLM"), "{log}");
}

#[test]
fn a_missing_kubeconfig_is_named_once_with_its_cause_once() {
    let scratch = tempfile::tempdir().unwrap();
    let missing = scratch.path().join("no-such-kubeconfig");
    let missing = missing.to_str().unwrap();
    for outcome in [
        run(opcat(scratch.path()).args(["--kubeconfig", missing])),
        run(opcat(scratch.path()).env("KUBECONFIG", missing)),
    ] {
        let log = refused(&outcome);
        assert!(
            log.contains(&format!("cannot read kubeconfig {missing}: No such file")),
            "{log}"
        );
        assert_eq!(log.matches(missing).count(), 1, "{log}");
        assert_eq!(log.matches("No such file").count(), 1, "{log}");
        assert!(!log.contains("admin server listening"), "{log}");
    }
    // Nothing at all: what opcat looked for, and the flag that helps.
    let outcome = run(&mut opcat(scratch.path()));
    let log = refused(&outcome);
    assert!(log.contains("no Kubernetes configuration"), "{log}");
    assert!(log.contains("KUBERNETES_SERVICE_HOST"), "{log}");
}

/// A kubeconfig with a context `dead` (current) at a port nobody listens on, and `fake` at
/// the fake API server.
fn two_context_kubeconfig(dir: &Path, http: &HttpHandle, dead: &str) -> String {
    let yaml = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: dead
  cluster: {{server: '{dead}'}}
- name: fake
  cluster: {{server: '{}'}}
contexts:
- name: dead
  context: {{cluster: dead, user: nobody}}
- name: fake
  context: {{cluster: fake, user: nobody}}
current-context: dead
users:
- name: nobody
  user: {{}}
",
        http.url()
    );
    let path = dir.join("kubeconfig");
    std::fs::write(&path, yaml).unwrap();
    path.to_str().unwrap().to_owned()
}

fn unused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_named_and_context_picks_another() {
    let api = api_server(&[]).await;
    let http = serve(&api).await;
    let scratch = tempfile::tempdir().unwrap();
    let dead = unused_url();
    let kubeconfig = two_context_kubeconfig(scratch.path(), &http, &dead);

    let outcome = run(opcat(scratch.path()).env("KUBECONFIG", &kubeconfig));
    let log = refused(&outcome);
    assert!(
        log.contains(&format!("cannot reach the Kubernetes API server at {dead}")),
        "{log}"
    );
    assert!(log.contains("Connection refused"), "{log}");
    assert!(!log.contains("CustomResourceDefinition"), "{log}");

    let outcome = run(opcat(scratch.path())
        .env("KUBECONFIG", &kubeconfig)
        .args(["--context", "fake"]));
    let log = started(&outcome);
    assert!(
        log.contains("connected to the Kubernetes API server"),
        "{log}"
    );
    assert!(log.contains(&http.url()), "{log}");
    assert!(log.contains("v1.33.0-fake"), "{log}");

    let outcome = run(opcat(scratch.path())
        .env("KUBECONFIG", &kubeconfig)
        .args(["--context", "staging"]));
    let log = refused(&outcome);
    assert!(
        log.contains("context \"staging\" is not in kubeconfig") && log.contains("dead, fake"),
        "{log}"
    );
}

/// An HTTP server answering every request with `GET /version` of Kubernetes 1.`minor`.
fn old_server(minor: u32) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buffer = [0u8; 4096];
            let _ = stream.read(&mut buffer);
            let body = format!(
                r#"{{"major":"1","minor":"{minor}","gitVersion":"v1.{minor}.4","gitCommit":"","gitTreeState":"clean","buildDate":"","goVersion":"","compiler":"gc","platform":"linux/amd64"}}"#
            );
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

#[test]
fn a_kubernetes_older_than_1_22_is_refused_with_its_version() {
    let scratch = tempfile::tempdir().unwrap();
    let url = old_server(21);
    let kubeconfig = scratch.path().join("old");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: old\n  cluster: {{server: '{url}'}}\n\
             contexts:\n- name: old\n  context: {{cluster: old, user: u}}\ncurrent-context: old\n\
             users:\n- name: u\n  user: {{}}\n"
        ),
    )
    .unwrap();
    let outcome = run(opcat(scratch.path()).args(["--kubeconfig", kubeconfig.to_str().unwrap()]));
    let log = refused(&outcome);
    assert!(
        log.contains(&format!(
            "the Kubernetes API server at {url} runs v1.21.4; opcat needs Kubernetes 1.22 or newer"
        )),
        "{log}"
    );
}

#[test]
fn the_help_says_where_the_cluster_comes_from() {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_opcat"))
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&output.stdout);
    for expected in [
        "--kubeconfig <PATH>",
        "--context <NAME>",
        "KUBECONFIG",
        "in-cluster service account",
        "--allow-olm-coexistence",
        "[env: OPCAT_ALLOW_OLM_COEXISTENCE=]",
    ] {
        assert!(help.contains(expected), "{expected:?} missing:\n{help}");
    }
}
