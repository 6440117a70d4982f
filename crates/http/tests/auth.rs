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
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let www_authenticate = response
            .headers()
            .get("www-authenticate")
            .map(|v| v.to_str().unwrap().to_string());
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        Answer {
            status,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            www_authenticate,
        }
    }
}

/// A concrete path for a route template.
fn concrete(template: &str, subject: &str, id: i64, guid: &str) -> String {
    template
        .replace("{subject}", subject)
        .replace("{version}", "1")
        .replace("{id}", &id.to_string())
        .replace("{guid}", guid)
        .replace("{consumer}", "c1")
        .replace("{sampleId}", "1")
        .replace("{profileId}", "1")
        .replace("{context}", ".ctx-a")
        .replace("{name}", "e1")
}

/// A body the route can read (its answer may still be an error; only authorization matters).
fn body_for(method: &str, template: &str) -> Option<String> {
    if method == "GET" || method == "DELETE" {
        return None;
    }
    Some(match template {
        "/config" | "/config/{subject}" => r#"{"compatibility":"FULL"}"#.into(),
        "/mode" | "/mode/{subject}" => r#"{"mode":"READWRITE"}"#.into(),
        _ if template.starts_with("/covenant/") => "{}".into(),
        _ => json!({"schema": json!({"type": "record", "name": "V", "fields": [{"name": "visible", "type": "string"}]}).to_string()}).to_string(),
    })
}

fn user_for(op: Operation) -> String {
    format!("u-{}", op.name().to_lowercase())
}

/// Every route: anonymous callers, a principal granted the route's operation and principals
/// lacking it. Allowed calls are never 401/403 and show nothing of the secret subject;
/// denied ones are 403 `40301` (401 `40101` when anonymous) and show nothing of it either.
#[tokio::test]
async fn permission_matrix_over_every_route() {
    let mut checked = 0;
    let shared = tempfile::tempdir().unwrap();
    let auth_path = shared.path().join("auth.json");
    std::fs::write(&auth_path, auth_file_text()).unwrap();
    let auth = Arc::new(
        Auth::new(AuthSettings {
            auth_file: Some(auth_path),
            ..AuthSettings::default()
        })
        .unwrap(),
    );
    for (method, template) in ROUTES {
        let f = fixture_in(tempfile::tempdir_in(shared.path()).unwrap(), auth.clone()).await;
        let (op, target) = route_access(method, template);
        let body = body_for(method, template);
        let body = body.as_deref();
        let allowed_user = user_for(op);
        let allowed = Who::Basic(&allowed_user, "pw");
        let label = format!("{method} {template}");
        let assert_no_leak = |a: &Answer, who: &str| {
            assert!(
                !a.text.contains(SECRET_FIELD),
                "{label} as {who} leaks the secret schema: {}",
                a.text
            );
        };
        match target {
            Target::Public => {
                let a = f
                    .send(
                        Who::Anonymous,
                        method,
                        &concrete(template, ALLOWED_SUBJECT, f.allowed_id, &f.allowed_guid),
                        body,
                    )
                    .await;
                assert!(
                    a.status != 401 && a.status != 403,
                    "{label} public: {}",
                    a.status
                );
                checked += 1;
            }
            Target::Filtered => {
                let uri = concrete(template, ALLOWED_SUBJECT, f.allowed_id, &f.allowed_guid);
                for who in ["u-read", "outsider", "team-member"] {
                    let a = f.send(Who::Basic(who, "pw"), method, &uri, body).await;
                    assert!(
                        a.status < 400 || who == "outsider",
                        "{label} as {who}: {} {}",
                        a.status,
                        a.text
                    );
                    assert!(
                        !a.text.contains(SECRET_SUBJECT),
                        "{label} as {who} lists the secret subject: {}",
                        a.text
                    );
                    assert_no_leak(&a, who);
                }
                // The secret schema's id reads as missing, for every principal but one that
                // may read its subject.
                let secret_uri = concrete(template, ALLOWED_SUBJECT, f.secret_id, &f.secret_guid);
                if template.ends_with("/ids") {
                    // Ids of a guid: the secret one is simply not listed.
                    let a = f
                        .send(Who::Basic("u-read", "pw"), method, &secret_uri, body)
                        .await;
                    assert_eq!(
                        (a.status, a.text.as_str()),
                        (200, "[]"),
                        "{label} secret guid"
                    );
                } else if template.contains("{id}") || template.contains("{guid}") {
                    let a = f
                        .send(Who::Basic("u-read", "pw"), method, &secret_uri, body)
                        .await;
                    assert_eq!(
                        (a.status, a.code()),
                        (404, 40403),
                        "{label} secret id: {}",
                        a.text
                    );
                    assert_no_leak(&a, "u-read");
                }
                let a = f.send(Who::Anonymous, method, &uri, body).await;
                assert_eq!((a.status, a.code()), (401, 40101), "{label} anonymous");
                checked += 3;
            }
            Target::Global | Target::Subject => {
                let uri = concrete(template, ALLOWED_SUBJECT, f.allowed_id, &f.allowed_guid);
                let a = f.send(Who::Anonymous, method, &uri, body).await;
                assert_eq!(
                    (a.status, a.code()),
                    (401, 40101),
                    "{label} anonymous: {}",
                    a.text
                );
                assert!(
                    a.www_authenticate
                        .as_deref()
                        .is_some_and(|h| h.starts_with("Basic")),
                    "{label}"
                );
                // Principals without the operation here.
                let mut denied = vec![("outsider".to_string(), uri.clone())];
                for weaker in Operation::ALL {
                    if !grants(weaker, op, target) {
                        denied.push((user_for(weaker), uri.clone()));
                    }
                }
                if target == Target::Subject {
                    // The allowed user, on a subject outside its grant.
                    denied.push((
                        allowed_user.clone(),
                        concrete(template, SECRET_SUBJECT, f.allowed_id, &f.allowed_guid),
                    ));
                }
                for (who, uri) in &denied {
                    let a = f.send(Who::Basic(who, "pw"), method, uri, body).await;
                    assert_eq!(
                        (a.status, a.code()),
                        (403, 40301),
                        "{label} as {who} on {uri}: {}",
                        a.text
                    );
                    assert!(
                        a.text.contains(op.name()),
                        "{label}: the refusal names the operation: {}",
                        a.text
                    );
                    assert_no_leak(&a, who);
                    checked += 1;
                }
                let a = f.send(allowed, method, &uri, body).await;
                assert!(
                    a.status != 401 && a.status != 403,
                    "{label} as {allowed_user}: {} {}",
                    a.status,
                    a.text
                );
                assert!(
                    !a.text.contains(SECRET_SUBJECT),
                    "{label} as {allowed_user}: {}",
                    a.text
                );
                assert_no_leak(&a, &allowed_user);
                checked += 2;
            }
        }
    }
    println!(
        "permission matrix: {} routes, {checked} checks",
        ROUTES.len()
    );
    assert!(checked > 3 * ROUTES.len());
}

/// The implication the layer applies, restated for the matrix.
fn grants(granted: Operation, wanted: Operation, target: Target) -> bool {
    use Operation::*;
    match (granted, wanted) {
        (Admin, _) | (_, Read) => true,
        (Write, Write | Delete) => true,
        (Write, Admin) => target == Target::Global,
        (g, w) => g == w,
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
    let body = body_for("POST", "/subjects/{subject}/versions").unwrap();
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
