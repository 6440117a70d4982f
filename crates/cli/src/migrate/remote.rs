//! Reading a registry through the Confluent REST API into a [`Dump`], and the client both
//! directions use.

use super::Progress;
use super::records::{add_schema, config_from, empty_dump, schema_from};
use crate::governance::Server;
use crate::reconcile;
use crate::transfer::{Dump, DumpConfig, DumpMode, DumpSchema, DumpSubject, DumpVersion};
use anyhow::{Context, Result, bail};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The longest one request to either registry may take.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

/// A Confluent-compatible registry: its base URL and a client with the caller's credentials.
pub(super) struct Remote {
    server: Server,
    http: reqwest::Client,
}

pub(super) fn enc(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

impl Remote {
    pub(super) fn new(
        url: &str,
        basic_auth: Option<String>,
        token: Option<String>,
        ca_cert: Option<std::path::PathBuf>,
    ) -> Result<Remote> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("'{url}' is not an http:// or https:// URL");
        }
        let server = Server {
            url: url.trim_end_matches('/').to_string(),
            basic_auth,
            token,
            ca_cert,
        };
        let http = server.client()?;
        Ok(Remote { server, http })
    }

    /// Sends one request; answers the status and the JSON body (`Null` when there is none).
    pub(super) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value)> {
        let url = format!("{}{path}", self.server.url);
        // A registry that stops answering ends the migration instead of hanging it.
        let request = self.http.request(method, &url).timeout(REQUEST_TIMEOUT);
        let mut request = self.server.authorize(request);
        if let Some(body) = body {
            request = request
                .header("content-type", "application/vnd.schemaregistry.v1+json")
                .body(body.to_string());
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach {}", self.server.url))?;
        let status = response.status().as_u16();
        let text = response
            .text()
            .await
            .with_context(|| format!("reading the answer of {url}"))?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// A GET that must succeed, or answers `None` on 404.
    pub(super) async fn get(&self, path: &str) -> Result<Option<Value>> {
        match self.send(reqwest::Method::GET, path, None).await? {
            (200, body) => Ok(Some(body)),
            (404, _) => Ok(None),
            (status, body) => bail!(
                "{}{path} answered HTTP {status}: {}",
                self.server.url,
                message(&body)
            ),
        }
    }

    /// A setting (config or mode) that a registry may not offer: answered `None` when the
    /// registry says it has none, or has no such endpoint (Karapace has no subject modes).
    pub(super) async fn get_setting(&self, path: &str) -> Result<Option<Value>> {
        match self.send(reqwest::Method::GET, path, None).await? {
            (200, body) => Ok(Some(body)),
            (404 | 405 | 501, _) => Ok(None),
            (status, body) => bail!(
                "{}{path} answered HTTP {status}: {}",
                self.server.url,
                message(&body)
            ),
        }
    }

    /// A write that must succeed.
    pub(super) async fn put(&self, path: &str, body: Value) -> Result<()> {
        match self.send(reqwest::Method::PUT, path, Some(body)).await? {
            (200, _) => Ok(()),
            (status, body) => bail!("PUT {path} answered HTTP {status}: {}", message(&body)),
        }
    }
}

pub(super) fn message(body: &Value) -> String {
    body.get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string())
}

/// One subject as read: its versions with their schemas, and its own config and mode.
struct SubjectRead {
    subject: DumpSubject,
    schemas: Vec<DumpSchema>,
    config: Option<DumpConfig>,
    mode: Option<DumpMode>,
}

/// Reads every subject under `prefix` (soft-deleted ones included), `parallel` at a time, and
/// the global config and mode.
pub(super) async fn read_registry(
    remote: Arc<Remote>,
    prefix: &str,
    parallel: usize,
    report: bool,
) -> Result<Dump> {
    // Without a prefix none is sent: Confluent reads an empty one as "the default context only".
    let path = match prefix {
        "" => "/subjects?deleted=true".to_string(),
        p => format!("/subjects?deleted=true&subjectPrefix={}", enc(p)),
    };
    let listed = remote.get(&path).await?.unwrap_or_default();
    let names: Vec<String> = serde_json::from_value::<Vec<String>>(listed)
        .context("the subject list is not a list of names")?
        .into_iter()
        .filter(|s| s.starts_with(prefix))
        .collect();
    let progress = Arc::new(Progress::new("read subjects", names.len()));
    let gate = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut tasks = tokio::task::JoinSet::new();
    for (ix, name) in names.into_iter().enumerate() {
        let (remote, gate, progress) = (remote.clone(), gate.clone(), progress.clone());
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            let read = read_subject(&remote, name).await;
            if report {
                progress.step();
            }
            read.map(|r| (ix, r))
        });
    }
    let mut reads = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        reads.push(joined.context("a subject reader stopped")??);
    }
    reads.sort_by_key(|(ix, _)| *ix);
    let mut dump = assemble(&remote, reads.into_iter().map(|(_, r)| r).collect()).await?;
    read_references(&remote, &mut dump).await?;
    Ok(dump)
}

/// Joins the subjects read into one dump, with the global config and mode.
async fn assemble(remote: &Remote, reads: Vec<SubjectRead>) -> Result<Dump> {
    let mut schemas: BTreeMap<(String, i64), (String, DumpSchema)> = BTreeMap::new();
    let mut dump = empty_dump();
    for read in reads {
        for schema in read.schemas {
            add_schema(&mut schemas, &read.subject.name, schema)?;
        }
        dump.configs.extend(read.config);
        dump.modes.extend(read.mode);
        dump.subjects.push(read.subject);
    }
    dump.schemas = schemas.into_values().map(|(_, s)| s).collect();
    if let Some(global) = remote.get_setting("/config").await? {
        dump.configs.insert(0, config_from(None, &global));
    }
    let global_mode = remote.get_setting("/mode").await?.unwrap_or_default();
    match global_mode.get("mode").and_then(Value::as_str) {
        Some(mode) if mode != "READWRITE" => dump.modes.insert(
            0,
            DumpMode {
                subject: None,
                mode: mode.to_string(),
            },
        ),
        _ => {}
    }
    read_context_settings(remote, &mut dump).await?;
    Ok(dump)
}

/// The config and mode set on each context the dump's subjects live in (`/config/:.ctx:`).
async fn read_context_settings(remote: &Remote, dump: &mut Dump) -> Result<()> {
    let contexts: BTreeSet<String> = dump
        .subjects
        .iter()
        .map(|s| covenant_store::context::context_of(&s.name))
        .filter(|c| *c != covenant_store::context::DEFAULT_CONTEXT)
        .map(covenant_store::context::context_key)
        .collect();
    for key in contexts {
        let e = enc(&key);
        if let Some(config) = remote.get_setting(&format!("/config/{e}")).await? {
            dump.configs.push(config_from(Some(&key), &config));
        }
        let mode = remote.get_setting(&format!("/mode/{e}")).await?;
        if let Some(mode) = mode.as_ref().and_then(|m| m.get("mode")?.as_str()) {
            dump.modes.push(DumpMode {
                subject: Some(key.clone()),
                mode: mode.to_string(),
            });
        }
    }
    Ok(())
}

async fn read_subject(remote: &Remote, name: String) -> Result<SubjectRead> {
    let e = enc(&name);
    let (all, live) = version_lists(remote, &name).await?;
    let mut subject = DumpSubject {
        name: name.clone(),
        versions: Vec::new(),
    };
    let mut schemas = Vec::new();
    for version in all {
        if let Some((v, schema)) = read_version(remote, &name, version, &live).await? {
            subject.versions.push(v);
            schemas.push(schema);
        }
    }
    let config = remote
        .get_setting(&format!("/config/{e}"))
        .await?
        .map(|c| config_from(Some(&name), &c));
    let mode = remote
        .get_setting(&format!("/mode/{e}"))
        .await?
        .and_then(|m| {
            m.get("mode").and_then(Value::as_str).map(|mode| DumpMode {
                subject: Some(name.clone()),
                mode: mode.to_string(),
            })
        });
    Ok(SubjectRead {
        subject,
        schemas,
        config,
        mode,
    })
}

/// A subject's versions, soft-deleted ones included, and its live ones.
async fn version_lists(remote: &Remote, name: &str) -> Result<(Vec<i64>, BTreeSet<i64>)> {
    let e = enc(name);
    let numbers = |v: Option<Value>| -> Result<Vec<i64>> {
        serde_json::from_value(v.unwrap_or_else(|| json!([])))
            .with_context(|| format!("the versions of '{name}' are not a list of numbers"))
    };
    let path = format!("/subjects/{e}/versions?deleted=true");
    let all = numbers(remote.get(&path).await?)?;
    let path = format!("/subjects/{e}/versions");
    let live = numbers(remote.get(&path).await?)?.into_iter().collect();
    Ok((all, live))
}

/// One version with its schema; `None` when it was hard-deleted meanwhile.
async fn read_version(
    remote: &Remote,
    name: &str,
    version: i64,
    live: &BTreeSet<i64>,
) -> Result<Option<(DumpVersion, DumpSchema)>> {
    let path = format!("/subjects/{}/versions/{version}?deleted=true", enc(name));
    let Some(body) = remote.get(&path).await? else {
        return Ok(None);
    };
    let schema = schema_from(&body).with_context(|| format!("reading {path}"))?;
    let v = DumpVersion {
        version,
        id: schema.id,
        deleted: !live.contains(&version),
        created_at: None,
    };
    Ok(Some((v, schema)))
}

/// Reads the versions outside the subjects read that their schemas refer to, transitively, so
/// that a subset of subjects can still be registered.
async fn read_references(remote: &Remote, dump: &mut Dump) -> Result<()> {
    let mut tried = BTreeSet::new();
    loop {
        let wanted: Vec<(String, i64)> = reconcile::unresolved_references(dump)
            .into_iter()
            .filter(|r| tried.insert(r.clone()))
            .collect();
        if wanted.is_empty() {
            dump.schemas
                .sort_by(|a, b| (&a.context, a.id).cmp(&(&b.context, b.id)));
            return Ok(());
        }
        for (name, version) in wanted {
            let (_, live) = version_lists(remote, &name).await?;
            let Some((v, mut schema)) = read_version(remote, &name, version, &live).await? else {
                continue;
            };
            schema.context = covenant_store::context::context_of(&name).to_string();
            match dump.schemas.iter().find(|s| s.key() == schema.key()) {
                Some(held) if held.content_key != schema.content_key => bail!(
                    "schema id {} carries different schemas in '{name}' and elsewhere",
                    schema.id
                ),
                Some(_) => {}
                None => dump.schemas.push(schema),
            }
            match dump.subjects.iter_mut().find(|s| s.name == name) {
                Some(subject) => {
                    subject.versions.push(v);
                    subject.versions.sort_by_key(|v| v.version);
                }
                None => dump.subjects.push(DumpSubject {
                    name,
                    versions: vec![v],
                }),
            }
        }
    }
}
