//! Every Avro case of the peer corpus: our verdict must equal Java `SchemaCompatibility`'s
//! (Confluent's), except for cases listed with a reason in
//! `testdata/conformance-exceptions.jsonl`. A listed case that agrees fails too (stale).

use covenant_avro::AvroFormat;
use covenant_engine::{CheckOptions, Format, Reference, Severity};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/peer-corpus");
const EXCEPTIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/conformance-exceptions.jsonl"
);

fn references(case: &Value, key: &str) -> Vec<Reference> {
    case.get(key)
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .map(|r| Reference {
                    name: r["name"].as_str().unwrap_or_default().to_string(),
                    subject: r["name"].as_str().unwrap_or_default().to_string(),
                    version: 1,
                    schema: r["schema"].as_str().unwrap_or_default().to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Our verdict for one case, or why it could not be judged.
fn judge(case: &Value) -> Result<(bool, Vec<String>), String> {
    let shared = references(case, "references");
    let wrefs = if shared.is_empty() {
        references(case, "writer_references")
    } else {
        shared.clone()
    };
    let rrefs = if shared.is_empty() {
        references(case, "reader_references")
    } else {
        shared
    };
    let text = |k: &str| case[k].as_str().unwrap_or_default().to_string();
    let writer = AvroFormat::parse(&text("writer"), &wrefs).map_err(|e| format!("writer: {e}"))?;
    let reader = AvroFormat::parse(&text("reader"), &rrefs).map_err(|e| format!("reader: {e}"))?;
    let findings = covenant_engine::budget::unlimited(|m| {
        AvroFormat::check(m, &reader, &writer, &CheckOptions::default())
    });
    let errors: Vec<String> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.rule.to_string())
        .collect();
    Ok((errors.is_empty(), errors))
}

#[test]
fn avro_corpus_agrees_with_java() {
    let corpus = Path::new(CORPUS).join("avro.jsonl");
    if !corpus.exists() {
        println!("peer corpus not found at {CORPUS}; skipping Avro conformance");
        return;
    }
    let text = std::fs::read_to_string(&corpus).expect("corpus readable");
    let exceptions: HashMap<String, String> = std::fs::read_to_string(EXCEPTIONS)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["format"] == "AVRO")
        .map(|v| {
            (
                v["id"].as_str().unwrap_or_default().to_string(),
                v["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();

    let (mut total, mut agree, mut listed) = (0, 0, 0);
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("corpus line is JSON");
        let id = case["id"].as_str().unwrap_or_default().to_string();
        total += 1;
        let expected = case["reader_can_read_writer"]
            .as_bool()
            .expect("expectation");
        let outcome = judge(&case);
        let mut problem = match &outcome {
            Err(e) => Some(format!("could not judge: {e}")),
            Ok((got, _)) if *got != expected => {
                Some(format!("expected compatible={expected}, got {got}"))
            }
            Ok(_) => None,
        };
        if problem.is_none()
            && let (Ok((_, rules)), Some(exp)) = (
                &outcome,
                case.get("expected_incompatibilities")
                    .and_then(Value::as_array),
            )
        {
            for e in exp {
                if let Some(t) = e["type"].as_str()
                    && !rules.iter().any(|r| r == t)
                {
                    problem = Some(format!("expected rule {t} among {rules:?}"));
                }
            }
        }
        match (problem, exceptions.contains_key(&id)) {
            (None, false) => agree += 1,
            (None, true) => failures.push(format!("STALE exception (case agrees): {id}")),
            (Some(_), true) => listed += 1,
            (Some(p), false) => failures.push(format!("{id}: {p}\n  note: {}", case["note"])),
        }
    }
    println!("avro conformance: {agree}/{total} agree, {listed} listed exceptions");
    assert!(
        failures.is_empty(),
        "{} disagreements:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(agree + listed == total);
}
