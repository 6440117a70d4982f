//! Conformance against peer corpora: Confluent's and Karapace's Protobuf cases (Confluent
//! strictness) and buf's breaking-change cases (WIRE and WIRE_JSON strictness).
//!
//! A buf category's verdict is computed from our findings of the rules that implement a buf
//! rule of that category (membership from `shared/reference/buf-rules.md`), never from
//! Confluent's own differences, so the comparison is like with like. For a case on which we
//! agree, every rule buf reported must also be reported by us.
//!
//! Every disagreement, and every buf rule we miss on an agreeing case, must be listed in
//! `testdata/conformance-exceptions.jsonl` with a reason (the latter with a `rule` key); a
//! listed entry that no longer applies fails the test too, so the list cannot go stale.

use covenant_engine::{CheckOptions, Finding, Format, ProtobufStrictness, Reference};
use covenant_protobuf::{ProtobufFormat, ProtobufSchema, rules};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/peer-corpus");
const BUF_RULES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/reference/buf-rules.md"
);
const EXCEPTIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/conformance-exceptions.jsonl"
);

/// (case id, category, buf rule) of a listed Protobuf exception.
type Key = (String, Option<String>, Option<String>);

fn exceptions() -> BTreeSet<Key> {
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
                v["rule"].as_str().map(str::to_string),
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
    let findings = covenant_engine::budget::unlimited(|m| {
        ProtobufFormat::check(m, &reader, &writer, &CheckOptions::default())
    });
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
            .map(|f| f.rule.to_string())
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

/// buf's category membership (category -> buf rule ids), read from the table in
/// `shared/reference/buf-rules.md` whose header names the categories.
fn buf_categories() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(BUF_RULES).unwrap_or_default();
    let mut columns: Vec<String> = Vec::new();
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 3 {
            continue;
        }
        if cells[1] == "rule id" {
            columns = cells.iter().map(|c| c.to_string()).collect();
            continue;
        }
        let Some(rule) = cells[1].strip_prefix('`').and_then(|r| r.strip_suffix('`')) else {
            continue;
        };
        for (i, cell) in cells.iter().enumerate() {
            if *cell == "x"
                && let Some(category) = columns.get(i)
            {
                out.entry(category.clone())
                    .or_default()
                    .insert(rule.to_string());
            }
        }
    }
    out
}

/// The buf rule one of our rules implements: a rule whose peers include `buf:<its own id>`.
/// Confluent's rules that merely relate to a buf rule do not count, so buf's categories are
/// judged on buf's rules only.
fn buf_rule_of(id: &str) -> Option<&'static str> {
    let spec = rules().iter().find(|r| r.id == id)?;
    spec.peers
        .iter()
        .find(|p| p.strip_prefix("buf:") == Some(spec.id))
        .map(|_| spec.id)
}

/// Whether a file is written in an edition (`edition = "2023";`), which protox 0.10 cannot
/// parse: its parser accepts only `syntax = "proto2"` and `"proto3"`.
fn uses_editions(text: &str) -> bool {
    text.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("edition") && l[7..].trim_start().starts_with('=')
    })
}

/// The import paths of a file, found textually so that files protox cannot parse are covered.
fn imports(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().strip_prefix("import")?;
            let start = l.find('"')? + 1;
            let end = start + l[start..].find('"')?;
            Some(l[start..end].to_string())
        })
        .collect()
}

/// Files of either side written in an edition, plus every file importing one, transitively.
/// Those are left out on both sides and buf's violations in them are ignored, so a mixed
/// case is still judged, like with like, on its proto2/proto3 files.
fn uncompilable(prev: &[(String, String)], cur: &[(String, String)]) -> BTreeSet<String> {
    let mut dropped: BTreeSet<String> = prev
        .iter()
        .chain(cur)
        .filter(|(_, t)| uses_editions(t))
        .map(|(n, _)| n.clone())
        .collect();
    loop {
        let more: Vec<String> = prev
            .iter()
            .chain(cur)
            .filter(|(n, t)| !dropped.contains(n) && imports(t).iter().any(|i| dropped.contains(i)))
            .map(|(n, _)| n.clone())
            .collect();
        if more.is_empty() {
            return dropped;
        }
        dropped.extend(more);
    }
}

struct BufOutcome {
    disagreement: Option<String>,
    /// buf rules buf reported that none of our findings in the category implement, or (on a
    /// whole case) that we report a different number of times.
    uncovered: BTreeSet<String>,
    /// Whether files written in an edition were left out.
    subset: bool,
}

fn judge_buf_case(
    dir: &Path,
    category: &str,
    members: &BTreeSet<String>,
    strictness: ProtobufStrictness,
) -> BufOutcome {
    let expected: Vec<Value> =
        std::fs::read_to_string(dir.join(format!("expected-{category}.json")))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
    let mut prev_files = proto_files(&dir.join("previous"));
    let mut cur_files = proto_files(&dir.join("current"));
    let dropped = uncompilable(&prev_files, &cur_files);
    prev_files.retain(|(n, _)| !dropped.contains(n));
    cur_files.retain(|(n, _)| !dropped.contains(n));
    let subset = !dropped.is_empty();
    let expected: Vec<&Value> = expected
        .iter()
        .filter(|v| v["path"].as_str().is_none_or(|p| !dropped.contains(p)))
        .collect();
    let buf_rules: BTreeSet<String> = expected
        .iter()
        .filter_map(|v| v["rule"].as_str().map(str::to_string))
        .collect();
    let fail = |msg: String| BufOutcome {
        disagreement: Some(msg),
        uncovered: BTreeSet::new(),
        subset,
    };
    if prev_files.is_empty() && cur_files.is_empty() {
        return fail("every file is written in an edition, which protox cannot parse".into());
    }
    let old = match ProtobufSchema::parse_file_set(&prev_files, &[]) {
        Ok(s) => s,
        Err(e) => return fail(format!("previous does not parse: {e}")),
    };
    let new = match ProtobufSchema::parse_file_set(&cur_files, &[]) {
        Ok(s) => s,
        Err(e) => return fail(format!("current does not parse: {e}")),
    };
    let options = CheckOptions {
        protobuf_strictness: strictness,
        ..CheckOptions::default()
    };
    let findings =
        covenant_engine::budget::unlimited(|m| ProtobufFormat::check(m, &new, &old, &options));
    let ours: Vec<(&Finding, &str)> = findings
        .iter()
        .filter(|f| f.is_error())
        .filter_map(|f| Some((f, buf_rule_of(&f.rule)?)))
        .filter(|(_, r)| members.contains(*r))
        .collect();
    let our_rules: BTreeSet<String> = ours.iter().map(|(_, r)| r.to_string()).collect();
    let mut uncovered: BTreeSet<String> = buf_rules.difference(&our_rules).cloned().collect();
    // On a whole case, each rule must also fire as often as buf's; a case judged on a subset
    // cannot be held to that, since types moved out of a left-out file still count for buf.
    if !subset {
        let mut theirs: BTreeMap<String, usize> = BTreeMap::new();
        for v in &expected {
            *theirs
                .entry(v["rule"].as_str().unwrap_or_default().to_string())
                .or_default() += 1;
        }
        let mut mine: BTreeMap<String, usize> = BTreeMap::new();
        for (_, r) in &ours {
            *mine.entry(r.to_string()).or_default() += 1;
        }
        for (rule, n) in &theirs {
            if mine.get(rule) != Some(n) {
                uncovered.insert(rule.clone());
            }
        }
    }
    let breaking = !ours.is_empty();
    let buf_breaking = !expected.is_empty();
    let disagreement = (breaking != buf_breaking).then(|| {
        format!(
            "breaking {breaking}, buf breaking {buf_breaking}; ours {:?}; buf {:?}",
            ours.iter()
                .map(|(f, _)| format!("{} {}", f.rule, f.path))
                .collect::<Vec<_>>(),
            buf_rules
        )
    });
    BufOutcome {
        disagreement,
        uncovered,
        subset,
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
    let mut seen: BTreeSet<Key> = BTreeSet::new();
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
        let key = (id.clone(), None, None);
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
    let categories = buf_categories();
    assert!(
        categories.get("WIRE").is_some_and(|c| c.len() > 10),
        "buf's category table was not found in {BUF_RULES}"
    );
    let mut subsets: BTreeMap<String, usize> = BTreeMap::new();
    for (category, strictness) in [
        ("WIRE", ProtobufStrictness::Wire),
        ("WIRE_JSON", ProtobufStrictness::WireJson),
    ] {
        let members = &categories[category];
        for dir in &cases {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            let id = format!("bufbuild/buf:private/bufpkg/bufcheck/testdata/breaking:{name}");
            let key = (id.clone(), Some(category.to_string()), None);
            let outcome = judge_buf_case(dir, category, members, strictness);
            let entry = counts.entry(format!("buf {category}")).or_default();
            entry.1 += 1;
            let agrees = outcome.disagreement.is_none();
            match (outcome.disagreement, listed.contains(&key)) {
                (None, false) => {
                    entry.0 += 1;
                    if outcome.subset {
                        *subsets.entry(category.to_string()).or_default() += 1;
                    }
                }
                (None, true) => {
                    problems.push(format!("stale exception (case agrees): {id} {category}"))
                }
                (Some(why), false) => {
                    problems.push(format!("disagreement: {id} {category}: {why}"))
                }
                (Some(_), true) => {}
            }
            seen.insert(key);
            if agrees {
                for rule in &outcome.uncovered {
                    let key = (id.clone(), Some(category.to_string()), Some(rule.clone()));
                    if !listed.contains(&key) {
                        problems.push(format!(
                            "buf reported {rule} and we did not, or not as often: {id} {category}"
                        ));
                    }
                    seen.insert(key);
                }
            }
        }
    }

    for key in &listed {
        if !seen.contains(key) {
            problems.push(format!(
                "exception that does not apply (unknown case, or the rule is reported): {key:?}"
            ));
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
    println!("buf cases judged on their proto2/proto3 files only (editions left out): {subsets:?}");
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
