//! `covenant serve`: the registry over HTTP on the embedded store or a shared PostgreSQL.

use anyhow::Context;
use covenant_http::HttpConfig;
use covenant_http::server::ServerLimits;
use covenant_registry::Registry;
use covenant_store::GovernanceStore;
use covenant_store::{PostgresSampleStore, PostgresStore, SqliteSampleStore, SqliteStore};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8081", env = "COVENANT_LISTEN")]
    pub listen: String,
    /// Folder of the embedded store.
    #[arg(long, default_value = "./covenant-data", env = "COVENANT_DATA_DIR")]
    pub data_dir: std::path::PathBuf,
    /// A shared PostgreSQL store (postgres://user:password@host:port/dbname) instead of the
    /// embedded one; several nodes may serve the same database.
    #[arg(long, value_name = "URL", env = "COVENANT_STORE")]
    pub store: Option<String>,
    /// Largest request body accepted; larger ones get a 413 (at once, before the body is
    /// read, when the request declares its length).
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Do not serve the web console at /ui.
    #[arg(long)]
    pub no_ui: bool,
    /// Seconds a client may take to send a request head, counted from when the server starts
    /// waiting for it; also how long an idle kept-alive connection stays open.
    #[arg(long, default_value_t = 10, env = "COVENANT_HEADER_TIMEOUT_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub header_timeout_secs: u64,
    /// Seconds a client may take to send a whole request body after its head; slower
    /// bodies get a 400 and the connection is closed.
    #[arg(long, default_value_t = 30, env = "COVENANT_BODY_TIMEOUT_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub body_timeout_secs: u64,
    /// Seconds a response may wait without the client reading any of it (a client that sends
    /// requests and never reads the answers); then the connection is closed.
    #[arg(long, default_value_t = 10, env = "COVENANT_WRITE_TIMEOUT_SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub write_timeout_secs: u64,
    /// On SIGTERM or SIGINT, seconds in-flight requests get to finish; then the connections
    /// still open are closed and the process exits (within about a second more).
    #[arg(long, default_value_t = 10, env = "COVENANT_SHUTDOWN_TIMEOUT_SECS")]
    pub shutdown_timeout_secs: u64,
    /// Connections served at once; more get a quick 503 (`50302`) and are closed. Keep it
    /// below the process's open-file limit (`ulimit -n`) with room for the store's files.
    #[arg(long, default_value_t = 512, env = "COVENANT_MAX_CONNECTIONS", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// Schema ids kept in memory (records and parsed schemas, least recently used out); the
    /// rest are read from the store when asked for. 0 caches nothing.
    #[arg(long, default_value_t = covenant_registry::DEFAULT_CACHE_ENTRIES, env = "COVENANT_CACHE_ENTRIES")]
    pub cache_entries: usize,
    /// The most KEKs, and the most DEKs (each version counts), the DEK Registry holds; one
    /// more is refused with 409 40972.
    #[arg(long, default_value_t = covenant_registry::deks::DEFAULT_MAX_KEYS, env = "COVENANT_DEK_MAX_KEYS")]
    pub dek_max_keys: usize,
    /// Log line format.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// Governance decisions read the time from this file (RFC 3339 or epoch ms) instead of
    /// the wall clock: for drills that let weeks pass. Never set in production.
    #[arg(long, hide = true, env = "COVENANT_CLOCK_FILE")]
    pub clock_file: Option<std::path::PathBuf>,
    /// Days the audit trail keeps an entry; older ones are pruned every hour. 0 keeps all.
    #[arg(long, default_value_t = 365, env = "COVENANT_AUDIT_RETENTION_DAYS")]
    pub audit_retention_days: u64,
    #[command(flatten)]
    pub auth: crate::auth::ServeAuthArgs,
    #[command(flatten)]
    pub limits: crate::limits::LimitArgs,
    #[command(flatten)]
    pub admission: crate::limits::AdmissionArgs,
}

const DAY_MS: i64 = 24 * 3_600_000;
/// After the server has stopped, how long background work gets before the process exits.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(3600);

/// Prunes audit entries older than the retention, now and every hour after.
fn spawn_audit_pruning(store: Arc<dyn covenant_store::Store>, retention_days: u64) {
    if retention_days == 0 {
        return;
    }
    let keep_ms = i64::try_from(retention_days)
        .unwrap_or(i64::MAX / DAY_MS)
        .saturating_mul(DAY_MS);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(PRUNE_EVERY);
        loop {
            tick.tick().await;
            let before = chrono::Utc::now()
                .timestamp_millis()
                .saturating_sub(keep_ms);
            match store.prune_audit(before).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(pruned = n, retention_days, "audit entries pruned"),
                Err(e) => tracing::warn!(error = %e, "audit pruning failed; retrying next hour"),
            }
        }
    });
}

/// Colour escapes only on a terminal, and never when `NO_COLOR` is set to anything
/// (no-color.org): logs written to a file or a pipe stay plain text.
fn colour_wanted() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour_wanted())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    init_logging(args.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let served = runtime.block_on(serve(args));
    // Tasks still running (an exporter's call, a store's blocking work) do not hold the exit.
    runtime.shutdown_timeout(SHUTDOWN_GRACE);
    served?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Every walk the server runs (requests and background steps) draws on a budget.
    covenant_engine::budget::require();
    // Bound and checked first: a refused configuration touches no store.
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let address = listener.local_addr().context("reading the bound address")?;
    let auth = crate::auth::layer(&args.auth, address).await?;
    let tls = args.auth.tls()?;
    let (registry, governance_store, exporter_store) = open_registry(&args).await?;
    spawn_audit_pruning(registry.store().clone(), args.audit_retention_days);
    let governance = covenant_http::governance::enable(
        &registry,
        governance_store,
        crate::governance::clock(args.clock_file.as_deref()),
    );
    let reads = Arc::new(covenant_http::reads::ReadTally::default());
    // Every refusal of the authorization layer is recorded in the audit trail.
    let audit = covenant_http::audit::AuditSink::new(registry.store().clone());
    let auth = Arc::new(auth.with_denial_hook(Arc::new(audit)));
    // Exporters run as their creators: the same layer decides what each may still do.
    let exporters = covenant_exporter::Exporters::new(
        registry.clone(),
        exporter_store,
        Arc::new(covenant_http::exporter_authority::AuthExportAuthority::new(
            auth.clone(),
        )),
    );
    exporters.spawn();
    let app = covenant_http::router_serving(
        registry.clone(),
        Some(governance.clone()),
        Some(exporters),
        HttpConfig {
            max_body_bytes: args.max_body_bytes,
            console: !args.no_ui,
            secure_cookies: tls.is_some(),
        },
        auth,
        reads.clone(),
    );
    // Histogram samples pile up in the recorder until drained; without a scrape of /metrics
    // they would grow with every request served.
    let metrics = covenant_http::prometheus();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(5));
        loop {
            tick.tick().await;
            metrics.run_upkeep();
        }
    });
    tracing::info!(%address, tls = tls.is_some(), "covenant registry listening");
    // The accept loop puts the peer address into each request: failed logins are limited per source.
    // Checks still being judged stop when shutdown begins, so that none holds the exit.
    let stopping = registry.clone();
    let signal = async move {
        shutdown_signal().await;
        stopping.stop_checks();
    };
    covenant_http::server::serve_with_tls(listener, app, server_limits(&args), tls, signal)
        .await
        .context("serving HTTP")?;
    // Schema fetches counted since the last periodic flush.
    if let Err(e) = reads.flush(&registry, &governance).await {
        tracing::warn!(error = %e, "could not record the last schema reads");
    }
    tracing::info!("stopped");
    Ok(())
}

fn server_limits(args: &ServeArgs) -> ServerLimits {
    ServerLimits {
        header_timeout: Duration::from_secs(args.header_timeout_secs),
        body_timeout: Duration::from_secs(args.body_timeout_secs),
        write_timeout: Duration::from_secs(args.write_timeout_secs),
        max_connections: usize::try_from(args.max_connections).unwrap_or(usize::MAX),
        drain_timeout: Duration::from_secs(args.shutdown_timeout_secs),
        max_body_bytes: Some(args.max_body_bytes),
    }
}

/// The registry on the store the flags select. A PostgreSQL node starts even when its database
/// is unreachable (not ready until it answers) and keeps its id cache coherent with the other
/// nodes through the store's change feed; see `PostgresStore::subscribe_changes` for the bound
/// on how long another node's permanent delete may still be served from this node's cache.
///
/// Governance (consumers, usage, deprecations) lives in the same database as the schemas.
/// The registry and the stores beside it: governance, and exporters.
type Opened = (
    Arc<Registry>,
    Arc<dyn GovernanceStore>,
    Arc<dyn covenant_store::exporters::ExporterStore>,
);

async fn open_registry(args: &ServeArgs) -> anyhow::Result<Opened> {
    let Some(url) = &args.store else {
        let store = SqliteStore::open(&args.data_dir)
            .with_context(|| format!("opening the store in {}", args.data_dir.display()))?;
        tracing::info!(path = %store.path().display(), "store opened");
        let samples = SqliteSampleStore::open(store.path())
            .with_context(|| format!("opening the sample store in {}", args.data_dir.display()))?;
        let profiles = covenant_store::SqliteProfileStore::open(store.path())
            .with_context(|| format!("opening the profile store in {}", args.data_dir.display()))?;
        let deks = covenant_store::deks_sqlite::SqliteDekStore::open(store.path())
            .with_context(|| format!("opening the DEK Registry in {}", args.data_dir.display()))?;
        // Governance writes take turns with registrations on the store's own writer.
        let governance = covenant_store::SqliteGovernanceStore::open_beside(&store)
            .with_context(|| format!("opening governance in {}", args.data_dir.display()))?;
        let exporters =
            covenant_store::exporters_sqlite::SqliteExporterStore::open(store.path())
                .with_context(|| format!("opening the exporters in {}", args.data_dir.display()))?;
        let registry = Registry::new(Arc::new(store))
            .with_cache_entries(args.cache_entries)
            .with_schema_limits(args.limits.limits())
            .with_check_budget(args.limits.budget())
            .with_admission(args.admission.limits())
            .with_samples(Arc::new(samples))
            .with_profiles(Arc::new(profiles))
            .with_deks(Arc::new(deks))
            .with_dek_max_keys(args.dek_max_keys);
        return Ok((
            Arc::new(registry),
            Arc::new(governance),
            Arc::new(exporters),
        ));
    };
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        anyhow::bail!("--store expects a postgres:// URL");
    }
    let store = PostgresStore::open_lazy(url)?;
    match store.ensure_schema().await {
        Ok(()) => tracing::info!(database = store.target(), "store opened"),
        Err(e) => tracing::warn!(
            database = store.target(),
            error = %e,
            "database unreachable; serving as not ready until it answers"
        ),
    }
    let governance = covenant_store::PostgresGovernanceStore::open_lazy(url)
        .map_err(|e| anyhow::anyhow!("governance store: {e}"))?;
    let samples = PostgresSampleStore::open_lazy(url)?;
    let profiles = covenant_store::PostgresProfileStore::open_lazy(url)?;
    let deks = covenant_store::deks_postgres::PostgresDekStore::open_lazy(url)?;
    let exporters = covenant_store::exporters_postgres::PostgresExporterStore::open_lazy(url)?;
    let mut changes = store.subscribe_changes();
    let registry = Arc::new(
        Registry::new(Arc::new(store))
            .with_cache_entries(args.cache_entries)
            .with_schema_limits(args.limits.limits())
            .with_check_budget(args.limits.budget())
            .with_admission(args.admission.limits())
            .with_samples(Arc::new(samples))
            .with_profiles(Arc::new(profiles))
            .with_deks(Arc::new(deks))
            .with_dek_max_keys(args.dek_max_keys),
    );
    let follower = Arc::downgrade(&registry);
    tokio::spawn(async move {
        loop {
            let change = changes.recv().await;
            let Some(registry) = follower.upgrade() else {
                return;
            };
            match change {
                Ok(change) => registry.follow(&change),
                Err(broadcast::error::RecvError::Lagged(_)) => registry.changes_missed(),
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    });
    Ok((registry, Arc::new(governance), Arc::new(exporters)))
}

/// Resolves on SIGINT or SIGTERM; in-flight requests then finish before exit, for at most
/// `--shutdown-timeout-secs`.
async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = interrupt => {},
        _ = terminate => {},
    }
    tracing::info!("shutdown signal received");
}
