//! Writing a [`Dump`] into a running registry over REST, in IMPORT mode.

use super::Progress;
use super::remote::{Remote, enc, in_parallel, message};
use crate::reconcile;
use crate::transfer::{Dump, DumpSchema, DumpVersion};
use anyhow::{Context, Result};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Writes into a running registry switched to IMPORT mode, restoring its mode afterwards even
/// when a write fails. The source's global mode, when it is not READWRITE, takes its place.
pub(super) async fn write(
    remote: &Arc<Remote>,
    dump: &Dump,
    parallel: usize,
) -> Result<Vec<String>> {
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
    let written = write_versions(remote, dump, parallel).await;
    let settings = match &written {
        Ok(_) => write_settings(remote, dump, parallel).await,
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
type Held = BTreeMap<i64, (i64, bool)>;

/// What the destination holds of one subject. A subject it lacks costs one request, not two.
async fn held_versions(remote: &Remote, subject: &str) -> Result<Held> {
    let e = enc(subject);
    let mut held = BTreeMap::new();
    let numbers = |v: Option<Value>| -> Vec<i64> {
        v.and_then(|v| serde_json::from_value(v).ok())
            .unwrap_or_default()
    };
    let all = numbers(
        remote
            .get(&format!("/subjects/{e}/versions?deleted=true"))
            .await?,
    );
    if all.is_empty() {
        return Ok(held);
    }
    let live: BTreeSet<i64> = numbers(remote.get(&format!("/subjects/{e}/versions")).await?)
        .into_iter()
        .collect();
    for v in all {
        let path = format!("/subjects/{e}/versions/{v}?deleted=true");
        if let Some(id) = remote.get(&path).await?.and_then(|b| b.get("id")?.as_i64()) {
            held.insert(v, (id, !live.contains(&v)));
        }
    }
    Ok(held)
}

/// What the destination holds of every subject of the dump, `parallel` subjects at a time.
async fn held_by_subject(
    remote: &Arc<Remote>,
    dump: &Dump,
    parallel: usize,
) -> Result<BTreeMap<String, Held>> {
    let names: Vec<String> = dump.subjects.iter().map(|s| s.name.clone()).collect();
    let remote = remote.clone();
    let held = in_parallel(names.clone(), parallel, move |name| {
        let remote = remote.clone();
        async move { held_versions(&remote, &name).await }
    })
    .await?;
    Ok(names.into_iter().zip(held).collect())
}

/// Writes every version level by level ([`reconcile::write_levels`]: references and a
/// subject's earlier versions first), the versions of one level `parallel` at once, then the
/// soft deletes, referrers first (a registry refuses to delete a version a live one refers to).
/// One write at a time left both servers idle between requests; in parallel the destination's
/// group commit makes one disk flush durable for many writes. With the listed reads, the whole
/// migration of 20,000 versions in 2,000 subjects went from 352 to 1,170 schemas/s
/// (benches/RESULTS.md).
async fn write_versions(remote: &Arc<Remote>, dump: &Dump, parallel: usize) -> Result<Vec<String>> {
    let schemas = crate::transfer::schemas_by_key(dump);
    let levels = reconcile::write_levels(dump);
    let progress = Arc::new(Progress::new(
        "wrote versions",
        levels.iter().map(Vec::len).sum(),
    ));
    let held = held_by_subject(remote, dump, parallel).await?;
    let mut tally = RemoteTally::default();
    let mut to_delete = Vec::new();
    for level in levels {
        let writes: Vec<VersionWrite> = level
            .iter()
            .map(|&(subject, v)| VersionWrite {
                subject: subject.to_string(),
                version: v.clone(),
                body: register_body(schemas[&crate::transfer::version_key(subject, v)], v),
                present: held.get(subject).and_then(|h| h.get(&v.version)).copied(),
            })
            .collect();
        let (remote, progress) = (remote.clone(), progress.clone());
        let outcomes = in_parallel(writes, parallel, move |write| {
            let (remote, progress) = (remote.clone(), progress.clone());
            async move {
                let outcome = write.send(&remote).await;
                progress.step();
                outcome
            }
        })
        .await?;
        for (&(subject, v), outcome) in level.iter().zip(outcomes) {
            if tally.count(outcome) && v.deleted {
                to_delete.push((subject, v));
            }
        }
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

impl RemoteTally {
    /// Counts one outcome; answers whether the version is now held and live.
    fn count(&mut self, outcome: Outcome) -> bool {
        match outcome {
            Outcome::Written => {
                self.written += 1;
                true
            }
            Outcome::Present { live } => {
                self.present += 1;
                live
            }
            Outcome::Conflict(conflict) => {
                self.conflicts.push(conflict);
                false
            }
        }
    }
}

/// What became of one version.
enum Outcome {
    Written,
    Present { live: bool },
    Conflict(String),
}

/// One version to register, unless the destination holds it (`present`: its id and whether
/// it is soft-deleted).
struct VersionWrite {
    subject: String,
    version: DumpVersion,
    body: Value,
    present: Option<(i64, bool)>,
}

impl VersionWrite {
    async fn send(self, remote: &Remote) -> Result<Outcome> {
        let v = &self.version;
        let what = format!(
            "version {} of subject '{}' (id {})",
            v.version, self.subject, v.id
        );
        match self.present {
            Some((id, _)) if id != v.id => {
                return Ok(Outcome::Conflict(format!(
                    "{what} already exists with schema id {id}"
                )));
            }
            Some((_, deleted)) => return Ok(Outcome::Present { live: !deleted }),
            None => {}
        }
        let path = format!("/subjects/{}/versions", enc(&self.subject));
        let answer = remote
            .send(reqwest::Method::POST, &path, Some(self.body))
            .await
            .with_context(|| format!("writing {what}"))?;
        Ok(match answer {
            (200, _) => Outcome::Written,
            (status, answer) => Outcome::Conflict(format!(
                "{what} was refused: HTTP {status}: {}",
                message(&answer)
            )),
        })
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

/// Configs, then subject modes (after the versions, so a READONLY subject still received them),
/// `parallel` at once.
async fn write_settings(remote: &Arc<Remote>, dump: &Dump, parallel: usize) -> Result<()> {
    let configs: Vec<(String, Value)> = dump
        .configs
        .iter()
        .map(|c| {
            let mut body = serde_json::Map::new();
            if let Some(level) = &c.compatibility {
                body.insert("compatibility".into(), json!(level));
            }
            body.extend(c.extra.clone());
            let path = match &c.subject {
                Some(s) => format!("/config/{}", enc(s)),
                None => "/config".to_string(),
            };
            (path, Value::Object(body))
        })
        .collect();
    let modes: Vec<(String, Value)> = dump
        .modes
        .iter()
        .filter_map(|m| {
            let path = format!("/mode/{}?force=true", enc(m.subject.as_deref()?));
            Some((path, json!({"mode": m.mode})))
        })
        .collect();
    for puts in [configs, modes] {
        let remote = remote.clone();
        in_parallel(puts, parallel, move |(path, body)| {
            let remote = remote.clone();
            async move { remote.put(&path, body).await }
        })
        .await?;
    }
    Ok(())
}
