//! The accept loop: serves a [`Router`] over HTTP/1.1 with the limits that keep one slow or
//! hostile client from holding the server's connections, file descriptors or memory.
//!
//! - **Header timeout**: a request head must be complete within `header_timeout` of the
//!   server starting to wait for it. On a kept-alive connection the wait for the next request
//!   counts too, so the same bound closes idle kept-alive connections (hyper starts its timer
//!   when it starts reading a head, not at the first byte).
//! - **Body deadline**: the whole request body must arrive within `body_timeout` of the head; a
//!   client that promises 100 bytes and sends 10 gets a 400 and the connection is closed.
//! - **Connection cap**: at most `max_connections` connections are served at once; beyond that
//!   a connection gets a quick 503 (`50302`) while a few refusal slots are free and is closed
//!   unanswered otherwise, so the process never runs out of file descriptors.
//! - **Graceful shutdown**: when `shutdown` resolves, the listener closes, idle connections
//!   close and in-flight requests finish (each bounded by the timeouts above and the judge's
//!   budget).
//!
//! hyper does the protocol work; this module only decides which connections to serve and
//! how long to wait for them.

use crate::error::ApiError;
use crate::tls::{ClientCertificate, Tls};
use axum::Router;
use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::response::IntoResponse;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tower::ServiceBuilder;
use tower_http::timeout::RequestBodyDeadlineLayer;

/// Connections answered with a 503 at once while at the cap; more are closed unanswered.
const REFUSAL_SLOTS: usize = 32;
/// How long a refused connection may take to send its head and read the 503.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// How long the server waits for clients and how many it serves at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// From waiting for a request (including idle time between kept-alive requests) until
    /// its head is complete.
    pub header_timeout: Duration,
    /// From the head until the whole body has been received.
    pub body_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 512,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then waits for in-flight requests.
pub async fn serve<F>(
    listener: TcpListener,
    app: Router,
    limits: ServerLimits,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    serve_with_tls(listener, app, limits, None, shutdown).await
}

/// [`serve`], over TLS when `tls` is given: the handshake runs in the connection's own task,
/// under its permit and within the header timeout.
pub async fn serve_with_tls<F>(
    listener: TcpListener,
    app: Router,
    limits: ServerLimits,
    tls: Option<Arc<Tls>>,
    shutdown: F,
) -> std::io::Result<()>
where
    F: Future<Output = ()> + Send,
{
    let connections = Arc::new(Semaphore::new(limits.max_connections));
    let refusals = Arc::new(Semaphore::new(REFUSAL_SLOTS));
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            refuse(stream, &refusals);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _permit = permit;
            match tls {
                None => serve_connection(stream, peer, app, limits, watcher).await,
                Some(tls) => serve_tls_connection(&tls, stream, peer, app, limits, watcher).await,
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The TLS handshake, then the connection, with the client certificate's principal (when
/// one was presented and verified) in each of its requests.
async fn serve_tls_connection(
    tls: &Tls,
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: ServerLimits,
    watcher: Watcher,
) {
    let handshake = tokio::time::timeout(limits.header_timeout, tls.acceptor().accept(stream));
    let stream = match handshake.await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, "TLS handshake timed out");
            return;
        }
    };
    let identity = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .and_then(|certificate| tls.principal(certificate))
        .map(|common_name| ClientCertificate { common_name });
    serve_identified(stream, peer, identity, app, limits, watcher).await;
}

/// Serves one accepted connection until the client closes it, a timeout ends it or
/// shutdown drains it.
pub async fn serve_connection<I>(
    io: I,
    peer: SocketAddr,
    app: Router,
    limits: ServerLimits,
    watcher: Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    serve_identified(io, peer, None, app, limits, watcher).await;
}

async fn serve_identified<I>(
    io: I,
    peer: SocketAddr,
    identity: Option<ClientCertificate>,
    app: Router,
    limits: ServerLimits,
    watcher: Watcher,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = ServiceBuilder::new()
        .layer(RequestBodyDeadlineLayer::new(limits.body_timeout))
        .map_request(move |mut request: Request<_>| {
            request.extensions_mut().insert(ConnectInfo(peer));
            if let Some(identity) = &identity {
                request.extensions_mut().insert(identity.clone());
            }
            request
        })
        .service(app);
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let connection = builder.serve_connection(TokioIo::new(io), TowerToHyperService::new(service));
    if let Err(e) = watcher.watch(connection).await {
        tracing::debug!(%peer, error = %e, "connection ended");
    }
}

/// Answers a connection over the cap with a 503 and closes it, or closes it at once when
/// refusals are themselves piling up.
fn refuse(stream: TcpStream, refusals: &Arc<Semaphore>) {
    let Ok(permit) = refusals.clone().try_acquire_owned() else {
        return;
    };
    tokio::spawn(async move {
        let _permit = permit;
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .keep_alive(false)
            .header_read_timeout(REFUSAL_TIMEOUT);
        let service = hyper::service::service_fn(|_request| async {
            Ok::<_, Infallible>(ApiError::too_many_connections().into_response())
        });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let _ = tokio::time::timeout(REFUSAL_TIMEOUT, connection).await;
    });
}
