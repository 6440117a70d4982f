//! Authentication end to end: an auth file made with `covenant auth`, `covenant serve
//! --auth-file` over HTTP, the Rust `schema_registry_converter` client with Basic
//! credentials, and the safe defaults of `serve`.

use apache_avro::types::Value as AvroValue;
use schema_registry_converter::async_impl::avro::{AvroDecoder, AvroEncoder};
use schema_registry_converter::async_impl::schema_registry::{
    SrSettings, get_all_subjects, post_schema,
};
use schema_registry_converter::schema_registry_common::{
    SchemaType, SubjectNameStrategy, SuppliedSchema,
};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support;
use support::Serve;

fn covenant(args: &[&str], stdin: Option<&str>) -> Output {
    support::covenant_with_stdin(args, stdin.unwrap_or(""))
}

fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let out = covenant(args, stdin);
    assert!(
        out.status.success(),
        "covenant {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `writer` may write `orders-*`; `reader` may only read it; both read the global config.
fn make_auth_file(path: &Path) {
    let file = path.to_str().expect("utf-8 path");
    ok(
        &["auth", "add-user", file, "writer", "--password-stdin"],
        Some("w-pass\n"),
    );
    ok(
        &["auth", "add-user", file, "reader", "--password-stdin"],
        Some("r-pass\n"),
    );
    ok(
        &[
            "auth",
            "grant",
            file,
            "writer",
            "Write",
            "Subject:orders-.*",
        ],
        None,
    );
    ok(
        &[
            "auth",
            "grant",
            file,
            "reader",
            "read",
            "SubjectPrefix:orders-",
        ],
        None,
    );
    ok(&["auth", "grant", file, "reader", "Read", "Config:"], None);
}

#[test]
fn auth_commands_validate_and_describe_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("auth.json");
    make_auth_file(&path);
    let file = path.to_str().expect("utf-8");
    let listed = ok(&["auth", "check", file], None);
    assert!(listed.contains("user writer [scrypt]"), "{listed}");
    assert!(listed.contains("Write on Subject:orders-.*"), "{listed}");
    assert!(listed.contains("Read on SubjectPrefix:orders-"), "{listed}");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(!text.contains("w-pass"), "the password is stored hashed");
    for bad in [
        vec!["auth", "grant", file, "writer", "Fly", "Config:"],
        vec!["auth", "grant", file, "writer", "Read", "Subject:("],
        vec!["auth", "revoke", file, "writer", "Read", "Config:"],
        vec!["auth", "check", "/nonexistent/auth.json"],
    ] {
        let out = covenant(&bad, None);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
    let empty = covenant(
        &["auth", "add-user", file, "x", "--password-stdin"],
        Some("\n"),
    );
    assert_eq!(empty.status.code(), Some(2));
    ok(&["auth", "revoke", file, "reader", "Read", "Config:"], None);
    assert!(!ok(&["auth", "check", file], None).contains("Read on Config:"));
}

#[test]
fn serve_refuses_to_listen_beyond_loopback_without_authentication() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let data = data.to_str().expect("utf-8");
    let out = covenant(
        &["serve", "--listen", "0.0.0.0:0", "--data-dir", data],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("without authentication"), "{err}");
    assert!(
        !Path::new(data).exists(),
        "a refused start touches no store"
    );
    let out = covenant(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data,
            "--anonymous-operations",
            "read",
        ],
        None,
    );
    assert_eq!(
        out.status.code(),
        Some(2),
        "anonymous operations need authentication"
    );
}

async fn wait_ready(base: &str) {
    let http = covenant_exporter::client::client();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = http.get(format!("{base}/health/ready")).send().await
            && r.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{base} did not become ready");
}

fn settings(base: &str, user: &str, password: &str) -> SrSettings {
    SrSettings::new_builder(base.to_string())
        .set_basic_authorization(user, Some(password))
        .build()
        .expect("client settings")
}

const ORDER: &str = r#"{"type":"record","name":"Order","namespace":"acme.auth","fields":[{"name":"id","type":"string"}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_with_basic_auth() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let server = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
    });
    wait_ready(&server.base).await;
    let writer = settings(&server.base, "writer", "w-pass");
    let schema = SuppliedSchema::new(
        Some("acme.auth.Order".into()),
        SchemaType::Avro,
        ORDER.into(),
    );
    let registered = post_schema(&writer, "orders-value".into(), schema.clone())
        .await
        .expect("register as writer");
    let bytes = AvroEncoder::new(writer.clone())
        .encode(
            vec![("id", AvroValue::String("o-1".into()))],
            SubjectNameStrategy::TopicNameStrategy("orders".into(), false),
        )
        .await
        .expect("encode");
    assert_eq!(
        u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
        registered.id
    );
    let reader = settings(&server.base, "reader", "r-pass");
    let decoded = AvroDecoder::new(reader.clone())
        .decode(Some(&bytes))
        .await
        .expect("decode as reader");
    assert_eq!(
        decoded.value,
        AvroValue::Record(vec![("id".into(), AvroValue::String("o-1".into()))])
    );
    assert!(
        post_schema(&reader, "orders-v2".into(), schema.clone())
            .await
            .is_err(),
        "reader cannot write"
    );
    assert!(
        post_schema(&writer, "payments-value".into(), schema.clone())
            .await
            .is_err(),
        "outside the grant"
    );
    let anonymous = SrSettings::new(server.base.clone());
    assert!(
        get_all_subjects(&anonymous).await.is_err(),
        "anonymous is refused"
    );
    let wrong = settings(&server.base, "writer", "nope");
    assert!(
        get_all_subjects(&wrong).await.is_err(),
        "a wrong password is refused"
    );
    assert_eq!(
        get_all_subjects(&reader).await.expect("subjects"),
        vec!["orders-value".to_string()]
    );

    // Status and body as Confluent shapes them, over real HTTP.
    let http = covenant_exporter::client::client();
    let r = http
        .get(format!("{}/subjects", server.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status().as_u16(), 401);
    assert!(r.headers().get("www-authenticate").is_some());
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["error_code"], 40101);
    let r = http
        .delete(format!("{}/subjects/orders-value", server.base))
        .basic_auth("reader", Some("r-pass"))
        .send()
        .await
        .expect("DELETE");
    assert_eq!(r.status().as_u16(), 403);
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["error_code"], 40301);
    assert_eq!(
        body["message"],
        "User is denied operation Delete on Subject:orders-value"
    );
    // Granting through the CLI while the server runs takes effect without a restart.
    ok(
        &[
            "auth",
            "grant",
            auth.to_str().expect("utf-8"),
            "reader",
            "Delete",
            "SubjectPrefix:orders-",
        ],
        None,
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let r = http
        .delete(format!("{}/subjects/orders-value", server.base))
        .basic_auth("reader", Some("r-pass"))
        .send()
        .await
        .expect("DELETE");
    assert_eq!(r.status().as_u16(), 200, "{:?}", r.text().await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unauthenticated_loopback_server_refuses_foreign_hosts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = Serve::spawn(&dir.path().join("data"), |_| {});
    wait_ready(&server.base).await;
    let http = covenant_exporter::client::client();
    let r = http
        .get(format!("{}/subjects", server.base))
        .header("host", "rebound.example")
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status().as_u16(), 403);
    let r = http
        .get(format!("{}/subjects", server.base))
        .send()
        .await
        .expect("GET");
    assert_eq!(r.status().as_u16(), 200);
}

fn ed25519_key(kid: &str) -> (jsonwebtoken::EncodingKey, serde_json::Value) {
    support::ed25519_key(kid)
}

fn bearer(key: &jsonwebtoken::EncodingKey, kid: &str, subject: &str) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(kid.into());
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
        + 600;
    let claims = serde_json::json!({"iss": "https://idp.test", "sub": subject, "exp": exp});
    jsonwebtoken::encode(&header, &claims, key).expect("token")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_validates_bearer_tokens_and_refreshes_the_key_set() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let (key, jwk) = ed25519_key("k1");
    let (next_key, next_jwk) = ed25519_key("k2");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, serde_json::json!({"keys": [jwk]}).to_string()).expect("jwks");
    let server = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file")
            .arg(&auth)
            .arg("--jwks-file")
            .arg(&jwks);
        c.args([
            "--jwt-issuer",
            "https://idp.test",
            "--jwks-refresh-seconds",
            "1",
        ]);
    });
    wait_ready(&server.base).await;
    let http = covenant_exporter::client::client();
    let status = |token: String| {
        let request = http
            .get(format!("{}/subjects", server.base))
            .bearer_auth(token);
        async move { request.send().await.expect("GET").status().as_u16() }
    };
    assert_eq!(status(bearer(&key, "k1", "reader")).await, 200);
    assert_eq!(status(bearer(&next_key, "k2", "reader")).await, 401);
    std::fs::write(&jwks, serde_json::json!({"keys": [next_jwk]}).to_string()).expect("jwks");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        status(bearer(&next_key, "k2", "reader")).await,
        200,
        "refreshed keys"
    );
    assert_eq!(
        status(bearer(&key, "k1", "reader")).await,
        401,
        "the old key is gone"
    );
}

/// A certificate authority made now, and leaf certificates (PEM) it signs.
struct Authority(rcgen::CertifiedIssuer<'static, rcgen::KeyPair>);

impl Authority {
    fn new() -> Authority {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "test CA");
        let key = rcgen::KeyPair::generate().expect("key");
        Authority(rcgen::CertifiedIssuer::self_signed(params, key).expect("CA"))
    }

    fn pem(&self) -> String {
        AsRef::<rcgen::Certificate>::as_ref(&self.0).pem()
    }

    fn server_certificate(&self, dir: &Path) {
        let params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).expect("params");
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.0).expect("sign");
        std::fs::write(dir.join("server.key"), key.serialize_pem()).expect("key file");
        std::fs::write(dir.join("server.pem"), cert.pem()).expect("cert file");
    }
}

/// The certificate the server presents to a new connection.
async fn presented_certificate(port: u16, ca: &Authority) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let ca_der =
        rustls::pki_types::CertificateDer::from_pem_slice(ca.pem().as_bytes()).expect("ca");
    roots.add(ca_der).expect("root");
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    stream.get_ref().1.peer_certificates().expect("certificate")[0].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_reloads_its_certificate_on_sighup() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Authority::new();
    ca.server_certificate(dir.path());
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let server = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
        c.arg("--tls-cert").arg(dir.path().join("server.pem"));
        c.arg("--tls-key").arg(dir.path().join("server.key"));
    });
    server.wait_listening();
    let before = presented_certificate(server.port, &ca).await;
    ca.server_certificate(dir.path());
    let hup = Command::new("kill")
        .args(["-HUP", &server.pid().to_string()])
        .status()
        .expect("kill -HUP");
    assert!(hup.success());
    // Sooner than the 5-second file check: the signal did it.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let after = presented_certificate(server.port, &ca).await;
    assert_ne!(
        before, after,
        "new connections get the reloaded certificate"
    );

    // A server never starts on certificates it cannot use, and then touches no store.
    let data = dir.path().join("never");
    std::fs::write(dir.path().join("broken.pem"), "not a certificate").expect("write");
    let out = covenant(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().expect("utf-8"),
            "--tls-cert",
            dir.path().join("broken.pem").to_str().expect("utf-8"),
            "--tls-key",
            dir.path().join("server.key").to_str().expect("utf-8"),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!data.exists());
}

/// Serves `body` as JSON to every HTTP request on a free port; counts the requests.
async fn serve_jwks(body: String) -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut request = [0u8; 2048];
            let _ = socket.read(&mut request).await;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    (port, hits)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_fetches_the_key_set_from_a_url_at_start_not_per_request() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let (key, jwk) = ed25519_key("k1");
    let (port, hits) = serve_jwks(serde_json::json!({"keys": [jwk]}).to_string()).await;
    let server = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
        c.args(["--jwks-url", &format!("http://127.0.0.1:{port}/jwks")]);
    });
    wait_ready(&server.base).await;
    let fetched = hits.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(fetched, 1, "fetched once at start");
    let http = covenant_exporter::client::client();
    for _ in 0..5 {
        let r = http
            .get(format!("{}/subjects", server.base))
            .bearer_auth(bearer(&key, "k1", "reader"))
            .send()
            .await
            .expect("GET");
        assert_eq!(r.status().as_u16(), 200);
    }
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "no fetch per request"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_and_tokens_never_reach_the_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let port = support::free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .arg("--auth-file")
        .arg(&auth)
        .env("RUST_LOG", "trace")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn covenant serve");
    let base = format!("http://127.0.0.1:{port}");
    wait_ready(&base).await;
    let http = covenant_exporter::client::client();
    for (user, password) in [
        ("writer", "w-pass"),
        ("writer", "guess-pw-7731"),
        ("nobody", "guess-pw-7731"),
    ] {
        http.get(format!("{base}/subjects"))
            .basic_auth(user, Some(password))
            .send()
            .await
            .expect("GET");
    }
    http.get(format!("{base}/subjects"))
        .bearer_auth("token-text-5520")
        .send()
        .await
        .expect("GET");
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log_path).expect("log");
    assert!(
        text.contains("request refused"),
        "the refusals are logged: {text}"
    );
    for secret in ["w-pass", "guess-pw-7731", "token-text-5520", "d3JpdGVy"] {
        assert!(!text.contains(secret), "{secret} is in the log");
    }
}

/// A scripted session against `serve --auth-file`: the audit trail names the principal of every
/// change and of every refused attempt, only an admin may read it, and schema fetches are
/// attributed to the authenticated reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_trail_names_each_principal_including_refusals() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let file = auth.to_str().expect("utf-8");
    ok(
        &["auth", "add-user", file, "auditor", "--password-stdin"],
        Some("a-pass\n"),
    );
    ok(
        &["auth", "grant", file, "auditor", "Admin", "Config:"],
        None,
    );
    let server = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
    });
    wait_ready(&server.base).await;
    let http = covenant_exporter::client::client();
    let base = &server.base;
    let send = |req: reqwest::RequestBuilder| async move {
        let r = req.send().await.expect("request");
        let status = r.status().as_u16();
        (status, r.text().await.expect("body"))
    };
    let body = serde_json::json!({ "schema": ORDER }).to_string();
    let (status, text) = send(
        http.post(format!("{base}/subjects/orders-value/versions"))
            .basic_auth("writer", Some("w-pass"))
            .header("content-type", "application/json")
            .body(body.clone()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let (status, _) = send(
        http.put(format!("{base}/config/orders-value"))
            .basic_auth("writer", Some("w-pass"))
            .header("content-type", "application/json")
            .body(r#"{"compatibility":"FULL"}"#),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = send(
        http.delete(format!("{base}/subjects/orders-value"))
            .basic_auth("reader", Some("r-pass")),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = send(
        http.post(format!("{base}/subjects/payments-value/versions"))
            .basic_auth("writer", Some("w-pass"))
            .header("content-type", "application/json")
            .body(body),
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = send(
        http.get(format!("{base}/subjects/orders-value/versions/1"))
            .basic_auth("reader", Some("r-pass")),
    )
    .await;
    assert_eq!(status, 200);

    // Only an admin reads the trail.
    let (status, _) = send(
        http.get(format!("{base}/covenant/v1/audit"))
            .basic_auth("reader", Some("r-pass")),
    )
    .await;
    assert_eq!(status, 403);
    let (status, text) = send(
        http.get(format!("{base}/covenant/v1/audit?limit=100"))
            .basic_auth("auditor", Some("a-pass")),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let trail: serde_json::Value = serde_json::from_str(&text).expect("json");
    let seen: Vec<(String, String, String, String)> = trail["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            (s("principal"), s("operation"), s("subject"), s("outcome"))
        })
        .collect();
    let expect = |p: &str, op: &str, subject: &str, outcome: &str| {
        assert!(
            seen.iter()
                .any(|e| e == &(p.into(), op.into(), subject.into(), outcome.into())),
            "no {p} {op} {subject} {outcome} in {seen:?}"
        );
    };
    expect("writer", "register", "orders-value", "ok");
    expect("writer", "config.set", "orders-value", "ok");
    expect("reader", "Delete", "orders-value", "denied");
    expect("writer", "Write", "payments-value", "denied");
    assert!(
        !text.contains("r-pass") && !text.contains("w-pass"),
        "no secret in the trail"
    );
    // The trail is readable from the command line too.
    let out = covenant(
        &[
            "audit",
            "--url",
            base,
            "--outcome",
            "denied",
            "--basic-auth",
            "auditor:a-pass",
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("reader"), "{listed}");
    assert!(!listed.contains("register"), "only refusals: {listed}");

    // The fetch above is attributed to the authenticated reader.
    let (status, text) = send(
        http.get(format!("{base}/covenant/v1/subjects/orders-value/readers"))
            .basic_auth("reader", Some("r-pass")),
    )
    .await;
    assert_eq!(status, 200, "{text}");
    let readers: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert!(
        readers["readers"]
            .as_array()
            .expect("readers")
            .iter()
            .any(|r| r.to_string().contains("\"reader\"")),
        "{readers}"
    );
}

/// The Rust client over TLS with Basic credentials: it trusts the authority made here and
/// registers, encodes and decodes through `serve --tls-cert --auth-file`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_over_tls() {
    let dir = tempfile::tempdir().expect("temp dir");
    let ca = Authority::new();
    ca.server_certificate(dir.path());
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let server = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
        c.arg("--tls-cert").arg(dir.path().join("server.pem"));
        c.arg("--tls-key").arg(dir.path().join("server.key"));
    });
    server.wait_listening();
    let base = format!("https://localhost:{}", server.port);
    let trusting = || {
        covenant_exporter::client::builder().add_root_certificate(
            reqwest::Certificate::from_pem(ca.pem().as_bytes()).expect("CA certificate"),
        )
    };
    let client = |user: &str, password: &str| {
        SrSettings::new_builder(base.clone())
            .set_basic_authorization(user, Some(password))
            .build_with(trusting())
            .expect("client settings")
    };
    let writer = client("writer", "w-pass");
    let schema = SuppliedSchema::new(
        Some("acme.auth.Order".into()),
        SchemaType::Avro,
        ORDER.into(),
    );
    let registered = post_schema(&writer, "orders-value".into(), schema)
        .await
        .expect("register over TLS");
    let bytes = AvroEncoder::new(writer)
        .encode(
            vec![("id", AvroValue::String("o-tls".into()))],
            SubjectNameStrategy::TopicNameStrategy("orders".into(), false),
        )
        .await
        .expect("encode over TLS");
    assert_eq!(
        u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
        registered.id
    );
    let decoded = AvroDecoder::new(client("reader", "r-pass"))
        .decode(Some(&bytes))
        .await
        .expect("decode over TLS");
    assert_eq!(
        decoded.value,
        AvroValue::Record(vec![("id".into(), AvroValue::String("o-tls".into()))])
    );
    // The command line reaches the same registry over TLS with --ca-cert.
    let file = auth.to_str().expect("utf-8");
    ok(
        &["auth", "add-user", file, "steward", "--password-stdin"],
        Some("s-pass\n"),
    );
    ok(
        &["auth", "grant", file, "steward", "Govern", "Config:"],
        None,
    );
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).expect("write CA");
    let listed = ok(
        &[
            "consumers",
            "list",
            "--url",
            &base,
            "--basic-auth",
            "steward:s-pass",
            "--ca-cert",
            ca_file.to_str().expect("utf-8"),
        ],
        None,
    );
    assert!(listed.contains("no consumers declared"), "{listed}");
    let refused = covenant(
        &[
            "consumers",
            "list",
            "--url",
            &base,
            "--basic-auth",
            "steward:s-pass",
        ],
        None,
    );
    assert!(
        !refused.status.success(),
        "an unknown authority is not trusted"
    );
    // A client that does not trust the authority gets no answer.
    let untrusting = SrSettings::new_builder(base.clone())
        .set_basic_authorization("reader", Some("r-pass"))
        .build()
        .expect("client settings");
    assert!(get_all_subjects(&untrusting).await.is_err());
}
