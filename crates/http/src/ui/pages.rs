//! The subject pages: the list, one subject, the diff of two versions with the judge's
//! findings, and a candidate tested as a registration would be.

use super::html::{self, E, url};
use super::{Console, CsrfForm, Ctx, UiError, UiResult, layout, not_found};
use crate::auth::Operation;
use crate::extract::Params;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use covenant_engine::{Finding, Severity};
use covenant_registry::{SchemaRequest, VersionSpec};
use covenant_schema::SchemaType;
use covenant_store::StoredVersion;
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::str::FromStr;

/// Rows on one page of the subject list.
const PAGE: usize = 50;
/// Subjects looked at for one page when a filter needs each subject's details (type, level);
/// past it the page ends early with a link to go on, so no request walks 100,000 subjects.
const SCAN: usize = 500;

/// The stage of each subject's most advanced live deprecation, for badges.
async fn deprecation_stages(console: &Console) -> HashMap<String, String> {
    use covenant_store::governance::Stage;
    let mut stages: HashMap<String, Stage> = HashMap::new();
    let Some(gov) = &console.app.governance else {
        return HashMap::new();
    };
    if let Ok(all) = gov.deprecations(None).await {
        for d in all.into_iter().filter(|d| d.stage != Stage::Removed) {
            let stage = stages
                .entry(d.target.subject().to_string())
                .or_insert(d.stage);
            *stage = (*stage).max(d.stage);
        }
    }
    stages
        .into_iter()
        .map(|(subject, stage)| (subject, stage.as_str().to_string()))
        .collect()
}

/// One subject's row: its latest live version and effective level.
struct Row {
    name: String,
    schema_type: String,
    version: i64,
    created_at: i64,
    level: String,
}

async fn row(console: &Console, name: &str) -> Option<Row> {
    let registry = &console.app.registry;
    let latest = registry
        .version(name, VersionSpec::Latest, false)
        .await
        .ok()?;
    let level = registry
        .config(Some(name), true)
        .await
        .map(|c| c.level.as_str().to_string())
        .unwrap_or_default();
    Some(Row {
        name: name.to_string(),
        schema_type: latest.schema.schema_type.clone(),
        version: latest.version,
        created_at: latest.created_at,
        level,
    })
}

/// `/ui/subjects`: the readable subjects matching the search, a page at a time. Names are
/// filtered in memory (cheap even for 100,000); details are read only for the rows shown.
pub async fn subjects(State(console): State<Console>, ctx: Ctx, params: Params) -> UiResult {
    let query = params.get("q").unwrap_or("").trim().to_lowercase();
    let context = params.get("context").unwrap_or("").trim().to_string();
    let kind = params.get("type").unwrap_or("").to_string();
    let level = params.get("level").unwrap_or("").to_string();
    let from = params.int("from").unwrap_or(0).max(0) as usize;
    let everywhere = ctx.access.allows_everywhere(Operation::Read);
    let all = console.names.get(&console.app.registry).await?;
    let names: Vec<&String> = all
        .iter()
        .filter(|n| query.is_empty() || n.lower.contains(&query))
        .map(|n| &n.name)
        .filter(|n| in_context(n, &context))
        .filter(|n| everywhere || ctx.can_read(n))
        .collect();
    let stages = deprecation_stages(&console).await;
    let mut rows = Vec::new();
    let mut next = from;
    let limit = if kind.is_empty() && level.is_empty() {
        PAGE
    } else {
        SCAN
    };
    for name in names.iter().skip(from).take(limit) {
        next += 1;
        let Some(r) = row(&console, name).await else {
            continue;
        };
        if (!kind.is_empty() && r.schema_type != kind) || (!level.is_empty() && r.level != level) {
            continue;
        }
        rows.push(r);
        if rows.len() == PAGE {
            break;
        }
    }
    let mut body = format!(
        "<h1>Subjects</h1><form method=\"get\" action=\"/ui/subjects\" class=\"filters\" role=\"search\"><label>Name <input name=\"q\" value=\"{}\" id=\"q\"></label><label>Context <input name=\"context\" value=\"{}\" placeholder=\"default\"></label><label>Type {}</label><label>Level {}</label><button type=\"submit\">Search</button></form><p id=\"count\">{} subjects match</p>",
        E(&query),
        E(&context),
        select("type", &kind, &["", "AVRO", "JSON", "PROTOBUF"]),
        select(
            "level",
            &level,
            &[
                "",
                "BACKWARD",
                "BACKWARD_TRANSITIVE",
                "FORWARD",
                "FORWARD_TRANSITIVE",
                "FULL",
                "FULL_TRANSITIVE",
                "NONE"
            ]
        ),
        names.len()
    );
    body.push_str("<table class=\"list\" id=\"subjects\"><thead><tr><th>Subject</th><th>Type</th><th>Level</th><th>Latest</th><th>Registered</th><th>Deprecation</th></tr></thead><tbody>");
    for r in &rows {
        let badge = stages
            .get(&r.name)
            .map(|s| format!("<span class=\"badge warn\">deprecated: {}</span>", E(s)))
            .unwrap_or_default();
        write!(
            body,
            "<tr><td><a href=\"/ui/subjects/{}\">{}</a></td><td>{}</td><td>{}</td><td>v{}</td><td>{}</td><td>{badge}</td></tr>",
            url(&r.name),
            E(&r.name),
            E(&r.schema_type),
            E(&r.level),
            r.version,
            html::time(r.created_at)
        )
        .ok();
    }
    body.push_str("</tbody></table>");
    if limit == SCAN && rows.len() < PAGE && next < names.len() {
        write!(
            body,
            "<p class=\"note\" id=\"scanned\">Looked at subjects {} to {next} of {} for this type and level; Next looks further.</p>",
            from + 1,
            names.len()
        )
        .ok();
    }
    body.push_str("<nav class=\"pager\">");
    let keep = format!(
        "q={}&context={}&type={}&level={}",
        url(&query),
        url(&context),
        url(&kind),
        url(&level)
    );
    if from > 0 {
        write!(
            body,
            "<a href=\"/ui/subjects?{keep}&from={}\" rel=\"prev\">Previous</a>",
            from.saturating_sub(PAGE)
        )
        .ok();
    }
    if next < names.len() {
        write!(
            body,
            "<a href=\"/ui/subjects?{keep}&from={next}\" rel=\"next\">Next</a>"
        )
        .ok();
    }
    body.push_str("</nav>");
    Ok(layout(&ctx, "Subjects", &body))
}

/// Whether `name` is in `context` (`""` is the default context, without a `:.ctx:` prefix).
fn in_context(name: &str, context: &str) -> bool {
    match name.strip_prefix(":.") {
        Some(rest) => {
            !context.is_empty() && rest.split(':').next() == Some(context.trim_start_matches('.'))
        }
        None => context.is_empty(),
    }
}

fn select(name: &str, chosen: &str, options: &[&str]) -> String {
    let mut out = format!("<select name=\"{name}\">");
    for o in options {
        let label = if o.is_empty() { "any" } else { o };
        let selected = if *o == chosen { " selected" } else { "" };
        write!(
            out,
            "<option value=\"{}\"{selected}>{}</option>",
            E(o),
            E(label)
        )
        .ok();
    }
    out.push_str("</select>");
    out
}

/// A schema as shown: JSON-based texts (Avro, JSON Schema) pretty-printed so that a diff and
/// line anchors have lines to work with; Protobuf as written.
pub fn display_text(schema_type: &str, text: &str) -> String {
    if schema_type == "PROTOBUF" {
        return text.to_string();
    }
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| text.to_string())
}

#[derive(Debug, PartialEq, Eq)]
enum Side {
    Old,
    New,
}

/// Which text a diff finding is pinned to: the new one where its path is there, the old one
/// for what the new version no longer has (a path missing from a text locates at its root,
/// line 1, so a line past the root in the old text is the better place).
fn pick_side(new: Option<usize>, old: Option<usize>) -> Option<(Side, usize)> {
    match (new, old) {
        (Some(1), Some(o)) if o > 1 => Some((Side::Old, o)),
        (Some(n), _) => Some((Side::New, n)),
        (None, Some(o)) => Some((Side::Old, o)),
        (None, None) => None,
    }
}

/// The line a finding is pinned to: where `locate` puts it, except that a bare opening
/// bracket of pretty-printed JSON (where a field's object starts) moves to the next line,
/// which names the field.
fn anchor_line(text: &str, line: usize) -> usize {
    let bare = text
        .lines()
        .nth(line.saturating_sub(1))
        .is_some_and(|l| matches!(l.trim(), "{" | "["));
    if bare && line < text.lines().count() {
        line + 1
    } else {
        line
    }
}

fn schema_type(name: &str) -> SchemaType {
    SchemaType::from_str(name).unwrap_or_default()
}

/// The live versions of a readable subject, oldest first; `None` when it has none or may
/// not be read (the same answer, so that existence is not revealed).
async fn live_versions(
    console: &Console,
    ctx: &Ctx,
    subject: &str,
) -> Result<Option<Vec<StoredVersion>>, UiError> {
    if !ctx.can_read(subject) {
        return Ok(None);
    }
    let all = console
        .app
        .registry
        .store()
        .subject_versions(subject)
        .await
        .map_err(covenant_registry::RegistryError::from)?;
    let live: Vec<StoredVersion> = all.into_iter().filter(|v| !v.deleted).collect();
    Ok((!live.is_empty()).then_some(live))
}

/// A schema as numbered, highlighted lines; lines in `flagged` carry a visible flag.
fn code_block(id: &str, text: &str, flagged: &BTreeMap<usize, Vec<String>>) -> String {
    let mut out = format!("<pre class=\"code\" id=\"{id}\">");
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let flag = flagged
            .get(&n)
            .map(|rules| {
                format!(
                    "<span class=\"flag\" title=\"{0}\">⚑ {0}</span>",
                    E(&rules.join(", "))
                )
            })
            .unwrap_or_default();
        writeln!(
            out,
            "<span class=\"line\" id=\"{id}-L{n}\"><span class=\"ln\">{n}</span>{}{flag}</span>",
            html::highlight_line(line)
        )
        .ok();
    }
    out.push_str("</pre>");
    out
}

/// `/ui/subjects/{subject}`: versions, config and scope, one version's schema (the latest
/// unless `?version=`), references both ways, and the diff and candidate forms.
pub async fn subject(
    State(console): State<Console>,
    ctx: Ctx,
    Path(subject): Path<String>,
    params: Params,
) -> UiResult {
    let Some(versions) = live_versions(&console, &ctx, &subject).await? else {
        return Ok(not_found(&ctx));
    };
    let latest = versions.last().map_or(0, |v| v.version);
    let shown_number = params.int("version").unwrap_or(latest);
    let Some(shown) = versions.iter().find(|v| v.version == shown_number) else {
        return Ok(not_found(&ctx));
    };
    let registry = &console.app.registry;
    let own = registry.config(Some(&subject), false).await.ok();
    let config = registry.config(Some(&subject), true).await?;
    let scope = config
        .extra
        .get("compatibilityScope")
        .map(|v| v.to_string())
        .unwrap_or_else(|| "all live versions".into());
    let preset = registry.policy_preset(Some(&subject)).await?;
    let preset_origin = if own
        .as_ref()
        .is_some_and(|c| c.extra.contains_key("policyPreset"))
    {
        "set on the subject"
    } else {
        "inherited"
    };
    let stages = deprecation_stages(&console).await;
    let s = url(&subject);
    let mut body = format!(
        "<p class=\"crumbs\"><a href=\"/ui/subjects\">Subjects</a> /</p><h1 id=\"subject-name\">{}</h1>",
        E(&subject)
    );
    if let Some(stage) = stages.get(&subject) {
        write!(
            body,
            "<p><span class=\"badge warn\">deprecated: {}</span></p>",
            E(stage)
        )
        .ok();
    }
    write!(
        body,
        "<nav class=\"tabs\"><a href=\"/ui/subjects/{s}\" aria-current=\"page\">Schema</a><a href=\"/ui/subjects/{s}/consumers\">Consumers</a><a href=\"/ui/subjects/{s}/profiles\">Profiles</a></nav><dl class=\"facts\"><dt>Type</dt><dd>{}</dd><dt>Compatibility</dt><dd id=\"level\">{} ({})</dd><dt>Policy preset</dt><dd id=\"preset\">{} ({})</dd><dt>Scope</dt><dd>{}</dd><dt>Versions</dt><dd>{}</dd></dl>",
        E(&shown.schema.schema_type),
        config.level.as_str(),
        if own.is_some() { "set on the subject" } else { "from the global config" },
        preset.as_str(),
        preset_origin,
        E(&scope),
        versions.len()
    )
    .ok();
    body.push_str("<div class=\"split\"><section><h2>Versions</h2><table class=\"list\" id=\"versions\"><thead><tr><th>Version</th><th>Id</th><th>Registered</th></tr></thead><tbody>");
    for v in versions.iter().rev() {
        let mark = if v.version == latest {
            " <span class=\"badge\">latest</span>"
        } else {
            ""
        };
        let current = if v.version == shown.version {
            " aria-current=\"true\" class=\"current\""
        } else {
            ""
        };
        write!(
            body,
            "<tr{current}><td><a href=\"/ui/subjects/{s}?version={0}\">v{0}</a>{mark}</td><td>{1}</td><td>{2}</td></tr>",
            v.version,
            v.schema.id,
            html::time(v.created_at)
        )
        .ok();
    }
    body.push_str("</tbody></table>");
    body.push_str(&diff_form(&subject, &versions, None, None));
    body.push_str("</section><section>");
    write!(
        body,
        "<h2>Schema v{} (id {})</h2>",
        shown.version, shown.schema.id
    )
    .ok();
    let text = display_text(&shown.schema.schema_type, &shown.schema.schema);
    body.push_str(&code_block("schema", &text, &BTreeMap::new()));
    body.push_str(&references(&console, &ctx, shown).await);
    body.push_str(&encryption(&console, shown).await);
    body.push_str("</section></div>");
    body.push_str(&candidate_form(
        &ctx,
        &subject,
        &shown.schema.schema_type,
        "",
    ));
    Ok(layout(&ctx, &subject, &body))
}

/// Which fields of the shown version carry personal data, and the KEK of the `ENCRYPT` rule
/// that encrypts each (the DEK Registry holds its keys) or that it travels in clear text.
async fn encryption(console: &Console, shown: &StoredVersion) -> String {
    let fields = console
        .app
        .registry
        .protected_fields(&shown.schema)
        .await
        .unwrap_or_default();
    let mut out = String::from("<h2>Personal data and encryption</h2>");
    if fields.is_empty() {
        out.push_str("<p id=\"encryption\">No field is tagged as personal data or encrypted.</p>");
        return out;
    }
    out.push_str("<table class=\"list\" id=\"encryption\"><thead><tr><th>Field</th><th>Tags</th><th>On the wire</th></tr></thead><tbody>");
    for field in fields {
        let wire = match field.kek.as_deref() {
            Some("") => "encrypted (the rule names no KEK)".to_string(),
            Some(kek) => format!("encrypted with KEK <code>{}</code>", E(kek)),
            None => "<span class=\"badge warn\">clear text</span>".to_string(),
        };
        write!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{wire}</td></tr>",
            E(&field.path),
            E(&field.tags.join(", "))
        )
        .ok();
    }
    out.push_str("</tbody></table>");
    out
}

async fn references(console: &Console, ctx: &Ctx, shown: &StoredVersion) -> String {
    let mut out = String::from("<h2>References</h2><ul id=\"references\">");
    if shown.schema.references.is_empty() {
        out.push_str("<li>none</li>");
    }
    for r in &shown.schema.references {
        write!(
            out,
            "<li><code>{}</code> → <a href=\"/ui/subjects/{}?version={}\">{} v{}</a></li>",
            E(&r.name),
            url(&r.subject),
            r.version,
            E(&r.subject),
            r.version
        )
        .ok();
    }
    out.push_str("</ul><h2>Referenced by</h2><ul id=\"referenced-by\">");
    let registry = &console.app.registry;
    let ids = registry
        .referenced_by(&shown.subject, VersionSpec::Number(shown.version), false)
        .await
        .unwrap_or_default();
    let mut any = false;
    for id in ids {
        for (subject, version) in registry
            .versions_with_id(id, false)
            .await
            .unwrap_or_default()
        {
            if ctx.can_read(&subject) {
                any = true;
                write!(
                    out,
                    "<li><a href=\"/ui/subjects/{}?version={version}\">{} v{version}</a> (id {id})</li>",
                    url(&subject),
                    E(&subject)
                )
                .ok();
            }
        }
    }
    if !any {
        out.push_str("<li>none</li>");
    }
    out.push_str("</ul>");
    out
}

fn version_select(name: &str, versions: &[StoredVersion], chosen: i64) -> String {
    let mut out = format!("<select name=\"{name}\" id=\"diff-{name}\">");
    for v in versions {
        let selected = if v.version == chosen { " selected" } else { "" };
        write!(
            out,
            "<option value=\"{0}\"{selected}>v{0}</option>",
            v.version
        )
        .ok();
    }
    out.push_str("</select>");
    out
}

fn diff_form(subject: &str, versions: &[StoredVersion], a: Option<i64>, b: Option<i64>) -> String {
    let n = versions.len();
    let b = b.unwrap_or_else(|| versions.last().map_or(0, |v| v.version));
    let a = a.unwrap_or_else(|| versions.get(n.saturating_sub(2)).map_or(0, |v| v.version));
    format!(
        "<h2>Compare versions</h2><form method=\"get\" action=\"/ui/subjects/{}/diff\" class=\"filters\" id=\"diff-form\"><label>Old {}</label><label>New {}</label><button type=\"submit\">Diff</button></form>",
        url(subject),
        version_select("a", versions, a),
        version_select("b", versions, b)
    )
}

fn candidate_form(ctx: &Ctx, subject: &str, schema_type: &str, text: &str) -> String {
    format!(
        "<section><h2>Test a candidate schema</h2><p>Judged exactly as a registration would be, without registering anything.</p><form method=\"post\" action=\"/ui/subjects/{}/candidate\" class=\"stack\" id=\"candidate-form\">{}<label>Type {}</label><label>Schema<textarea name=\"schema\" rows=\"10\" id=\"candidate\" spellcheck=\"false\">{}</textarea></label><button type=\"submit\">Test</button></form></section>",
        url(subject),
        ctx.csrf_field(),
        select("schemaType", schema_type, &["AVRO", "JSON", "PROTOBUF"]),
        E(text)
    )
}

fn request_of(v: &StoredVersion) -> SchemaRequest {
    SchemaRequest {
        schema: v.schema.schema.clone(),
        schema_type: Some(v.schema.schema_type.clone()),
        references: v.schema.references.clone(),
        ..SchemaRequest::default()
    }
}

/// Findings as a table, each linking to the line it concerns when it has one.
fn findings_table(findings: &[(Finding, Option<String>)]) -> String {
    if findings.is_empty() {
        return "<p id=\"verdict\" class=\"ok\">✓ No findings: compatible.</p>".into();
    }
    let errors = findings
        .iter()
        .filter(|(f, _)| f.severity == Severity::Error)
        .count();
    let mut out = format!(
        "<p id=\"verdict\" class=\"{}\">{} {} finding(s), {errors} error(s)</p><table class=\"list\" id=\"findings\"><thead><tr><th>Rule</th><th>Severity</th><th>Path</th><th>Reason</th><th>Hint</th></tr></thead><tbody>",
        if errors > 0 { "bad" } else { "ok" },
        if errors > 0 { "✗" } else { "✓" },
        findings.len()
    );
    for (f, anchor) in findings {
        let shown = if f.path.is_empty() {
            "(the schema)"
        } else {
            f.path.as_str()
        };
        let path = match anchor {
            Some(a) => format!("<a href=\"#{a}\">{}</a>", E(shown)),
            None => E(shown).to_string(),
        };
        write!(
            out,
            "<tr class=\"sev-{0}\"><td><code>{1}</code></td><td>{0}</td><td>{path}</td><td>{2}</td><td>{3}</td></tr>",
            f.severity.as_str(),
            E(&f.rule),
            E(&f.message),
            E(&f.hint)
        )
        .ok();
    }
    out.push_str("</tbody></table>");
    out
}

/// `/ui/subjects/{subject}/diff?a=&b=`: the two versions side by side, lines added, removed
/// and changed marked in words as well as colour, and the judge's findings of `b` against
/// `a` at the subject's level anchored to the lines they concern.
pub async fn diff(
    State(console): State<Console>,
    ctx: Ctx,
    Path(subject): Path<String>,
    params: Params,
) -> UiResult {
    let Some(versions) = live_versions(&console, &ctx, &subject).await? else {
        return Ok(not_found(&ctx));
    };
    let pick = |key: &str| {
        params
            .int(key)
            .and_then(|n| versions.iter().find(|v| v.version == n))
    };
    let (Some(a), Some(b)) = (pick("a"), pick("b")) else {
        return Err(UiError(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Choose two versions of the subject.".into(),
        ));
    };
    let report = console
        .app
        .registry
        .test_compatibility(
            &subject,
            Some(VersionSpec::Number(a.version)),
            &request_of(b),
            false,
        )
        .await?;
    let old = display_text(&a.schema.schema_type, &a.schema.schema);
    let new = display_text(&b.schema.schema_type, &b.schema.schema);
    let mut old_flags: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut new_flags: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut anchored = Vec::new();
    for f in report.findings {
        let in_new = covenant_schema::locate(schema_type(&b.schema.schema_type), &new, &f.path);
        let in_old = covenant_schema::locate(schema_type(&a.schema.schema_type), &old, &f.path);
        let anchor = match pick_side(in_new.map(|p| p.line), in_old.map(|p| p.line)) {
            Some((Side::New, line)) => {
                let line = anchor_line(&new, line);
                new_flags.entry(line).or_default().push(f.rule.to_string());
                Some(format!("b-L{line}"))
            }
            Some((Side::Old, line)) => {
                let line = anchor_line(&old, line);
                old_flags.entry(line).or_default().push(f.rule.to_string());
                Some(format!("a-L{line}"))
            }
            None => None,
        };
        anchored.push((f, anchor));
    }
    let level = console
        .app
        .registry
        .config(Some(&subject), true)
        .await?
        .level;
    let mut body = format!(
        "<p class=\"crumbs\"><a href=\"/ui/subjects\">Subjects</a> / <a href=\"/ui/subjects/{}\">{}</a> /</p><h1>v{} → v{}</h1>",
        url(&subject),
        E(&subject),
        a.version,
        b.version
    );
    body.push_str(&diff_form(
        &subject,
        &versions,
        Some(a.version),
        Some(b.version),
    ));
    write!(body, "<h2>Findings at {}</h2>", level.as_str()).ok();
    body.push_str(&findings_table(&anchored));
    body.push_str(&side_by_side(&old, &new, &old_flags, &new_flags));
    Ok(layout(
        &ctx,
        &format!("{subject} v{} → v{}", a.version, b.version),
        &body,
    ))
}

/// The two texts aligned line by line (an LCS line diff from `similar`).
fn side_by_side(
    old: &str,
    new: &str,
    old_flags: &BTreeMap<usize, Vec<String>>,
    new_flags: &BTreeMap<usize, Vec<String>>,
) -> String {
    let old_lines: Vec<&str> = old.lines().collect();
    let new_lines: Vec<&str> = new.lines().collect();
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = String::from(
        "<table class=\"diff\" id=\"diff\"><colgroup><col class=\"ln\"><col class=\"mk\"><col><col class=\"ln\"><col class=\"mk\"><col></colgroup><thead><tr><th colspan=\"3\">Old</th><th colspan=\"3\">New</th></tr></thead><tbody>",
    );
    let cell = |side: &str,
                lines: &[&str],
                i: Option<usize>,
                mark: &str,
                flags: &BTreeMap<usize, Vec<String>>|
     -> String {
        match i {
            None => "<td class=\"ln\"></td><td class=\"mk\"></td><td class=\"code empty\"></td>"
                .to_string(),
            Some(i) => {
                let n = i + 1;
                let flag = flags
                    .get(&n)
                    .map(|r| format!("<span class=\"flag\">⚑ {}</span>", E(&r.join(", "))))
                    .unwrap_or_default();
                let class = match mark {
                    "-" => "del",
                    "+" => "ins",
                    "~" => "chg",
                    _ => "same",
                };
                format!(
                    "<td class=\"ln\">{n}</td><td class=\"mk\" aria-label=\"{class}\">{mark}</td><td class=\"code {class}{}\" id=\"{side}-L{n}\">{}{flag}</td>",
                    if flag.is_empty() { "" } else { " flagged" },
                    html::highlight_line(lines.get(i).copied().unwrap_or(""))
                )
            }
        }
    };
    for op in diff.ops() {
        let (tag, o, n) = op.as_tag_tuple();
        let rows = o.len().max(n.len());
        for k in 0..rows {
            let oi = (k < o.len()).then(|| o.start + k);
            let ni = (k < n.len()).then(|| n.start + k);
            let (om, nm) = match tag {
                similar::DiffTag::Equal => (" ", " "),
                similar::DiffTag::Delete => ("-", " "),
                similar::DiffTag::Insert => (" ", "+"),
                similar::DiffTag::Replace => match (oi, ni) {
                    (Some(_), Some(_)) => ("~", "~"),
                    (Some(_), None) => ("-", " "),
                    _ => (" ", "+"),
                },
            };
            write!(
                out,
                "<tr>{}{}</tr>",
                cell("a", &old_lines, oi, om, old_flags),
                cell("b", &new_lines, ni, nm, new_flags)
            )
            .ok();
        }
    }
    out.push_str("</tbody></table>");
    out
}

/// `POST /ui/subjects/{subject}/candidate`: the candidate judged as a registration would be,
/// its findings anchored to its lines, and the rollout plan's four combinations.
pub async fn candidate(
    State(console): State<Console>,
    ctx: Ctx,
    Path(subject): Path<String>,
    CsrfForm(form): CsrfForm,
) -> UiResult {
    if live_versions(&console, &ctx, &subject).await?.is_none() {
        return Ok(not_found(&ctx));
    }
    let text = form.get("schema").unwrap_or("").to_string();
    let kind = form.get("schemaType").unwrap_or("AVRO").to_string();
    let request = SchemaRequest {
        schema: text.clone(),
        schema_type: Some(kind.clone()),
        ..SchemaRequest::default()
    };
    let registry = &console.app.registry;
    let mut body = format!(
        "<p class=\"crumbs\"><a href=\"/ui/subjects\">Subjects</a> / <a href=\"/ui/subjects/{}\">{}</a> /</p><h1>Candidate for {}</h1>",
        url(&subject),
        E(&subject),
        E(&subject)
    );
    let status = match registry
        .test_compatibility(&subject, None, &request, false)
        .await
    {
        Ok(report) => {
            let shown = display_text(&kind, &text);
            let mut flags: BTreeMap<usize, Vec<String>> = BTreeMap::new();
            let anchored: Vec<_> = report
                .findings
                .into_iter()
                .map(|f| {
                    let anchor =
                        covenant_schema::locate(schema_type(&kind), &shown, &f.path).map(|p| {
                            let line = anchor_line(&shown, p.line);
                            flags.entry(line).or_default().push(f.rule.to_string());
                            format!("candidate-L{line}")
                        });
                    (f, anchor)
                })
                .collect();
            body.push_str("<h2>Verdict</h2>");
            body.push_str(&findings_table(&anchored));
            let findings: Vec<_> = anchored.iter().map(|(f, _)| f.clone()).collect();
            body.push_str(&super::approve::approve_forms(
                &ctx, &subject, &kind, &text, &findings,
            ));
            match registry.plan(&subject, &request, false).await {
                Ok(plan) => body.push_str(&plan_table(&plan)),
                Err(e) => {
                    let e: crate::error::ApiError = e.into();
                    write!(
                        body,
                        "<p class=\"error\">No rollout plan: {}</p>",
                        E(&e.message)
                    )
                    .ok();
                }
            }
            body.push_str("<h2>Candidate</h2>");
            body.push_str(&code_block("candidate", &shown, &flags));
            StatusCode::OK
        }
        Err(e) => {
            let e: crate::error::ApiError = e.into();
            write!(
                body,
                "<p class=\"error\" id=\"verdict\" role=\"alert\">✗ {}</p>",
                E(&e.message)
            )
            .ok();
            StatusCode::UNPROCESSABLE_ENTITY
        }
    };
    body.push_str(&candidate_form(&ctx, &subject, &kind, &text));
    Ok((status, layout(&ctx, "Candidate", &body)).into_response())
}

fn side_name(side: covenant_policy::Side) -> &'static str {
    match side {
        covenant_policy::Side::Old => "old",
        covenant_policy::Side::New => "new",
    }
}

/// The four producer/consumer combinations, each safe or not with its reasons.
fn plan_table(plan: &covenant_registry::RolloutPlan) -> String {
    let mut out = format!(
        "<h2>Rollout plan</h2><p>Deploy: <b id=\"order\">{}</b></p><table class=\"list\" id=\"plan\"><thead><tr><th>Producer</th><th>Consumer</th><th>Safe</th><th>Why</th></tr></thead><tbody>",
        E(plan.order.as_str())
    );
    for c in &plan.combinations {
        let mut why = E(&c.explanation).to_string();
        for r in c.reasons.iter().chain(&c.review) {
            write!(
                why,
                "<br><code>{}</code> {}: {}",
                E(&r.rule),
                E(&r.path),
                E(&r.message)
            )
            .ok();
        }
        write!(
            out,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{why}</td></tr>",
            if c.safe { "ok" } else { "bad" },
            side_name(c.producer),
            side_name(c.consumer),
            if c.safe { "✓ safe" } else { "✗ unsafe" }
        )
        .ok();
    }
    out.push_str("</tbody></table>");
    if !plan.steps.is_empty() {
        out.push_str("<ol class=\"steps\">");
        for s in &plan.steps {
            write!(out, "<li>{}</li>", E(s)).ok();
        }
        out.push_str("</ol>");
    }
    if !plan.watch.is_empty() {
        out.push_str("<p>Watch while both versions run:</p><ul id=\"watch\">");
        for metric in &plan.watch {
            write!(out, "<li><code>{}</code></li>", E(metric)).ok();
        }
        out.push_str("</ul>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enum_expansion_plan_shows_the_metric_to_watch() {
        let added = covenant_engine::Finding {
            rule: "ENUM_VALUE_ADDED".to_string().into(),
            severity: covenant_engine::Severity::Warning,
            path: "/fields/caseStatus".into(),
            message: "Field 'caseStatus' gained enum value 'SUSPENDED'; old consumers may reject, drop or misclassify it (no consumers are recorded for it, so review every reader).".into(),
            hint: "".into(),
            version: None,
        };
        let none = covenant_engine::Report::from_findings(Vec::new());
        let plan = covenant_policy::plan_with_semantics(&none, &none, &[added]);
        let html = plan_table(&plan);
        assert!(
            html.contains(
                "<ul id=\"watch\"><li><code>contract.enum.unknown{field=&quot;caseStatus&quot;}</code></li></ul>"
            ),
            "{html}"
        );
        assert!(html.contains("<li>Deploy the producers that emit the new value.</li>"));
        let quiet = covenant_policy::plan_with_semantics(&none, &none, &[]);
        assert!(!plan_table(&quiet).contains("id=\"watch\""));
    }

    #[test]
    fn contexts_split_names() {
        assert!(in_context("orders", ""));
        assert!(!in_context(":.eu:orders", ""));
        assert!(in_context(":.eu:orders", "eu"));
        assert!(in_context(":.eu:orders", ".eu"));
        assert!(!in_context(":.us:orders", "eu"));
    }

    #[test]
    fn side_by_side_marks_changes_in_words_and_anchors_lines() {
        let mut flags = BTreeMap::new();
        flags.insert(2, vec!["FIELD_REMOVED".to_string()]);
        let html = side_by_side("a\nb\nc\n", "a\nc\nd\n", &flags, &BTreeMap::new());
        assert!(html.contains("id=\"a-L2\""), "{html}");
        assert!(html.contains("⚑ FIELD_REMOVED"), "{html}");
        assert!(
            html.contains(">-</td>") && html.contains(">+</td>"),
            "{html}"
        );
    }

    #[test]
    fn findings_on_what_the_new_text_lost_point_into_the_old_one() {
        assert_eq!(pick_side(Some(12), Some(12)), Some((Side::New, 12)));
        assert_eq!(pick_side(Some(1), Some(12)), Some((Side::Old, 12)));
        assert_eq!(pick_side(None, Some(3)), Some((Side::Old, 3)));
        assert_eq!(pick_side(Some(1), Some(1)), Some((Side::New, 1)));
        assert_eq!(pick_side(None, None), None);
    }

    #[test]
    fn findings_on_an_objects_bracket_point_at_its_first_member() {
        let text = "{\n  \"fields\": [\n    {\n      \"name\": \"total\"\n    }\n  ]\n}";
        assert_eq!(anchor_line(text, 3), 4);
        assert_eq!(anchor_line(text, 2), 2);
        assert_eq!(anchor_line("{", 1), 1);
    }

    #[test]
    fn json_texts_are_pretty_printed_and_proto_kept() {
        assert_eq!(
            display_text("AVRO", r#"{"type":"string"}"#),
            "{\n  \"type\": \"string\"\n}"
        );
        assert_eq!(display_text("PROTOBUF", "message A {}"), "message A {}");
        assert_eq!(display_text("JSON", "not json"), "not json");
    }
}
