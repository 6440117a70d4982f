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
use routes::{Rule, Target};
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
    /// Accepting risk on record: approvals that let one exact candidate through named
    /// findings. Separate from `Govern`, so an account that reports usage cannot accept risk.
    Approve,
    /// Exporters, the audit trail, contexts, IMPORT mode and explicit ids; implies every other
    /// operation.
    Admin,
    /// Global (and whole-context) compatibility and mode, IMPORT excepted. Not named in auth
    /// files: Karapace's `Write` on `Config:` grants it, and so does `Admin`.
    Configure,
}

impl Operation {
    /// The operations an auth file may grant.
    pub const ALL: [Operation; 6] = [
        Operation::Read,
        Operation::Write,
        Operation::Delete,
        Operation::Govern,
        Operation::Approve,
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
            Operation::Approve => "Approve",
            Operation::Admin => "Admin",
            Operation::Configure => "Configure",
        }
    }

    /// Whether a grant of `self` on `resource` allows `wanted` there.
    fn covers(self, wanted: Operation, resource: &Resource) -> bool {
        use Operation::*;
        match (self, wanted) {
            (Admin, _) | (_, Read) => true,
            (Write, Write | Delete) => true,
            (Write, Configure) => *resource == Resource::Global,
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
    /// A key encryption key of the DEK Registry (`Kek:<name>`), granted only by patterns
    /// that match that text (`Kek:team-a.*`, or `.*`).
    Kek(String),
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Resource::Global => f.write_str("Config:"),
            Resource::Subject(s) => write!(f, "Subject:{s}"),
            Resource::Kek(k) => write!(f, "Kek:{k}"),
        }
    }
}

/// The resources one grant covers, as written in the auth file.
#[derive(Clone, Debug)]
pub enum ResourcePattern {
    /// `Config:` exactly.
    Global,
    /// Any other text is what Karapace makes of it: a regular expression matched from the
    /// start and not to the end (Python's `re.match`) against the resource's own name,
    /// `Config:` or `Subject:<name>`. So `Subject:orders` also covers `orders-v2` (end it with
    /// `$`), and `.*` covers every subject and the registry's config.
    Karapace(Regex),
    /// `SubjectPrefix:<text>`: subjects whose name starts with the text, no regex.
    SubjectPrefix(String),
    /// Everything (anonymous operations allowed by the server's flags).
    Any,
}

/// What the patterns that grant every subject compile to.
const EVERY_SUBJECT: [&str; 2] = ["^(?:.*)", "^(?:Subject:.*)"];

impl ResourcePattern {
    pub fn parse(text: &str) -> Result<ResourcePattern, AuthFileError> {
        if text == "Config:" {
            return Ok(ResourcePattern::Global);
        }
        if let Some(prefix) = text.strip_prefix("SubjectPrefix:") {
            return Ok(ResourcePattern::SubjectPrefix(prefix.to_string()));
        }
        Regex::new(&format!("^(?:{text})"))
            .map(ResourcePattern::Karapace)
            .map_err(|e| {
                // The regex error draws the pattern over several lines; keep its verdict.
                let message = e.to_string();
                let last = message.lines().last().unwrap_or("").trim();
                AuthFileError::Resource {
                    resource: text.to_string(),
                    message: format!(
                        "not a regular expression ({})",
                        last.trim_start_matches("error: ")
                    ),
                }
            })
    }

    fn matches(&self, resource: &Resource) -> bool {
        match (self, resource) {
            (ResourcePattern::Any, _) => true,
            (ResourcePattern::Global, Resource::Global) => true,
            (ResourcePattern::Karapace(re), Resource::Global) => re.is_match("Config:"),
            (ResourcePattern::Karapace(re), Resource::Subject(s)) => {
                re.is_match(&format!("Subject:{s}"))
            }
            (ResourcePattern::Karapace(re), Resource::Kek(k)) => re.is_match(&format!("Kek:{k}")),
            (ResourcePattern::SubjectPrefix(p), Resource::Subject(s)) => s.starts_with(p.as_str()),
            _ => false,
        }
    }

    /// Whether it covers every subject there can be.
    fn covers_every_subject(&self) -> bool {
        match self {
            ResourcePattern::Any => true,
            ResourcePattern::Karapace(re) => EVERY_SUBJECT.contains(&re.as_str()),
            ResourcePattern::SubjectPrefix(p) => p.is_empty(),
            ResourcePattern::Global => false,
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
                    && g.resources.covers_every_subject()
            }),
        }
    }

    /// Whether `operation` is granted on some resource: the registry or any subject. A route
    /// whose subject is in its body is admitted on this, then checked on that subject.
    pub fn allows_somewhere(&self, operation: Operation) -> bool {
        match &self.grants {
            None => true,
            Some(grants) => grants.iter().any(|g| {
                g.operation.covers(operation, &Resource::Global)
                    || g.operation
                        .covers(operation, &Resource::Subject(String::new()))
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
    /// A `Host` naming another site, where callers without credentials may act.
    ForeignHost,
    /// A state-changing request a browser marks as sent from another site.
    CrossSite,
    /// A served route without an authorization rule: refused to everyone.
    NoRule,
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
    /// Refuse requests whose `Host` is a name other than a loopback name or one of
    /// `allowed_hosts` whenever callers without credentials may do anything (no
    /// authentication, or anonymous operations), so a browser tricked by DNS rebinding cannot
    /// act as an anonymous caller. IP literals always pass: rebinding needs a name.
    pub loopback_hosts_only: bool,
    /// Further host names accepted by the `Host` check (`--allowed-host`).
    pub allowed_hosts: Vec<String>,
    pub denial_hook: Option<Arc<dyn DenialHook>>,
    pub failure_limit: FailureLimit,
    /// How often the auth file's modification time is checked; `None` means every second.
    pub reload_interval: Option<Duration>,
}

/// Password hashes computed at once, whatever the number of logins waiting.
pub const MAX_CONCURRENT_HASHES: usize = 4;

/// A credential that verified.
struct Verified {
    name: String,
    roles: Vec<String>,
    method: AuthMethod,
    expires: Option<u64>,
}

/// The auth file as last read, with its permissions compiled.
struct Policy {
    file: AuthFile,
    grants: Vec<(Grantee, Grant)>,
    /// An entry no password matches, hashed with the file's most used algorithm, so a login
    /// under an unknown name costs what a known name's costs.
    decoy: file::UserEntry,
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
        let decoy = decoy_for(&file);
        Ok(Policy {
            file,
            grants,
            decoy,
        })
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

fn decoy_for(file: &AuthFile) -> file::UserEntry {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for user in &file.users {
        *counts.entry(user.algorithm.as_str()).or_default() += 1;
    }
    let algorithm = counts
        .into_iter()
        .max_by_key(|(name, n)| (*n, *name))
        .map_or("scrypt", |(name, _)| name);
    file::UserEntry {
        username: String::new(),
        algorithm: algorithm.to_string(),
        salt: "covenant-decoy".to_string(),
        // Never the base64 of a derived key, so nothing verifies against it.
        password_hash: "!".to_string(),
        roles: Vec::new(),
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
    limiter: Arc<FailureLimiter>,
    /// Password hashes running at once; further logins queue here instead of each taking
    /// scrypt's 16 MiB at the same time.
    hashing: tokio::sync::Semaphore,
    /// Host names served besides loopback names and IP literals (see [`AuthSettings`]).
    allowed_hosts: Vec<String>,
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
            limiter: Arc::new(FailureLimiter::new(settings.failure_limit)),
            hashing: tokio::sync::Semaphore::new(MAX_CONCURRENT_HASHES),
            allowed_hosts: settings
                .allowed_hosts
                .iter()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
                .collect(),
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

    /// Whether a request must be refused for its `Host` alone: callers without credentials
    /// may act here (no authentication, or anonymous operations), and the request names a
    /// host that is neither a loopback name, an IP literal nor an allowed name (DNS
    /// rebinding).
    pub fn refuses_host(&self, parts: &Parts) -> bool {
        let anonymous_may_act = !self.is_enabled() || !self.anonymous.is_empty();
        anonymous_may_act && self.loopback_hosts_only && !self.names_allowed_host(parts)
    }

    fn names_allowed_host(&self, parts: &Parts) -> bool {
        match request_host(parts) {
            None => true,
            Some(name) => is_loopback_or_literal(&name) || self.allowed_hosts.contains(&name),
        }
    }

    /// The caller of a request: anonymous without credentials, else the verified name, or a
    /// refusal (401, or 429 while the name is locked out at the request's address).
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
        let verified = match value.to_str().ok().and_then(|v| v.split_once(' ')) {
            Some((scheme, credential)) if scheme.eq_ignore_ascii_case("basic") => {
                self.verify_basic(credential.trim(), address).await
            }
            Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
                self.verify_bearer(token.trim(), address)
            }
            _ => Err(DenialReason::BadCredentials),
        };
        match verified {
            Ok(verified) => {
                principal.name = Some(verified.name);
                principal.roles = verified.roles;
                principal.method = verified.method;
                principal.expires = verified.expires;
                Ok(principal)
            }
            Err(reason) => Err(Refusal::new(principal, reason)),
        }
    }

    /// A bearer token: a valid one is never locked out; invalid ones count against the
    /// address like wrong passwords, under an empty user name.
    fn verify_bearer(
        &self,
        token: &str,
        address: Option<std::net::IpAddr>,
    ) -> Result<Verified, DenialReason> {
        if let Some(Ok((name, roles, expires))) =
            self.jwt.as_ref().map(|jwt| jwt.verify_with_expiry(token))
        {
            return Ok(Verified {
                name,
                roles,
                method: AuthMethod::Bearer,
                expires: Some(expires),
            });
        }
        match self.limiter.reserve((address, String::new())) {
            Ok(attempt) => {
                attempt.failed();
                Err(DenialReason::BadCredentials)
            }
            Err(_) => Err(DenialReason::RateLimited),
        }
    }

    /// Valid Basic credentials. The attempt is reserved against the (address, name) pair
    /// before anything is hashed; the hash runs off the async threads, at most
    /// [`MAX_CONCURRENT_HASHES`] at once (scrypt takes tens of milliseconds and 16 MiB by
    /// design), and an unknown name costs the same hash as a known one.
    async fn verify_basic(
        &self,
        credential: &str,
        address: Option<std::net::IpAddr>,
    ) -> Result<Verified, DenialReason> {
        let file = self.file.as_ref().ok_or(DenialReason::BadCredentials)?;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credential)
            .ok()
            .and_then(|d| String::from_utf8(d).ok())
            .ok_or(DenialReason::BadCredentials)?;
        let (name, password) = decoded
            .split_once(':')
            .ok_or(DenialReason::BadCredentials)?;
        let attempt = self
            .limiter
            .reserve((address, name.to_string()))
            .map_err(|_| DenialReason::RateLimited)?;
        let policy = file.current();
        let known = policy.file.user(name).cloned();
        let ok = match &known {
            Some(user) if self.recently_verified(user, password) => true,
            Some(user) => self.hash_and_compare(user.clone(), password).await,
            None => {
                // Same work as a known user of the file's usual algorithm, then refuse.
                let decoy = policy.decoy.clone();
                self.hash_and_compare(decoy, password).await;
                false
            }
        };
        match known {
            Some(user) if ok => {
                self.remember_verified(&user, password);
                attempt.succeeded();
                Ok(Verified {
                    name: user.username,
                    roles: user.roles,
                    method: AuthMethod::Basic,
                    expires: None,
                })
            }
            _ => {
                attempt.failed();
                Err(DenialReason::BadCredentials)
            }
        }
    }

    /// Hashes `password` as `user`'s entry says and compares, queued behind the hashes
    /// already running.
    async fn hash_and_compare(&self, user: file::UserEntry, password: &str) -> bool {
        let Ok(_permit) = self.hashing.acquire().await else {
            return false;
        };
        let password = password.to_string();
        tokio::task::spawn_blocking(move || user.verify(&password))
            .await
            .unwrap_or(false)
    }

    fn verified_key(user: &file::UserEntry, password: &str) -> [u8; 32] {
        sha2::Sha256::new()
            .chain_update(user.username.as_bytes())
            .chain_update([0])
            .chain_update(password.as_bytes())
            .chain_update([0])
            .chain_update(user.salt.as_bytes())
            .chain_update([0])
            .chain_update(user.password_hash.as_bytes())
            .finalize()
            .into()
    }

    fn recently_verified(&self, user: &file::UserEntry, password: &str) -> bool {
        let key = Self::verified_key(user, password);
        self.verified
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .is_some()
    }

    fn remember_verified(&self, user: &file::UserEntry, password: &str) {
        let key = Self::verified_key(user, password);
        self.verified
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, ());
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

    /// A digest of `user`'s stored password (algorithm, salt and hash) and the user's roles,
    /// as the current auth file has them; `None` when the file does not name the user. A
    /// console session keeps the digest from sign-in and ends once it no longer matches.
    pub(crate) fn credential_stamp(&self, user: &str) -> Option<([u8; 32], Vec<String>)> {
        let policy = self.file.as_ref()?.current();
        let entry = policy.file.user(user)?;
        let stamp = sha2::Sha256::new()
            .chain_update(entry.algorithm.as_bytes())
            .chain_update([0])
            .chain_update(entry.salt.as_bytes())
            .chain_update([0])
            .chain_update(entry.password_hash.as_bytes())
            .finalize()
            .into();
        Some((stamp, entry.roles.clone()))
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
        (DenialReason::ForeignHost, ..) => ApiError::forbidden(
            "Requests without credentials must name a loopback host, an IP address or an allowed host",
        ),
        (DenialReason::CrossSite, ..) => {
            ApiError::forbidden("Cross-site requests that change the registry are refused")
        }
        (DenialReason::NoRule, ..) => ApiError::forbidden("This route has no authorization rule"),
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

/// The host name a request names (lower case, without port or trailing dot); `None` for
/// requests without a host (HTTP/1.0), which a browser never sends.
fn request_host(parts: &Parts) -> Option<String> {
    let host = parts.uri.host().map(str::to_string).or_else(|| {
        parts
            .headers
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    })?;
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host.as_str(), |(h, _)| h),
    };
    Some(name.trim_end_matches('.').to_ascii_lowercase())
}

/// `localhost`, `*.localhost` or an IP literal: names DNS rebinding cannot point elsewhere.
fn is_loopback_or_literal(name: &str) -> bool {
    name == "localhost" || name.ends_with(".localhost") || name.parse::<std::net::IpAddr>().is_ok()
}

/// The decoded `{subject}` of the matched route, exactly as the handler will receive it.
async fn subject_param(parts: &mut Parts) -> Option<String> {
    path_param(parts, "subject").await
}

/// The decoded path parameter `key`, if the route has one.
async fn path_param(parts: &mut Parts, key: &str) -> Option<String> {
    let axum::extract::Path(mut params) =
        axum::extract::Path::<HashMap<String, String>>::from_request_parts(parts, &())
            .await
            .ok()?;
    params.remove(key)
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

/// The layer itself: the one place every API request is authorized (installed by
/// [`crate::router_with_auth`] around every route and the fallbacks). It decides from the
/// route's rule ([`routes::rule_for`]): a method no rule lists is never public, HEAD is
/// judged exactly as GET, and a served route without a rule is refused to everyone.
pub(crate) async fn guard(State(auth): State<Arc<Auth>>, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let matched = parts.extensions.get::<MatchedPath>().map(|p| p.as_str());
    let rule = routes::rule_for(&parts.method, matched);
    if let Some(reason) = refuses_before_authentication(&auth, &parts, rule) {
        let refusal = Refusal::new(Principal::anonymous(&parts), reason);
        return auth.refuse(refusal, parts).await;
    }
    if !auth.is_enabled() {
        parts.extensions.insert(Access::unrestricted());
        return next.run(Request::from_parts(parts, body)).await;
    }
    let principal = match auth.authenticate(&parts).await {
        Ok(p) => p,
        Err(refusal) => return auth.refuse(refusal, parts).await,
    };
    let access = auth.access_for(&principal);
    let (operation, resource, allowed) = decide(rule, &principal, &access, &mut parts).await;
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

/// Refusals that need no credentials to decide: a forged cross-site change, a rebinding
/// `Host`, a served route that has no rule.
fn refuses_before_authentication(auth: &Auth, parts: &Parts, rule: Rule) -> Option<DenialReason> {
    if rule == Rule::Missing {
        return Some(DenialReason::NoRule);
    }
    if is_cross_site_change(parts) {
        return Some(DenialReason::CrossSite);
    }
    auth.refuses_host(parts)
        .then_some(DenialReason::ForeignHost)
}

/// The operation asked, the resource it touches, and whether `access` allows it.
async fn decide(
    rule: Rule,
    principal: &Principal,
    access: &Access,
    parts: &mut Parts,
) -> (Operation, Option<Resource>, bool) {
    let known_caller = principal.is_authenticated() || access.allows_anything();
    let (operation, target) = match rule {
        Rule::Route(operation, target) => (operation, target),
        // Unknown paths and methods (404, 405) say nothing, but only to a known caller.
        Rule::Unserved => return (Operation::Read, None, known_caller),
        Rule::Missing => return (Operation::Admin, None, false),
    };
    let mut resource = match target {
        Target::Public | Target::Filtered | Target::BodySubject | Target::BodyKek => None,
        Target::Global => Some(Resource::Global),
        Target::Subject => subject_param(parts).await.map(subject_resource),
        Target::Kek | Target::Dek => path_param(parts, "name").await.map(Resource::Kek),
    };
    // A DEK is its KEK's and its subject's: the caller needs the operation on both, and a
    // refusal names the first one missing.
    if target == Target::Dek
        && resource
            .as_ref()
            .is_some_and(|kek| access.allows(operation, kek))
    {
        resource = subject_param(parts).await.map(Resource::Subject);
    }
    // A whole context's config or mode (`:.ctx:`) is the registry's, like the global one.
    let operation = match (&resource, operation) {
        (Some(Resource::Global), Operation::Write) if target == Target::Subject => {
            Operation::Configure
        }
        (_, operation) => operation,
    };
    let allowed = match (target, &resource) {
        (Target::Public, _) => true,
        (Target::Filtered, _) => known_caller,
        (Target::BodySubject | Target::BodyKek, _) => {
            known_caller && access.allows_somewhere(operation)
        }
        (_, Some(resource)) => access.allows(operation, resource),
        // A path the handler will reject as malformed (400) before touching anything.
        (_, None) => known_caller,
    };
    (operation, resource, allowed)
}

/// A state-changing request that a browser marks as sent from another site: `Sec-Fetch-Site`
/// other than `same-origin` or `none`, or an `Origin` other than the request's own host.
/// Clients that are not browsers send neither header, so they are not affected; a page on
/// another origin cannot leave both out, whatever content type it uses.
fn is_cross_site_change(parts: &Parts) -> bool {
    use axum::http::Method;
    if matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return false;
    }
    let fetch_site = parts
        .headers
        .get("sec-fetch-site")
        .map(|v| v.to_str().unwrap_or("cross-site").to_ascii_lowercase());
    if fetch_site.is_some_and(|site| site != "same-origin" && site != "none") {
        return true;
    }
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return false;
    };
    let origin_host = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, authority)| authority.trim_end_matches('/').to_ascii_lowercase());
    let own_host = parts
        .headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_ascii_lowercase);
    match (origin_host, own_host) {
        (Some(origin), Some(own)) => origin != own,
        // `Origin: null` (sandboxed or file pages) or no `Host` to compare with.
        _ => true,
    }
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
        assert!(config_writer.allows(Operation::Configure, &Resource::Global));
        // Karapace's config writer changes the config; exporters and the trail need Admin.
        assert!(!config_writer.allows(Operation::Admin, &Resource::Global));
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

    fn parts(headers: &[(&str, &str)], method: &str) -> Parts {
        let mut request = axum::http::Request::builder()
            .method(method)
            .uri("/subjects/s/versions");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(()).unwrap().into_parts().0
    }

    #[test]
    fn hosts_that_rebinding_cannot_forge_are_recognized() {
        let auth = Auth::new(AuthSettings {
            loopback_hosts_only: true,
            allowed_hosts: vec!["Registry.Internal.".into()],
            ..AuthSettings::default()
        })
        .unwrap();
        let refused = |host: &str| auth.refuses_host(&parts(&[("host", host)], "GET"));
        for ok in [
            "localhost",
            "localhost:8081",
            "127.0.0.1:1",
            "[::1]:8081",
            "a.localhost",
            "10.0.0.1",
            "10.0.0.1:8081",
            "registry.internal:8081",
        ] {
            assert!(!refused(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8081",
            "localhost.evil.example",
            "registry.internal.evil",
        ] {
            assert!(refused(bad), "{bad}");
        }
    }

    #[test]
    fn cross_site_changes_are_recognized_and_reads_are_not() {
        let own = ("host", "localhost:8081");
        for (headers, method, cross) in [
            (vec![own], "POST", false),
            (
                vec![own, ("origin", "http://localhost:8081")],
                "POST",
                false,
            ),
            (vec![own, ("origin", "http://evil.example")], "POST", true),
            (
                vec![own, ("origin", "http://localhost:9999")],
                "DELETE",
                true,
            ),
            (vec![own, ("origin", "null")], "PUT", true),
            (vec![own, ("sec-fetch-site", "cross-site")], "POST", true),
            (vec![own, ("sec-fetch-site", "same-site")], "POST", true),
            (vec![own, ("sec-fetch-site", "same-origin")], "POST", false),
            (vec![own, ("sec-fetch-site", "none")], "POST", false),
            (vec![own, ("origin", "http://evil.example")], "GET", false),
            (vec![own, ("sec-fetch-site", "cross-site")], "HEAD", false),
        ] {
            assert_eq!(
                is_cross_site_change(&parts(&headers, method)),
                cross,
                "{method} {headers:?}"
            );
        }
    }

    #[test]
    fn karapace_resources_are_regexes_over_the_resource_name() {
        let access = Access::with_grants(vec![grant(Operation::Write, ".*")]);
        assert!(access.can_read("anything"));
        assert!(access.allows(Operation::Configure, &Resource::Global));
        assert!(!access.allows(Operation::Admin, &Resource::Global));
        assert!(access.allows_everywhere(Operation::Write));
        let either = Access::with_grants(vec![grant(Operation::Read, "Subject:a$|Subject:b$")]);
        assert!(either.can_read("a") && either.can_read("b") && !either.can_read("c"));
        assert!(!either.allows(Operation::Read, &Resource::Global));
        assert!(ResourcePattern::parse("Subject:(").is_err());
    }
}
