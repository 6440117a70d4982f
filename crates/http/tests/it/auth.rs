//! The authentication and authorization layer through the real router on a SQLite store:
//! a permission matrix over every route, filtered listings, encoded subject names, JWTs made
//! with keys generated here, the auth file re-read on change, the failed-login limit, the
//! denial hook and the loopback `Host` check.

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use base64::Engine;
use covenant_governance::SystemClock;
use covenant_http::auth::file::Algorithm;
use covenant_http::auth::routes::{Target, route_access};
use covenant_http::auth::{
    Auth, AuthSettings, Denial, DenialHook, DenialReason, FailureLimit, JwtSettings, JwtVerifier,
    Operation,
};
use covenant_http::{HttpConfig, ROUTES, router_with_auth};
use covenant_registry::Registry;
use covenant_registry::deks::{NewDek, NewKek};
use covenant_store::deks_sqlite::SqliteDekStore;
use covenant_store::{SqliteGovernanceStore, SqliteStore};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tower::ServiceExt;

const SECRET_SUBJECT: &str = "secret-subject";
const SECRET_FIELD: &str = "TopSecretField";
const ALLOWED_SUBJECT: &str = "allowed-a";

/// Users of the matrix: one per operation on `allowed-*` and on `Config:`, and an outsider
/// with every operation, but only on `other-*`.
fn auth_file_text() -> String {
    let mut users = Vec::new();
    let mut permissions = Vec::new();
    for op in Operation::ALL {
        let name = format!("u-{}", op.name().to_lowercase());
        users.push(user(&name, "pw"));
        for resource in ["SubjectPrefix:allowed-", "Config:"] {
            permissions
                .push(json!({"username": name, "operation": op.name(), "resource": resource}));
        }
    }
    users.push(user("outsider", "pw"));
    permissions.push(
        json!({"username": "outsider", "operation": "Admin", "resource": "Subject:other-.*"}),
    );
    users.push(user("team-member", "pw"));
    permissions
        .push(json!({"role": "team-a", "operation": "Read", "resource": "Subject:allowed-a$"}));
    json!({"users": users, "permissions": permissions}).to_string()
}

/// A Karapace-format user (PBKDF2-SHA256, fast enough to hash per test).
fn user(name: &str, password: &str) -> Value {
    let salt = format!("salt-{name}");
    json!({"username": name, "algorithm": "sha256", "salt": salt,
           "password_hash": Algorithm::Sha256.hash(password, &salt),
           "roles": if name == "team-member" { vec!["team-a"] } else { vec![] }})
}

struct Fixture {
    router: Router,
    allowed_id: i64,
    secret_id: i64,
    allowed_guid: String,
    secret_guid: String,
    dir: tempfile::TempDir,
}

#[derive(Default)]
struct Recorded(Mutex<Vec<Denial>>);

#[async_trait::async_trait]
impl DenialHook for Recorded {
    async fn on_denied(&self, denial: &Denial, request: &axum::http::request::Parts) {
        // The refused principal rides in the request, where an audit sink looks for it.
        let carried = request
            .extensions
            .get::<covenant_http::principal::Principal>();
        assert_eq!(carried, Some(&denial.principal));
        self.0.lock().unwrap().push(denial.clone());
    }
}

async fn fixture(configure: impl FnOnce(&std::path::Path, &mut AuthSettings)) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let auth_path = dir.path().join("auth.json");
    std::fs::write(&auth_path, auth_file_text()).unwrap();
    let mut settings = AuthSettings {
        auth_file: Some(auth_path.clone()),
        ..AuthSettings::default()
    };
    configure(&auth_path, &mut settings);
    let auth = Arc::new(Auth::new(settings).unwrap());
    fixture_in(dir, auth).await
}

/// A fresh registry behind an existing layer (whose verified-password cache then carries
/// over, so a matrix of many registries hashes each password once).
async fn fixture_in(dir: tempfile::TempDir, auth: Arc<Auth>) -> Fixture {
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let store = SqliteStore::open(&data).unwrap();
    let registry = Arc::new(Registry::new(Arc::new(store)));
    let governance_store = Arc::new(SqliteGovernanceStore::open(&data).unwrap());
    let governance =
        covenant_http::governance::enable(&registry, governance_store, Arc::new(SystemClock));
    let secret = json!({"type": "record", "name": "S", "fields": [{"name": SECRET_FIELD, "type": "string"}]});
    let visible =
        json!({"type": "record", "name": "V", "fields": [{"name": "visible", "type": "string"}]});
    let secret_id = register(&registry, SECRET_SUBJECT, &secret).await;
    let allowed_id = register(&registry, ALLOWED_SUBJECT, &visible).await;
    let allowed_guid = registry.schema_by_id(allowed_id).await.unwrap().guid();
    let secret_guid = registry.schema_by_id(secret_id).await.unwrap().guid();
    let router = router_with_auth(registry, Some(governance), HttpConfig::default(), auth);
    Fixture {
        router,
        allowed_id,
        secret_id,
        allowed_guid,
        secret_guid,
        dir,
    }
}

async fn register(registry: &Registry, subject: &str, schema: &Value) -> i64 {
    let request = covenant_registry::SchemaRequest {
        schema: schema.to_string(),
        schema_type: None,
        references: vec![],
        metadata: None,
        rule_set: None,
        id: None,
        version: None,
        samples: vec![],
    };
    registry
        .register(subject, request, Default::default())
        .await
        .unwrap()
        .id
}

struct Answer {
    status: u16,
    text: String,
    www_authenticate: Option<String>,
    headers: Vec<(String, String)>,
}

impl Answer {
    fn code(&self) -> i64 {
        serde_json::from_str::<Value>(&self.text)
            .map_or(-1, |v| v["error_code"].as_i64().unwrap_or(-1))
    }
}

/// Credentials of one request.
#[derive(Clone, Copy, Debug)]
enum Who<'a> {
    Anonymous,
    Basic(&'a str, &'a str),
    Bearer(&'a str),
    /// A verified TLS client certificate naming this CN (as the accept loop records it).
    Certificate(&'a str),
}

impl Fixture {
    async fn send(&self, who: Who<'_>, method: &str, uri: &str, body: Option<&str>) -> Answer {
        self.send_from(who, method, uri, body, "127.0.0.1:5000")
            .await
    }

    async fn send_from(
        &self,
        who: Who<'_>,
        method: &str,
        uri: &str,
        body: Option<&str>,
        from: &str,
    ) -> Answer {
        let mut request = Request::builder()
            .method(method)
            .uri(uri)
            .header("x-request-id", "req-1");
        match who {
            Who::Anonymous => {}
            Who::Basic(user, password) => {
                let token =
                    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
                request = request.header("authorization", format!("Basic {token}"));
            }
            Who::Bearer(token) => {
                request = request.header("authorization", format!("Bearer {token}"))
            }
            Who::Certificate(_) => {}
        }
        if body.is_some() {
            request = request.header("content-type", "application/json");
        }
        let mut request = request
            .body(
                body.map(|b| Body::from(b.to_string()))
                    .unwrap_or_else(Body::empty),
            )
            .unwrap();
        let address: SocketAddr = from.parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(address));
        if let Who::Certificate(name) = who {
            request
                .extensions_mut()
                .insert(covenant_http::tls::ClientCertificate {
                    common_name: name.to_string(),
                });
        }
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let www_authenticate = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_string());
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        Answer {
            status,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            www_authenticate,
            headers,
        }
    }
}

/// A body the route can read (its answer may still be an error; only authorization matters).
/// DEK Registry bodies name the cell's KEK and its team's subject.
fn body_for(method: &str, template: &str, kek: Option<&str>, team_subject: &str) -> Option<String> {
    if method == "GET" || method == "DELETE" {
        return None;
    }
    Some(match template {
        "/dek-registry/v1/keks" => json!({"name": kek, "kmsType": "local-kms", "kmsKeyId": "k"}).to_string(),
        "/dek-registry/v1/keks/{name}/deks" => {
            json!({"subject": team_subject, "encryptedKeyMaterial": "AAAA"}).to_string()
        }
        _ if template.starts_with("/dek-registry/") => {
            json!({"encryptedKeyMaterial": "AAAA", "doc": "d"}).to_string()
        }
        "/config" | "/config/{subject}" => r#"{"compatibility":"FULL"}"#.into(),
        "/mode" | "/mode/{subject}" => r#"{"mode":"READWRITE"}"#.into(),
        _ if template.starts_with("/covenant/") => "{}".into(),
        _ => json!({"schema": json!({"type": "record", "name": "V", "fields": [{"name": "visible", "type": "string"}]}).to_string()}).to_string(),
    })
}

// ----- The generated permission matrix ------------------------------------------------------

/// Team a's subject and context: what the matrix's principals are granted.
const OWN: &str = "team-a-value";
/// Team b's: granted only to the admin. Its schema carries [`SECRET_FIELD`].
const OTHER: &str = "team-b-value";
/// A team b subject no request names: it shares a schema id with [`OWN`] and has usage
/// reported under [`HIDDEN_CLIENT`]. Any answer naming it leaks.
const HIDDEN: &str = "team-b-hidden";
const HIDDEN_CLIENT: &str = "svc-team-b-secret";
/// Each team's KEK in the DEK Registry (`Kek:team-a` is granted with team a's subjects).
const OWN_KEK: &str = "team-a-kek";
const OTHER_KEK: &str = "team-b-kek";

/// What one grant of the matrix covers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scope {
    /// `team-a*` subjects and the `.team-a` context's subjects.
    TeamA,
    /// `Config:`.
    Registry,
    /// Every subject and `Config:` (Karapace's `.*`).
    Everything,
}

/// One caller of the matrix and its grants, restated here as the model the layer must obey.
struct Caller {
    label: &'static str,
    who: Who<'static>,
    grants: Vec<(Operation, Scope)>,
}

fn matrix_auth_file() -> String {
    let team_a = [
        "SubjectPrefix:team-a",
        "SubjectPrefix::.team-a:",
        "Kek:team-a",
    ];
    let mut users = Vec::new();
    let mut permissions = Vec::new();
    let mut grant = |grantee: (&str, &str), op: &str, resources: &[&str]| {
        for r in resources {
            permissions.push(json!({grantee.0: grantee.1, "operation": op, "resource": r}));
        }
    };
    for name in [
        "m-nogrants",
        "m-reader",
        "m-writer",
        "m-configwriter",
        "m-governor",
        "m-approver",
        "m-admin",
        HIDDEN_CLIENT,
    ] {
        users.push(user(name, "pw"));
    }
    grant(("username", "m-reader"), "Read", &team_a);
    grant(("username", "m-writer"), "Write", &team_a);
    grant(("username", "m-configwriter"), "Write", &["Config:"]);
    grant(("username", "m-governor"), "Govern", &team_a);
    grant(("username", "m-governor"), "Govern", &["Config:"]);
    grant(("username", "m-approver"), "Approve", &team_a);
    grant(("username", "m-admin"), "Admin", &[".*"]);
    grant(("username", HIDDEN_CLIENT), "Govern", &["Config:"]);
    grant(("role", "team-a-deployers"), "Write", &team_a);
    grant(("username", "svc-a.mtls"), "Delete", &team_a);
    json!({"users": users, "permissions": permissions}).to_string()
}

fn callers(jwt: &'static str) -> Vec<Caller> {
    use Operation::*;
    use Scope::*;
    let basic = |name: &'static str| Who::Basic(name, "pw");
    vec![
        Caller {
            label: "anonymous",
            who: Who::Anonymous,
            grants: vec![],
        },
        Caller {
            label: "no grants",
            who: basic("m-nogrants"),
            grants: vec![],
        },
        Caller {
            label: "reader",
            who: basic("m-reader"),
            grants: vec![(Read, TeamA)],
        },
        Caller {
            label: "writer",
            who: basic("m-writer"),
            grants: vec![(Write, TeamA)],
        },
        Caller {
            label: "config writer",
            who: basic("m-configwriter"),
            grants: vec![(Write, Registry)],
        },
        Caller {
            label: "governor",
            who: basic("m-governor"),
            grants: vec![(Govern, TeamA), (Govern, Registry)],
        },
        // Accepting risk is its own grant: a governor (who reports usage) cannot approve,
        // an approver can only approve (and read).
        Caller {
            label: "approver",
            who: basic("m-approver"),
            grants: vec![(Approve, TeamA)],
        },
        Caller {
            label: "admin",
            who: basic("m-admin"),
            grants: vec![(Admin, Everything)],
        },
        Caller {
            label: "JWT role",
            who: Who::Bearer(jwt),
            grants: vec![(Write, TeamA)],
        },
        Caller {
            label: "mTLS",
            who: Who::Certificate("svc-a.mtls"),
            grants: vec![(Delete, TeamA)],
        },
    ]
}

/// What a grant of `granted` allows, as the auth file's documentation says: every grant
/// reads; `Write` writes and deletes, and on `Config:` changes the registry's config and
/// mode; `Admin` does everything; the rest only themselves.
fn implies(granted: Operation, wanted: Operation, registry: bool) -> bool {
    use Operation::*;
    match (granted, wanted) {
        (Admin, _) | (_, Read) => true,
        (Write, Write | Delete) => true,
        (Write, Configure) => registry,
        (g, w) => g == w,
    }
}

fn scope_covers(scope: Scope, resource: Option<&str>) -> bool {
    match (scope, resource) {
        (Scope::Everything, _) => true,
        (Scope::Registry, None) => true,
        (Scope::TeamA, Some(s)) => s.starts_with("team-a") || s.starts_with(":.team-a:"),
        _ => false,
    }
}

impl Caller {
    fn authenticated(&self) -> bool {
        !matches!(self.who, Who::Anonymous)
    }

    /// `resource`: a subject, or `None` for the registry.
    fn may(&self, op: Operation, resource: Option<&str>) -> bool {
        self.grants
            .iter()
            .any(|(g, scope)| scope_covers(*scope, resource) && implies(*g, op, resource.is_none()))
    }

    /// Whether `op` is granted on the KEK named `kek` (`Kek:team-a` or `.*`).
    fn may_kek(&self, op: Operation, kek: &str) -> bool {
        self.grants.iter().any(|(g, scope)| {
            let covered = match scope {
                Scope::Everything => true,
                Scope::TeamA => kek.starts_with("team-a"),
                Scope::Registry => false,
            };
            covered && implies(*g, op, false)
        })
    }

    fn reads_team_b(&self) -> bool {
        self.may(Operation::Read, Some(OTHER))
    }
}

/// One request of the matrix: a concrete path, the subject it names (if any) and whether
/// it reaches the route through the `/contexts/{context}/` prefix.
struct Cell {
    method: &'static str,
    uri: String,
    subject: Option<String>,
    /// The KEK a DEK Registry request names (in its path or body).
    kek: Option<String>,
}

/// The requests for one route: on team a's and team b's subject (or once when the route
/// names none), under its own path and, for subject routes, through the context prefix.
fn cells(method: &'static str, template: &str, f: &Fixture) -> Vec<(bool, Cell)> {
    let dek_registry = template.starts_with("/dek-registry/");
    let concrete = |subject: &str, kek: &str, (id, guid): (i64, &str)| {
        let name = if dek_registry { kek } else { "e1" };
        template
            .replace("{subject}", subject)
            .replace("{version}", "1")
            .replace("{id}", &id.to_string())
            .replace("{guid}", guid)
            .replace("{consumer}", "c1")
            .replace("{sampleId}", "1")
            .replace("{profileId}", "1")
            .replace("{context}", ".team-a")
            .replace("{name}", name)
    };
    let ids = (
        (f.allowed_id, f.allowed_guid.as_str()),
        (f.secret_id, f.secret_guid.as_str()),
    );
    let mut out = Vec::new();
    for (own, subject, kek, id) in [
        (true, OWN, OWN_KEK, ids.0),
        (false, OTHER, OTHER_KEK, ids.1),
    ] {
        let named = template.contains("{subject}").then(|| subject.to_string());
        out.push((
            own,
            Cell {
                method,
                uri: concrete(subject, kek, id),
                subject: named.clone(),
                kek: dek_registry.then(|| kek.to_string()),
            },
        ));
        let contextual = [
            "/subjects/{subject}",
            "/compatibility/",
            "/config/{subject}",
            "/mode/{subject}",
        ];
        if contextual.iter().any(|p| template.starts_with(p)) {
            let team = if own { "team-a" } else { "team-b" };
            out.push((
                own,
                Cell {
                    method,
                    uri: format!("/contexts/.{team}{}", concrete("orders", kek, id)),
                    subject: Some(format!(":.{team}:orders")),
                    kek: None,
                },
            ));
        }
    }
    if !template.contains("{subject}") {
        // Routes without a subject are asked once per caller; ids name each team's schema,
        // KEK names each team's KEK.
        if !template.contains("{id}") && !template.contains("{guid}") && !dek_registry {
            out.truncate(1);
        }
    }
    out
}

/// Whether `caller` may do what `rule` asks on the cell's subject and KEK, in the model above.
fn expected(caller: &Caller, op: Operation, target: Target, cell: &Cell) -> bool {
    let subject = cell.subject.as_deref();
    let kek = cell.kek.as_deref().unwrap_or("");
    let whole_context = subject.is_some_and(|s| s.starts_with(":.") && s.ends_with(':'));
    match target {
        Target::Public => true,
        Target::Filtered => caller.authenticated(),
        // The matrix's usage body names no subject: admitted on a grant anywhere, then the
        // handler judges the (missing) subject.
        Target::BodySubject => caller
            .grants
            .iter()
            .any(|(g, _)| implies(*g, op, true) || implies(*g, op, false)),
        Target::Global => caller.may(op, None),
        Target::Subject if whole_context => {
            let op = if op == Operation::Write {
                Operation::Configure
            } else {
                op
            };
            caller.may(op, None)
        }
        Target::Subject => caller.may(op, subject),
        // The KEK in the path, or in the body (its creation, checked by the handler).
        Target::Kek | Target::BodyKek => caller.may_kek(op, kek),
        // A DEK needs the operation on its KEK and on its subject.
        Target::Dek => caller.may_kek(op, kek) && caller.may(op, subject),
    }
}

/// Every (method, route) the router serves, HEAD for every GET, and the context prefix for
/// subject routes; every caller; team a's and team b's resources. A refused call is 401
/// `40101` (anonymous) or 403 `40301`; an allowed one is neither. No answer's body or
/// headers, and no caller's `/metrics`, names team b's hidden subject, its schema's secret
/// field or its client unless the caller may read team b. A route added without a rule is
/// refused to everyone, so it fails here.
#[tokio::test]
async fn generated_permission_matrix() {
    let shared = tempfile::tempdir().unwrap();
    let auth_path = shared.path().join("auth.json");
    std::fs::write(&auth_path, matrix_auth_file()).unwrap();
    let (key, jwk) = ed25519_key("m1");
    let settings = JwtSettings {
        issuer: None,
        audience: None,
        principal_claim: "sub".into(),
        roles_claim: "roles".into(),
    };
    let verifier =
        Arc::new(JwtVerifier::new(settings, &json!({"keys": [jwk]}).to_string()).unwrap());
    let jwt: &'static str = Box::leak(
        token(
            &key,
            "m1",
            json!({"sub": "ci-deployer", "roles": ["team-a-deployers"], "exp": now() + 3600}),
        )
        .into_boxed_str(),
    );
    let auth = Arc::new(
        Auth::new(AuthSettings {
            auth_file: Some(auth_path),
            jwt: Some(verifier),
            client_certificates: true,
            failure_limit: FailureLimit {
                max_failures: 1000,
                window: Duration::from_secs(60),
            },
            ..AuthSettings::default()
        })
        .unwrap(),
    );
    let callers = callers(jwt);
    let mut routes: Vec<(&'static str, &'static str)> = ROUTES.to_vec();
    routes.extend(
        ROUTES
            .iter()
            .filter(|(m, _)| *m == "GET")
            .map(|(_, t)| ("HEAD", *t)),
    );
    let mut cells_checked = 0;
    for (method, template) in routes {
        let f = matrix_fixture(tempfile::tempdir_in(shared.path()).unwrap(), auth.clone()).await;
        let (op, target) = route_access(method, template)
            .unwrap_or_else(|| panic!("{method} {template} has no authorization rule"));
        for (own, cell) in cells(method, template, &f) {
            for caller in &callers {
                let allowed = expected(caller, op, target, &cell);
                let team_subject = if own { OWN } else { OTHER };
                let body = body_for(method, template, cell.kek.as_deref(), team_subject);
                let a = f
                    .send(caller.who, cell.method, &cell.uri, body.as_deref())
                    .await;
                let label = format!(
                    "{} {} as {} ({})",
                    cell.method,
                    cell.uri,
                    caller.label,
                    if own { "own" } else { "other" }
                );
                if allowed {
                    assert!(
                        a.status != 401 && a.status != 403,
                        "{label}: allowed, got {} {}",
                        a.status,
                        a.text
                    );
                } else if caller.authenticated() {
                    assert_eq!(a.status, 403, "{label}: {}", a.text);
                    if method != "HEAD" {
                        assert_eq!(a.code(), 40301, "{label}: {}", a.text);
                    }
                } else {
                    assert_eq!(a.status, 401, "{label}: {}", a.text);
                    assert!(a.www_authenticate.is_some(), "{label}");
                }
                if method == "HEAD" {
                    assert!(a.text.is_empty(), "{label}: a HEAD answer has no body");
                }
                if !caller.reads_team_b() {
                    assert_no_team_b(&label, &a);
                }
                cells_checked += 1;
            }
        }
    }
    // Metrics after usage of team b was reported: only the admin sees its labels.
    let f = matrix_fixture(tempfile::tempdir_in(shared.path()).unwrap(), auth.clone()).await;
    let report =
        json!({"subject": HIDDEN, "client_id": HIDDEN_CLIENT, "fields_read": ["visible"], "records_by_version": {"1": 3}, "decode_failures": 2})
            .to_string();
    let a = f
        .send(
            Who::Basic(HIDDEN_CLIENT, "pw"),
            "POST",
            "/covenant/v1/usage",
            Some(&report),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let a = f
        .send(Who::Basic("m-admin", "pw"), "GET", "/metrics", None)
        .await;
    assert!(
        a.text.contains(HIDDEN_CLIENT),
        "the admin sees every label: {}",
        a.text
    );
    for caller in &callers {
        let a = f.send(caller.who, "GET", "/metrics", None).await;
        if !caller.reads_team_b() {
            assert_no_team_b(&format!("/metrics as {}", caller.label), &a);
        }
        cells_checked += 1;
    }
    println!(
        "generated permission matrix: {} routes (and HEAD for each GET), {} callers, {cells_checked} cells checked",
        ROUTES.len(),
        callers.len()
    );
    assert!(cells_checked > 2 * callers.len() * ROUTES.len());
}

fn assert_no_team_b(label: &str, a: &Answer) {
    for secret in [HIDDEN, HIDDEN_CLIENT, SECRET_FIELD] {
        assert!(
            !a.text.contains(secret),
            "{label}: the body names {secret}: {}",
            a.text
        );
        for (name, value) in &a.headers {
            assert!(
                !value.contains(secret),
                "{label}: header {name} names {secret}: {value}"
            );
        }
    }
}

/// A fresh registry: team b's schema (with the secret field) under [`OTHER`], team a's
/// under [`OWN`], the same schema under [`HIDDEN`] (one id, two teams), and usage.
async fn matrix_fixture(dir: tempfile::TempDir, auth: Arc<Auth>) -> Fixture {
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let store = SqliteStore::open(&data).unwrap();
    let keys = SqliteDekStore::open(store.path()).unwrap();
    let registry = Arc::new(Registry::new(Arc::new(store)).with_deks(Arc::new(keys)));
    // Each team's KEK with a DEK of its subject; team a's KEK also holds one of the hidden
    // subject, which no listing may show to team a.
    let deks = registry.deks().unwrap();
    for (kek, subjects) in [(OWN_KEK, &[OWN, HIDDEN][..]), (OTHER_KEK, &[OTHER][..])] {
        let request = NewKek {
            name: Some(kek.into()),
            kms_type: Some("local-kms".into()),
            kms_key_id: Some(format!("{kek}-id")),
            ..NewKek::default()
        };
        deks.create_kek(request, None).await.unwrap();
        for subject in subjects {
            let request = NewDek {
                subject: Some(subject.to_string()),
                encrypted_key_material: Some("AAAA".into()),
                ..NewDek::default()
            };
            deks.create_dek(kek, request, None).await.unwrap();
        }
    }
    let governance_store = Arc::new(SqliteGovernanceStore::open(&data).unwrap());
    let governance =
        covenant_http::governance::enable(&registry, governance_store, Arc::new(SystemClock));
    let secret = json!({"type": "record", "name": "S", "fields": [{"name": SECRET_FIELD, "type": "string"}]});
    let visible =
        json!({"type": "record", "name": "V", "fields": [{"name": "visible", "type": "string"}]});
    let secret_id = register(&registry, OTHER, &secret).await;
    let allowed_id = register(&registry, OWN, &visible).await;
    register(&registry, HIDDEN, &visible).await;
    register(&registry, ":.team-b:orders", &secret).await;
    register(&registry, ":.team-a:orders", &visible).await;
    let allowed_guid = registry.schema_by_id(allowed_id).await.unwrap().guid();
    let secret_guid = registry.schema_by_id(secret_id).await.unwrap().guid();
    let router = router_with_auth(registry, Some(governance), HttpConfig::default(), auth);
    Fixture {
        router,
        allowed_id,
        secret_id,
        allowed_guid,
        secret_guid,
        dir,
    }
}

#[tokio::test]
async fn listings_are_filtered_and_roles_grant() {
    let f = fixture(|_, _| {}).await;
    let a = f
        .send(Who::Basic("team-member", "pw"), "GET", "/subjects", None)
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&a.text).unwrap(),
        json!([ALLOWED_SUBJECT])
    );
    let a = f
        .send(Who::Basic("outsider", "pw"), "GET", "/subjects", None)
        .await;
    assert_eq!(serde_json::from_str::<Value>(&a.text).unwrap(), json!([]));
    let a = f
        .send(Who::Basic("u-read", "pw"), "GET", "/schemas", None)
        .await;
    let listed: Vec<Value> = serde_json::from_str(&a.text).unwrap();
    assert_eq!(listed.len(), 1, "{}", a.text);
    let a = f
        .send(
            Who::Basic("team-member", "pw"),
            "GET",
            &format!("/schemas/ids/{}", f.allowed_id),
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    // A reference to an unreadable subject is refused without saying whether it exists.
    let body = json!({"schema": "\"string\"", "references": [{"name": "x", "subject": SECRET_SUBJECT, "version": 1}]});
    let a = f
        .send(
            Who::Basic("u-write", "pw"),
            "POST",
            "/subjects/allowed-b/versions",
            Some(&body.to_string()),
        )
        .await;
    assert_eq!((a.status, a.code()), (403, 40301), "{}", a.text);
    let missing = json!({"schema": "\"string\"", "references": [{"name": "x", "subject": "secret-missing", "version": 1}]});
    let b = f
        .send(
            Who::Basic("u-write", "pw"),
            "POST",
            "/subjects/allowed-b/versions",
            Some(&missing.to_string()),
        )
        .await;
    assert_eq!(
        a.text.replace(SECRET_SUBJECT, "X"),
        b.text.replace("secret-missing", "X")
    );
}

#[tokio::test]
async fn encoded_case_and_unicode_variants_reach_no_other_subject() {
    let f = fixture(|_, _| {}).await;
    let reader = Who::Basic("team-member", "pw");
    for uri in [
        "/subjects/secret%2Dsubject/versions",
        "/subjects/SECRET-SUBJECT/versions",
        "/subjects/allowed-a%2F..%2Fsecret-subject/versions",
        "/subjects/allowed-a%0Asecret-subject/versions",
        "/subjects/allowed%2Da%2F/versions",
        "/subjects/secre%CC%81t-subject/versions",
    ] {
        let a = f.send(reader, "GET", uri, None).await;
        assert!(!a.text.contains(SECRET_FIELD), "{uri}: {}", a.text);
        assert_eq!((a.status, a.code()), (403, 40301), "{uri}: {}", a.text);
    }
    // Decoded before the check, exactly as the handler sees it.
    let a = f
        .send(reader, "GET", "/subjects/allowed%2Da/versions", None)
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    // Not found and denied read the same to someone without rights.
    let denied = f
        .send(reader, "GET", "/subjects/secret-subject/versions", None)
        .await;
    let missing = f
        .send(reader, "GET", "/subjects/secret-nothing/versions", None)
        .await;
    assert_eq!(denied.status, missing.status);
    assert_eq!(
        denied.text.replace("secret-subject", "X"),
        missing.text.replace("secret-nothing", "X")
    );
}

#[tokio::test]
async fn import_mode_on_a_subject_needs_admin_there() {
    let f = fixture(|_, _| {}).await;
    let import = Some(r#"{"mode":"IMPORT"}"#);
    let a = f
        .send(
            Who::Basic("u-write", "pw"),
            "PUT",
            "/mode/allowed-a",
            import,
        )
        .await;
    assert_eq!((a.status, a.code()), (403, 40301), "{}", a.text);
    assert!(a.text.contains("Admin"), "{}", a.text);
    let a = f
        .send(
            Who::Basic("u-admin", "pw"),
            "PUT",
            "/mode/allowed-a?force=true",
            import,
        )
        .await;
    assert!(
        a.status != 401 && a.status != 403,
        "{} {}",
        a.status,
        a.text
    );
}

#[tokio::test]
async fn metrics_labels_name_routes_not_subjects() {
    let f = fixture(|_, _| {}).await;
    f.send(
        Who::Basic("outsider", "pw"),
        "GET",
        "/subjects/secret-subject/versions",
        None,
    )
    .await;
    let a = f
        .send(Who::Basic("u-read", "pw"), "GET", "/metrics", None)
        .await;
    assert_eq!(a.status, 200);
    assert!(!a.text.contains(SECRET_SUBJECT), "{}", a.text);
}

#[tokio::test]
async fn bad_credentials_are_401_with_a_challenge_and_never_logged_in_the_hook() {
    let hook = Arc::new(Recorded::default());
    let h = hook.clone();
    let f = fixture(move |_, s| s.denial_hook = Some(h)).await;
    for who in [
        Who::Basic("u-read", "wrong"),
        Who::Basic("nobody", "pw"),
        Who::Bearer("not.a.jwt"),
    ] {
        let a = f.send(who, "GET", "/subjects", None).await;
        assert_eq!((a.status, a.code()), (401, 40101), "{who:?}");
        assert!(a.www_authenticate.is_some());
    }
    f.send(
        Who::Basic("outsider", "pw"),
        "DELETE",
        "/subjects/secret-subject",
        None,
    )
    .await;
    let denials = hook.0.lock().unwrap();
    assert_eq!(denials.len(), 4);
    assert!(
        denials[..3]
            .iter()
            .all(|d| d.reason == DenialReason::BadCredentials)
    );
    let last = &denials[3];
    assert_eq!(last.reason, DenialReason::Forbidden);
    assert_eq!(last.principal.name.as_deref(), Some("outsider"));
    assert_eq!(last.operation, Some(Operation::Delete));
    assert_eq!(
        last.resource.as_ref().map(ToString::to_string).as_deref(),
        Some("Subject:secret-subject")
    );
    assert_eq!(last.request_id.as_deref(), Some("req-1"));
    assert!(
        !format!("{denials:?}").contains("wrong"),
        "credentials reach the hook"
    );
}

#[tokio::test]
async fn failed_logins_are_limited_per_source_address() {
    let f = fixture(|_, s| {
        s.failure_limit = FailureLimit {
            max_failures: 3,
            window: Duration::from_secs(60),
        }
    })
    .await;
    for _ in 0..3 {
        let a = f
            .send_from(
                Who::Basic("u-read", "guess"),
                "GET",
                "/subjects",
                None,
                "10.1.1.1:1",
            )
            .await;
        assert_eq!(a.status, 401);
    }
    let a = f
        .send_from(
            Who::Basic("u-read", "pw"),
            "GET",
            "/subjects",
            None,
            "10.1.1.1:2",
        )
        .await;
    assert_eq!((a.status, a.code()), (429, 42901), "{}", a.text);
    let a = f
        .send_from(
            Who::Basic("u-read", "pw"),
            "GET",
            "/subjects",
            None,
            "10.1.1.2:1",
        )
        .await;
    assert_eq!(a.status, 200, "another address is not limited");
}

#[tokio::test]
async fn the_auth_file_is_reread_when_it_changes() {
    let f = fixture(|_, s| s.reload_interval = Some(Duration::ZERO)).await;
    let path = f.dir.path().join("auth.json");
    let newcomer = Who::Basic("newcomer", "pw2");
    assert_eq!(f.send(newcomer, "GET", "/subjects", None).await.status, 401);
    let mut file: Value = serde_json::from_str(&auth_file_text()).unwrap();
    file["users"]
        .as_array_mut()
        .unwrap()
        .push(user("newcomer", "pw2"));
    file["permissions"].as_array_mut().unwrap().push(
        json!({"username": "newcomer", "operation": "Read", "resource": "Subject:secret-subject$"}),
    );
    std::fs::write(&path, file.to_string()).unwrap();
    let a = f.send(newcomer, "GET", "/subjects", None).await;
    assert_eq!(
        serde_json::from_str::<Value>(&a.text).unwrap(),
        json!([SECRET_SUBJECT])
    );
    // A broken file is not applied: the last good one stays.
    std::fs::write(&path, "{ not json").unwrap();
    assert_eq!(f.send(newcomer, "GET", "/subjects", None).await.status, 200);
    // Revoking takes effect on the next request.
    std::fs::write(&path, auth_file_text()).unwrap();
    assert_eq!(f.send(newcomer, "GET", "/subjects", None).await.status, 401);
}

#[tokio::test]
async fn anonymous_callers_get_only_the_operations_allowed() {
    let f = fixture(|_, s| s.anonymous_operations = vec![Operation::Read]).await;
    let a = f.send(Who::Anonymous, "GET", "/subjects", None).await;
    assert_eq!(a.status, 200);
    assert!(
        a.text.contains(SECRET_SUBJECT),
        "anonymous Read covers every subject"
    );
    let body = body_for("POST", "/subjects/{subject}/versions", None, OWN).unwrap();
    let a = f
        .send(Who::Anonymous, "POST", "/subjects/x/versions", Some(&body))
        .await;
    assert_eq!((a.status, a.code()), (401, 40101));
}

#[tokio::test]
async fn without_authentication_only_loopback_hosts_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(Registry::new(Arc::new(
        SqliteStore::open(dir.path()).unwrap(),
    )));
    let auth = Auth::new(AuthSettings {
        loopback_hosts_only: true,
        ..AuthSettings::default()
    })
    .unwrap();
    let router = router_with_auth(registry, None, HttpConfig::default(), Arc::new(auth));
    for (host, status) in [
        ("localhost:8081", 200),
        ("127.0.0.1:8081", 200),
        ("[::1]:8081", 200),
        ("rebound.example:8081", 403),
    ] {
        let request = Request::builder()
            .uri("/subjects")
            .header("host", host)
            .body(Body::empty())
            .unwrap();
        let response = router.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status().as_u16(), status, "{host}");
    }
}

// ----- JWT ---------------------------------------------------------------------------------

/// An Ed25519 key made now: its PKCS#8 form (a fixed 16-byte header and the seed) for
/// signing, and its public JWK.
fn ed25519_key(kid: &str) -> (jsonwebtoken::EncodingKey, Value) {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&seed);
    let key = jsonwebtoken::EncodingKey::from_ed_der(&der);
    let mut jwk =
        jsonwebtoken::jwk::Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::EdDSA).unwrap();
    jwk.common.key_id = Some(kid.into());
    (key, serde_json::to_value(jwk).unwrap())
}

fn token(key: &jsonwebtoken::EncodingKey, kid: &str, claims: Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn bearer_tokens_are_checked_against_the_key_set() {
    let (key, jwk) = ed25519_key("k1");
    let (stranger, _) = ed25519_key("k1");
    let (rotated, rotated_jwk) = ed25519_key("k2");
    let settings = JwtSettings {
        issuer: Some("https://idp.test".into()),
        audience: Some("covenant".into()),
        principal_claim: "ext.user".into(),
        roles_claim: "groups".into(),
    };
    let verifier =
        Arc::new(JwtVerifier::new(settings, &json!({"keys": [jwk]}).to_string()).unwrap());
    let v = verifier.clone();
    let f = fixture(move |_, s| s.jwt = Some(v)).await;
    let good = json!({"iss": "https://idp.test", "aud": "covenant", "exp": now() + 600,
                      "ext": {"user": "svc-orders"}, "groups": ["team-a"]});
    let a = f
        .send(
            Who::Bearer(&token(&key, "k1", good.clone())),
            "GET",
            "/subjects",
            None,
        )
        .await;
    assert_eq!(
        serde_json::from_str::<Value>(&a.text).unwrap(),
        json!([ALLOWED_SUBJECT]),
        "roles from the claim grant"
    );
    let mut bad_cases = Vec::new();
    for (field, value) in [
        ("iss", json!("https://other")),
        ("aud", json!("elsewhere")),
        ("exp", json!(now() - 3600)),
    ] {
        let mut claims = good.clone();
        claims[field] = value;
        bad_cases.push((field.to_string(), token(&key, "k1", claims)));
    }
    let mut no_principal = good.clone();
    no_principal["ext"] = json!({});
    bad_cases.push(("principal".into(), token(&key, "k1", no_principal)));
    let mut no_exp = good.clone();
    no_exp.as_object_mut().unwrap().remove("exp");
    bad_cases.push(("no exp".into(), token(&key, "k1", no_exp)));
    bad_cases.push(("other key".into(), token(&stranger, "k1", good.clone())));
    bad_cases.push(("unknown kid".into(), token(&rotated, "k2", good.clone())));
    let hs = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
        &good,
        &jsonwebtoken::EncodingKey::from_secret(b"guess").unwrap(),
    )
    .unwrap();
    bad_cases.push(("HS256".into(), hs));
    for (case, bad) in &bad_cases {
        let a = f.send(Who::Bearer(bad), "GET", "/subjects", None).await;
        assert_eq!((a.status, a.code()), (401, 40101), "{case}: {}", a.text);
    }
    // A refreshed key set takes over without a restart.
    verifier
        .replace_keys(&json!({"keys": [rotated_jwk]}).to_string())
        .unwrap();
    let a = f
        .send(
            Who::Bearer(&token(&rotated, "k2", good.clone())),
            "GET",
            "/subjects",
            None,
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    let a = f
        .send(
            Who::Bearer(&token(&key, "k1", good)),
            "GET",
            "/subjects",
            None,
        )
        .await;
    assert_eq!(a.status, 401);
    assert!(verifier.replace_keys(r#"{"keys": []}"#).is_err());
}
