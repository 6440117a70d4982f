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
//! - **Write timeout**: a connection whose pending response makes no write progress for
//!   `write_timeout` (a client that sends requests but never reads the answers) is closed.
//! - **Unsent backlog**: the kernel keeps at most [`UNSENT_BACKLOG`] bytes a connection's
//!   client has not been sent yet (`TCP_NOTSENT_LOWAT`). Without it Linux grows a socket's
//!   send buffer to megabytes for a client that pipelines requests but never reads: every
//!   write succeeds, so the server keeps rendering answers nobody reads (hundreds of
//!   megabytes of kernel memory and all the processor time across 250 such clients) and the
//!   write timeout never fires. With it, a client that stops reading stops costing anything
//!   after one answer, and its connection is closed by the write timeout.
//! - **Declared body size**: a request whose `Content-Length` exceeds `max_body_bytes` gets a
//!   413 at once, without its body being kept (what arrives promptly is dropped so the client
//!   reads the answer), and the connection is closed.
//! - **Graceful shutdown, bounded**: when `shutdown` resolves, the listener closes, idle
//!   connections close and in-flight requests finish, for at most `drain_timeout`; then the
//!   connections still open are closed and [`serve`] returns.
//! - **Instance identity**: every response carries this process's random identity in the
//!   `covenant-instance` header, by which an exporter recognizes a destination that is its own
//!   registry.
//!
//! hyper does the protocol work; this module only decides which connections to serve and
//! how long to wait for them.

use crate::error::ApiError;
use crate::tls::{ClientCertificate, Tls};
use axum::Router;
use axum::extract::ConnectInfo;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use hyper_util::service::TowerToHyperService;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio::time::Sleep;
use tower::ServiceBuilder;
use tower_http::timeout::RequestBodyDeadlineLayer;

/// Connections answered with a 503 at once while at the cap; more are closed unanswered.
const REFUSAL_SLOTS: usize = 32;
/// How long a refused connection may take to send its head and read the 503.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(2);
/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);
/// After the drain, how long closed connections get to release their resources.
const CLOSE_GRACE: Duration = Duration::from_secs(1);
/// Bytes of answers a connection's kernel buffer holds beyond what is in flight to the
/// client; more waits in the server until the client reads.
pub const UNSENT_BACKLOG: u32 = 16 * 1024;

/// How long the server waits for clients and how many it serves at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// From waiting for a request (including idle time between kept-alive requests) until
    /// its head is complete.
    pub header_timeout: Duration,
    /// From the head until the whole body has been received.
    pub body_timeout: Duration,
    /// How long a pending response may make no write progress before its connection is
    /// closed.
    pub write_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
    /// On shutdown, how long in-flight requests may take to finish before their connections
    /// are closed.
    pub drain_timeout: Duration,
    /// Requests declaring a larger `Content-Length` get a 413 before their body is read;
    /// `None` leaves the body limit to the router.
    pub max_body_bytes: Option<usize>,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            write_timeout: Duration::from_secs(10),
            max_connections: 512,
            drain_timeout: Duration::from_secs(10),
            max_body_bytes: None,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then waits for in-flight requests
/// (at most `limits.drain_timeout`, then closes their connections).
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
    // Set once the drain is over: every connection still open closes.
    let (close, closed) = watch::channel(false);
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
        cap_unsent(&stream);
        let app = app.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        let mut closed = closed.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let served = async {
                match tls {
                    None => serve_connection(stream, peer, app, limits, watcher).await,
                    Some(tls) => {
                        serve_tls_connection(&tls, stream, peer, app, limits, watcher).await;
                    }
                }
            };
            tokio::select! {
                () = served => {}
                _ = closed.wait_for(|closed| *closed) => {
                    tracing::debug!(%peer, "connection closed at the end of the drain");
                }
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain_timeout, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(
            drain_secs = limits.drain_timeout.as_secs(),
            "requests still in flight at the end of the drain; closing their connections"
        );
        let _ = close.send(true);
        let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
        let _ = tokio::time::timeout(CLOSE_GRACE, connections.acquire_many(all)).await;
    }
    Ok(())
}

/// Caps the answers the kernel holds for a client that does not read them ([`UNSENT_BACKLOG`]).
fn cap_unsent(stream: &TcpStream) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if let Err(e) = socket2::SockRef::from(stream).set_tcp_notsent_lowat(UNSENT_BACKLOG) {
        tracing::debug!(error = %e, "TCP_NOTSENT_LOWAT not set");
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = stream;
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
        .map_response(|mut response: Response| {
            response.headers_mut().insert(
                covenant_exporter::instance::HEADER,
                hyper::header::HeaderValue::from_static(covenant_exporter::instance::id()),
            );
            response
        })
        .layer(tower::layer::layer_fn(move |inner| DeclaredLimit {
            inner,
            limit: limits.max_body_bytes,
        }))
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
    let io = WriteDeadline::new(io, limits.write_timeout);
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

/// Answers a request whose declared `Content-Length` exceeds the limit with a 413 naming the
/// limit, without keeping its body (what arrives promptly is read and dropped, so the client
/// can read the answer; the connection then closes), and passes the others on.
#[derive(Clone)]
struct DeclaredLimit<S> {
    inner: S,
    limit: Option<usize>,
}

type Answer = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

/// How much of a refused body is read and dropped before the 413 is sent, and how long the
/// client may pause while sending it. A client that writes its whole body before reading the
/// answer (most do) would otherwise meet a closed connection instead of the 413; a body that
/// is larger or slower than this is cut off.
const DRAIN_MAX_BYTES: usize = 64 * 1024 * 1024;
const DRAIN_IDLE: Duration = Duration::from_millis(500);

/// Reads and drops what arrives of `body`, up to [`DRAIN_MAX_BYTES`] and while it keeps
/// coming within [`DRAIN_IDLE`].
async fn drain<B>(mut body: B)
where
    B: hyper::body::Body + Unpin,
{
    use hyper::body::Buf;
    let mut drained = 0usize;
    loop {
        let frame = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        match tokio::time::timeout(DRAIN_IDLE, frame).await {
            Ok(Some(Ok(frame))) => {
                drained += frame.data_ref().map_or(0, |d| d.remaining());
                if drained > DRAIN_MAX_BYTES {
                    return;
                }
            }
            _ => return,
        }
    }
}

impl<S, B> tower::Service<Request<B>> for DeclaredLimit<S>
where
    S: tower::Service<Request<B>, Response = Response, Error = Infallible>,
    S::Future: Send + 'static,
    B: hyper::body::Body + Send + Unpin + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Answer {
        let declared = request
            .headers()
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        if let (Some(limit), Some(declared)) = (self.limit, declared)
            && declared > u64::try_from(limit).unwrap_or(u64::MAX)
        {
            let mut response = ApiError::payload_too_large(limit).into_response();
            response.headers_mut().insert(
                hyper::header::CONNECTION,
                hyper::header::HeaderValue::from_static("close"),
            );
            let body = request.into_body();
            return Box::pin(async move {
                drain(body).await;
                Ok(response)
            });
        }
        Box::pin(self.inner.call(request))
    }
}

/// A connection's I/O whose writes fail with `TimedOut` once one has been pending, without
/// a byte accepted by the peer, for the timeout: hyper then closes the connection.
struct WriteDeadline<I> {
    io: I,
    timeout: Duration,
    /// Armed when a write is pending; disarmed by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<I> WriteDeadline<I> {
    fn new(io: I, timeout: Duration) -> Self {
        WriteDeadline {
            io,
            timeout,
            stalled: None,
        }
    }

    /// A write is pending: keep waiting until the deadline, then fail.
    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<T>> {
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client read nothing of its response within the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// An operation's outcome: pending arms the deadline, anything else disarms it.
    fn settle<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        match polled {
            Poll::Pending => self.pending(cx),
            ready => {
                self.stalled = None;
                ready
            }
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for WriteDeadline<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.settle(cx, polled)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.settle(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_flush(cx);
        self.settle(cx, polled)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let polled = Pin::new(&mut self.io).poll_shutdown(cx);
        self.settle(cx, polled)
    }
}
