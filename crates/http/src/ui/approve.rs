//! Accepting risk from the console: on a candidate's verdict, each error finding gets an
//! approve form for whoever holds `Approve` on the subject (as `POST
//! /covenant/v1/subjects/{subject}/approvals`, the same checks and the same audit entry).

use super::html::{E, url};
use super::{Console, CsrfForm, Ctx, UiError, UiResult, layout};
use crate::approval_routes::{Terms, record};
use crate::audit::{RequestId, context_of};
use crate::auth::{Operation, Resource};
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use covenant_engine::{Finding, Severity};
use covenant_registry::SchemaRequest;
use covenant_store::AuditTarget;
use serde_json::Value;
use std::fmt::Write as _;

fn may_approve(ctx: &Ctx, subject: &str) -> bool {
    ctx.access
        .allows(Operation::Approve, &Resource::Subject(subject.to_string()))
}

/// One approve form per error finding of the candidate, for a caller who may approve there;
/// for anyone else, who may.
pub fn approve_forms(
    ctx: &Ctx,
    subject: &str,
    kind: &str,
    text: &str,
    findings: &[Finding],
) -> String {
    let errors: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if errors.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Accept the risk</h2>");
    if !may_approve(ctx, subject) {
        write!(
            out,
            "<p class=\"note\" id=\"approve-who\">The safe way forward is the change each hint describes. Otherwise a principal holding the Approve operation on subject {} can accept these findings for this exact schema.</p>",
            E(subject)
        )
        .ok();
        return out;
    }
    out.push_str("<p class=\"note\">An approval accepts one rule's finding for exactly this schema, on record with your name and reason; registering it then succeeds from any client.</p>");
    for (i, f) in errors.iter().enumerate() {
        write!(
            out,
            "<form method=\"post\" action=\"/ui/subjects/{}/approve\" class=\"approve\" id=\"approve-{i}\">{}<input type=\"hidden\" name=\"schemaType\" value=\"{}\"><input type=\"hidden\" name=\"schema\" value=\"{}\"><input type=\"hidden\" name=\"rule\" value=\"{}\"><input type=\"hidden\" name=\"path\" value=\"{}\"><p><b>{}</b> at <code>{}</code></p><label>Reason <input name=\"reason\" required size=\"60\"></label> <label>Expires <input name=\"expires\" value=\"7d\" size=\"5\"></label> <button type=\"submit\">Approve</button></form>",
            url(subject),
            ctx.csrf_field(),
            E(kind),
            E(text),
            E(&f.rule),
            E(&f.path),
            E(&f.rule),
            E(&f.path)
        )
        .ok();
    }
    out
}

/// `POST /ui/subjects/{subject}/approve`: records the approval, then shows it.
pub async fn approve(
    State(console): State<Console>,
    ctx: Ctx,
    Path(subject): Path<String>,
    request_id: Option<Extension<RequestId>>,
    CsrfForm(form): CsrfForm,
) -> UiResult {
    if !may_approve(&ctx, &subject) {
        return Err(UiError(
            StatusCode::FORBIDDEN,
            format!("Approving needs the Approve operation on subject {subject}."),
        ));
    }
    let field = |key: &str| form.get(key).unwrap_or("").to_string();
    let candidate = SchemaRequest {
        schema: field("schema"),
        schema_type: Some(field("schemaType")),
        ..SchemaRequest::default()
    };
    let expires = Some(field("expires")).filter(|e| !e.trim().is_empty());
    let terms = Terms {
        rule: field("rule"),
        path: Some(field("path")).filter(|p| !p.is_empty()),
        reason: field("reason"),
        expires,
        expires_at: None,
    };
    let context = context_of(&ctx.principal, request_id.as_ref().map(|r| &r.0));
    let audit = context.entry("approval.create", AuditTarget::subject(Some(&subject)));
    let approval = record(
        &console.app,
        &subject,
        candidate,
        terms,
        ctx.principal.actor(),
        audit,
    )
    .await?;
    let text = |key: &str| approval.get(key).and_then(Value::as_str).unwrap_or("");
    let mut body = format!(
        "<p class=\"crumbs\"><a href=\"/ui/subjects\">Subjects</a> / <a href=\"/ui/subjects/{}\">{}</a> /</p><h1>Approval #{}</h1>",
        url(&subject),
        E(&subject),
        approval.get("id").and_then(Value::as_i64).unwrap_or(0)
    );
    write!(
        body,
        "<dl class=\"facts\" id=\"approval\"><dt>Rule</dt><dd>{}</dd><dt>Path</dt><dd>{}</dd><dt>Approver</dt><dd>{}</dd><dt>Reason</dt><dd>{}</dd><dt>State</dt><dd>{}</dd></dl><p>Registering exactly this schema under {} now succeeds, from any client, and its audit entry names this approval.</p>",
        E(text("rule")),
        E(text("path")),
        E(text("approver")),
        E(text("reason")),
        E(text("state")),
        E(&subject)
    )
    .ok();
    Ok(layout(&ctx, "Approval", &body))
}
