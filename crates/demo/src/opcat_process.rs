//! The real `opcat run` binary as a child process: started against a kubeconfig, its stdout and
//! stderr captured in a log file, stopped with SIGTERM (graceful) or killed when dropped.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Why the process could not be started, stopped or asked something.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("cannot create the log file {path}")]
    Log {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start {binary}")]
    Spawn {
        binary: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot signal opcat (pid {pid})")]
    Signal {
        pid: u32,
        #[source]
        source: nix::Error,
    },
    #[error("opcat (pid {pid}) did not exit within {waited:?} after SIGTERM")]
    StillRunning { pid: u32, waited: Duration },
    #[error("opcat (pid {pid}) exited early with {status}; its log:\n{log}")]
    Exited {
        pid: u32,
        status: ExitStatus,
        log: String,
    },
    #[error("opcat (pid {pid}) was not ready within {waited:?}; its log:\n{log}")]
    NotReady {
        pid: u32,
        waited: Duration,
        log: String,
    },
    #[error("cannot wait for opcat (pid {pid})")]
    Wait {
        pid: u32,
        #[source]
        source: std::io::Error,
    },
}

/// How to start `opcat run`.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The `opcat` binary.
    pub binary: PathBuf,
    /// Kubeconfig of the API server (`KUBECONFIG`).
    pub kubeconfig: PathBuf,
    /// `--ca-file`s: CAs of registries with their own CA.
    pub ca_files: Vec<PathBuf>,
    /// `--cache-dir`.
    pub cache_dir: PathBuf,
    /// `--admin-address` (/livez, /readyz, /metrics).
    pub admin_address: SocketAddr,
    /// `RUST_LOG`.
    pub log_filter: String,
    /// Where stdout and stderr go (appended: a restart keeps the earlier lines).
    pub log_file: PathBuf,
    /// More arguments after `run`.
    pub extra_args: Vec<String>,
}

/// A running `opcat run`. Dropping it kills the process (SIGKILL) and reaps it.
#[derive(Debug)]
pub struct OpcatProcess {
    child: Child,
    config: RunConfig,
}

impl OpcatProcess {
    /// Starts `opcat run` with `config`. The environment is the caller's minus every `OPCAT_*`,
    /// `POD_*` and `KUBECONFIG` variable, so only `config` decides.
    pub fn start(config: &RunConfig) -> Result<Self, ProcessError> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&config.log_file)
            .map_err(|source| ProcessError::Log {
                path: config.log_file.clone(),
                source,
            })?;
        let log_err = log.try_clone().map_err(|source| ProcessError::Log {
            path: config.log_file.clone(),
            source,
        })?;
        let mut command = Command::new(&config.binary);
        for (name, _) in std::env::vars_os() {
            let name = name.to_string_lossy();
            if name.starts_with("OPCAT_") || name.starts_with("POD_") || name == "KUBECONFIG" {
                command.env_remove(name.as_ref());
            }
        }
        command
            .arg("run")
            .arg("--cache-dir")
            .arg(&config.cache_dir)
            .arg("--admin-address")
            .arg(config.admin_address.to_string());
        for ca in &config.ca_files {
            command.arg("--ca-file").arg(ca);
        }
        let child = command
            .args(&config.extra_args)
            .env("KUBECONFIG", &config.kubeconfig)
            .env("RUST_LOG", &config.log_filter)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .map_err(|source| ProcessError::Spawn {
                binary: config.binary.clone(),
                source,
            })?;
        Ok(Self {
            child,
            config: config.clone(),
        })
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log file.
    pub fn log_path(&self) -> &Path {
        &self.config.log_file
    }

    /// Everything the process (and earlier processes with the same log file) wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.config.log_file).unwrap_or_default()
    }

    /// Waits until `/readyz` answers 200 with "reconciling" (every watch listed, controllers
    /// running), or fails with the log when the process exits or `timeout` passes.
    pub async fn wait_reconciling(&mut self, timeout: Duration) -> Result<(), ProcessError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_status()? {
                return Err(ProcessError::Exited {
                    pid: self.pid(),
                    status,
                    log: self.log(),
                });
            }
            if let Some((200, body)) = http_get(self.config.admin_address, "/readyz").await
                && body.contains("reconciling")
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(ProcessError::NotReady {
                    pid: self.pid(),
                    waited: timeout,
                    log: self.log(),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The exit status, if the process has exited.
    pub fn try_status(&mut self) -> Result<Option<ExitStatus>, ProcessError> {
        let pid = self.pid();
        self.child
            .try_wait()
            .map_err(|source| ProcessError::Wait { pid, source })
    }

    /// Sends SIGTERM and waits up to `timeout` for the process to exit.
    pub async fn terminate(&mut self, timeout: Duration) -> Result<ExitStatus, ProcessError> {
        let pid = self.pid();
        if self.try_status()?.is_none() {
            let raw = i32::try_from(pid).unwrap_or(i32::MAX);
            kill(Pid::from_raw(raw), Signal::SIGTERM)
                .map_err(|source| ProcessError::Signal { pid, source })?;
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_status()? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                return Err(ProcessError::StillRunning {
                    pid,
                    waited: timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for OpcatProcess {
    fn drop(&mut self) {
        // Our own child, by handle: never anything else.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A minimal HTTP/1.1 GET on loopback: `(status, body)`, `None` when nothing answers.
pub async fn http_get(addr: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: opcat\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}
