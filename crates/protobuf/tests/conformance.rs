//! Conformance against peer corpora: Confluent's and Karapace's Protobuf cases (Confluent
//! strictness) and buf's breaking-change cases (WIRE and WIRE_JSON strictness).
//!
//! Every disagreement must be listed in `testdata/conformance-exceptions.jsonl` with a reason;
//! a listed case that agrees fails the test too, so the list cannot go stale.

use covenant_engine::{CheckOptions, Finding, Format, ProtobufStrictness, Reference};
use covenant_protobuf::{ProtobufFormat, ProtobufSchema, rules};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/peer-corpus");
const EXCEPTIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/conformance-exceptions.jsonl"
);

/// (case id, category) of the listed Protobuf exceptions.
fn exceptions() -> BTreeSet<(String, Option<String>)> {
    let Ok(text) = std::fs::read_to_string(EXCEPTIONS) else {
        return BTreeSet::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["format"] == "PROTOBUF")
        .map(|v| {
            (
                v["id"].as_str().unwrap_or_default().to_string(),
                v["category"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn references(value: &Value) -> Vec<Reference> {
    value
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| {
                    Some(Reference {
                        name: r["name"].as_str()?.to_string(),
                        subject: r["name"].as_str()?.to_string(),
                        version: 1,
                        // null: a well-known file the registry provides itself
                        schema: r["schema"].as_str()?.to_string(),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

fn is_confluent_rule(id: &str) -> bool {
    rules()
        .iter()
        .any(|r| r.id == id && r.peers.iter().any(|p| *p == format!("confluent:{id}")))
}

/// Why a case disagrees, or `None` when it agrees.
fn judge_jsonl_case(case: &Value) -> Option<String> {
    let shared = references(&case["references"]);
    let mut writer_refs = references(&case["writer_references"]);
    let mut reader_refs = references(&case["reader_references"]);
    writer_refs.extend(shared.iter().cloned());
    reader_refs.extend(shared);
    let writer =
        match ProtobufFormat::parse(case["writer"].as_str().unwrap_or_default(), &writer_refs) {
            Ok(s) => s,
            Err(e) => return Some(format!("writer does not parse: {e}")),
        };
    let reader =
        match ProtobufFormat::parse(case["reader"].as_str().unwrap_or_default(), &reader_refs) {
            Ok(s) => s,
            Err(e) => return Some(format!("reader does not parse: {e}")),
        };
    let findings = ProtobufFormat::check(&reader, &writer, &CheckOptions::default());
    let compatible = !findings.iter().any(Finding::is_error);
    let expected = case["reader_can_read_writer"].as_bool().unwrap_or(false);
    if compatible != expected {
        return Some(format!(
            "verdict {compatible}, expected {expected}; findings: {:?}",
            findings
                .iter()
                .map(|f| format!("{} {}", f.rule, f.path))
                .collect::<Vec<_>>()
        ));
    }
    if let Some(changes) = case["expected_changes"].as_array() {
        let want: BTreeSet<String> = changes
            .iter()
            .filter_map(|c| c.as_str()?.split_whitespace().next().map(str::to_string))
            .collect();
        let got: BTreeSet<String> = findings
            .iter()
            .map(|f| f.rule.clone())
            .filter(|r| is_confluent_rule(r))
            .collect();
        let partial = case["expected_changes_partial"].as_bool().unwrap_or(false);
        let ok = if partial {
            want.is_subset(&got)
        } else {
            want == got
        };
        if !ok {
            return Some(format!("change types {got:?}, expected {want:?}"));
        }
    }
    None
}

fn proto_files(root: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
        paths.sort();
        for p in paths {
            if p.is_dir() {
                walk(&p, root, out);
            } else if p.extension().is_some_and(|e| e == "proto") {
                let rel = p
                    .strip_prefix(root)
                    .map(|r| r.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                if let Ok(text) = std::fs::read_to_string(&p) {
                    out.push((rel, text));
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

struct BufOutcome {
    disagreement: Option<String>,
    /// buf rules buf reported that none of our findings name as a peer.
    uncovered: BTreeSet<String>,
}

fn judge_buf_case(dir: &Path, category: &str, strictness: ProtobufStrictness) -> BufOutcome {
    let expected: Vec<Value> =
        std::fs::read_to_string(dir.join(format!("expected-{category}.json")))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
    let buf_rules: BTreeSet<String> = expected
        .iter()
        .filter_map(|v| v["rule"].as_str().map(str::to_string))
        .collect();
    let fail = |msg: String| BufOutcome {
        disagreement: Some(msg),
        uncovered: buf_rules.clone(),
    };
    let old = match ProtobufSchema::parse_file_set(&proto_files(&dir.join("previous")), &[]) {
        Ok(s) => s,
        Err(e) => return fail(format!("previous does not parse: {e}")),
    };
    let new = match ProtobufSchema::parse_file_set(&proto_files(&dir.join("current")), &[]) {
        Ok(s) => s,
        Err(e) => return fail(format!("current does not parse: {e}")),
    };
    let options = CheckOptions {
        protobuf_strictness: strictness,
        ..CheckOptions::default()
    };
    let findings = ProtobufFormat::check(&new, &old, &options);
    let errors: Vec<&Finding> = findings.iter().filter(|f| f.is_error()).collect();
    let ours: BTreeSet<String> = errors
        .iter()
        .filter_map(|f| rules().iter().find(|r| r.id == f.rule))
        .flat_map(|r| r.peers.iter())
        .filter_map(|p| p.strip_prefix("buf:").map(str::to_string))
        .collect();
    let uncovered: BTreeSet<String> = buf_rules.difference(&ours).cloned().collect();
    let breaking = !errors.is_empty();
    let buf_breaking = !expected.is_empty();
    let disagreement = (breaking != buf_breaking).then(|| {
        format!(
            "breaking {breaking}, buf breaking {}; ours {:?}; buf {:?}",
            !expected.is_empty(),
            errors
                .iter()
                .map(|f| format!("{} {}", f.rule, f.path))
                .collect::<Vec<_>>(),
            buf_rules
        )
    });
    BufOutcome {
        disagreement,
        uncovered,
    }
}

#[test]
fn protobuf_conformance() {
    let corpus = Path::new(CORPUS);
    if !corpus.is_dir() {
        println!("peer corpus not found at {CORPUS}; skipping protobuf conformance");
        return;
    }
    let listed = exceptions();
    let mut seen: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    let mut problems: Vec<String> = Vec::new();
    // source -> (agree, total)
    let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();

    let text = std::fs::read_to_string(corpus.join("protobuf.jsonl")).unwrap_or_default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("corpus line is JSON");
        let id = case["id"].as_str().unwrap_or_default().to_string();
        let source = if id.starts_with("confluentinc/") {
            "confluent"
        } else {
            "karapace"
        };
        let key = (id.clone(), None);
        let outcome = judge_jsonl_case(&case);
        let entry = counts.entry(source.to_string()).or_default();
        entry.1 += 1;
        match (outcome, listed.contains(&key)) {
            (None, false) => entry.0 += 1,
            (None, true) => problems.push(format!("stale exception (case agrees): {id}")),
            (Some(why), false) => problems.push(format!("disagreement: {id}: {why}")),
            (Some(_), true) => {}
        }
        seen.insert(key);
    }

    let buf_dir = corpus.join("protobuf-buf");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&buf_dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect()
        })
        .unwrap_or_default();
    cases.sort();
    let mut uncovered_total: BTreeMap<String, usize> = BTreeMap::new();
    for (category, strictness) in [
        ("WIRE", ProtobufStrictness::Wire),
        ("WIRE_JSON", ProtobufStrictness::WireJson),
    ] {
        for dir in &cases {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let id = format!("bufbuild/buf:private/bufpkg/bufcheck/testdata/breaking:{name}");
            let key = (id.clone(), Some(category.to_string()));
            let outcome = judge_buf_case(dir, category, strictness);
            for r in &outcome.uncovered {
                *uncovered_total
                    .entry(format!("{category} {r}"))
                    .or_default() += 1;
            }
            let entry = counts.entry(format!("buf {category}")).or_default();
            entry.1 += 1;
            match (outcome.disagreement, listed.contains(&key)) {
                (None, false) => entry.0 += 1,
                (None, true) => {
                    problems.push(format!("stale exception (case agrees): {id} {category}"))
                }
                (Some(why), false) => {
                    problems.push(format!("disagreement: {id} {category}: {why}"))
                }
                (Some(_), true) => {}
            }
            seen.insert(key);
        }
    }

    for key in &listed {
        if !seen.contains(key) {
            problems.push(format!("exception for an unknown case: {key:?}"));
        }
    }
    let summary: Vec<String> = counts
        .iter()
        .map(|(source, (agree, total))| format!("{source} {agree}/{total}"))
        .collect();
    println!(
        "protobuf conformance: {}, {} listed exceptions",
        summary.join(", "),
        listed.len()
    );
    println!(
        "buf rules reported by buf but not named by our findings (category rule: cases): {uncovered_total:?}"
    );
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
