//! The audit trail as an authorization layer feeds it: a layer in front of the router puts the
//! caller's `Principal` into the request and, when it refuses one, records the denied attempt
//! through `AuditSink::record_denied`. The trail then lists the changes and the refusal, each
//! with its principal and the request id the client saw.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use covenant_http::audit::{AuditSink, assign_request_id};
use covenant_http::principal::{AuthMethod, Principal};
use covenant_http::{HttpConfig, governance, router, router_with};
use covenant_registry::Registry;
use covenant_store::{AuditTarget, SqliteStore};
use serde_json::{Value, json};
use std::sync::Arc;
use tower::ServiceExt;

/// Stands in for the authentication and authorization layer: the `x-test-user` header is the
/// authenticated name; `mallory` may not delete.
async fn authorize(sink: AuditSink, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let name = parts
        .headers
        .get("x-test-user")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut principal = Principal::anonymous(&parts);
    principal.name = name.clone();
    principal.method = AuthMethod::Basic;
    parts.extensions.insert(principal);
    if name.as_deref() == Some("mallory") && parts.method == axum::http::Method::DELETE {
        let subject = parts.uri.path().split('/').nth(2).map(str::to_string);
        sink.record_denied(&parts, "Delete", AuditTarget::subject(subject.as_deref()))
            .await;
        return (StatusCode::FORBIDDEN, "denied").into_response();
    }
    next.run(Request::from_parts(parts, body)).await
}

struct Reply {
    status: StatusCode,
    request_id: String,
    body: Value,
}

async fn send(app: &Router, user: &str, method: &str, path: &str, body: Option<Value>) -> Reply {
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header("x-test-user", user)
        .header("content-type", "application/json")
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .expect("request");
    let response = app.clone().oneshot(request).await.expect("answer");
    let status = response.status();
    let request_id = response
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .expect("body");
    Reply {
        status,
        request_id,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

#[tokio::test]
async fn the_trail_lists_changes_and_denied_attempts_with_their_principals() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = Arc::new(Registry::new(Arc::new(
        SqliteStore::open(dir.path()).expect("store"),
    )));
    let sink = AuditSink::new(registry.store().clone());
    let app = router(registry, HttpConfig::default())
        .layer(middleware::from_fn(move |req, next| {
            authorize(sink.clone(), req, next)
        }))
        .layer(middleware::from_fn(assign_request_id));

    let schema = json!({"schema": "{\"type\":\"string\"}"});
    let registered = send(
        &app,
        "alice",
        "POST",
        "/subjects/pay/versions",
        Some(schema),
    )
    .await;
    assert_eq!(registered.status, StatusCode::OK, "{:?}", registered.body);
    let denied = send(&app, "mallory", "DELETE", "/subjects/pay", None).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert!(
        !denied.request_id.is_empty(),
        "a refusal carries its request id too"
    );
    let mode = send(
        &app,
        "alice",
        "PUT",
        "/mode/pay",
        Some(json!({"mode": "READONLY"})),
    )
    .await;
    assert_eq!(mode.status, StatusCode::OK, "{:?}", mode.body);

    let page = send(&app, "alice", "GET", "/covenant/v1/audit", None).await;
    let seen: Vec<(String, String, String, String)> = page.body["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (
                text("principal"),
                text("operation"),
                text("outcome"),
                text("request_id"),
            )
        })
        .collect();
    let row = |who: &str, op: &str, outcome: &str, id: &str| {
        (
            who.to_string(),
            op.to_string(),
            outcome.to_string(),
            id.to_string(),
        )
    };
    assert_eq!(
        seen,
        [
            row("alice", "register", "ok", &registered.request_id),
            row("mallory", "Delete", "denied", &denied.request_id),
            row("alice", "mode.set", "ok", &mode.request_id),
        ]
    );
    let only_denied = send(
        &app,
        "alice",
        "GET",
        "/covenant/v1/audit?outcome=denied",
        None,
    )
    .await;
    assert_eq!(only_denied.body["entries"][0]["subject"], json!("pay"));
    assert_eq!(only_denied.body["next"], Value::Null);
    let paged = send(&app, "alice", "GET", "/covenant/v1/audit?limit=2", None).await;
    assert_eq!(paged.body["entries"].as_array().map(Vec::len), Some(2));
    let next = paged.body["next"].as_i64().expect("a next page");
    let rest = send(
        &app,
        "alice",
        "GET",
        &format!("/covenant/v1/audit?after={next}"),
        None,
    )
    .await;
    assert_eq!(rest.body["entries"][0]["operation"], json!("mode.set"));
    let bad = send(&app, "alice", "GET", "/covenant/v1/audit?limit=0", None).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_actions_are_recorded_under_the_authenticated_principal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let registry = Arc::new(Registry::new(Arc::new(
        SqliteStore::open(dir.path()).expect("store"),
    )));
    let gov = governance::enable(
        &registry,
        Arc::new(covenant_store::SqliteGovernanceStore::open(dir.path()).expect("governance")),
        Arc::new(covenant_governance::SystemClock),
    );
    let sink = AuditSink::new(registry.store().clone());
    let app = router_with(registry, Some(gov), HttpConfig::default()).layer(middleware::from_fn(
        move |req, next| authorize(sink.clone(), req, next),
    ));
    let schema = json!({"schema": "{\"type\":\"record\",\"name\":\"R\",\"fields\":[{\"name\":\"a\",\"type\":\"int\"}]}"});
    let ok = send(
        &app,
        "alice",
        "POST",
        "/subjects/pay-value/versions",
        Some(schema),
    )
    .await;
    assert_eq!(ok.status, StatusCode::OK, "{:?}", ok.body);
    let deprecation = |by: Option<&str>| {
        let mut body = json!({
            "target": {"kind": "field", "subject": "pay-value", "path": "a"},
            "old_promise": "a", "new_promise": "b", "replacement": "b",
        });
        if let Some(by) = by {
            body["announced_by"] = json!(by);
        }
        body
    };
    // A body cannot speak for someone else...
    let claimed = send(
        &app,
        "alice",
        "POST",
        "/covenant/v1/deprecations",
        Some(deprecation(Some("bob"))),
    )
    .await;
    assert_eq!(claimed.status, StatusCode::FORBIDDEN, "{:?}", claimed.body);
    assert_eq!(claimed.body["error_code"], json!(40301));
    // ...an absent actor is the principal...
    let created = send(
        &app,
        "alice",
        "POST",
        "/covenant/v1/deprecations",
        Some(deprecation(None)),
    )
    .await;
    assert_eq!(created.status, StatusCode::OK, "{:?}", created.body);
    assert_eq!(
        created.body["history"][0]["by"],
        json!("alice"),
        "{:?}",
        created.body
    );
    let id = created.body["id"].as_i64().expect("id");
    let stage = send(
        &app,
        "alice",
        "POST",
        &format!("/covenant/v1/deprecations/{id}/stage"),
        Some(json!({"to": "frozen"})),
    )
    .await;
    assert_eq!(stage.status, StatusCode::OK, "{:?}", stage.body);
    let history = stage.body["history"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        history.last().map(|h| h["by"].clone()),
        Some(json!("alice")),
        "{:?}",
        stage.body
    );
    let usage = send(
        &app,
        "alice",
        "POST",
        "/covenant/v1/usage",
        Some(json!({"subject": "pay-value", "client_id": "svc-other"})),
    )
    .await;
    assert_eq!(usage.status, StatusCode::FORBIDDEN, "{:?}", usage.body);
    // ...and the refusals changed nothing: the trail has what committed, and each refusal as
    // a denied attempt by the principal.
    let trail = send(
        &app,
        "alice",
        "GET",
        "/covenant/v1/audit?principal=alice",
        None,
    )
    .await;
    let ops: Vec<(&str, &str)> = trail.body["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e["operation"].as_str()?, e["outcome"].as_str()?)))
        .collect();
    assert_eq!(
        ops,
        [
            ("register", "ok"),
            ("Govern", "denied"),
            ("deprecation.create", "ok"),
            ("deprecation.stage", "ok"),
            ("Govern", "denied"),
        ]
    );
}

/// The trail's `(operation, subject, version, detail)` rows of `principal`, oldest first.
async fn rows_of(app: &Router, principal: &str) -> Vec<(String, Value, Value, Value)> {
    let page = send(
        app,
        principal,
        "GET",
        &format!("/covenant/v1/audit?principal={principal}"),
        None,
    )
    .await;
    page.body["entries"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let op = e["operation"].as_str().unwrap_or_default().to_string();
            (
                op,
                e["subject"].clone(),
                e["version"].clone(),
                e["detail"].clone(),
            )
        })
        .collect()
}

/// Every governance and policy write route records one entry when it succeeds, named by its
/// operation and the target in its path, and none when it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_governance_write_records_one_entry_and_a_refused_one_none() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(dir.path()).expect("store");
    let samples = covenant_store::SqliteSampleStore::open(store.path()).expect("samples");
    let registry = Arc::new(Registry::new(Arc::new(store)).with_samples(Arc::new(samples)));
    let gov = governance::enable(
        &registry,
        Arc::new(covenant_store::SqliteGovernanceStore::open(dir.path()).expect("governance")),
        Arc::new(covenant_governance::SystemClock),
    );
    let sink = AuditSink::new(registry.store().clone());
    let app = router_with(registry, Some(gov), HttpConfig::default()).layer(middleware::from_fn(
        move |req, next| authorize(sink.clone(), req, next),
    ));
    let schema = json!({"schema": "{\"type\":\"string\"}"});
    let registered = send(&app, "setup", "POST", "/subjects/s/versions", Some(schema)).await;
    assert_eq!(registered.status, StatusCode::OK, "{:?}", registered.body);
    let consumer = json!({"name": "c", "owner": "o", "purpose": "p", "cadence": "daily",
        "criticality": "low", "contact": "c@example.com", "clients": ["svc"], "reads": []});
    let deprecation = json!({"target": {"kind": "field", "subject": "s", "path": "f"},
        "old_promise": "a", "new_promise": "b", "replacement": "g"});
    let sample = json!({"payload": "AmE=", "encoding": "avro"});
    let calls: Vec<(&str, &str, Option<Value>, StatusCode)> = vec![
        (
            "POST",
            "/covenant/v1/consumers",
            Some(consumer.clone()),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/consumers",
            Some(consumer.clone()),
            StatusCode::CONFLICT,
        ),
        (
            "PUT",
            "/covenant/v1/consumers/c",
            Some(consumer),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/consumers/c/retire",
            None,
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/consumers/c/retire",
            None,
            StatusCode::CONFLICT,
        ),
        (
            "POST",
            "/covenant/v1/usage",
            Some(json!({"subject": "s"})),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/deprecations",
            Some(deprecation),
            StatusCode::OK,
        ),
        (
            "PATCH",
            "/covenant/v1/deprecations/1",
            Some(json!({"replacement": "h", "by": "alice"})),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/deprecations/1/stage",
            Some(json!({"to": "frozen"})),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/deprecations/1/stage",
            Some(json!({"to": "frozen"})),
            StatusCode::CONFLICT,
        ),
        (
            "POST",
            "/covenant/v1/deprecations/1/evidence",
            Some(
                json!({"claim": "moved", "body": {"kind": "replay_result", "sample": "x", "passed": true}}),
            ),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/deprecations/1/exceptions",
            Some(json!({"reason": "accepted", "overrides": "window_open"})),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/subjects/s/versions/1/samples",
            Some(sample.clone()),
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/subjects/s/versions/1/samples",
            Some(sample),
            StatusCode::OK,
        ),
        (
            "DELETE",
            "/covenant/v1/subjects/s/versions/1/samples/1",
            None,
            StatusCode::OK,
        ),
        (
            "DELETE",
            "/covenant/v1/subjects/s/versions/1/samples/1",
            None,
            StatusCode::NOT_FOUND,
        ),
        (
            "DELETE",
            "/covenant/v1/subjects/s/versions/1/samples",
            None,
            StatusCode::OK,
        ),
        (
            "POST",
            "/covenant/v1/subjects/s/versions/1/live",
            None,
            StatusCode::OK,
        ),
        (
            "DELETE",
            "/covenant/v1/subjects/s/versions/1/live",
            None,
            StatusCode::OK,
        ),
        (
            "DELETE",
            "/covenant/v1/subjects/s/versions/1/live",
            None,
            StatusCode::NOT_FOUND,
        ),
    ];
    for (method, path, body, want) in calls {
        let reply = send(&app, "alice", method, path, body).await;
        assert_eq!(reply.status, want, "{method} {path}: {:?}", reply.body);
    }
    let none = Value::Null;
    let row = |op: &str, subject: Value, version: Value, detail: Value| {
        (op.to_string(), subject, version, detail)
    };
    let consumer_c = || json!("consumer c");
    let dep_1 = || json!("deprecation 1");
    let (s, v1) = (|| json!("s"), || json!(1));
    assert_eq!(
        rows_of(&app, "alice").await,
        [
            row("consumer.create", none.clone(), none.clone(), none.clone()),
            row("consumer.update", none.clone(), none.clone(), consumer_c()),
            row("consumer.retire", none.clone(), none.clone(), consumer_c()),
            row("usage.report", none.clone(), none.clone(), none.clone()),
            row(
                "deprecation.create",
                none.clone(),
                none.clone(),
                none.clone()
            ),
            row("deprecation.update", none.clone(), none.clone(), dep_1()),
            row("deprecation.stage", none.clone(), none.clone(), dep_1()),
            row("deprecation.evidence", none.clone(), none.clone(), dep_1()),
            row("deprecation.exception", none.clone(), none.clone(), dep_1()),
            row("sample.add", s(), v1(), none.clone()),
            row("sample.add", s(), v1(), none.clone()),
            row("sample.delete", s(), v1(), json!("sample 1")),
            row("sample.delete", s(), v1(), none.clone()),
            row("live.mark", s(), v1(), none.clone()),
            row("live.unmark", s(), v1(), none.clone()),
        ]
    );
}
