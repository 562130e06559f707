//! An in-process registry that serves exactly what a test tells it to — including manifests and
//! blobs that do not match their digests, 403s and hangs — plus the thread that runs in-process
//! servers (each on its own runtime, so blocking test code such as skopeo can call them).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::sync::oneshot;

/// What the fake registry answers for one path.
#[derive(Debug, Clone)]
pub enum Reply {
    /// 200 with this body; `content_type` and `digest` become headers when set.
    Ok {
        /// `Content-Type`.
        content_type: Option<String>,
        /// `Docker-Content-Digest`.
        digest: Option<String>,
        /// The body.
        body: Vec<u8>,
    },
    /// This status with a distribution-style error envelope.
    Error {
        /// HTTP status.
        status: u16,
        /// Error code, e.g. `DENIED`.
        code: String,
    },
    /// Never answers (for timeouts).
    Hang,
}

impl Reply {
    /// 200 with a body and no extra headers.
    pub fn body(body: impl Into<Vec<u8>>) -> Reply {
        Reply::Ok {
            content_type: None,
            digest: None,
            body: body.into(),
        }
    }
}

/// A plain-HTTP registry on 127.0.0.1 serving a path → [`Reply`] table.
pub struct FakeRegistry {
    /// `127.0.0.1:PORT`.
    pub host: String,
    routes: Arc<Mutex<HashMap<String, Reply>>>,
    _server: ServerThread,
}

impl FakeRegistry {
    /// Starts an empty registry (`/v2/` answers 200; everything else 404 until set).
    pub fn start() -> FakeRegistry {
        let routes: Arc<Mutex<HashMap<String, Reply>>> = Arc::default();
        let router = axum::Router::new()
            .fallback(serve)
            .with_state(routes.clone());
        let (addr, server) = ServerThread::spawn(router, None);
        FakeRegistry {
            host: addr.to_string(),
            routes,
            _server: server,
        }
    }

    /// Sets the reply for a path such as `/v2/repo/manifests/tag`.
    pub fn set(&self, path: &str, reply: Reply) {
        self.routes
            .lock()
            .expect("fake registry routes")
            .insert(path.to_owned(), reply);
    }
}

async fn serve(
    State(routes): State<Arc<Mutex<HashMap<String, Reply>>>>,
    request: Request<Body>,
) -> Response {
    let path = request.uri().path().to_owned();
    if path == "/v2/" {
        return (StatusCode::OK, "{}").into_response();
    }
    let reply = routes.lock().ok().and_then(|r| r.get(&path).cloned());
    match reply {
        Some(Reply::Ok {
            content_type,
            digest,
            body,
        }) => {
            let mut response = Response::builder().status(StatusCode::OK);
            if let Some(content_type) = content_type {
                response = response.header(header::CONTENT_TYPE, content_type);
            }
            if let Some(digest) = digest {
                response = response.header("Docker-Content-Digest", digest);
            }
            response
                .header(header::CONTENT_LENGTH, body.len())
                .body(Body::from(body))
                .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
        }
        Some(Reply::Error { status, code }) => error(status, &code),
        Some(Reply::Hang) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            StatusCode::GATEWAY_TIMEOUT.into_response()
        }
        None if path.contains("/blobs/") => error(404, "BLOB_UNKNOWN"),
        None => error(404, "MANIFEST_UNKNOWN"),
    }
}

fn error(status: u16, code: &str) -> Response {
    let body = serde_json::json!({
        "errors": [{ "code": code, "message": code.to_lowercase().replace('_', " "), "detail": null }]
    });
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// An axum router served on 127.0.0.1 from a dedicated thread and runtime; stops on drop.
pub(crate) struct ServerThread {
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerThread {
    pub(crate) fn spawn(
        router: axum::Router,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> (SocketAddr, ServerThread) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind in-process server");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        let addr = listener.local_addr().expect("listener address");
        let (shutdown, mut stop) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("server runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("tokio listener");
                let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
                loop {
                    let (stream, _) = tokio::select! {
                        accepted = listener.accept() => match accepted {
                            Ok(pair) => pair,
                            Err(_) => continue,
                        },
                        _ = &mut stop => break,
                    };
                    let service = TowerToHyperService::new(router.clone());
                    let acceptor = acceptor.clone();
                    tokio::spawn(async move {
                        let builder = hyper::server::conn::http1::Builder::new();
                        match acceptor {
                            Some(acceptor) => {
                                if let Ok(stream) = acceptor.accept(stream).await {
                                    let _ = builder
                                        .serve_connection(TokioIo::new(stream), service)
                                        .await;
                                }
                            }
                            None => {
                                let _ = builder
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            }
                        }
                    });
                }
            });
            // Dropping the runtime cancels connections still open (e.g. hanging replies).
            runtime.shutdown_background();
        });
        (
            addr,
            ServerThread {
                shutdown: Some(shutdown),
                thread: Some(thread),
            },
        )
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
