//! `covenant export` / `covenant import` through the binary: embedded store to PostgreSQL and
//! back, with ids, versions, soft deletes, references, config and modes compared at each hop.
//! The PostgreSQL hops run when `COVENANT_TEST_POSTGRES` holds an admin URL.

use crate::support;
use covenant_store::conformance::schema as avro;

use covenant_store::{
    ConfigRecord, Placement, Rejection, SchemaRef, Scope, SqliteStore, Store, StoredVersion,
};
use serde_json::json;
use std::path::Path;
use std::process::Command;
use support::TestDb;

fn allow(_: &[StoredVersion]) -> Result<(), Rejection> {
    Ok(())
}

async fn populate(store: &dyn Store) {
    for text in ["a1", "a2", "a3"] {
        store
            .register("alpha", &avro(text), Placement::default(), &allow, None)
            .await
            .expect("register");
    }
    let mut user = avro("b1");
    user.references = vec![SchemaRef {
        name: "A".into(),
        subject: "alpha".into(),
        version: 1,
    }];
    user.metadata = Some(serde_json::json!({"properties": {"owner": "team"}}));
    user.rule_set = Some(serde_json::json!({"domainRules": []}));
    store
        .register("beta", &user, Placement::default(), &allow, None)
        .await
        .expect("register");
    store
        .register("beta", &avro("a2"), Placement::default(), &allow, None)
        .await
        .expect("shared id");
    store.soft_delete("alpha", &[2]).await.expect("soft delete");
    store
        .register("gone", &avro("g1"), Placement::default(), &allow, None)
        .await
        .expect("register");
    store.hard_delete("gone", &[1]).await.expect("hard delete");
    let mut extra = serde_json::Map::new();
    extra.insert("normalize".into(), serde_json::Value::Bool(true));
    store
        .set_config(
            Scope::Global,
            &ConfigRecord {
                compatibility: Some("FULL".into()),
                extra: Default::default(),
            },
            None,
        )
        .await
        .expect("config");
    store
        .set_config(
            Scope::Subject("beta"),
            &ConfigRecord {
                compatibility: Some("NONE".into()),
                extra,
            },
            None,
        )
        .await
        .expect("config");
    store
        .set_mode(Scope::Global, "READWRITE", None)
        .await
        .expect("mode");
    store
        .set_mode(Scope::Subject("alpha"), "READONLY", None)
        .await
        .expect("mode");
}

fn covenant(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(args)
        .output()
        .expect("run covenant");
    assert!(
        out.status.success(),
        "covenant {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The dump without what may differ between stores: export time and creation times.
fn comparable(json: &[u8]) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(json).expect("dump is JSON");
    if let Some(o) = v.as_object_mut() {
        o.remove("exportedAt");
    }
    if let Some(subjects) = v.get_mut("subjects").and_then(|s| s.as_array_mut()) {
        for s in subjects {
            if let Some(versions) = s.get_mut("versions").and_then(|v| v.as_array_mut()) {
                for version in versions {
                    if let Some(o) = version.as_object_mut() {
                        o.remove("createdAt");
                    }
                }
            }
        }
    }
    v
}

fn export_dir(dir: &Path) -> Vec<u8> {
    covenant(&["export", "--data-dir", &dir.display().to_string()]).stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_import_round_trip_between_embedded_and_postgres() {
    let src = tempfile::tempdir().expect("dir");
    {
        let store = SqliteStore::open(src.path()).expect("open");
        populate(&store).await;
    }
    let first = export_dir(src.path());
    let dump_path = src.path().join("dump.json");
    std::fs::write(&dump_path, &first).expect("write dump");
    let expected = comparable(&first);
    let versions = expected["subjects"]
        .as_array()
        .map(|s| {
            s.iter()
                .map(|s| s["versions"].as_array().map_or(0, Vec::len))
                .sum::<usize>()
        })
        .unwrap_or(0);
    assert_eq!(versions, 5, "alpha 1-3 and beta 1-2 exported, gone not");

    let mut hops = vec!["embedded"];
    let final_dump = match TestDb::create("covenant_transfer").await {
        Some(db) => {
            let url = db.url.clone();
            covenant(&["import", "--store", &url, &dump_path.display().to_string()]);
            let from_pg = covenant(&["export", "--store", &url]).stdout;
            assert_eq!(comparable(&from_pg), expected, "embedded -> PostgreSQL");
            hops.push("postgres");
            // A second import into the same database changes nothing.
            covenant(&["import", "--store", &url, &dump_path.display().to_string()]);
            let pg_path = src.path().join("from-pg.json");
            std::fs::write(&pg_path, &from_pg).expect("write dump");
            let back = tempfile::tempdir().expect("dir");
            covenant(&[
                "import",
                "--data-dir",
                &back.path().display().to_string(),
                &pg_path.display().to_string(),
            ]);
            hops.push("embedded");
            let store = covenant_store::PostgresStore::connect(&url)
                .await
                .expect("connect");
            let next = store
                .register("alpha", &avro("a4"), Placement::default(), &allow, None)
                .await
                .expect("register after import");
            assert_eq!(
                (next.id, next.version),
                (5, 4),
                "allocation continues after the imported ids and versions"
            );
            drop(store);
            db.drop_db().await;
            export_dir(back.path())
        }
        None => {
            eprintln!(
                "COVENANT_TEST_POSTGRES is not set; round trip through the embedded store only"
            );
            let back = tempfile::tempdir().expect("dir");
            covenant(&[
                "import",
                "--data-dir",
                &back.path().display().to_string(),
                &dump_path.display().to_string(),
            ]);
            hops.push("embedded");
            export_dir(back.path())
        }
    };
    assert_eq!(comparable(&final_dump), expected, "after the round trip");
    println!(
        "transfer round trip {}: {} schemas, {} versions, {} configs, {} modes identical",
        hops.join(" -> "),
        expected["schemas"].as_array().map_or(0, Vec::len),
        versions,
        expected["configs"].as_array().map_or(0, Vec::len),
        expected["modes"].as_array().map_or(0, Vec::len)
    );
}

#[test]
fn import_refuses_a_file_that_is_not_a_dump() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("bad.json");
    std::fs::write(
        &path,
        r#"{"format":"something-else","formatVersion":1,"schemas":[],"subjects":[]}"#,
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args([
            "import",
            "--data-dir",
            &dir.path().join("store").display().to_string(),
            &path.display().to_string(),
        ])
        .output()
        .expect("run covenant");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not a covenant export"), "{stderr}");
}

const T0: i64 = 1_767_603_600_000;
const DAY_MS: i64 = 86_400_000;

/// A `covenant serve` on `data_dir` (or `--store url`) reading its clock from `clock`, so
/// that answers computed from "now" (the removal gate's silences) are the same on each run.
async fn serve(data_dir: &Path, store: Option<&str>, clock: &Path) -> (support::Serve, String) {
    let serve = support::Serve::spawn(data_dir, |command| {
        command.arg("--clock-file").arg(clock);
        if let Some(url) = store {
            command.args(["--store", url]);
        }
    });
    let base = serve.base.clone();
    support::wait_ready(&covenant_exporter::client::client(), &base).await;
    (serve, base)
}

async fn ok(
    base: &str,
    method: &str,
    path: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    let http = covenant_exporter::client::client();
    let (status, answer) = support::call(&http, base, method, path, "application/json", body).await;
    assert_eq!(status, 200, "{method} {path}: {answer}");
    answer
}

fn record_avro(name: &str, fields: serde_json::Value) -> String {
    json!({"type": "record", "name": name, "namespace": "acme", "fields": fields}).to_string()
}

/// Fills a registry through its REST API with every kind of state the dump carries; answers
/// the deprecation id.
async fn fill(base: &str, clock: &Path) -> i64 {
    let day = |d: i64| std::fs::write(clock, (T0 + d * DAY_MS).to_string()).expect("clock");
    let post = |path: String, body: serde_json::Value| async move {
        ok(base, "POST", &path, Some(body)).await
    };
    // Schemas of the three formats, one with a reference, and a soft delete.
    let base_schema = record_avro("Base", json!([{"name": "id", "type": "string"}]));
    post(
        "/subjects/base-value/versions".into(),
        json!({"schema": base_schema}),
    )
    .await;
    let orders_v1 = record_avro(
        "Order",
        json!([{"name": "base", "type": "acme.Base"}, {"name": "plan", "type": "string"},
               {"name": "status", "type": "string"}]),
    );
    let reference = json!([{"name": "acme.Base", "subject": "base-value", "version": 1}]);
    post(
        "/subjects/orders-value/versions".into(),
        json!({"schema": orders_v1, "references": reference}),
    )
    .await;
    let none = json!({"compatibility": "NONE"});
    ok(base, "PUT", "/config/events-value", Some(none)).await;
    post(
        "/subjects/events-value/versions".into(),
        json!({"schemaType": "JSON", "schema": json!({"type": "object",
            "properties": {"kind": {"type": "string"}}}).to_string()}),
    )
    .await;
    post(
        "/subjects/events-value/versions".into(),
        json!({"schemaType": "JSON", "schema": json!({"type": "object",
            "properties": {"kind": {"type": "string"}, "at": {"type": "integer"}}}).to_string()}),
    )
    .await;
    ok(base, "DELETE", "/subjects/events-value/versions/2", None).await;
    post(
        "/subjects/pings-value/versions".into(),
        json!({"schemaType": "PROTOBUF",
            "schema": "syntax = \"proto3\";\npackage acme;\nmessage Ping { string id = 1; }\n"}),
    )
    .await;
    ok(
        base,
        "PUT",
        "/config",
        Some(json!({"compatibility": "BACKWARD"})),
    )
    .await;
    ok(
        base,
        "PUT",
        "/config/orders-value",
        Some(json!({"compatibility": "FULL"})),
    )
    .await;
    ok(
        base,
        "PUT",
        "/mode/pings-value",
        Some(json!({"mode": "READONLY"})),
    )
    .await;

    // Consumers with their reads, one retired.
    let consumer = |name: &str, cadence: &str, fields: serde_json::Value| {
        json!({"name": name, "owner": format!("{name}-team"), "purpose": "reports",
            "cadence": cadence, "criticality": "high", "contact": format!("{name}@example.com"),
            "clients": [format!("svc-{name}")],
            "reads": [{"subject": "orders-value", "reader_version": 1, "fields": fields}]})
    };
    post(
        "/covenant/v1/consumers".into(),
        consumer("ledger", "daily", json!(["status"])),
    )
    .await;
    post(
        "/covenant/v1/consumers".into(),
        consumer("exports", "monthly", json!(["plan"])),
    )
    .await;
    post(
        "/covenant/v1/consumers".into(),
        consumer("old-job", "weekly", json!(["status"])),
    )
    .await;
    post("/covenant/v1/consumers/old-job/retire".into(), json!({})).await;

    // Usage: attributed, with counters, and an unattributed reader (a finding).
    post(
        "/covenant/v1/usage".into(),
        json!({"subject": "orders-value", "client_id": "svc-ledger", "reader_schema_id": 2,
            "writer_schema_ids": [2], "fields_read": ["plan", "status"],
            "records_by_version": {"1": 1200}, "decode_failures": 2,
            "unknown_enum_values": {"status": {"PAUSED": 3}}}),
    )
    .await;
    post(
        "/covenant/v1/usage".into(),
        json!({"subject": "orders-value", "client_id": "svc-exports", "fields_read": ["plan"]}),
    )
    .await;

    // A deprecation taken through its stages, with evidence, an exception and an update.
    let record = post(
        "/covenant/v1/deprecations".into(),
        json!({"target": {"kind": "field", "subject": "orders-value", "path": "plan"},
            "contract": "order plan identity", "old_promise": "plan is a label",
            "new_promise": "plan ids are stable", "replacement": "status",
            "owners": [{"role": "producer", "name": "orders-team"}],
            "announced_by": "orders-team"}),
    )
    .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    day(1);
    ok(
        base,
        "PATCH",
        &format!("/covenant/v1/deprecations/{dep}"),
        Some(json!({"by": "orders-team", "note": "clearer contract",
            "contract": "order plan identity, v2", "notes": {"discovery": "found in an audit"}})),
    )
    .await;
    post(
        format!("/covenant/v1/deprecations/{dep}/stage"),
        json!({"to": "frozen", "by": "orders-team", "note": "no new use"}),
    )
    .await;
    day(2);
    post(
        "/covenant/v1/usage".into(),
        json!({"subject": "orders-value", "client_id": "svc-unknown", "fields_read": ["plan"]}),
    )
    .await;
    ok(
        base,
        "PUT",
        "/covenant/v1/consumers/exports",
        Some(consumer("exports", "monthly", json!(["status"]))),
    )
    .await;
    post(
        format!("/covenant/v1/deprecations/{dep}/evidence"),
        json!({"claim": "exports moved", "by": "orders-team",
            "body": {"kind": "sign_off", "consumer": "exports", "who": "head of exports",
                "statement": "the exports read status now"}}),
    )
    .await;
    post(
        format!("/covenant/v1/deprecations/{dep}/exceptions"),
        json!({"approver": "risk-approver", "overrides": "unattributed_usage",
            "party": "svc-unknown", "reason": "a one-off backfill"}),
    )
    .await;
    post(
        format!("/covenant/v1/deprecations/{dep}/stage"),
        json!({"to": "enforcing", "by": "orders-team", "note": "warnings on"}),
    )
    .await;

    // A sample of version 1 (Avro binary of {"id": "hi"}) and a live mark.
    post(
        "/covenant/v1/subjects/base-value/versions/1/samples".into(),
        json!({"payload": "BGhp", "encoding": "avro"}),
    )
    .await;
    post(
        "/covenant/v1/subjects/base-value/versions/1/live".into(),
        json!({}),
    )
    .await;
    // A stored data profile.
    let profile = json!({"format": "covenant-profile", "version": 1, "records": 2,
        "paths": {"/id": {"present": 2, "nonNull": 2, "types": {"string": 2},
            "distinct": base64_registers()}}});
    post(
        "/covenant/v1/subjects/base-value/profiles?from=1764460800000&to=1764547200000".into(),
        profile,
    )
    .await;
    // A schema fetch, recorded as a read.
    ok(base, "GET", "/subjects/orders-value/versions/1", None).await;
    dep
}

/// An empty distinct-count sketch: 1,024 zero registers in base64.
fn base64_registers() -> String {
    "A".repeat(1366) + "=="
}

/// What the governance routes answer, for comparison before and after a move.
async fn governance_answers(base: &str, dep: i64) -> Vec<serde_json::Value> {
    let range = format!("from={}&to={}", T0 - DAY_MS, T0 + 3 * DAY_MS);
    let mut out = vec![
        ok(
            base,
            "GET",
            &format!("/covenant/v1/deprecations/{dep}"),
            None,
        )
        .await,
        ok(base, "GET", "/covenant/v1/consumers", None).await,
        ok(
            base,
            "GET",
            &format!("/covenant/v1/usage?subject=orders-value&{range}"),
            None,
        )
        .await,
        ok(
            base,
            "GET",
            &format!("/covenant/v1/usage/counts?subject=orders-value&{range}"),
            None,
        )
        .await,
        ok(base, "GET", &format!("/covenant/v1/findings?{range}"), None).await,
        ok(
            base,
            "GET",
            "/covenant/v1/subjects/orders-value/readers",
            None,
        )
        .await,
        ok(
            base,
            "GET",
            "/covenant/v1/subjects/base-value/versions/1/samples?includePayload=true",
            None,
        )
        .await,
    ];
    out.push(
        ok(
            base,
            "POST",
            "/covenant/v1/subjects/orders-value/removal-gate",
            Some(json!({"fields": ["plan"]})),
        )
        .await,
    );
    out
}

/// The dump without what an import re-stamps: export time and version creation times.
fn same_state(a: &[u8], b: &[u8], hop: &str) {
    let (a, b) = (comparable(a), comparable(b));
    for section in a.as_object().expect("object").keys() {
        assert_eq!(a[section], b[section], "{hop}: section '{section}' differs");
    }
    assert_eq!(a, b, "{hop}");
}

fn import_into(target: &[&str], dump: &Path) {
    let mut args = vec!["import"];
    args.extend_from_slice(target);
    let path = dump.display().to_string();
    args.push(&path);
    covenant(&args);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_state_with_governance_survives_a_move_between_backends() {
    let dir = tempfile::tempdir().expect("dir");
    let clock = dir.path().join("clock");
    std::fs::write(&clock, T0.to_string()).expect("clock");
    let source = dir.path().join("source");
    let (mut server, base) = serve(&source, None, &clock).await;
    let dep = fill(&base, &clock).await;
    let before = governance_answers(&base, dep).await;
    server.kill().expect("stop the source");

    let first = export_dir(&source);
    let dump: serde_json::Value = serde_json::from_slice(&first).expect("json");
    assert_eq!(dump["formatVersion"], 4);
    for (section, at_least) in [
        ("consumers", 3),
        ("deprecations", 1),
        ("findings", 1),
        ("usageReaders", 3),
        ("usageFields", 4),
        ("usageCounts", 3),
        ("schemaReads", 1),
        ("samples", 1),
        ("liveMarks", 1),
        ("profiles", 1),
    ] {
        let n = dump[section].as_array().map_or(0, Vec::len);
        assert!(n >= at_least, "{section}: {n} rows in {dump}");
    }
    let history = &dump["deprecations"][0]["history"];
    assert_eq!(history.as_array().map(Vec::len), Some(3), "{history}");
    let first_path = dir.path().join("first.json");
    std::fs::write(&first_path, &first).expect("write");

    let clock_now = T0 + 2 * DAY_MS;
    std::fs::write(&clock, clock_now.to_string()).expect("clock");
    let (hops, last, served) = match TestDb::create("covenant_transfer_all").await {
        Some(db) => {
            let url = db.url.clone();
            import_into(&["--store", &url], &first_path);
            import_into(&["--store", &url], &first_path);
            let from_pg = covenant(&["export", "--store", &url]).stdout;
            same_state(&first, &from_pg, "embedded -> PostgreSQL (imported twice)");
            let (pg_server, pg_base) = serve(&dir.path().join("unused"), Some(&url), &clock).await;
            let on_pg = governance_answers(&pg_base, dep).await;
            drop(pg_server);
            let pg_path = dir.path().join("from-pg.json");
            std::fs::write(&pg_path, &from_pg).expect("write");
            let back = dir.path().join("back");
            import_into(&["--data-dir", &back.display().to_string()], &pg_path);
            db.drop_db().await;
            (
                "embedded -> PostgreSQL -> embedded",
                export_dir(&back),
                Some(on_pg),
            )
        }
        None => {
            eprintln!("COVENANT_TEST_POSTGRES is not set; moving between embedded stores only");
            let back = dir.path().join("back");
            let target = back.display().to_string();
            import_into(&["--data-dir", &target], &first_path);
            import_into(&["--data-dir", &target], &first_path);
            (
                "embedded -> embedded (imported twice)",
                export_dir(&back),
                None,
            )
        }
    };
    same_state(&first, &last, hops);
    let back = dir.path().join("back");
    let (_server, back_base) = serve(&back, None, &clock).await;
    let after = governance_answers(&back_base, dep).await;
    // The source answered at day 2 of its clock; the copies answer at the same day.
    for (i, (b, a)) in before.iter().zip(&after).enumerate() {
        assert_eq!(b, a, "governance answer {i} differs after the move");
    }
    if let Some(on_pg) = served {
        assert_eq!(before, on_pg, "governance answers on PostgreSQL");
    }
    // A record held with other content is reported, not overwritten.
    let mut changed = dump.clone();
    changed["deprecations"][0]["old_promise"] = json!("something else");
    let changed_path = dir.path().join("changed.json");
    std::fs::write(&changed_path, changed.to_string()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["import", "--data-dir", &back.display().to_string()])
        .arg(&changed_path)
        .output()
        .expect("run covenant");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "deprecation {dep} already exists with other content"
        )),
        "{stderr}"
    );
    assert_eq!(
        ok(
            &back_base,
            "GET",
            &format!("/covenant/v1/deprecations/{dep}"),
            None
        )
        .await,
        before[0],
        "the held record is unchanged"
    );
    println!(
        "{hops}: {} consumers, {} deprecations, {} findings, {} usage rows, {} samples, {} live marks, \
         {} audit entries identical; {} governance answers identical",
        dump["consumers"].as_array().map_or(0, Vec::len),
        dump["deprecations"].as_array().map_or(0, Vec::len),
        dump["findings"].as_array().map_or(0, Vec::len),
        ["usageReaders", "usageFields", "usageCounts", "schemaReads"]
            .iter()
            .map(|k| dump[*k].as_array().map_or(0, Vec::len))
            .sum::<usize>(),
        dump["samples"].as_array().map_or(0, Vec::len),
        dump["liveMarks"].as_array().map_or(0, Vec::len),
        dump["audit"].as_array().map_or(0, Vec::len),
        before.len()
    );
}

#[test]
fn import_refuses_a_dump_from_a_newer_format() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("next.json");
    std::fs::write(
        &path,
        r#"{"format":"covenant-export","formatVersion":5,"schemas":[],"subjects":[]}"#,
    )
    .expect("write");
    let store = dir.path().join("store");
    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["import", "--data-dir", &store.display().to_string()])
        .arg(&path)
        .output()
        .expect("run covenant");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("format version 5 is newer than this build"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    assert!(!store.exists(), "nothing was written");
}
