//! TLS for the accept loop ([`crate::server`]): rustls with the ring provider, optional client
//! certificates (mTLS) whose subject CN becomes the request's principal, and certificates
//! reloaded in place. A reload builds a whole new server configuration and swaps it in; each
//! new connection takes the configuration current when it arrives, and established
//! connections keep theirs, so nothing is dropped.

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime};
use tokio_rustls::TlsAcceptor;

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{path} holds no certificate")]
    NoCertificate { path: PathBuf },
    #[error("TLS configuration: {0}")]
    Config(String),
}

/// Where the server's certificate chain, its key and the client CA live (PEM files).
#[derive(Clone, Debug)]
pub struct TlsSettings {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// Client certificates signed by this CA are accepted and name the principal; clients
    /// without one may still authenticate otherwise (Basic, Bearer).
    pub client_ca: Option<PathBuf>,
    /// Maps a certificate to its principal: the first capture group of this pattern matched
    /// against the subject as an RFC 4514 string (`CN=svc,O=Acme`). Without it, the CN.
    pub principal_pattern: Option<regex::Regex>,
}

/// The principal a verified client certificate names (its subject's CN); put into each
/// request of the connection by the accept loop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCertificate {
    pub common_name: String,
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let read_error = |e: rustls::pki_types::pem::Error| TlsError::Read {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(read_error)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(read_error)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

fn build(settings: &TlsSettings) -> Result<ServerConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = |e: rustls::Error| TlsError::Config(e.to_string());
    let chain = certificates(&settings.cert)?;
    let key = PrivateKeyDer::from_pem_file(&settings.key).map_err(|e| TlsError::Read {
        path: settings.key.clone(),
        message: e.to_string(),
    })?;
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(config)?;
    let builder = match &settings.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in certificates(ca)? {
                roots.add(cert).map_err(config)?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| TlsError::Config(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut server = builder.with_single_cert(chain, key).map_err(config)?;
    // The accept loop speaks HTTP/1.1 only.
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(server)
}

type Stamps = Vec<Option<(SystemTime, u64)>>;

/// The current TLS configuration, rebuilt from its files on demand.
pub struct Tls {
    settings: TlsSettings,
    current: RwLock<Arc<ServerConfig>>,
    stamps: Mutex<Stamps>,
}

impl Tls {
    /// Reads the files now; a server never starts on certificates it cannot use.
    pub fn load(settings: TlsSettings) -> Result<Tls, TlsError> {
        let config = build(&settings)?;
        let stamps = stamps(&settings);
        Ok(Tls {
            settings,
            current: RwLock::new(Arc::new(config)),
            stamps: Mutex::new(stamps),
        })
    }

    /// Whether client certificates are asked for.
    pub fn verifies_clients(&self) -> bool {
        self.settings.client_ca.is_some()
    }

    /// An acceptor with the configuration current now.
    pub fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(
            self.current
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }

    /// Rebuilds from the files; on failure the current configuration stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let config = build(&self.settings)?;
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
        *self.stamps.lock().unwrap_or_else(|e| e.into_inner()) = stamps(&self.settings);
        Ok(())
    }

    /// Reloads when a file's modification time or size changed since the last load.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let now = stamps(&self.settings);
        if *self.stamps.lock().unwrap_or_else(|e| e.into_inner()) == now {
            return Ok(false);
        }
        self.reload().map(|()| true)
    }

    /// Reloads on SIGHUP and when the files change (checked every `every`), logging the
    /// outcome; runs until the process ends.
    pub fn watch(self: Arc<Self>, every: Duration) {
        let tls = self;
        // Installed before returning, so a SIGHUP from now on reloads instead of ending the
        // process (the signal's default action).
        let mut hangup = hangups();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                let forced = tokio::select! {
                    _ = tick.tick() => false,
                    _ = next(&mut hangup) => true,
                };
                let outcome = if forced {
                    tls.reload().map(|()| true)
                } else {
                    tls.reload_if_changed()
                };
                match outcome {
                    Ok(true) => tracing::info!("TLS certificates reloaded"),
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "TLS certificates not reloaded; keeping the current ones")
                    }
                }
            }
        });
    }
}

fn stamps(settings: &TlsSettings) -> Stamps {
    [
        Some(&settings.cert),
        Some(&settings.key),
        settings.client_ca.as_ref(),
    ]
    .into_iter()
    .flatten()
    .map(|path| {
        let meta = std::fs::metadata(path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    })
    .collect()
}

#[cfg(unix)]
type Hangups = Option<tokio::signal::unix::Signal>;
#[cfg(not(unix))]
type Hangups = Option<()>;

#[cfg(unix)]
fn hangups() -> Hangups {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok()
}
#[cfg(not(unix))]
fn hangups() -> Hangups {
    None
}

async fn next(hangups: &mut Hangups) {
    #[cfg(unix)]
    if let Some(signal) = hangups {
        signal.recv().await;
        return;
    }
    let _ = hangups;
    std::future::pending::<()>().await
}

impl Tls {
    /// The principal a verified client certificate names (see
    /// [`TlsSettings::principal_pattern`]); `None` when it names none.
    pub fn principal(&self, certificate: &CertificateDer<'_>) -> Option<String> {
        principal(certificate, self.settings.principal_pattern.as_ref())
    }
}

fn principal(certificate: &CertificateDer<'_>, pattern: Option<&regex::Regex>) -> Option<String> {
    use x509_cert::der::Decode;
    let cert = x509_cert::Certificate::from_der(certificate.as_ref()).ok()?;
    let subject = cert.tbs_certificate().subject();
    let name = match pattern {
        None => only_common_name(subject)?,
        Some(re) => {
            // Several CNs name no one, whichever of them a pattern would pick.
            let common_names = subject
                .iter()
                .filter(|atav| atav.oid == x509_cert::der::oid::db::rfc4519::COMMON_NAME)
                .count();
            if common_names > 1 {
                return None;
            }
            let text = unambiguous_subject(subject);
            let captured = re.captures(&text)?.get(1)?;
            unescape(captured.as_str())?
        }
    };
    (!name.is_empty()).then_some(name)
}

/// The subject's one CN, exactly as written (no trimming); `None` when it has none or several.
fn only_common_name(subject: &x509_cert::name::Name) -> Option<String> {
    use x509_cert::der::asn1::{PrintableStringRef, Utf8StringRef};
    use x509_cert::der::{Tag, Tagged};
    let mut names = subject
        .iter()
        .filter(|atav| atav.oid == x509_cert::der::oid::db::rfc4519::COMMON_NAME);
    let only = names.next()?;
    if names.next().is_some() {
        return None;
    }
    match only.value.tag() {
        Tag::Utf8String => Utf8StringRef::try_from(&only.value)
            .ok()
            .map(|s| s.as_str().to_string()),
        Tag::PrintableString => PrintableStringRef::try_from(&only.value)
            .ok()
            .map(|s| s.as_str().to_string()),
        _ => None,
    }
}

/// The subject as RFC 4514 text in which an attribute's value cannot pass for another
/// attribute: besides RFC 4514's escapes, `=` in a value is escaped too, so `OU=CN=admin`
/// reads `OU=CN\=admin` and a pattern such as `CN=([^,]+)` finds only a real CN.
fn unambiguous_subject(subject: &x509_cert::name::Name) -> String {
    let rdns: Vec<String> = subject
        .iter_rdn()
        .map(|rdn| {
            rdn.iter()
                .map(|atav| {
                    let text = atav.to_string();
                    match text.split_once('=') {
                        Some((kind, value)) => format!("{kind}={}", value.replace('=', "\\=")),
                        None => text,
                    }
                })
                .collect::<Vec<_>>()
                .join("+")
        })
        .collect();
    // RFC 4514 writes the last RDN first.
    rdns.into_iter().rev().collect::<Vec<_>>().join(",")
}

/// A captured value with its RFC 4514 escapes undone; `None` when an escape is cut off (the
/// capture ended inside a value).
fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let next = chars.next()?;
        if next.is_ascii_hexdigit() {
            let low = chars.next().filter(char::is_ascii_hexdigit)?;
            let byte = u8::from_str_radix(&format!("{next}{low}"), 16).ok()?;
            out.push(char::from(byte));
        } else {
            out.push(next);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair};

    fn certificate(attributes: &[(DnType, &str)]) -> CertificateDer<'static> {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = DistinguishedName::new();
        for (kind, value) in attributes {
            params.distinguished_name.push(kind.clone(), *value);
        }
        let key = KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn only_one_exact_common_name_names_a_principal() {
        let pattern = regex::Regex::new("CN=([^,]+)").unwrap();
        for pattern in [None, Some(&pattern)] {
            let name = |attributes: &[(DnType, &str)]| principal(&certificate(attributes), pattern);
            assert_eq!(name(&[(DnType::CommonName, "svc")]).as_deref(), Some("svc"));
            assert_eq!(
                name(&[(DnType::CommonName, " svc ")]).as_deref(),
                Some(" svc "),
                "{pattern:?}: never trimmed"
            );
            assert_eq!(name(&[(DnType::OrganizationalUnitName, "CN=svc")]), None);
            assert_eq!(name(&[(DnType::OrganizationName, "evil,CN=svc")]), None);
        }
    }

    #[test]
    fn escapes_are_undone_and_cut_ones_refused() {
        assert_eq!(unescape(r"Smith\, John").as_deref(), Some("Smith, John"));
        assert_eq!(unescape(r"a\3db").as_deref(), Some("a=b"));
        assert_eq!(unescape(r"admin\"), None);
    }
}
