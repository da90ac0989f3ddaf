//! TLS to PostgreSQL as libpq does it, so that a URI that works with
//! `psql` works here: `sslmode` (disable, allow, prefer, require,
//! verify-ca, verify-full; prefer by default), `sslrootcert` (a file, or
//! `system` for the system's trusted roots; `~/.postgresql/root.crt` by
//! default), `sslcert`/`sslkey` (a client certificate;
//! `~/.postgresql/postgresql.crt`/`.key` by default, where they exist).
//!
//! rust-postgres parses only disable/prefer/require and rejects the rest,
//! so these parameters are taken out of the URI here and the rest goes to
//! its parser. The TLS itself is rustls (with ring, which cross-compiles
//! for Windows and needs no OpenSSL on the machine) through
//! tokio-postgres-rustls, the maintained bridge to rust-postgres.
//!
//! What each mode checks, as libpq: `require` encrypts without checking
//! the server's certificate, unless a root certificate file exists (then
//! it checks the chain, as verify-ca); `verify-ca` checks the chain;
//! `verify-full` the chain and that the certificate names the host.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::config::SslMode as WireMode;
use postgres::{Client, Config};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

/// libpq's `sslmode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode, String> {
        Ok(match value {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, \
                     verify-full"
                ))
            }
        })
    }
}

/// Where the root certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Roots {
    /// `sslrootcert` not given: `~/.postgresql/root.crt` if it exists.
    Default,
    File(PathBuf),
    /// `sslrootcert=system`: the operating system's trusted roots.
    System,
}

/// The TLS parameters of one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub mode: SslMode,
    roots: Roots,
    cert: Option<PathBuf>,
    key: Option<PathBuf>,
}

/// The query parameters this module owns.
const TLS_PARAMETERS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

impl TlsSettings {
    /// Splits the TLS parameters off a `postgresql://` URI: the URI
    /// without them (for rust-postgres' parser) and the settings.
    pub fn take_from_uri(uri: &str) -> Result<(String, TlsSettings), String> {
        let mut settings = TlsSettings {
            mode: SslMode::Prefer,
            roots: Roots::Default,
            cert: None,
            key: None,
        };
        let Some((base, query)) = uri.split_once('?') else {
            return Ok((uri.to_string(), settings));
        };
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, raw) = pair.split_once('=').unwrap_or((pair, ""));
            if !TLS_PARAMETERS.contains(&key) {
                kept.push(pair);
                continue;
            }
            let value = percent_decoded(raw)
                .ok_or_else(|| format!("the URI's {key} is not valid percent-encoded UTF-8"))?;
            match key {
                "sslmode" => settings.mode = SslMode::parse(&value)?,
                "sslrootcert" if value == "system" => settings.roots = Roots::System,
                "sslrootcert" => settings.roots = Roots::File(PathBuf::from(value)),
                "sslcert" => settings.cert = Some(PathBuf::from(value)),
                _ => settings.key = Some(PathBuf::from(value)),
            }
        }
        let rest = if kept.is_empty() {
            base.to_string()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        Ok((rest, settings))
    }

    /// Connects with these settings: `allow` tries without TLS first, as
    /// libpq does, and with it where the server refuses that.
    pub fn connect(&self, config: &Config) -> Result<Client, ConnectError> {
        let mut config = config.clone();
        let wire_mode = match self.mode {
            SslMode::Disable | SslMode::Allow => WireMode::Disable,
            SslMode::Prefer => WireMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => WireMode::Require,
        };
        config.ssl_mode(wire_mode);
        if wire_mode == WireMode::Disable {
            let plain = config.connect(postgres::NoTls);
            match plain {
                Err(e) if self.mode == SslMode::Allow && e.as_db_error().is_some() => {
                    config.ssl_mode(WireMode::Require);
                }
                other => return other.map_err(ConnectError::Postgres),
            }
        }
        let tls = MakeRustlsConnect::new(self.client_config().map_err(ConnectError::Settings)?);
        config.connect(tls).map_err(ConnectError::Postgres)
    }

    fn client_config(&self) -> Result<ClientConfig, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS: {e}"))?;
        // allow and prefer never check the certificate, as libpq.
        let roots = match self.mode {
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => self.root_store()?,
            SslMode::Disable | SslMode::Allow | SslMode::Prefer => None,
        };
        let verifier: Arc<dyn ServerCertVerifier> =
            match (self.mode, roots) {
                (SslMode::VerifyFull, Some(roots)) => chain_verifier(roots, &provider)?,
                (SslMode::VerifyCa | SslMode::Require, Some(roots)) => Arc::new(ChainOnly {
                    inner: chain_verifier(roots, &provider)?,
                }),
                (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
                    return Err(format!(
                    "sslmode={} checks the server's certificate, but the root certificate file \
                     {} does not exist: name one (sslrootcert=FILE), use the system's trusted \
                     roots (sslrootcert=system), or use sslmode=require to encrypt without \
                     checking",
                    if self.mode == SslMode::VerifyCa { "verify-ca" } else { "verify-full" },
                    default_file("root.crt").map_or("~/.postgresql/root.crt".into(), |p| p
                        .display()
                        .to_string())
                ))
                }
                (SslMode::Require, None)
                | (SslMode::Disable | SslMode::Allow | SslMode::Prefer, _) => {
                    Arc::new(AnyCertificate {
                        provider: provider.clone(),
                    })
                }
            };
        let builder = builder
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        match self.client_certificate()? {
            Some((chain, key)) => builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("the client certificate and key do not go together: {e}")),
            None => Ok(builder.with_no_client_auth()),
        }
    }

    /// The root certificates to check the server's chain against, or
    /// `None` where there are none to check with.
    fn root_store(&self) -> Result<Option<RootCertStore>, String> {
        let mut store = RootCertStore::empty();
        match &self.roots {
            Roots::System => {
                let found = rustls_native_certs::load_native_certs();
                if found.certs.is_empty() {
                    return Err("sslrootcert=system: no trusted roots found on this system".into());
                }
                store.add_parsable_certificates(found.certs);
            }
            Roots::File(path) => {
                for cert in read_certificates(path, "sslrootcert")? {
                    store
                        .add(cert)
                        .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
                }
            }
            Roots::Default => match default_file("root.crt").filter(|p| p.exists()) {
                Some(path) => {
                    for cert in read_certificates(&path, "root certificate")? {
                        store
                            .add(cert)
                            .map_err(|e| format!("{}: {e}", path.display()))?;
                    }
                }
                None => return Ok(None),
            },
        }
        Ok(Some(store))
    }

    /// The client certificate chain and its key: those named, or the
    /// default files where both exist.
    fn client_certificate(
        &self,
    ) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, String> {
        let (cert, key) = match (&self.cert, &self.key) {
            (Some(cert), Some(key)) => (cert.clone(), key.clone()),
            (Some(cert), None) => (cert.clone(), cert.with_extension("key")),
            (None, Some(_)) => return Err("sslkey is given without sslcert".into()),
            (None, None) => match (
                default_file("postgresql.crt"),
                default_file("postgresql.key"),
            ) {
                (Some(c), Some(k)) if c.exists() && k.exists() => (c, k),
                _ => return Ok(None),
            },
        };
        let chain = read_certificates(&cert, "sslcert")?;
        check_key_permissions(&key)?;
        let key = PrivateKeyDer::from_pem_file(&key)
            .map_err(|e| format!("sslkey {}: not a PEM private key ({e})", key.display()))?;
        Ok(Some((chain, key)))
    }
}

/// Why a connection failed: the server or the wire, or the TLS settings.
pub enum ConnectError {
    Postgres(postgres::Error),
    Settings(String),
}

fn chain_verifier(
    roots: RootCertStore,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<dyn ServerCertVerifier>, String> {
    let verifier = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| format!("the root certificates cannot be used: {e}"))?;
    Ok(verifier)
}

/// `~/.postgresql/NAME`, where libpq looks by default.
fn default_file(name: &str) -> Option<PathBuf> {
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".postgresql").join(name))
}

fn read_certificates(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{what} {}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{what} {}: not a PEM certificate ({e})", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{what} {}: holds no certificate", path.display()));
    }
    Ok(certs)
}

/// libpq refuses a private key that others may read; so does this.
fn check_key_permissions(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("sslkey {}: {e}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let mode = meta.mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "sslkey {}: group or others may read it; chmod 600 it",
                path.display()
            ));
        }
    }
    let _ = meta;
    Ok(())
}

fn percent_decoded(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// verify-ca (and require with roots): the chain must lead to a trusted
/// root, whatever host name the certificate names.
#[derive(Debug)]
struct ChainOnly {
    inner: Arc<dyn ServerCertVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// prefer and require without roots: encrypted, the certificate not
/// checked (libpq's behaviour), but the handshake's signatures still are.
#[derive(Debug)]
struct AnyCertificate {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_parameters_are_taken_out_and_the_rest_kept() {
        let (rest, s) = TlsSettings::take_from_uri(
            "postgresql://u@h/db?sslmode=verify-full&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgresql://u@h/db?application_name=x");
        assert_eq!(s.mode, SslMode::VerifyFull);
        assert_eq!(s.roots, Roots::File("/tmp/ca.pem".into()));
        let (rest, s) = TlsSettings::take_from_uri("postgresql://u@h/db?sslmode=allow").unwrap();
        assert_eq!(
            (rest.as_str(), s.mode),
            ("postgresql://u@h/db", SslMode::Allow)
        );
        let (_, s) = TlsSettings::take_from_uri("postgresql://u@h/db").unwrap();
        assert_eq!(s.mode, SslMode::Prefer, "libpq's default");
        let (_, s) = TlsSettings::take_from_uri("postgresql://u@h/db?sslrootcert=system").unwrap();
        assert_eq!(s.roots, Roots::System);
        let e = TlsSettings::take_from_uri("postgresql://u@h/db?sslmode=strict").unwrap_err();
        assert!(e.contains("verify-full"), "{e}");
    }

    #[test]
    fn a_verifying_mode_without_roots_says_where_to_get_them() {
        let (_, s) = TlsSettings::take_from_uri(
            "postgresql://u@h/db?sslmode=verify-ca&sslrootcert=/nonexistent/ca",
        )
        .unwrap();
        let e = s.client_config().unwrap_err();
        assert!(e.contains("/nonexistent/ca"), "{e}");
    }
}
