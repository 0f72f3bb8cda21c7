//! TLS to PostgreSQL, as libpq's `sslmode` and `sslrootcert` URL parameters ask (rustls, by
//! `tokio-postgres-rustls`). The driver itself knows only `disable`, `prefer` and `require`,
//! and refuses `sslrootcert`, so both are read here and the URL it parses is left without
//! them:
//!
//! - `disable`: no TLS. `allow`, `prefer` (the default): TLS when the server offers it.
//!   `require`: TLS or no connection. None of these checks the server's certificate (as
//!   libpq), unless `sslrootcert` names a file: then `require` checks it as `verify-ca`.
//! - `verify-ca`: TLS with a certificate signed by a trusted CA; `verify-full`: and naming the
//!   host connected to.
//! - `sslrootcert`: the PEM file of the CAs to trust; none, or `system`: the system's store.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::{Error, Result};

/// What a URL asks of TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsWanted {
    pub mode: Mode,
    /// `sslrootcert`'s file; `None`: the system's store.
    pub root_cert: Option<PathBuf>,
}

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl TlsWanted {
    /// Splits the TLS parameters off `url`: the URL for the driver, and what they ask.
    pub fn split(url: &str) -> Result<(String, Self)> {
        let mut wanted = Self { mode: Mode::Prefer, root_cert: None };
        let Some((base, query)) = url.split_once('?') else { return Ok((url.to_string(), wanted)) };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
            match key {
                "sslmode" => wanted.mode = Mode::parse(&value)?,
                "sslrootcert" if value == "system" => wanted.root_cert = None,
                "sslrootcert" => wanted.root_cert = Some(PathBuf::from(value.into_owned())),
                _ => kept.push(pair),
            }
        }
        let url =
            if kept.is_empty() { base.to_string() } else { format!("{base}?{}", kept.join("&")) };
        Ok((url, wanted))
    }

    /// The driver's own mode for this one.
    pub fn driver_mode(&self) -> SslMode {
        match self.mode {
            Mode::Disable => SslMode::Disable,
            Mode::Allow | Mode::Prefer => SslMode::Prefer,
            Mode::Require | Mode::VerifyCa | Mode::VerifyFull => SslMode::Require,
        }
    }

    /// The connector that checks the server's certificate as the mode asks.
    pub fn connector(&self) -> Result<MakeRustlsConnect> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let (chain, names) = match (self.mode, &self.root_cert) {
            (Mode::VerifyFull, _) => (true, true),
            (Mode::VerifyCa, _) | (Mode::Require, Some(_)) => (true, false),
            _ => (false, false),
        };
        let chain = if chain {
            let roots = Arc::new(self.roots()?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|e| tls_error(format!("cannot check certificates: {e}")))?;
            Some(webpki)
        } else {
            None
        };
        let verifier = Arc::new(Verifier { provider: Arc::clone(&provider), chain, names });
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_error(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(MakeRustlsConnect::new(config))
    }

    /// The CAs to trust: `sslrootcert`'s, else the system's.
    fn roots(&self) -> Result<RootCertStore> {
        let mut roots = RootCertStore::empty();
        match &self.root_cert {
            Some(file) => {
                let certificates = CertificateDer::pem_file_iter(file)
                    .and_then(|certificates| {
                        certificates.collect::<std::result::Result<Vec<_>, _>>()
                    })
                    .map_err(|e| tls_error(format!("sslrootcert {}: {e}", file.display())))?;
                let (added, _) = roots.add_parsable_certificates(certificates);
                if added == 0 {
                    return Err(tls_error(format!(
                        "sslrootcert {} holds no certificate",
                        file.display()
                    )));
                }
            }
            None => {
                let found = rustls_native_certs::load_native_certs();
                roots.add_parsable_certificates(found.certs);
                if roots.is_empty() {
                    return Err(tls_error(
                        "no trusted CA in the system's store; name one with sslrootcert",
                    ));
                }
            }
        }
        Ok(roots)
    }
}

impl Mode {
    fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "disable" => Self::Disable,
            "allow" => Self::Allow,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(Error::invalid(format!(
                    "DATABASE_URL: sslmode {other:?} is none of disable, allow, prefer, require, \
                     verify-ca, verify-full"
                )));
            }
        })
    }
}

fn tls_error(message: impl std::fmt::Display) -> Error {
    Error::invalid(format!("DATABASE_URL: TLS: {message}"))
}

/// The server's certificate checked as the mode asks: not at all (`prefer`, `require`
/// without `sslrootcert`, as libpq: encrypted, not authenticated), its chain to a trusted CA
/// (`verify-ca`), or its chain and the host's name in it (`verify-full`). The handshake's
/// signatures are checked whatever the mode.
#[derive(Debug)]
struct Verifier {
    provider: Arc<rustls::crypto::CryptoProvider>,
    chain: Option<Arc<WebPkiServerVerifier>>,
    names: bool,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.names => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.provider.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_parameters_leave_the_url_and_say_what_is_checked() {
        let (url, wanted) = TlsWanted::split(
            "postgres://u@db/m?sslmode=verify-full&application_name=x&sslrootcert=%2Fetc%2Fca.pem",
        )
        .expect("split");
        assert_eq!(url, "postgres://u@db/m?application_name=x");
        assert_eq!(wanted.mode, Mode::VerifyFull);
        assert_eq!(wanted.root_cert, Some(PathBuf::from("/etc/ca.pem")));
        assert_eq!(wanted.driver_mode(), SslMode::Require);
        let (url, wanted) = TlsWanted::split("postgres://u@db/m?sslmode=allow").expect("split");
        assert_eq!((url.as_str(), wanted.driver_mode()), ("postgres://u@db/m", SslMode::Prefer));
        let (_, plain) = TlsWanted::split("postgres://u@db/m").expect("split");
        assert_eq!(plain, TlsWanted { mode: Mode::Prefer, root_cert: None });
        let refused = TlsWanted::split("postgres://u@db/m?sslmode=sometimes").expect_err("mode");
        assert!(refused.message.contains("sslmode \"sometimes\""), "{}", refused.message);
        let missing = TlsWanted { mode: Mode::VerifyCa, root_cert: Some("/no/such.pem".into()) };
        let error = missing.connector().err().expect("no such file");
        assert!(error.message.contains("sslrootcert /no/such.pem"), "{}", error.message);
    }
}
