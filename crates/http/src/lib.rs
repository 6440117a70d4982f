//! The Confluent-compatible HTTP API over [`covenant_registry::Registry`].
//!
//! Routing, Confluent's request quirks (trailing slashes, `%2F` in subjects, case-insensitive
//! flags, several media types) and the error shape live here; handlers only translate between
//! HTTP and the registry. Every failure, including malformed bodies, oversized bodies, unknown
//! paths, wrong methods and panics, is answered as `{"error_code", "message"}`.

pub mod approval_routes;
pub mod audit;
pub mod auth;
mod context_prefix;
mod dek_routes;
pub mod deprecation_signals;
pub mod error;
pub mod exporter_authority;
mod exporter_routes;
pub mod extract;
pub mod governance;
mod handlers;
mod metrics_view;
pub mod negotiate;
pub mod openapi;
mod policy_routes;
pub mod principal;
pub mod profile_routes;
pub mod reads;
pub mod server;
mod subject_names;
pub mod tls;
pub mod ui;
mod views;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use covenant_registry::Registry;
use error::ApiError;
use extract::BodyLimit;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use std::sync::{Arc, LazyLock, OnceLock};
use std::time::Instant;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::trace::TraceLayer;

pub use error::CONTENT_TYPE;

/// Shared by every handler: one pointer, so that the state each layer and handler of a
/// request takes costs one reference count, not one per field (the clones and drops of the
/// seven-field state were 4% of a cached lookup's processor time).
#[derive(Clone)]
pub struct AppState(Arc<AppShared>);

impl std::ops::Deref for AppState {
    type Target = AppShared;

    fn deref(&self) -> &AppShared {
        &self.0
    }
}

/// What [`AppState`] shares.
pub struct AppShared {
    pub registry: Arc<Registry>,
    pub metrics: PrometheusHandle,
    /// Consumer governance (`/covenant/v1/`); its routes answer 503 when absent.
    pub governance: Option<Arc<covenant_governance::Governance>>,
    /// Schema fetches counted since the last flush to governance.
    pub reads: Arc<reads::ReadTally>,
    /// Live deprecation records as read handlers see them, for their response headers.
    pub signals: Arc<deprecation_signals::DeprecationSignals>,
    /// Replication to other registries (`/exporters`); its routes answer 503 when absent.
    pub exporters: Option<Arc<covenant_exporter::Exporters>>,
}

impl AppShared {
    /// Answers a schema fetch: counts it (when governance is on) and adds the deprecation
    /// headers of what it read, so every read route signals deprecation the same way. The
    /// headers speak only of subjects `access` may read.
    pub async fn answer_read(
        &self,
        principal: &principal::Principal,
        access: &auth::Access,
        target: reads::ReadTarget,
        mut response: Response,
    ) -> Response {
        if let Some(gov) = &self.governance {
            if let Some(signal) = self
                .signals
                .signal(&self.registry, gov, &target, access)
                .await
            {
                signal.apply(response.headers_mut());
            }
            self.reads.count_read(principal, target);
        }
        response
    }

    /// Writes counted reads now, so that what is decided next sees them.
    pub async fn flush_reads(&self) {
        if let Some(gov) = &self.governance
            && let Err(e) = self.reads.flush(&self.registry, gov).await
        {
            tracing::warn!(error = %e, "could not record schema reads");
        }
    }
}

/// Server settings that shape the router.
#[derive(Debug, Clone, Copy)]
pub struct HttpConfig {
    pub max_body_bytes: usize,
    /// Serve the web console at `/ui` ([`ui`]).
    pub console: bool,
    /// The server speaks TLS: the console's session cookie is then `Secure`.
    pub secure_cookies: bool,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            max_body_bytes: 16 * 1024 * 1024,
            console: true,
            secure_cookies: false,
        }
    }
}

/// Every route served, as `(method, path template)`: the routes of the OpenAPI operations
/// ([`operations`]), so that a route is listed once, with its summary, where its handlers
/// live. A test checks that each one is really served, and the authorization table
/// ([`auth::routes`]) must give each one its rule.
pub static ROUTES: LazyLock<Vec<(&'static str, &'static str)>> =
    LazyLock::new(|| operations().map(|(m, p, _)| (*m, *p)).collect());

/// The OpenAPI operations of every route, Confluent's and Covenant's own.
pub fn operations() -> impl Iterator<Item = &'static (&'static str, &'static str, &'static str)> {
    openapi::OPERATIONS
        .iter()
        .chain(policy_routes::OPERATIONS)
        .chain(profile_routes::OPERATIONS)
        .chain(exporter_routes::OPERATIONS)
        .chain(dek_routes::OPERATIONS)
}

/// The process-wide Prometheus recorder (metrics has one global recorder per process).
pub fn prometheus() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let buckets = [
                0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
            ];
            let builder = PrometheusBuilder::new();
            let builder =
                match builder.set_buckets_for_metric(Matcher::Suffix("seconds".into()), &buckets) {
                    Ok(b) => b,
                    Err(_) => PrometheusBuilder::new(),
                };
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was already installed; /metrics may be empty");
            }
            handle
        })
        .clone()
}

async fn track(req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let method = req.method().as_str().to_string();
    let start = Instant::now();
    let response = next.run(req).await;
    let status = response.status().as_u16().to_string();
    metrics::counter!("covenant_http_requests_total",
        "route" => route.clone(), "method" => method.clone(), "status" => status)
    .increment(1);
    metrics::histogram!("covenant_http_request_duration_seconds",
        "route" => route, "method" => method)
    .record(start.elapsed().as_secs_f64());
    response
}

/// An answer may have read a committed write that is not durable yet (the embedded store
/// syncs commits in groups); it leaves only once that write is on disk.
async fn settle(
    axum::extract::State(registry): axum::extract::State<Arc<Registry>>,
    req: Request,
    next: Next,
) -> Response {
    let response = next.run(req).await;
    match registry.settled().await {
        Ok(()) => response,
        Err(e) => ApiError::from(e).into_response(),
    }
}

async fn not_found() -> Response {
    ApiError::not_found_path().into_response()
}

async fn method_not_allowed() -> Response {
    ApiError::method_not_allowed().into_response()
}

/// Treats `/a/b/` as `/a/b` (the Java client calls `.../versions/` with a trailing slash).
fn strip_trailing_slash(mut req: Request) -> Request {
    let path = req.uri().path();
    if path.len() > 1 && path.ends_with('/') {
        let trimmed = path.trim_end_matches('/');
        let trimmed = if trimmed.is_empty() { "/" } else { trimmed };
        let new = match req.uri().query() {
            Some(q) => format!("{trimmed}?{q}"),
            None => trimmed.to_string(),
        };
        if let Ok(uri) = new.parse() {
            *req.uri_mut() = uri;
        }
    }
    req
}

fn panic_response(_: Box<dyn std::any::Any + Send + 'static>) -> Response {
    tracing::error!("request handler panicked");
    ApiError::internal().into_response()
}

/// The API routes with their state, before the outer layers.
fn api(state: AppState, auth: Arc<auth::Auth>) -> Router {
    use handlers as h;
    Router::new()
        .route("/", get(h::root).post(h::root_post))
        .route("/v1/metadata/id", get(h::metadata_id))
        .route("/v1/metadata/version", get(h::metadata_version))
        .route("/contexts", get(h::contexts))
        .route(
            "/contexts/{context}",
            axum::routing::delete(h::delete_context),
        )
        .route("/schemas", get(h::schemas))
        .route("/schemas/types", get(h::schema_types))
        .route("/schemas/ids/{id}", get(h::schema_by_id))
        .route("/schemas/ids/{id}/schema", get(h::schema_text_by_id))
        .route("/schemas/ids/{id}/subjects", get(h::subjects_by_id))
        .route("/schemas/ids/{id}/versions", get(h::versions_by_id))
        .route("/schemas/guids/{guid}", get(h::schema_by_guid))
        .route("/schemas/guids/{guid}/ids", get(h::ids_by_guid))
        .route("/subjects", get(h::subjects))
        .route(
            "/subjects/{subject}",
            post(h::lookup).delete(h::delete_subject),
        )
        .route("/subjects/{subject}/metadata", get(h::latest_with_metadata))
        .route(
            "/subjects/{subject}/versions",
            get(h::versions).post(h::register),
        )
        .route(
            "/subjects/{subject}/versions/{version}",
            get(h::version).delete(h::delete_version),
        )
        .route(
            "/subjects/{subject}/versions/{version}/schema",
            get(h::version_schema),
        )
        .route(
            "/subjects/{subject}/versions/{version}/referencedby",
            get(h::referenced_by),
        )
        .route(
            "/config",
            get(h::get_config)
                .put(h::put_config)
                .delete(h::delete_config),
        )
        .route(
            "/config/{subject}",
            get(h::get_subject_config)
                .put(h::put_subject_config)
                .delete(h::delete_subject_config),
        )
        .route(
            "/mode",
            get(h::get_mode).put(h::put_mode).delete(h::delete_mode),
        )
        .route(
            "/mode/{subject}",
            get(h::get_subject_mode)
                .put(h::put_subject_mode)
                .delete(h::delete_subject_mode),
        )
        .route(
            "/compatibility/subjects/{subject}/versions",
            post(h::compatibility_all),
        )
        .route(
            "/compatibility/subjects/{subject}/versions/{version}",
            post(h::compatibility_version),
        )
        .route("/metrics", get(h::metrics))
        .route("/health/live", get(h::health_live))
        .route("/health/ready", get(h::health_ready))
        .route("/openapi.json", get(h::openapi))
        .route("/covenant/v1/audit", get(audit::list_audit))
        .merge(governance_routes())
        .merge(policy_router())
        .merge(profile_router())
        .merge(exporter_router())
        .merge(dek_routes::router())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // Subject names are checked after routing (the layer needs the route template), for
        // authorized callers only.
        .layer(middleware::from_fn(subject_names::check))
        // Authorization runs after routing (it needs the route template and the decoded
        // subject) and inside `track`, so refusals are counted too.
        .layer(middleware::from_fn_with_state(auth, auth::guard))
        .layer(middleware::from_fn(track))
        .with_state(state)
}

fn governance_routes() -> Router<AppState> {
    use governance as g;
    Router::new()
        .route(
            "/covenant/v1/consumers",
            get(g::list_consumers).post(g::create_consumer),
        )
        .route(
            "/covenant/v1/consumers/{consumer}",
            get(g::get_consumer).put(g::update_consumer),
        )
        .route(
            "/covenant/v1/consumers/{consumer}/retire",
            post(g::retire_consumer),
        )
        .route(
            "/covenant/v1/usage",
            post(g::report_usage).get(g::field_usage),
        )
        .route("/covenant/v1/usage/readers", get(g::reader_usage))
        .route("/covenant/v1/usage/counts", get(g::usage_counts))
        .route("/covenant/v1/findings", get(g::findings))
        .route(
            "/covenant/v1/deprecations",
            get(g::list_deprecations).post(g::create_deprecation),
        )
        .route(
            "/covenant/v1/deprecations/{id}",
            get(g::get_deprecation).patch(g::update_deprecation),
        )
        .route(
            "/covenant/v1/deprecations/{id}/record",
            get(g::deprecation_record),
        )
        .route(
            "/covenant/v1/deprecations/{id}/stage",
            post(g::change_stage),
        )
        .route(
            "/covenant/v1/deprecations/{id}/evidence",
            post(g::add_evidence),
        )
        .route(
            "/covenant/v1/deprecations/{id}/exceptions",
            post(g::add_exception),
        )
        .route(
            "/covenant/v1/subjects/{subject}/removal-gate",
            post(g::removal_gate_preview),
        )
        .route("/covenant/v1/subjects/{subject}/readers", get(g::readers))
        .route(
            "/covenant/v1/subjects/{subject}/approvals",
            get(approval_routes::list).post(approval_routes::create),
        )
        .route(
            "/covenant/v1/subjects/{subject}/approvals/{id}/revoke",
            post(approval_routes::revoke),
        )
}

/// Replication to other registries (see [`exporter_routes`]).
fn exporter_router() -> Router<AppState> {
    use exporter_routes as e;
    Router::new()
        .route("/exporters", get(e::list).post(e::create))
        .route(
            "/exporters/{name}",
            get(e::info).put(e::update).delete(e::delete),
        )
        .route(
            "/exporters/{name}/config",
            get(e::config).put(e::update_config),
        )
        .route("/exporters/{name}/pause", axum::routing::put(e::pause))
        .route("/exporters/{name}/resume", axum::routing::put(e::resume))
        .route("/exporters/{name}/reset", axum::routing::put(e::reset))
        .route("/exporters/{name}/status", get(e::status))
}

/// Data profiles over time (see [`profile_routes`]).
fn profile_router() -> Router<AppState> {
    use profile_routes as p;
    Router::new()
        .route(
            "/covenant/v1/subjects/{subject}/profiles",
            get(p::list_profiles).post(p::add_profile),
        )
        .route(
            "/covenant/v1/subjects/{subject}/profiles/trend",
            get(p::trend),
        )
        .route(
            "/covenant/v1/subjects/{subject}/profiles/findings",
            get(p::findings),
        )
        .route(
            "/covenant/v1/subjects/{subject}/profiles/{profileId}",
            get(p::get_profile),
        )
}

/// Covenant's evolution-policy routes (see [`policy_routes`]).
fn policy_router() -> Router<AppState> {
    use axum::routing::delete;
    use policy_routes as p;
    Router::new()
        .route("/covenant/v1/subjects/{subject}/plan", post(p::plan))
        .route(
            "/covenant/v1/subjects/{subject}/check",
            post(handlers::check_registration),
        )
        .route(
            "/covenant/v1/subjects/{subject}/samples",
            get(p::subject_samples),
        )
        .route(
            "/covenant/v1/subjects/{subject}/versions/{version}/samples",
            get(p::version_samples)
                .post(p::add_sample)
                .delete(p::delete_version_samples),
        )
        .route(
            "/covenant/v1/subjects/{subject}/versions/{version}/samples/{sampleId}",
            delete(p::delete_sample),
        )
        .route(
            "/covenant/v1/subjects/{subject}/versions/{version}/live",
            post(p::mark_live).delete(p::unmark_live),
        )
}

/// The whole service: routes plus trailing-slash normalization, body limit, panic catching
/// and request tracing. Consumer governance routes answer 503 (see [`router_with`]).
pub fn router(registry: Arc<Registry>, config: HttpConfig) -> Router {
    router_with(registry, None, config)
}

/// [`router`] with consumer governance (build it with [`governance::enable`]).
pub fn router_with(
    registry: Arc<Registry>,
    governance: Option<Arc<covenant_governance::Governance>>,
    config: HttpConfig,
) -> Router {
    router_with_auth(
        registry,
        governance,
        config,
        Arc::new(auth::Auth::disabled()),
    )
}

/// [`router_with`] behind the authentication and authorization layer ([`auth`]).
pub fn router_with_auth(
    registry: Arc<Registry>,
    governance: Option<Arc<covenant_governance::Governance>>,
    config: HttpConfig,
    auth: Arc<auth::Auth>,
) -> Router {
    let reads = Arc::new(reads::ReadTally::default());
    router_counting_into(registry, governance, config, auth, reads)
}

/// [`router_with_auth`] counting schema fetches into `reads`, which the caller keeps to flush
/// what is still pending once the server has stopped.
pub fn router_counting_into(
    registry: Arc<Registry>,
    governance: Option<Arc<covenant_governance::Governance>>,
    config: HttpConfig,
    auth: Arc<auth::Auth>,
    reads: Arc<reads::ReadTally>,
) -> Router {
    router_serving(registry, governance, None, config, auth, reads)
}

/// The whole service as `covenant serve` runs it: [`router_counting_into`] with exporters.
pub fn router_serving(
    registry: Arc<Registry>,
    governance: Option<Arc<covenant_governance::Governance>>,
    exporters: Option<Arc<covenant_exporter::Exporters>>,
    config: HttpConfig,
    auth: Arc<auth::Auth>,
    reads: Arc<reads::ReadTally>,
) -> Router {
    if let Some(gov) = &governance {
        reads::ReadTally::spawn_flusher(&reads, registry.clone(), gov.clone());
    }
    let settling = registry.clone();
    let state = AppState(Arc::new(AppShared {
        registry,
        metrics: prometheus(),
        governance,
        reads,
        signals: Arc::default(),
        exporters,
    }));
    let console = config.console.then(|| ui::Console {
        app: state.clone(),
        auth: auth.clone(),
        sessions: Arc::default(),
        secure_cookies: config.secure_cookies,
        names: Arc::default(),
    });
    let normalized = ServiceBuilder::new()
        .layer(middleware::from_fn(negotiate::accept))
        .map_request(strip_trailing_slash)
        .map_request(context_prefix::rewrite)
        .service(api(state, auth));
    // The console is not part of the API: it has its own routes, session layer and error
    // pages, outside `ROUTES` and the API description.
    let outer = match console {
        Some(console) => ui::router(console),
        None => Router::new(),
    };
    outer
        .fallback_service(normalized)
        .layer(middleware::from_fn_with_state(settling, settle))
        .layer(axum::Extension(BodyLimit(config.max_body_bytes)))
        .layer(DefaultBodyLimit::max(config.max_body_bytes))
        .layer(CatchPanicLayer::custom(panic_response))
        .layer(TraceLayer::new_for_http())
        .layer(middleware::from_fn(audit::assign_request_id))
}
