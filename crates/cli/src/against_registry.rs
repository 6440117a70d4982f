//! `covenant check --against URL --subject S NEW`: the candidate judged by a running registry
//! exactly as registering it would be judged (`POST /covenant/v1/subjects/{s}/check`: the
//! subject's mode, data contracts, level and scope, policy preset and rules, stored samples,
//! consumers and usage, freezes, deprecations and approvals), without registering it; shown
//! like an offline check, with positions in NEW.

use crate::check::{self, CheckArgs, InvalidInput, Output};
use crate::governance::{Api, Server, segment};
use crate::output::out;
use anyhow::{Result, bail};
use covenant_engine::{Finding, Report};
use serde_json::{Value, json};
use std::process::ExitCode;

pub fn run(args: &CheckArgs, url: &str) -> Result<ExitCode> {
    let Some(subject) = args.policy.subject.as_deref() else {
        bail!(InvalidInput("--against needs --subject".into()));
    };
    let Some(new) = args.new.as_deref() else {
        bail!(InvalidInput("the new schema file is missing".into()));
    };
    if !args.old.is_empty() {
        bail!(InvalidInput(
            "with --against, the registry holds the earlier versions: give only the new schema"
                .into()
        ));
    }
    // Parsed here too: a file that is not a schema is invalid input before any call, and
    // the positions of the findings are found in it.
    let chosen = check::schema_type_for(&args.input, new)?;
    let references = check::load_references(&args.input, chosen.schema_type)?;
    let candidate = check::parse_file(&chosen, new, &references, &args.input.limits.limits())?;
    let text = std::fs::read_to_string(new)
        .map_err(|e| InvalidInput(format!("{}: cannot read: {e}", new.display())))?;
    let server = Server {
        url: url.to_string(),
        basic_auth: args.remote.basic_auth.clone(),
        token: args.remote.token.clone(),
        ca_cert: args.remote.ca_cert.clone(),
    };
    let body = json!({"schema": text, "schemaType": chosen.schema_type.to_string()});
    let path = format!("/covenant/v1/subjects/{}/check", segment(subject));
    let answer = match Api::new(&server)?.call("POST", &path, Some(body))? {
        Ok(answer) => answer,
        // The registry's refusal (authentication, a bad subject name) is printed already.
        Err(_) => return Ok(ExitCode::from(2)),
    };
    let findings: Vec<Finding> = serde_json::from_value(answer["findings"].clone())
        .map_err(|e| InvalidInput(format!("the registry's answer is not a verdict: {e}")))?;
    let blockers: Vec<String> = answer["blockers"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let compatible = answer["is_compatible"].as_bool() == Some(true);
    let report = Report::from_findings(findings);
    let uri = new.display().to_string();
    let rendered = check::render(args.output, &report, &candidate, &text, &uri)?;
    out!("{}", with_gate(args.output, rendered, &answer, &blockers)?);
    std::mem::forget(candidate);
    Ok(if compatible {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The rendered verdict with what only the registry adds: the removal gate's blockers (a
/// refusal) and, for a change it would accept, what the registration would do.
fn with_gate(
    output: Output,
    rendered: String,
    answer: &Value,
    blockers: &[String],
) -> Result<String> {
    match output {
        Output::Text => {
            let mut text = String::new();
            if !blockers.is_empty() {
                text.push_str("REFUSED by the removal gate:\n");
                for line in blockers {
                    text.push_str(&format!("  {line}\n"));
                }
                text.push('\n');
            }
            text.push_str(&rendered);
            if let Some(version) = answer["existingVersion"].as_i64() {
                text.push_str(&format!(
                    "\nthe subject already holds this schema as version {version}: registering it writes nothing\n"
                ));
            }
            for approval in answer["approvals"].as_array().into_iter().flatten() {
                text.push_str(&format!(
                    "\naccepted by approval {} of {} ({}): {}\n",
                    approval["id"], approval["approver"], approval["rule"], approval["reason"]
                ));
            }
            Ok(text)
        }
        Output::Json => {
            let mut document: Value = serde_json::from_str(&rendered)?;
            if let Value::Object(m) = &mut document {
                if !blockers.is_empty() {
                    m.insert("compatible".into(), json!(false));
                    m.insert("blockers".into(), json!(blockers));
                }
                for key in ["existingVersion", "removes", "approvals"] {
                    if let Some(value) = answer.get(key) {
                        m.insert(key.into(), value.clone());
                    }
                }
            }
            Ok(format!("{}\n", serde_json::to_string_pretty(&document)?))
        }
        Output::Sarif => {
            let mut log: Value = serde_json::from_str(&rendered)?;
            if let Some(results) = log["runs"][0]["results"].as_array_mut() {
                for line in blockers {
                    results.push(json!({
                        "ruleId": "REMOVAL_GATE",
                        "level": "error",
                        "message": {"text": line},
                    }));
                }
            }
            Ok(format!("{}\n", serde_json::to_string_pretty(&log)?))
        }
    }
}
