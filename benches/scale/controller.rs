//! The controller under test: the real `opcat run` binary in its own process (so its memory is
//! its own), with a thread sampling its resident set size.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::measure::Reconciles;
use crate::ops_support::http_get;

/// How the binary is started.
pub struct Options<'a> {
    pub binary: &'a Path,
    pub kubeconfig: &'a Path,
    pub ca_file: &'a Path,
    pub concurrency: u16,
    pub resync: &'a str,
    pub rust_log: &'a str,
}

/// Memory of the process, in bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Memory {
    /// Resident set size now (`VmRSS`).
    pub rss: u64,
    /// Peak resident set size so far (`VmHWM`, the kernel's high-water mark).
    pub peak: u64,
}

/// A running `opcat run`.
pub struct Controller {
    child: Child,
    admin: SocketAddr,
    log: PathBuf,
    sampler: Sampler,
    _dir: tempfile::TempDir,
}

impl Controller {
    /// Starts the binary and waits until it reports ready (every watch listed once).
    pub async fn start(options: &Options<'_>) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("opcat-bench-scale-")
            .tempdir()
            .expect("controller temp dir");
        let log = dir.path().join("opcat.log");
        let port = test_registry::free_port();
        let admin: SocketAddr = format!("127.0.0.1:{port}").parse().expect("admin address");
        let mut command = Command::new(options.binary);
        // Only what the benchmark sets.
        for (name, _) in std::env::vars() {
            if name.starts_with("OPCAT_") || name.starts_with("POD_") || name == "KUBECONFIG" {
                command.env_remove(name);
            }
        }
        let log_file = std::fs::File::create(&log).expect("controller log");
        command
            .arg("run")
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .arg("--ca-file")
            .arg(options.ca_file)
            .arg("--admin-address")
            .arg(admin.to_string())
            .arg("--concurrency")
            .arg(options.concurrency.to_string())
            .arg("--resync")
            .arg(options.resync)
            .arg("--log-format")
            .arg("json")
            .env("KUBECONFIG", options.kubeconfig)
            .env("RUST_LOG", options.rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        let child = command
            .spawn()
            .unwrap_or_else(|error| panic!("start {}: {error}", options.binary.display()));
        let sampler = Sampler::start(child.id());
        let mut controller = Self {
            child,
            admin,
            log,
            sampler,
            _dir: dir,
        };
        controller.wait_ready().await;
        controller
    }

    async fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            self.assert_running();
            if tokio::net::TcpStream::connect(self.admin).await.is_ok() {
                let (status, _, _) = http_get(self.admin, "/readyz").await;
                if status == 200 {
                    return;
                }
            }
            assert!(
                Instant::now() < deadline,
                "opcat did not become ready in 120 s:\n{}",
                self.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Panics with the log's end if the process has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("opcat exited with {status}:\n{}", self.log_tail());
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Memory now, and the peak since the start.
    pub fn memory(&self) -> Memory {
        self.sampler.memory()
    }

    /// Lines of the log at WARN or ERROR level (reported, not fatal: retried conflicts are
    /// normal between concurrent writers).
    pub fn warnings(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|line| {
                line.contains(r#""level":"WARN""#) || line.contains(r#""level":"ERROR""#)
            })
            .map(str::to_owned)
            .collect()
    }

    /// Reconciles finished so far, per controller, from `/metrics`.
    pub async fn reconciles(&self) -> Reconciles {
        let (status, _, body) = http_get(self.admin, "/metrics").await;
        assert_eq!(status, 200, "GET /metrics: {body}");
        Reconciles::parse(&body)
    }

    /// The last lines of the log.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Stops the process (SIGTERM, then SIGKILL after 30 s); returns its memory at the end.
    pub fn stop(mut self) -> Memory {
        self.assert_running();
        let memory = self.sampler.stop();
        // Our own child, by pid.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return memory;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        memory
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        // Our own child, by handle (a no-op once it exited).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads `/proc/<pid>/status` every 50 ms.
struct Sampler {
    pid: u32,
    stop: Arc<AtomicBool>,
    max_rss: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Sampler {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let max_rss = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, max_rss) = (stop.clone(), max_rss.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(memory) = read_memory(pid) {
                        max_rss.fetch_max(memory.rss, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            })
        };
        Self {
            pid,
            stop,
            max_rss,
            thread: Some(thread),
        }
    }

    fn memory(&self) -> Memory {
        let now = read_memory(self.pid).unwrap_or_default();
        let sampled = self.max_rss.load(Ordering::Relaxed);
        Memory {
            rss: now.rss,
            peak: now.peak.max(sampled),
        }
    }

    fn stop(&mut self) -> Memory {
        let memory = self.memory();
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        memory
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn read_memory(pid: u32) -> Option<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|line| line.starts_with(name))?;
        let kib: u64 = line[name.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    };
    Some(Memory {
        rss: field("VmRSS:")?,
        peak: field("VmHWM:")?,
    })
}
