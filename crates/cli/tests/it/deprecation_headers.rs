//! Deprecation signalled on reads, through a running `covenant serve` and a real HTTP client:
//! a version carrying a deprecated field answers every read route with `Deprecation`,
//! `Sunset` and `Link` headers; the version without it answers none; the sunset round-trips
//! through the record's create and update.
//!
//! On SQLite always; on PostgreSQL too when `COVENANT_TEST_POSTGRES` is set.

use crate::support;

use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use support::{Serve, unique_tag};

struct Server {
    _serve: Serve,
    base: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(store: Option<&str>) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let serve = Serve::spawn(&dir.path().join("data"), |command| {
            if let Some(url) = store {
                command.args(["--store", url]);
            }
        });
        let server = Server {
            base: serve.base.clone(),
            _serve: serve,
            http: covenant_exporter::client::client(),
            _dir: dir,
        };
        support::wait_ready(&server.http, &server.base).await;
        server
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, answer) =
            support::call(&self.http, &self.base, method, path, support::V1, body).await;
        assert_eq!(status, 200, "{method} {path}: {answer}");
        answer
    }

    /// The headers of a read, after checking it succeeded.
    async fn read_headers(&self, method: &str, path: &str, body: Option<&Value>) -> HeaderMap {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request
                .header("content-type", support::V1)
                .body(body.to_string());
        }
        let response = request.send().await.expect("request");
        assert_eq!(response.status(), 200, "{path}");
        response.headers().clone()
    }
}

fn schema(fields: Value) -> Value {
    json!({"schema": json!({"type": "record", "name": "Order", "fields": fields}).to_string()})
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().expect("ASCII header"))
}

/// 2026-01-01T00:00:00Z and 2027-01-01T00:00:00Z.
const START_MS: i64 = 1_767_225_600_000;
const START: &str = "@1767225600";

async fn reads_of_a_deprecated_version_carry_the_headers(server: &Server, tag: &str) {
    let subject = format!("orders-{tag}");
    let old = schema(json!([
        {"name": "id", "type": "string"},
        {"name": "legacy_code", "type": ["null", "string"], "default": null},
    ]));
    let new = schema(json!([
        {"name": "id", "type": "string"},
        {"name": "legacy_code", "type": ["null", "string"], "default": null},
        {"name": "region", "type": ["null", "string"], "default": null},
    ]));
    let v1 = server
        .ok(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(old.clone()),
        )
        .await;
    let old_id = v1["id"].as_i64().expect("id");
    // Reads before the record exists are unmarked, and warm whatever is cached.
    let before = server
        .read_headers("GET", &format!("/schemas/ids/{old_id}"), None)
        .await;
    assert!(header(&before, "deprecation").is_none(), "{before:?}");

    let record = server
        .ok(
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "version", "subject": subject, "version": 1},
                "old_promise": "version 1 is the shape producers write",
                "new_promise": "version 2 carries the region",
                "window_start": "2026-01-01T00:00:00Z",
                "window_end": "2026-06-01T00:00:00Z",
                "sunset": "2027-01-01T00:00:00Z",
                "announced_by": "orders-team",
            })),
        )
        .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    let stored = &server
        .ok("GET", &format!("/covenant/v1/deprecations/{dep}"), None)
        .await;
    assert_eq!(
        stored["sunset"],
        json!(START_MS + 365 * 86_400_000),
        "{stored}"
    );

    let v2 = server
        .ok(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(new.clone()),
        )
        .await;
    let new_id = v2["id"].as_i64().expect("id");
    let record_link = format!("</covenant/v1/deprecations/{dep}/record>; rel=\"deprecation\"");
    let successor = format!("</subjects/{subject}/versions/2>; rel=\"successor-version\"");
    let lookup = Some(&old);
    for (method, path, body) in [
        ("GET", format!("/subjects/{subject}/versions/1"), None),
        (
            "GET",
            format!("/subjects/{subject}/versions/1/schema"),
            None,
        ),
        ("GET", format!("/schemas/ids/{old_id}"), None),
        ("GET", format!("/schemas/ids/{old_id}/schema"), None),
        ("POST", format!("/subjects/{subject}"), lookup),
    ] {
        let headers = server.read_headers(method, &path, body).await;
        assert_eq!(header(&headers, "deprecation"), Some(START), "{path}");
        assert_eq!(
            header(&headers, "sunset"),
            Some("Fri, 01 Jan 2027 00:00:00 GMT"),
            "{path}"
        );
        let link = header(&headers, "link").unwrap_or_default();
        assert!(link.contains(&record_link), "{path}: {link}");
        assert!(link.contains(&successor), "{path}: {link}");
    }
    for path in [
        format!("/subjects/{subject}/versions/2"),
        format!("/subjects/{subject}/versions/latest"),
        format!("/schemas/ids/{new_id}"),
    ] {
        let headers = server.read_headers("GET", &path, None).await;
        for name in ["deprecation", "sunset", "link"] {
            assert!(header(&headers, name).is_none(), "{path}: {headers:?}");
        }
    }

    // The update moves the sunset; the next read says so.
    let updated = server
        .ok(
            "PATCH",
            &format!("/covenant/v1/deprecations/{dep}"),
            Some(json!({"by": "orders-team", "sunset": "2027-03-01T12:00:00Z"})),
        )
        .await;
    assert_eq!(updated["sunset"], json!(1_803_902_400_000_i64), "{updated}");
    let headers = server
        .read_headers("GET", &format!("/schemas/ids/{old_id}"), None)
        .await;
    assert_eq!(
        header(&headers, "sunset"),
        Some("Mon, 01 Mar 2027 12:00:00 GMT")
    );

    // A sunset before the deprecation starts is refused (RFC 9745 §4).
    let (status, answer) = support::call(
        &server.http,
        &server.base,
        "PATCH",
        &format!("/covenant/v1/deprecations/{dep}"),
        support::V1,
        Some(json!({"by": "orders-team", "sunset": "2025-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
}

/// A field deprecation marks the versions whose schema carries the field.
async fn a_deprecated_field_marks_its_version(server: &Server, tag: &str) {
    let subject = format!("payments-{tag}");
    let v1 = server
        .ok(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(schema(json!([
                {"name": "payment_id", "type": "string"},
                {"name": "legacy_code", "type": ["null", "string"], "default": null},
            ]))),
        )
        .await;
    let id = v1["id"].as_i64().expect("id");
    let record = server
        .ok(
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "field", "subject": subject, "path": "legacy_code"},
                "old_promise": "legacy_code identifies a payment in the old system",
                "new_promise": "id is the only identity",
                "replacement": "id",
                "window_start": START_MS,
                "announced_by": "payments-team",
            })),
        )
        .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    assert!(record.get("sunset").is_none_or(Value::is_null), "{record}");
    let headers = server
        .read_headers("GET", &format!("/schemas/ids/{id}/schema"), None)
        .await;
    assert_eq!(header(&headers, "deprecation"), Some(START));
    assert!(header(&headers, "sunset").is_none(), "no sunset was set");
    let link = header(&headers, "link").unwrap_or_default();
    assert!(
        link.contains(&format!("/covenant/v1/deprecations/{dep}/record>")),
        "{link}"
    );
    assert!(
        !link.contains("successor-version"),
        "nothing replaces it yet: {link}"
    );
}

/// Takes a field deprecation to `removable` (evidence, exceptions for the window and the
/// canary) and registers `without`, which moves it to `removed`.
async fn remove_field(server: &Server, subject: &str, dep: i64, without: Value) {
    let stage = format!("/covenant/v1/deprecations/{dep}/stage");
    let to = |s: &str| json!({"to": s, "by": "ledger-team"});
    for s in ["frozen", "enforcing"] {
        server.ok("POST", &stage, Some(to(s))).await;
    }
    server
        .ok(
            "POST",
            &format!("/covenant/v1/deprecations/{dep}/evidence"),
            Some(json!({
                "claim": "replay of the archive decodes without legacy_ref", "by": "platform",
                "body": {"kind": "replay_result", "sample": "ledger-archive.avro", "passed": true},
            })),
        )
        .await;
    for overrides in ["window_open", "no_canary"] {
        server
            .ok(
                "POST",
                &format!("/covenant/v1/deprecations/{dep}/exceptions"),
                Some(json!({"approver": "risk-approver", "overrides": overrides,
                    "reason": "no consumer reads legacy_ref; early removal accepted"})),
            )
            .await;
    }
    server.ok("POST", &stage, Some(to("removable"))).await;
    server
        .ok(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(without),
        )
        .await;
    let record = server
        .ok("GET", &format!("/covenant/v1/deprecations/{dep}"), None)
        .await;
    assert_eq!(record["stage"], "removed", "{record}");
}

/// A field removed by a version after its deprecation reached `removable`: the versions
/// before still carry it, so their reads keep the `Deprecation` and `Sunset` headers while
/// the sunset is ahead, and the version without it has none. Once a removed record's sunset
/// has passed, the headers stop.
async fn a_removed_field_marks_older_versions_until_its_sunset(server: &Server, tag: &str) {
    let with = schema(json!([
        {"name": "entry_id", "type": "string"},
        {"name": "legacy_ref", "type": ["null", "string"], "default": null},
    ]));
    let without = schema(json!([{"name": "entry_id", "type": "string"}]));
    let announce = |subject: &str, sunset: &str, window_end: &str| {
        json!({
            "target": {"kind": "field", "subject": subject, "path": "legacy_ref"},
            "old_promise": "legacy_ref points into the old ledger",
            "new_promise": "entry_id is the only reference",
            "replacement": "entry_id",
            "window_start": "2026-01-01T00:00:00Z",
            "window_end": window_end,
            "sunset": sunset,
            "announced_by": "ledger-team",
        })
    };

    let subject = format!("ledger-{tag}");
    let v1 = server
        .ok(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(with.clone()),
        )
        .await;
    let old_id = v1["id"].as_i64().expect("id");
    let record = server
        .ok(
            "POST",
            "/covenant/v1/deprecations",
            Some(announce(
                &subject,
                "2099-01-01T00:00:00Z",
                "2098-01-01T00:00:00Z",
            )),
        )
        .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    remove_field(server, &subject, dep, without.clone()).await;
    for path in [
        format!("/schemas/ids/{old_id}"),
        format!("/subjects/{subject}/versions/1"),
    ] {
        let headers = server.read_headers("GET", &path, None).await;
        assert_eq!(header(&headers, "deprecation"), Some(START), "{path}");
        assert_eq!(
            header(&headers, "sunset"),
            Some("Thu, 01 Jan 2099 00:00:00 GMT"),
            "{path}"
        );
        let link = header(&headers, "link").unwrap_or_default();
        assert!(
            link.contains(&format!("/covenant/v1/deprecations/{dep}/record>")),
            "{path}: {link}"
        );
        assert!(
            link.contains(&format!(
                "</subjects/{subject}/versions/2>; rel=\"successor-version\""
            )),
            "{path}: {link}"
        );
    }
    let headers = server
        .read_headers("GET", &format!("/subjects/{subject}/versions/2"), None)
        .await;
    for name in ["deprecation", "sunset", "link"] {
        assert!(header(&headers, name).is_none(), "{headers:?}");
    }

    // A sunset already passed: the removal is history, and reads say nothing more.
    let subject = format!("ledger-past-{tag}");
    server
        .ok(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(with.clone()),
        )
        .await;
    let record = server
        .ok(
            "POST",
            "/covenant/v1/deprecations",
            Some(announce(
                &subject,
                "2026-02-01T00:00:00Z",
                "2026-01-15T00:00:00Z",
            )),
        )
        .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    remove_field(server, &subject, dep, without).await;
    // Read by version: the same schema id is also version 1 of the subject above.
    let headers = server
        .read_headers("GET", &format!("/subjects/{subject}/versions/1"), None)
        .await;
    for name in ["deprecation", "sunset", "link"] {
        assert!(header(&headers, name).is_none(), "{headers:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecation_headers_on_the_embedded_store() {
    let server = Server::start(None).await;
    let tag = unique_tag();
    reads_of_a_deprecated_version_carry_the_headers(&server, &tag).await;
    a_deprecated_field_marks_its_version(&server, &tag).await;
    a_removed_field_marks_older_versions_until_its_sunset(&server, &tag).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecation_headers_on_postgres() {
    let Ok(url) = std::env::var(support::POSTGRES_ENV) else {
        println!("COVENANT_TEST_POSTGRES is unset: skipping the PostgreSQL deprecation headers");
        return;
    };
    let server = Server::start(Some(&url)).await;
    let tag = unique_tag();
    reads_of_a_deprecated_version_carry_the_headers(&server, &tag).await;
    a_deprecated_field_marks_its_version(&server, &tag).await;
    a_removed_field_marks_older_versions_until_its_sunset(&server, &tag).await;
}
