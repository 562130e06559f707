//! The listener: TLS handshakes, then HTTP/1.1 or HTTP/2 per ALPN, each connection's client
//! certificate handed to every request on it.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use super::PackageServer;
use super::tls::{TlsError, server_config};

/// How long a client gets to finish the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address cannot be bound.
    #[error("cannot listen on the package API address {address}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// TLS cannot be configured.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// Binds `address` (before anything else starts, so a taken port fails `opcat run` at once).
pub async fn bind(address: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(address)
        .await
        .map_err(|source| ServeError::Bind { address, source })
}

impl PackageServer {
    /// Serves on `listener` until `shutdown`; open connections are dropped then.
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), ServeError> {
        let acceptor = TlsAcceptor::from(server_config(self.certificate.clone())?);
        let mut shutdown = std::pin::pin!(shutdown);
        let mut connections = tokio::task::JoinSet::new();
        loop {
            let (stream, peer_address) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "package API: accept failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            while connections.try_join_next().is_some() {}
            // As Go's servers (kube-apiserver, packageserver): no Nagle delay, which held the
            // last segment of an answer until the client's delayed ACK, ~40 ms later.
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%peer_address, %error, "package API: cannot set TCP_NODELAY");
            }
            let acceptor = acceptor.clone();
            let server = self.clone();
            connections.spawn(async move {
                let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(error)) => {
                        tracing::debug!(%peer_address, %error, "package API: TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer_address, "package API: TLS handshake timed out");
                        return;
                    }
                };
                let peer: Arc<Option<Vec<_>>> = Arc::new(
                    tls.get_ref()
                        .1
                        .peer_certificates()
                        .map(|chain| chain.iter().map(|c| c.clone().into_owned()).collect()),
                );
                let service = service_fn(move |request: http::Request<Incoming>| {
                    let server = server.clone();
                    let peer = peer.clone();
                    async move {
                        let (parts, _body) = request.into_parts();
                        let response = server
                            .handle(
                                &parts.method,
                                parts.uri.path(),
                                parts.uri.query().unwrap_or_default(),
                                &parts.headers,
                                peer.as_deref(),
                            )
                            .await;
                        tracing::debug!(
                            method = %parts.method,
                            path = parts.uri.path(),
                            status = response.status().as_u16(),
                            "package API request"
                        );
                        Ok::<_, Infallible>(response)
                    }
                });
                if let Err(error) = Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await
                {
                    tracing::debug!(%peer_address, %error, "package API: connection ended with an error");
                }
            });
        }
        connections.abort_all();
        Ok(())
    }
}
