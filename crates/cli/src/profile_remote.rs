//! `covenant profile push` and `covenant profile propose`: a profile meets a running registry.
//! Push stores it under a subject (with its time window); propose turns its promotion
//! candidates into the subject's next schema version, has the registry judge it and plan its
//! rollout, and prints all three.

use crate::check::InvalidInput;
use crate::governance::Server;
use crate::output::outln;
use crate::propose::{Style, field_names, promotions, propose};
use crate::samples::{call, encode_segment};
use anyhow::{Context, Result};
use covenant_profile::{Evidence, Profile, Thresholds, findings};
use covenant_registry::ThresholdOverrides;
use covenant_schema::{ParsedSchema, SchemaType};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The id of the promotion rule, whose findings become fields.
const PROMOTION: &str = "PROFILE_PROMOTION_CANDIDATE";

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn subject_url(server: &Server, subject: &str) -> String {
    format!(
        "{}/covenant/v1/subjects/{}",
        server.url.trim_end_matches('/'),
        encode_segment(subject)
    )
}

/// Stores `profile` under `subject` for the window `from..to` (the registry defaults both).
pub fn push(
    server: &Server,
    document: &Profile,
    subject: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Result<ExitCode> {
    let mut url = format!("{}/profiles", subject_url(server, subject));
    let window: Vec<String> = [("from", from), ("to", to)]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={}", encode_segment(v))))
        .collect();
    if !window.is_empty() {
        url = format!("{url}?{}", window.join("&"));
    }
    let body = serde_json::to_value(document)?;
    let stored = runtime()?.block_on(call(server, reqwest::Method::POST, url, Some(body)))?;
    outln!(
        "stored profile {} of subject '{subject}': {} records, window {}..{}",
        stored["id"],
        stored["records"],
        stored["from"],
        stored["to"]
    );
    Ok(ExitCode::SUCCESS)
}

/// What `propose` was asked.
pub struct ProposeRequest<'a> {
    pub server: &'a Server,
    pub subject: &'a str,
    pub profile: &'a Profile,
    pub overrides: ThresholdOverrides,
    pub out: Option<&'a Path>,
}

/// Thresholds given on the command line; the others come from the subject's config.
#[derive(clap::Args)]
pub struct ThresholdOverrideArgs {
    /// Share of records from which an escape-hatch key is promoted (default: the subject's
    /// `profileThresholds`, else 0.7).
    #[arg(long)]
    promote_share: Option<f64>,
    /// Number of groups from which an escape-hatch key is promoted (default: the subject's
    /// `profileThresholds`, else 2).
    #[arg(long)]
    promote_groups: Option<usize>,
}

impl ThresholdOverrideArgs {
    pub fn overrides(&self) -> ThresholdOverrides {
        ThresholdOverrides {
            promote_share: self.promote_share,
            promote_groups: self.promote_groups,
            remove_share: None,
        }
    }
}

/// The thresholds the subject's findings use in the registry (its config's
/// `profileThresholds`, else the global one's, else the defaults), with `overrides` laid over.
async fn subject_thresholds(
    server: &Server,
    subject: &str,
    overrides: ThresholdOverrides,
) -> Result<Thresholds> {
    let url = format!(
        "{}/config/{}?defaultToGlobal=true",
        server.url.trim_end_matches('/'),
        encode_segment(subject)
    );
    let config = call(server, reqwest::Method::GET, url, None).await?;
    let stored = &config["profileThresholds"];
    let configured = ThresholdOverrides {
        promote_share: stored["promoteShare"].as_f64(),
        promote_groups: stored["promoteGroups"]
            .as_u64()
            .and_then(|n| usize::try_from(n).ok()),
        remove_share: stored["removeShare"].as_f64(),
    };
    let base = configured.apply(Thresholds::default()).unwrap_or_default();
    if let Some(share) = overrides.promote_share.filter(|s| !(0.0..=1.0).contains(s)) {
        return Err(InvalidInput(format!(
            "--promote-share is a share between 0 and 1, not {share}"
        ))
        .into());
    }
    Ok(overrides.apply(base).unwrap_or(base))
}

/// The subject's latest version as the registry serves it.
struct Latest {
    version: i64,
    schema_type: String,
    text: String,
    references: Value,
}

async fn latest(server: &Server, subject: &str) -> Result<Latest> {
    let url = format!(
        "{}/subjects/{}/versions/latest",
        server.url.trim_end_matches('/'),
        encode_segment(subject)
    );
    let v = call(server, reqwest::Method::GET, url, None).await?;
    Ok(Latest {
        version: v["version"].as_i64().unwrap_or(0),
        schema_type: v["schemaType"].as_str().unwrap_or("AVRO").to_string(),
        text: v["schema"].as_str().unwrap_or_default().to_string(),
        references: v.get("references").cloned().unwrap_or(json!([])),
    })
}

/// Writes the next version promoting the profile's promotion candidates, then prints the
/// registry's verdict on it and its rollout plan. Exit 1 when the registry finds it
/// incompatible, 0 otherwise (also when there is nothing to promote).
pub fn run_propose(request: ProposeRequest<'_>) -> Result<ExitCode> {
    runtime()?.block_on(propose_async(request))
}

async fn propose_async(request: ProposeRequest<'_>) -> Result<ExitCode> {
    let server = request.server;
    let latest = latest(server, request.subject).await?;
    let schema_type: SchemaType = latest
        .schema_type
        .parse()
        .map_err(|_| InvalidInput(format!("unknown schema type {}", latest.schema_type)))?;
    let references = crate::references::resolve(server, &latest.references).await?;
    let schema = ParsedSchema::parse(schema_type, &latest.text, &references).map_err(|e| {
        InvalidInput(format!(
            "version {} of '{}' does not parse here: {e}",
            latest.version, request.subject
        ))
    })?;
    let thresholds = subject_thresholds(server, request.subject, request.overrides).await?;
    let candidates: Vec<String> = findings(&Evidence {
        profile: request.profile,
        declared: None,
        thresholds,
    })
    .into_iter()
    .filter(|f| f.rule == PROMOTION)
    .map(|f| f.path)
    .collect();
    let (text, added) = crate::check::without_limits(|m| {
        let names = field_names(m, &schema);
        let style = Style::of(names.iter().map(String::as_str));
        let wanted = promotions(request.profile, &candidates, style);
        propose(m, &schema, &latest.text, &wanted)
    })??;
    let mut report: Box<dyn Write> = match request.out {
        Some(_) => Box::new(std::io::stdout()),
        None => Box::new(std::io::stderr()),
    };
    if added.is_empty() {
        writeln!(
            report,
            "no promotion candidates to add to version {} of '{}'",
            latest.version, request.subject
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    match request.out {
        Some(path) => std::fs::write(path, format!("{text}\n"))
            .with_context(|| format!("writing {}", path.display()))?,
        None => outln!("{text}"),
    }
    for p in &added {
        writeln!(
            report,
            "promoted {} as optional field '{}'",
            p.source, p.name
        )?;
    }
    let body = json!({
        "schema": text,
        "schemaType": latest.schema_type,
        "references": latest.references,
    });
    let compatible = verdict(server, request.subject, &body, &mut report).await?;
    let plan = call(
        server,
        reqwest::Method::POST,
        format!("{}/plan", subject_url(server, request.subject)),
        Some(body),
    )
    .await?;
    writeln!(
        report,
        "rollout plan: {}",
        serde_json::to_string_pretty(&plan)?
    )?;
    Ok(if compatible {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Asks the registry's compatibility test route about `body`; prints and answers the verdict.
async fn verdict(server: &Server, subject: &str, body: &Value, to: &mut dyn Write) -> Result<bool> {
    let url = format!(
        "{}/compatibility/subjects/{}/versions/latest?verbose=true",
        server.url.trim_end_matches('/'),
        encode_segment(subject)
    );
    let answer = call(server, reqwest::Method::POST, url, Some(body.clone())).await?;
    let compatible = answer["is_compatible"].as_bool().unwrap_or(false);
    let level = config_level(server, subject).await;
    writeln!(
        to,
        "verdict: {} with the latest version{level}",
        if compatible {
            "compatible"
        } else {
            "INCOMPATIBLE"
        }
    )?;
    for message in answer["messages"].as_array().into_iter().flatten() {
        writeln!(to, "  {}", message.as_str().unwrap_or_default())?;
    }
    Ok(compatible)
}

/// ` (BACKWARD)`: the level the subject is judged at, or nothing when it cannot be read.
async fn config_level(server: &Server, subject: &str) -> String {
    let url = format!(
        "{}/config/{}?defaultToGlobal=true",
        server.url.trim_end_matches('/'),
        encode_segment(subject)
    );
    match call(server, reqwest::Method::GET, url, None).await {
        Ok(v) => v["compatibilityLevel"]
            .as_str()
            .map(|l| format!(" ({l})"))
            .unwrap_or_default(),
        Err(_) => String::new(),
    }
}

/// The arguments both commands share.
#[derive(clap::Args)]
pub struct RemoteArgs {
    /// The stored profile document.
    pub profile: PathBuf,
    /// The subject the profile's data belongs to.
    #[arg(long)]
    pub subject: String,
    #[command(flatten)]
    pub server: Server,
}
