//! `covenant check --against-git REV`: a git repository made here with three commits of Avro,
//! JSON Schema, Protobuf (with an import) and Iceberg files, and working-tree changes judged
//! against the history: only the changed files, transitively over the log when the level is
//! transitive, with SARIF regions on the changed file.

use crate::support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};
use support::json_of;

fn git(repo: &Path, args: &[&str]) {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=Covenant Test",
            "-c",
            "user.email=test@example.com",
        ])
        .args([
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn write(repo: &Path, path: &str, text: &str) {
    let file = repo.join(path);
    std::fs::create_dir_all(file.parent().expect("parent")).expect("folder");
    std::fs::write(file, text).expect("write");
}

fn commit(repo: &Path, message: &str) {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
}

fn avro(fields: Value) -> String {
    json!({"type": "record", "name": "Order", "namespace": "acme", "fields": fields}).to_string()
}

fn iceberg(fields: Value) -> String {
    json!({"type": "struct", "schema-id": 0, "fields": fields}).to_string()
}

const MONEY_V1: &str =
    "syntax = \"proto3\";\npackage acme;\n\nmessage Money {\n  int64 units = 1;\n}\n";
const MONEY_V2: &str = "syntax = \"proto3\";\npackage acme;\n\nmessage Money {\n  int64 units = 1;\n  string currency = 2;\n}\n";
const PAYMENT_V1: &str = "syntax = \"proto3\";\npackage acme;\n\nimport \"proto/money.proto\";\n\nmessage Payment {\n  string id = 1;\n  Money total = 2;\n}\n";
const PAYMENT_NEXT: &str = "syntax = \"proto3\";\npackage acme;\n\nimport \"proto/money.proto\";\n\nmessage Payment {\n  string id = 1;\n  Money total = 2;\n  string memo = 3;\n}\n";

/// The repository: commit 1 has every file, commit 2 adds an Avro field with a default and a
/// field to the imported Protobuf message, commit 3 adds an Iceberg column. The working tree
/// then drops the Avro field's default and adds a Protobuf field.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    let repo = dir.path();
    git(repo, &["init", "-q"]);
    write(
        repo,
        "avro/order.avsc",
        &avro(json!([{"name": "id", "type": "string"}])),
    );
    write(
        repo,
        "json/customer.json",
        &json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"name": {"type": "string"}}})
        .to_string(),
    );
    write(repo, "proto/money.proto", MONEY_V1);
    write(repo, "proto/payment.proto", PAYMENT_V1);
    write(
        repo,
        "iceberg/table.json",
        &iceberg(json!([{"id": 1, "name": "id", "required": true, "type": "long"}])),
    );
    write(
        repo,
        "package.json",
        r#"{"name": "not-a-schema", "version": "1.0.0"}"#,
    );
    commit(repo, "first");
    write(
        repo,
        "avro/order.avsc",
        &avro(json!([{"name": "id", "type": "string"},
                     {"name": "note", "type": "string", "default": ""}])),
    );
    write(repo, "proto/money.proto", MONEY_V2);
    commit(repo, "second");
    write(
        repo,
        "iceberg/table.json",
        &iceberg(
            json!([{"id": 1, "name": "id", "required": true, "type": "long"},
                        {"id": 2, "name": "region", "required": false, "type": "string"}]),
        ),
    );
    commit(repo, "third");
    write(
        repo,
        "avro/order.avsc",
        &avro(json!([{"name": "id", "type": "string"}, {"name": "note", "type": "string"}])),
    );
    write(repo, "proto/payment.proto", PAYMENT_NEXT);
    dir
}

fn covenant_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_covenant"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("run covenant")
}

fn paths(document: &Value) -> Vec<String> {
    document["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| f["path"].as_str().expect("path").to_string())
        .collect()
}

#[test]
fn only_the_files_changed_since_the_revision_are_judged() {
    let dir = repository();
    let output = covenant_in(
        dir.path(),
        &["check", "--against-git", "HEAD~1", "-o", "json"],
    );
    let document = json_of(&output);
    // Changed since the second commit: the Iceberg table (third commit) and the working
    // tree's two edits; not the JSON Schema, the imported money.proto or package.json.
    assert_eq!(
        paths(&document),
        [
            "avro/order.avsc",
            "iceberg/table.json",
            "proto/payment.proto"
        ],
        "{document:#}"
    );
    // BACKWARD against the version at HEAD~1 alone: the field now without a default was
    // written by that version, and the new Protobuf field is compatible with its import.
    assert_eq!(output.status.code(), Some(0), "{document:#}");
    for file in document["files"].as_array().expect("files") {
        assert_eq!(file["against"].as_array().map(Vec::len), Some(1), "{file}");
        assert_eq!(file["compatible"], true, "{file}");
    }
}

#[test]
fn a_transitive_level_judges_against_every_version_in_the_log() {
    let dir = repository();
    let args = [
        "check",
        "--against-git",
        "HEAD",
        "--level",
        "BACKWARD_TRANSITIVE",
        "-o",
        "json",
    ];
    let output = covenant_in(dir.path(), &args);
    let document = json_of(&output);
    assert_eq!(
        paths(&document),
        ["avro/order.avsc", "proto/payment.proto"],
        "{document:#}"
    );
    let order = &document["files"][0];
    // Two versions of order.avsc in the log (the third commit left it as it was); the first
    // has no `note`, and the candidate's `note` has no default to read it with.
    assert_eq!(
        order["against"].as_array().map(Vec::len),
        Some(2),
        "{order}"
    );
    assert_eq!(order["compatible"], false, "{order}");
    let rules: Vec<&str> = order["report"]["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(
        rules.contains(&"READER_FIELD_MISSING_DEFAULT_VALUE"),
        "{rules:?}"
    );
    assert_eq!(output.status.code(), Some(1));

    // The same change judged BACKWARD (the last version only) passes.
    let output = covenant_in(
        dir.path(),
        &["check", "--against-git", "HEAD", "-o", "json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", json_of(&output));
}

#[test]
fn sarif_points_at_the_changed_file() {
    let dir = repository();
    let args = [
        "check",
        "--against-git",
        "HEAD",
        "--level",
        "BACKWARD_TRANSITIVE",
        "-o",
        "sarif",
    ];
    let output = covenant_in(dir.path(), &args);
    assert_eq!(output.status.code(), Some(1));
    let sarif = json_of(&output);
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    let missing = results
        .iter()
        .find(|r| r["ruleId"] == "READER_FIELD_MISSING_DEFAULT_VALUE")
        .unwrap_or_else(|| panic!("{sarif:#}"));
    let location = &missing["locations"][0]["physicalLocation"];
    assert_eq!(
        location["artifactLocation"]["uri"], "avro/order.avsc",
        "{missing}"
    );
    assert!(location["region"]["startLine"].is_u64(), "{missing}");
}

#[test]
fn paths_limit_the_files_and_new_files_are_checked_alone() {
    let dir = repository();
    write(
        dir.path(),
        "avro/new.avsc",
        &avro(json!([{"name": "id", "type": "string"}])),
    );
    let output = covenant_in(
        dir.path(),
        &["check", "--against-git", "HEAD", "-o", "json", "avro"],
    );
    let document = json_of(&output);
    assert_eq!(
        paths(&document),
        ["avro/new.avsc", "avro/order.avsc"],
        "{document:#}"
    );
    assert_eq!(document["files"][0]["against"], json!([]), "{document:#}");
    // From inside a folder of the repository, paths are relative to it.
    let output = covenant_in(
        &dir.path().join("proto"),
        &["check", "--against-git", "HEAD", "-o", "json", "."],
    );
    assert_eq!(paths(&json_of(&output)), ["proto/payment.proto"]);
    let text = covenant_in(dir.path(), &["check", "--against-git", "HEAD", "proto"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("== proto/payment.proto (against "), "{text}");
    assert!(
        text.contains("1 schema file(s) changed since HEAD: 1 compatible"),
        "{text}"
    );
}

#[test]
fn outside_a_repository_or_with_an_unknown_revision_it_is_invalid_input() {
    let plain = tempfile::tempdir().expect("temp dir");
    let output = covenant_in(plain.path(), &["check", "--against-git", "HEAD"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("needs a git repository"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let dir = repository();
    let output = covenant_in(dir.path(), &["check", "--against-git", "no-such-branch"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("'no-such-branch' names no commit"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
