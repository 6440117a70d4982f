//! Approvals over HTTP: accepted risk, on record, under `/covenant/v1/subjects/{subject}/approvals`.
//!
//! A principal holding `Approve` on the subject (the route table's rule) accepts the findings
//! of one rule, optionally at one path, for one exact candidate schema; a registration of that
//! candidate is then judged with them accepted (`covenant_registry`'s `approvals.rs`), from
//! any client. Approvals are listed per subject, revoked, and expire; creating and revoking
//! are audited writes whose entries commit with them.

use crate::AppState;
use crate::audit::{AuditedWrite, Caller, HandlerRefusal};
use crate::auth::{Operation, Resource};
use crate::error::ApiError;
use crate::extract::{ConfluentJson, SafePath};
use crate::handlers::{SchemaBody, ok};
use axum::extract::State;
use axum::response::Response;
use covenant_governance::{
    Approval, Governance, GovernanceError, NewApproval, Revocation, parse_instant,
};
use covenant_registry::{AcceptedRisk, ApprovalSource, HookFuture, SchemaRequest};
use covenant_store::AuditEntry;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

type ApiResult = Result<Response, ApiError>;

/// The longest reason or rule text accepted (the governance limit on free text).
const MAX_TEXT: usize = 8192;

/// The registry's source of live approvals: the governance store, read at governance time.
pub struct GovernanceApprovals(pub Arc<Governance>);

impl ApprovalSource for GovernanceApprovals {
    fn live_approvals<'a>(
        &'a self,
        subject: &'a str,
        fingerprint: &'a str,
    ) -> HookFuture<'a, Result<Vec<AcceptedRisk>, String>> {
        Box::pin(async move {
            let now = self.0.now();
            let all = self
                .0
                .store()
                .approvals(Some(subject))
                .await
                .map_err(|e| e.to_string())?;
            Ok(all
                .into_iter()
                .filter(|a| a.fingerprint == fingerprint && a.is_live(now))
                .map(|a| accepted(&a))
                .collect())
        })
    }
}

fn accepted(a: &Approval) -> AcceptedRisk {
    AcceptedRisk {
        id: a.id,
        rule: a.rule.clone(),
        path: a.path.clone(),
        approver: a.approver.clone(),
        reason: a.reason.clone(),
        expires_at: a.expires_at,
    }
}

/// An approval as answered: the record with its `state` (`live`, `expired`, `revoked`) now.
fn approval_json(a: &Approval, now: i64) -> Value {
    let mut v = serde_json::to_value(a).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.insert("state".into(), json!(a.state(now)));
    }
    v
}

fn governance(state: &AppState) -> Result<&Arc<Governance>, ApiError> {
    state
        .governance
        .as_ref()
        .ok_or_else(ApiError::governance_disabled)
}

/// `POST /covenant/v1/subjects/{s}/approvals`: the candidate (as a registration body) and
/// what is accepted.
#[derive(Debug, Deserialize)]
pub struct ApprovalBody {
    #[serde(flatten)]
    candidate: SchemaBody,
    rule: String,
    #[serde(default)]
    path: Option<String>,
    reason: String,
    /// Who approves; with authentication on, the principal (filled in, refused when it names
    /// someone else).
    #[serde(default)]
    approver: Option<String>,
    /// How long it counts: `7d`, `12h`, `30m`, `45s`, `2w`.
    #[serde(default)]
    expires: Option<String>,
    /// When it stops counting: milliseconds since the epoch or RFC 3339.
    #[serde(default)]
    expires_at: Option<Value>,
}

/// `7d`, `12h`, `30m`, `45s`, `2w` (or a bare number of seconds) in milliseconds.
pub fn parse_duration_ms(text: &str) -> Option<i64> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let n: i64 = number.parse().ok()?;
    let unit_ms: i64 = match unit.trim() {
        "s" | "sec" | "secs" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minutes" => 60_000,
        "h" | "hours" => 3_600_000,
        "d" | "days" => 86_400_000,
        "w" | "weeks" => 7 * 86_400_000,
        _ => return None,
    };
    n.checked_mul(unit_ms).filter(|ms| *ms > 0)
}

fn expiry(
    expires: &Option<String>,
    expires_at: &Option<Value>,
    now: i64,
) -> Result<Option<i64>, ApiError> {
    match (expires, expires_at) {
        (Some(_), Some(_)) => Err(ApiError::invalid_input(
            "give 'expires' (a duration) or 'expires_at' (a time), not both",
        )),
        (Some(text), None) => parse_duration_ms(text)
            .map(|ms| Some(now.saturating_add(ms)))
            .ok_or_else(|| {
                ApiError::invalid_input(format!(
                    "'expires' must be a duration such as 7d, 12h, 30m or 45s, not '{text}'"
                ))
            }),
        (None, Some(Value::Number(n))) => Ok(n.as_i64()),
        (None, Some(Value::String(text))) => parse_instant(text).map(Some).ok_or_else(|| {
            ApiError::invalid_input(format!(
                "'expires_at' must be milliseconds since the epoch or an RFC 3339 time, not '{text}'"
            ))
        }),
        (None, Some(Value::Null)) | (None, None) => Ok(None),
        (None, Some(other)) => Err(ApiError::invalid_input(format!(
            "'expires_at' must be milliseconds since the epoch or an RFC 3339 time, not {other}"
        ))),
    }
}

/// The approver: the authenticated principal, or the body's `approver` without authentication.
async fn approver(
    state: &AppState,
    caller: &Caller,
    subject: &str,
    claimed: Option<&str>,
    key: &str,
) -> Result<String, ApiError> {
    let claimed = claimed.map(str::trim).filter(|c| !c.is_empty());
    match (&caller.principal.name, claimed) {
        (Some(name), None) => Ok(name.clone()),
        (Some(name), Some(c)) if c == name => Ok(name.clone()),
        (Some(name), Some(c)) => Err(caller
            .refuse(
                state,
                HandlerRefusal::new(
                    Operation::Approve,
                    Some(Resource::Subject(subject.to_string())),
                    format!(
                        "'{key}' names '{c}' but the request is authenticated as '{name}'; an approval is recorded under the authenticated principal"
                    ),
                ),
            )
            .await),
        (None, Some(c)) => Ok(c.to_string()),
        (None, None) => Err(ApiError::invalid_input(format!(
            "'{key}' is required: name who accepts the risk"
        ))),
    }
}

fn text_field(value: &str, key: &str) -> Result<String, ApiError> {
    let value = value.trim();
    if value.is_empty() {
        return Err(ApiError::invalid_input(format!(
            "'{key}' must not be empty"
        )));
    }
    if value.len() > MAX_TEXT {
        return Err(ApiError::from(GovernanceError::OverLimit(format!(
            "'{key}' is {} bytes, over the limit text.length ({MAX_TEXT})",
            value.len()
        ))));
    }
    Ok(value.to_string())
}

pub async fn create(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    caller: Caller,
    SafePath(subject): SafePath<String>,
    ConfluentJson(body): ConfluentJson<ApprovalBody>,
) -> ApiResult {
    let approver = approver(
        &state,
        &caller,
        &subject,
        body.approver.as_deref(),
        "approver",
    )
    .await?;
    let request = body.candidate.into_request()?;
    let terms = Terms {
        rule: body.rule,
        path: body.path,
        reason: body.reason,
        expires: body.expires,
        expires_at: body.expires_at,
    };
    let answer = record(&state, &subject, request, terms, approver, audit).await?;
    Ok(ok(answer))
}

/// What an approval accepts, as asked (the REST body's or the console form's fields).
pub struct Terms {
    pub rule: String,
    pub path: Option<String>,
    pub reason: String,
    pub expires: Option<String>,
    pub expires_at: Option<Value>,
}

/// Checks and writes one approval of `candidate` for `subject` by `approver` (already
/// authorized to approve there), with its audit entry; the approval as answered, with the
/// findings it accepts under `accepts`.
pub async fn record(
    state: &AppState,
    subject: &str,
    candidate: SchemaRequest,
    terms: Terms,
    approver: String,
    mut audit: AuditEntry,
) -> Result<Value, ApiError> {
    let gov = governance(state)?;
    let now = gov.now();
    let rule = text_field(&terms.rule, "rule")?.to_ascii_uppercase();
    let known = covenant_policy::all_rule_groups()
        .iter()
        .any(|(_, rules)| rules.iter().any(|r| r.id == rule));
    if !known {
        return Err(ApiError::invalid_input(format!(
            "'{rule}' is not a rule id (see docs/rules.md)"
        )));
    }
    let reason = text_field(&terms.reason, "reason")?;
    let path = terms
        .path
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let expires_at = expiry(&terms.expires, &terms.expires_at, now)?;
    if expires_at.is_some_and(|end| end <= now) {
        return Err(ApiError::invalid_input(
            "the approval would have expired already",
        ));
    }
    let request = candidate;
    let (fingerprint, schema_type) = state
        .registry
        .candidate_fingerprint(subject, &request)
        .await?;
    // Only what the candidate is refused for, or warned of, can be accepted: an approval
    // names findings, not a blank cheque.
    let report = state
        .registry
        .test_compatibility(subject, None, &request, false)
        .await?;
    let probe = AcceptedRisk {
        id: 0,
        rule: rule.clone(),
        path: path.clone(),
        approver: approver.clone(),
        reason: reason.clone(),
        expires_at,
    };
    let matching: Vec<Value> = report
        .findings
        .iter()
        .filter(|f| probe.accepts(f))
        .map(|f| json!({"rule": f.rule, "path": f.path, "severity": f.severity.as_str(), "message": f.message}))
        .collect();
    if matching.is_empty() {
        let found: Vec<String> = report
            .findings
            .iter()
            .map(|f| format!("{} at '{}'", f.rule, f.path))
            .collect();
        return Err(ApiError::invalid_input(format!(
            "the candidate has no finding of {rule}{} against subject '{subject}', so there is nothing to approve; its findings: [{}]",
            path.as_deref()
                .map(|p| format!(" at '{p}'"))
                .unwrap_or_default(),
            found.join(", ")
        )));
    }
    audit.subject = Some(subject.to_string());
    audit.detail = Some(format!(
        "{rule}{} for schema {}…: {reason}",
        path.as_deref()
            .map(|p| format!(" at '{p}'"))
            .unwrap_or_default(),
        &fingerprint[..12.min(fingerprint.len())]
    ));
    let new = NewApproval {
        subject: subject.to_string(),
        rule,
        path,
        fingerprint,
        schema_type,
        reason,
        approver,
        expires_at,
    };
    let created = gov
        .store()
        .create_approval(&new, now, Some(&audit))
        .await
        .map_err(ApiError::from)?;
    let mut answer = approval_json(&created, now);
    if let Value::Object(m) = &mut answer {
        m.insert("accepts".into(), Value::Array(matching));
    }
    Ok(answer)
}

pub async fn list(State(state): State<AppState>, SafePath(subject): SafePath<String>) -> ApiResult {
    let gov = governance(&state)?;
    let now = gov.now();
    let all = gov
        .store()
        .approvals(Some(&subject))
        .await
        .map_err(ApiError::from)?;
    Ok(ok(Value::Array(
        all.iter().map(|a| approval_json(a, now)).collect(),
    )))
}

#[derive(Debug, Deserialize)]
pub struct RevokeBody {
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    by: Option<String>,
}

pub async fn revoke(
    State(state): State<AppState>,
    AuditedWrite(mut audit): AuditedWrite,
    caller: Caller,
    SafePath((subject, id)): SafePath<(String, String)>,
    ConfluentJson(body): ConfluentJson<RevokeBody>,
) -> ApiResult {
    let gov = governance(&state)?;
    let now = gov.now();
    let id: i64 = id
        .trim()
        .parse()
        .map_err(|_| ApiError::invalid_input(format!("'{id}' is not an approval id")))?;
    let by = approver(&state, &caller, &subject, body.by.as_deref(), "by").await?;
    let reason = body.reason.unwrap_or_default();
    if reason.len() > MAX_TEXT {
        return Err(ApiError::from(GovernanceError::OverLimit(format!(
            "'reason' is {} bytes, over the limit text.length ({MAX_TEXT})",
            reason.len()
        ))));
    }
    audit.detail = Some(format!("approval {id} revoked: {reason}"));
    let path_subject = subject.clone();
    let edit = move |a: &mut Approval| -> Result<(), GovernanceError> {
        if a.subject != path_subject {
            return Err(GovernanceError::NotFound {
                what: "approval",
                key: id.to_string(),
            });
        }
        if a.revoked.is_some() {
            return Err(GovernanceError::Conflict(format!(
                "approval {id} is already revoked"
            )));
        }
        a.revoked = Some(Revocation {
            by: by.clone(),
            at: now,
            reason: reason.trim().to_string(),
        });
        Ok(())
    };
    let revoked = gov
        .store()
        .modify_approval(id, &edit, Some(&audit))
        .await
        .map_err(ApiError::from)?;
    Ok(ok(approval_json(&revoked, now)))
}

#[cfg(test)]
mod tests {
    use super::parse_duration_ms;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration_ms("7d"), Some(7 * 86_400_000));
        assert_eq!(parse_duration_ms("12h"), Some(12 * 3_600_000));
        assert_eq!(parse_duration_ms("30m"), Some(30 * 60_000));
        assert_eq!(parse_duration_ms("2"), Some(2_000));
        assert_eq!(parse_duration_ms("2w"), Some(14 * 86_400_000));
        assert_eq!(parse_duration_ms("0s"), None);
        assert_eq!(parse_duration_ms("soon"), None);
        assert_eq!(parse_duration_ms("3y"), None);
    }
}
