//! A request over a TLS connection of a chosen HTTP version, as kube-aggregator sends it (the
//! front-proxy certificate, the user in headers): kube's client speaks HTTP/1.1 only, while the
//! aggregator speaks HTTP/2 when the server offers it. The answer keeps the version and the
//! headers the server sent.

use std::sync::Arc;

use bytes::Bytes;
use http::{Version, header};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use super::{Running, SERVER_NAME};

/// What the server answered.
pub struct RawAnswer {
    pub version: Version,
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl RawAnswer {
    /// The `Content-Length` header, as a number.
    pub fn content_length(&self) -> Option<usize> {
        self.headers
            .get(header::CONTENT_LENGTH)?
            .to_str()
            .ok()?
            .parse()
            .ok()
    }
}

impl Running {
    /// `GET path` with `accept` over HTTP `version` (1.1 or 2, chosen by ALPN), as the
    /// aggregator calling for `admin`.
    pub async fn get_over(&self, version: Version, path: &str, accept: &str) -> RawAnswer {
        let mut roots = rustls::RootCertStore::empty();
        for der in CertificateDer::pem_slice_iter(self.material.ca_pem().as_bytes()) {
            roots.add(der.unwrap()).unwrap();
        }
        let chain = CertificateDer::pem_slice_iter(self.front_proxy.cert_pem.as_bytes())
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_slice(self.front_proxy.key_pem.as_bytes()).unwrap();
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)
            .unwrap();
        let http2 = version == Version::HTTP_2;
        let alpn: &[u8] = if http2 { b"h2" } else { b"http/1.1" };
        config.alpn_protocols = vec![alpn.to_vec()];
        let tcp = tokio::net::TcpStream::connect(self.address).await.unwrap();
        let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(ServerName::try_from(SERVER_NAME).unwrap(), tcp)
            .await
            .unwrap();
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn));
        let io = TokioIo::new(tls);

        // HTTP/2 carries scheme and authority as pseudo-headers (an absolute URI), HTTP/1.1
        // the path and a Host header.
        let request = if http2 {
            http::Request::get(format!("https://{SERVER_NAME}{path}"))
        } else {
            http::Request::get(path).header(header::HOST, SERVER_NAME)
        };
        let request = request
            .version(version)
            .header(header::ACCEPT, accept)
            .header("x-remote-user", "admin")
            .header("x-remote-group", "system:masters")
            .body(Empty::<Bytes>::new())
            .unwrap();
        let response = if http2 {
            let (mut sender, connection) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                    .await
                    .unwrap();
            tokio::spawn(connection);
            sender.send_request(request).await.unwrap()
        } else {
            let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(connection);
            sender.send_request(request).await.unwrap()
        };
        let (parts, body) = response.into_parts();
        RawAnswer {
            version: parts.version,
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }
}
