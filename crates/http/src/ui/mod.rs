//! The web console at `/ui`: server-rendered pages over the same registry and governance
//! services the JSON handlers call, behind the same authentication and authorization.
//!
//! A request to the console is authenticated by its session cookie ([`session`]), never by
//! an `Authorization` header: the sign-in form checks Basic credentials or a bearer token
//! with [`Auth::sign_in`], exactly as the API checks them, and keeps the principal with
//! what proves its credential (never the credential itself). Every request checks that the
//! credential still holds (the user is still in the auth file with the same password, the
//! token has not expired) and ends the session otherwise; what the principal may see and do
//! is decided on every request by [`Access`], the same decision the API's authorization
//! layer takes. Every response carries a strict Content-Security-Policy (scripts and styles
//! only from `/ui/assets`, no inline script), and every state change checks the session's
//! CSRF token and the `Origin` header.

mod approve;
mod govern;
pub mod html;
mod pages;
pub mod session;

use crate::AppState;
use crate::auth::{Access, Auth, Operation, Resource};
use crate::error::ApiError;
use crate::extract::{BodyLimit, Params};
use crate::principal::{AuthMethod, Principal};
use axum::Router;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use html::E;
use session::{Proof, Session, SignedIn};
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::SystemTime;

/// The policy on every console response: nothing but the console's own script and style,
/// no framing, forms only to the console itself.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

const CSS: &str = include_str!("assets/console.css");
const JS: &str = include_str!("assets/console.js");

/// What the console needs besides the API's state.
#[derive(Clone)]
pub struct Console {
    pub app: AppState,
    pub auth: Arc<Auth>,
    pub sessions: Arc<session::Sessions>,
    /// Whether the server speaks TLS (the cookie is then `Secure`).
    pub secure_cookies: bool,
    pub names: Arc<NameCache>,
}

/// How long the list of live subject names is reused: listing 100,000 subjects from the
/// store costs far more than rendering a page of them, and a list a moment old is fine for
/// browsing (a subject page itself always reads the store).
const NAMES_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// A live subject's name, and in lower case for searching.
pub struct Name {
    pub name: String,
    pub lower: String,
}

/// The live subject names, sorted, as last read from the store.
#[derive(Default)]
pub struct NameCache(std::sync::Mutex<Option<(std::time::Instant, Arc<Vec<Name>>)>>);

impl NameCache {
    /// The names, read again when older than [`NAMES_TTL`].
    pub async fn get(
        &self,
        registry: &covenant_registry::Registry,
    ) -> covenant_registry::RegistryResult<Arc<Vec<Name>>> {
        if let Some((at, names)) = &*self.0.lock().unwrap_or_else(|e| e.into_inner())
            && at.elapsed() < NAMES_TTL
        {
            return Ok(names.clone());
        }
        let names: Vec<Name> = registry
            .store()
            .subjects()
            .await?
            .into_iter()
            .filter(|(_, live)| *live)
            .map(|(name, _)| Name {
                lower: name.to_lowercase(),
                name,
            })
            .collect();
        let names = Arc::new(names);
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((std::time::Instant::now(), names.clone()));
        Ok(names)
    }
}

/// The console's routes under `/ui`, with their session layer.
pub fn router(console: Console) -> Router {
    Router::new()
        .route("/ui", get(|| async { Redirect::to("/ui/subjects") }))
        .route("/ui/", get(|| async { Redirect::to("/ui/subjects") }))
        .route("/ui/assets/console.css", get(css))
        .route("/ui/assets/console.js", get(js))
        .route("/ui/sign-in", get(sign_in_form).post(sign_in))
        .route("/ui/sign-out", post(sign_out))
        .route("/ui/subjects", get(pages::subjects))
        .route("/ui/subjects/{subject}", get(pages::subject))
        .route("/ui/subjects/{subject}/diff", get(pages::diff))
        .route("/ui/subjects/{subject}/candidate", post(pages::candidate))
        .route("/ui/subjects/{subject}/approve", post(approve::approve))
        .route("/ui/subjects/{subject}/consumers", get(govern::consumers))
        .route("/ui/subjects/{subject}/profiles", get(govern::profiles))
        .route("/ui/deprecations", get(govern::deprecations))
        .route("/ui/deprecations/{id}/stage", post(govern::advance_stage))
        .route("/ui/deprecations/{id}/evidence", post(govern::add_evidence))
        .route(
            "/ui/deprecations/{id}/exceptions",
            post(govern::add_exception),
        )
        .route("/ui/audit", get(govern::audit))
        .route(
            "/ui/{*rest}",
            get(|ctx: Ctx| async move { not_found(&ctx) }),
        )
        .layer(middleware::from_fn_with_state(console.clone(), context))
        .with_state(console)
}

async fn css() -> Response {
    asset(CSS, "text/css; charset=utf-8")
}

async fn js() -> Response {
    asset(JS, "text/javascript; charset=utf-8")
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=300"),
    );
    r
}

/// Who is asking and what they may do, for one console request.
#[derive(Clone)]
pub struct Ctx {
    pub principal: Principal,
    pub access: Access,
    pub session: Session,
    /// Whether any authentication is configured (else everyone is anonymous and unrestricted).
    pub auth_enabled: bool,
}

impl Ctx {
    pub fn can_read(&self, subject: &str) -> bool {
        self.access.can_read(subject)
    }

    /// Governance records span subjects: read and changed with `Govern` on the registry.
    pub fn can_govern(&self) -> bool {
        self.access.allows(Operation::Govern, &Resource::Global)
    }

    pub fn is_admin(&self) -> bool {
        self.access.allows(Operation::Admin, &Resource::Global)
    }

    /// A hidden form field carrying the session's CSRF token.
    pub fn csrf_field(&self) -> String {
        format!(
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
            E(&self.session.csrf)
        )
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Ctx {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Ctx>()
            .cloned()
            .ok_or_else(|| ApiError::internal().into_response())
    }
}

/// The session layer: finds or starts the session, ends a signed-in one whose credential no
/// longer holds, resolves its principal and access, sends a caller that may do nothing to
/// the sign-in form, and adds the security headers.
async fn context(State(console): State<Console>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    if console.auth.refuses_host(&parts) {
        return page_error(
            StatusCode::FORBIDDEN,
            "Requests to an unauthenticated registry must name a loopback host.",
        );
    }
    let found = parts
        .headers
        .get(header::COOKIE)
        .and_then(|v| v.to_str().ok())
        .and_then(session::cookie_value)
        .and_then(|id| console.sessions.get(id));
    // A signed-in session lasts only as long as the credential it was made from; its roles
    // are the current ones. An ended session is replaced by a fresh anonymous one, whose
    // cookie takes the old one's place.
    let found = found.and_then(|s| match &s.user {
        None => Some((s, None)),
        Some(user) => match user.current_roles(&console.auth, SystemTime::now()) {
            Some(roles) => Some((s, Some(roles))),
            None => {
                tracing::info!(
                    user = %user.name,
                    "console session ended: its credential no longer holds"
                );
                console.sessions.remove(&s.id);
                None
            }
        },
    });
    let (session, roles, fresh) = match found {
        Some((s, roles)) => (s, roles, false),
        None => match console.sessions.create(None) {
            Ok(s) => (s, None, true),
            Err(e) => {
                tracing::error!(error = %e, "could not start a console session");
                return page_error(StatusCode::INTERNAL_SERVER_ERROR, "Internal error.");
            }
        },
    };
    let mut principal = Principal::anonymous(&parts);
    if let (Some(user), Some(roles)) = (&session.user, roles) {
        principal.name = Some(user.name.clone());
        principal.roles = roles;
        principal.method = user.method;
    }
    let access = console.auth.access_for(&principal);
    let path = parts.uri.path().to_string();
    let open = path.starts_with("/ui/assets/") || path == "/ui/sign-in";
    let ctx = Ctx {
        principal: principal.clone(),
        access: access.clone(),
        session: session.clone(),
        auth_enabled: console.auth.is_enabled(),
    };
    let mut response = if !open && ctx.auth_enabled && !access.allows_anything() {
        Redirect::to("/ui/sign-in").into_response()
    } else {
        parts.extensions.insert(principal);
        parts.extensions.insert(access);
        parts.extensions.insert(ctx);
        next.run(Request::from_parts(parts, body)).await
    };
    secure_headers(response.headers_mut());
    if fresh
        && let Ok(v) =
            HeaderValue::from_str(&session::set_cookie(&session.id, console.secure_cookies))
    {
        response.headers_mut().append(header::SET_COOKIE, v);
    }
    response
}

fn secure_headers(headers: &mut HeaderMap) {
    let set = |headers: &mut HeaderMap, name: &'static str, value: &'static str| {
        headers
            .entry(name)
            .or_insert(HeaderValue::from_static(value));
    };
    set(headers, "content-security-policy", CONTENT_SECURITY_POLICY);
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "x-frame-options", "DENY");
    // `no-referrer` would make browsers send `Origin: null` on the console's own forms.
    set(headers, "referrer-policy", "same-origin");
    set(headers, "cache-control", "no-store");
}

/// A state-changing form: its fields, once the session's CSRF token and the request's
/// origin have been checked. Anything else is refused with 403 before a handler runs.
pub struct CsrfForm(pub Params);

impl<S: Send + Sync> FromRequest<S> for CsrfForm {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let (mut parts, body) = request.into_parts();
        let ctx = Ctx::from_request_parts(&mut parts, state).await?;
        if !same_origin(&parts.headers) {
            return Err(page_error(
                StatusCode::FORBIDDEN,
                "Cross-origin form refused.",
            ));
        }
        let limit = parts
            .extensions
            .get::<BodyLimit>()
            .map_or(16 * 1024 * 1024, |l| l.0);
        let bytes = axum::body::to_bytes(axum::body::Body::new(body), limit)
            .await
            .map_err(|_| page_error(StatusCode::PAYLOAD_TOO_LARGE, "The form is too large."))?;
        let fields = form_fields(&bytes);
        if !ctx.session.csrf_matches(fields.get("csrf").unwrap_or("")) {
            return Err(page_error(
                StatusCode::FORBIDDEN,
                "The form has expired or did not come from this console; reload the page and try again.",
            ));
        }
        Ok(CsrfForm(fields))
    }
}

fn form_fields(bytes: &Bytes) -> Params {
    Params::parse(&String::from_utf8_lossy(bytes))
}

/// Whether the `Origin` header, when the browser sends one, names the host the request was
/// sent to (a second line behind the CSRF token and the `SameSite` cookie).
fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let origin_host = origin.split_once("://").map_or("", |(_, h)| h);
    !host.is_empty() && origin_host.eq_ignore_ascii_case(host)
}

/// A page's failure: its status and a message, rendered as a page.
pub struct UiError(pub StatusCode, pub String);

impl<E: Into<ApiError>> From<E> for UiError {
    fn from(e: E) -> UiError {
        let e: ApiError = e.into();
        UiError(e.status, e.message)
    }
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        page_error(self.0, &self.1)
    }
}

pub type UiResult = Result<Response, UiError>;

/// The answer for a subject that does not exist or may not be read: the same either way, so
/// the console tells no more than the API does.
pub fn not_found(ctx: &Ctx) -> Response {
    let mut r = layout(
        ctx,
        "Not found",
        "<h1>Not found</h1><p>Nothing here, or nothing you may see.</p>",
    );
    *r.status_mut() = StatusCode::NOT_FOUND;
    r
}

fn page_error(status: StatusCode, message: &str) -> Response {
    let body = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Error · Covenant</title><link rel=\"stylesheet\" href=\"/ui/assets/console.css\"></head><body><main><h1>{}</h1><p class=\"error\">{}</p><p><a href=\"/ui/subjects\">Back to subjects</a></p></main></body></html>",
        status.as_u16(),
        E(message)
    );
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    secure_headers(r.headers_mut());
    r
}

/// A whole page: head, navigation (only what the principal may open), who is signed in.
pub fn layout(ctx: &Ctx, title: &str, body: &str) -> Response {
    let mut nav = String::from("<a href=\"/ui/subjects\">Subjects</a>");
    if ctx.can_govern() {
        nav.push_str("<a href=\"/ui/deprecations\">Deprecations</a>");
    }
    if ctx.is_admin() {
        nav.push_str("<a href=\"/ui/audit\">Audit</a>");
    }
    let who = match (&ctx.principal.name, ctx.auth_enabled) {
        (Some(name), _) => format!(
            "<span id=\"who\">Signed in as <b>{}</b></span><form method=\"post\" action=\"/ui/sign-out\">{}<button type=\"submit\">Sign out</button></form>",
            E(name),
            ctx.csrf_field()
        ),
        (None, true) => "<a id=\"who\" href=\"/ui/sign-in\">Sign in</a>".to_string(),
        (None, false) => "<span id=\"who\">No authentication configured</span>".to_string(),
    };
    let mut page = String::with_capacity(body.len() + 1024);
    write!(
        page,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{} · Covenant</title><link rel=\"stylesheet\" href=\"/ui/assets/console.css\"><script src=\"/ui/assets/console.js\" defer></script></head><body><header><a class=\"brand\" href=\"/ui/subjects\">Covenant</a><nav>{nav}</nav><div class=\"who\">{who}</div></header><main>{body}</main></body></html>",
        E(title)
    )
    .ok();
    let mut r = page.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

async fn sign_in_form(ctx: Ctx) -> Response {
    sign_in_page(&ctx, None)
}

fn sign_in_page(ctx: &Ctx, failure: Option<&str>) -> Response {
    let failure = failure
        .map(|m| format!("<p class=\"error\" role=\"alert\">{}</p>", E(m)))
        .unwrap_or_default();
    let body = format!(
        "<h1>Sign in</h1>{failure}<form method=\"post\" action=\"/ui/sign-in\" class=\"stack\">{}<fieldset><legend>User name and password</legend><label>User name <input name=\"username\" autocomplete=\"username\"></label><label>Password <input name=\"password\" type=\"password\" autocomplete=\"current-password\"></label></fieldset><fieldset><legend>Or a bearer token</legend><label>Token <input name=\"token\" type=\"password\" autocomplete=\"off\"></label></fieldset><button type=\"submit\">Sign in</button></form>",
        ctx.csrf_field()
    );
    layout(ctx, "Sign in", &body)
}

/// Checks the form's credentials with the API's own check, then replaces the anonymous
/// session with a signed-in one (a new id, so a session id planted before sign-in is
/// worth nothing after).
async fn sign_in(State(console): State<Console>, ctx: Ctx, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let CsrfForm(form) =
        match CsrfForm::from_request(Request::from_parts(parts.clone(), body), &()).await {
            Ok(f) => f,
            Err(r) => return r,
        };
    let token = form.get("token").unwrap_or("").trim();
    let username = form.get("username").unwrap_or("");
    // Taken before the password is checked: should the password change in between, the
    // session then ends on its first request instead of outliving the old password.
    let stamp = match (token, username) {
        ("", user) if !user.is_empty() => console.auth.credential_stamp(user).map(|(s, _)| s),
        _ => None,
    };
    let authorization = match (token, username) {
        (token, _) if !token.is_empty() => format!("Bearer {token}"),
        (_, user) if !user.is_empty() => {
            use base64::Engine;
            let pair = format!("{user}:{}", form.get("password").unwrap_or(""));
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            )
        }
        _ => return sign_in_page(&ctx, Some("Enter a user name and password, or a token.")),
    };
    let failed = || {
        let mut r = sign_in_page(&ctx, Some("Sign-in failed."));
        *r.status_mut() = StatusCode::UNAUTHORIZED;
        r
    };
    let principal = match console.auth.sign_in(&parts, &authorization).await {
        Ok(p) if p.is_authenticated() => p,
        Ok(_) | Err(_) => return failed(),
    };
    // What will show, on every later request, that the credential still holds. A token
    // whose `exp` has passed makes no session, even within the leeway the API allows.
    let proof = match principal.method {
        AuthMethod::Basic => stamp.map(|stamp| Proof::Password { stamp }),
        AuthMethod::Bearer => session::token_expiry(token).map(|expires| Proof::Token { expires }),
        _ => None,
    };
    let user = SignedIn {
        name: principal.name.clone().unwrap_or_default(),
        roles: principal.roles.clone(),
        method: principal.method,
        proof: match proof {
            Some(proof) => proof,
            None => return failed(),
        },
    };
    if user
        .current_roles(&console.auth, SystemTime::now())
        .is_none()
    {
        return failed();
    }
    console.sessions.remove(&ctx.session.id);
    let session = match console.sessions.create(Some(user)) {
        Ok(s) => s,
        Err(_) => return page_error(StatusCode::INTERNAL_SERVER_ERROR, "Internal error."),
    };
    let mut r = Redirect::to("/ui/subjects").into_response();
    if let Ok(v) = HeaderValue::from_str(&session::set_cookie(&session.id, console.secure_cookies))
    {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn sign_out(State(console): State<Console>, ctx: Ctx, CsrfForm(_): CsrfForm) -> Response {
    console.sessions.remove(&ctx.session.id);
    let mut r = Redirect::to("/ui/sign-in").into_response();
    if let Ok(v) = HeaderValue::from_str(&session::clear_cookie(console.secure_cookies)) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}
