//! The ways in past authorization, each tried as an attacker would against a running
//! `covenant serve`: HEAD, a foreign `Host` beside anonymous reads, parallel password
//! guesses, a token not valid yet, indirect reads through references, headers and metrics,
//! timing of unknown users, lockouts that hit the wrong people, IMPORT and explicit ids,
//! the auth file's mode, and Karapace's own auth file.

use crate::support;

use reqwest::Method;
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::Serve;

/// `covenant` with `stdin`, asserting success; its stdout.
fn covenant_ok(args: &[&str], stdin: &str) -> String {
    let out = support::covenant_with_stdin(args, stdin);
    assert!(
        out.status.success(),
        "covenant {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// An auth file made with `covenant auth`: `admin` may do everything (Karapace's `.*`),
/// `reader` reads team a and the registry's config, `configwriter` writes `Config:`
/// (Karapace's global config writer), `writer` writes team a, `steward` governs everything.
fn auth_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("auth.json");
    let file = path.to_str().expect("utf-8 path");
    for user in ["admin", "reader", "configwriter", "writer", "steward"] {
        covenant_ok(
            &["auth", "add-user", file, user, "--password-stdin"],
            &format!("{user}-pw\n"),
        );
    }
    for (user, op, resource) in [
        ("admin", "Admin", ".*"),
        ("reader", "Read", "SubjectPrefix:team-a"),
        ("reader", "Read", "Config:"),
        ("configwriter", "Write", "Config:"),
        ("writer", "Write", "SubjectPrefix:team-a"),
        ("steward", "Govern", ".*"),
    ] {
        covenant_ok(&["auth", "grant", file, user, op, resource], "");
    }
    path
}

/// A running server with the auth file and `extra` arguments.
fn serve(dir: &Path, auth: &Path, extra: &[&str]) -> Serve {
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let server = Serve::spawn(&data, |c| {
        c.arg("--auth-file").arg(auth).args(extra);
    });
    server.wait_listening();
    server
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

async fn send(
    base: &str,
    user: Option<&str>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Answer {
    let http = covenant_exporter::client::client();
    let method = Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = http.request(method, format!("{base}{path}"));
    if let Some(user) = user {
        request = request.basic_auth(user, Some(format!("{user}-pw")));
    }
    if let Some(body) = body {
        request = request
            .header("content-type", "application/vnd.schemaregistry.v1+json")
            .body(body.to_string());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap_or_default();
    Answer {
        status,
        headers,
        text,
    }
}

async fn ok(base: &str, user: &str, method: &str, path: &str, body: Option<Value>) -> Value {
    let a = send(base, Some(user), method, path, body).await;
    assert_eq!(a.status, 200, "{method} {path} as {user}: {}", a.text);
    a.json()
}

fn avro(name: &str, field: &str) -> Value {
    json!({"schema": json!({"type": "record", "name": name, "fields": [
        {"name": field, "type": "string"}]}).to_string()})
}

/// Team b's secret field; no answer to a caller without team b may name it.
const SECRET: &str = "teamBSecretField";

/// HEAD is authorized exactly as GET: anonymous callers get 401 with no sign of what the GET
/// would answer (no deprecation headers, no length of the schema), a caller without the
/// subject 403, and both refusals are in the audit trail. A refused HEAD counts as no read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_is_judged_and_audited_as_get() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = auth_file(dir.path());
    let server = serve(dir.path(), &auth, &[]);
    let base = &server.base;
    ok(
        base,
        "admin",
        "POST",
        "/subjects/team-b-secret/versions",
        Some(avro("B", SECRET)),
    )
    .await;
    ok(
        base,
        "admin",
        "POST",
        "/covenant/v1/deprecations",
        Some(json!({
            "target": {"kind": "version", "subject": "team-b-secret", "version": 1},
            "old_promise": "v1", "new_promise": "v2",
            "window_start": "2026-01-01T00:00:00Z", "window_end": "2026-06-01T00:00:00Z",
            "sunset": "2099-01-01T00:00:00Z"})),
    )
    .await;
    let get = send(
        base,
        Some("admin"),
        "GET",
        "/subjects/team-b-secret/versions/1",
        None,
    )
    .await;
    assert!(
        get.header("deprecation").is_some(),
        "the admin's GET is marked"
    );
    for path in [
        "/subjects/team-b-secret/versions/1",
        "/metrics",
        "/covenant/v1/audit",
        "/exporters",
        "/covenant/v1/subjects/team-b-secret/readers",
    ] {
        let a = send(base, None, "HEAD", path, None).await;
        assert_eq!(a.status, 401, "anonymous HEAD {path}");
        assert!(
            a.header("deprecation").is_none() && a.header("link").is_none(),
            "{path}"
        );
        assert_ne!(
            a.header("content-length"),
            get.header("content-length"),
            "{path}"
        );
        // The reader may read the registry's config, metrics and exporter names, not team
        // b's subject nor the audit trail.
        let a = send(base, Some("reader"), "HEAD", path, None).await;
        let readable = path == "/metrics" || path == "/exporters";
        assert_eq!(
            a.status,
            if readable { 200 } else { 403 },
            "reader HEAD {path}"
        );
        assert!(a.header("deprecation").is_none(), "{path}");
    }
    let allowed = send(
        base,
        Some("admin"),
        "HEAD",
        "/subjects/team-b-secret/versions/1",
        None,
    )
    .await;
    assert_eq!(allowed.status, 200);
    let readers = ok(
        base,
        "admin",
        "GET",
        "/covenant/v1/subjects/team-b-secret/readers",
        None,
    )
    .await;
    assert!(
        !readers.to_string().contains("anonymous"),
        "a refused HEAD read nothing: {readers}"
    );
    let trail = ok(
        base,
        "admin",
        "GET",
        "/covenant/v1/audit?outcome=denied&limit=1000",
        None,
    )
    .await;
    let denied = trail["entries"].as_array().expect("entries").len();
    assert!(denied >= 2, "HEAD refusals are audited: {trail}");
    assert!(
        trail.to_string().contains("HEAD"),
        "the trail names the method: {trail}"
    );
}

/// With authentication and anonymous reads, a request naming a foreign host is refused
/// (DNS rebinding would make it an anonymous reader); IP literals and allowed names pass.
/// Without authentication on every address, remote clients by IP can use the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_hosts_are_refused_whenever_anonymous_callers_may_act() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = auth_file(dir.path());
    let server = serve(
        dir.path(),
        &auth,
        &[
            "--anonymous-operations",
            "read",
            "--allowed-host",
            "registry.example",
        ],
    );
    let port = server.port;
    let http = covenant_exporter::client::client();
    let status = |port: u16, host: String| {
        let http = http.clone();
        async move {
            http.get(format!("http://127.0.0.1:{port}/subjects"))
                .header("host", host)
                .send()
                .await
                .expect("request")
                .status()
                .as_u16()
        }
    };
    assert_eq!(status(port, format!("rebound.example:{port}")).await, 403);
    assert_eq!(status(port, format!("localhost:{port}")).await, 200);
    assert_eq!(status(port, format!("192.0.2.10:{port}")).await, 200);
    assert_eq!(status(port, format!("registry.example:{port}")).await, 200);
    drop(server);

    let open = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args([
            "serve",
            "--allow-anonymous",
            "--listen",
            &format!("0.0.0.0:{port}"),
        ])
        .arg("--data-dir")
        .arg(open.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn covenant serve");
    let _anywhere = Killed(child);
    let up = (0..200).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "server did not start");
    assert_eq!(
        status(port, format!("192.0.2.10:{port}")).await,
        200,
        "a client by IP"
    );
    assert_eq!(status(port, format!("rebound.example:{port}")).await, 403);
}

/// A child process killed when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// 40 parallel wrong guesses at one user from one address: at most the limit are hashed
/// (the rest 429 at once); 120 parallel logins from 12 addresses queue for the hasher
/// instead of each taking scrypt's memory at the same time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_guesses_are_counted_before_hashing_and_hashes_queue() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = auth_file(dir.path());
    let server = serve(dir.path(), &auth, &[]);
    let port = server.port;
    // Plain HTTP/1.1 over a socket bound to `from`, so each guess comes from its address.
    let guess = move |from: std::net::IpAddr, user: &'static str| async move {
        use base64::Engine;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.bind((from, 0).into()).expect("bind");
        let mut stream = socket
            .connect(([127, 0, 0, 1], port).into())
            .await
            .expect("connect");
        let credential = base64::engine::general_purpose::STANDARD.encode(format!("{user}:wrong"));
        let request = format!(
            "GET /subjects HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic {credential}\r\nConnection: close\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.expect("write");
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.expect("read");
        let text = String::from_utf8_lossy(&answer);
        text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0)
    };
    let statuses = futures_join(
        (0..40)
            .map(|_| guess("127.0.0.1".parse().unwrap(), "reader"))
            .collect(),
    )
    .await;
    let hashed = statuses.iter().filter(|s| **s == 401).count();
    let limited = statuses.iter().filter(|s| **s == 429).count();
    println!("40 parallel guesses: {hashed} checked, {limited} refused unchecked");
    assert!(hashed <= 10, "{statuses:?}");
    assert_eq!(hashed + limited, 40, "{statuses:?}");

    let before = support::peak_rss_kib(server.pid());
    let started = Instant::now();
    let statuses = futures_join(
        (0..120)
            .map(|i| guess(format!("127.0.0.{}", 2 + i % 12).parse().unwrap(), "writer"))
            .collect(),
    )
    .await;
    let after = support::peak_rss_kib(server.pid());
    println!(
        "120 parallel logins from 12 addresses: peak RSS {before} -> {after} KiB in {:?}",
        started.elapsed()
    );
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    assert!(
        after.saturating_sub(before) < 160 * 1024,
        "the hashes queue: peak RSS grew {} KiB",
        after - before
    );
}

/// A lockout is per (address, user): the guessed user is locked out at that address, another
/// user from the same address is not, and a valid token is never locked out. A locked-out
/// user is told when to come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lockouts_hit_only_the_guessed_user_and_never_a_valid_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = auth_file(dir.path());
    let (key, jwk) = support::ed25519_key("k1");
    let jwks = dir.path().join("jwks.json");
    std::fs::write(&jwks, json!({"keys": [jwk]}).to_string()).expect("jwks");
    let server = serve(
        dir.path(),
        &auth,
        &[
            "--jwks-file",
            jwks.to_str().expect("path"),
            "--max-failed-logins",
            "3",
        ],
    );
    let base = &server.base;
    for _ in 0..3 {
        let http = covenant_exporter::client::client();
        let s = http
            .get(format!("{base}/subjects"))
            .basic_auth("reader", Some("wrong"))
            .send()
            .await
            .expect("request");
        assert_eq!(s.status().as_u16(), 401);
    }
    let locked = send(base, Some("reader"), "GET", "/subjects", None).await;
    assert_eq!(
        locked.status, 429,
        "the guessed user is locked out: {}",
        locked.text
    );
    assert!(locked.header("retry-after").is_some());
    let other = send(base, Some("writer"), "GET", "/subjects", None).await;
    assert_eq!(
        other.status, 200,
        "another user from the same address is not"
    );
    let http = covenant_exporter::client::client();
    // A token not valid yet is refused (its `nbf` is an hour ahead).
    let early = http
        .get(format!("{base}/subjects"))
        .bearer_auth(token(
            &key,
            json!({"sub": "reader", "exp": now() + 7200, "nbf": now() + 3600}),
        ))
        .send()
        .await
        .expect("request");
    assert_eq!(early.status().as_u16(), 401, "nbf in the future");
    for _ in 0..5 {
        let s = http
            .get(format!("{base}/subjects"))
            .bearer_auth("not.a.token")
            .send()
            .await
            .expect("request");
        assert!(matches!(s.status().as_u16(), 401 | 429));
    }
    let valid = http
        .get(format!("{base}/subjects"))
        .bearer_auth(token(&key, json!({"sub": "reader", "exp": now() + 600})))
        .send()
        .await
        .expect("request");
    assert_eq!(
        valid.status().as_u16(),
        200,
        "a valid token is never locked out"
    );
}

/// An unknown user costs what a known user's wrong password costs, for Karapace's PBKDF2
/// users too, so timing does not tell which names exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_users_take_as_long_as_wrong_passwords() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("auth.json");
    // Karapace's test users (sha512 and sha1 PBKDF2), as its reference documents them.
    std::fs::write(
        &path,
        json!({"users": [
            {"username": "aladdin", "algorithm": "sha512", "salt": "salt",
             "password_hash": "uofa7Uw+IolY0GDeCQApTVAUPlBthFYPFQ+QN+kKtXBzSwddiyLrNnIC2UQcA5X+hCL/mHNNqEMA30oIM4oqxA=="},
            {"username": "carol", "algorithm": "sha512", "salt": "salt2",
             "password_hash": "uofa7Uw+IolY0GDeCQApTVAUPlBthFYPFQ+QN+kKtXBzSwddiyLrNnIC2UQcA5X+hCL/mHNNqEMA30oIM4oqxA=="}],
         "permissions": []})
        .to_string(),
    )
    .expect("auth file");
    let server = serve(dir.path(), &path, &["--max-failed-logins", "1000"]);
    let http = covenant_exporter::client::client();
    // Taking turns, so both kinds of refusal meet the same load on the machine.
    let refusal_time = |user: &'static str, i: usize| {
        let http = http.clone();
        let base = server.base.clone();
        async move {
            let started = Instant::now();
            let s = http
                .get(format!("{base}/subjects"))
                .basic_auth(user, Some(format!("guess-{i}")))
                .send()
                .await
                .expect("request");
            assert_eq!(s.status().as_u16(), 401);
            started.elapsed()
        }
    };
    let (mut wrong, mut unknown) = (Vec::new(), Vec::new());
    for i in 0..21 {
        wrong.push(refusal_time("aladdin", i).await);
        unknown.push(refusal_time("nobody-here", i).await);
    }
    wrong.sort();
    unknown.sort();
    let (wrong, unknown) = (wrong[10], unknown[10]);
    let ratio = unknown.as_secs_f64() / wrong.as_secs_f64();
    println!(
        "median refusal: wrong password {wrong:?}, unknown user {unknown:?} (ratio {ratio:.2})"
    );
    assert!(
        (0.25..4.0).contains(&ratio),
        "unknown {unknown:?} against wrong {wrong:?}"
    );
}

/// Reads through another route than the subject's own show nothing of a subject the caller
/// may not read: a resolved text inlining it, a shared schema id's deprecation headers and
/// links, the metrics' labels. Explicit ids and IMPORT need Admin; the auth file is private.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indirect_reads_and_numbering_need_the_rights_of_direct_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = auth_file(dir.path());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&auth)
            .expect("auth file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the auth file holds password hashes");
    }
    let server = serve(dir.path(), &auth, &[]);
    let base = &server.base;
    // Team a's schema references team b's.
    ok(
        base,
        "admin",
        "POST",
        "/subjects/team-b-base/versions",
        Some(avro("B", SECRET)),
    )
    .await;
    let with_reference = json!({
        "schema": json!({"type": "record", "name": "A", "fields": [
            {"name": "b", "type": "B"}]}).to_string(),
        "references": [{"name": "B", "subject": "team-b-base", "version": 1}]});
    let a = ok(
        base,
        "admin",
        "POST",
        "/subjects/team-a-value/versions",
        Some(with_reference),
    )
    .await;
    let id = a["id"].as_i64().expect("id");
    let plain = send(
        base,
        Some("reader"),
        "GET",
        "/subjects/team-a-value/versions/1",
        None,
    )
    .await;
    assert_eq!(plain.status, 200);
    assert!(!plain.text.contains(SECRET));
    for path in [
        "/subjects/team-a-value/versions/1?format=resolved".to_string(),
        format!("/schemas/ids/{id}?format=resolved"),
        "/subjects/team-a-value/versions/1/schema?format=resolved".to_string(),
    ] {
        let a = send(base, Some("reader"), "GET", &path, None).await;
        assert_eq!(a.status, 403, "{path}: {}", a.text);
        assert!(!a.text.contains(SECRET), "{path}");
    }
    let resolved = send(
        base,
        Some("admin"),
        "GET",
        "/subjects/team-a-value/versions/1?format=resolved",
        None,
    )
    .await;
    assert!(
        resolved.text.contains(SECRET),
        "the admin may: {}",
        resolved.text
    );

    // One schema id under both teams; team b deprecated its subject for a successor.
    let shared = avro("Shared", "sharedField");
    let a = ok(
        base,
        "admin",
        "POST",
        "/subjects/team-a-shared/versions",
        Some(shared.clone()),
    )
    .await;
    ok(
        base,
        "admin",
        "POST",
        "/subjects/team-b-shared/versions",
        Some(shared),
    )
    .await;
    ok(
        base,
        "admin",
        "POST",
        "/subjects/team-b-next/versions",
        Some(avro("Next", "n")),
    )
    .await;
    ok(
        base,
        "admin",
        "POST",
        "/covenant/v1/deprecations",
        Some(json!({
            "target": {"kind": "subject", "subject": "team-b-shared"},
            "replacement": "team-b-next",
            "old_promise": "old", "new_promise": "new",
            "window_start": "2026-01-01T00:00:00Z", "window_end": "2026-06-01T00:00:00Z",
            "sunset": "2099-01-01T00:00:00Z"})),
    )
    .await;
    let shared_id = a["id"].as_i64().expect("id");
    let admin_view = send(
        base,
        Some("admin"),
        "GET",
        &format!("/schemas/ids/{shared_id}"),
        None,
    )
    .await;
    assert!(
        admin_view.header("deprecation").is_some(),
        "the admin sees team b's record"
    );
    assert!(
        admin_view
            .header("link")
            .unwrap_or("")
            .contains("team-b-next")
    );
    let reader_view = send(
        base,
        Some("reader"),
        "GET",
        &format!("/schemas/ids/{shared_id}"),
        None,
    )
    .await;
    assert_eq!(reader_view.status, 200);
    assert!(
        reader_view.header("deprecation").is_none(),
        "team b's record is not the reader's"
    );
    assert!(!reader_view.header("link").unwrap_or("").contains("team-b"));
    let subjects = send(
        base,
        Some("reader"),
        "GET",
        &format!("/schemas/ids/{shared_id}/subjects"),
        None,
    )
    .await;
    assert_eq!(subjects.json(), json!(["team-a-shared"]));

    // Usage of team b in the metrics, read by a principal with Read on Config:.
    let report = json!({"subject": "team-b-shared", "client_id": "steward",
                        "records_by_version": {"1": 2}, "decode_failures": 1});
    ok(base, "steward", "POST", "/covenant/v1/usage", Some(report)).await;
    let metrics = send(base, Some("steward"), "GET", "/metrics", None).await;
    assert!(
        metrics.text.contains("team-b-shared"),
        "the steward sees it"
    );
    let metrics = send(base, Some("reader"), "GET", "/metrics", None).await;
    assert_eq!(metrics.status, 200);
    assert!(!metrics.text.contains("team-b"), "{}", metrics.text);

    // Numbering: Karapace's global config writer may change the config, not the numbering.
    let config = send(
        base,
        Some("configwriter"),
        "PUT",
        "/config",
        Some(json!({"compatibility": "FULL"})),
    )
    .await;
    assert_eq!(config.status, 200, "{}", config.text);
    for (user, method, path, body) in [
        ("configwriter", "PUT", "/mode", json!({"mode": "IMPORT"})),
        (
            "configwriter",
            "POST",
            "/exporters",
            json!({"name": "x", "subjects": ["*"], "config": {"schema.registry.url": "http://127.0.0.1:9"}}),
        ),
        ("configwriter", "GET", "/covenant/v1/audit", Value::Null),
        (
            "writer",
            "POST",
            "/subjects/team-a-import/versions",
            json!({"schema": avro("I", "i")["schema"], "id": 9000, "version": 1}),
        ),
    ] {
        let body = (!body.is_null()).then_some(body);
        let a = send(base, Some(user), method, path, body).await;
        assert_eq!(a.status, 403, "{user} {method} {path}: {}", a.text);
    }
    let trail = ok(
        base,
        "admin",
        "GET",
        "/covenant/v1/audit?outcome=denied&limit=1000",
        None,
    )
    .await;
    assert!(
        trail.to_string().contains("team-a-import"),
        "a refusal inside a handler is audited: {trail}"
    );
}

/// Karapace's own test auth file (its `password` and `permissions` names, `.*` for the
/// admin) loads unchanged and grants what Karapace grants.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karapaces_own_auth_file_grants_what_karapace_grants() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("karapace.auth.json");
    std::fs::write(
        &path,
        r#"{
    "users": [
        {"username": "admin", "algorithm": "scrypt", "salt": "adminsalt",
         "password": "AG7+ttm/skHjqEZ90yzEkgjy75yaqoucNnQPIP2S++1rYOPXEtm4+AF7WdDGj+J0sIPFdYC9nXYsvkB1xYDYkw=="},
        {"username": "aladdin", "algorithm": "sha512", "salt": "salt",
         "password": "uofa7Uw+IolY0GDeCQApTVAUPlBthFYPFQ+QN+kKtXBzSwddiyLrNnIC2UQcA5X+hCL/mHNNqEMA30oIM4oqxA=="},
        {"username": "reader", "algorithm": "sha1", "salt": "third-salt",
         "password": "SeUTCvKCE8rj6lHFkyFkhopktuY="}
    ],
    "permissions": [
        {"username": "admin", "operation": "Write", "resource": ".*"},
        {"username": "aladdin", "operation": "Write", "resource": "Subject:cave-.*"},
        {"username": "reader", "operation": "Read", "resource": "Subject:carpet-.*"}
    ]
}"#,
    )
    .expect("auth file");
    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["auth", "check", path.to_str().expect("path")])
        .output()
        .expect("covenant auth check");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let server = serve(dir.path(), &path, &[]);
    let base = &server.base;
    let http = covenant_exporter::client::client();
    let call = |user: &'static str,
                password: &'static str,
                method: &'static str,
                path: &'static str,
                body: Option<Value>| {
        let http = http.clone();
        let base = base.clone();
        async move {
            let mut r = http
                .request(
                    Method::from_bytes(method.as_bytes()).unwrap(),
                    format!("{base}{path}"),
                )
                .basic_auth(user, Some(password));
            if let Some(b) = body {
                r = r
                    .header("content-type", "application/json")
                    .body(b.to_string());
            }
            r.send().await.expect("request").status().as_u16()
        }
    };
    let schema = || Some(avro("Lamp", "wish"));
    assert_eq!(
        call(
            "aladdin",
            "opensesame",
            "POST",
            "/subjects/cave-lamp/versions",
            schema()
        )
        .await,
        200
    );
    assert_eq!(
        call(
            "aladdin",
            "opensesame",
            "POST",
            "/subjects/carpet-lamp/versions",
            schema()
        )
        .await,
        403
    );
    assert_eq!(
        call(
            "admin",
            "admin",
            "POST",
            "/subjects/carpet-ride/versions",
            schema()
        )
        .await,
        200
    );
    assert_eq!(
        call(
            "admin",
            "admin",
            "PUT",
            "/config",
            Some(json!({"compatibility": "FULL"}))
        )
        .await,
        200
    );
    assert_eq!(
        call(
            "reader",
            "secret",
            "GET",
            "/subjects/carpet-ride/versions",
            None
        )
        .await,
        200
    );
    assert_eq!(
        call(
            "reader",
            "secret",
            "GET",
            "/subjects/cave-lamp/versions",
            None
        )
        .await,
        403
    );
    assert_eq!(
        call(
            "reader",
            "secret",
            "POST",
            "/subjects/carpet-ride/versions",
            schema()
        )
        .await,
        403
    );
    assert_eq!(call("reader", "wrong", "GET", "/subjects", None).await, 401);
}

async fn futures_join<F: std::future::Future<Output = u16> + Send + 'static>(
    futures: Vec<F>,
) -> Vec<u16> {
    let handles: Vec<_> = futures.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("task"));
    }
    out
}

fn token(key: &jsonwebtoken::EncodingKey, claims: Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some("k1".into());
    jsonwebtoken::encode(&header, &claims, key).expect("token")
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}
