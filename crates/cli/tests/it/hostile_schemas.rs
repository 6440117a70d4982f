//! `covenant check` and `validate` on schemas that once crashed them (stack overflows on
//! recursive, deep and nested inputs, unbounded memory on products of sizes): every one now
//! ends with exit 0, 1 or 2 and a message, within seconds.

use crate::support;
use support::{covenant, s, write};

use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// Runs `covenant check` and returns its exit code and output; asserts it ended normally
/// (not by a signal such as the abort of a stack overflow) and quickly.
fn check(format: &str, level: &str, new: &Path, old: &Path) -> (i32, String) {
    let started = Instant::now();
    let out = covenant(&[
        "check",
        "--format",
        format,
        "--level",
        level,
        s(new),
        s(old),
    ]);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("ended by a signal: {:?}\n{text}", out.status));
    (code, text)
}

fn tree() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "children": {"type": "array", "items": {"$ref": "#"}}}})
}

#[test]
fn recursive_schemas_get_verdicts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tree = write(dir.path(), "tree.json", &tree().to_string());
    let (code, text) = check("json", "FULL_TRANSITIVE", &tree, &tree);
    assert_eq!(code, 0, "{text}");
    let mut closed = tree_value_closed();
    let v1 = write(dir.path(), "closed.json", &closed.to_string());
    closed["properties"]
        .as_object_mut()
        .expect("properties")
        .remove("name");
    let v2 = write(dir.path(), "closed-v2.json", &closed.to_string());
    let (code, text) = check("json", "BACKWARD", &v2, &v1);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("#/properties/children/items/properties/name"),
        "{text}"
    );

    let avro = write(
        dir.path(),
        "list.avsc",
        r#"{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"],"default":null}]}"#,
    );
    assert_eq!(check("avro", "FULL", &avro, &avro).0, 0);
    let proto = write(
        dir.path(),
        "tree.proto",
        "syntax = \"proto3\";\nmessage Node { int32 v = 1; repeated Node children = 2; }\n",
    );
    assert_eq!(check("protobuf", "FULL", &proto, &proto).0, 0);
}

fn tree_value_closed() -> Value {
    let mut value = tree();
    value["additionalProperties"] = json!(false);
    value
}

fn ref_chain(n: usize) -> String {
    let mut definitions = serde_json::Map::new();
    definitions.insert("d0".into(), json!({"type": "string"}));
    for i in 1..n {
        definitions.insert(
            format!("d{i}"),
            json!({"type": "array", "items": {"$ref": format!("#/definitions/d{}", i - 1)}}),
        );
    }
    json!({"definitions": definitions, "$ref": format!("#/definitions/d{}", n - 1)}).to_string()
}

#[test]
fn deep_and_nested_inputs_are_refused_with_exit_2_naming_the_limit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let chain = write(dir.path(), "chain.json", &ref_chain(5000));
    let (code, text) = check("json", "FULL", &chain, &chain);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("max-depth = 64"), "{text}");

    let options = format!(
        "syntax = \"proto2\";\nimport \"google/protobuf/descriptor.proto\";\nmessage O {{ optional O o = 1; }}\nextend google.protobuf.MessageOptions {{ optional O opt = 50001; }}\nmessage M {{ option (opt) = {{ {}{} }}; }}\n",
        "o { ".repeat(5000),
        " }".repeat(5000)
    );
    let options = write(dir.path(), "options.proto", &options);
    let (code, text) = check("protobuf", "BACKWARD", &options, &options);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("max-protobuf-nesting = 64"), "{text}");

    let mut nested = String::from("\"int\"");
    for i in 0..5000 {
        nested = format!(
            r#"{{"type":"record","name":"R{i}","fields":[{{"name":"a","type":{nested}}}]}}"#
        );
    }
    let nested = write(dir.path(), "nested.avsc", &nested);
    assert_eq!(check("avro", "FULL", &nested, &nested).0, 2);

    let records: Vec<Value> = (0..300)
        .map(|i| {
            let mut fields = vec![json!({"name": "x", "type": "int"})];
            if i > 0 {
                fields.push(json!({"name": "p", "type": format!("R{}", i - 1)}));
            }
            json!({"type": "record", "name": format!("R{i}"), "fields": fields})
        })
        .collect();
    let union = write(dir.path(), "union.avsc", &Value::Array(records).to_string());
    let (code, text) = check("avro", "FULL", &union, &union);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("max-depth = 64 (found 300)"), "{text}");
    let (code, text) = check_with(&["--max-depth", "400"], "avro", &union);
    assert!(code == 0 || code == 2, "{text}");
}

fn check_with(extra: &[&str], format: &str, file: &Path) -> (i32, String) {
    let mut args = vec!["check", "--format", format];
    args.extend_from_slice(extra);
    args.extend([s(file), s(file)]);
    let out = covenant(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("signal: {text}"));
    (code, text)
}

#[test]
fn a_spent_check_budget_is_exit_2_with_the_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let object = |n: usize| -> String {
        let properties: serde_json::Map<String, Value> = (0..n)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        json!({"type": "object", "properties": properties}).to_string()
    };
    let old = write(dir.path(), "old.json", &object(100));
    let new = write(dir.path(), "new.json", &object(101));
    let (code, text) = check("json", "FULL", &new, &old);
    assert_eq!(code, 1, "{text}");
    let out = covenant(&[
        "check",
        "--format",
        "json",
        "--level",
        "FULL",
        "--check-max-work",
        "50",
        s(&new),
        s(&old),
    ]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("work budget of 50 units"), "{text}");
}

#[test]
fn validate_against_a_recursive_schema_and_over_limit_schemas() {
    let dir = tempfile::tempdir().expect("temp dir");
    let schema = write(dir.path(), "tree.json", &tree().to_string());
    let mut document = json!({"name": "leaf", "children": []});
    for i in 0..40 {
        document = json!({"name": format!("n{i}"), "children": [document]});
    }
    let good = write(dir.path(), "good.json", &document.to_string());
    let bad = write(
        dir.path(),
        "bad.json",
        &json!({"children": [{"name": 7}]}).to_string(),
    );
    let out = covenant(&["validate", "--schema", s(&schema), s(&good)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = covenant(&["validate", "--schema", s(&schema), s(&bad)]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let chain = write(dir.path(), "chain.json", &ref_chain(600));
    let out = covenant(&["validate", "--schema", s(&chain), s(&good)]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("max-depth"));
}
