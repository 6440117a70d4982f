//! The governance pages: a subject's consumers and usage, deprecations with their gate and
//! actions, data profiles, and the audit trail. Governance records span subjects, so (as in
//! the API) they are read and changed with `Govern` on the registry; a subject's readers
//! and profiles need only `Read` on the subject.

use super::html::{self, Bar, E, url};
use super::{Console, CsrfForm, Ctx, UiError, UiResult, layout, not_found};
use crate::audit::{RequestId, context_of};
use crate::extract::Params;
use axum::Extension;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect};
use covenant_governance::{ExceptionRequest, Governance, StageRequest};
use covenant_store::governance::{
    Attribution, BlockerKind, Deprecation, EvidenceBody, Stage, UsageQuery,
};
use covenant_store::{AuditEntry, AuditQuery, AuditTarget};
use std::fmt::Write as _;
use std::sync::Arc;

const DAY_MS: i64 = 86_400_000;
/// Days drawn in a subject's usage chart.
const USAGE_DAYS: i64 = 14;

fn governance(console: &Console) -> Result<&Arc<Governance>, UiError> {
    console.app.governance.as_ref().ok_or_else(|| {
        UiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "Consumer governance is not enabled on this server.".into(),
        )
    })
}

fn header(subject: &str, current: &str) -> String {
    let s = url(subject);
    let tab = |href: String, name: &str| {
        let cur = if name == current {
            " aria-current=\"page\""
        } else {
            ""
        };
        format!("<a href=\"{href}\"{cur}>{name}</a>")
    };
    format!(
        "<p class=\"crumbs\"><a href=\"/ui/subjects\">Subjects</a> /</p><h1 id=\"subject-name\">{}</h1><nav class=\"tabs\">{}{}{}</nav>",
        E(subject),
        tab(format!("/ui/subjects/{s}"), "Schema"),
        tab(format!("/ui/subjects/{s}/consumers"), "Consumers"),
        tab(format!("/ui/subjects/{s}/profiles"), "Profiles"),
    )
}

async fn exists(console: &Console, ctx: &Ctx, subject: &str) -> bool {
    ctx.can_read(subject)
        && console
            .app
            .registry
            .versions(subject, false, false)
            .await
            .is_ok()
}

/// `/ui/subjects/{subject}/consumers`: who fetched which version and when (readers), and
/// with `Govern` the declared consumers, usage over time and unattributed reporters.
pub async fn consumers(
    State(console): State<Console>,
    ctx: Ctx,
    Path(subject): Path<String>,
) -> UiResult {
    if !exists(&console, &ctx, &subject).await {
        return Ok(not_found(&ctx));
    }
    let gov = governance(&console)?;
    console.app.flush_reads().await;
    let mut body = header(&subject, "Consumers");
    body.push_str("<h2>Readers</h2><table class=\"list\" id=\"readers\"><thead><tr><th>Reader</th><th>Consumer</th><th>Version</th><th>Fetches</th><th>First</th><th>Last read</th></tr></thead><tbody>");
    let readers = gov.readers(&subject).await?;
    if readers.is_empty() {
        body.push_str("<tr><td colspan=\"6\">No schema fetches recorded yet.</td></tr>");
    }
    for r in &readers {
        let consumer = match &r.consumer {
            Some(c) => E(c).to_string(),
            None => "<span class=\"badge warn\">unattributed</span>".into(),
        };
        write!(
            body,
            "<tr><td>{}</td><td>{consumer}</td><td>v{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            E(&r.read.reader),
            r.read.version,
            r.read.reads,
            html::time(r.read.first_at),
            html::time(r.read.last_at)
        )
        .ok();
    }
    body.push_str("</tbody></table>");
    if ctx.can_govern() {
        body.push_str(&declared(gov, &subject).await?);
        body.push_str(&usage_chart(gov, &subject).await?);
        body.push_str(&unattributed(gov, &subject).await?);
    } else {
        body.push_str("<p class=\"note\">Declared consumers and usage reports need the Govern permission.</p>");
    }
    Ok(layout(&ctx, &format!("{subject}: consumers"), &body))
}

async fn declared(gov: &Governance, subject: &str) -> Result<String, UiError> {
    let mut out = String::from(
        "<h2>Declared consumers</h2><table class=\"list\" id=\"declared\"><thead><tr><th>Consumer</th><th>Owner</th><th>Cadence</th><th>Criticality</th><th>Fields read</th><th>Last read</th></tr></thead><tbody>",
    );
    let mut any = false;
    for c in gov.consumers(false).await? {
        for read in c.reads.iter().filter(|r| r.subject == subject) {
            any = true;
            let fields = if read.fields.is_empty() {
                "every field".to_string()
            } else {
                read.fields
                    .iter()
                    .map(|f| format!("<code>{}</code>", E(f)))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let last = last_report(gov, subject, &c.name).await?;
            write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{fields}</td><td>{}</td></tr>",
                E(&c.name),
                E(&c.owner),
                c.cadence,
                c.criticality,
                last.map_or_else(|| "never reported".to_string(), html::time)
            )
            .ok();
        }
    }
    if !any {
        out.push_str("<tr><td colspan=\"6\">No consumer declares this subject.</td></tr>");
    }
    out.push_str("</tbody></table>");
    Ok(out)
}

/// The last usage report of `consumer` on `subject` within retention.
async fn last_report(
    gov: &Governance,
    subject: &str,
    consumer: &str,
) -> Result<Option<i64>, UiError> {
    let now = gov.now();
    let rows = gov
        .store()
        .reader_usage(&UsageQuery {
            subject: Some(subject.to_string()),
            field: None,
            attribution: Attribution::Any,
            from: now - gov.config().retention_ms,
            to: now,
        })
        .await?;
    Ok(rows
        .iter()
        .filter(|r| r.consumer.as_deref() == Some(consumer))
        .map(|r| r.last_at)
        .max())
}

/// Usage reports per day over the last [`USAGE_DAYS`] days, as bars with their counts.
async fn usage_chart(gov: &Governance, subject: &str) -> Result<String, UiError> {
    let now = gov.now();
    let today = now - now.rem_euclid(DAY_MS);
    let mut buckets = Vec::new();
    for d in (0..USAGE_DAYS).rev() {
        let from = today - d * DAY_MS;
        let rows = gov
            .store()
            .reader_usage(&UsageQuery {
                subject: Some(subject.to_string()),
                field: None,
                attribution: Attribution::Any,
                from,
                to: from + DAY_MS - 1,
            })
            .await?;
        let label = html::time(from)[5..10].to_string();
        buckets.push((label, rows.iter().map(|r| r.reports).sum::<u64>()));
    }
    let total: u64 = buckets.iter().map(|(_, n)| n).sum();
    Ok(format!(
        "<h2>Usage reports per day</h2><figure id=\"usage\">{}<figcaption>{total} reports in the last {USAGE_DAYS} days (UTC days, month-day).</figcaption></figure>",
        html::time_chart("Usage reports per day", &buckets)
    ))
}

async fn unattributed(gov: &Governance, subject: &str) -> Result<String, UiError> {
    let now = gov.now();
    let rows = gov
        .unattributed_usage(Some(subject), now - gov.config().retention_ms, now)
        .await?;
    let mut out = String::from(
        "<h2>Unattributed reporters</h2><table class=\"list\" id=\"unattributed\"><thead><tr><th>Client</th><th>Reader schema</th><th>Reports</th><th>Last</th></tr></thead><tbody>",
    );
    if rows.is_empty() {
        out.push_str("<tr><td colspan=\"4\">None: every reporter belongs to a consumer.</td></tr>");
    }
    for r in rows {
        write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            E(&r.client_id),
            r.reader_schema_id.map_or("-".into(), |i| i.to_string()),
            r.reports,
            html::time(r.last_at)
        )
        .ok();
    }
    out.push_str("</tbody></table>");
    Ok(out)
}

/// `/ui/deprecations`: every record with its stage, promises, evidence, exceptions and the
/// gate's current blockers, and the actions the principal may take.
pub async fn deprecations(State(console): State<Console>, ctx: Ctx) -> UiResult {
    if !ctx.can_govern() {
        return Ok(not_found(&ctx));
    }
    let gov = governance(&console)?;
    console.app.flush_reads().await;
    let mut body = String::from("<h1>Deprecations</h1>");
    let all = gov.deprecations(None).await?;
    if all.is_empty() {
        body.push_str("<p>No deprecations.</p>");
    }
    for d in &all {
        body.push_str(&record(gov, &ctx, d).await?);
    }
    Ok(layout(&ctx, "Deprecations", &body))
}

fn stage_track(current: Stage) -> String {
    let mut out = String::from("<ol class=\"stages\">");
    for s in Stage::ALL {
        let (class, mark) = match s.cmp(&current) {
            std::cmp::Ordering::Less => ("done", "✓ "),
            std::cmp::Ordering::Equal => ("now", "▶ "),
            std::cmp::Ordering::Greater => ("todo", ""),
        };
        write!(out, "<li class=\"{class}\">{mark}{}</li>", s.as_str()).ok();
    }
    out.push_str("</ol>");
    out
}

async fn record(gov: &Governance, ctx: &Ctx, d: &Deprecation) -> Result<String, UiError> {
    let gate = gov.gate_for(d).await?;
    let subject = d.target.subject();
    let target = match d.target.field() {
        Some(f) => format!("{} <code>{}</code>", E(subject), E(f)),
        None => E(subject).to_string(),
    };
    let mut out = format!(
        "<article class=\"record\" id=\"deprecation-{id}\"><h2>#{id} {target}</h2>{}<p class=\"stage\">Stage: <b>{}</b></p><dl class=\"facts\"><dt>Old promise</dt><dd>{}</dd><dt>New promise</dt><dd>{}</dd><dt>Replacement</dt><dd>{}</dd><dt>Window</dt><dd>{} → {}</dd></dl>",
        stage_track(d.stage),
        d.stage.as_str(),
        E(&d.old_promise),
        E(&d.new_promise),
        E(d.replacement.as_deref().unwrap_or("none")),
        html::time(d.window_start),
        html::time(d.window_end),
        id = d.id,
    );
    out.push_str("<h3>Blockers</h3><ul class=\"blockers\">");
    if gate.blockers.is_empty() {
        out.push_str("<li class=\"ok\">✓ Nothing blocks removal.</li>");
    }
    for b in &gate.blockers {
        write!(
            out,
            "<li class=\"bad\">✗ <b>{}</b> {}</li>",
            b.kind,
            E(&b.message)
        )
        .ok();
    }
    for o in &gate.overridden {
        write!(
            out,
            "<li>overridden: <b>{}</b> {} (exception by {})</li>",
            o.blocker.kind,
            E(&o.blocker.message),
            E(&o.exception.approver)
        )
        .ok();
    }
    out.push_str("</ul><h3>Evidence</h3><ul class=\"evidence\">");
    if d.evidence.is_empty() {
        out.push_str("<li>none</li>");
    }
    for e in &d.evidence {
        write!(
            out,
            "<li>{} — {} by {}: {}</li>",
            html::time(e.recorded_at),
            E(&e.claim),
            E(&e.recorded_by),
            E(&evidence_text(&e.body))
        )
        .ok();
    }
    out.push_str("</ul><h3>Exceptions</h3><ul class=\"exceptions\">");
    if d.exceptions.is_empty() {
        out.push_str("<li>none</li>");
    }
    for x in &d.exceptions {
        write!(
            out,
            "<li>overrides <b>{}</b>{} — {} (approved by {})</li>",
            x.overrides,
            x.party
                .as_deref()
                .map(|p| format!(" for {}", E(p)))
                .unwrap_or_default(),
            E(&x.reason),
            E(&x.approver)
        )
        .ok();
    }
    out.push_str("</ul>");
    if ctx.can_govern() && d.stage != Stage::Removed {
        out.push_str(&actions(ctx, d, &gate.blockers));
    }
    out.push_str("</article>");
    Ok(out)
}

fn evidence_text(body: &EvidenceBody) -> String {
    match body {
        EvidenceBody::SignOff {
            consumer,
            who,
            statement,
            ..
        } => format!("sign-off of {consumer} by {who}: {statement}"),
        EvidenceBody::UsageQuery { result, .. } => format!("usage query, {} row(s)", result.len()),
        EvidenceBody::ReplayResult { sample, passed, .. } => {
            format!(
                "replay of {sample}: {}",
                if *passed { "passed" } else { "failed" }
            )
        }
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn next_stage(stage: Stage) -> Option<Stage> {
    Stage::ALL.into_iter().find(|s| *s > stage)
}

fn actions(ctx: &Ctx, d: &Deprecation, blockers: &[covenant_governance::Blocker]) -> String {
    let id = d.id;
    let mut out = String::from("<div class=\"actions\">");
    if let Some(next) = next_stage(d.stage) {
        write!(
            out,
            "<form method=\"post\" action=\"/ui/deprecations/{id}/stage\" data-confirm=\"Move deprecation #{id} to {0}?\" class=\"inline\">{1}<input type=\"hidden\" name=\"to\" value=\"{0}\"><label>Note <input name=\"note\"></label><button type=\"submit\" id=\"advance-{id}\">Advance to {0}</button></form>",
            next.as_str(),
            ctx.csrf_field()
        )
        .ok();
    }
    write!(
        out,
        "<details><summary>Add evidence</summary><form method=\"post\" action=\"/ui/deprecations/{id}/evidence\" data-confirm=\"Add this sign-off to deprecation #{id}?\" class=\"stack\">{}<label>Claim <input name=\"claim\" required></label><label>Consumer signing off <input name=\"consumer\" required></label><label>Statement <input name=\"statement\"></label><button type=\"submit\">Add sign-off</button></form></details>",
        ctx.csrf_field()
    )
    .ok();
    let mut kinds: Vec<BlockerKind> = blockers.iter().map(|b| b.kind).collect();
    kinds.dedup();
    if kinds.is_empty() {
        kinds = BlockerKind::ALL.to_vec();
    }
    let options: String = kinds
        .iter()
        .map(|k| format!("<option value=\"{k}\">{k}</option>"))
        .collect();
    write!(
        out,
        "<details><summary>Add exception</summary><form method=\"post\" action=\"/ui/deprecations/{id}/exceptions\" data-confirm=\"Override a blocker of deprecation #{id}?\" class=\"stack\">{}<label>Overrides <select name=\"overrides\">{options}</select></label><label>Party (consumer or client) <input name=\"party\"></label><label>Reason <input name=\"reason\" required></label><button type=\"submit\">Add exception</button></form></details></div>",
        ctx.csrf_field()
    )
    .ok();
    out
}

/// The audit entry a console action is recorded under, like the API's.
fn audit_entry(
    ctx: &Ctx,
    request: &Option<Extension<RequestId>>,
    operation: &str,
    id: i64,
) -> AuditEntry {
    let context = context_of(&ctx.principal, request.as_ref().map(|r| &r.0));
    context.entry(
        operation,
        AuditTarget {
            detail: Some(format!("deprecation {id}")),
            ..AuditTarget::default()
        },
    )
}

fn parse_id(text: &str) -> Result<i64, UiError> {
    text.parse()
        .map_err(|_| UiError(StatusCode::NOT_FOUND, "No such deprecation.".into()))
}

/// Refuses an action the principal may not take, as the API's layer would.
fn require_govern(ctx: &Ctx) -> Result<(), UiError> {
    if ctx.can_govern() {
        Ok(())
    } else {
        Err(UiError(
            StatusCode::FORBIDDEN,
            "You may not change deprecations.".into(),
        ))
    }
}

fn back(id: i64) -> axum::response::Response {
    Redirect::to(&format!("/ui/deprecations#deprecation-{id}")).into_response()
}

pub async fn advance_stage(
    State(console): State<Console>,
    ctx: Ctx,
    Path(id): Path<String>,
    request_id: Option<Extension<RequestId>>,
    CsrfForm(form): CsrfForm,
) -> UiResult {
    require_govern(&ctx)?;
    let gov = governance(&console)?;
    let id = parse_id(&id)?;
    let to = Stage::parse(form.get("to").unwrap_or(""))
        .ok_or_else(|| UiError(StatusCode::UNPROCESSABLE_ENTITY, "Unknown stage.".into()))?;
    console.app.flush_reads().await;
    let request = StageRequest {
        to,
        by: ctx.principal.actor(),
        note: form.get("note").unwrap_or("").to_string(),
    };
    let audit = audit_entry(&ctx, &request_id, "deprecation.stage", id);
    gov.change_stage(id, request, Some(&audit)).await?;
    console.app.signals.invalidate();
    Ok(back(id))
}

pub async fn add_evidence(
    State(console): State<Console>,
    ctx: Ctx,
    Path(id): Path<String>,
    request_id: Option<Extension<RequestId>>,
    CsrfForm(form): CsrfForm,
) -> UiResult {
    require_govern(&ctx)?;
    let gov = governance(&console)?;
    let id = parse_id(&id)?;
    let by = ctx.principal.actor();
    let body = EvidenceBody::SignOff {
        consumer: form.get("consumer").unwrap_or("").to_string(),
        who: by.clone(),
        signed_at: gov.now(),
        statement: form.get("statement").unwrap_or("").to_string(),
    };
    let audit = audit_entry(&ctx, &request_id, "deprecation.evidence", id);
    gov.add_evidence(id, form.get("claim").unwrap_or(""), &by, body, Some(&audit))
        .await?;
    Ok(back(id))
}

pub async fn add_exception(
    State(console): State<Console>,
    ctx: Ctx,
    Path(id): Path<String>,
    request_id: Option<Extension<RequestId>>,
    CsrfForm(form): CsrfForm,
) -> UiResult {
    require_govern(&ctx)?;
    let gov = governance(&console)?;
    let id = parse_id(&id)?;
    let overrides: BlockerKind = serde_json::from_value(serde_json::json!(
        form.get("overrides").unwrap_or("")
    ))
    .map_err(|_| {
        UiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Unknown blocker kind.".into(),
        )
    })?;
    let party = form
        .get("party")
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let request = ExceptionRequest {
        approver: ctx.principal.actor(),
        reason: form.get("reason").unwrap_or("").to_string(),
        overrides,
        party,
    };
    let audit = audit_entry(&ctx, &request_id, "deprecation.exception", id);
    gov.add_exception(id, request, Some(&audit)).await?;
    Ok(back(id))
}

/// Fields the profiles page shows (bars, trend rows and candidates each); the API pages the
/// rest (`/covenant/v1/subjects/{subject}/profiles/trend?path=`).
const PROFILE_PAGE_FIELDS: usize = 200;
/// Stored windows the profiles page parses and shows: the most recent ones.
const PROFILE_PAGE_WINDOWS: usize = 8;

/// `/ui/subjects/{subject}/profiles`: the latest profile's prevalence of each field as bars,
/// each field's share over the recent windows, and the promotion and removal candidates, each
/// for at most [`PROFILE_PAGE_FIELDS`] fields.
pub async fn profiles(
    State(console): State<Console>,
    ctx: Ctx,
    Path(subject): Path<String>,
) -> UiResult {
    if !exists(&console, &ctx, &subject).await {
        return Ok(not_found(&ctx));
    }
    let registry = &console.app.registry;
    let mut body = header(&subject, "Profiles");
    let mut records = match registry.profiles(&subject, 0, 1000).await {
        Ok(r) => r,
        Err(e) => {
            let e: crate::error::ApiError = e.into();
            write!(body, "<p class=\"note\">{}</p>", E(&e.message)).ok();
            return Ok(layout(&ctx, &format!("{subject}: profiles"), &body));
        }
    };
    records.sort_by_key(|r| r.window_to);
    let skip = records.len().saturating_sub(PROFILE_PAGE_WINDOWS);
    let parsed: Vec<_> = records
        .iter()
        .skip(skip)
        .filter_map(|r| {
            covenant_profile::Profile::from_json(&r.document)
                .ok()
                .map(|p| (r, p))
        })
        .collect();
    let Some((latest_record, latest)) = parsed.last() else {
        body.push_str("<p id=\"no-profiles\">No data profiles stored for this subject.</p>");
        return Ok(layout(&ctx, &format!("{subject}: profiles"), &body));
    };
    let shown = latest.paths.len().min(PROFILE_PAGE_FIELDS);
    let bars: Vec<Bar> = latest
        .paths
        .keys()
        .take(PROFILE_PAGE_FIELDS)
        .map(|path| {
            let share = latest.population(path);
            Bar {
                label: path.clone(),
                value: share,
                caption: format!("{:.0}%", share * 100.0),
            }
        })
        .collect();
    write!(
        body,
        "<h2>Prevalence in the latest window</h2><p>{} records, {} → {}</p><figure id=\"prevalence\">{}</figure>",
        latest.records,
        html::time(latest_record.window_from),
        html::time(latest_record.window_to),
        html::bar_chart("Share of records with a value, per field", &bars, 1.0)
    )
    .ok();
    body.push_str("<h2>Trend</h2><table class=\"list\" id=\"trend\"><thead><tr><th>Field</th>");
    let recent: Vec<_> = parsed.iter().collect();
    for (r, _) in &recent {
        write!(body, "<th>{}</th>", &html::time(r.window_to)[..10]).ok();
    }
    body.push_str("<th>Trend</th></tr></thead><tbody>");
    for path in latest.paths.keys().take(PROFILE_PAGE_FIELDS) {
        write!(body, "<tr><td><code>{}</code></td>", E(path)).ok();
        let shares: Vec<f64> = recent.iter().map(|(_, p)| p.population(path)).collect();
        for share in &shares {
            write!(body, "<td>{:.0}%</td>", share * 100.0).ok();
        }
        write!(body, "<td>{}</td></tr>", html::sparkline(path, &shares)).ok();
    }
    body.push_str("</tbody></table>");
    if shown < latest.paths.len() {
        write!(
            body,
            "<p class=\"note\" id=\"more-fields\">{} of {} fields shown; the API answers the others (<code>/covenant/v1/subjects/{}/profiles/trend?path=</code>).</p>",
            shown,
            latest.paths.len(),
            E(&subject)
        )
        .ok();
    }
    body.push_str("<h2>Promotion and removal candidates</h2>");
    match registry
        .profile_findings(&subject, covenant_registry::ThresholdOverrides::default())
        .await
    {
        Ok(f) if f.findings.is_empty() => body.push_str("<p id=\"candidates\">No candidates.</p>"),
        Ok(f) => {
            body.push_str("<table class=\"list\" id=\"candidates\"><thead><tr><th>Rule</th><th>Path</th><th>Reason</th><th>Hint</th></tr></thead><tbody>");
            for x in f.findings.into_iter().take(PROFILE_PAGE_FIELDS) {
                write!(
                    body,
                    "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                    E(&x.rule),
                    E(&x.path),
                    E(&x.message),
                    E(&x.hint)
                )
                .ok();
            }
            body.push_str("</tbody></table>");
        }
        Err(e) => {
            let e: crate::error::ApiError = e.into();
            write!(body, "<p class=\"note\">{}</p>", E(&e.message)).ok();
        }
    }
    Ok(layout(&ctx, &format!("{subject}: profiles"), &body))
}

/// `/ui/audit`: the trail, newest page first is not needed: oldest first, paged by `after`
/// like the API, filtered by principal and subject.
pub async fn audit(State(console): State<Console>, ctx: Ctx, params: Params) -> UiResult {
    if !ctx.is_admin() {
        return Ok(not_found(&ctx));
    }
    let principal = params
        .get("principal")
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let subject = params
        .get("subject")
        .filter(|p| !p.is_empty())
        .map(str::to_string);
    let query = AuditQuery {
        principal: principal.clone(),
        subject: subject.clone(),
        operation: None,
        outcome: None,
        since: None,
        until: None,
        after: params.int("after").unwrap_or(0),
        limit: 100,
    };
    let entries = console
        .app
        .registry
        .store()
        .audit_entries(&query)
        .await
        .map_err(covenant_registry::RegistryError::from)?;
    let mut body = format!(
        "<h1>Audit</h1><form method=\"get\" action=\"/ui/audit\" class=\"filters\"><label>Principal <input name=\"principal\" value=\"{}\"></label><label>Subject <input name=\"subject\" value=\"{}\"></label><button type=\"submit\">Filter</button></form><table class=\"list\" id=\"audit\"><thead><tr><th>#</th><th>When</th><th>Who</th><th>Operation</th><th>Subject</th><th>Outcome</th><th>Detail</th></tr></thead><tbody>",
        E(principal.as_deref().unwrap_or("")),
        E(subject.as_deref().unwrap_or(""))
    );
    for e in &entries {
        write!(
            body,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            E(&e.outcome),
            e.seq,
            html::time(e.at),
            E(&e.principal),
            E(&e.operation),
            E(&format!(
                "{}{}",
                e.subject.as_deref().unwrap_or(""),
                e.version.map(|v| format!(" v{v}")).unwrap_or_default()
            )),
            E(&e.outcome),
            E(e.detail.as_deref().unwrap_or(""))
        )
        .ok();
    }
    body.push_str("</tbody></table>");
    if entries.len() == 100
        && let Some(last) = entries.last()
    {
        write!(
            body,
            "<nav class=\"pager\"><a rel=\"next\" href=\"/ui/audit?principal={}&subject={}&after={}\">Next</a></nav>",
            url(principal.as_deref().unwrap_or("")),
            url(subject.as_deref().unwrap_or("")),
            last.seq
        )
        .ok();
    }
    Ok(layout(&ctx, "Audit", &body))
}
