//! Serving the fake API over plain HTTP on 127.0.0.1 with a kubeconfig, so a separate
//! process (the real `opcat` binary) can use it through `kube::Config`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::server::{Error, FakeApiServer};
use crate::service::{error_response, handle};
use crate::status::ApiError;

/// A running HTTP listener. Dropping it stops the listener and closes its connections.
pub struct HttpHandle {
    /// Where the server listens.
    pub addr: SocketAddr,
    kubeconfig_path: PathBuf,
    kubeconfig: String,
    token_files: std::sync::atomic::AtomicUsize,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl HttpHandle {
    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig file pointing at this server (context `fake`, namespace `default`).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig_path
    }

    /// The kubeconfig as YAML.
    pub fn kubeconfig_yaml(&self) -> &str {
        &self.kubeconfig
    }

    /// Writes a kubeconfig whose user presents `Authorization: Bearer <token>` (a user token
    /// or [`FakeApiServer::service_account_token`]), for a process that should act as that
    /// identity; returns its path (removed with the handle).
    pub fn kubeconfig_with_token(&self, token: &str) -> Result<PathBuf, Error> {
        let n = self
            .token_files
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = self._dir.path().join(format!("kubeconfig-token-{n}"));
        std::fs::write(&path, kubeconfig(self.addr, Some(token))).map_err(|source| {
            Error::Kubeconfig {
                path: path.clone(),
                source,
            }
        })?;
        Ok(path)
    }
}

impl Drop for HttpHandle {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn kubeconfig(addr: SocketAddr, token: Option<&str>) -> String {
    // A JSON string is a YAML scalar: no token text can break the document.
    let user = token.map_or_else(
        || "{}".to_string(),
        |t| format!("{{token: {}}}", serde_json::Value::from(t)),
    );
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: http://{addr}
contexts:
- name: fake
  context:
    cluster: fake
    user: fake
    namespace: default
current-context: fake
users:
- name: fake
  user: {user}
"
    )
}

impl FakeApiServer {
    /// Starts serving over HTTP on a free port of 127.0.0.1 and writes a kubeconfig for it.
    pub async fn serve_http(&self) -> Result<HttpHandle, Error> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(Error::Http)?;
        let addr = listener.local_addr().map_err(Error::Http)?;
        let dir = tempfile::tempdir().map_err(Error::Http)?;
        let path = dir.path().join("kubeconfig");
        let yaml = kubeconfig(addr, None);
        std::fs::write(&path, &yaml).map_err(|source| Error::Kubeconfig {
            path: path.clone(),
            source,
        })?;
        let shared = self.shared.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let (stream, _) = match listener.accept().await {
                    Ok(conn) => conn,
                    Err(e) => {
                        tracing::warn!(error = %e, "fake-apiserver accept failed");
                        continue;
                    }
                };
                let shared = shared.clone();
                connections.spawn(async move {
                    let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let shared = shared.clone();
                        async move {
                            let (parts, body) = req.into_parts();
                            let bytes: Bytes = match body.collect().await {
                                Ok(b) => b.to_bytes(),
                                Err(e) => {
                                    let err =
                                        ApiError::bad_request(format!("reading request body: {e}"));
                                    return Ok::<_, std::convert::Infallible>(error_response(&err));
                                }
                            };
                            Ok(handle(shared, hyper::Request::from_parts(parts, bytes)).await)
                        }
                    });
                    if let Err(e) = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await
                    {
                        tracing::debug!(error = %e, "fake-apiserver connection ended");
                    }
                });
                // Reap finished connections so the set does not grow without bound.
                while connections.try_join_next().is_some() {}
            }
        });
        Ok(HttpHandle {
            addr,
            kubeconfig_path: path,
            kubeconfig: yaml,
            token_files: std::sync::atomic::AtomicUsize::new(0),
            _dir: dir,
            task,
        })
    }
}
