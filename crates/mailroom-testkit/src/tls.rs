//! HTTPS in front of a plain test server, with the committed test certificate
//! (`fixtures/`): a client trusts it through [`ca_file`] (`SSL_CERT_FILE`) or not at all.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};

/// A committed fixture's path (`fixtures/<name>`).
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

/// The certificate authority that signed the test server's certificate.
pub fn ca_file() -> PathBuf {
    fixture("tls-ca.pem")
}

/// Terminates TLS on 127.0.0.1 and passes each connection to `target`; stops when dropped.
pub struct TlsProxy {
    /// `https://127.0.0.1:<port>`.
    pub base_url: String,
    task: tokio::task::JoinHandle<()>,
}

impl TlsProxy {
    pub async fn start(target: SocketAddr) -> Self {
        let certs = CertificateDer::pem_file_iter(fixture("tls-server.pem"))
            .expect("certificate file")
            .collect::<Result<Vec<_>, _>>()
            .expect("certificate");
        let key = PrivateKeyDer::from_pem_file(fixture("tls-server.key")).expect("key");
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .expect("server certificate");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind tls proxy");
        let address = listener.local_addr().expect("tls proxy address");
        let task = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    // A client that refuses the certificate ends the handshake: nothing to do.
                    let Ok(mut tls) = acceptor.accept(socket).await else { return };
                    let Ok(mut plain) = TcpStream::connect(target).await else { return };
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        Self { base_url: format!("https://{address}"), task }
    }
}

impl Drop for TlsProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}
