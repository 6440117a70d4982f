//! Replays the peer corpus: our verdicts (and, where the case lists them, Confluent's
//! difference types and paths) must agree, unless the case is a listed exception.

use covenant_engine::{CheckOptions, Format, JsonPolicy, Reference};
use covenant_jsonschema::JsonSchemaFormat;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/peer-corpus");
const EXCEPTIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/conformance-exceptions.jsonl"
);

fn references(case: &Value, key: &str) -> Vec<Reference> {
    case.get(key)
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|r| {
                    Some(Reference {
                        name: r.get("name")?.as_str()?.to_string(),
                        subject: r.get("name")?.as_str()?.to_string(),
                        version: 1,
                        schema: r.get("schema")?.as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Our verdict and (rule, path) set under a policy, or the parse error.
fn judge(case: &Value, policy: JsonPolicy) -> Result<(bool, BTreeSet<String>), String> {
    let shared = references(case, "references");
    let wr = if shared.is_empty() {
        references(case, "writer_references")
    } else {
        shared.clone()
    };
    let rr = if shared.is_empty() {
        references(case, "reader_references")
    } else {
        shared
    };
    let writer = JsonSchemaFormat::parse(case["writer"].as_str().unwrap_or(""), &wr)
        .map_err(|e| format!("writer: {e}"))?;
    let reader = JsonSchemaFormat::parse(case["reader"].as_str().unwrap_or(""), &rr)
        .map_err(|e| format!("reader: {e}"))?;
    let options = CheckOptions {
        json_policy: policy,
        ..CheckOptions::default()
    };
    let findings = covenant_engine::budget::unlimited(|m| {
        JsonSchemaFormat::check(m, &reader, &writer, &options)
    });
    let compatible = !findings.iter().any(|f| f.is_error());
    let changes = findings
        .iter()
        .map(|f| format!("{} {}", f.rule, f.path))
        .collect();
    Ok((compatible, changes))
}

#[test]
fn jsonschema_conformance() {
    let corpus = Path::new(CORPUS).join("jsonschema.jsonl");
    let Ok(text) = std::fs::read_to_string(&corpus) else {
        println!("peer corpus not found at {}; skipping", corpus.display());
        return;
    };
    let exceptions: HashMap<String, String> = std::fs::read_to_string(EXCEPTIONS)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["format"] == "JSON")
        .filter_map(|v| {
            Some((
                v["id"].as_str()?.to_string(),
                v["reason"].as_str()?.to_string(),
            ))
        })
        .collect();
    let (mut total, mut agree, mut with_changes, mut changes_match) = (0, 0, 0, 0);
    let mut listed = 0;
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("corpus line is JSON");
        let id = case["id"].as_str().unwrap_or("").to_string();
        total += 1;
        let expected = case["reader_can_read_writer"].as_bool().unwrap_or(false);
        let mut problems = Vec::new();
        match judge(&case, JsonPolicy::Strict) {
            Err(e) => problems.push(format!("parse error {e}")),
            Ok((verdict, changes)) => {
                if verdict != expected {
                    problems.push(format!(
                        "verdict {verdict}, expected {expected}; ours {changes:?}"
                    ));
                } else {
                    agree += 1;
                }
                if let Some(list) = case.get("expected_changes").and_then(Value::as_array) {
                    with_changes += 1;
                    let want: BTreeSet<String> = list
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect();
                    let partial = case
                        .get("expected_changes_partial")
                        .and_then(Value::as_bool)
                        == Some(true);
                    // A few sources name only the difference type; compare those by type alone.
                    let got: BTreeSet<String> = if want.iter().all(|w| !w.contains(' ')) {
                        changes
                            .iter()
                            .filter_map(|c| c.split(' ').next())
                            .map(str::to_string)
                            .collect()
                    } else {
                        changes.clone()
                    };
                    let ok = if partial {
                        want.is_subset(&got)
                    } else {
                        want == got
                    };
                    if ok {
                        changes_match += 1;
                    } else {
                        problems.push(format!("changes {changes:?}, expected {want:?}"));
                    }
                }
                if let Some(lenient) = case.get("compatible_lenient").and_then(Value::as_bool) {
                    match judge(&case, JsonPolicy::Lenient) {
                        Ok((v, _)) if v == lenient => {}
                        Ok((v, c)) => problems.push(format!(
                            "lenient verdict {v}, expected {lenient}; ours {c:?}"
                        )),
                        Err(e) => problems.push(format!("lenient parse error {e}")),
                    }
                }
            }
        }
        match (problems.is_empty(), exceptions.contains_key(&id)) {
            (true, true) => failures.push(format!("STALE exception (case now agrees): {id}")),
            (true, false) => {}
            (false, true) => listed += 1,
            (false, false) => failures.push(format!(
                "{id}\n    writer {}\n    reader {}\n    {}",
                case["writer"],
                case["reader"],
                problems.join("\n    ")
            )),
        }
    }
    println!(
        "jsonschema conformance: verdict {agree}/{total} agree, changes {changes_match}/{with_changes} match, {listed} listed exceptions"
    );
    if !failures.is_empty() {
        for f in &failures {
            println!("{f}");
        }
        panic!(
            "{} unlisted disagreements or stale exceptions",
            failures.len()
        );
    }
}
