//! `covenant migrate` between real processes: a `covenant serve` as the source, another one or
//! an embedded store as the destination, and `_schemas` topic dumps written from the documented
//! record formats.

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use support::{Serve, TestServer, covenant, s, write};

const ADDRESS: &str = r#"{"type":"record","name":"Address","namespace":"com.example","fields":[{"name":"city","type":"string"}]}"#;
const ORDER: &str = r#"{"type":"record","name":"Order","namespace":"com.example","fields":[{"name":"id","type":"long"},{"name":"ship_to","type":"com.example.Address"}]}"#;
const CURRENCY: &str =
    r#"{"type":"enum","name":"Currency","namespace":"com.example","symbols":["EUR","USD"]}"#;
const INVOICE: &str = r#"{"type":"record","name":"Invoice","namespace":"com.example","fields":[{"name":"currency","type":"com.example.Currency"}]}"#;
const COMMON_PROTO: &str =
    "syntax = \"proto3\";\npackage shop;\nmessage Money {\n  int64 cents = 1;\n}\n";
const PRICE_PROTO: &str = "syntax = \"proto3\";\npackage shop;\nimport \"money.proto\";\nmessage Price {\n  shop.Money amount = 1;\n}\n";

async fn post(server: &TestServer, subject: &str, body: Value) -> Value {
    let (status, answer) = server
        .call("POST", &format!("/subjects/{subject}/versions"), Some(body))
        .await;
    assert_eq!(status, 200, "{subject}: {answer}");
    answer
}

async fn put(server: &TestServer, path: &str, body: Value) {
    let (status, answer) = server.call("PUT", path, Some(body)).await;
    assert_eq!(status, 200, "{path}: {answer}");
}

async fn delete(server: &TestServer, path: &str) {
    let (status, answer) = server.call("DELETE", path, None).await;
    assert_eq!(status, 200, "{path}: {answer}");
}

/// Three formats, references, a hard-deleted id (a gap), soft deletes, configs and modes.
async fn fill(source: &TestServer) {
    post(source, "scratch", json!({"schema": "\"string\""})).await;
    delete(source, "/subjects/scratch").await;
    delete(source, "/subjects/scratch?permanent=true").await;
    post(source, "types.address", json!({"schema": ADDRESS})).await;
    let reference =
        json!([{"name": "com.example.Address", "subject": "types.address", "version": 1}]);
    post(
        source,
        "orders-value",
        json!({"schema": ORDER, "references": reference}),
    )
    .await;
    put(
        source,
        "/config/events-value",
        json!({"compatibility": "NONE"}),
    )
    .await;
    for n in 1..=3 {
        let schema = json!({"type": "object", "properties": {format!("f{n}"): {"type": "string"}}});
        let body = json!({"schemaType": "JSON", "schema": schema.to_string()});
        post(source, "events-value", body).await;
    }
    delete(source, "/subjects/events-value/versions/2").await;
    post(
        source,
        "types.money",
        json!({"schemaType": "PROTOBUF", "schema": COMMON_PROTO}),
    )
    .await;
    let reference = json!([{"name": "money.proto", "subject": "types.money", "version": 1}]);
    let body = json!({"schemaType": "PROTOBUF", "schema": PRICE_PROTO, "references": reference});
    post(source, "price-value", body).await;
    let metadata = json!({"properties": {"owner": "payments"}});
    let rules = json!({"domainRules": [{"name": "positive", "kind": "CONDITION", "mode": "WRITE",
                                       "type": "CEL", "expr": "message > 0"}]});
    post(
        source,
        "retired-value",
        json!({"schema": "\"long\"", "metadata": metadata, "ruleSet": rules}),
    )
    .await;
    delete(source, "/subjects/retired-value").await;
    // A soft-deleted version referred to by another soft-deleted one: the referrer must be
    // written while its reference is still live, and deleted first.
    post(source, "types.currency", json!({"schema": CURRENCY})).await;
    let reference =
        json!([{"name": "com.example.Currency", "subject": "types.currency", "version": 1}]);
    post(
        source,
        "invoices-value",
        json!({"schema": INVOICE, "references": reference}),
    )
    .await;
    delete(source, "/subjects/invoices-value/versions/1").await;
    delete(source, "/subjects/types.currency/versions/1").await;
    put(
        source,
        "/config/orders-value",
        json!({"compatibility": "FULL"}),
    )
    .await;
    put(source, "/mode/types.address", json!({"mode": "READONLY"})).await;
}

/// Every id the registry holds (soft-deleted versions included), with `GET /schemas/ids/{id}`.
async fn schemas_by_id(server: &TestServer) -> BTreeMap<i64, Value> {
    let (_, subjects) = server.call("GET", "/subjects?deleted=true", None).await;
    let mut out = BTreeMap::new();
    for subject in subjects.as_array().expect("subjects") {
        let subject = subject.as_str().expect("name");
        let path = format!("/subjects/{subject}/versions?deleted=true");
        let (_, versions) = server.call("GET", &path, None).await;
        for v in versions.as_array().expect("versions") {
            let path = format!("/subjects/{subject}/versions/{v}?deleted=true");
            let (_, body) = server.call("GET", &path, None).await;
            let id = body["id"].as_i64().expect("id");
            let (status, schema) = server
                .call("GET", &format!("/schemas/ids/{id}"), None)
                .await;
            assert_eq!(status, 200, "id {id}: {schema}");
            out.insert(id, schema);
        }
    }
    out
}

/// What distinguishes the registries' states: each subject's live and all versions with ids.
async fn layout(server: &TestServer) -> Vec<(String, Value, Value)> {
    let (_, subjects) = server.call("GET", "/subjects?deleted=true", None).await;
    let mut out = Vec::new();
    for subject in subjects.as_array().expect("subjects") {
        let subject = subject.as_str().expect("name");
        let (_, live) = server
            .call("GET", &format!("/subjects/{subject}/versions"), None)
            .await;
        let path = format!("/subjects/{subject}/versions?deleted=true");
        let (_, all) = server.call("GET", &path, None).await;
        out.push((subject.to_string(), live, all));
    }
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_clean(output: &Output) {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&output.stdout),
        text(&output.stderr)
    );
    assert!(
        text(&output.stdout).contains("verified:"),
        "{}",
        text(&output.stdout)
    );
}

/// `covenant serve` on `dir`, ready for calls.
async fn serve_dir(dir: &Path) -> (Serve, reqwest::Client) {
    let serve = Serve::spawn(dir, |_| {});
    let client = covenant_exporter::client::client();
    support::wait_ready(&client, &serve.base).await;
    (serve, client)
}

async fn get(client: &reqwest::Client, base: &str, path: &str) -> (u16, Value) {
    support::call(client, base, "GET", path, support::V1, None).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_to_a_running_registry_and_to_a_store_keeps_everything() {
    let source = TestServer::start().await;
    let destination = TestServer::start().await;
    fill(&source).await;
    let expected = schemas_by_id(&source).await;
    assert!(
        expected.keys().all(|id| *id > 1),
        "id 1 went with scratch: a gap to keep"
    );

    let to = ["migrate", "--from", &source.base, "--to", &destination.base];
    let first = covenant(&to);
    assert_clean(&first);
    assert_eq!(schemas_by_id(&destination).await, expected);
    assert_eq!(layout(&destination).await, layout(&source).await);
    for (path, key, want) in [
        ("/config/orders-value", "compatibilityLevel", "FULL"),
        ("/config/events-value", "compatibilityLevel", "NONE"),
        ("/mode/types.address", "mode", "READONLY"),
        ("/mode", "mode", "READWRITE"),
    ] {
        let (status, body) = destination.call("GET", path, None).await;
        assert_eq!((status, body[key].as_str()), (200, Some(want)), "{path}");
    }

    let path = "/subjects/retired-value/versions/1?deleted=true";
    let (_, retired) = destination.call("GET", path, None).await;
    assert_eq!(retired["metadata"]["properties"]["owner"], "payments");
    assert_eq!(retired["ruleSet"]["domainRules"][0]["name"], "positive");

    let again = covenant(&to);
    assert_clean(&again);
    assert!(
        text(&again.stderr).contains("wrote 0 versions"),
        "{}",
        text(&again.stderr)
    );
    assert_eq!(
        layout(&destination).await,
        layout(&source).await,
        "no duplicates"
    );

    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    let into_store = covenant(&["migrate", "--from", &source.base, "--data-dir", s(&data)]);
    assert_clean(&into_store);
    let (serve, client) = serve_dir(&data).await;
    for (id, schema) in &expected {
        let (status, body) = get(&client, &serve.base, &format!("/schemas/ids/{id}")).await;
        assert_eq!((status, &body), (200, schema), "id {id}");
    }
    let (_, deleted) = get(&client, &serve.base, "/subjects/events-value/versions").await;
    assert_eq!(deleted, json!([1, 3]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_into_postgres_verifies_and_runs_again_without_duplicates() {
    let Some(db) = support::TestDb::create("covenant_migrate").await else {
        eprintln!("skipped: {} is not set", support::POSTGRES_ENV);
        return;
    };
    let source = TestServer::start().await;
    fill(&source).await;
    let args = ["migrate", "--from", &source.base, "--store", &db.url];
    assert_clean(&covenant(&args));
    let again = covenant(&args);
    assert_clean(&again);
    let stderr = text(&again.stderr);
    assert!(
        stderr.contains("wrote 0 versions (10 already present"),
        "{stderr}"
    );
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_write_nothing_and_conflicts_are_reported_not_overwritten() {
    let source = TestServer::start().await;
    let destination = TestServer::start().await;
    for (subject, schema) in [("a", "\"string\""), ("b", "\"int\""), ("c", "\"long\"")] {
        post(&source, subject, json!({"schema": schema})).await;
    }
    // The destination holds `c` version 1 under id 1 and `b` version 1 as id 2 with other
    // content, so `a` cannot take id 1.
    post(&destination, "c", json!({"schema": "\"float\""})).await;
    post(&destination, "b", json!({"schema": "\"double\""})).await;

    let dry = covenant(&[
        "migrate",
        "--from",
        &source.base,
        "--to",
        &destination.base,
        "--dry-run",
    ]);
    assert_eq!(dry.status.code(), Some(1), "{}", text(&dry.stdout));
    let report = text(&dry.stdout);
    assert!(report.starts_with("dry run: nothing written"), "{report}");
    for line in [
        "missing: version 1 of subject 'a' (id 1)",
        "different: version 1 of subject 'c' (id 3) has id 1",
        "different: schema id 2: the canonical forms differ",
    ] {
        assert!(report.contains(line), "{line} in {report}");
    }
    let (status, _) = destination.call("GET", "/subjects/a/versions", None).await;
    assert_eq!(status, 404, "the dry run wrote nothing");

    let run = covenant(&["migrate", "--from", &source.base, "--to", &destination.base]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stdout));
    let stderr = text(&run.stderr);
    assert!(
        stderr.contains("'c' (id 3) already exists with schema id 1"),
        "{stderr}"
    );
    assert!(stderr.contains("'a' (id 1) was refused"), "{stderr}");
    for (subject, kept) in [("b", "\"double\""), ("c", "\"float\"")] {
        let path = format!("/subjects/{subject}/versions/1");
        let (_, body) = destination.call("GET", &path, None).await;
        assert_eq!(body["schema"], kept, "{subject} is not overwritten");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prefix_moves_only_its_subjects_what_they_refer_to_and_leaves_the_global_settings() {
    let source = TestServer::start().await;
    let destination = TestServer::start().await;
    put(&source, "/config", json!({"compatibility": "NONE"})).await;
    post(&source, "lib", json!({"schema": ADDRESS})).await;
    post(&source, "lib", json!({"schema": CURRENCY})).await;
    let reference = json!([{"name": "com.example.Address", "subject": "lib", "version": 1}]);
    post(
        &source,
        "keep-1",
        json!({"schema": ORDER, "references": reference}),
    )
    .await;
    for (subject, schema) in [("keep-2", "\"long\""), ("other", "\"string\"")] {
        post(&source, subject, json!({"schema": schema})).await;
    }
    put(&source, "/config/keep-2", json!({"compatibility": "FULL"})).await;
    let run = covenant(&[
        "migrate",
        "--from",
        &source.base,
        "--to",
        &destination.base,
        "--subjects",
        "keep-",
    ]);
    assert_clean(&run);
    let (_, subjects) = destination.call("GET", "/subjects", None).await;
    assert_eq!(subjects, json!(["keep-1", "keep-2", "lib"]));
    let (_, lib) = destination
        .call("GET", "/subjects/lib/versions", None)
        .await;
    assert_eq!(lib, json!([1]), "only the version keep-1 refers to");
    let (_, global) = destination.call("GET", "/config", None).await;
    assert_eq!(global["compatibilityLevel"], "BACKWARD");
    let (_, keep) = destination.call("GET", "/config/keep-2", None).await;
    assert_eq!(keep["compatibilityLevel"], "FULL");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_move_with_their_own_ids() {
    let source = TestServer::start().await;
    post(&source, "orders", json!({"schema": ADDRESS})).await;
    post(&source, ":.eu:orders", json!({"schema": CURRENCY})).await;
    post(&source, ":.eu:money", json!({"schema": "\"long\""})).await;
    let reference = json!([{"name": "com.example.Currency", "subject": "orders", "version": 1}]);
    let invoice = json!({"schema": INVOICE, "references": reference});
    post(&source, ":.eu:invoice", invoice).await;
    put(&source, "/config/:.eu:", json!({"compatibility": "NONE"})).await;

    // Everything, into a running registry: ids 1..3 of `.eu` and id 1 of the default context.
    let destination = TestServer::start().await;
    let run = covenant(&["migrate", "--from", &source.base, "--to", &destination.base]);
    assert_clean(&run);
    for path in [
        "/contexts",
        "/subjects",
        "/schemas/ids/1",
        "/schemas/ids/1?subject=:.eu:",
        "/schemas/ids/3?subject=:.eu:invoice",
        "/subjects/:.eu:orders/versions/1/referencedby",
    ] {
        let (status, there) = destination.call("GET", path, None).await;
        assert_eq!(
            (status, there),
            source.call("GET", path, None).await,
            "{path}"
        );
    }
    let (_, level) = destination.call("GET", "/config/:.eu:", None).await;
    assert_eq!(level["compatibilityLevel"], "NONE");

    // One context only, into a store.
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let run = covenant(&[
        "migrate",
        "--from",
        &source.base,
        "--data-dir",
        s(&data),
        "--context",
        "eu",
    ]);
    assert_clean(&run);
    let (serve, client) = serve_dir(&data).await;
    let (_, subjects) = get(&client, &serve.base, "/subjects").await;
    assert_eq!(
        subjects,
        json!([":.eu:invoice", ":.eu:money", ":.eu:orders"])
    );
    let (_, ids) = get(&client, &serve.base, "/schemas/ids/2?subject=:.eu:").await;
    assert_eq!(ids["schema"], "\"long\"");
    let refused = covenant(&[
        "migrate",
        "--from",
        &source.base,
        "--data-dir",
        s(&data),
        "--context",
        "a:b",
    ]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
}

/// An auth file whose `admin` (password `pw`) may do everything, and `reader` only read.
fn admin_auth_file(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("auth.json");
    let file = s(&path);
    for (user, password) in [("admin", "pw\n"), ("reader", "rd\n")] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_covenant"))
            .args(["auth", "add-user", file, user, "--password-stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn auth");
        std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), password.as_bytes())
            .expect("password");
        assert!(child.wait().expect("auth").success());
    }
    let grants = [
        ("admin", "Read", "Subject:.*"),
        ("admin", "Write", "Subject:.*"),
        ("admin", "Delete", "Subject:.*"),
        ("admin", "Admin", "Subject:.*"),
        ("admin", "Read", "Config:"),
        ("admin", "Admin", "Config:"),
        ("reader", "Read", "Subject:.*"),
        ("reader", "Read", "Config:"),
    ];
    for (user, operation, resource) in grants {
        let out = covenant(&["auth", "grant", file, user, operation, resource]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_reach_both_registries() {
    let dir = tempfile::tempdir().expect("dir");
    let auth = admin_auth_file(dir.path());
    let with_auth = |c: &mut Command| {
        c.arg("--auth-file").arg(&auth);
    };
    let source = Serve::spawn(&dir.path().join("source"), with_auth);
    let destination = Serve::spawn(&dir.path().join("destination"), with_auth);
    let client = covenant_exporter::client::client();
    support::wait_ready(&client, &source.base).await;
    support::wait_ready(&client, &destination.base).await;
    let registered = client
        .post(format!("{}/subjects/orders-value/versions", source.base))
        .basic_auth("admin", Some("pw"))
        .header("content-type", support::V1)
        .body(json!({"schema": ORDER.replace("com.example.Address", "string")}).to_string())
        .send()
        .await
        .expect("register");
    assert_eq!(registered.status(), 200);

    let anonymous = covenant(&["migrate", "--from", &source.base, "--to", &destination.base]);
    assert_eq!(anonymous.status.code(), Some(2));
    assert!(
        text(&anonymous.stderr).contains("HTTP 401"),
        "{}",
        text(&anonymous.stderr)
    );

    let from = [
        "migrate",
        "--from",
        &source.base,
        "--basic-auth",
        "admin:pw",
    ];
    let read_only = covenant(
        &[
            &from[..],
            &["--to", &destination.base, "--to-basic-auth", "reader:rd"],
        ]
        .concat(),
    );
    assert_eq!(
        read_only.status.code(),
        Some(2),
        "{}",
        text(&read_only.stderr)
    );
    assert!(
        text(&read_only.stderr).contains("HTTP 403"),
        "{}",
        text(&read_only.stderr)
    );

    let admin = covenant(
        &[
            &from[..],
            &["--to", &destination.base, "--to-basic-auth", "admin:pw"],
        ]
        .concat(),
    );
    assert_clean(&admin);
    let copied = client
        .get(format!(
            "{}/subjects/orders-value/versions/1",
            destination.base
        ))
        .basic_auth("reader", Some("rd"))
        .send()
        .await
        .expect("read");
    let copied: Value = copied.json().await.expect("json");
    assert_eq!(copied["id"], 1);
}

#[test]
fn usage_and_connection_errors_exit_2_with_one_line() {
    let no_target = covenant(&["migrate", "--from", "http://127.0.0.1:9"]);
    assert_eq!(no_target.status.code(), Some(2));
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    let port = support::free_port();
    let unreachable = covenant(&[
        "migrate",
        "--from",
        &format!("http://127.0.0.1:{port}"),
        "--data-dir",
        s(&data),
    ]);
    assert_eq!(unreachable.status.code(), Some(2));
    let stderr = text(&unreachable.stderr);
    assert!(stderr.starts_with("covenant: cannot reach"), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        !data.exists(),
        "no store is created when the source cannot be read"
    );
    let empty = write(dir.path(), "empty.tsv", "");
    let to_nowhere = covenant(&[
        "migrate",
        "--from-topic-dump",
        s(&empty),
        "--to",
        &format!("http://127.0.0.1:{port}"),
    ]);
    assert_eq!(to_nowhere.status.code(), Some(2));
    let stderr = text(&to_nowhere.stderr);
    assert!(stderr.starts_with("covenant: cannot reach"), "{stderr}");
    let no_file = covenant(&[
        "migrate",
        "--from-topic-dump",
        "/nonexistent/dump.tsv",
        "--data-dir",
        s(&data),
    ]);
    assert_eq!(no_file.status.code(), Some(2));
    assert!(text(&no_file.stderr).starts_with("covenant: cannot read '/nonexistent/dump.tsv'"));
    assert!(
        !data.exists(),
        "no store is created for a dump that cannot be read"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_killed_half_way_completes_when_run_again() {
    const SUBJECTS: usize = 120;
    let source = TestServer::start().await;
    let destination = TestServer::start().await;
    for n in 0..SUBJECTS {
        let schema = json!({"type": "record", "name": format!("R{n}"), "fields": []});
        post(
            &source,
            &format!("s{n:03}"),
            json!({"schema": schema.to_string()}),
        )
        .await;
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["migrate", "--parallel", "1", "--from", &source.base])
        .args(["--to", &destination.base])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn migrate");
    let stderr = child.stderr.take().expect("stderr");
    let started = BufReader::new(stderr)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("wrote versions 10/"));
    assert!(started, "the migration reported writing");
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let (_, held) = destination.call("GET", "/subjects", None).await;
    let held = held.as_array().map_or(0, Vec::len);
    assert!(
        (10..SUBJECTS).contains(&held),
        "killed half-way: {held} of {SUBJECTS} subjects were written"
    );

    let rerun = covenant(&["migrate", "--from", &source.base, "--to", &destination.base]);
    assert_clean(&rerun);
    assert!(
        text(&rerun.stderr).contains("already present"),
        "{}",
        text(&rerun.stderr)
    );
    assert_eq!(layout(&destination).await, layout(&source).await);
    assert_eq!(
        schemas_by_id(&destination).await,
        schemas_by_id(&source).await
    );
    let (_, mode) = destination.call("GET", "/mode", None).await;
    assert_eq!(
        mode["mode"], "READWRITE",
        "IMPORT mode does not outlive the migration"
    );
}

/// One `_schemas` record as `kcat -f '%k\t%s\n'` prints it.
fn record(key: Value, value: Option<Value>) -> String {
    let value = value.map(|v| v.to_string()).unwrap_or_default();
    format!("{key}\t{value}")
}

fn schema_record(subject: &str, version: i64, id: i64, extra: Value) -> String {
    let mut value = json!({"subject": subject, "version": version, "id": id, "deleted": false});
    value
        .as_object_mut()
        .expect("object")
        .extend(extra.as_object().expect("object").clone());
    record(
        json!({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}),
        Some(value),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_dump_restores_the_state_its_records_leave() {
    let dir = tempfile::tempdir().expect("dir");
    let money = json!({"schemaType": "PROTOBUF", "schema": COMMON_PROTO});
    let price = json!({"schemaType": "PROTOBUF", "schema": PRICE_PROTO,
        "references": [{"name": "money.proto", "subject": "types.money", "version": 1}]});
    let lines = [
        record(json!({"keytype": "NOOP", "magic": 0}), None),
        record(
            json!({"keytype": "CONFIG", "subject": null, "magic": 0}),
            Some(json!({"compatibilityLevel": "FULL"})),
        ),
        schema_record("users-value", 1, 11, json!({"schema": ADDRESS})),
        schema_record("users-value", 2, 12, json!({"schema": "\"string\""})),
        schema_record("price-value", 1, 21, price),
        schema_record("types.money", 1, 20, money),
        schema_record("tmp", 1, 30, json!({"schema": "\"int\""})),
        // Soft-delete of one version: the record written again with `deleted`.
        schema_record(
            "users-value",
            1,
            11,
            json!({"schema": ADDRESS, "deleted": true}),
        ),
        // Hard delete of `tmp`: a tombstone.
        record(
            json!({"keytype": "SCHEMA", "subject": "tmp", "version": 1, "magic": 1}),
            None,
        ),
        schema_record("legacy", 1, 40, json!({"schema": "\"bytes\""})),
        schema_record("legacy", 2, 41, json!({"schema": "\"float\""})),
        record(
            json!({"keytype": "DELETE_SUBJECT", "subject": "legacy", "magic": 0}),
            Some(json!({"subject": "legacy", "version": 2})),
        ),
        record(
            json!({"keytype": "CONFIG", "subject": "users-value", "magic": 0}),
            Some(json!({"subject": "users-value", "compatibilityLevel": "NONE"})),
        ),
        record(
            json!({"keytype": "MODE", "subject": "types.money", "magic": 0}),
            Some(json!({"subject": "types.money", "mode": "READONLY"})),
        ),
        record(
            json!({"keytype": "CLEAR_SUBJECT", "subject": "tmp", "magic": 0}),
            Some(json!({"subject": "tmp"})),
        ),
    ];
    let dump = write(dir.path(), "schemas.tsv", &(lines.join("\n") + "\n"));
    let data = dir.path().join("data");
    let dry = covenant(&[
        "migrate",
        "--from-topic-dump",
        s(&dump),
        "--data-dir",
        s(&data),
        "--dry-run",
    ]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stderr));
    assert!(text(&dry.stdout).contains("missing: version 2 of subject 'users-value' (id 12)"));
    assert!(!data.exists(), "a dry run creates no store");
    let run = covenant(&[
        "migrate",
        "--from-topic-dump",
        s(&dump),
        "--data-dir",
        s(&data),
    ]);
    assert_clean(&run);

    let (serve, client) = serve_dir(&data).await;
    let base = serve.base.clone();
    let (_, users) = get(&client, &base, "/subjects/users-value/versions").await;
    assert_eq!(users, json!([2]), "version 1 is soft-deleted");
    let (_, body) = get(
        &client,
        &base,
        "/subjects/users-value/versions/1?deleted=true",
    )
    .await;
    assert_eq!(body["id"], 11);
    let (_, price) = get(&client, &base, "/schemas/ids/21").await;
    assert_eq!(price["references"][0]["subject"], "types.money");
    assert_eq!(price["schemaType"], "PROTOBUF");
    let (status, _) = get(&client, &base, "/schemas/ids/30").await;
    assert_eq!(status, 404, "the tombstone removed tmp");
    let (_, legacy) = get(&client, &base, "/subjects?deleted=true").await;
    assert!(legacy.as_array().expect("list").contains(&json!("legacy")));
    let (_, live) = get(&client, &base, "/subjects").await;
    assert!(!live.as_array().expect("list").contains(&json!("legacy")));
    for (path, key, want) in [
        ("/config", "compatibilityLevel", "FULL"),
        ("/config/users-value", "compatibilityLevel", "NONE"),
        ("/mode/types.money", "mode", "READONLY"),
    ] {
        let (status, body) = get(&client, &base, path).await;
        assert_eq!((status, body[key].as_str()), (200, Some(want)), "{path}");
    }

    // The same dump into a running registry gives the same ids. A registration there stores
    // .proto text trimmed, while a store keeps the record's text as it was.
    let running = TestServer::start().await;
    assert_clean(&covenant(&[
        "migrate",
        "--from-topic-dump",
        s(&dump),
        "--to",
        &running.base,
    ]));
    // A write over REST stores Protobuf text trimmed, a write into the store keeps it as
    // given; the guid, derived from the stored text, follows it.
    let trimmed = |(status, mut body): (u16, Value)| {
        let text = body["schema"].as_str().map(|t| t.trim_end().to_string());
        body["schema"] = json!(text);
        if let Some(fields) = body.as_object_mut() {
            fields.remove("guid");
        }
        (status, body)
    };
    for id in [11, 12, 20, 21, 40, 41] {
        let path = format!("/schemas/ids/{id}");
        let over_rest = trimmed(running.call("GET", &path, None).await);
        assert_eq!(
            over_rest,
            trimmed(get(&client, &base, &path).await),
            "id {id}"
        );
    }

    let bad = write(
        dir.path(),
        "bad.tsv",
        "{\"keytype\":\"SCHEMA\"}\tnot json\n",
    );
    let refused = covenant(&[
        "migrate",
        "--from-topic-dump",
        s(&bad),
        "--data-dir",
        s(&data),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    let stderr = text(&refused.stderr);
    assert!(
        stderr.starts_with("covenant: topic dump line 1"),
        "{stderr}"
    );
}
