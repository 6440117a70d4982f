//! Findings are data; these functions only render them.

use crate::{Position, Report};
use serde_json::{Value, json};

/// Human text: a verdict line, then one block per finding.
pub fn render_text(report: &Report) -> String {
    render_text_located(report, &|_| None)
}

/// [`render_text`] with each finding's line and column in the new schema's text, where
/// `locate` knows them (`at /fields/amount (line 5, column 5)`).
pub fn render_text_located(report: &Report, locate: &dyn Fn(&str) -> Option<Position>) -> String {
    let mut out = String::new();
    let errors = report.errors().count();
    if report.compatible {
        out.push_str("compatible");
    } else {
        out.push_str("INCOMPATIBLE");
    }
    out.push_str(&format!(
        " ({} error{}, {} finding{} in all)\n",
        errors,
        if errors == 1 { "" } else { "s" },
        report.findings.len(),
        if report.findings.len() == 1 { "" } else { "s" }
    ));
    for f in &report.findings {
        let version = f.version.map(|v| format!(" [v{v}]")).unwrap_or_default();
        let at = locate(&f.path)
            .map(|p| format!(" (line {}, column {})", p.line, p.column))
            .unwrap_or_default();
        out.push_str(&format!(
            "\n{}: {}{} at {}{at}\n  {}\n  how to change safely: {}\n",
            f.severity,
            f.rule,
            version,
            if f.path.is_empty() { "/" } else { &f.path },
            f.message,
            f.hint
        ));
    }
    out
}

/// The stable JSON shape: `{"compatible": bool, "findings": [{"rule", "severity", "path",
/// "message", "hint", "version"}]}`. `version` is null for findings about the new schema alone.
pub fn render_json(report: &Report) -> Value {
    json!({
        "compatible": report.compatible,
        "findings": report.findings.iter().map(|f| json!({
            "rule": f.rule,
            "severity": f.severity.as_str(),
            "path": f.path,
            "message": f.message,
            "hint": f.hint,
            "version": f.version,
        })).collect::<Vec<_>>(),
    })
}

/// SARIF 2.1.0, for code-scanning tools. `artifact` is the file the new schema came from.
pub fn render_sarif(report: &Report, artifact: &str, rules: &[&crate::RuleSpec]) -> Value {
    render_sarif_located(report, artifact, rules, &|_| None)
}

/// [`render_sarif`] with a `region` (start line and column) for each finding `locate` can
/// place in the new schema's text, so code-scanning tools annotate that line.
pub fn render_sarif_located(
    report: &Report,
    artifact: &str,
    rules: &[&crate::RuleSpec],
    locate: &dyn Fn(&str) -> Option<Position>,
) -> Value {
    let mut used: Vec<&str> = report.findings.iter().map(|f| f.rule.as_ref()).collect();
    used.sort_unstable();
    used.dedup();
    let rule_entries: Vec<Value> = used
        .iter()
        .map(|id| {
            let spec = rules.iter().find(|r| r.id == *id);
            json!({
                "id": id,
                "shortDescription": {"text": spec.map(|s| s.summary).unwrap_or(id)},
                "help": {"text": spec.map(|s| s.hint).unwrap_or("")},
                "helpUri": format!("docs/rules.md#{}", id.to_ascii_lowercase()),
            })
        })
        .collect();
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let level = match f.severity {
                crate::Severity::Error => "error",
                crate::Severity::Warning => "warning",
                crate::Severity::Info => "note",
            };
            json!({
                "ruleId": f.rule,
                "level": level,
                "message": {"text": format!("{} How to change safely: {}", f.message, f.hint)},
                "locations": [{
                    "physicalLocation": physical_location(artifact, locate(&f.path)),
                    "logicalLocations": [{"fullyQualifiedName": f.path}],
                }],
                "properties": {"schemaPath": f.path, "version": f.version},
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "covenant",
                "rules": rule_entries,
            }},
            "results": results,
        }],
    })
}
fn physical_location(artifact: &str, position: Option<Position>) -> Value {
    match position {
        Some(p) => json!({
            "artifactLocation": {"uri": artifact},
            "region": {"startLine": p.line, "startColumn": p.column},
        }),
        None => json!({"artifactLocation": {"uri": artifact}}),
    }
}
