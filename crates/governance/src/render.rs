//! The deprecation record as text, in the layout of the seed's record ("contract:", "old
//! promise:", ... "owners:"), followed by the links every claim needs: evidence, exceptions,
//! stage history and, when given, the removal gate's verdict. And the same as JSON.

use crate::clock::{format_day, format_time};
use crate::gate::GateReport;
use covenant_store::governance::{Attribution, Deprecation, EvidenceBody, Outcome};
use std::fmt::Write;

/// Writes `label: value`, continuing further lines of `value` under its first character.
fn field(out: &mut String, label: &str, value: &str) {
    let value = value.trim();
    let value = if value.is_empty() {
        "(not written)"
    } else {
        value
    };
    let indent = " ".repeat(label.len() + 2);
    for (i, line) in value.lines().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "{label}: {line}");
        } else {
            let _ = writeln!(out, "{indent}{}", line.trim());
        }
    }
}

fn evidence_line(body: &EvidenceBody) -> String {
    match body {
        EvidenceBody::UsageQuery { query, result } => {
            let who = match &query.attribution {
                Attribution::Any => "any reader".to_string(),
                Attribution::Consumer(name) => format!("consumer '{name}'"),
                Attribution::Unattributed => "unattributed readers".to_string(),
            };
            let what = match (&query.field, &query.subject) {
                (Some(f), Some(s)) => format!("'{f}' of '{s}'"),
                (Some(f), None) => format!("'{f}'"),
                (None, Some(s)) => format!("subject '{s}'"),
                (None, None) => "all subjects".to_string(),
            };
            let outcome = match result.iter().map(|r| r.last_at).max() {
                None => "no reads".to_string(),
                Some(last) => format!(
                    "{} reads by {} reporter(s), last {}",
                    result.iter().fold(0u64, |a, r| a.saturating_add(r.reads)),
                    result.len(),
                    format_time(last)
                ),
            };
            format!(
                "usage query: reads of {what} by {who} from {} to {}: {outcome}",
                format_time(query.from),
                format_time(query.to)
            )
        }
        EvidenceBody::SignOff {
            consumer,
            who,
            signed_at,
            statement,
        } => {
            let mut line = format!(
                "sign-off by {who} for consumer '{consumer}' at {}",
                format_time(*signed_at)
            );
            if !statement.is_empty() {
                let _ = write!(line, ": \"{statement}\"");
            }
            line
        }
        EvidenceBody::ReplayResult {
            sample,
            passed,
            detail,
        } => {
            let mut line = format!(
                "sample replay of '{sample}': {}",
                if *passed { "passed" } else { "FAILED" }
            );
            if !detail.is_empty() {
                let _ = write!(line, " ({detail})");
            }
            line
        }
        EvidenceBody::Canary {
            path,
            outcome,
            detail,
            link,
        } => run_line(&format!("canary on '{path}'"), *outcome, detail, link),
        EvidenceBody::DataProfile {
            path,
            records,
            present,
            non_null,
            source,
        } => {
            let share = if *records == 0 {
                0.0
            } else {
                *non_null as f64 * 100.0 / *records as f64
            };
            let mut line = format!(
                "data profile of '{path}': filled in {share:.1}% of {records} records ({non_null} filled, {present} present)"
            );
            if !source.is_empty() {
                let _ = write!(line, " from {source}");
            }
            line
        }
        EvidenceBody::NonProductionOmission {
            environment,
            outcome,
            detail,
            link,
        } => run_line(
            &format!("non-production omission in '{environment}'"),
            *outcome,
            detail,
            link,
        ),
    }
}

/// `what: outcome (detail) <link>` for canary and omission runs.
fn run_line(what: &str, outcome: Outcome, detail: &str, link: &Option<String>) -> String {
    let mut line = format!("{what}: {}", outcome.as_str());
    if !detail.is_empty() {
        let _ = write!(line, " ({detail})");
    }
    if let Some(link) = link {
        let _ = write!(line, " <{link}>");
    }
    line
}

/// The record as text.
pub fn render_text(record: &Deprecation, gate: Option<&GateReport>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "deprecation #{}: {}",
        record.id,
        record.target.describe()
    );
    let since = record
        .history
        .iter()
        .rev()
        .find(|c| c.to == record.stage)
        .map(|c| format!(" since {}", format_time(c.at)))
        .unwrap_or_default();
    field(&mut out, "stage", &format!("{}{since}", record.stage));
    field(
        &mut out,
        "window",
        &format!(
            "{} to {}",
            format_day(record.window_start),
            format_day(record.window_end)
        ),
    );
    if let Some(sunset) = record.sunset {
        field(&mut out, "sunset", &format_time(sunset));
    }
    field(&mut out, "contract", &record.contract);
    field(&mut out, "old promise", &record.old_promise);
    field(&mut out, "new promise", &record.new_promise);
    field(
        &mut out,
        "replacement",
        record.replacement.as_deref().unwrap_or(""),
    );
    let n = &record.notes;
    field(&mut out, "mixed versions", &n.mixed_versions);
    field(&mut out, "discovery", &n.discovery);
    field(&mut out, "migration evidence", &n.migration_evidence);
    field(&mut out, "freeze", &n.freeze);
    field(&mut out, "enforcement", &n.enforcement);
    field(&mut out, "fallback", &n.fallback);
    field(&mut out, "removal", &n.removal);
    let owners: Vec<String> = record
        .owners
        .iter()
        .map(|o| format!("{} {}", o.role, o.name))
        .collect();
    field(&mut out, "owners", &owners.join("; "));

    out.push_str("\nevidence:\n");
    if record.evidence.is_empty() {
        out.push_str("  none recorded: no claim above is backed yet\n");
    }
    for e in &record.evidence {
        let _ = writeln!(
            out,
            "  [{}] {}\n      {} (recorded by {} at {})",
            e.id,
            e.claim,
            evidence_line(&e.body),
            e.recorded_by,
            format_time(e.recorded_at)
        );
    }
    out.push_str("exceptions:\n");
    if record.exceptions.is_empty() {
        out.push_str("  none\n");
    }
    for e in &record.exceptions {
        let party = e
            .party
            .as_deref()
            .map(|p| format!(" for '{p}'"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  [{}] overrides {}{party}: approved by {} at {}: {}",
            e.id,
            e.overrides,
            e.approver,
            format_time(e.approved_at),
            e.reason
        );
    }
    out.push_str("history:\n");
    for c in &record.history {
        let step = match c.from {
            Some(from) => format!("{from} -> {}", c.to),
            None => c.to.to_string(),
        };
        let note = if c.note.is_empty() {
            String::new()
        } else {
            format!(": {}", c.note)
        };
        let _ = writeln!(out, "  {} {step} by {}{note}", format_time(c.at), c.by);
    }
    if !record.updates.is_empty() {
        out.push_str("updates:\n");
        for u in &record.updates {
            let note = if u.note.is_empty() {
                String::new()
            } else {
                format!(": {}", u.note)
            };
            let _ = writeln!(out, "  {} by {}{note}", format_time(u.at), u.by);
            for change in &u.changes {
                let _ = writeln!(out, "    {change}");
            }
        }
    }
    if let Some(gate) = gate {
        let _ = writeln!(
            out,
            "removal gate (as of {}): {}",
            format_time(gate.evaluated_at),
            if gate.allows_removal() {
                "no blockers".to_string()
            } else {
                format!("{} blocker(s)", gate.blockers.len())
            }
        );
        for b in &gate.blockers {
            let _ = writeln!(out, "  [{}] {}", b.kind, b.message);
        }
        for o in &gate.overridden {
            let _ = writeln!(
                out,
                "  overridden by exception {} ({}): [{}] {}",
                o.exception.id, o.exception.approver, o.blocker.kind, o.blocker.message
            );
        }
    }
    out
}

/// The record as JSON, with the gate's verdict under `removal_gate` when given.
pub fn render_json(record: &Deprecation, gate: Option<&GateReport>) -> serde_json::Value {
    let mut value = serde_json::to_value(record).unwrap_or(serde_json::Value::Null);
    if let (Some(gate), Some(map)) = (gate, value.as_object_mut()) {
        map.insert(
            "removal_gate".to_string(),
            serde_json::to_value(gate).unwrap_or(serde_json::Value::Null),
        );
    }
    value
}
