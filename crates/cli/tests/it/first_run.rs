//! What a new user meets on the first run of `covenant`: checking a first version alone,
//! piping into `head`, `.json` files of either format, parse errors that name their file, and
//! logs without colour escapes when they go to a file.

use crate::support;
use support::{covenant, s, write};

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const ENUM_ZERO_IS_OPEN: &str = "syntax = \"proto3\";\npackage acme;\nenum CaseStatus {\n  CASE_STATUS_OPEN = 0;\n  CASE_STATUS_CLOSED = 1;\n}\n";

#[test]
fn a_first_version_is_checked_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let proto = write(dir.path(), "status.proto", ENUM_ZERO_IS_OPEN);
    let out = covenant(&["check", s(&proto)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        stdout(&out).contains("warning: PROTOBUF_ENUM_ZERO_NOT_UNSPECIFIED at /acme.CaseStatus"),
        "{}",
        stdout(&out)
    );

    let policy = write(
        dir.path(),
        "policy.json",
        r#"{"semanticRules": {"PROTOBUF_ENUM_ZERO_NOT_UNSPECIFIED": "error"}}"#,
    );
    let out = covenant(&["check", "--policy", s(&policy), s(&proto)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");

    let json = write(
        dir.path(),
        "case.json",
        r#"{"type": "object", "properties": {"caseId": {"type": "string"}}, "additionalProperties": false}"#,
    );
    let out = covenant(&["check", "--output", "json", s(&json)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        stdout(&out).contains("DIALECT_UNDECLARED"),
        "{}",
        stdout(&out)
    );

    let broken = write(dir.path(), "broken.avsc", "{\"type\": \"record\"");
    assert_eq!(covenant(&["check", s(&broken)]).status.code(), Some(2));
}

/// The catalog as Markdown is larger than a pipe's buffer, so the reader leaving after one
/// line is certain to close the pipe while `covenant` is still writing.
#[test]
fn output_into_a_closed_pipe_ends_quietly() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["rules", "--markdown"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn covenant");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("read a line");
    assert_eq!(first, "# Rule catalog\n");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}

const JSON_V1: &str = r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"caseId": {"type": "string"}}, "additionalProperties": false}"#;
const JSON_V2_NO_DIALECT: &str = r#"{"type": "object", "properties": {"caseId": {"type": "string"}, "note": {"type": "string"}}, "additionalProperties": false}"#;
const AVRO_IN_JSON: &str =
    r#"{"type": "record", "name": "Case", "fields": [{"name": "caseId", "type": "string"}]}"#;

#[test]
fn json_files_are_read_by_their_content() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "v1.json", JSON_V1);
    let v2 = write(dir.path(), "v2.json", JSON_V2_NO_DIALECT);
    let out = covenant(&["check", "--output", "json", s(&v2), s(&v1)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(stdout(&out).contains("PROPERTY_ADDED"), "{}", stdout(&out));

    let avro = write(dir.path(), "case.json", AVRO_IN_JSON);
    let out = covenant(&["canonical", s(&avro)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(stdout(&out).starts_with("{\"name\":\"Case\",\"type\":\"record\""));

    // Read in the wrong format, the message names the option that chooses it.
    let out = covenant(&["check", "--format", "avro", s(&v2), s(&v1)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let message = stderr(&out);
    assert!(message.contains("invalid AVRO schema"), "{message}");
    assert!(message.contains("--format"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
    // A JSON Schema file read as Avro because the new file is Avro.
    let out = covenant(&["check", s(&avro), s(&v1)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(stderr(&out).contains("--format"), "{}", stderr(&out));
}

#[test]
fn protobuf_parse_errors_name_the_users_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(
        dir.path(),
        "case_event.proto",
        "syntax = \"proto3\";\nmessage CaseEvent {\n  string event_id = 1\n}\n",
    );
    let out = covenant(&["canonical", s(&bad)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let message = stderr(&out);
    assert!(
        message.contains(&format!("{}:4:1:", bad.display())),
        "{message}"
    );
    assert!(!message.contains("schema.proto"), "{message}");
}

/// What `covenant serve` writes in its first two seconds, run by `shell` (a command line
/// in which `COVENANT` stands for the serve command) with `envs`.
fn serve_output(shell: &str, envs: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = format!(
        "timeout -s INT 2 {} serve --listen 127.0.0.1:{} --data-dir {}",
        env!("CARGO_BIN_EXE_covenant"),
        support::free_port(),
        dir.path().join("data").display()
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", &shell.replace("COVENANT", &serve)])
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR");
    for (k, v) in envs {
        command.env(k, v);
    }
    let out = command.output().expect("run covenant serve");
    format!("{}{}", stdout(&out), stderr(&out))
}

/// `script` (util-linux) gives the server a terminal, where colour is wanted.
fn has_script() -> bool {
    Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn logs_are_coloured_only_on_a_terminal_and_never_under_no_color() {
    let piped = serve_output("COVENANT 2>&1 | cat", &[]);
    assert!(piped.contains("INFO"), "no log lines were written: {piped}");
    assert!(!piped.contains('\u{1b}'), "{piped:?}");
    if !has_script() {
        eprintln!("skipped the terminal half: `script` is not installed");
        return;
    }
    let on_terminal = "script -qec 'COVENANT' /dev/null";
    let coloured = serve_output(on_terminal, &[]);
    assert!(coloured.contains("\u{1b}["), "{coloured:?}");
    let plain = serve_output(on_terminal, &[("NO_COLOR", "1")]);
    assert!(plain.contains("INFO"), "{plain:?}");
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
}

fn sarif_regions(out: &Output) -> Vec<(String, String, i64, i64)> {
    let sarif: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)));
    sarif["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            let region = &r["locations"][0]["physicalLocation"]["region"];
            (
                r["ruleId"].as_str().unwrap_or_default().to_string(),
                r["properties"]["schemaPath"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                region["startLine"].as_i64().unwrap_or(-1),
                region["startColumn"].as_i64().unwrap_or(-1),
            )
        })
        .collect()
}

fn has(regions: &[(String, String, i64, i64)], rule: &str, path: &str, line: i64, column: i64) {
    assert!(
        regions
            .iter()
            .any(|r| r.0 == rule && r.1 == path && r.2 == line && r.3 == column),
        "no {rule} at {path} {line}:{column} in {regions:?}"
    );
}

#[test]
fn sarif_and_text_reports_point_at_the_line_of_each_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(
        dir.path(),
        "v1.proto",
        "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n  string case_id = 2;\n}\n",
    );
    let new = write(
        dir.path(),
        "v2.proto",
        "syntax = \"proto3\";\npackage acme;\n\nmessage CaseEvent {\n  string case_id = 1;\n  string event_id = 2;\n}\n",
    );
    let out = covenant(&["check", "--output", "sarif", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let regions = sarif_regions(&out);
    has(
        &regions,
        "FIELD_IDENTITY_MOVED",
        "/acme.CaseEvent/fields/case_id",
        5,
        3,
    );
    has(
        &regions,
        "FIELD_IDENTITY_MOVED",
        "/acme.CaseEvent/fields/event_id",
        6,
        3,
    );
    let text = stdout(&covenant(&["check", s(&new), s(&old)]));
    assert!(
        text.contains("at /acme.CaseEvent/fields/case_id (line 5, column 3)"),
        "{text}"
    );

    let old = write(
        dir.path(),
        "v1.avsc",
        r#"{"type": "record", "name": "Case", "fields": [{"name": "caseId", "type": "string"}]}"#,
    );
    let new = write(
        dir.path(),
        "v2.avsc",
        "{\"type\": \"record\", \"name\": \"Case\", \"fields\": [\n  {\"name\": \"caseId\", \"type\": \"string\"},\n  {\"name\": \"closureReason\", \"type\": \"string\"}\n]}\n",
    );
    let out = covenant(&["check", "--output", "sarif", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    has(
        &sarif_regions(&out),
        "READER_FIELD_MISSING_DEFAULT_VALUE",
        "/fields/closureReason",
        3,
        3,
    );

    let old = write(
        dir.path(),
        "v1.json",
        r#"{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false}"#,
    );
    let new = write(
        dir.path(),
        "v2.json",
        "{\"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n \"type\": \"object\",\n \"properties\": {\n  \"a\": {\"type\": \"integer\"}\n },\n \"additionalProperties\": false}\n",
    );
    let out = covenant(&["check", "--output", "sarif", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let regions = sarif_regions(&out);
    assert!(
        regions
            .iter()
            .any(|r| r.1.starts_with("#/properties/a") && r.2 == 4),
        "{regions:?}"
    );
}
