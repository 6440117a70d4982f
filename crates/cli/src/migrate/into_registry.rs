//! Writing a [`Dump`] into a running registry over REST, in IMPORT mode.

use super::Progress;
use super::remote::{Remote, enc, message};
use crate::reconcile;
use crate::transfer::{Dump, DumpSchema, DumpVersion};
use anyhow::Result;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// Writes into a running registry switched to IMPORT mode, restoring its mode afterwards even
/// when a write fails. The source's global mode, when it is not READWRITE, takes its place.
pub(super) async fn write(remote: &Remote, dump: &Dump) -> Result<Vec<String>> {
    let before = remote
        .get("/mode")
        .await?
        .and_then(|m| m.get("mode").and_then(Value::as_str).map(str::to_string))
        .unwrap_or_else(|| "READWRITE".to_string());
    let restore = match dump.modes.iter().find(|m| m.subject.is_none()) {
        Some(global) => global.mode.clone(),
        None if before == "IMPORT" => {
            eprintln!(
                "covenant: the destination was already in IMPORT mode (an interrupted \
                 migration?); it is left READWRITE"
            );
            "READWRITE".to_string()
        }
        None => before,
    };
    remote
        .put("/mode?force=true", json!({"mode": "IMPORT"}))
        .await?;
    // The default context's mode does not reach other contexts: each goes to IMPORT too.
    let contexts = context_modes(remote, dump).await?;
    for key in contexts.keys() {
        let path = format!("/mode/{}?force=true", enc(key));
        remote.put(&path, json!({"mode": "IMPORT"})).await?;
    }
    let written = write_versions(remote, dump).await;
    let settings = match &written {
        Ok(_) => write_settings(remote, dump).await,
        Err(_) => Ok(()),
    };
    let mut restored = remote
        .put("/mode?force=true", json!({"mode": restore}))
        .await;
    for (key, before) in &contexts {
        let path = format!("/mode/{}?force=true", enc(key));
        let back = match before {
            Some(mode) => remote.put(&path, json!({"mode": mode})).await,
            None => remote
                .send(reqwest::Method::DELETE, &path, None)
                .await
                .map(drop),
        };
        restored = restored.and(back);
    }
    let conflicts = written?;
    settings?;
    restored?;
    Ok(conflicts)
}

/// The key (`:.ctx:`) of every non-default context the dump writes into, with the mode the
/// destination has set on it now (restored after the run).
async fn context_modes(remote: &Remote, dump: &Dump) -> Result<BTreeMap<String, Option<String>>> {
    let mut out = BTreeMap::new();
    for subject in &dump.subjects {
        let context = covenant_store::context::context_of(&subject.name);
        if context == covenant_store::context::DEFAULT_CONTEXT {
            continue;
        }
        let key = covenant_store::context::context_key(context);
        if out.contains_key(&key) {
            continue;
        }
        let mode = remote
            .get_setting(&format!("/mode/{}", enc(&key)))
            .await?
            .and_then(|m| m.get("mode").and_then(Value::as_str).map(str::to_string));
        out.insert(key, mode);
    }
    Ok(out)
}

/// What the destination holds of one subject: version to (id, soft-deleted).
async fn held_versions(remote: &Remote, subject: &str) -> Result<BTreeMap<i64, (i64, bool)>> {
    let e = enc(subject);
    let mut held = BTreeMap::new();
    let numbers = |v: Option<Value>| -> Vec<i64> {
        v.and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    };
    let live: BTreeSet<i64> = numbers(remote.get(&format!("/subjects/{e}/versions")).await?)
        .into_iter()
        .collect();
    for v in numbers(
        remote
            .get(&format!("/subjects/{e}/versions?deleted=true"))
            .await?,
    ) {
        let path = format!("/subjects/{e}/versions/{v}?deleted=true");
        if let Some(id) = remote.get(&path).await?.and_then(|b| b.get("id")?.as_i64()) {
            held.insert(v, (id, !live.contains(&v)));
        }
    }
    Ok(held)
}

/// Writes every version in [`reconcile::write_order`], then the soft deletes, referrers first
/// (a registry refuses to delete a version a live one refers to).
async fn write_versions(remote: &Remote, dump: &Dump) -> Result<Vec<String>> {
    let schemas = crate::transfer::schemas_by_key(dump);
    let order = reconcile::write_order(dump);
    let progress = Progress::new("wrote versions", order.len());
    let mut held: BTreeMap<&str, BTreeMap<i64, (i64, bool)>> = BTreeMap::new();
    let mut tally = RemoteTally::default();
    let mut to_delete = Vec::new();
    for (subject, v) in order {
        if !held.contains_key(subject) {
            held.insert(subject, held_versions(remote, subject).await?);
        }
        let present = held[subject].get(&v.version).copied();
        let schema = schemas[&crate::transfer::version_key(subject, v)];
        let live = write_version(remote, subject, v, schema, present, &mut tally).await?;
        if v.deleted && live {
            to_delete.push((subject, v));
        }
        progress.step();
    }
    for (subject, v) in to_delete.into_iter().rev() {
        let path = format!("/subjects/{}/versions/{}", enc(subject), v.version);
        if let (status @ 300.., answer) = remote.send(reqwest::Method::DELETE, &path, None).await? {
            let what = format!("version {} of subject '{subject}'", v.version);
            let why = message(&answer);
            tally
                .conflicts
                .push(format!("soft delete of {what}: HTTP {status}: {why}"));
        }
    }
    eprintln!(
        "wrote {} versions ({} already present)",
        tally.written, tally.present
    );
    Ok(tally.conflicts)
}

#[derive(Default)]
struct RemoteTally {
    written: usize,
    present: usize,
    conflicts: Vec<String>,
}

/// Registers one version unless the destination holds it (`present`: its id and whether it is
/// soft-deleted); answers whether the version is now held and live.
async fn write_version(
    remote: &Remote,
    subject: &str,
    v: &DumpVersion,
    schema: &DumpSchema,
    present: Option<(i64, bool)>,
    tally: &mut RemoteTally,
) -> Result<bool> {
    let what = format!("version {} of subject '{subject}' (id {})", v.version, v.id);
    match present {
        Some((id, _)) if id != v.id => {
            tally
                .conflicts
                .push(format!("{what} already exists with schema id {id}"));
            return Ok(false);
        }
        Some((_, deleted)) => {
            tally.present += 1;
            return Ok(!deleted);
        }
        None => {}
    }
    let path = format!("/subjects/{}/versions", enc(subject));
    let body = register_body(schema, v);
    match remote
        .send(reqwest::Method::POST, &path, Some(body))
        .await?
    {
        (200, _) => {
            tally.written += 1;
            Ok(true)
        }
        (status, answer) => {
            let why = message(&answer);
            tally
                .conflicts
                .push(format!("{what} was refused: HTTP {status}: {why}"));
            Ok(false)
        }
    }
}

/// `POST /subjects/{s}/versions` in IMPORT mode: the schema with its id and version.
fn register_body(schema: &DumpSchema, v: &DumpVersion) -> Value {
    let mut body = json!({
        "schema": schema.schema,
        "schemaType": schema.schema_type,
        "references": schema.references,
        "id": v.id,
        "version": v.version,
    });
    if let Some(m) = &schema.metadata {
        body["metadata"] = m.clone();
    }
    if let Some(r) = &schema.rule_set {
        body["ruleSet"] = r.clone();
    }
    body
}

/// Configs, then subject modes (after the versions, so a READONLY subject still received them).
async fn write_settings(remote: &Remote, dump: &Dump) -> Result<()> {
    for c in &dump.configs {
        let mut body = serde_json::Map::new();
        if let Some(level) = &c.compatibility {
            body.insert("compatibility".into(), json!(level));
        }
        body.extend(c.extra.clone());
        let path = match &c.subject {
            Some(s) => format!("/config/{}", enc(s)),
            None => "/config".to_string(),
        };
        remote.put(&path, Value::Object(body)).await?;
    }
    for m in dump.modes.iter().filter(|m| m.subject.is_some()) {
        let path = format!(
            "/mode/{}?force=true",
            enc(m.subject.as_deref().unwrap_or(""))
        );
        remote.put(&path, json!({"mode": m.mode})).await?;
    }
    Ok(())
}
