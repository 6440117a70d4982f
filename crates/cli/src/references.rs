//! The schemas a registered schema references, fetched from the registry the way it resolves
//! them: each `{name, subject, version}` is that subject's version, with its own references
//! fetched first, so that the list comes dependencies first.

use crate::check::InvalidInput;
use crate::governance::Server;
use crate::samples::{call, encode_segment};
use anyhow::Result;
use covenant_engine::Reference;
use serde_json::Value;
use std::collections::HashSet;

/// How deep references may nest before the registry's answers are taken to be circular.
const MAX_REFERENCE_DEPTH: usize = 32;

/// The schemas `references` (a registry answer's `references` array) names, transitively,
/// dependencies first; each subject version once.
pub async fn resolve(server: &Server, references: &Value) -> Result<Vec<Reference>> {
    let mut out = Vec::new();
    resolve_into(server, references, &mut out, &mut HashSet::new(), 0).await?;
    Ok(out)
}

async fn resolve_into(
    server: &Server,
    references: &Value,
    out: &mut Vec<Reference>,
    seen: &mut HashSet<(String, i64)>,
    depth: usize,
) -> Result<()> {
    let Some(list) = references.as_array() else {
        return Ok(());
    };
    if depth > MAX_REFERENCE_DEPTH {
        return Err(InvalidInput("schema references nest too deeply".into()).into());
    }
    for reference in list {
        let name = reference["name"].as_str().unwrap_or_default().to_string();
        let subject = reference["subject"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let version = reference["version"].as_i64().unwrap_or(-1);
        if !seen.insert((subject.clone(), version)) {
            continue;
        }
        let path = format!("/subjects/{}/versions/{version}", encode_segment(&subject));
        let url = format!("{}{path}", server.url.trim_end_matches('/'));
        let answer = call(server, reqwest::Method::GET, url, None)
            .await
            .map_err(|e| InvalidInput(format!("GET {path}: {e}")))?;
        Box::pin(resolve_into(
            server,
            &answer["references"],
            out,
            seen,
            depth + 1,
        ))
        .await?;
        out.push(Reference {
            name,
            subject,
            version,
            schema: answer["schema"].as_str().unwrap_or_default().to_string(),
        });
    }
    Ok(())
}
