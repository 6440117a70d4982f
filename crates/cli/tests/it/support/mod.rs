//! Plumbing shared by the tests that drive a running `covenant serve`: free ports, the
//! process itself, health polling, JSON calls and throwaway PostgreSQL databases; and the
//! `covenant` binary run on files.
//!
//! Shared by the modules of the one integration-test binary (`tests/it/main.rs`); each
//! module uses only part of it.
#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The variable holding a PostgreSQL admin URL (see `scripts/with-postgres.sh`).
pub const POSTGRES_ENV: &str = "COVENANT_TEST_POSTGRES";

/// Runs the `covenant` binary as a user would, to completion.
pub fn covenant(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(args)
        .output()
        .expect("run covenant")
}

/// Writes `text` to `dir/name` and answers the path.
pub fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path
}

/// A path as a command-line argument.
pub fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// The Confluent content type.
pub const V1: &str = "application/vnd.schemaregistry.v1+json";

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .expect("clock after 1970")
}

/// Names unique to one run, so runs can share a PostgreSQL database.
pub fn unique_tag() -> String {
    format!("-{}-{}", std::process::id(), now_ms())
}

/// One `covenant serve` process on a free port; killed when dropped.
pub struct Serve {
    child: Child,
    pub port: u16,
    pub base: String,
}

impl Serve {
    /// Starts `covenant serve` on `data_dir`; `configure` adds options or environment.
    pub fn spawn(data_dir: &Path, configure: impl FnOnce(&mut Command)) -> Serve {
        Serve::spawn_on(free_port(), data_dir, configure)
    }

    /// [`Serve::spawn`] on a given port, to restart a server where its clients expect it.
    pub fn spawn_on(port: u16, data_dir: &Path, configure: impl FnOnce(&mut Command)) -> Serve {
        let mut command = Command::new(env!("CARGO_BIN_EXE_covenant"));
        command
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(data_dir);
        configure(&mut command);
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn covenant serve");
        Serve {
            child,
            port,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Kills the process with SIGKILL: no shutdown, no flushing.
    pub fn kill(&mut self) -> std::io::Result<()> {
        let killed = self.child.kill();
        let _ = self.child.wait();
        killed
    }

    /// The process id, for signals or to read its memory from `/proc`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Blocks until the port accepts connections, for tests without a runtime.
    pub fn wait_listening(&self) {
        let up = (0..200).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
        });
        assert!(up, "server did not start");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

/// The status `url` answers with, or `None` when nothing answers.
pub async fn status_of(http: &reqwest::Client, url: &str) -> Option<u16> {
    http.get(url)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()
        .map(|r| r.status().as_u16())
}

/// Waits until `base` + `path` answers `want`, returning how long it took.
pub async fn wait_health(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    want: u16,
    within: Duration,
) -> Duration {
    let started = Instant::now();
    let url = format!("{base}{path}");
    let mut last = None;
    while started.elapsed() < within {
        last = status_of(http, &url).await;
        if last == Some(want) {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{base} did not report {want} on {path} within {within:?} (last: {last:?})");
}

/// Waits until `/health/ready` answers 200.
pub async fn wait_ready(http: &reqwest::Client, base: &str) {
    wait_health(http, base, "/health/ready", 200, Duration::from_secs(30)).await;
}

/// Sends `body` (when given) as `content_type` and returns the status and the answer, as JSON
/// when it parses and as a string otherwise.
pub async fn call(
    http: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = http.request(method, format!("{base}{path}"));
    if let Some(body) = body {
        request = request
            .header("content-type", content_type)
            .body(body.to_string());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// A throwaway database created next to the admin database of `COVENANT_TEST_POSTGRES`.
pub struct TestDb {
    pub admin: String,
    pub name: String,
    pub url: String,
}

impl TestDb {
    /// Creates `<prefix>_<pid>_<n>`, or returns `None` when `COVENANT_TEST_POSTGRES` is unset.
    pub async fn create(prefix: &str) -> Option<TestDb> {
        let admin = std::env::var(POSTGRES_ENV).ok()?;
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        );
        let (client, conn) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
            .await
            .expect("connect to the admin database");
        let driver = tokio::spawn(conn);
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .await
            .expect("create test database");
        drop(client);
        let _ = driver.await;
        let (base, _) = admin.rsplit_once('/').expect("admin URL names a database");
        let url = format!("{base}/{name}");
        Some(TestDb { admin, name, url })
    }

    pub async fn drop_db(self) {
        if let Ok((client, conn)) =
            tokio_postgres::connect(&self.admin, tokio_postgres::NoTls).await
        {
            let driver = tokio::spawn(conn);
            let _ = client
                .batch_execute(&format!(
                    "DROP DATABASE IF EXISTS {} WITH (FORCE)",
                    self.name
                ))
                .await;
            drop(client);
            let _ = driver.await;
        }
    }
}

/// A `covenant serve` on a fresh embedded store, live, with a client for JSON calls.
pub struct TestServer {
    pub serve: Serve,
    pub base: String,
    pub client: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let serve = Serve::spawn(&dir.path().join("data"), |_| {});
        let server = TestServer {
            base: serve.base.clone(),
            serve,
            client: covenant_exporter::client::client(),
            _dir: dir,
        };
        wait_health(
            &server.client,
            &server.base,
            "/health/live",
            200,
            Duration::from_secs(10),
        )
        .await;
        server
    }

    /// Status and JSON answer of one call with Confluent's content type.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        call(&self.client, &self.base, method, path, V1, body).await
    }

    pub async fn register(&self, subject: &str, schema_type: &str, schema: &str) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(serde_json::json!({"schemaType": schema_type, "schema": schema})),
        )
        .await
    }

    /// Registers `schema` and answers its id; anything but 200 fails the test.
    pub async fn registered(&self, subject: &str, schema_type: &str, schema: &str) -> i64 {
        let (status, body) = self.register(subject, schema_type, schema).await;
        assert_eq!(status, 200, "{subject}: {body}");
        body["id"].as_i64().expect("id")
    }

    pub async fn config(&self, subject: &str, body: Value) {
        let (status, answer) = self
            .call("PUT", &format!("/config/{subject}"), Some(body))
            .await;
        assert_eq!(status, 200, "{answer}");
    }
}

/// The peak resident memory (`VmHWM`) of process `pid`, in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}

/// A `covenant serve` under an address-space limit (`prlimit --as`), so that a defect that
/// allocates without bound fails its test instead of harming the machine; killed when dropped.
pub struct Confined {
    pub child: Child,
    pub port: u16,
    pub base: String,
    pub data: std::path::PathBuf,
}

impl Confined {
    /// `covenant serve` on `port`, its data in `data`, `args` after its own, its address space
    /// limited to `bytes`, its standard error into `log` (discarded without one).
    pub fn spawn(bytes: u64, port: u16, data: &Path, log: Option<&Path>, args: &[&str]) -> Self {
        let stderr = match log {
            Some(path) => Stdio::from(std::fs::File::create(path).expect("log file")),
            None => Stdio::null(),
        };
        let child = Command::new("prlimit")
            .arg(format!("--as={bytes}"))
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_covenant"))
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--data-dir")
            .arg(data)
            .args(args)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn covenant serve under prlimit");
        Confined {
            child,
            port,
            base: format!("http://127.0.0.1:{port}"),
            data: data.to_path_buf(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Peak resident memory (`VmHWM`), in MiB.
    pub fn peak_rss_mib(&self) -> u64 {
        peak_rss_kib(self.pid()) / 1024
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Sends SIGTERM, as a service manager stops the server.
    pub fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("kill -TERM");
        assert!(sent.success());
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command's standard output as JSON; a panic showing both outputs when it is not.
pub fn json_of(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Processor seconds (user and system) process `pid` has used so far.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc stat");
    // Fields after the parenthesized command name; utime and stime are the 12th and 13th.
    let after_name = stat.rsplit_once(')').expect("stat format").1;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // /proc reports in USER_HZ, 100 on Linux whatever the kernel's tick rate.
    ticks as f64 / 100.0
}

/// `covenant args` with `stdin` on its standard input.
pub fn covenant_with_stdin(args: &[&str], stdin: &str) -> std::process::Output {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn covenant");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("write stdin");
    drop(input);
    child.wait_with_output().expect("covenant output")
}

/// An Ed25519 key made now (PKCS#8: a fixed 16-byte header and the seed) and its public JWK
/// named `kid`.
pub fn ed25519_key(kid: &str) -> (jsonwebtoken::EncodingKey, Value) {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).expect("random seed");
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&seed);
    let key = jsonwebtoken::EncodingKey::from_ed_der(&der);
    let mut jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::EdDSA)
        .expect("public key");
    jwk.common.key_id = Some(kid.into());
    (key, serde_json::to_value(jwk).expect("jwk"))
}
