//! The web console through the real router on a SQLite store: sign-in with the auth file's
//! credentials, the session cookie and its CSRF token, what a principal sees and may do,
//! escaping of hostile names, and the security headers (which the API does not get).

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Request, StatusCode};
use covenant_governance::SystemClock;
use covenant_http::auth::file::Algorithm;
use covenant_http::auth::{Auth, AuthSettings, JwtSettings, JwtVerifier};
use covenant_http::{HttpConfig, router_with_auth};
use covenant_registry::{Registry, SchemaRequest};
use covenant_store::{SqliteGovernanceStore, SqliteStore};
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::sync::Arc;
use tower::ServiceExt;

const HOSTILE: &str = "orders-<script>document.title='pwned'</script>";

fn user(name: &str) -> Value {
    user_with(name, "pw")
}

fn user_with(name: &str, password: &str) -> Value {
    let salt = format!("salt-{name}");
    json!({"username": name, "algorithm": "sha256", "salt": salt,
           "password_hash": Algorithm::Sha256.hash(password, &salt)})
}

/// `steward` governs everything; `reader` reads `orders-*` only.
fn auth_file() -> String {
    json!({
        "users": [user("steward"), user("reader")],
        "permissions": [
            {"username": "steward", "operation": "Admin", "resource": "Config:"},
            {"username": "steward", "operation": "Admin", "resource": "Subject:.*"},
            {"username": "reader", "operation": "Read", "resource": "SubjectPrefix:orders-"},
        ]
    })
    .to_string()
}

async fn register(registry: &Registry, subject: &str, doc: &str) {
    let schema = json!({"type": "record", "name": "R", "doc": doc,
        "fields": [{"name": "id", "type": "string"}]});
    let request = SchemaRequest {
        schema: schema.to_string(),
        ..SchemaRequest::default()
    };
    registry
        .register(subject, request, Default::default())
        .await
        .unwrap();
}

async fn app(config: HttpConfig, with_auth: bool) -> (Router, tempfile::TempDir) {
    app_with(config, with_auth, None).await
}

async fn app_with(
    config: HttpConfig,
    with_auth: bool,
    jwt: Option<Arc<JwtVerifier>>,
) -> (Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = AuthSettings {
        loopback_hosts_only: !with_auth,
        jwt,
        // The auth file is looked at on every request, so edits show at once.
        reload_interval: Some(std::time::Duration::ZERO),
        ..AuthSettings::default()
    };
    if with_auth {
        let path = dir.path().join("auth.json");
        std::fs::write(&path, auth_file()).unwrap();
        settings.auth_file = Some(path);
    }
    let store = SqliteStore::open(dir.path()).unwrap();
    let registry = Arc::new(Registry::new(Arc::new(store)));
    let gov_store = Arc::new(SqliteGovernanceStore::open(dir.path()).unwrap());
    let governance = covenant_http::governance::enable(&registry, gov_store, Arc::new(SystemClock));
    register(&registry, "orders-value", "<img src=x onerror=alert(1)>").await;
    register(&registry, "secret-value", "hidden").await;
    register(&registry, HOSTILE, "x").await;
    let auth = Arc::new(Auth::new(settings).unwrap());
    (
        router_with_auth(registry, Some(governance), config, auth),
        dir,
    )
}

struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: String,
}

impl Answer {
    fn cookie(&self) -> Option<String> {
        self.headers
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").to_string())
    }

    /// The CSRF token of the first form on the page.
    fn csrf(&self) -> String {
        let at = self
            .body
            .find("name=\"csrf\" value=\"")
            .expect("a form with a token")
            + 19;
        self.body[at..at + 64].to_string()
    }
}

async fn send(
    app: &Router,
    method: &str,
    uri: &str,
    cookie: Option<&str>,
    form: Option<&str>,
) -> Answer {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "localhost:8081");
    if let Some(c) = cookie {
        request = request.header("cookie", c);
    }
    if form.is_some() {
        request = request.header("content-type", "application/x-www-form-urlencoded");
    }
    let mut request = request
        .body(Body::from(form.unwrap_or("").to_string()))
        .unwrap();
    let from: SocketAddr = "127.0.0.1:5000".parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(from));
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    Answer {
        status,
        headers,
        body: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// Signs in through the form and returns the signed-in session's cookie.
async fn sign_in(app: &Router, name: &str) -> String {
    let form = send(app, "GET", "/ui/sign-in", None, None).await;
    let anonymous = form.cookie().expect("a session cookie");
    let body = format!("csrf={}&username={name}&password=pw", form.csrf());
    let done = send(app, "POST", "/ui/sign-in", Some(&anonymous), Some(&body)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let cookie = done.cookie().expect("a new session cookie");
    assert_ne!(cookie, anonymous, "the session id changes at sign-in");
    cookie
}

#[tokio::test]
async fn signing_in_needs_the_right_password_and_the_forms_token() {
    let (app, _dir) = app(HttpConfig::default(), true).await;
    let first = send(&app, "GET", "/ui/subjects", None, None).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER);
    assert_eq!(first.headers["location"], "/ui/sign-in");
    let set = first.headers["set-cookie"].to_str().unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert!(!set.contains("Secure"), "no TLS, no Secure: {set}");

    let form = send(&app, "GET", "/ui/sign-in", None, None).await;
    let cookie = form.cookie().unwrap();
    let csp = form.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    let wrong = format!("csrf={}&username=steward&password=nope", form.csrf());
    let refused = send(&app, "POST", "/ui/sign-in", Some(&cookie), Some(&wrong)).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(refused.body.contains("Sign-in failed"));
    let no_token = "username=steward&password=pw";
    let forged = send(&app, "POST", "/ui/sign-in", Some(&cookie), Some(no_token)).await;
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let steward = sign_in(&app, "steward").await;
    let page = send(&app, "GET", "/ui/subjects", Some(&steward), None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("Signed in as <b>steward</b>"));
    assert!(page.body.contains("href=\"/ui/deprecations\""));

    // Signing out ends the session on the server: the old cookie is worth nothing.
    let token = page.csrf();
    let out = send(
        &app,
        "POST",
        "/ui/sign-out",
        Some(&steward),
        Some(&format!("csrf={token}")),
    )
    .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    let after = send(&app, "GET", "/ui/subjects", Some(&steward), None).await;
    assert_eq!(after.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn a_reader_sees_only_its_subjects_and_no_governance() {
    let (app, _dir) = app(HttpConfig::default(), true).await;
    let reader = sign_in(&app, "reader").await;
    let list = send(&app, "GET", "/ui/subjects", Some(&reader), None).await;
    assert!(
        list.body.contains("/ui/subjects/orders-value"),
        "{}",
        list.body
    );
    assert!(!list.body.contains("secret-value"));
    assert!(!list.body.contains("/ui/deprecations"));
    let hidden = send(
        &app,
        "GET",
        "/ui/subjects/secret-value",
        Some(&reader),
        None,
    )
    .await;
    let missing = send(
        &app,
        "GET",
        "/ui/subjects/orders-nothing",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(
        hidden.body, missing.body,
        "a hidden subject looks like a missing one"
    );
    let deprecations = send(&app, "GET", "/ui/deprecations", Some(&reader), None).await;
    assert_eq!(deprecations.status, StatusCode::NOT_FOUND);
    let token = list.csrf();
    let act = send(
        &app,
        "POST",
        "/ui/deprecations/1/stage",
        Some(&reader),
        Some(&format!("csrf={token}&to=frozen")),
    )
    .await;
    assert_eq!(act.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn hostile_names_and_docs_are_escaped() {
    let (app, _dir) = app(HttpConfig::default(), false).await;
    let list = send(&app, "GET", "/ui/subjects", None, None).await;
    assert_eq!(list.status, StatusCode::OK);
    assert!(!list.body.contains("<script>document"), "{}", list.body);
    assert!(
        list.body
            .contains("&lt;script&gt;document.title=&#39;pwned&#39;")
    );
    let page = send(&app, "GET", "/ui/subjects/orders-value", None, None).await;
    assert!(!page.body.contains("<img src=x"), "{}", page.body);
    assert!(page.body.contains("&lt;img src=x onerror=alert(1)&gt;"));
}

#[tokio::test]
async fn the_subject_page_shows_the_policy_preset_in_force() {
    let (app, _dir) = app(HttpConfig::default(), false).await;
    let page = send(&app, "GET", "/ui/subjects/orders-value", None, None).await;
    assert!(
        page.body
            .contains("<dt>Policy preset</dt><dd id=\"preset\">covenant (inherited)</dd>"),
        "{}",
        page.body
    );
}

#[tokio::test]
async fn forms_need_the_sessions_token_and_the_same_origin() {
    let (app, _dir) = app(HttpConfig::default(), false).await;
    let page = send(&app, "GET", "/ui/subjects/orders-value", None, None).await;
    let cookie = page.cookie().unwrap();
    let candidate = r#"{"type":"record","name":"R","fields":[{"name":"id","type":"int"}]}"#;
    let encoded: String = url_encode(candidate);
    let good = format!("csrf={}&schemaType=AVRO&schema={encoded}", page.csrf());
    let judged = send(
        &app,
        "POST",
        "/ui/subjects/orders-value/candidate",
        Some(&cookie),
        Some(&good),
    )
    .await;
    assert_eq!(judged.status, StatusCode::OK, "{}", judged.body);
    assert!(judged.body.contains("id=\"findings\""), "{}", judged.body);
    assert!(judged.body.contains("id=\"plan\""));
    let forged = format!("csrf={}&schemaType=AVRO&schema={encoded}", "0".repeat(64));
    let refused = send(
        &app,
        "POST",
        "/ui/subjects/orders-value/candidate",
        Some(&cookie),
        Some(&forged),
    )
    .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // Another site's page posting with the victim's cookie carries its own origin.
    let mut request = Request::builder()
        .method("POST")
        .uri("/ui/subjects/orders-value/candidate")
        .header("host", "localhost:8081")
        .header("origin", "http://evil.example")
        .header("cookie", &cookie)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(good))
        .unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo("127.0.0.1:5000".parse::<SocketAddr>().unwrap()));
    let cross = app.clone().oneshot(request).await.unwrap();
    assert_eq!(cross.status(), StatusCode::FORBIDDEN);
}

fn url_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn the_api_keeps_its_own_answers_and_the_console_can_be_off() {
    let (app, _dir) = app(HttpConfig::default(), false).await;
    let api = send(&app, "GET", "/subjects", None, None).await;
    assert_eq!(api.status, StatusCode::OK);
    assert!(api.headers.get("set-cookie").is_none());
    assert!(api.headers.get("content-security-policy").is_none());
    let foreign = {
        let request = Request::builder()
            .uri("/ui/subjects")
            .header("host", "evil.example")
            .body(Body::empty())
            .unwrap();
        app.clone().oneshot(request).await.unwrap()
    };
    assert_eq!(
        foreign.status(),
        StatusCode::FORBIDDEN,
        "DNS rebinding is refused on /ui too"
    );
    let off = HttpConfig {
        console: false,
        ..HttpConfig::default()
    };
    let (app, _dir) = self::app(off, false).await;
    let gone = send(&app, "GET", "/ui/subjects", None, None).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
    assert!(gone.body.contains("\"error_code\""), "{}", gone.body);
}

#[tokio::test]
async fn the_subject_list_pages_fifty_at_a_time_and_searches_by_name() {
    let (app, _dir) = app(HttpConfig::default(), false).await;
    // The fixture's registry is inside the router; register more through the API.
    for i in 0..110 {
        let body = json!({"schema": json!({"type": "record", "name": "P", "fields": [{"name": "a", "type": "string"}]}).to_string()}).to_string();
        let mut request = Request::builder()
            .method("POST")
            .uri(format!("/subjects/page-{i:03}/versions"))
            .header("host", "localhost")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap();
        request
            .extensions_mut()
            .insert(ConnectInfo("127.0.0.1:5000".parse::<SocketAddr>().unwrap()));
        assert!(
            app.clone()
                .oneshot(request)
                .await
                .unwrap()
                .status()
                .is_success()
        );
    }
    let rows = |body: &str| body.matches("<tr><td><a href=\"/ui/subjects/").count();
    let first = send(&app, "GET", "/ui/subjects?q=page-", None, None).await;
    assert!(first.body.contains("110 subjects match"), "{}", first.body);
    assert_eq!(rows(&first.body), 50);
    assert!(first.body.contains("from=50\" rel=\"next\""));
    assert!(!first.body.contains("rel=\"prev\""));
    let last = send(&app, "GET", "/ui/subjects?q=page-&from=100", None, None).await;
    assert_eq!(rows(&last.body), 10);
    assert!(last.body.contains("/ui/subjects/page-109\""));
    assert!(!last.body.contains("rel=\"next\""));
    let one = send(&app, "GET", "/ui/subjects?q=PAGE-042", None, None).await;
    assert_eq!(rows(&one.body), 1, "search ignores case");
    let by_type = send(&app, "GET", "/ui/subjects?type=PROTOBUF", None, None).await;
    assert_eq!(rows(&by_type.body), 0);
}

/// An Ed25519 key made now (PKCS#8: a fixed 16-byte header and the seed) and its public JWK.
fn ed25519_key() -> (jsonwebtoken::EncodingKey, Value) {
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
    jwk.common.key_id = Some("k1".into());
    (key, serde_json::to_value(jwk).unwrap())
}

#[tokio::test]
async fn a_bearer_token_signs_in_as_its_principal() {
    let (key, jwk) = ed25519_key();
    let verifier =
        JwtVerifier::new(JwtSettings::default(), &json!({"keys": [jwk]}).to_string()).unwrap();
    let (app, _dir) = app_with(HttpConfig::default(), true, Some(Arc::new(verifier))).await;
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
    header.kid = Some("k1".into());
    let token = jsonwebtoken::encode(&header, &json!({"sub": "reader", "exp": exp}), &key).unwrap();
    let form = send(&app, "GET", "/ui/sign-in", None, None).await;
    let cookie = form.cookie().unwrap();
    let forged = format!("csrf={}&token=not.a.token", form.csrf());
    let refused = send(&app, "POST", "/ui/sign-in", Some(&cookie), Some(&forged)).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let body = format!("csrf={}&token={token}", form.csrf());
    let done = send(&app, "POST", "/ui/sign-in", Some(&cookie), Some(&body)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let session = done.cookie().unwrap();
    let list = send(&app, "GET", "/ui/subjects", Some(&session), None).await;
    assert!(
        list.body.contains("Signed in as <b>reader</b>"),
        "{}",
        list.body
    );
    assert!(list.body.contains("orders-value") && !list.body.contains("secret-value"));
}

#[tokio::test]
async fn a_steward_advances_a_deprecation_and_the_trail_names_them() {
    let (app, _dir) = app(HttpConfig::default(), true).await;
    let mut request = Request::builder()
        .method("POST")
        .uri("/covenant/v1/deprecations")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header(
            "authorization",
            format!(
                "Basic {}",
                base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "steward:pw")
            ),
        )
        .body(Body::from(
            json!({"target": {"kind": "field", "subject": "orders-value", "path": "id"},
                   "old_promise": "id is a string", "new_promise": "id is a uuid"})
            .to_string(),
        ))
        .unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo("127.0.0.1:5000".parse::<SocketAddr>().unwrap()));
    let created = app.clone().oneshot(request).await.unwrap();
    assert!(created.status().is_success());

    let steward = sign_in(&app, "steward").await;
    let page = send(&app, "GET", "/ui/deprecations", Some(&steward), None).await;
    assert!(
        page.body.contains("Stage: <b>announced</b>"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains("data-confirm=\"Move deprecation #1 to frozen?\"")
    );
    let token = page.csrf();
    let moved = send(
        &app,
        "POST",
        "/ui/deprecations/1/stage",
        Some(&steward),
        Some(&format!("csrf={token}&to=frozen&note=no+new+use")),
    )
    .await;
    assert_eq!(moved.status, StatusCode::SEE_OTHER, "{}", moved.body);
    let page = send(&app, "GET", "/ui/deprecations", Some(&steward), None).await;
    assert!(page.body.contains("Stage: <b>frozen</b>"), "{}", page.body);
    let trail = send(
        &app,
        "GET",
        "/ui/audit?principal=steward",
        Some(&steward),
        None,
    )
    .await;
    assert!(trail.body.contains("deprecation.stage"), "{}", trail.body);
    assert!(trail.body.contains("deprecation 1"));
    let wrong = send(
        &app,
        "POST",
        "/ui/deprecations/1/stage",
        Some(&steward),
        Some(&format!("csrf={token}&to=sideways")),
    )
    .await;
    assert_eq!(wrong.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(wrong.body.contains("Unknown stage."));
}

/// Replaces the fixture's auth file. The pause first makes sure the new file's modification
/// time differs from the old one's even where the file system keeps coarse times (a new
/// password hash has the same length as the old one).
fn rewrite_auth_file(dir: &tempfile::TempDir, file: &Value) {
    std::thread::sleep(std::time::Duration::from_millis(50));
    std::fs::write(dir.path().join("auth.json"), file.to_string()).unwrap();
}

/// The fixture's auth file with `reader` also reading `secret-*`.
fn auth_file_with_secret_reader() -> Value {
    let mut file: Value = serde_json::from_str(&auth_file()).unwrap();
    file["permissions"].as_array_mut().unwrap().push(
        json!({"username": "reader", "operation": "Read", "resource": "SubjectPrefix:secret-"}),
    );
    file
}

/// Whether the session behind `cookie` has been ended: its next request is sent to the
/// sign-in form with a new (anonymous) session cookie in place of the old one.
async fn assert_signed_out(app: &Router, cookie: &str) {
    let after = send(app, "GET", "/ui/subjects/orders-value", Some(cookie), None).await;
    assert_eq!(after.status, StatusCode::SEE_OTHER, "{}", after.body);
    assert_eq!(after.headers["location"], "/ui/sign-in");
    let replaced = after
        .cookie()
        .expect("the ended session's cookie is replaced");
    assert_ne!(replaced, cookie);
    let form = send(app, "GET", "/ui/sign-in", Some(cookie), None).await;
    assert!(
        !form.body.contains("Signed in as"),
        "the old cookie names no session: {}",
        form.body
    );
}

#[tokio::test]
async fn a_revoked_grant_is_gone_from_a_signed_in_session_on_its_next_request() {
    let (app, dir) = app(HttpConfig::default(), true).await;
    rewrite_auth_file(&dir, &auth_file_with_secret_reader());
    let reader = sign_in(&app, "reader").await;
    let secret = send(
        &app,
        "GET",
        "/ui/subjects/secret-value",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(secret.status, StatusCode::OK, "{}", secret.body);
    assert!(secret.body.contains("&quot;hidden&quot;"));

    rewrite_auth_file(&dir, &serde_json::from_str(&auth_file()).unwrap());
    let secret = send(
        &app,
        "GET",
        "/ui/subjects/secret-value",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(secret.status, StatusCode::NOT_FOUND, "{}", secret.body);
    assert!(!secret.body.contains("&quot;hidden&quot;"));
    let list = send(&app, "GET", "/ui/subjects", Some(&reader), None).await;
    assert!(!list.body.contains("secret-value"), "{}", list.body);
    // The session itself goes on with the grants that remain.
    let orders = send(
        &app,
        "GET",
        "/ui/subjects/orders-value",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(orders.status, StatusCode::OK, "{}", orders.body);
    assert!(orders.body.contains("Signed in as <b>reader</b>"));

    // Taking away every grant leaves nothing to show: back to the sign-in form.
    let mut none: Value = serde_json::from_str(&auth_file()).unwrap();
    none["permissions"]
        .as_array_mut()
        .unwrap()
        .retain(|p| p["username"] != "reader");
    rewrite_auth_file(&dir, &none);
    let orders = send(
        &app,
        "GET",
        "/ui/subjects/orders-value",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(orders.status, StatusCode::SEE_OTHER);
    assert_eq!(orders.headers["location"], "/ui/sign-in");
}

#[tokio::test]
async fn a_changed_password_ends_the_sessions_signed_in_with_the_old_one() {
    let (app, dir) = app(HttpConfig::default(), true).await;
    let reader = sign_in(&app, "reader").await;
    let steward = sign_in(&app, "steward").await;
    let before = send(
        &app,
        "GET",
        "/ui/subjects/orders-value",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(before.status, StatusCode::OK, "{}", before.body);

    let mut file: Value = serde_json::from_str(&auth_file()).unwrap();
    file["users"][1] = user_with("reader", "new-pw");
    rewrite_auth_file(&dir, &file);
    assert_signed_out(&app, &reader).await;
    // Another user's session does not notice.
    let other = send(
        &app,
        "GET",
        "/ui/subjects/secret-value",
        Some(&steward),
        None,
    )
    .await;
    assert_eq!(other.status, StatusCode::OK, "{}", other.body);
    // The new password signs in again.
    let form = send(&app, "GET", "/ui/sign-in", None, None).await;
    let anonymous = form.cookie().unwrap();
    let body = format!("csrf={}&username=reader&password=new-pw", form.csrf());
    let again = send(&app, "POST", "/ui/sign-in", Some(&anonymous), Some(&body)).await;
    assert_eq!(again.status, StatusCode::SEE_OTHER, "{}", again.body);
    let session = again.cookie().unwrap();
    let page = send(
        &app,
        "GET",
        "/ui/subjects/orders-value",
        Some(&session),
        None,
    )
    .await;
    assert_eq!(page.status, StatusCode::OK, "{}", page.body);
}

#[tokio::test]
async fn deleting_the_user_ends_its_sessions() {
    let (app, dir) = app(HttpConfig::default(), true).await;
    let reader = sign_in(&app, "reader").await;
    let before = send(
        &app,
        "GET",
        "/ui/subjects/orders-value",
        Some(&reader),
        None,
    )
    .await;
    assert_eq!(before.status, StatusCode::OK, "{}", before.body);

    // The user goes; its grant stays behind in the file, and must not be reached.
    let mut file: Value = serde_json::from_str(&auth_file()).unwrap();
    file["users"]
        .as_array_mut()
        .unwrap()
        .retain(|u| u["username"] != "reader");
    rewrite_auth_file(&dir, &file);
    assert_signed_out(&app, &reader).await;
}

#[tokio::test]
async fn a_token_session_ends_when_the_token_expires() {
    let (key, jwk) = ed25519_key();
    let verifier =
        JwtVerifier::new(JwtSettings::default(), &json!({"keys": [jwk]}).to_string()).unwrap();
    let (app, _dir) = app_with(HttpConfig::default(), true, Some(Arc::new(verifier))).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = |exp: u64| {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::EdDSA);
        header.kid = Some("k1".into());
        jsonwebtoken::encode(&header, &json!({"sub": "reader", "exp": exp}), &key).unwrap()
    };
    let form = send(&app, "GET", "/ui/sign-in", None, None).await;
    let cookie = form.cookie().unwrap();
    // A token already past its `exp` does not sign in, however recently it expired.
    let stale = format!("csrf={}&token={}", form.csrf(), token(now - 5));
    let refused = send(&app, "POST", "/ui/sign-in", Some(&cookie), Some(&stale)).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{}", refused.body);

    let body = format!("csrf={}&token={}", form.csrf(), token(now + 2));
    let done = send(&app, "POST", "/ui/sign-in", Some(&cookie), Some(&body)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", done.body);
    let session = done.cookie().unwrap();
    let before = send(
        &app,
        "GET",
        "/ui/subjects/orders-value",
        Some(&session),
        None,
    )
    .await;
    assert_eq!(before.status, StatusCode::OK, "{}", before.body);
    assert!(before.body.contains("Signed in as <b>reader</b>"));

    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_signed_out(&app, &session).await;
}

#[tokio::test]
async fn requests_without_a_cookie_do_not_push_out_a_signed_in_session() {
    let (app, _dir) = app(HttpConfig::default(), true).await;
    let steward = sign_in(&app, "steward").await;
    let before = send(&app, "GET", "/ui/subjects", Some(&steward), None).await;
    assert!(before.body.contains("Signed in as <b>steward</b>"));
    let mut fresh = std::collections::HashSet::new();
    for _ in 0..10_050 {
        let anonymous = send(&app, "GET", "/ui/sign-in", None, None).await;
        fresh.insert(anonymous.cookie().expect("an anonymous session"));
    }
    assert_eq!(
        fresh.len(),
        10_050,
        "each request without a cookie got its own session"
    );
    let after = send(&app, "GET", "/ui/subjects", Some(&steward), None).await;
    assert_eq!(after.status, StatusCode::OK, "{}", after.body);
    assert!(after.body.contains("Signed in as <b>steward</b>"));
}

/// The value of the first `<input name="{name}" value="...">` on the page, unescaped enough
/// for rule ids and paths.
fn input_value(body: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let at = body.find(&marker).expect("the input") + marker.len();
    let end = body[at..].find('"').expect("its end") + at;
    body[at..end].replace("&#x2F;", "/").replace("&#47;", "/")
}

#[tokio::test]
async fn a_refused_candidate_can_be_approved_from_its_verdict_and_then_registers() {
    let (app, _dir) = app(HttpConfig::default(), false).await;
    let page = send(&app, "GET", "/ui/subjects/orders-value", None, None).await;
    let cookie = page.cookie().unwrap();
    // `id` becomes an int: refused by the structural check.
    let candidate = r#"{"type":"record","name":"R","fields":[{"name":"id","type":"int"}]}"#;
    let form = format!(
        "csrf={}&schemaType=AVRO&schema={}",
        page.csrf(),
        url_encode(candidate)
    );
    let judged = send(
        &app,
        "POST",
        "/ui/subjects/orders-value/candidate",
        Some(&cookie),
        Some(&form),
    )
    .await;
    assert_eq!(judged.status, StatusCode::OK, "{}", judged.body);
    assert!(
        judged.body.contains("<h2>Accept the risk</h2>"),
        "{}",
        judged.body
    );
    let forms = &judged.body[judged.body.find("id=\"approve-0\"").expect("a form")..];
    let (rule, path) = (input_value(forms, "rule"), input_value(forms, "path"));
    let approve = format!(
        "csrf={}&schemaType=AVRO&schema={}&rule={}&path={}&reason={}&expires=7d",
        page.csrf(),
        url_encode(candidate),
        url_encode(&rule),
        url_encode(&path),
        url_encode("ids are ints upstream now")
    );
    let approved = send(
        &app,
        "POST",
        "/ui/subjects/orders-value/approve",
        Some(&cookie),
        Some(&approve),
    )
    .await;
    assert_eq!(approved.status, StatusCode::OK, "{}", approved.body);
    assert!(approved.body.contains("Approval #1"), "{}", approved.body);
    let listed = send(
        &app,
        "GET",
        "/covenant/v1/subjects/orders-value/approvals",
        None,
        None,
    )
    .await;
    let listed: Value = serde_json::from_str(&listed.body).expect("json");
    assert_eq!(listed[0]["rule"], json!(rule), "{listed}");
    assert_eq!(listed[0]["state"], json!("live"), "{listed}");
    // Every error of the candidate accepted (the structural check may report more than one
    // rule): the registration goes through and names the approvals.
    let mut request = Request::builder()
        .method("POST")
        .uri("/compatibility/subjects/orders-value/versions?verbose=true")
        .header("host", "localhost:8081")
        .header("content-type", "application/json")
        .body(Body::from(json!({"schema": candidate}).to_string()))
        .unwrap();
    request
        .extensions_mut()
        .insert(ConnectInfo("127.0.0.1:5000".parse::<SocketAddr>().unwrap()));
    let verdict = app.clone().oneshot(request).await.unwrap();
    let bytes = axum::body::to_bytes(verdict.into_body(), usize::MAX)
        .await
        .unwrap();
    let verdict: Value = serde_json::from_slice(&bytes).expect("json");
    let errors: Vec<(String, String)> = verdict["findings"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|f| f["severity"] == json!("error"))
        .map(|f| {
            (
                f["rule"].as_str().unwrap_or("").to_string(),
                f["path"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert!(errors.contains(&(rule.clone(), path.clone())), "{verdict}");
}

/// Registers through the API, as a producer would.
async fn register_over_api(app: &Router, subject: &str, body: Value) {
    let mut request = Request::builder()
        .method("POST")
        .uri(format!("/subjects/{subject}/versions"))
        .header("host", "localhost:8081")
        .header("content-type", "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    let from: SocketAddr = "127.0.0.1:5000".parse().unwrap();
    request.extensions_mut().insert(ConnectInfo(from));
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK, "{subject}");
}

#[tokio::test]
async fn the_subject_page_shows_which_personal_fields_are_encrypted_under_which_kek() {
    let (app, _dir) = app(HttpConfig::default(), false).await;
    let schema = json!({"type": "record", "name": "Customer", "fields": [
        {"name": "id", "type": "string"},
        {"name": "email", "type": "string", "confluent:tags": ["PII"]},
        {"name": "card", "type": "string", "confluent:tags": ["SECRET"]},
    ]})
    .to_string();
    let encrypt = |tag: &str, kek: &str| {
        json!({"name": format!("encrypt-{tag}"), "kind": "TRANSFORM", "mode": "WRITEREAD",
               "type": "ENCRYPT", "tags": [tag],
               "params": {"encrypt.kek.name": kek, "encrypt.kms.type": "local-kms",
                          "encrypt.kms.key.id": "k"}})
    };
    register_over_api(
        &app,
        "orders-encrypted",
        json!({"schema": schema, "ruleSet": {"domainRules": [encrypt("PII", "pii-kek"), encrypt("SECRET", "card-kek")]}}),
    )
    .await;
    register_over_api(&app, "orders-clear", json!({"schema": schema})).await;

    let page = send(&app, "GET", "/ui/subjects/orders-encrypted", None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    let table = &page.body[page
        .body
        .find("id=\"encryption\"")
        .expect("the encryption table")..];
    assert!(
        table.contains(
            "<code>/fields/email</code></td><td>PII</td><td>encrypted with KEK <code>pii-kek</code>"
        ),
        "{table}"
    );
    assert!(
        table.contains("<code>/fields/card</code></td><td>SECRET</td><td>encrypted with KEK <code>card-kek</code>"),
        "{table}"
    );
    assert!(
        !table.contains("/fields/id<"),
        "an untagged field is not listed"
    );

    let page = send(&app, "GET", "/ui/subjects/orders-clear", None, None).await;
    let table = &page.body[page
        .body
        .find("id=\"encryption\"")
        .expect("the encryption table")..];
    assert!(
        table.contains("<code>/fields/email</code></td><td>PII</td><td><span class=\"badge warn\">clear text</span>"),
        "{table}"
    );
    assert!(
        !table.contains("/fields/card"),
        "a tag that is neither PII nor encrypted"
    );

    let page = send(&app, "GET", "/ui/subjects/orders-value", None, None).await;
    assert!(
        page.body
            .contains("No field is tagged as personal data or encrypted."),
        "{}",
        page.body
    );
}
