//! `covenant approve` and `covenant approvals`: accepted risk, on record, on a running
//! registry (`/covenant/v1/subjects/{subject}/approvals`).

use crate::governance::{Api, Server, segment};
use crate::output::outln;
use anyhow::Context;
use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::process::ExitCode;

/// Accept the findings of one rule for one exact candidate schema, so that registering that
/// schema (from any client) goes through and names this approval. Needs the Approve operation
/// on the subject.
#[derive(clap::Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    server: Server,
    /// The subject the candidate will be registered under.
    #[arg(long)]
    subject: String,
    /// The rule whose findings are accepted (LIKELY_RENAME, ...).
    #[arg(long)]
    rule: String,
    /// Accept the rule's finding at this path only (as the refusal names it: /fields/x).
    #[arg(long)]
    path: Option<String>,
    /// Why the risk is accepted; kept on record with the approver's name.
    #[arg(long)]
    reason: String,
    /// How long the approval counts: 7d, 12h, 30m, 45s, 2w (default: until revoked).
    #[arg(long)]
    expires: Option<String>,
    /// Who approves, on a registry without authentication (with it: the authenticated caller).
    #[arg(long)]
    approver: Option<String>,
    /// AVRO, JSON, PROTOBUF or ICEBERG.
    #[arg(long = "type", default_value = "AVRO")]
    schema_type: String,
    /// The exact candidate schema file.
    file: PathBuf,
}

pub fn run_approve(args: ApproveArgs) -> anyhow::Result<ExitCode> {
    let api = Api::new(&args.server)?;
    let schema = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let mut body = Map::new();
    body.insert("schema".into(), json!(schema));
    body.insert(
        "schemaType".into(),
        json!(args.schema_type.to_ascii_uppercase()),
    );
    body.insert("rule".into(), json!(args.rule));
    body.insert("reason".into(), json!(args.reason));
    for (key, value) in [
        ("path", &args.path),
        ("expires", &args.expires),
        ("approver", &args.approver),
    ] {
        if let Some(v) = value {
            body.insert(key.into(), json!(v));
        }
    }
    let path = format!("/covenant/v1/subjects/{}/approvals", segment(&args.subject));
    match api.call("POST", &path, Some(Value::Object(body)))? {
        Ok(approval) => {
            outln!("{}", approval_line(&approval));
            outln!(
                "{}",
                serde_json::to_string_pretty(&approval).unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(code) => Ok(code),
    }
}

/// List or revoke a subject's approvals.
#[derive(clap::Args)]
pub struct ApprovalsArgs {
    #[command(flatten)]
    server: Server,
    #[command(subcommand)]
    command: ApprovalsCommand,
}

#[derive(clap::Subcommand)]
enum ApprovalsCommand {
    /// The subject's approvals with their state (live, expired, revoked).
    List {
        #[arg(long)]
        subject: String,
    },
    /// Withdraw an approval: registrations stop counting it.
    Revoke {
        #[arg(long)]
        subject: String,
        id: i64,
        #[arg(long)]
        reason: Option<String>,
        /// Who revokes, on a registry without authentication (with it: the caller).
        #[arg(long)]
        by: Option<String>,
    },
}

/// `#3 live LIKELY_RENAME at /fields/x by risk-office (expires ...): reason`.
fn approval_line(a: &Value) -> String {
    let text = |key: &str| a.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let path = a
        .get("path")
        .and_then(Value::as_str)
        .map(|p| format!(" at {p}"))
        .unwrap_or_default();
    let expires = a
        .get("expires_at")
        .and_then(Value::as_i64)
        .and_then(chrono::DateTime::from_timestamp_millis)
        .map(|t| format!(" until {}", t.format("%Y-%m-%dT%H:%M:%SZ")))
        .unwrap_or_default();
    format!(
        "approval #{} {} {}{path} by {}{expires}: {}",
        a.get("id").and_then(Value::as_i64).unwrap_or(0),
        text("state"),
        text("rule"),
        text("approver"),
        text("reason")
    )
}

pub fn run_approvals(args: ApprovalsArgs) -> anyhow::Result<ExitCode> {
    let api = Api::new(&args.server)?;
    match args.command {
        ApprovalsCommand::List { subject } => {
            let path = format!("/covenant/v1/subjects/{}/approvals", segment(&subject));
            match api.call("GET", &path, None)? {
                Ok(Value::Array(list)) => {
                    for a in &list {
                        outln!("{}", approval_line(a));
                    }
                    if list.is_empty() {
                        outln!("no approvals");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Ok(other) => {
                    outln!("{other:#}");
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            }
        }
        ApprovalsCommand::Revoke {
            subject,
            id,
            reason,
            by,
        } => {
            let path = format!(
                "/covenant/v1/subjects/{}/approvals/{id}/revoke",
                segment(&subject)
            );
            let mut body = json!({"reason": reason.unwrap_or_default()});
            if let Some(by) = by {
                body["by"] = json!(by);
            }
            match api.call("POST", &path, Some(body))? {
                Ok(approval) => {
                    outln!("{}", approval_line(&approval));
                    Ok(ExitCode::SUCCESS)
                }
                Err(code) => Ok(code),
            }
        }
    }
}
