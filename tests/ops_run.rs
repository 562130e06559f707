//! The real `opcat run` binary against the in-memory API server over HTTP: configuration errors
//! are refused before anything starts; SIGTERM stops gracefully, releases the lease and exits
//! 0; a killed leader is replaced by a standby process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod ops_support;

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use fake_apiserver::{FakeApiServer, HttpHandle};
use k8s_openapi::api::coordination::v1::Lease;
use ops_support::{api_server, http_get};

const NAMESPACE: &str = "opcat-system";
const TIMEOUT: Duration = Duration::from_secs(60);

fn opcat() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_opcat"));
    // Only what a test sets: no kubeconfig, pod or opcat settings from the environment.
    for (name, _) in std::env::vars() {
        if name.starts_with("OPCAT_") || name.starts_with("POD_") || name == "KUBECONFIG" {
            command.env_remove(name);
        }
    }
    command.env("RUST_LOG", "info");
    command
}

/// A port nobody listens on right now.
fn free_port() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap()
}

fn run_to_end(command: &mut Command) -> Output {
    command.stdin(Stdio::null()).output().expect("run opcat")
}

#[test]
fn invalid_configuration_is_refused_before_anything_starts() {
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let cache = scratch.path().join("cache");
    let cache = cache.to_str().unwrap();
    let under_file = file.join("cache");
    // (arguments, environment, expected message)
    type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, &'a str);
    let cases: Vec<Case> = vec![
        (
            vec!["--concurrency", "0"],
            vec![],
            "invalid value '0' for '--concurrency <CONCURRENCY>': 0 is not in 1..=256",
        ),
        (
            vec![],
            vec![("OPCAT_CONCURRENCY", "lots")],
            "invalid value 'lots' for '--concurrency <CONCURRENCY>'",
        ),
        (
            vec!["--shutdown-timeout", "20"],
            vec![],
            "missing unit after \"20\"",
        ),
        (
            vec!["--poll-default", "0s"],
            vec![],
            "must be greater than zero",
        ),
        (
            vec!["--resync", "0"],
            vec![],
            "invalid value '0' for '--resync <DURATION>': must be greater than zero",
        ),
        (
            vec![],
            vec![("OPCAT_RESYNC", "often")],
            "invalid value 'often' for '--resync <DURATION>'",
        ),
        (
            vec!["--namespace", "Team_A"],
            vec![],
            "\"Team_A\" is not a valid namespace name",
        ),
        (
            vec![],
            vec![("OPCAT_GLOBAL_CATALOG_NAMESPACE", "Open_Shift")],
            "\"Open_Shift\" is not a valid namespace name",
        ),
        (
            vec!["--admin-address", "localhost"],
            vec![],
            "invalid value 'localhost' for '--admin-address <IP:PORT>'",
        ),
        (
            vec!["--log-format", "xml"],
            vec![],
            "invalid value 'xml' for '--log-format <LOG_FORMAT>'",
        ),
        (
            vec!["--leader-elect", "--leader-elect-renew-deadline", "15s"],
            vec![],
            "--leader-elect-renew-deadline (15s) must be shorter than \
             --leader-elect-lease-duration (15s)",
        ),
        (
            vec!["--leader-elect", "--leader-elect-lease-duration", "2500ms"],
            vec![],
            "--leader-elect-lease-duration must be a whole number of seconds",
        ),
        (
            vec!["--cache-dir", under_file.to_str().unwrap()],
            vec![],
            "is not a writable directory",
        ),
        (
            vec![
                "--cache-dir",
                cache,
                "--insecure-registry",
                "http://registry.example.com",
            ],
            vec![],
            "must be written as HOST or HOST:PORT",
        ),
        (
            vec!["--cache-dir", cache, "--ca-file", "/nonexistent/ca.pem"],
            vec![],
            "cannot read CA file /nonexistent/ca.pem",
        ),
        (
            vec!["--cache-dir", cache],
            vec![("RUST_LOG", "opcat=[")],
            "invalid RUST_LOG filter",
        ),
    ];
    for (args, env, expected) in cases {
        let mut command = opcat();
        command.arg("run").args(&args);
        for (name, value) in &env {
            command.env(name, value);
        }
        let output = run_to_end(&mut command);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "{args:?} {env:?} was accepted: {stderr}"
        );
        assert!(
            stderr.contains(expected),
            "{args:?} {env:?}: expected {expected:?} in:\n{stderr}"
        );
        assert!(
            !stderr.contains("admin server listening"),
            "{args:?}: refused only after starting:\n{stderr}"
        );
    }
}

#[test]
fn every_flag_is_in_the_help_with_its_environment_variable() {
    let output = run_to_end(opcat().args(["run", "--help"]));
    assert!(output.status.success());
    let help = String::from_utf8_lossy(&output.stdout);
    for (flag, env) in [
        ("--namespace", "OPCAT_NAMESPACE"),
        ("--cache-dir", "OPCAT_CACHE_DIR"),
        ("--poll-default", "OPCAT_POLL_DEFAULT"),
        (
            "--global-catalog-namespace",
            "OPCAT_GLOBAL_CATALOG_NAMESPACE",
        ),
        ("--concurrency", "OPCAT_CONCURRENCY"),
        ("--resync", "OPCAT_RESYNC"),
        ("--log-format", "OPCAT_LOG_FORMAT"),
        ("--shutdown-timeout", "OPCAT_SHUTDOWN_TIMEOUT"),
        ("--ca-file", "OPCAT_CA_FILES"),
        ("--insecure-registry", "OPCAT_INSECURE_REGISTRIES"),
        ("--admin-address", "OPCAT_ADMIN_ADDRESS"),
        ("--leader-elect", "OPCAT_LEADER_ELECT"),
        (
            "--leader-elect-lease-duration",
            "OPCAT_LEADER_ELECT_LEASE_DURATION",
        ),
        (
            "--leader-elect-renew-deadline",
            "OPCAT_LEADER_ELECT_RENEW_DEADLINE",
        ),
        (
            "--leader-elect-resource-name",
            "OPCAT_LEADER_ELECT_RESOURCE_NAME",
        ),
        (
            "--leader-elect-resource-namespace",
            "OPCAT_LEADER_ELECT_RESOURCE_NAMESPACE",
        ),
    ] {
        assert!(help.contains(flag), "{flag} missing from --help");
        assert!(
            help.contains(&format!("[env: {env}=")),
            "{env} missing from --help"
        );
    }
    assert!(help.contains("RUST_LOG"));
}

/// A running `opcat run` process.
struct Process {
    child: Child,
    admin: SocketAddr,
    _cache: tempfile::TempDir,
    _log: tempfile::NamedTempFile,
    log_path: std::path::PathBuf,
}

impl Process {
    fn start(http: &HttpHandle, pod: &str, extra: &[&str]) -> Self {
        let cache = tempfile::tempdir().unwrap();
        let log = tempfile::NamedTempFile::new().unwrap();
        let admin = free_port();
        let child = opcat()
            .args([
                "run",
                "--leader-elect",
                "--leader-elect-resource-namespace",
                NAMESPACE,
            ])
            .args(["--admin-address", &admin.to_string()])
            .args(["--cache-dir", cache.path().to_str().unwrap()])
            .args(extra)
            .env("KUBECONFIG", http.kubeconfig_path())
            .env("POD_NAME", pod)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log.reopen().unwrap())
            .spawn()
            .expect("start opcat run");
        let log_path = log.path().to_owned();
        Self {
            child,
            admin,
            _cache: cache,
            _log: log,
            log_path,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    async fn get(&self, path: &str) -> Option<(u16, String)> {
        // Connection refused until the admin server listens.
        let connect = tokio::net::TcpStream::connect(self.admin).await;
        connect.ok()?;
        let (status, _, body) = http_get(self.admin, path).await;
        Some((status, body))
    }

    async fn ready(&self) -> bool {
        matches!(self.get("/readyz").await, Some((200, _)))
    }

    /// Ready as the leader: every watch listed, reconciling.
    async fn reconciling(&self) -> bool {
        matches!(self.get("/readyz").await, Some((200, body)) if body.contains("reconciling"))
    }

    async fn leads(&self) -> bool {
        match self.get("/metrics").await {
            Some((200, text)) => text.lines().any(|line| line == "opcat_leader 1"),
            _ => false,
        }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
    }

    /// Waits for the process to exit.
    async fn wait(&mut self) -> std::process::ExitStatus {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "opcat did not exit:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn holder(api: &FakeApiServer) -> Option<String> {
    api.get::<Lease>(NAMESPACE, "opcat-leader")
        .and_then(|lease| lease.spec)
        .and_then(|spec| spec.holder_identity)
}

async fn wait_for(what: &str, process: &Process, check: impl AsyncFn() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !check().await {
        assert!(
            Instant::now() < deadline,
            "timed out: {what}\n{}",
            process.log()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn serve(api: &FakeApiServer) -> HttpHandle {
    api.serve_http().await.expect("serve the API over HTTP")
}

fn assert_no_panic(log: &str) {
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_gracefully_releases_the_lease_and_exits_0() {
    let api = api_server(&[NAMESPACE]).await;
    let http = serve(&api).await;
    let mut process = Process::start(&http, "opcat-0", &[]);

    wait_for("opcat leads and reconciles", &process, async || {
        holder(&api).as_deref() == Some("opcat-0") && process.reconciling().await
    })
    .await;
    assert!(process.leads().await);
    assert_eq!(process.get("/livez").await.map(|(s, _)| s), Some(200));

    let sent = Instant::now();
    process.signal("-TERM");
    let status = process.wait().await;
    let took = sent.elapsed();
    let log = process.log();
    assert!(status.success(), "exit status {status:?}\n{log}");
    assert_eq!(holder(&api), None, "the lease was released:\n{log}");
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(log.contains("released the leader lease"), "{log}");
    assert_no_panic(&log);
    println!("SIGTERM to exit: {:.2}s", took.as_secs_f64());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standby_process_takes_over_when_the_leader_is_killed() {
    let api = api_server(&[NAMESPACE]).await;
    let http = serve(&api).await;
    let timings = [
        "--leader-elect-lease-duration",
        "4s",
        "--leader-elect-renew-deadline",
        "2s",
    ];
    let first = Process::start(&http, "opcat-0", &timings);
    wait_for("opcat-0 leads", &first, async || {
        holder(&api).as_deref() == Some("opcat-0") && first.reconciling().await
    })
    .await;
    let second = Process::start(&http, "opcat-1", &timings);
    wait_for("opcat-1 is a ready standby", &second, async || {
        second.ready().await
    })
    .await;
    let (_, body) = second.get("/readyz").await.unwrap();
    assert!(body.contains("standby"), "{body}");
    assert!(!second.leads().await);

    let mut first = first;
    let killed = Instant::now();
    first.signal("-KILL");
    let _ = first.wait().await;
    assert_eq!(
        holder(&api).as_deref(),
        Some("opcat-0"),
        "a crash releases nothing"
    );
    wait_for("opcat-1 takes over and is ready", &second, async || {
        holder(&api).as_deref() == Some("opcat-1")
            && second.leads().await
            && second.reconciling().await
    })
    .await;
    let took = killed.elapsed();
    assert_no_panic(&second.log());
    assert!(second.log().contains("acquired the leader lease"));
    println!(
        "failover after SIGKILL: {:.2}s (lease 4s, renew deadline 2s)",
        took.as_secs_f64()
    );
}
