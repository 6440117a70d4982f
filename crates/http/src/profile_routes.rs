//! Data profiles of a subject over time, under `/covenant/v1/subjects/{subject}/profiles`:
//! stored documents of `covenant profile`, the population trend of a path, the findings of
//! the latest profile against the latest schema, and their gauge on `/metrics`.

use crate::AppState;
use crate::audit::AuditedWrite;
use crate::auth::Access;
use crate::error::ApiError;
use crate::extract::{ConfluentJson, Params, SafePath};
use crate::handlers::ok;
use axum::extract::State;
use axum::response::Response;
use covenant_profile::Profile;
use covenant_registry::{ProfileRecord, RegistryError, ThresholdOverrides, parse_instant};
use serde_json::{Value, json};
use std::fmt::Write;

type ApiResult = Result<Response, ApiError>;

const DEFAULT_PAGE: i64 = 100;
const MAX_PAGE: i64 = 1000;
/// Series per subject on `/metrics`: top-level paths and escape-hatch keys, in path order.
pub const MAX_GAUGE_PATHS: usize = 100;

/// `(method, path, summary)` of every route here: the routes served (`ROUTES`) and the OpenAPI document.
pub const OPERATIONS: &[(&str, &str, &str)] = &[
    (
        "POST",
        "/covenant/v1/subjects/{subject}/profiles",
        "Stores a profile document (as written by `covenant profile`) for the window from..to (RFC 3339 or ms; default now).",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles",
        "A page (offset, limit) of the subject's stored profiles, oldest window first.",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles/trend",
        "The population of one field path (path=) in each stored profile, oldest window first.",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles/findings",
        "The findings of the latest profile against the latest schema, with the subject's profileThresholds (overridable by query).",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/profiles/{profileId}",
        "One stored profile with its document.",
    ),
];

fn page(params: &Params) -> (i64, i64) {
    let offset = params.int("offset").unwrap_or(0).max(0);
    let limit = match params.int("limit") {
        Some(n) if n > 0 => n.min(MAX_PAGE),
        _ => DEFAULT_PAGE,
    };
    (offset, limit)
}

fn invalid(message: String) -> ApiError {
    ApiError::from(RegistryError::InvalidProfile(message))
}

fn instant(params: &Params, key: &str) -> Result<Option<i64>, ApiError> {
    params
        .get(key)
        .map(|t| parse_instant(t).map_err(ApiError::from))
        .transpose()
}

fn summary(p: &ProfileRecord) -> Value {
    json!({
        "id": p.id,
        "subject": p.subject,
        "from": p.window_from,
        "to": p.window_to,
        "records": p.records,
        "createdAt": p.created_at,
    })
}

pub async fn add_profile(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(document): ConfluentJson<Value>,
) -> ApiResult {
    let (from, to) = (instant(&params, "from")?, instant(&params, "to")?);
    let stored = state
        .registry
        .add_profile(&subject, &document, from, to, Some(&audit))
        .await?;
    Ok(ok(summary(&stored)))
}

pub async fn list_profiles(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let (offset, limit) = page(&params);
    let list = state.registry.profiles(&subject, offset, limit).await?;
    Ok(ok(json!(list.iter().map(summary).collect::<Vec<_>>())))
}

pub async fn get_profile(
    State(state): State<AppState>,
    SafePath((subject, id)): SafePath<(String, String)>,
) -> ApiResult {
    let id: i64 = id
        .trim()
        .parse()
        .map_err(|_| invalid(format!("'{id}' is not a profile id.")))?;
    let record = state.registry.profile(&subject, id).await?;
    let mut view = summary(&record);
    let document: Value =
        serde_json::from_str(&record.document).map_err(|_| ApiError::internal())?;
    view["profile"] = document;
    Ok(ok(view))
}

pub async fn trend(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let Some(path) = params.get("path").filter(|p| p.starts_with('/')) else {
        return Err(invalid(
            "Name the field path with path=, e.g. path=/vendor_data/marginTradingAllowed.".into(),
        ));
    };
    let (offset, limit) = page(&params);
    let points = state
        .registry
        .profile_trend(&subject, path, offset, limit)
        .await?;
    let points: Vec<Value> = points
        .iter()
        .map(|p| {
            json!({
                "id": p.id,
                "from": p.window_from,
                "to": p.window_to,
                "records": p.records,
                "present": p.present,
                "nonNull": p.non_null,
                "population": p.population,
            })
        })
        .collect();
    Ok(ok(
        json!({"subject": subject, "path": path, "points": points}),
    ))
}

fn share(params: &Params, key: &str) -> Result<Option<f64>, ApiError> {
    params
        .get(key)
        .map(|t| {
            t.trim()
                .parse::<f64>()
                .map_err(|_| invalid(format!("{key} is a share between 0 and 1, not '{t}'.")))
        })
        .transpose()
}

pub async fn findings(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let promote_groups = params
        .get("promoteGroups")
        .map(|t| {
            t.trim()
                .parse::<usize>()
                .map_err(|_| invalid(format!("promoteGroups is a whole number, not '{t}'.")))
        })
        .transpose()?;
    let overrides = ThresholdOverrides {
        promote_share: share(&params, "promoteShare")?,
        promote_groups,
        remove_share: share(&params, "removeShare")?,
    };
    let found = state.registry.profile_findings(&subject, overrides).await?;
    let t = found.thresholds;
    Ok(ok(json!({
        "subject": subject,
        "profileId": found.profile_id,
        "version": found.version,
        "id": found.schema_id,
        "thresholds": {
            "promoteShare": t.promote_share,
            "promoteGroups": t.promote_groups,
            "removeShare": t.remove_share,
        },
        "findings": found.findings,
    })))
}

/// `covenant_profile_population{subject,path}` of the latest profile of every subject the
/// caller may read, in Prometheus text. Rendered per request rather than through the global
/// recorder so that a caller never sees a series of a subject it may not read. Only
/// top-level paths and escape-hatch keys become series, at most [`MAX_GAUGE_PATHS`] per
/// subject in path order, so the series count stays bounded by the subjects.
pub async fn population_gauges(state: &AppState, access: &Access) -> String {
    let latest = match state.registry.latest_profiles().await {
        Ok(latest) => latest,
        Err(e) => {
            tracing::warn!(error = %e, "could not read profiles for metrics");
            return String::new();
        }
    };
    let mut out = String::new();
    for (record, profile) in latest.iter().filter(|(r, _)| access.can_read(&r.subject)) {
        for (path, population) in gauge_paths(profile) {
            let _ = writeln!(
                out,
                "covenant_profile_population{{subject=\"{}\",path=\"{}\"}} {population}",
                label(&record.subject),
                label(path),
            );
        }
    }
    if out.is_empty() {
        return out;
    }
    format!(
        "# HELP covenant_profile_population Share of records with a value at a field path, in the subject's latest stored profile.\n# TYPE covenant_profile_population gauge\n{out}"
    )
}

/// The paths of a profile that get a series, with their population: top-level paths and
/// escape-hatch keys, at most [`MAX_GAUGE_PATHS`], in path order.
fn gauge_paths(profile: &Profile) -> impl Iterator<Item = (&str, f64)> {
    profile
        .paths
        .iter()
        .filter(|(path, stats)| stats.escape_hatch_key || path.matches('/').count() == 1)
        .take(MAX_GAUGE_PATHS)
        .map(|(path, _)| (path.as_str(), profile.population(path)))
}

/// A Prometheus label value: backslash, quote and newline escaped.
fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_cannot_break_out_of_their_quotes() {
        assert_eq!(label("/a\"b\\c\nd"), "/a\\\"b\\\\c\\nd");
        assert_eq!(label("/vendor_data/x"), "/vendor_data/x");
    }

    #[test]
    fn gauges_cover_top_level_paths_and_escape_hatch_keys_up_to_the_cap() {
        let mut profiler = covenant_profile::Profiler::new(covenant_profile::ProfileOptions {
            escape_hatches: vec!["vendor_data".into()],
            ..Default::default()
        });
        let mut vendor = serde_json::Map::new();
        for i in 0..150 {
            vendor.insert(format!("k{i:03}"), json!(i));
        }
        profiler.observe(&json!({"symbol": "X", "limits": {"cap": 1}, "vendor_data": vendor}));
        profiler.observe(&json!({"symbol": null}));
        let profile = profiler.finish();
        let gauges: Vec<(&str, f64)> = gauge_paths(&profile).collect();
        assert_eq!(gauges.len(), MAX_GAUGE_PATHS);
        assert!(
            gauges.iter().all(|(p, _)| *p != "/limits/cap"),
            "nested paths get none"
        );
        assert!(gauges.contains(&("/limits", 0.5)));
        assert!(gauges.contains(&("/vendor_data/k000", 0.5)));
        assert!(
            !gauges.iter().any(|(p, _)| *p == "/vendor_data/k149"),
            "past the cap"
        );
    }

    #[test]
    fn pages_default_and_are_capped() {
        assert_eq!(page(&Params::parse("")), (0, DEFAULT_PAGE));
        assert_eq!(page(&Params::parse("offset=-3&limit=0")), (0, DEFAULT_PAGE));
        assert_eq!(page(&Params::parse("offset=2&limit=5000")), (2, MAX_PAGE));
    }
}
