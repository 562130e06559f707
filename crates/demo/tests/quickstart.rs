//! The quickstart cannot rot: the `opcat-demo` binary (what `scripts/demo.sh` runs) runs end to
//! end against the `opcat` binary of this workspace, exits 0 with its key lines, and leaves
//! nothing behind — also when it is interrupted.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `opcat` binary cargo built beside `opcat-demo` (a workspace test run builds both), or
/// `OPCAT_BIN`. A binary older than opcat's sources would test yesterday's opcat: that fails.
fn opcat_binary() -> PathBuf {
    let binary = std::env::var_os("OPCAT_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_BIN_EXE_opcat-demo")).with_file_name("opcat"));
    let built = std::fs::metadata(&binary)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| {
            panic!(
                "{} does not exist: build it first (cargo build -p opcat), or run the workspace \
                 tests (scripts/test.sh), or set OPCAT_BIN",
                binary.display()
            )
        });
    if let Some((source, changed)) = newest_file(&repo().join("src"))
        && changed > built
    {
        panic!(
            "{} is older than {}: rebuild it (cargo build -p opcat) so this tests today's opcat",
            binary.display(),
            source.display()
        );
    }
    binary
}

fn newest_file(dir: &Path) -> Option<(PathBuf, SystemTime)> {
    let mut newest: Option<(PathBuf, SystemTime)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let found = if path.is_dir() {
            newest_file(&path)
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .map(|t| (path, t))
        };
        if let Some((path, time)) = found
            && newest.as_ref().is_none_or(|(_, t)| time > *t)
        {
            newest = Some((path, time));
        }
    }
    newest
}

/// `opcat-demo` with its temporary files under `tmp` (so the test sees what it leaves behind).
fn demo(tmp: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_opcat-demo"));
    command
        .arg("--opcat")
        .arg(opcat_binary())
        .arg("--repo")
        .arg(repo())
        .env("TMPDIR", tmp)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn left_in(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .expect("read the demo's TMPDIR")
        .flatten()
        .map(|e| e.path())
        .collect()
}

#[test]
fn the_demo_installs_rotates_and_uninstalls_and_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let output = demo(tmp.path()).output().expect("run opcat-demo");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "opcat-demo failed with {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    for line in [
        "[1/8] A private registry",
        "htpasswd basic auth",
        "bundle   widget-operator 1.2.0",
        "catalog  widget-operator, gadget-operator",
        "IN-MEMORY STAND-IN for a Kubernetes API server",
        "ready after",
        "applied Subscription widgets/widget-operator",
        "CatalogSource opcat-catalogs/opcat-examples: READY, serving",
        "2 packages",
        "state AtLatestKnown, installedCSV widget-operator.v1.2.0",
        "PullCredentialsReady=True",
        "ClusterServiceVersion widgets/widget-operator.v1.2.0: Succeeded",
        "labels opcat.dev/catalog-name=opcat-examples opcat.dev/managed=true",
        "data keys [.dockerconfigjson] (the data itself is not shown)",
        "widget-controller (Available, service account widget-controller)",
        "pod template imagePullSecrets [opcat-examples-example-registry-pull-",
        "team-registry (not opcat's: kept in place), opcat-examples-example-registry-pull-",
        "updated in place after",
        "(unchanged), resourceVersion",
        "left: CustomResourceDefinition widgets.example.opcat.dev",
        "imagePullSecrets [team-registry]: opcat's entry removed",
        "opcat run stopped on SIGTERM with exit status: 0",
        "opcat-demo: OK: widget-operator.v1.2.0 installed from a private catalog",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in:\n{stdout}");
    }
    // Credentials are never shown: no dockerconfigjson, no basic-auth header value.
    assert!(!stdout.contains("auths"), "{stdout}");
    assert!(!stdout.contains("\"auth\""), "{stdout}");
    assert_eq!(left_in(tmp.path()), Vec::<PathBuf>::new(), "left behind");
}

#[test]
fn ctrl_c_stops_the_demo_with_130_and_removes_everything() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = demo(tmp.path()).spawn().expect("start opcat-demo");
    // Interrupt once `opcat run` is up: registry, API server and opcat are all running then.
    let stdout = child.stdout.take().unwrap();
    let (lines, seen) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
            let _ = lines.send(line);
        }
        all
    });
    let mut opcat_pid = None;
    let mut registry = None;
    while opcat_pid.is_none() {
        let line = seen
            .recv_timeout(Duration::from_secs(120))
            .expect("opcat-demo never said that opcat run started");
        if let Some(host) = line.split("https://").nth(1) {
            registry = Some(host.trim().to_owned());
        }
        if let Some(pid) = line.split("(pid ").nth(1) {
            opcat_pid = pid.trim_end_matches(')').parse::<i32>().ok();
        }
    }
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).unwrap();
    let status = child.wait().unwrap();
    let stdout = reader.join().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stderr.contains("opcat-demo: interrupted: stopped; everything it started is removed"),
        "{stderr}"
    );
    // opcat run is gone (its pid is not ours to reuse-check beyond this instant: a kill(0) that
    // fails with ESRCH is the answer), the registry no longer listens, nothing is left in TMPDIR.
    let opcat_pid = Pid::from_raw(opcat_pid.unwrap());
    assert!(
        kill(opcat_pid, None).is_err(),
        "opcat run ({opcat_pid}) still runs"
    );
    let registry = registry.expect("the registry's address was printed");
    assert!(
        std::net::TcpStream::connect(&registry).is_err(),
        "the registry still listens on {registry}"
    );
    assert_eq!(left_in(tmp.path()), Vec::<PathBuf>::new(), "left behind");
}
