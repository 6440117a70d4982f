//! `covenant check --format protobuf` as a user runs it: .proto files that import a shared
//! file from a `--proto-path` folder, under each strictness.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn covenant(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(args)
        .output()
        .expect("run covenant")
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create folder");
    }
    std::fs::write(&path, text).expect("write file");
    path
}

fn s(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

const MONEY: &str = r#"syntax = "proto3";
package common;
message Money {
  string currency = 1;
  int64 amount_minor_units = 2;
}
"#;

const V1: &str = r#"syntax = "proto3";
package court;
import "common/money.proto";
message CaseLifecycleEvent {
  string event_id = 1;
  string case_id = 2;
  common.Money fee = 3;
  int32 legacy_owner = 7;
}
"#;

/// A field added with a new number: compatible everywhere.
const V2_ADDED: &str = r#"syntax = "proto3";
package court;
import "common/money.proto";
message CaseLifecycleEvent {
  string event_id = 1;
  string case_id = 2;
  common.Money fee = 3;
  int32 legacy_owner = 7;
  string closure_reason = 8;
}
"#;

/// Seed example: `legacy_owner` (7) deleted and its number reused for an enum. Confluent groups
/// enums with int32 and accepts it; old bytes now decode as a priority.
const V2_REUSED: &str = r#"syntax = "proto3";
package court;
import "common/money.proto";
message CaseLifecycleEvent {
  enum Priority { PRIORITY_UNSPECIFIED = 0; HIGH = 1; }
  string event_id = 1;
  string case_id = 2;
  common.Money fee = 3;
  Priority priority = 7;
}
"#;

/// The binary encoding is unchanged; the JSON key of `case_id` is not.
const V2_JSON_NAME: &str = r#"syntax = "proto3";
package court;
import "common/money.proto";
message CaseLifecycleEvent {
  string event_id = 1;
  string case_id = 2 [json_name = "caseRef"];
  common.Money fee = 3;
  int32 legacy_owner = 7;
}
"#;

/// A shared folder with `common/money.proto` and one with the versions.
struct Workspace {
    _dir: tempfile::TempDir,
    protos: PathBuf,
    v1: PathBuf,
    root: PathBuf,
}

fn workspace() -> Workspace {
    let dir = tempfile::tempdir().expect("tempdir");
    let protos = dir.path().join("protos");
    write(&protos, "common/money.proto", MONEY);
    let root = dir.path().join("versions");
    let v1 = write(&root, "v1.proto", V1);
    Workspace {
        protos,
        v1,
        root,
        _dir: dir,
    }
}

fn check(ws: &Workspace, new_text: &str, strictness: &str, output: &str) -> Output {
    let new = write(&ws.root, "v2.proto", new_text);
    covenant(&[
        "check",
        "--format",
        "protobuf",
        "--proto-path",
        s(&ws.protos),
        "--strictness",
        strictness,
        "--output",
        output,
        s(&new),
        s(&ws.v1),
    ])
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {out:?}"))
}

fn error_rules(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings array")
        .iter()
        .filter(|f| f["severity"] == "error")
        .filter_map(|f| f["rule"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn compatible_change_with_an_import_exits_zero() {
    let ws = workspace();
    for strictness in ["confluent", "wire", "wire_json"] {
        let out = check(&ws, V2_ADDED, strictness, "json");
        assert_eq!(out.status.code(), Some(0), "{strictness}: {out:?}");
        let report = json(&out);
        assert_eq!(report["compatible"], true);
        let added = report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["rule"] == "FIELD_ADDED")
            .unwrap_or_else(|| panic!("no FIELD_ADDED: {report}"));
        assert_eq!(added["severity"], "info");
        assert_eq!(
            added["path"],
            "/court.CaseLifecycleEvent/fields/closure_reason"
        );
    }
}

#[test]
fn reused_field_number_fails_under_wire_with_the_buf_rule() {
    let ws = workspace();
    let out = check(&ws, V2_REUSED, "wire", "json");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report = json(&out);
    assert_eq!(report["compatible"], false);
    let finding = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "FIELD_WIRE_COMPATIBLE_TYPE")
        .unwrap_or_else(|| panic!("no FIELD_WIRE_COMPATIBLE_TYPE: {report}"));
    assert_eq!(finding["severity"], "error");
    assert_eq!(finding["path"], "/court.CaseLifecycleEvent/fields/priority");
    let message = finding["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("'int32'") && message.contains("court.CaseLifecycleEvent.Priority"),
        "{message}"
    );
    assert!(!finding["hint"].as_str().unwrap_or_default().is_empty());

    // Confluent's rules group enums with int32, so only the stricter level catches it
    // structurally; the reuse of number 7 is caught whatever the strictness, and under the
    // covenant preset so is the removal of the field that held it (no deprecation record,
    // its number and name not reserved).
    let out = check(&ws, V2_REUSED, "confluent", "json");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(
        error_rules(&json(&out)),
        vec![
            "FIELD_REMOVED_WITHOUT_DEPRECATION".to_string(),
            "PROTOBUF_REMOVED_NOT_RESERVED".to_string(),
            "PROTOBUF_HISTORY_REUSED".to_string()
        ]
    );
}

#[test]
fn wire_json_catches_a_json_name_change_that_wire_does_not() {
    let ws = workspace();
    let out = check(&ws, V2_JSON_NAME, "wire", "json");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(error_rules(&json(&out)).is_empty());

    let out = check(&ws, V2_JSON_NAME, "wire_json", "json");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report = json(&out);
    assert_eq!(
        error_rules(&report),
        vec!["FIELD_SAME_JSON_NAME".to_string()]
    );

    let text = check(&ws, V2_JSON_NAME, "wire_json", "text");
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("FIELD_SAME_JSON_NAME"), "{stdout}");
    assert!(stdout.contains("caseRef"), "{stdout}");
}

#[test]
fn syntax_error_exits_two_with_a_file_line_column_message() {
    let ws = workspace();
    let broken = "syntax = \"proto3\";\npackage court;\nmessage CaseLifecycleEvent {\n  string event_id = 1\n}\n";
    let out = check(&ws, broken, "wire", "text");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    // The closing brace on line 5, column 1, is where a ';' was expected.
    assert!(lines[0].contains(":5:1"), "{stderr}");
    assert!(lines[0].contains("v2.proto"), "{stderr}");
    assert!(out.stdout.is_empty(), "{out:?}");
}

#[test]
fn missing_import_exits_two() {
    let ws = workspace();
    let text = V2_ADDED.replace("common/money.proto", "common/currency.proto");
    let out = check(&ws, &text, "confluent", "text");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("common/currency.proto"), "{stderr}");

    // Without --proto-path nothing supplies the shared file either.
    let new = write(&ws.root, "v2.proto", V2_ADDED);
    let out = covenant(&["check", "--format", "protobuf", s(&new), s(&ws.v1)]);
    assert_eq!(out.status.code(), Some(2), "without --proto-path: {out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("common/money.proto"));
}
