//! `covenant serve`: the registry over HTTP on the embedded store.

use anyhow::Context;
use covenant_http::HttpConfig;
use covenant_registry::Registry;
use covenant_store::{SqliteSampleStore, SqliteStore};
use std::process::ExitCode;
use std::sync::Arc;

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
    /// Largest request body accepted; larger ones get a 413.
    #[arg(long, default_value_t = 16 * 1024 * 1024)]
    pub max_body_bytes: usize,
    /// Log line format.
    #[arg(long, value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
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
    runtime.block_on(serve(args))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let store = SqliteStore::open(&args.data_dir)
        .with_context(|| format!("opening the store in {}", args.data_dir.display()))?;
    tracing::info!(path = %store.path().display(), "store opened");
    let samples = SqliteSampleStore::open(store.path())
        .with_context(|| format!("opening the sample store in {}", args.data_dir.display()))?;
    let registry = Arc::new(Registry::new(Arc::new(store)).with_samples(Arc::new(samples)));
    let app = covenant_http::router(
        registry,
        HttpConfig {
            max_body_bytes: args.max_body_bytes,
        },
    );
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let address = listener.local_addr().context("reading the bound address")?;
    tracing::info!(%address, "covenant registry listening");
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown_signal())
        .await
        .context("serving HTTP")?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM; in-flight requests then finish before exit.
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
