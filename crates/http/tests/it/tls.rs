//! TLS through the real accept loop, with a certificate authority made here: HTTPS, client
//! certificates naming the principal, a certificate from another authority refused, and a
//! reload that new connections see while an open one keeps working.

use covenant_http::auth::{Auth, AuthSettings};
use covenant_http::server::{ServerLimits, serve_with_tls};
use covenant_http::tls::{Tls, TlsSettings};
use covenant_http::{HttpConfig, router_with_auth};
use covenant_registry::Registry;
use covenant_store::SqliteStore;
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

struct Authority {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl Authority {
    fn new(name: &str) -> Authority {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        Authority {
            issuer: CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap(),
        }
    }

    fn pem(&self) -> String {
        AsRef::<rcgen::Certificate>::as_ref(&self.issuer).pem()
    }

    /// A leaf certificate and its key, as PEM.
    fn issue(&self, names: &[&str], cn: &str, usage: ExtendedKeyUsagePurpose) -> (String, String) {
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![usage];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

struct Server {
    port: u16,
    tls: Arc<Tls>,
    dir: tempfile::TempDir,
    ca: Authority,
}

async fn start() -> Server {
    start_with(None).await
}

async fn start_with(principal_pattern: Option<&str>) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let ca = Authority::new("Covenant test CA");
    let (cert, key) = ca.issue(
        &["localhost", "127.0.0.1"],
        "localhost",
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    let settings = TlsSettings {
        cert: write(dir.path(), "server.pem", &cert),
        key: write(dir.path(), "server.key", &key),
        client_ca: Some(write(dir.path(), "ca.pem", &ca.pem())),
        principal_pattern: principal_pattern.map(|p| regex::Regex::new(p).unwrap()),
    };
    let tls = Arc::new(Tls::load(settings).unwrap());
    let auth_file = write(
        dir.path(),
        "auth.json",
        r#"{"permissions": [{"username": "svc-orders", "operation": "Read", "resource": "Subject:.*"}]}"#,
    );
    let auth = Auth::new(AuthSettings {
        auth_file: Some(auth_file),
        client_certificates: true,
        ..AuthSettings::default()
    })
    .unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let registry = Arc::new(Registry::new(Arc::new(SqliteStore::open(&data).unwrap())));
    let app = router_with_auth(registry, None, HttpConfig::default(), Arc::new(auth));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let served = tls.clone();
    tokio::spawn(async move {
        serve_with_tls(
            listener,
            app,
            ServerLimits::default(),
            Some(served),
            std::future::pending(),
        )
        .await
    });
    Server { port, tls, dir, ca }
}

/// A client trusting `ca`, presenting `identity` (certificate and key PEM) when given.
async fn connect(
    port: u16,
    ca: &Authority,
    identity: Option<&(String, String)>,
) -> std::io::Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(
                vec![CertificateDer::from_pem_slice(cert.as_bytes()).unwrap()],
                PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap(),
            )
            .unwrap(),
        None => builder.with_no_client_auth(),
    };
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    let name = ServerName::try_from("localhost").unwrap();
    TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

/// One HTTP/1.1 request on a kept-alive connection: status and body.
async fn get(stream: &mut TlsStream<TcpStream>, path: &str) -> std::io::Result<(u16, String)> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other("connection closed"));
        }
        buffer.extend_from_slice(&chunk[..n]);
        if let Some(i) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while buffer.len() < head_end + length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    Ok((
        status,
        String::from_utf8_lossy(&buffer[head_end..]).into_owned(),
    ))
}

fn server_certificate(stream: &TlsStream<TcpStream>) -> Vec<u8> {
    stream.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test]
async fn client_certificates_name_the_principal() {
    let server = start().await;
    let client = server
        .ca
        .issue(&[], "svc-orders", ExtendedKeyUsagePurpose::ClientAuth);
    let mut stream = connect(server.port, &server.ca, Some(&client))
        .await
        .unwrap();
    assert_eq!(
        get(&mut stream, "/subjects").await.unwrap(),
        (200, "[]".to_string())
    );
    // Authenticated as svc-orders (403), not anonymous (401): it has no right on Config:.
    let (status, body) = get(&mut stream, "/config").await.unwrap();
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("40301"), "{body}");

    let mut anonymous = connect(server.port, &server.ca, None).await.unwrap();
    let (status, body) = get(&mut anonymous, "/subjects").await.unwrap();
    assert_eq!((status, body.contains("40101")), (401, true), "{body}");

    let other_ca = Authority::new("Someone else");
    let forged = other_ca.issue(&[], "svc-orders", ExtendedKeyUsagePurpose::ClientAuth);
    let refused = match connect(server.port, &server.ca, Some(&forged)).await {
        Err(_) => true,
        // TLS 1.3 reports a refused client certificate on the first read.
        Ok(mut stream) => get(&mut stream, "/subjects").await.is_err(),
    };
    assert!(refused, "a certificate from another authority is refused");
}

#[tokio::test]
async fn a_pattern_maps_the_certificate_subject_to_the_principal() {
    // The CN is `orders/svc-orders`; the pattern keeps what follows the slash.
    let server = start_with(Some(r"CN=[^/,]*/([^,]+)")).await;
    let mapped = server.ca.issue(
        &[],
        "orders/svc-orders",
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let mut stream = connect(server.port, &server.ca, Some(&mapped))
        .await
        .unwrap();
    assert_eq!(get(&mut stream, "/subjects").await.unwrap().0, 200);
    // A subject the pattern does not match names nobody: anonymous, so 401.
    let unmatched = server
        .ca
        .issue(&[], "svc-orders", ExtendedKeyUsagePurpose::ClientAuth);
    let mut stream = connect(server.port, &server.ca, Some(&unmatched))
        .await
        .unwrap();
    assert_eq!(get(&mut stream, "/subjects").await.unwrap().0, 401);
}

#[tokio::test]
async fn certificates_reload_without_dropping_connections() {
    let server = start().await;
    let client = server
        .ca
        .issue(&[], "svc-orders", ExtendedKeyUsagePurpose::ClientAuth);
    let mut open = connect(server.port, &server.ca, Some(&client))
        .await
        .unwrap();
    assert_eq!(get(&mut open, "/subjects").await.unwrap().0, 200);
    let before = server_certificate(&open);

    assert!(
        !server.tls.reload_if_changed().unwrap(),
        "nothing changed yet"
    );
    let (cert, key) = server.ca.issue(
        &["localhost"],
        "localhost-2",
        ExtendedKeyUsagePurpose::ServerAuth,
    );
    write(server.dir.path(), "server.key", &key);
    write(server.dir.path(), "server.pem", &cert);
    assert!(server.tls.reload_if_changed().unwrap());

    assert_eq!(
        get(&mut open, "/subjects").await.unwrap().0,
        200,
        "the open connection lives on"
    );
    let fresh = connect(server.port, &server.ca, Some(&client))
        .await
        .unwrap();
    assert_ne!(
        server_certificate(&fresh),
        before,
        "new connections get the new certificate"
    );

    // A broken file is not applied; the last good configuration keeps serving.
    write(server.dir.path(), "server.pem", "not a certificate");
    assert!(server.tls.reload_if_changed().is_err());
    let mut again = connect(server.port, &server.ca, Some(&client))
        .await
        .unwrap();
    assert_eq!(get(&mut again, "/subjects").await.unwrap().0, 200);
}

/// A leaf certificate whose subject has exactly these attributes (in this order).
fn issue_with_subject(ca: &Authority, attributes: &[(DnType, &str)]) -> (String, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    for (kind, value) in attributes {
        params.distinguished_name.push(kind.clone(), *value);
    }
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// Attributes that only look like a CN name nobody, with or without a pattern: an OU or O
/// whose value contains `CN=admin` and no CN at all, and a CN with spaces around the name
/// (never trimmed). The real CN still names its principal.
#[tokio::test]
async fn look_alike_attributes_name_nobody() {
    for pattern in [None, Some("CN=([^,]+)")] {
        let server = start_with(pattern).await;
        let admin = |attributes: &[(DnType, &str)]| issue_with_subject(&server.ca, attributes);
        let spoofs = [
            admin(&[(DnType::OrganizationalUnitName, "CN=svc-orders")]),
            admin(&[(DnType::OrganizationName, "evil,CN=svc-orders")]),
            admin(&[(DnType::CommonName, " svc-orders ")]),
            admin(&[
                (DnType::OrganizationName, "x"),
                (DnType::OrganizationalUnitName, "y,CN=svc-orders"),
            ]),
        ];
        for (i, spoof) in spoofs.iter().enumerate() {
            let mut stream = connect(server.port, &server.ca, Some(spoof)).await.unwrap();
            let (status, body) = get(&mut stream, "/subjects/s/versions").await.unwrap();
            // Anonymous (401), or a principal with another name and no grant (403).
            assert!(
                status == 401 || status == 403,
                "{pattern:?} spoof {i}: {status} {body}"
            );
        }
        let real = admin(&[
            (DnType::OrganizationName, "Acme"),
            (DnType::CommonName, "svc-orders"),
        ]);
        let mut stream = connect(server.port, &server.ca, Some(&real)).await.unwrap();
        let (status, body) = get(&mut stream, "/subjects/s/versions").await.unwrap();
        assert_eq!(
            status, 404,
            "{pattern:?}: granted, and the subject is missing: {body}"
        );
    }
}
