//! `covenant profile` on files, as a user runs it: the seed's instrument example (a
//! `vendor_data` key common to two exchanges, a rarely filled column), merging partition
//! profiles, gzip and JSON-array inputs, and bad input ending with exit 2 and a message.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use support::{covenant, s, write};

const INSTRUMENT: &str = r#"{"type": "record", "name": "Instrument", "namespace": "markets",
  "fields": [
    {"name": "symbol", "type": "string"},
    {"name": "exchange", "type": "string"},
    {"name": "tickSize", "type": "double"},
    {"name": "legacy_fee_tier", "type": ["null", "string"], "default": null},
    {"name": "vendor_data", "type": ["null", "string"], "default": null}
  ]}"#;

/// 100 records per exchange. On Binance and Kraken, 80 of 100 carry
/// `marginTradingAllowed` in `vendor_data` (a JSON string, as bronze keeps it); Coinbase
/// never does. `legacy_fee_tier` is filled in 3 % of records; `listingNote` is undeclared.
fn instruments() -> Vec<Value> {
    let mut records = Vec::new();
    for exchange in ["binance", "kraken", "coinbase"] {
        for i in 0..100 {
            let vendor = if exchange != "coinbase" && i < 80 {
                json!({"marginTradingAllowed": i % 2 == 0, "rank": i}).to_string()
            } else {
                json!({"rank": i}).to_string()
            };
            let fee = if exchange == "binance" && i < 9 {
                json!("VIP1")
            } else {
                json!(null)
            };
            let mut record = json!({
                "symbol": format!("{exchange}-{i}"),
                "exchange": exchange,
                "tickSize": 0.01,
                "legacy_fee_tier": fee,
                "vendor_data": vendor,
            });
            if i == 0 {
                record["listingNote"] = json!("new");
            }
            records.push(record);
        }
    }
    records
}

fn json_lines(records: &[Value]) -> String {
    records.iter().map(|r| format!("{r}\n")).collect()
}

fn stdout_json(output: &std::process::Output) -> Value {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON file")
}

#[test]
fn the_instrument_example_names_promotion_and_removal_candidates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "bronze.jsonl", &json_lines(&instruments()));
    let schema = write(dir.path(), "instrument.avsc", INSTRUMENT);
    let profile_path = dir.path().join("profile.json");
    let findings = stdout_json(&covenant(&[
        "profile",
        s(&data),
        "--group-by",
        "exchange",
        "--escape-hatch",
        "vendor_data",
        "--schema",
        s(&schema),
        "-o",
        s(&profile_path),
        "--output",
        "json",
    ]));
    let by_rule = |rule: &str| -> Vec<String> {
        findings
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["rule"] == rule)
            .map(|f| f["path"].as_str().expect("path").to_string())
            .collect()
    };
    // 160 of 300 records (53 %) but two of three exchanges: a candidate by groups.
    assert_eq!(
        by_rule("PROFILE_PROMOTION_CANDIDATE"),
        ["/vendor_data/marginTradingAllowed", "/vendor_data/rank"]
    );
    assert_eq!(
        by_rule("PROFILE_REMOVAL_CANDIDATE"),
        ["/fields/legacy_fee_tier"]
    );
    assert_eq!(by_rule("PROFILE_FIELD_NOT_IN_SCHEMA"), ["/listingNote"]);
    assert!(by_rule("PROFILE_TYPE_DRIFT").is_empty());

    let profile = read_json(&profile_path);
    assert_eq!(
        (&profile["format"], &profile["version"]),
        (&json!("covenant-profile"), &json!(1))
    );
    assert_eq!(profile["records"], 300);
    let margin = &profile["paths"]["/vendor_data/marginTradingAllowed"];
    assert_eq!(
        (&margin["present"], &margin["types"]["boolean"]),
        (&json!(160), &json!(160))
    );
    assert_eq!(profile["groups"]["coinbase"]["records"], 100);

    // From the stored profile, with three groups needed: the key two exchanges share is no
    // longer a candidate; the one every record carries still is.
    let output = covenant(&[
        "profile",
        "findings",
        s(&profile_path),
        "--schema",
        s(&schema),
        "--promote-groups",
        "3",
    ]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0));
    assert!(!text.contains("marginTradingAllowed"), "{text}");
    assert!(
        text.contains("info PROFILE_PROMOTION_CANDIDATE /vendor_data/rank"),
        "{text}"
    );
    assert!(text.contains("info PROFILE_REMOVAL_CANDIDATE /fields/legacy_fee_tier: '/legacy_fee_tier' is populated in 3% of records (9 of 300)"), "{text}");
}

/// The seed's two signals hold together: a key 3 % of the records carry, though every
/// exchange has a few of them, is not a candidate. The findings are in the JSON document
/// (not on standard error), and `--output text` is a summary, not the document.
#[test]
fn findings_are_in_the_document_and_text_is_a_summary() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut records = instruments();
    for r in records.iter_mut() {
        let i: u32 = r["symbol"]
            .as_str()
            .and_then(|s| s.rsplit('-').next())
            .and_then(|n| n.parse().ok())
            .expect("symbol number");
        if (90..93).contains(&i) {
            let mut vendor: Value =
                serde_json::from_str(r["vendor_data"].as_str().expect("text")).expect("JSON");
            vendor["promoCode"] = json!("LAUNCH");
            r["vendor_data"] = json!(vendor.to_string());
        }
    }
    let data = write(dir.path(), "bronze.jsonl", &json_lines(&records));
    let args = [
        "profile",
        s(&data),
        "--group-by",
        "exchange",
        "--escape-hatch",
        "vendor_data",
    ];
    let output = covenant(&args);
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let document = stdout_json(&output);
    assert_eq!(document["format"], "covenant-profile");
    assert_eq!(document["paths"]["/vendor_data/promoCode"]["present"], 9);
    let candidates: Vec<&str> = document["findings"]
        .as_array()
        .expect("findings in the document")
        .iter()
        .filter(|f| f["rule"] == "PROFILE_PROMOTION_CANDIDATE")
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(
        candidates,
        ["/vendor_data/marginTradingAllowed", "/vendor_data/rank"],
        "{document}"
    );
    // The document still reads as a profile.
    let saved = write(dir.path(), "saved.json", &document.to_string());
    let output = covenant(&["profile", "findings", s(&saved), "--output", "json"]);
    assert_eq!(output.status.code(), Some(0));

    let mut text_args = args.to_vec();
    text_args.extend(["--output", "text"]);
    let output = covenant(&text_args);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.starts_with(
            "Profiled 300 records, grouped by 'exchange' (binance 100, coinbase 100, kraken 100); escape hatches: vendor_data.\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("/vendor_data/promoCode") && text.contains("present   3.0%"),
        "{text}"
    );
    assert!(
        text.contains("\nFindings (")
            && text.contains("info PROFILE_PROMOTION_CANDIDATE /vendor_data/marginTradingAllowed"),
        "{text}"
    );
    assert!(
        !text.contains("PROFILE_PROMOTION_CANDIDATE /vendor_data/promoCode"),
        "{text}"
    );
    assert!(!text.contains("\"format\""), "not the document: {text}");
    assert!(output.stderr.is_empty());

    // With -o the file is the document, findings included, and standard output the summary.
    let path = dir.path().join("profile.json");
    let mut to_file = args.to_vec();
    to_file.extend(["-o", s(&path)]);
    let output = covenant(&to_file);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("Profiled 300 records"), "{text}");
    assert!(
        text.contains(&format!("Profile document: {}", path.display())),
        "{text}"
    );
    assert_eq!(read_json(&path)["findings"], document["findings"]);
}

#[test]
fn merged_partitions_equal_the_whole_and_inputs_may_be_gzip_or_arrays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let records = instruments();
    let whole = write(dir.path(), "all.jsonl", &json_lines(&records));
    let first = write(
        dir.path(),
        "part1.json",
        &Value::from(records[..120].to_vec()).to_string(),
    );
    let second = write(dir.path(), "part2.jsonl", &json_lines(&records[120..]));
    let gzip = std::process::Command::new("gzip")
        .arg(&second)
        .status()
        .expect("gzip");
    assert!(gzip.success());
    let second = dir.path().join("part2.jsonl.gz");
    let profile_of = |files: &[&Path], name: &str| {
        let out = dir.path().join(name);
        let mut args = vec![
            "profile",
            "--group-by",
            "exchange",
            "--escape-hatch",
            "vendor_data",
        ];
        args.extend(files.iter().map(|f| s(f)));
        args.extend(["-o", s(&out)]);
        let output = covenant(&args);
        assert_eq!(
            output.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        out
    };
    let all = profile_of(&[&whole], "all.profile.json");
    let p1 = profile_of(&[&first], "p1.json");
    let p2 = profile_of(&[&second], "p2.json");
    let merged = stdout_json(&covenant(&["profile", "merge", s(&p1), s(&p2)]));
    assert_eq!(merged, read_json(&all));
    let distinct = merged["paths"]["/symbol"]["distinct"].clone();
    assert!(distinct.is_string(), "the sketch travels as registers");
}

#[test]
fn bad_input_exits_2_with_a_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases: Vec<(std::path::PathBuf, &str)> = vec![
        (
            write(dir.path(), "bad.jsonl", "{\"a\": 1}\n{\"a\": \n"),
            "bad.jsonl: line 2: invalid JSON",
        ),
        (
            write(dir.path(), "bad.json", "[{\"a\": 1}, {"),
            "bad.json: invalid JSON",
        ),
        (
            write(dir.path(), "bad.avro", "Obj\u{1}garbage"),
            "bad.avro: not a readable Avro container file",
        ),
    ];
    for (file, expected) in cases {
        let output = covenant(&["profile", s(&file)]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let whole = write(dir.path(), "ok.jsonl", &json_lines(&instruments()));
    assert!(
        std::process::Command::new("gzip")
            .arg(&whole)
            .status()
            .expect("gzip")
            .success()
    );
    let bytes = std::fs::read(dir.path().join("ok.jsonl.gz")).expect("gz");
    let truncated = dir.path().join("truncated.jsonl.gz");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("write");
    let output = covenant(&["profile", s(&truncated)]);
    assert_eq!(output.status.code(), Some(2));

    let newer = write(
        dir.path(),
        "newer.json",
        r#"{"format": "covenant-profile", "version": 9, "records": 0, "paths": {}}"#,
    );
    let output = covenant(&["profile", "merge", s(&newer)]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr.contains("format version 9"), "{stderr}");
    let output = covenant(&["profile", "findings", s(&whole)]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "a record file is not a profile"
    );
}

/// Kafka payloads in Confluent's wire format, as `kcat -f '%R%s'` and as base64 lines,
/// decoded with the schemas a running registry holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn framed_payloads_decode_with_the_registrys_schemas() {
    use base64::Engine;
    let server = support::TestServer::start().await;
    let schema = r#"{"type":"record","name":"Trade","fields":[{"name":"symbol","type":"string"},{"name":"qty","type":"long"},{"name":"note","type":["null","string"],"default":null}]}"#;
    let (status, registered) = server.register("trades-value", "AVRO", schema).await;
    assert_eq!(status, 200, "{registered}");
    let avro_id = registered["id"].as_i64().expect("id");
    let json_schema =
        r#"{"type":"object","properties":{"symbol":{"type":"string"},"venue":{"type":"string"}}}"#;
    let (status, registered) = server.register("quotes-value", "JSON", json_schema).await;
    assert_eq!(status, 200, "{registered}");
    let json_id = registered["id"].as_i64().expect("id");

    let parsed = apache_avro::Schema::parse_str(schema).expect("schema");
    let frame = |id: i64, body: &[u8]| {
        let mut payload = vec![0u8];
        payload.extend_from_slice(&(id as i32).to_be_bytes());
        payload.extend_from_slice(body);
        payload
    };
    let mut payloads = Vec::new();
    for i in 0..10i64 {
        let note = if i < 2 {
            apache_avro::types::Value::Union(
                1,
                Box::new(apache_avro::types::Value::String("x".into())),
            )
        } else {
            apache_avro::types::Value::Union(0, Box::new(apache_avro::types::Value::Null))
        };
        let record = apache_avro::types::Value::Record(vec![
            (
                "symbol".into(),
                apache_avro::types::Value::String(format!("S{i}")),
            ),
            ("qty".into(), apache_avro::types::Value::Long(i)),
            ("note".into(), note),
        ]);
        let body = apache_avro::writer::datum::GenericDatumWriter::builder(&parsed)
            .build()
            .expect("writer")
            .write_value_to_vec(record)
            .expect("encode");
        payloads.push(frame(avro_id, &body));
    }
    payloads.push(frame(json_id, br#"{"symbol":"Q","venue":"XNAS"}"#));

    let dir = tempfile::tempdir().expect("tempdir");
    let mut prefixed = Vec::new();
    for p in &payloads {
        prefixed.extend_from_slice(&(p.len() as u32).to_be_bytes());
        prefixed.extend_from_slice(p);
    }
    let dump = dir.path().join("trades.bin");
    std::fs::write(&dump, &prefixed).expect("write");
    let lines: String = payloads
        .iter()
        .map(|p| format!("{}\n", base64::engine::general_purpose::STANDARD.encode(p)))
        .collect();
    let b64 = write(dir.path(), "trades.b64", &lines);

    let run = |framing: &str, file: &Path| {
        covenant(&[
            "profile",
            "--framed",
            framing,
            "--url",
            &server.base,
            s(file),
        ])
    };
    let from_prefixed = stdout_json(&run("length-prefixed", &dump));
    assert_eq!(from_prefixed["records"], 11);
    assert_eq!(from_prefixed["paths"]["/qty"]["present"], 10);
    assert_eq!(from_prefixed["paths"]["/qty"]["max"], 9.0);
    assert_eq!(from_prefixed["paths"]["/venue"]["present"], 1);
    assert_eq!(stdout_json(&run("base64-lines", &b64)), from_prefixed);

    // A payload naming an id the registry does not hold, and a cut file: exit 2.
    let unknown = dir.path().join("unknown.bin");
    let mut bytes = 6u32.to_be_bytes().to_vec();
    bytes.extend_from_slice(&frame(9999, b"x"));
    std::fs::write(&unknown, &bytes).expect("write");
    let output = run("length-prefixed", &unknown);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("/schemas/ids/9999") && stderr.contains("404"),
        "{stderr}"
    );
    let cut = dir.path().join("cut.bin");
    std::fs::write(&cut, &prefixed[..prefixed.len() - 3]).expect("write");
    let output = run("length-prefixed", &cut);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("payload 11: the file ends inside"),
        "{stderr}"
    );
}

/// A removal candidate opens a deprecation record carrying the profile's figures as evidence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deprecation_record_carries_the_profile_as_evidence() {
    let server = support::TestServer::start().await;
    let (status, answer) = server
        .register("instruments-value", "AVRO", INSTRUMENT)
        .await;
    assert_eq!(status, 200, "{answer}");
    let dir = tempfile::tempdir().expect("tempdir");
    let data = write(dir.path(), "bronze.jsonl", &json_lines(&instruments()));
    let profile_path = dir.path().join("profile.json");
    let output = covenant(&["profile", s(&data), "-o", s(&profile_path)]);
    assert_eq!(output.status.code(), Some(0));
    let output = covenant(&[
        "deprecations",
        "create",
        "--url",
        &server.base,
        "--subject",
        "instruments-value",
        "--field",
        "legacy_fee_tier",
        "--by",
        "data-team",
        "--old-promise",
        "legacy_fee_tier names the fee tier of the listing",
        "--new-promise",
        "no fee tier on instruments",
        "--evidence-profile",
        s(&profile_path),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("data profile of '/legacy_fee_tier': filled in 3.0% of 300 records (9 filled, 300 present) from profile.json"),
        "{stdout}"
    );
    let (_, record) = server
        .call("GET", "/covenant/v1/deprecations/1", None)
        .await;
    assert_eq!(
        record["evidence"][0]["body"]["kind"], "data_profile",
        "{record}"
    );
    assert_eq!(record["evidence"][0]["body"]["non_null"], 9);
}
