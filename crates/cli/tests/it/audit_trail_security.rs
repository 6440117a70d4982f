//! The audit trail under hostile requests, through a running `covenant serve` with an auth file:
//!
//! - a flood of refused requests (anonymous ones with a new path and user agent each, wrong
//!   passwords until the address is rate limited) adds a few counted entries, not one entry
//!   per request, and the store file barely grows;
//! - a path carrying a line break and terminal escapes is stored escaped, and `covenant audit`
//!   prints one line per entry whatever was stored;
//! - refusals decided inside handlers (a reference to an unreadable subject, IMPORT on a
//!   subject, a body speaking for someone else) are in the trail like the layer's;
//! - a deprecation's update is by the authenticated principal, never by a body's `by`.

use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::support;
use support::Serve;

fn covenant(args: &[&str], stdin: Option<&str>) -> Output {
    support::covenant_with_stdin(args, stdin.unwrap_or(""))
}

fn ok(args: &[&str], stdin: Option<&str>) -> String {
    let out = covenant(args, stdin);
    assert!(
        out.status.success(),
        "covenant {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `admin` may do anything; `writer` may write `orders-*`; `steward` governs everything and
/// reads `orders-*`.
fn make_auth_file(path: &Path) {
    let file = path.to_str().expect("utf-8 path");
    for (user, password) in [
        ("admin", "a-pass"),
        ("writer", "w-pass"),
        ("steward", "s-pass"),
    ] {
        ok(
            &["auth", "add-user", file, user, "--password-stdin"],
            Some(&format!("{password}\n")),
        );
    }
    for grant in [
        ["admin", "Admin", "Config:"],
        ["admin", "Admin", "Subject:.*"],
        ["writer", "Write", "Subject:orders-.*"],
        ["steward", "Govern", "Config:"],
        ["steward", "Govern", "Subject:.*"],
        ["steward", "Read", "SubjectPrefix:orders-"],
    ] {
        ok(&["auth", "grant", file, grant[0], grant[1], grant[2]], None);
    }
}

async fn wait_ready(base: &str) {
    let http = covenant_exporter::client::client();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = http.get(format!("{base}/health/ready")).send().await
            && r.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("server not ready");
}

/// A registry with the auth file above; the temp dir holds both.
async fn start() -> (tempfile::TempDir, Serve) {
    let dir = tempfile::tempdir().expect("temp dir");
    let auth = dir.path().join("auth.json");
    make_auth_file(&auth);
    let server = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
    });
    wait_ready(&server.base).await;
    (dir, server)
}

/// Status and JSON answer of a request as `user` (anonymous when `None`).
async fn send(
    http: &reqwest::Client,
    base: &str,
    user: Option<(&str, &str)>,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = http.request(method, format!("{base}{path}"));
    if let Some((name, password)) = user {
        request = request.basic_auth(name, Some(password));
    }
    if let Some(body) = body {
        request = request
            .header("content-type", support::V1)
            .body(body.to_string());
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let text = response.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

const ADMIN: Option<(&str, &str)> = Some(("admin", "a-pass"));
const WRITER: Option<(&str, &str)> = Some(("writer", "w-pass"));
const STEWARD: Option<(&str, &str)> = Some(("steward", "s-pass"));

/// The whole trail, following the pages.
async fn trail(http: &reqwest::Client, base: &str, filter: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let path = format!("/covenant/v1/audit?limit=1000&after={after}{filter}");
        let (status, page) = send(http, base, ADMIN, "GET", &path, None).await;
        assert_eq!(status, 200, "{page}");
        out.extend(page["entries"].as_array().cloned().unwrap_or_default());
        match page["next"].as_i64() {
            Some(next) => after = next,
            None => return out,
        }
    }
}

/// Bytes of the store: the database file and its write-ahead log.
fn store_bytes(data: &Path) -> u64 {
    std::fs::read_dir(data)
        .expect("data dir")
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("covenant.sqlite3")
        })
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

fn count_of(entry: &Value) -> i64 {
    entry["count"].as_i64().unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refusals_is_counted_not_stored_one_by_one() {
    let (dir, server) = start().await;
    let base = server.base.clone();
    let http = covenant_exporter::client::client();
    let schema = json!({"schema": "{\"type\":\"string\"}"});
    let (status, body) = send(
        &http,
        &base,
        ADMIN,
        "POST",
        "/subjects/orders-value/versions",
        Some(schema),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let data = dir.path().join("data");
    let rows_before = trail(&http, &base, "").await.len();
    let bytes_before = store_bytes(&data);

    // 5,000 anonymous requests, each with its own path and user agent; some paths try to
    // forge a line of the trail.
    const FLOOD: usize = 5000;
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..16 {
        let (http, base) = (http.clone(), base.clone());
        tasks.spawn(async move {
            let mut statuses = Vec::new();
            for n in (worker..FLOOD).step_by(16) {
                let path = if n % 2 == 0 {
                    format!("/subjects/probe-{n}/versions")
                } else {
                    format!(
                        "/subjects/p{n}%0a2030-01-01T00:00:00.000Z%20ok%20register%1b[2K/versions"
                    )
                };
                let r = http
                    .get(format!("{base}{path}"))
                    .header("user-agent", format!("bot/{n} {}", "x".repeat(n % 700)))
                    .send()
                    .await
                    .expect("request");
                statuses.push(r.status().as_u16());
            }
            statuses
        });
    }
    let mut refused = 0;
    while let Some(statuses) = tasks.join_next().await {
        let statuses = statuses.expect("worker");
        assert!(statuses.iter().all(|s| *s == 401), "{statuses:?}");
        refused += statuses.len();
    }
    assert_eq!(refused, FLOOD);
    let flood_time = started.elapsed();

    // A line forged by an authenticated caller.
    let (status, _) = send(
        &http,
        &base,
        WRITER,
        "GET",
        "/subjects/x%0a2030-01-01T00:00:00.000Z%20%20ok%20%20register%20by%20admin%1b[31m%e2%80%a8/versions",
        None,
    )
    .await;
    assert_eq!(status, 403);
    // Wrong passwords until the address is refused for trying too often.
    let mut rate_limited = 0;
    for _ in 0..300 {
        let (status, _) = send(
            &http,
            &base,
            Some(("nobody", "wrong")),
            "GET",
            "/subjects",
            None,
        )
        .await;
        assert!(status == 401 || status == 429, "{status}");
        rate_limited += usize::from(status == 429);
    }
    assert!(rate_limited > 0, "the failure limit did not engage");

    let entries = trail(&http, &base, "").await;
    // The writer's forged line is one more.
    let added = entries.len() - rows_before - 1;
    // Let any counts still in memory reach the file before measuring it.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let bytes_after = store_bytes(&data);
    let anonymous: Vec<&Value> = entries
        .iter()
        .filter(|e| e["principal"] == "anonymous" && e["operation"] == "Read")
        .collect();
    let counted: i64 = anonymous.iter().map(|e| count_of(e)).sum();
    let password_refusals: i64 = entries
        .iter()
        .filter(|e| e["operation"] == "authenticate")
        .map(count_of)
        .sum();
    println!(
        "{FLOOD} anonymous refusals in {flood_time:?} and 300 failed logins ({rate_limited} rate limited): \
         {added} audit rows added, store {bytes_before} -> {bytes_after} bytes (+{})",
        bytes_after.saturating_sub(bytes_before)
    );
    assert_eq!(counted, FLOOD as i64, "{anonymous:?}");
    assert_eq!(password_refusals, 300);
    assert!(added <= 8, "{added} rows for {FLOOD} + 300 refusals");
    assert!(
        bytes_after.saturating_sub(bytes_before) < 2 * 1024 * 1024,
        "store grew from {bytes_before} to {bytes_after} bytes"
    );
    let flood_entry = anonymous[0];
    assert!(flood_entry["last_at"].as_i64() >= flood_entry["at"].as_i64());
    assert_eq!(flood_entry["operation"], "Read");
    assert_eq!(
        flood_entry["detail"],
        "AuthenticationRequired: GET /subjects/{subject}/versions"
    );
    for e in &entries {
        for (key, value) in e.as_object().expect("entry") {
            if let Some(text) = value.as_str() {
                assert!(
                    !text.chars().any(covenant_store::audit::is_unsafe_char),
                    "{key}: {text:?}"
                );
                assert!(text.len() <= 4096, "{key} holds {} bytes", text.len());
            }
        }
    }

    // The forged line from the writer (sent before the failed logins) is stored escaped, and
    // the command line prints one line per entry.
    let forged = trail(&http, &base, "&principal=writer&outcome=denied").await;
    let subject = forged
        .iter()
        .find_map(|e| e["subject"].as_str().filter(|s| s.starts_with("x\\n2030")))
        .unwrap_or_else(|| panic!("no escaped subject in {forged:?}"));
    assert!(
        subject.ends_with("by admin\\u{1b}[31m\\u{2028}"),
        "{subject}"
    );
    let listed = ok(
        &[
            "audit",
            "--url",
            &base,
            "--outcome",
            "denied",
            "--basic-auth",
            "admin:a-pass",
        ],
        None,
    );
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), added + 1, "{listed}");
    for line in &lines {
        assert!(
            line.starts_with("20") && line.contains("  denied "),
            "{line}"
        );
        assert!(!line.contains('\u{1b}'), "{line:?}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.contains(&format!("×{FLOOD} until "))),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_inside_handlers_are_recorded_and_changes_are_by_the_principal() {
    let (_dir, server) = start().await;
    let base = server.base.clone();
    let http = covenant_exporter::client::client();
    let record = |name: &str| {
        json!({"schema": json!({"type": "record", "name": name,
            "fields": [{"name": "id", "type": "string"}, {"name": "note", "type": "string"}]})
            .to_string()})
    };
    let (status, body) = send(
        &http,
        &base,
        ADMIN,
        "POST",
        "/subjects/secret-value/versions",
        Some(record("Secret")),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = send(
        &http,
        &base,
        WRITER,
        "POST",
        "/subjects/orders-value/versions",
        Some(record("Order")),
    )
    .await;
    assert_eq!(status, 200, "{body}");

    // A reference to a subject the writer may not read.
    let mut probe = record("Probe");
    probe["references"] = json!([{"name": "Secret", "subject": "secret-value", "version": 1}]);
    let (status, body) = send(
        &http,
        &base,
        WRITER,
        "POST",
        "/subjects/orders-value/versions",
        Some(probe),
    )
    .await;
    assert_eq!((status, body["error_code"].clone()), (403, json!(40301)));
    // IMPORT on a subject needs Admin there.
    let (status, body) = send(
        &http,
        &base,
        WRITER,
        "PUT",
        "/mode/orders-value",
        Some(json!({"mode": "IMPORT"})),
    )
    .await;
    assert_eq!((status, body["error_code"].clone()), (403, json!(40301)));

    // A deprecation changed by the steward: a body's `by` naming someone else is refused...
    let (status, created) = send(
        &http,
        &base,
        STEWARD,
        "POST",
        "/covenant/v1/deprecations",
        Some(json!({
            "target": {"kind": "field", "subject": "orders-value", "path": "note"},
            "old_promise": "a note", "new_promise": "no note", "replacement": "none",
        })),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_i64().expect("id");
    let patch = format!("/covenant/v1/deprecations/{id}");
    let (status, body) = send(
        &http,
        &base,
        STEWARD,
        "PATCH",
        &patch,
        Some(json!({"by": "admin", "note": "claimed"})),
    )
    .await;
    assert_eq!(
        (status, body["error_code"].clone()),
        (403, json!(40301)),
        "{body}"
    );
    // ...and without one (or naming the principal) the change is the principal's.
    for by in [None, Some("steward")] {
        let mut change = json!({"note": "own", "replacement": format!("nothing {by:?}")});
        if let Some(by) = by {
            change["by"] = json!(by);
        }
        let (status, body) = send(&http, &base, STEWARD, "PATCH", &patch, Some(change)).await;
        assert_eq!(status, 200, "{body}");
        let updates = body["updates"].as_array().cloned().unwrap_or_default();
        let bys: Vec<&str> = updates.iter().filter_map(|u| u["by"].as_str()).collect();
        assert!(
            !bys.is_empty() && bys.iter().all(|b| *b == "steward"),
            "{body}"
        );
    }

    let denied = trail(&http, &base, "&outcome=denied").await;
    let seen: Vec<(String, String, String)> = denied
        .iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or_default().to_string();
            (s("principal"), s("operation"), s("subject"))
        })
        .collect();
    for expected in [
        ("writer", "Read", "secret-value"),
        ("writer", "Admin", "orders-value"),
        ("steward", "Govern", ""),
    ] {
        let expected = (
            expected.0.to_string(),
            expected.1.to_string(),
            expected.2.to_string(),
        );
        assert!(seen.contains(&expected), "no {expected:?} in {seen:?}");
    }
    let claimed = denied
        .iter()
        .find(|e| e["principal"] == "steward")
        .expect("the steward's refusal");
    assert!(
        claimed["detail"]
            .as_str()
            .is_some_and(|d| d.starts_with("Forbidden: 'by' names 'admin'")),
        "{claimed}"
    );
    assert!(
        claimed["request_id"]
            .as_str()
            .is_some_and(|r| !r.is_empty())
    );
    // Nothing was written as "admin" through a body.
    let by_admin = trail(&http, &base, "&principal=admin").await;
    assert!(
        by_admin
            .iter()
            .all(|e| e["operation"] == "register" || e["operation"] == "mode.set"),
        "{by_admin:?}"
    );
}
