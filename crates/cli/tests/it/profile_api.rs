//! Data profiles in a running registry: stored over time, their trend and findings (with the
//! subject's thresholds), the population gauge, access control, and the way from a promotion
//! finding to a judged next version through `covenant profile push` and `propose`.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use support::{Serve, TestDb, V1, covenant, s, write};

const SUBJECT: &str = "silver-instruments-value";
const PATH: &str = "/vendor_data/marginTradingAllowed";

/// The silver table of the seed: snake_case columns and the `vendor_data` escape hatch.
const SILVER: &str = r#"{"type":"record","name":"Instrument","namespace":"refdata","fields":[
 {"name":"instrument_id","type":"string"},
 {"name":"symbol","type":"string"},
 {"name":"source_system","type":"string"},
 {"name":"vendor_data","type":["null","string"],"default":null}]}"#;

/// Bronze records of `exchange`: `marginTradingAllowed` in `with` of every ten, a key of
/// this exchange alone in the others.
fn bronze(exchange: &str, n: usize, with: usize) -> Vec<Value> {
    (0..n)
        .map(|i| {
            let vendor = if i % 10 < with {
                json!({"marginTradingAllowed": i % 3 == 0})
            } else {
                json!({format!("{exchange}Tier"): 1})
            };
            json!({
                "instrument_id": format!("{exchange}-{i}"),
                "symbol": "BTCUSDT",
                "source_system": exchange,
                "vendor_data": vendor.to_string(),
            })
        })
        .collect()
}

/// The profile document `covenant profile` writes for `records`.
fn profile_of(records: &[Value]) -> Value {
    let mut profiler = covenant_profile::Profiler::new(covenant_profile::ProfileOptions {
        group_by: Some("source_system".into()),
        escape_hatches: vec!["vendor_data".into()],
        ..Default::default()
    });
    for r in records {
        profiler.observe(r);
    }
    serde_json::to_value(profiler.finish()).expect("profile JSON")
}

struct Api {
    base: String,
    client: reqwest::Client,
}

impl Api {
    async fn call_as(
        &self,
        user: Option<&str>,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, String) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.client.request(method, format!("{}{path}", self.base));
        if let Some(user) = user {
            request = request.basic_auth(user, Some(format!("{user}-pass")));
        }
        if let Some(body) = body {
            request = request.header("content-type", V1).body(body.to_string());
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let (status, text) = self.call_as(None, method, path, body).await;
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }
}

fn profiles(rest: &str) -> String {
    format!("/covenant/v1/subjects/{SUBJECT}/profiles{rest}")
}

/// Two profiles stored out of order, their listing, one read back, the trend of the key over
/// both, findings under the subject's thresholds and per-request overrides, the gauge, the
/// audit trail and refusals of bad input.
async fn profiles_over_time(api: &Api) {
    let (status, r) = api
        .call(
            "POST",
            &format!("/subjects/{SUBJECT}/versions"),
            Some(json!({"schema": SILVER})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let (status, none) = api.call("GET", &profiles("/findings"), None).await;
    assert_eq!(
        (status, &none["error_code"]),
        (404, &json!(40451)),
        "{none}"
    );
    let mut february = bronze("binance", 50, 8);
    february.extend(bronze("kraken", 50, 8));
    let january: Vec<Value> = bronze("binance", 100, 4);

    let (status, later) = api
        .call(
            "POST",
            &profiles("?from=2026-02-01T00:00:00Z&to=2026-02-02T00:00:00Z"),
            Some(profile_of(&february)),
        )
        .await;
    assert_eq!(status, 200, "{later}");
    assert_eq!(later["records"], 100);
    assert_eq!(later["from"], 1_769_904_000_000_i64);
    let (status, earlier) = api
        .call(
            "POST",
            &profiles("?from=1767225600000&to=1767312000000"),
            Some(profile_of(&january)),
        )
        .await;
    assert_eq!(status, 200, "{earlier}");

    let (_, list) = api.call("GET", &profiles(""), None).await;
    let ids: Vec<&Value> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|p| &p["id"])
        .collect();
    assert_eq!(ids, [&earlier["id"], &later["id"]], "oldest window first");
    let (_, page) = api.call("GET", &profiles("?offset=1&limit=1"), None).await;
    assert_eq!(page.as_array().map(Vec::len), Some(1));
    assert_eq!(page[0]["id"], later["id"]);

    let (status, one) = api
        .call("GET", &profiles(&format!("/{}", later["id"])), None)
        .await;
    assert_eq!(status, 200, "{one}");
    assert_eq!(one["profile"]["format"], "covenant-profile");
    assert_eq!(one["profile"]["records"], 100);
    let (status, missing) = api.call("GET", &profiles("/999999"), None).await;
    assert_eq!((status, &missing["error_code"]), (404, &json!(40450)));
    let (status, bad) = api.call("GET", &profiles("/first"), None).await;
    assert_eq!((status, &bad["error_code"]), (422, &json!(42260)), "{bad}");

    let (status, trend) = api
        .call("GET", &profiles(&format!("/trend?path={PATH}")), None)
        .await;
    assert_eq!(status, 200, "{trend}");
    let shares: Vec<f64> = trend["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["population"].as_f64().expect("population"))
        .collect();
    assert_eq!(shares, [0.4, 0.8], "{trend}");
    assert_eq!(trend["points"][1]["nonNull"], 80);

    let promoted = |findings: &Value| {
        findings["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .any(|f| f["rule"] == "PROFILE_PROMOTION_CANDIDATE" && f["path"] == PATH)
    };
    let (status, found) = api.call("GET", &profiles("/findings"), None).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(
        found["profileId"], later["id"],
        "the latest window is judged"
    );
    assert_eq!(found["version"], 1);
    assert!(promoted(&found), "{found}");

    let (status, r) = api
        .call(
            "PUT",
            &format!("/config/{SUBJECT}"),
            Some(json!({"profileThresholds": {"promoteShare": 0.9, "promoteGroups": 3}})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let (_, strict) = api.call("GET", &profiles("/findings"), None).await;
    assert_eq!(strict["thresholds"]["promoteShare"], 0.9);
    assert_eq!(strict["thresholds"]["promoteGroups"], 3);
    assert_eq!(
        strict["thresholds"]["removeShare"], 0.05,
        "unset keys keep the default"
    );
    assert!(
        !promoted(&strict),
        "80% of 2 sources is below 90% and 3: {strict}"
    );
    let (_, overridden) = api
        .call("GET", &profiles("/findings?promoteShare=0.75"), None)
        .await;
    assert!(promoted(&overridden), "{overridden}");
    let (status, bad) = api
        .call("GET", &profiles("/findings?promoteShare=2"), None)
        .await;
    assert_eq!((status, &bad["error_code"]), (422, &json!(42260)), "{bad}");
    let (status, bad) = api
        .call(
            "PUT",
            &format!("/config/{SUBJECT}"),
            Some(json!({"profileThresholds": {"promoteShare": "most"}})),
        )
        .await;
    assert_eq!(status, 422, "{bad}");

    let mut newer = profile_of(&january);
    newer["version"] = json!(99);
    let (status, refused) = api.call("POST", &profiles(""), Some(newer)).await;
    assert_eq!((status, &refused["error_code"]), (422, &json!(42260)));
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains("version 99"),
        "{refused}"
    );
    let (status, refused) = api
        .call(
            "POST",
            &profiles("?to=tomorrow"),
            Some(profile_of(&january)),
        )
        .await;
    assert_eq!(status, 422, "{refused}");
    let (status, refused) = api
        .call(
            "POST",
            "/covenant/v1/subjects/nobody/profiles",
            Some(profile_of(&january)),
        )
        .await;
    assert_eq!((status, &refused["error_code"]), (404, &json!(40401)));
    let (status, refused) = api.call("GET", &profiles("/trend"), None).await;
    assert_eq!(status, 422, "{refused}");

    let (_, metrics) = api.call_as(None, "GET", "/metrics", None).await;
    let series =
        format!("covenant_profile_population{{subject=\"{SUBJECT}\",path=\"{PATH}\"}} 0.8");
    assert!(metrics.contains(&series), "{metrics}");

    let (_, trail) = api
        .call("GET", "/covenant/v1/audit?operation=profile.add", None)
        .await;
    let entries = trail["entries"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        entries.len(),
        2,
        "one entry per stored profile, none for refusals: {trail}"
    );

    for query in ["", "?permanent=true"] {
        let (status, r) = api
            .call("DELETE", &format!("/subjects/{SUBJECT}{query}"), None)
            .await;
        assert_eq!(status, 200, "{r}");
    }
    let (status, r) = api
        .call(
            "POST",
            &format!("/subjects/{SUBJECT}/versions"),
            Some(json!({"schema": SILVER})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let (_, list) = api.call("GET", &profiles(""), None).await;
    assert_eq!(
        list,
        json!([]),
        "a subject created again starts without profiles"
    );
    let (_, metrics) = api.call_as(None, "GET", "/metrics", None).await;
    assert!(
        !metrics.contains("covenant_profile_population{"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_over_time_on_sqlite() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    let api = Api {
        base: serve.base.clone(),
        client: covenant_exporter::client::client(),
    };
    support::wait_ready(&api.client, &api.base).await;
    profiles_over_time(&api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_over_time_on_postgres() {
    let Some(db) = TestDb::create("covenant_profiles").await else {
        eprintln!(
            "skipping: set {} to run on PostgreSQL",
            support::POSTGRES_ENV
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let url = db.url.clone();
    let serve = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--store").arg(&url);
    });
    let api = Api {
        base: serve.base.clone(),
        client: covenant_exporter::client::client(),
    };
    support::wait_ready(&api.client, &api.base).await;
    profiles_over_time(&api).await;
    drop(serve);
    db.drop_db().await;
}

fn covenant_auth(args: &[&str], stdin: &str) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("spawn covenant");
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin.as_bytes()).expect("stdin");
    drop(input);
    assert!(child.wait().expect("wait").success(), "covenant {args:?}");
}

/// Storing takes `Govern` on the subject, reading `Read`; a caller without `Read` learns
/// nothing of the subject's profiles, here or on `/metrics`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_follow_subject_permissions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let auth = dir.path().join("auth.json");
    let file = s(&auth);
    for user in ["admin", "reader", "outsider"] {
        covenant_auth(
            &["auth", "add-user", file, user, "--password-stdin"],
            &format!("{user}-pass\n"),
        );
    }
    covenant_auth(&["auth", "grant", file, "admin", "Admin", "Subject:.*"], "");
    covenant_auth(&["auth", "grant", file, "admin", "Admin", "Config:"], "");
    covenant_auth(
        &[
            "auth",
            "grant",
            file,
            "reader",
            "Read",
            &format!("Subject:{SUBJECT}"),
        ],
        "",
    );
    covenant_auth(
        &[
            "auth",
            "grant",
            file,
            "outsider",
            "Read",
            "Subject:other-.*",
        ],
        "",
    );
    covenant_auth(&["auth", "grant", file, "outsider", "Read", "Config:"], "");
    let serve = Serve::spawn(&dir.path().join("data"), |c| {
        c.arg("--auth-file").arg(&auth);
    });
    let api = Api {
        base: serve.base.clone(),
        client: covenant_exporter::client::client(),
    };
    support::wait_ready(&api.client, &api.base).await;
    let admin = Some("admin");
    let (status, r) = api
        .call_as(
            admin,
            "POST",
            &format!("/subjects/{SUBJECT}/versions"),
            Some(json!({"schema": SILVER})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let document = profile_of(&bronze("binance", 10, 8));
    let (status, r) = api
        .call_as(
            Some("reader"),
            "POST",
            &profiles(""),
            Some(document.clone()),
        )
        .await;
    assert_eq!(status, 403, "Read does not store profiles: {r}");
    let (status, stored) = api
        .call_as(admin, "POST", &profiles(""), Some(document))
        .await;
    assert_eq!(status, 200, "{stored}");
    let id: Value = serde_json::from_str(&stored).expect("json");
    for path in [
        profiles(""),
        profiles(&format!("/{}", id["id"])),
        profiles(&format!("/trend?path={PATH}")),
        profiles("/findings"),
    ] {
        let (status, text) = api.call_as(Some("reader"), "GET", &path, None).await;
        assert_eq!(status, 200, "{path}: {text}");
        let (status, text) = api.call_as(Some("outsider"), "GET", &path, None).await;
        assert_eq!(status, 403, "{path}: {text}");
        assert!(
            !text.contains("marginTradingAllowed"),
            "{path} leaks: {text}"
        );
    }
    let (status, metrics) = api.call_as(Some("outsider"), "GET", "/metrics", None).await;
    assert_eq!(status, 200, "{metrics}");
    assert!(!metrics.contains(SUBJECT), "{metrics}");
    let (_, metrics) = api.call_as(admin, "GET", "/metrics", None).await;
    assert!(
        metrics.contains(&format!("subject=\"{SUBJECT}\"")),
        "{metrics}"
    );
}

fn jsonl(dir: &Path, name: &str, records: &[Value]) -> std::path::PathBuf {
    let text: Vec<String> = records.iter().map(Value::to_string).collect();
    write(dir, name, &(text.join("\n") + "\n"))
}

/// The seed's instrument example from end to end: `marginTradingAllowed` in `vendor_data`
/// for 80 % of Binance and Kraken records becomes a promotion candidate, `propose` writes the
/// next Avro version with `margin_trading_allowed` optional, and the registry judges it
/// BACKWARD compatible (and registers it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promotion_candidate_becomes_a_backward_compatible_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    let api = Api {
        base: serve.base.clone(),
        client: covenant_exporter::client::client(),
    };
    support::wait_ready(&api.client, &api.base).await;
    let (status, r) = api
        .call(
            "POST",
            &format!("/subjects/{SUBJECT}/versions"),
            Some(json!({"schema": SILVER})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let mut records = bronze("binance", 50, 8);
    records.extend(bronze("kraken", 50, 8));
    let data = jsonl(dir.path(), "bronze.jsonl", &records);
    let profile = dir.path().join("profile.json");
    let out = covenant(&[
        "profile",
        s(&data),
        "--group-by",
        "source_system",
        "--escape-hatch",
        "vendor_data",
        "-o",
        s(&profile),
    ]);
    let findings = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{findings}");
    assert!(
        findings.contains("PROFILE_PROMOTION_CANDIDATE /vendor_data/marginTradingAllowed"),
        "{findings}"
    );

    let url = &serve.base;
    let out = covenant(&[
        "profile",
        "push",
        s(&profile),
        "--subject",
        SUBJECT,
        "--url",
        url,
        "--to",
        "2026-02-01T00:00:00Z",
    ]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("100 records"), "{said}");
    let (_, list) = api.call("GET", &profiles(""), None).await;
    assert_eq!(list[0]["to"], 1_769_904_000_000_i64, "{list}");

    let next = dir.path().join("next.avsc");
    let out = covenant(&[
        "profile",
        "propose",
        s(&profile),
        "--subject",
        SUBJECT,
        "--url",
        url,
        "-o",
        s(&next),
    ]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{said} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("verdict: compatible with the latest version (BACKWARD)"),
        "{said}"
    );
    assert!(said.contains("rollout plan:"), "{said}");
    let proposed: Value =
        serde_json::from_str(&std::fs::read_to_string(&next).expect("proposal")).expect("JSON");
    let field = proposed["fields"]
        .as_array()
        .expect("fields")
        .iter()
        .find(|f| f["name"] == "margin_trading_allowed")
        .cloned()
        .unwrap_or_else(|| panic!("no promoted field: {proposed}"));
    assert_eq!(field["type"], json!(["null", "boolean"]));
    assert_eq!(field["default"], Value::Null);
    assert!(
        !proposed.to_string().contains("tier"),
        "keys of one exchange in 20% of its records stay in vendor_data: {proposed}"
    );

    let (status, r) = api
        .call(
            "POST",
            &format!("/subjects/{SUBJECT}/versions"),
            Some(json!({"schema": proposed.to_string()})),
        )
        .await;
    assert_eq!(status, 200, "the registry takes the proposal: {r}");

    let out = covenant(&[
        "profile",
        "propose",
        s(&profile),
        "--subject",
        SUBJECT,
        "--url",
        url,
    ]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no promotion candidates"),
        "promoted fields are not proposed twice: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = covenant(&[
        "profile",
        "push",
        s(&profile),
        "--subject",
        "nobody",
        "--url",
        url,
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// The same way for a `.proto` subject: an `optional` field numbered past the reserved
/// numbers, judged compatible and accepted by the registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protobuf_proposal_takes_the_next_free_number() {
    const PROTO: &str = "syntax = \"proto3\";\npackage refdata;\n\nmessage Instrument {\n  string instrument_id = 1;\n  string source_system = 2;\n  reserved 3 to 4;\n  string vendor_data = 5;\n}\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    let api = Api {
        base: serve.base.clone(),
        client: covenant_exporter::client::client(),
    };
    support::wait_ready(&api.client, &api.base).await;
    let subject = "instruments-proto";
    let (status, r) = api
        .call(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(json!({"schemaType": "PROTOBUF", "schema": PROTO})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let mut records = bronze("binance", 20, 8);
    records.extend(bronze("kraken", 20, 8));
    let profile = write(
        dir.path(),
        "profile.json",
        &profile_of(&records).to_string(),
    );
    let (status, r) = api
        .call(
            "PUT",
            &format!("/config/{subject}"),
            Some(json!({"profileThresholds": {"promoteShare": 0.9, "promoteGroups": 3}})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
    let propose = |extra: &[&str]| {
        let mut args = vec![
            "profile",
            "propose",
            s(&profile),
            "--subject",
            subject,
            "--url",
            &serve.base,
        ];
        args.extend_from_slice(extra);
        covenant(&args)
    };
    let strict = propose(&[]);
    assert!(strict.status.success());
    assert!(
        String::from_utf8_lossy(&strict.stderr).contains("no promotion candidates"),
        "the subject's thresholds apply: {}",
        String::from_utf8_lossy(&strict.stderr)
    );
    assert_eq!(propose(&["--promote-share", "1.5"]).status.code(), Some(2));
    let out = propose(&["--promote-share", "0.75"]);
    let proposed = String::from_utf8_lossy(&out.stdout).to_string();
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{proposed} {report}");
    assert!(
        proposed.contains("optional bool margin_trading_allowed = 6;"),
        "{proposed}"
    );
    assert!(report.contains("verdict: compatible"), "{report}");
    let (status, r) = api
        .call(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(json!({"schemaType": "PROTOBUF", "schema": proposed.trim_end()})),
        )
        .await;
    assert_eq!(status, 200, "{r}");
}

/// A `.proto` subject whose latest version imports registered schemas (two levels deep): the
/// proposal is written against the schema parsed with its references fetched from the
/// registry, takes the next number that is not reserved, is judged with the same references
/// and is accepted by the registry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_protobuf_proposal_resolves_the_schemas_it_imports() {
    const CURRENCY: &str = "syntax = \"proto3\";\npackage refdata;\n\nenum Currency {\n  CURRENCY_UNSPECIFIED = 0;\n  USD = 1;\n}\n";
    const MONEY: &str = "syntax = \"proto3\";\npackage refdata;\n\nimport \"refdata/currency.proto\";\n\nmessage Money {\n  Currency currency = 1;\n  int64 units = 2;\n}\n";
    const INSTRUMENT: &str = "syntax = \"proto3\";\npackage refdata;\n\nimport \"refdata/money.proto\";\n\nmessage Instrument {\n  string instrument_id = 1;\n  string source_system = 2;\n  Money min_notional = 3;\n  string vendor_data = 5;\n  reserved 6 to 8;\n}\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    let api = Api {
        base: serve.base.clone(),
        client: covenant_exporter::client::client(),
    };
    support::wait_ready(&api.client, &api.base).await;
    register_proto(&api, "currency-proto", CURRENCY, json!([])).await;
    let money_refs =
        json!([{"name": "refdata/currency.proto", "subject": "currency-proto", "version": 1}]);
    register_proto(&api, "money-proto", MONEY, money_refs).await;
    let refs = json!([{"name": "refdata/money.proto", "subject": "money-proto", "version": 1}]);
    let subject = "instruments-proto-refs";
    register_proto(&api, subject, INSTRUMENT, refs.clone()).await;

    let mut records = bronze("binance", 20, 8);
    records.extend(bronze("kraken", 20, 8));
    let profile = write(
        dir.path(),
        "profile.json",
        &profile_of(&records).to_string(),
    );
    let next = dir.path().join("next.proto");
    let out = covenant(&[
        "profile",
        "propose",
        s(&profile),
        "--subject",
        subject,
        "--url",
        &serve.base,
        "-o",
        s(&next),
    ]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        report.contains("verdict: compatible with the latest version (BACKWARD)"),
        "{report}"
    );
    let proposed = std::fs::read_to_string(&next).expect("proposal");
    assert!(
        proposed.contains("import \"refdata/money.proto\";")
            && proposed.contains("  Money min_notional = 3;"),
        "the import and the field of an imported type stay: {proposed}"
    );
    assert!(
        proposed.contains("optional bool margin_trading_allowed = 9;"),
        "6 to 8 are reserved: {proposed}"
    );
    register_proto(&api, subject, proposed.trim_end(), refs).await;
    let (_, latest) = api
        .call("GET", &format!("/subjects/{subject}/versions/latest"), None)
        .await;
    assert_eq!(latest["version"], 2, "{latest}");
}

async fn register_proto(api: &Api, subject: &str, schema: &str, references: Value) {
    let body = json!({"schemaType": "PROTOBUF", "schema": schema, "references": references});
    let (status, r) = api
        .call("POST", &format!("/subjects/{subject}/versions"), Some(body))
        .await;
    assert_eq!(status, 200, "{subject}: {r}");
}
