//! A `covenant serve` child process on a loopback port, and a bounded keep-alive load
//! generator to drive it. Only 127.0.0.1 is ever addressed.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

/// Where the server keeps its data.
#[derive(Debug, Clone)]
pub enum Backend {
    Embedded(PathBuf),
    Postgres(String),
}

impl Backend {
    pub fn label(&self) -> &'static str {
        match self {
            Backend::Embedded(_) => "embedded SQLite",
            Backend::Postgres(_) => "PostgreSQL",
        }
    }
}

pub struct Server {
    child: Child,
    pub base: String,
    log: PathBuf,
}

/// Why a server could not be started: either this build has no server (or no such backend)
/// yet, which is reported as n/a, or it broke, which fails the run.
pub enum StartError {
    NotInBuild(String),
    Failed(anyhow::Error),
}

/// The result of a part's first start: `None` when this build cannot run the backend, after
/// recording why as one n/a row (`workload`) of `part`.
pub fn first_start<T>(
    started: Result<T, StartError>,
    rows: &mut Vec<crate::table::Row>,
    part: &str,
    workload: &str,
) -> Result<Option<T>> {
    match started {
        Ok(s) => Ok(Some(s)),
        Err(StartError::NotInBuild(why)) => {
            rows.push(
                crate::table::Row::new(part, workload)
                    .covenant("n/a")
                    .notes(why),
            );
            Ok(None)
        }
        Err(StartError::Failed(e)) => Err(e),
    }
}

/// The result of restarting a server that started before on the same backend.
pub fn restart<T>(started: Result<T, StartError>, what: &'static str) -> Result<T> {
    match started {
        Ok(s) => Ok(s),
        Err(StartError::NotInBuild(why)) => bail!("{what}: {why}"),
        Err(StartError::Failed(e)) => Err(e.context(what)),
    }
}

impl From<anyhow::Error> for StartError {
    fn from(e: anyhow::Error) -> Self {
        StartError::Failed(e)
    }
}

fn free_port() -> Result<u16> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?.port())
}

fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" / ")
}

impl Server {
    /// Spawns `covenant serve` and waits until `/health/ready` answers 200. Returns the server
    /// and the time from spawn to ready.
    pub async fn start(
        covenant: &Path,
        backend: &Backend,
        log_dir: &Path,
        client: &reqwest::Client,
        timeout: Duration,
    ) -> Result<(Server, Duration), StartError> {
        let port = free_port()?;
        let listen = format!("127.0.0.1:{port}");
        let log = log_dir.join(format!("serve-{port}.log"));
        let log_file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let mut cmd = Command::new(covenant);
        cmd.args(["serve", "--listen", &listen]);
        match backend {
            Backend::Embedded(dir) => cmd.arg("--data-dir").arg(dir).env_remove("COVENANT_STORE"),
            Backend::Postgres(url) => cmd.args(["--store", url]),
        };
        cmd.env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file);
        let started = Instant::now();
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", covenant.display()))?;
        let mut server = Server {
            child,
            base: format!("http://{listen}"),
            log,
        };
        let ready = format!("{}/health/ready", server.base);
        loop {
            if let Some(status) = server.child.try_wait().context("polling the server")? {
                let why = tail(&server.log);
                let whole = std::fs::read_to_string(&server.log).unwrap_or_default();
                let markers = [
                    "not available in this build",
                    "unexpected argument '--store'",
                    "unrecognized subcommand 'serve'",
                ];
                if let Some(line) = whole
                    .lines()
                    .find(|l| markers.iter().any(|m| l.contains(m)))
                {
                    return Err(StartError::NotInBuild(format!(
                        "{} server not in this build: {}",
                        backend.label(),
                        line.trim()
                    )));
                }
                return Err(StartError::Failed(anyhow::anyhow!(
                    "covenant serve exited with {status} before it was ready: {why}"
                )));
            }
            if let Ok(r) = client.get(&ready).send().await
                && r.status().is_success()
            {
                return Ok((server, started.elapsed()));
            }
            if started.elapsed() > timeout {
                let why = tail(&server.log);
                server.stop();
                return Err(StartError::Failed(anyhow::anyhow!(
                    "covenant serve not ready after {timeout:?}: {why}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    pub fn exited(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log_tail(&self) -> String {
        tail(&self.log)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident and peak memory from `/proc/<pid>/status`, in KiB.
    pub fn memory_kib(&self) -> Option<(u64, u64)> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).ok()?;
        let field = |name: &str| {
            status
                .lines()
                .find(|l| l.starts_with(name))?
                .split_whitespace()
                .nth(1)?
                .parse::<u64>()
                .ok()
        };
        Some((field("VmRSS:")?, field("VmHWM:")?))
    }

    /// SIGTERM (graceful: the store closes cleanly), then SIGKILL after ten seconds.
    pub fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

pub const V1: &str = "application/vnd.schemaregistry.v1+json";

pub fn client(concurrency: usize) -> Result<reqwest::Client> {
    covenant_exporter::client::builder()
        .pool_max_idle_per_host(concurrency.max(1))
        .timeout(Duration::from_secs(60))
        .no_proxy()
        .build()
        .context("building the HTTP client")
}

/// Limits of one load run: whichever is reached first ends it.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub concurrency: usize,
    pub max_requests: u64,
    pub max_duration: Duration,
}

#[derive(Debug, Default)]
pub struct LoadResult {
    pub requests: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    pub elapsed: Duration,
    pub latencies_us: Vec<u64>,
}

impl LoadResult {
    /// Adds another run of the same route: requests, errors, time and latencies add up.
    pub fn merge(&mut self, other: LoadResult) {
        self.requests += other.requests;
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.elapsed += other.elapsed;
        self.latencies_us.extend(other.latencies_us);
    }

    pub fn rate(&self) -> f64 {
        if self.elapsed.is_zero() {
            0.0
        } else {
            self.requests as f64 / self.elapsed.as_secs_f64()
        }
    }
}

pub type MakeRequest = Arc<dyn Fn(&reqwest::Client, u64) -> reqwest::RequestBuilder + Send + Sync>;

/// Sends requests `0..` built by `make` from `concurrency` keep-alive workers until a limit is
/// reached. Every response body is read in full; a non-2xx answer counts as an error.
pub async fn load(client: &reqwest::Client, limits: Limits, make: MakeRequest) -> LoadResult {
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let first_error: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let start = Instant::now();
    let deadline = start + limits.max_duration;
    let mut tasks = Vec::new();
    for _ in 0..limits.concurrency.max(1) {
        let (client, next, errors, first_error, make) = (
            client.clone(),
            next.clone(),
            errors.clone(),
            first_error.clone(),
            make.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                if Instant::now() >= deadline {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= limits.max_requests {
                    break;
                }
                let sent = Instant::now();
                let outcome = match make(&client, i).send().await {
                    Ok(r) => {
                        let status = r.status();
                        match r.bytes().await {
                            Ok(_) if status.is_success() => Ok(()),
                            Ok(body) => Err(format!(
                                "HTTP {status}: {}",
                                String::from_utf8_lossy(&body[..body.len().min(300)])
                            )),
                            Err(e) => Err(e.to_string()),
                        }
                    }
                    Err(e) => Err(e.to_string()),
                };
                latencies.push(sent.elapsed().as_micros() as u64);
                if let Err(e) = outcome {
                    errors.fetch_add(1, Ordering::Relaxed);
                    let mut slot = first_error.lock().await;
                    if slot.is_none() {
                        *slot = Some(e);
                    }
                }
            }
            latencies
        }));
    }
    let mut latencies_us = Vec::new();
    for t in tasks {
        if let Ok(mut l) = t.await {
            latencies_us.append(&mut l);
        }
    }
    let elapsed = start.elapsed();
    let first_error = first_error.lock().await.take();
    LoadResult {
        requests: latencies_us.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        first_error,
        elapsed,
        latencies_us,
    }
}

/// Fails when any request of a load run failed: a figure built on errors is not a figure.
pub fn require_clean(what: &str, result: &LoadResult) -> Result<()> {
    if result.errors > 0 {
        bail!(
            "{what}: {} of {} requests failed, first: {}",
            result.errors,
            result.requests,
            result.first_error.as_deref().unwrap_or("?")
        );
    }
    if result.requests == 0 {
        bail!("{what}: no request completed");
    }
    Ok(())
}
