//! The conformance set: Iceberg evolution cases with their source (a row of the
//! specification's promotion table, the evolution documentation, or the Iceberg project's
//! schema-update tests, described, not copied) and the verdict and rules expected.

use covenant_engine::{CheckOptions, Format, Level, PriorVersion, check_history};
use covenant_iceberg::IcebergFormat;
use serde_json::Value;

const CASES: &str = include_str!("cases.jsonl");

#[test]
fn every_case_gets_its_expected_verdict_and_rules() {
    let mut failures = Vec::new();
    let mut count = 0;
    for line in CASES.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("a case is JSON");
        let id = case["id"].as_str().expect("id");
        assert!(
            case["source"].as_str().is_some_and(|s| !s.is_empty()),
            "{id}: no source"
        );
        if let Some(matrix) = case.get("matrix") {
            count += matrix_case(id, matrix, &mut failures);
            continue;
        }
        let parse = |key: &str| {
            IcebergFormat::parse(&case[key].to_string(), &[])
                .unwrap_or_else(|e| panic!("{id} {key}: {e}"))
        };
        // One earlier version (`old`) or several (`history`, oldest first).
        let olds: Vec<_> = match case.get("history").and_then(Value::as_array) {
            Some(list) => list
                .iter()
                .map(|v| {
                    IcebergFormat::parse(&v.to_string(), &[])
                        .unwrap_or_else(|e| panic!("{id} history: {e}"))
                })
                .collect(),
            None => vec![parse("old")],
        };
        let new = parse("new");
        let level: Level = case["level"]
            .as_str()
            .expect("level")
            .parse()
            .expect("a level");
        let history: Vec<PriorVersion<'_, _>> = olds
            .iter()
            .zip(1..)
            .map(|(schema, version)| PriorVersion { version, schema })
            .collect();
        let report = covenant_engine::budget::unlimited(|m| {
            check_history::<IcebergFormat>(m, level, &new, &history, &CheckOptions::default())
        });
        let expected = case["compatible"].as_bool().expect("compatible");
        if report.compatible != expected {
            failures.push(format!(
                "{id}: expected compatible={expected}, got {:#?}",
                report.findings
            ));
        }
        for rule in case["rules"].as_array().expect("rules") {
            let rule = rule.as_str().expect("rule id");
            if !report.findings.iter().any(|f| f.rule == rule) {
                failures.push(format!("{id}: expected {rule}, got {:#?}", report.findings));
            }
        }
        count += 1;
    }
    assert!(count >= 30, "only {count} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every ordered pair of `types` on one required column: compatible exactly for the pairs
/// listed as allowed (and identity). Answers how many pairs were judged.
fn matrix_case(id: &str, matrix: &Value, failures: &mut Vec<String>) -> usize {
    let list = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("a list")
            .iter()
            .map(|t| t.as_str().expect("a type").to_string())
            .collect()
    };
    let types = list(&matrix["types"]);
    let allowed: Vec<(String, String)> = matrix["allowed"]
        .as_array()
        .expect("allowed")
        .iter()
        .map(|p| {
            let p = list(p);
            (p[0].clone(), p[1].clone())
        })
        .collect();
    let schema = |t: &str| {
        let text = serde_json::json!({"type": "struct", "fields": [{"id": 1, "name": "col", "required": true, "type": t}]});
        IcebergFormat::parse(&text.to_string(), &[]).unwrap_or_else(|e| panic!("{id} {t}: {e}"))
    };
    let mut judged = 0;
    for from in &types {
        for to in &types {
            let (old, new) = (schema(from), schema(to));
            let history = [PriorVersion {
                version: 1,
                schema: &old,
            }];
            let report = covenant_engine::budget::unlimited(|m| {
                check_history::<IcebergFormat>(
                    m,
                    Level::Backward,
                    &new,
                    &history,
                    &CheckOptions::default(),
                )
            });
            let expected = from == to || allowed.contains(&(from.clone(), to.clone()));
            if report.compatible != expected {
                failures.push(format!(
                    "{id}: {from} -> {to}: expected compatible={expected}, got {:#?}",
                    report.findings
                ));
            }
            judged += 1;
        }
    }
    judged
}
