//! Authentication and authorization: one layer in front of every handler.
//!
//! The layer runs after routing, so it knows the matched route template and the decoded
//! `{subject}` exactly as the handler will see it. It authenticates the caller (HTTP Basic
//! against the [auth file](file), a Bearer JWT validated against a JWKS, or the CN of a TLS
//! client certificate verified by the accept loop), puts the
//! [`Principal`] and its [`Access`] into the request's extensions, and refuses the request
//! when the route's operation (from [`routes::ROUTE_ACCESS`]) is not granted on its resource.
//! Listings and schema ids are not refused but filtered by their handlers through [`Access`].
//!
//! Refusals answer in Confluent's shape: 401 `40101` with `WWW-Authenticate` when the caller
//! is not (validly) authenticated, 403 `40301` naming the operation and resource otherwise.
//! The refusal is decided before any handler looks at the store, so it says nothing about
//! whether the subject exists. Every refusal is also handed to the [`DenialHook`].

pub mod file;
mod jwt;
mod limit;
pub mod routes;

pub use file::{AuthFile, AuthFileError};
pub use jwt::{JwtError, JwtSettings, JwtVerifier};
pub use limit::FailureLimit;

use crate::error::ApiError;
use crate::principal::{AuthMethod, Principal};
use crate::tls::ClientCertificate;
use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use hashlink::LruCache;
use limit::FailureLimiter;
use regex::Regex;
use routes::Target;
use sha2::Digest;
use std::collections::HashMap;
use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

/// What a request does, as granted in the auth file. Karapace's `Read` and `Write` keep
/// their meaning: `Write` also allows deleting, and `Write` on `Config:` allows changing the
/// global config and mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Schemas, versions, lookups, compatibility tests, configs.
    Read,
    /// Register; subject config and mode.
    Write,
    /// Soft and permanent deletes of subjects and versions.
    Delete,
    /// Consumers, usage reports, deprecations, exceptions, samples, live marks.
    Govern,
    /// Global config and mode (IMPORT included); implies every other operation.
    Admin,
}

impl Operation {
    pub const ALL: [Operation; 5] = [
        Operation::Read,
        Operation::Write,
        Operation::Delete,
        Operation::Govern,
        Operation::Admin,
    ];

    /// Parses a name, ignoring case (`read`, `Read`, `READ`).
    pub fn parse(text: &str) -> Result<Operation, AuthFileError> {
        Operation::ALL
            .into_iter()
            .find(|op| op.name().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| AuthFileError::Operation(text.to_string()))
    }

    pub fn name(self) -> &'static str {
        match self {
            Operation::Read => "Read",
            Operation::Write => "Write",
            Operation::Delete => "Delete",
            Operation::Govern => "Govern",
            Operation::Admin => "Admin",
        }
    }

    /// Whether a grant of `self` on `resource` allows `wanted` there.
    fn covers(self, wanted: Operation, resource: &Resource) -> bool {
        use Operation::*;
        match (self, wanted) {
            (Admin, _) | (_, Read) => true,
            (Write, Write | Delete) => true,
            (Write, Admin) => *resource == Resource::Global,
            (granted, wanted) => granted == wanted,
        }
    }
}

impl std::fmt::Display for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What an operation applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    /// The registry as a whole: global config and mode, registry-wide governance, metrics.
    Global,
    Subject(String),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Global => f.write_str("Config:"),
            Resource::Subject(s) => write!(f, "Subject:{s}"),
        }
    }
}

/// The resources one grant covers, as written in the auth file.
#[derive(Clone, Debug)]
pub enum ResourcePattern {
    /// `Config:`
    Global,
    /// `Subject:<regex>`, matched from the start of the name and not to its end, as Karapace
    /// (Python's `re.match`) does: `Subject:orders` also covers `orders-v2`; end it with `$`.
    SubjectRegex(Regex),
    /// `SubjectPrefix:<text>`: subjects whose name starts with the text, no regex.
    SubjectPrefix(String),
    /// Everything (anonymous operations allowed by the server's flags).
    Any,
}

impl ResourcePattern {
    pub fn parse(text: &str) -> Result<ResourcePattern, AuthFileError> {
        let invalid = |message: String| AuthFileError::Resource {
            resource: text.to_string(),
            message,
        };
        if text == "Config:" {
            Ok(ResourcePattern::Global)
        } else if let Some(prefix) = text.strip_prefix("SubjectPrefix:") {
            Ok(ResourcePattern::SubjectPrefix(prefix.to_string()))
        } else if let Some(pattern) = text.strip_prefix("Subject:") {
            Regex::new(&format!("^(?:{pattern})"))
                .map(ResourcePattern::SubjectRegex)
                .map_err(|e| {
                    // The regex error draws the pattern over several lines; keep its verdict.
                    let text = e.to_string();
                    let last = text.lines().last().unwrap_or("").trim();
                    invalid(format!(
                        "not a regular expression ({})",
                        last.trim_start_matches("error: ")
                    ))
                })
        } else {
            Err(invalid(
                "expected Config:, Subject:<regex> or SubjectPrefix:<text>".into(),
            ))
        }
    }

    fn matches(&self, resource: &Resource) -> bool {
        match (self, resource) {
            (ResourcePattern::Any, _) => true,
            (ResourcePattern::Global, Resource::Global) => true,
            (ResourcePattern::SubjectRegex(re), Resource::Subject(s)) => re.is_match(s),
            (ResourcePattern::SubjectPrefix(p), Resource::Subject(s)) => s.starts_with(p.as_str()),
            _ => false,
        }
    }
}

/// One operation on a set of resources.
#[derive(Clone, Debug)]
pub struct Grant {
    pub operation: Operation,
    pub resources: ResourcePattern,
}

/// What the caller of one request may do; in the request's extensions for handlers that
/// filter what they answer (listings, schema ids, referencing ids). Without an
/// authentication layer every request has unrestricted access.
#[derive(Clone, Debug, Default)]
pub struct Access {
    /// `None` when no authentication is configured.
    grants: Option<Arc<[Grant]>>,
}

impl Access {
    pub fn unrestricted() -> Access {
        Access { grants: None }
    }

    pub fn with_grants(grants: Vec<Grant>) -> Access {
        Access {
            grants: Some(grants.into()),
        }
    }

    pub fn allows(&self, operation: Operation, resource: &Resource) -> bool {
        match &self.grants {
            None => true,
            Some(grants) => grants
                .iter()
                .any(|g| g.resources.matches(resource) && g.operation.covers(operation, resource)),
        }
    }

    /// Whether the subject's schemas may be read.
    pub fn can_read(&self, subject: &str) -> bool {
        self.allows(Operation::Read, &Resource::Subject(subject.to_string()))
    }

    /// Whether `operation` is allowed on every subject (no auth, or a grant like `Subject:.*`
    /// or an anonymous operation), so listings need not be checked entry by entry.
    pub fn allows_everywhere(&self, operation: Operation) -> bool {
        match &self.grants {
            None => true,
            Some(grants) => grants.iter().any(|g| {
                g.operation
                    .covers(operation, &Resource::Subject(String::new()))
                    && match &g.resources {
                        ResourcePattern::Any => true,
                        ResourcePattern::SubjectRegex(re) => re.as_str() == "^(?:.*)",
                        ResourcePattern::SubjectPrefix(p) => p.is_empty(),
                        ResourcePattern::Global => false,
                    }
            }),
        }
    }

    /// Whether anything at all may be done; an anonymous caller without any allowed
    /// operation is asked to authenticate even on filtered listings.
    pub fn allows_anything(&self) -> bool {
        self.grants.as_ref().is_none_or(|g| !g.is_empty())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Access {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<Access>()
            .cloned()
            .unwrap_or_default())
    }
}

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DenialReason {
    /// Credentials that do not verify (wrong password, bad or expired token).
    BadCredentials,
    /// No credentials, on a route anonymous callers may not use.
    AuthenticationRequired,
    /// Authenticated, but the operation is not granted on the resource.
    Forbidden,
    /// Too many failed logins from the source address.
    RateLimited,
    /// A `Host` that is not a loopback name, on an unauthenticated loopback server.
    ForeignHost,
}

/// One refused request, as handed to the [`DenialHook`]. Never carries the credentials.
#[derive(Clone, Debug)]
pub struct Denial {
    pub principal: Principal,
    pub reason: DenialReason,
    /// The operation the route asks for (`None` when refused before routing mattered).
    pub operation: Option<Operation>,
    pub resource: Option<Resource>,
    /// The request's `X-Request-Id`, when it has one.
    pub request_id: Option<String>,
}

/// Told of every refused request, e.g. to record it in the audit trail (set it as
/// [`AuthSettings::denial_hook`]). Awaited on the request's task before the refusal is
/// answered, so a durable write finishes first; it must not fail the request (log instead).
#[async_trait::async_trait]
pub trait DenialHook: Send + Sync {
    /// `request` is the refused request's head, with the refused [`Principal`] in its
    /// extensions (as handlers would have seen it) and whatever outer layers put there, such
    /// as a request id.
    async fn on_denied(&self, denial: &Denial, request: &Parts);
}

/// How the server authenticates and authorizes; see [`Auth::new`].
#[derive(Clone, Default)]
pub struct AuthSettings {
    /// The auth file for HTTP Basic and permissions (Karapace's format and Covenant's).
    pub auth_file: Option<PathBuf>,
    /// Bearer tokens.
    pub jwt: Option<Arc<JwtVerifier>>,
    /// Verified TLS client certificates name principals (their subject's CN), put into
    /// requests as [`crate::tls::ClientCertificate`] by the accept loop.
    pub client_certificates: bool,
    /// Operations callers without credentials may perform when authentication is on (on
    /// every resource). Empty: every non-public route needs credentials.
    pub anonymous_operations: Vec<Operation>,
    /// Without authentication: refuse requests whose `Host` is not a loopback name, so a
    /// browser tricked by DNS rebinding cannot reach a registry listening on loopback.
    pub loopback_hosts_only: bool,
    pub denial_hook: Option<Arc<dyn DenialHook>>,
    pub failure_limit: FailureLimit,
    /// How often the auth file's modification time is checked; `None` means every second.
    pub reload_interval: Option<Duration>,
}

/// The auth file as last read, with its permissions compiled.
struct Policy {
    file: AuthFile,
    grants: Vec<(Grantee, Grant)>,
}

enum Grantee {
    User(String),
    Role(String),
}

impl Policy {
    fn compile(file: AuthFile) -> Result<Policy, AuthFileError> {
        file.validate()?;
        let mut grants = Vec::with_capacity(file.permissions.len());
        for p in &file.permissions {
            let grant = Grant {
                operation: Operation::parse(&p.operation)?,
                resources: ResourcePattern::parse(&p.resource)?,
            };
            if let Some(user) = &p.username {
                grants.push((Grantee::User(user.clone()), grant.clone()));
            }
            if let Some(role) = &p.role {
                grants.push((Grantee::Role(role.clone()), grant));
            }
        }
        Ok(Policy { file, grants })
    }

    fn grants_for(&self, principal: &Principal) -> impl Iterator<Item = Grant> + '_ {
        let name = principal.name.clone();
        let roles = principal.roles.clone();
        self.grants
            .iter()
            .filter(move |(who, _)| match who {
                Grantee::User(u) => name.as_deref() == Some(u.as_str()),
                Grantee::Role(r) => roles.contains(r),
            })
            .map(|(_, g)| g.clone())
    }
}

/// The auth file, re-read when its modification time or size changes (checked at most once
/// per interval, on the request path: a `stat` is cheaper than a watcher thread). A file
/// that no longer parses is logged and the last good one kept.
struct FileSource {
    path: PathBuf,
    interval: Duration,
    policy: RwLock<Arc<Policy>>,
    seen: Mutex<(Option<(SystemTime, u64)>, Instant)>,
}

fn stamp(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

impl FileSource {
    fn open(path: PathBuf, interval: Duration) -> Result<FileSource, AuthFileError> {
        let stamp_now = stamp(&path);
        let policy = Policy::compile(AuthFile::load(&path)?)?;
        Ok(FileSource {
            path,
            interval,
            policy: RwLock::new(Arc::new(policy)),
            seen: Mutex::new((stamp_now, Instant::now())),
        })
    }

    fn current(&self) -> Arc<Policy> {
        self.refresh();
        self.policy
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn refresh(&self) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.1.elapsed() < self.interval {
            return;
        }
        seen.1 = Instant::now();
        let now = stamp(&self.path);
        if now == seen.0 {
            return;
        }
        seen.0 = now;
        match AuthFile::load(&self.path).and_then(Policy::compile) {
            Ok(policy) => {
                tracing::info!(path = %self.path.display(), "auth file reloaded");
                *self.policy.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(policy);
            }
            Err(e) => {
                tracing::warn!(error = %e, "auth file not reloaded; keeping the previous one")
            }
        }
    }
}

/// The authentication and authorization layer's state.
pub struct Auth {
    file: Option<FileSource>,
    jwt: Option<Arc<JwtVerifier>>,
    client_certificates: bool,
    anonymous: Vec<Operation>,
    loopback_hosts_only: bool,
    hook: Option<Arc<dyn DenialHook>>,
    limiter: FailureLimiter,
    /// Digests of recently verified (user, password, stored hash) triples, so a client
    /// sending Basic credentials on every request pays the memory-hard hash once.
    verified: Mutex<LruCache<[u8; 32], ()>>,
}

impl Auth {
    /// Reads the auth file once; a file that does not parse or validate is an error here
    /// rather than a server that starts refusing everyone.
    pub fn new(settings: AuthSettings) -> Result<Auth, AuthFileError> {
        let interval = settings.reload_interval.unwrap_or(Duration::from_secs(1));
        let file = match settings.auth_file {
            Some(path) => Some(FileSource::open(path, interval)?),
            None => None,
        };
        Ok(Auth {
            file,
            jwt: settings.jwt,
            client_certificates: settings.client_certificates,
            anonymous: settings.anonymous_operations,
            loopback_hosts_only: settings.loopback_hosts_only,
            hook: settings.denial_hook,
            limiter: FailureLimiter::new(settings.failure_limit),
            verified: Mutex::new(LruCache::new(1024)),
        })
    }

    /// The same layer, telling `hook` of every refusal (e.g. the audit trail).
    pub fn with_denial_hook(mut self, hook: Arc<dyn DenialHook>) -> Auth {
        self.hook = Some(hook);
        self
    }

    /// No authentication at all: every request is anonymous with unrestricted access.
    pub fn disabled() -> Auth {
        Auth::new(AuthSettings::default()).expect("no file to read")
    }

    /// Whether any way of authenticating is configured.
    pub fn is_enabled(&self) -> bool {
        self.file.is_some() || self.jwt.is_some() || self.client_certificates
    }

    /// What `principal` may do under the current auth file.
    pub fn access_for(&self, principal: &Principal) -> Access {
        if !self.is_enabled() {
            return Access::unrestricted();
        }
        let mut grants: Vec<Grant> = match &self.file {
            Some(file) => file.current().grants_for(principal).collect(),
            None => Vec::new(),
        };
        if !principal.is_authenticated() {
            grants.extend(self.anonymous.iter().map(|op| Grant {
                operation: *op,
                resources: ResourcePattern::Any,
            }));
        }
        Access::with_grants(grants)
    }

    /// Checks credentials given another way than in the request's own headers (the console's
    /// sign-in form) exactly as an `Authorization: <authorization>` header on `parts` would be
    /// checked: same verification, same failure limit, same denial hook.
    pub async fn sign_in(
        &self,
        parts: &Parts,
        authorization: &str,
    ) -> Result<Principal, DenialReason> {
        let mut parts = parts.clone();
        let value =
            HeaderValue::from_str(authorization).map_err(|_| DenialReason::BadCredentials)?;
        parts.headers.insert(header::AUTHORIZATION, value);
        match self.authenticate(&parts).await {
            Ok(principal) => Ok(principal),
            Err(refusal) => {
                let reason = refusal.reason;
                parts.headers.remove(header::AUTHORIZATION);
                let _ = self.refuse(refusal, parts).await;
                Err(reason)
            }
        }
    }

    /// Whether a request must be refused for its `Host` alone: an unauthenticated server that
    /// only answers loopback names, asked under another name (DNS rebinding).
    pub fn refuses_host(&self, parts: &Parts) -> bool {
        !self.is_enabled() && self.loopback_hosts_only && !names_loopback_host(parts)
    }

    /// The caller of a request: anonymous without an `Authorization` header, else the
    /// verified name, or a refusal (401, or 429 after too many failures from its address).
    async fn authenticate(&self, parts: &Parts) -> Result<Principal, Refusal> {
        let mut principal = Principal::anonymous(parts);
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
            if self.client_certificates
                && let Some(certificate) = parts.extensions.get::<ClientCertificate>()
            {
                principal.name = Some(certificate.common_name.clone());
                principal.method = AuthMethod::ClientCertificate;
            }
            return Ok(principal);
        };
        let address = principal.source.map(|s| s.ip());
        if self.limiter.is_blocked(address) {
            return Err(Refusal::new(principal, DenialReason::RateLimited));
        }
        let verified = match value.to_str().ok().and_then(|v| v.split_once(' ')) {
            Some((scheme, credential)) if scheme.eq_ignore_ascii_case("basic") => self
                .verify_basic(credential.trim())
                .await
                .map(|(name, roles)| (name, roles, AuthMethod::Basic)),
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => self
                .jwt
                .as_ref()
                .and_then(|jwt| jwt.verify(token.trim()).ok())
                .map(|(name, roles)| (name, roles, AuthMethod::Bearer)),
            _ => None,
        };
        match verified {
            Some((name, roles, method)) => {
                principal.name = Some(name);
                principal.roles = roles;
                principal.method = method;
                Ok(principal)
            }
            None => {
                self.limiter.record_failure(address);
                Err(Refusal::new(principal, DenialReason::BadCredentials))
            }
        }
    }

    /// The user name and roles of valid Basic credentials. The hash runs off the async
    /// threads: scrypt takes tens of milliseconds and 16 MiB by design.
    async fn verify_basic(&self, credential: &str) -> Option<(String, Vec<String>)> {
        let file = self.file.as_ref()?;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credential)
            .ok()?;
        let decoded = String::from_utf8(decoded).ok()?;
        let (name, password) = decoded.split_once(':')?;
        let policy = file.current();
        let Some(user) = policy.file.user(name).cloned() else {
            // Hash anyway, so an unknown name takes as long as a wrong password.
            let password = password.to_string();
            let _ = tokio::task::spawn_blocking(move || {
                file::Algorithm::Scrypt.hash(&password, "no-such-user")
            })
            .await;
            return None;
        };
        let key: [u8; 32] = sha2::Sha256::new()
            .chain_update(name.as_bytes())
            .chain_update([0])
            .chain_update(password.as_bytes())
            .chain_update([0])
            .chain_update(user.salt.as_bytes())
            .chain_update([0])
            .chain_update(user.password_hash.as_bytes())
            .finalize()
            .into();
        let known = self
            .verified
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .is_some();
        if !known {
            let password = password.to_string();
            let checked = user.clone();
            let ok = tokio::task::spawn_blocking(move || checked.verify(&password))
                .await
                .unwrap_or(false);
            if !ok {
                return None;
            }
            self.verified
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, ());
        }
        Some((user.username, user.roles))
    }

    async fn refuse(&self, refusal: Refusal, mut parts: Parts) -> Response {
        let denial = Denial {
            principal: refusal.principal,
            reason: refusal.reason,
            operation: refusal.operation,
            resource: refusal.resource,
            request_id: parts
                .headers
                .get("x-request-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
        };
        tracing::info!(
            principal = %denial.principal.actor(),
            reason = ?denial.reason,
            operation = ?denial.operation.map(Operation::name),
            "request refused"
        );
        if let Some(hook) = &self.hook {
            parts.extensions.insert(denial.principal.clone());
            hook.on_denied(&denial, &parts).await;
        }
        refusal_response(&denial, self.limiter.window())
    }
}

/// A refusal on its way to the hook and the response.
struct Refusal {
    principal: Principal,
    reason: DenialReason,
    operation: Option<Operation>,
    resource: Option<Resource>,
}

impl Refusal {
    fn new(principal: Principal, reason: DenialReason) -> Refusal {
        Refusal {
            principal,
            reason,
            operation: None,
            resource: None,
        }
    }
}

const WWW_AUTHENTICATE: &str = "Basic realm=\"Covenant Schema Registry\", Bearer";

fn refusal_response(denial: &Denial, window: Duration) -> Response {
    let error = match (denial.reason, denial.operation, &denial.resource) {
        (DenialReason::RateLimited, ..) => ApiError::too_many_failed_logins(),
        (DenialReason::ForeignHost, ..) => {
            ApiError::forbidden("Requests to an unauthenticated registry must name a loopback host")
        }
        (DenialReason::Forbidden, Some(op), Some(resource)) => {
            ApiError::forbidden(format!("User is denied operation {op} on {resource}"))
        }
        (DenialReason::Forbidden, Some(op), None) => {
            ApiError::forbidden(format!("User is denied operation {op}"))
        }
        _ => ApiError::unauthorized(),
    };
    let mut response = error.into_response();
    match denial.reason {
        DenialReason::BadCredentials | DenialReason::AuthenticationRequired => {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(WWW_AUTHENTICATE),
            );
        }
        DenialReason::RateLimited => {
            if let Ok(v) = HeaderValue::from_str(&window.as_secs().max(1).to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        _ => {}
    }
    response
}

/// Whether the request names a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`, with
/// any port). Requests without a host (HTTP/1.0) pass: a browser always sends one.
fn names_loopback_host(parts: &Parts) -> bool {
    let host = parts.uri.host().map(str::to_string).or_else(|| {
        parts
            .headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    });
    let Some(host) = host else {
        return true;
    };
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h),
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The decoded `{subject}` of the matched route, exactly as the handler will receive it.
async fn subject_param(parts: &mut Parts) -> Option<String> {
    let axum::extract::Path(mut params) =
        axum::extract::Path::<HashMap<String, String>>::from_request_parts(parts, &())
            .await
            .ok()?;
    params.remove("subject")
}

/// What a `{subject}` parameter protects: a context key (`:.ctx:`, on config and mode routes)
/// stands for the registry as a whole.
fn subject_resource(subject: String) -> Resource {
    if covenant_store::context::is_context_only(&subject) {
        Resource::Global
    } else {
        Resource::Subject(subject)
    }
}

/// The layer itself (installed by [`crate::router_with_auth`] on every route).
pub(crate) async fn guard(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let (operation, target) = match parts.extensions.get::<MatchedPath>() {
        Some(path) => routes::route_access(parts.method.as_str(), path.as_str()),
        None => (Operation::Read, Target::Public),
    };
    if !auth.is_enabled() {
        if auth.loopback_hosts_only && !names_loopback_host(&parts) {
            let refusal = Refusal::new(Principal::anonymous(&parts), DenialReason::ForeignHost);
            return auth.refuse(refusal, parts).await;
        }
        parts.extensions.insert(Access::unrestricted());
        return next.run(Request::from_parts(parts, body)).await;
    }
    let principal = match auth.authenticate(&parts).await {
        Ok(p) => p,
        Err(refusal) => return auth.refuse(refusal, parts).await,
    };
    let access = auth.access_for(&principal);
    let resource = match target {
        Target::Public | Target::Filtered => None,
        Target::Global => Some(Resource::Global),
        Target::Subject => subject_param(&mut parts).await.map(subject_resource),
    };
    // A whole context's config or mode (`:.ctx:`) is the registry's, like the global one.
    let operation = match (&resource, operation) {
        (Some(Resource::Global), Operation::Write) if target == Target::Subject => Operation::Admin,
        (_, operation) => operation,
    };
    let allowed = match (target, &resource) {
        (Target::Public, _) => true,
        (Target::Filtered, _) => principal.is_authenticated() || access.allows_anything(),
        (_, Some(resource)) => access.allows(operation, resource),
        // A path the handler will reject as malformed (400) before touching anything.
        (_, None) => principal.is_authenticated() || access.allows_anything(),
    };
    if !allowed {
        let reason = if principal.is_authenticated() {
            DenialReason::Forbidden
        } else {
            DenialReason::AuthenticationRequired
        };
        let refusal = Refusal {
            principal,
            reason,
            operation: Some(operation),
            resource,
        };
        return auth.refuse(refusal, parts).await;
    }
    parts.extensions.insert(principal);
    parts.extensions.insert(access);
    next.run(Request::from_parts(parts, body)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(op: Operation, resource: &str) -> Grant {
        Grant {
            operation: op,
            resources: ResourcePattern::parse(resource).unwrap(),
        }
    }

    #[test]
    fn karapace_read_and_write_keep_their_meaning() {
        let access = Access::with_grants(vec![
            grant(Operation::Write, "Subject:cave-.*"),
            grant(Operation::Read, "Config:"),
        ]);
        let cave = Resource::Subject("cave-1".into());
        assert!(access.allows(Operation::Read, &cave));
        assert!(access.allows(Operation::Write, &cave));
        assert!(access.allows(Operation::Delete, &cave));
        assert!(!access.allows(Operation::Govern, &cave));
        assert!(!access.allows(Operation::Admin, &cave));
        assert!(access.allows(Operation::Read, &Resource::Global));
        assert!(!access.allows(Operation::Admin, &Resource::Global));
        assert!(!access.can_read("house-1"));
        // Anchored at the start only, like Python's re.match.
        assert!(access.can_read("cave-anything-else"));
        assert!(!access.can_read("the-cave-1"));
        let config_writer = Access::with_grants(vec![grant(Operation::Write, "Config:")]);
        assert!(config_writer.allows(Operation::Admin, &Resource::Global));
        assert!(!config_writer.can_read("cave-1"));
    }

    #[test]
    fn prefixes_are_literal_and_admin_covers_everything() {
        let access = Access::with_grants(vec![
            grant(Operation::Govern, "SubjectPrefix:a.b"),
            grant(Operation::Admin, "Subject:ops$"),
        ]);
        assert!(access.allows(Operation::Govern, &Resource::Subject("a.b-1".into())));
        assert!(!access.can_read("aXb-1"));
        assert!(!access.allows(Operation::Write, &Resource::Subject("a.b-1".into())));
        for op in Operation::ALL {
            assert!(access.allows(op, &Resource::Subject("ops".into())));
        }
        assert!(!access.can_read("ops2"));
        assert!(!access.allows(Operation::Read, &Resource::Global));
        assert!(Access::unrestricted().allows(Operation::Admin, &Resource::Global));
    }

    #[test]
    fn operations_parse_in_any_case() {
        assert_eq!(Operation::parse("govern").unwrap(), Operation::Govern);
        assert_eq!(Operation::parse("ADMIN").unwrap(), Operation::Admin);
        assert!(Operation::parse("Fly").is_err());
    }

    #[test]
    fn loopback_hosts_are_recognized() {
        let check = |host: &str| {
            let request = axum::http::Request::builder()
                .uri("/subjects")
                .header("host", host)
                .body(())
                .unwrap();
            names_loopback_host(&request.into_parts().0)
        };
        for ok in [
            "localhost",
            "localhost:8081",
            "127.0.0.1:1",
            "[::1]:8081",
            "a.localhost",
        ] {
            assert!(check(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8081",
            "10.0.0.1",
            "localhost.evil.example",
        ] {
            assert!(!check(bad), "{bad}");
        }
    }
}
