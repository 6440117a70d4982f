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
    let listing = Arc::new(list_versions(&remote, prefix, parallel).await);
    let progress = Arc::new(Progress::new("read subjects", names.len()));
    let gate = Arc::new(tokio::sync::Semaphore::new(parallel));
    let mut tasks = tokio::task::JoinSet::new();
    for (ix, name) in names.into_iter().enumerate() {
        let (remote, gate, progress) = (remote.clone(), gate.clone(), progress.clone());
        let listing = listing.clone();
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            let read = read_subject(&remote, &listing, name).await;
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

/// Versions as `GET /schemas` lists them, by subject and version number.
type Listing = BTreeMap<String, BTreeMap<i64, Value>>;

/// The page size of `GET /schemas` (Covenant's and Confluent's largest).
const LISTING_PAGE: usize = 1000;

/// Every version under `prefix`, soft-deleted ones included, from `GET /schemas` a thousand at
/// a time, `parallel` pages at once. Reading a version through its own
/// `GET /subjects/{s}/versions/{v}` costs a request each: listing them cut the reads of 20,000
/// versions from 20,000 requests to 20. A registry that lists less (no such endpoint, no
/// `deleted` or `:*:` there) only loses the shortcut: a subject's versions the listing lacks
/// are read one by one.
async fn list_versions(remote: &Arc<Remote>, prefix: &str, parallel: usize) -> Listing {
    let scope = enc(if prefix.is_empty() { ":*:" } else { prefix });
    let mut listing = Listing::new();
    let mut offset = 0;
    loop {
        let mut pages = tokio::task::JoinSet::new();
        for i in 0..parallel.clamp(1, 8) {
            let at = offset + i * LISTING_PAGE;
            let path = format!(
                "/schemas?deleted=true&subjectPrefix={scope}&offset={at}&limit={LISTING_PAGE}"
            );
            let remote = remote.clone();
            pages.spawn(async move { (i, remote.get(&path).await) });
        }
        let mut pages = pages.join_all().await;
        pages.sort_by_key(|(i, _)| *i);
        for (_, page) in pages {
            let Ok(Some(Value::Array(items))) = page else {
                return listing;
            };
            let full = items.len() == LISTING_PAGE;
            let mut fresh = false;
            for item in items {
                let (Some(subject), Some(version)) = (
                    item.get("subject").and_then(Value::as_str),
                    item.get("version").and_then(Value::as_i64),
                ) else {
                    continue;
                };
                let versions = listing.entry(subject.to_string()).or_default();
                fresh |= versions.insert(version, item).is_none();
            }
            // A short page is the last; one that brings nothing new is a registry that
            // ignores `offset`.
            if !full || !fresh {
                return listing;
            }
            offset += LISTING_PAGE;
        }
    }
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

/// One subject: its version lists, config and mode asked at once (a subject costs the latency
/// of one request, not four), each version from `listing` or, when it lacks one, its own GET.
async fn read_subject(remote: &Remote, listing: &Listing, name: String) -> Result<SubjectRead> {
    let e = enc(&name);
    let (config_path, mode_path) = (format!("/config/{e}"), format!("/mode/{e}"));
    let (lists, config, mode) = tokio::join!(
        version_lists(remote, &name),
        remote.get_setting(&config_path),
        remote.get_setting(&mode_path),
    );
    let (all, live) = lists?;
    let mut subject = DumpSubject {
        name: name.clone(),
        versions: Vec::new(),
    };
    let mut schemas = Vec::new();
    let listed = listing.get(&name);
    for version in all {
        let read = match listed.and_then(|l| l.get(&version)) {
            Some(body) => Some(listed_version(&name, version, body, &live)?),
            None => read_version(remote, &name, version, &live).await?,
        };
        if let Some((v, schema)) = read {
            subject.versions.push(v);
            schemas.push(schema);
        }
    }
    let config = config?.map(|c| config_from(Some(&name), &c));
    let mode = mode?.and_then(|m| {
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
    let (all_path, live_path) = (
        format!("/subjects/{e}/versions?deleted=true"),
        format!("/subjects/{e}/versions"),
    );
    let (all, live) = tokio::join!(remote.get(&all_path), remote.get(&live_path));
    Ok((numbers(all?)?, numbers(live?)?.into_iter().collect()))
}

/// One version with its schema; `None` when it was hard-deleted meanwhile.
async fn read_version(
    remote: &Remote,
    name: &str,
    version: i64,
    live: &BTreeSet<i64>,
) -> Result<Option<(DumpVersion, DumpSchema)>> {
    let path = format!("/subjects/{}/versions/{version}?deleted=true", enc(name));
    match remote.get(&path).await? {
        Some(body) => listed_version(name, version, &body, live).map(Some),
        None => Ok(None),
    }
}

/// A version from its Confluent JSON (`GET /subjects/{s}/versions/{v}` or an item of
/// `GET /schemas`).
fn listed_version(
    name: &str,
    version: i64,
    body: &Value,
    live: &BTreeSet<i64>,
) -> Result<(DumpVersion, DumpSchema)> {
    let schema =
        schema_from(body).with_context(|| format!("reading version {version} of '{name}'"))?;
    let v = DumpVersion {
        version,
        id: schema.id,
        deleted: !live.contains(&version),
        created_at: None,
    };
    Ok((v, schema))
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

/// `work` on every item, at most `parallel` at once; the answers in the items' order, or the
/// first error.
pub(super) async fn in_parallel<T, R, F, Fut>(
    items: Vec<T>,
    parallel: usize,
    work: F,
) -> Result<Vec<R>>
where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(T) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = Result<R>> + Send,
{
    let gate = Arc::new(tokio::sync::Semaphore::new(parallel.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (ix, item) in items.into_iter().enumerate() {
        let (gate, work) = (gate.clone(), work.clone());
        tasks.spawn(async move {
            let _permit = gate.acquire_owned().await?;
            work(item).await.map(|r| (ix, r))
        });
    }
    let mut answers = Vec::with_capacity(tasks.len());
    while let Some(joined) = tasks.join_next().await {
        answers.push(joined.context("a request task stopped")??);
    }
    answers.sort_by_key(|(ix, _)| *ix);
    Ok(answers.into_iter().map(|(_, r)| r).collect())
}
