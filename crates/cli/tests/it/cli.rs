//! The offline commands, run as a user runs them: the real binary on files in a temp folder.

use crate::support;
use support::{covenant, s, write};

use serde_json::Value;

const V1: &str = r#"{"type":"record","name":"Case","namespace":"court","fields":[
  {"name":"id","type":"string"},
  {"name":"caseOwner","type":"string"}]}"#;

/// Seed example: a field added without a default breaks readers of old data.
const V2_NO_DEFAULT: &str = r#"{"type":"record","name":"Case","namespace":"court","fields":[
  {"name":"id","type":"string"},
  {"name":"caseOwner","type":"string"},
  {"name":"closureReason","type":"string"}]}"#;

const V2_WITH_DEFAULT: &str = r#"{"type":"record","name":"Case","namespace":"court","fields":[
  {"name":"id","type":"string"},
  {"name":"caseOwner","type":"string"},
  {"name":"closureReason","type":["null","string"],"default":null}]}"#;

#[test]
fn compatible_change_exits_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let new = write(dir.path(), "v2.avsc", V2_WITH_DEFAULT);
    let out = covenant(&["check", "--level", "FULL", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("compatible"));
}

#[test]
fn incompatible_change_exits_one_with_stable_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let new = write(dir.path(), "v2.avsc", V2_NO_DEFAULT);
    let out = covenant(&[
        "check",
        "--format",
        "avro",
        "--level",
        "BACKWARD",
        "--output",
        "json",
        s(&new),
        s(&old),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json output");
    assert_eq!(report["compatible"], false);
    let findings = report["findings"].as_array().expect("findings");
    let missing = findings
        .iter()
        .find(|f| f["rule"] == "READER_FIELD_MISSING_DEFAULT_VALUE")
        .expect("a READER_FIELD_MISSING_DEFAULT_VALUE finding");
    assert_eq!(missing["severity"], "error");
    assert_eq!(missing["version"], 1);
    assert!(
        missing["path"]
            .as_str()
            .expect("path")
            .contains("closureReason"),
        "{missing}"
    );
    for key in ["message", "hint"] {
        assert!(
            !missing[key].as_str().expect(key).is_empty(),
            "{key} is empty"
        );
    }
}

#[test]
fn forward_level_accepts_a_field_added_without_default() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let new = write(dir.path(), "v2.avsc", V2_NO_DEFAULT);
    let out = covenant(&["check", "--level", "FORWARD", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn transitive_levels_read_a_folder_in_name_order_and_tag_each_version() {
    let dir = tempfile::tempdir().expect("tempdir");
    let history = dir.path().join("history");
    std::fs::create_dir(&history).expect("mkdir");
    // v1 lacks closureReason; v2 has it with a default; the candidate requires it.
    write(&history, "001.avsc", V1);
    write(&history, "002.avsc", V2_WITH_DEFAULT);
    let candidate = write(
        dir.path(),
        "v3.avsc",
        r#"{"type":"record","name":"Case","namespace":"court","fields":[
          {"name":"id","type":"string"},
          {"name":"caseOwner","type":"string"},
          {"name":"closureReason","type":["null","string"]}]}"#,
    );
    let latest_only = covenant(&["check", "--level", "BACKWARD", s(&candidate), s(&history)]);
    assert_eq!(latest_only.status.code(), Some(0), "{latest_only:?}");

    let out = covenant(&[
        "check",
        "--level",
        "BACKWARD_TRANSITIVE",
        "-o",
        "json",
        s(&candidate),
        s(&history),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let versions: Vec<i64> = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == "error")
        .map(|f| f["version"].as_i64().expect("version"))
        .collect();
    assert_eq!(versions, vec![1], "only version 1 lacks the field");
}

#[test]
fn sarif_output_names_rules_and_results() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let new = write(dir.path(), "v2.avsc", V2_NO_DEFAULT);
    let out = covenant(&["check", "-o", "sarif", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(1));
    let sarif: Value = serde_json::from_slice(&out.stdout).expect("sarif json");
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    assert_eq!(run["results"][0]["level"], "error");
    assert!(
        run["tool"]["driver"]["rules"]
            .as_array()
            .expect("rules")
            .iter()
            .any(|r| r["id"] == "READER_FIELD_MISSING_DEFAULT_VALUE")
    );
}

#[test]
fn invalid_schema_is_one_line_with_path_and_exit_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let bad = write(
        dir.path(),
        "bad.avsc",
        r#"{"type":"record","name":"Case","fields":[{"name":"amount","type":"int","default":"x"}]}"#,
    );
    let out = covenant(&["check", s(&bad), s(&old)]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad.avsc"), "{stderr}");
    assert!(stderr.contains("/fields/amount"), "{stderr}");
}

#[test]
fn usage_errors_exit_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let out = covenant(&["check", "--level", "SIDEWAYS", s(&old), s(&old)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SIDEWAYS"));
    let missing = covenant(&["check", s(&old), "/nonexistent/v0.avsc"]);
    assert_eq!(missing.status.code(), Some(2));
    let no_args = covenant(&["check"]);
    assert_eq!(no_args.status.code(), Some(2));
}

#[test]
fn canonical_and_fingerprint_follow_the_avro_specification() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(
        dir.path(),
        "s.avsc",
        r#"{ "type" : "record", "name" : "R", "namespace": "a.b", "doc": "x",
             "fields" : [ {"name": "f", "type": {"type": "string"}, "default": "d"} ] }"#,
    );
    let out = covenant(&["canonical", s(&file)]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"name":"a.b.R","type":"record","fields":[{"name":"f","type":"string"}]}"#
    );
    let null = write(dir.path(), "null.avsc", r#""null""#);
    let out = covenant(&["fingerprint", s(&null)]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("63dd24e7cc258f8a"), "{text}");
}

const RENAMED: &str = r#"{"type":"record","name":"Case","namespace":"court","fields":[
  {"name":"id","type":"string"},
  {"name":"assignedOfficer","type":"string","default":""}]}"#;

#[test]
fn a_rename_is_an_error_by_default_and_a_warning_under_the_confluent_preset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let new = write(dir.path(), "v2.avsc", RENAMED);
    let rename_of = |out: &std::process::Output| {
        let report: Value = serde_json::from_slice(&out.stdout).expect("json");
        report["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .find(|f| f["rule"] == "LIKELY_RENAME")
            .expect("a LIKELY_RENAME finding")
            .clone()
    };
    let out = covenant(&["check", "-o", "json", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(rename_of(&out)["severity"], "error");
    let lenient = covenant(&[
        "check",
        "-o",
        "json",
        "--preset",
        "confluent",
        s(&new),
        s(&old),
    ]);
    assert_eq!(lenient.status.code(), Some(0), "{lenient:?}");
    assert_eq!(rename_of(&lenient)["severity"], "warning");

    // A level named in the policy file overrides the preset, either way.
    let policy = write(
        dir.path(),
        "policy.json",
        r#"{"policyPreset": "confluent", "semanticRules": {"LIKELY_RENAME": "error"}}"#,
    );
    let strict = covenant(&["check", "--policy", s(&policy), s(&new), s(&old)]);
    assert_eq!(strict.status.code(), Some(1), "{strict:?}");
    let relaxed = write(
        dir.path(),
        "relaxed.json",
        r#"{"semanticRules": {"LIKELY_RENAME": "warning", "FIELD_REMOVED_WITHOUT_DEPRECATION": "warning"}}"#,
    );
    let out = covenant(&["check", "--policy", s(&relaxed), s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let bad_policy = write(
        dir.path(),
        "bad.json",
        r#"{"semanticRules": {"NO_SUCH_RULE": "error"}}"#,
    );
    let rejected = covenant(&["check", "--policy", s(&bad_policy), s(&new), s(&old)]);
    assert_eq!(rejected.status.code(), Some(2), "{rejected:?}");
    let bad_preset = covenant(&["check", "--preset", "strict", s(&new), s(&old)]);
    assert_eq!(bad_preset.status.code(), Some(2), "{bad_preset:?}");
}

#[test]
fn plan_names_the_safe_order_and_exits_one_when_none_is_safe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", V1);
    let added = write(dir.path(), "v2.avsc", V2_WITH_DEFAULT);
    let out = covenant(&["plan", "-o", "json", s(&added), s(&old)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let plan: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(plan["order"], "either_order");
    assert_eq!(
        plan["combinations"].as_array().expect("combinations").len(),
        4
    );

    let renamed = write(dir.path(), "v2r.avsc", RENAMED);
    // A rename is safe in no order (the other side reads the default): only a new field is.
    let out = covenant(&["plan", s(&renamed), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("Rollout: neither"), "{text}");
    assert!(text.contains("Rename rollout: add the new field"), "{text}");

    let retyped = write(
        dir.path(),
        "v2t.avsc",
        r#"{"type":"record","name":"Case","namespace":"court","fields":[
          {"name":"id","type":"long"},{"name":"caseOwner","type":"string"}]}"#,
    );
    let out = covenant(&["plan", s(&retyped), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
}

const ORDER_V1: &str = r#"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
  "properties":{"note":{"type":"string","maxLength":100},"qty":{"type":"integer"}},
  "required":["qty"],"additionalProperties":false}"#;

/// Seed example: tightening `maxLength` from 100 to 20 rejects documents old writers produce.
const ORDER_V2: &str = r#"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object",
  "properties":{"note":{"type":"string","maxLength":20},"qty":{"type":"integer"}},
  "required":["qty"],"additionalProperties":false}"#;

#[test]
fn json_schema_check_uses_the_same_flags_outputs_and_exit_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.json", ORDER_V1);
    let new = write(dir.path(), "v2.json", ORDER_V2);
    let out = covenant(&["check", "--format", "json", "-o", "json", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("json");
    let finding = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "MAX_LENGTH_DECREASED")
        .expect("a MAX_LENGTH_DECREASED finding");
    assert_eq!(finding["path"], "#/properties/note/maxLength");
    assert_eq!(finding["version"], 1);

    let loosened = covenant(&["check", "--format", "json", s(&old), s(&new)]);
    assert_eq!(loosened.status.code(), Some(0), "{loosened:?}");

    let bad = write(dir.path(), "bad.json", r#"{"type": 12}"#);
    let invalid = covenant(&["check", "--format", "json", s(&bad), s(&old)]);
    assert_eq!(invalid.status.code(), Some(2), "{invalid:?}");
    let stderr = String::from_utf8_lossy(&invalid.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("#/type"), "{stderr}");
}

#[test]
fn validate_lists_every_error_with_its_instance_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = write(dir.path(), "order.json", ORDER_V2);
    let good = write(dir.path(), "good.json", r#"{"qty": 2, "note": "fragile"}"#);
    let bad = write(
        dir.path(),
        "bad.json",
        r#"{"qty": "two", "note": "this note is far longer than twenty characters", "extra": 1}"#,
    );
    let ok = covenant(&["validate", "--schema", s(&schema), s(&good)]);
    assert_eq!(ok.status.code(), Some(0), "{ok:?}");

    let out = covenant(&["validate", "--schema", s(&schema), s(&good), s(&bad)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("good.json: valid"), "{text}");
    assert!(text.contains("bad.json: invalid (3 errors)"), "{text}");
    assert!(text.contains("/qty:"), "{text}");
    assert!(text.contains("/note:"), "{text}");

    let not_json = write(dir.path(), "broken.json", "{");
    let broken = covenant(&["validate", "--schema", s(&schema), s(&not_json)]);
    assert_eq!(broken.status.code(), Some(2), "{broken:?}");
}
