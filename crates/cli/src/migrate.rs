//! `covenant migrate`: move in from a running Confluent-compatible registry (Confluent, Karapace,
//! Apicurio's compatibility API, another Covenant) or from a dump of the `_schemas` topic,
//! keeping every id and version number.
//!
//! Every source is first read into the [`Dump`] that `covenant export` writes; the dump is then
//! written with the references-first order of [`reconcile::write_order`] (into a store through
//! [`transfer::apply`], into a running registry over REST in IMPORT mode) and the result is
//! checked with [`reconcile::verify`]. So migrate, import and export share one notion of order,
//! identity and verification.

use crate::governance::Server;
use crate::output::{out, outln};
use crate::reconcile::{self, Difference};
use crate::topic_dump;
use crate::transfer::{
    self, Dump, DumpConfig, DumpMode, DumpSchema, DumpSubject, DumpVersion, StoreArgs,
};
use anyhow::{Context, Result, bail};
use covenant_store::SchemaRef;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

const TOPIC_DUMP_HELP: &str = "\
Topic dump layouts (--from-topic-dump): one record per line, the key's JSON, a tab, the value's
JSON, as written by `kcat -C -t _schemas -e -f '%k\\t%s\\n'` or by
`kafka-console-consumer --topic _schemas --from-beginning --property print.key=true`.
An empty value, `null` or `NULL` is a tombstone (a hard delete). Records apply in file order:
SCHEMA (with its `deleted` flag), CONFIG, MODE, DELETE_SUBJECT (soft-deletes versions up to the
one named), tombstones; NOOP, CLEAR_SUBJECT and CONTEXT change nothing.

Exit status: 0 when the verification is clean, 1 on any difference, 2 on usage or connection
errors.";

/// The longest one request to either registry may take.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

#[derive(clap::Args)]
#[command(after_help = TOPIC_DUMP_HELP)]
pub struct MigrateArgs {
    /// Base URL of the registry to read, through its Confluent REST API.
    #[arg(
        long,
        value_name = "URL",
        required_unless_present = "from_topic_dump",
        conflicts_with = "from_topic_dump"
    )]
    from: Option<String>,
    /// A dump of the `_schemas` topic to rebuild from (layouts below).
    #[arg(long, value_name = "FILE")]
    from_topic_dump: Option<PathBuf>,
    /// HTTP Basic credentials for the source registry.
    #[arg(long, value_name = "USER:PASSWORD")]
    basic_auth: Option<String>,
    /// A bearer token for the source registry.
    #[arg(long, value_name = "TOKEN")]
    bearer: Option<String>,
    /// Trust this certificate authority (PEM) for https registries, besides the system's.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
    /// Only subjects whose name starts with this prefix, and the versions they refer to (the
    /// global config and mode are then left as the destination has them).
    #[arg(long, value_name = "PREFIX", default_value = "")]
    subjects: String,
    /// Read both sides and report what would be written; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// How many subjects are read from a registry at once.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u16).range(1..=32))]
    parallel: u16,
    /// A running registry to write into (switched to IMPORT mode meanwhile, then restored).
    #[arg(long, value_name = "URL", conflicts_with_all = ["data_dir", "store"],
          required_unless_present_any = ["data_dir", "store"])]
    to: Option<String>,
    /// HTTP Basic credentials for the destination registry (`--to`).
    #[arg(long, value_name = "USER:PASSWORD", requires = "to")]
    to_basic_auth: Option<String>,
    /// A bearer token for the destination registry (`--to`).
    #[arg(long, value_name = "TOKEN", requires = "to")]
    to_bearer: Option<String>,
    /// Write directly into the embedded store in this folder.
    #[arg(long, value_name = "DIR", conflicts_with = "store")]
    data_dir: Option<PathBuf>,
    /// Write directly into this PostgreSQL store (postgres://...).
    #[arg(long, value_name = "URL")]
    store: Option<String>,
}

pub fn run(args: MigrateArgs) -> Result<ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?
        .block_on(migrate(args))
}

/// Where the migration writes.
enum Destination {
    Store(Arc<dyn covenant_store::Store>),
    Registry(Arc<Remote>),
}

async fn migrate(args: MigrateArgs) -> Result<ExitCode> {
    let parallel = usize::from(args.parallel);
    if args.dry_run && args.data_dir.as_deref().is_some_and(|d| !d.exists()) {
        // A store that does not exist yet holds nothing, and a dry run does not create it.
        let source = read_source(&args, parallel).await?;
        return Ok(dry_run(&source, &empty_dump()));
    }
    // A registry or PostgreSQL destination is reached before the source is read, so an
    // unreachable one fails before a long read; an embedded store is created only after the
    // source was read in full.
    let (destination, source) = if args.data_dir.is_some() {
        let source = read_source(&args, parallel).await?;
        (open_destination(&args).await?, source)
    } else {
        let destination = open_destination(&args).await?;
        (destination, read_source(&args, parallel).await?)
    };
    if args.dry_run {
        let before = read_destination(&destination, &args.subjects, parallel).await?;
        return Ok(dry_run(&source, &before));
    }
    let conflicts = match &destination {
        Destination::Store(store) => write_store(store.as_ref(), &source).await?,
        Destination::Registry(remote) => write_registry(remote, &source).await?,
    };
    let after = read_destination(&destination, &args.subjects, parallel).await?;
    let verification = reconcile::verify(&source, &after);
    for conflict in &conflicts {
        eprintln!("covenant: left as it was: {conflict}");
    }
    out!("{}", verification.report());
    Ok(if verification.is_clean() && conflicts.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Reports what a run would do; exit 1 only when something on the destination conflicts.
fn dry_run(source: &Dump, destination: &Dump) -> ExitCode {
    let verification = reconcile::verify(source, destination);
    let missing = verification
        .differences
        .iter()
        .filter(|d| matches!(d, Difference::Missing(_)))
        .count();
    outln!("dry run: nothing written; {missing} items would be written");
    out!("{}", verification.report());
    let conflicting = verification.differences.len() - missing;
    ExitCode::from(u8::from(conflicting > 0))
}

async fn read_source(args: &MigrateArgs, parallel: usize) -> Result<Dump> {
    if let Some(path) = &args.from_topic_dump {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read '{}'", path.display()))?;
        let restored = topic_dump::restore(&text)?;
        if restored.skipped > 0 {
            eprintln!(
                "covenant: skipped {} records of types this registry does not keep",
                restored.skipped
            );
        }
        return Ok(restrict(restored.dump, &args.subjects));
    }
    let url = args
        .from
        .as_deref()
        .context("--from or --from-topic-dump is needed")?;
    let remote = Remote::new(url, args.basic_auth.clone(), args.bearer.clone(), args)?;
    let dump = read_registry(Arc::new(remote), &args.subjects, parallel, true).await?;
    Ok(restrict(dump, &args.subjects))
}

async fn open_destination(args: &MigrateArgs) -> Result<Destination> {
    if let Some(url) = &args.to {
        let remote = Remote::new(
            url,
            args.to_basic_auth.clone(),
            args.to_bearer.clone(),
            args,
        )?;
        // Reachable, and these credentials may read it: known before the source is read.
        remote.get_setting("/mode").await?;
        return Ok(Destination::Registry(Arc::new(remote)));
    }
    let store_args = StoreArgs {
        store: args.store.clone(),
        data_dir: args.data_dir.clone().unwrap_or_default(),
    };
    Ok(Destination::Store(transfer::open_store(&store_args).await?))
}

async fn read_destination(
    destination: &Destination,
    prefix: &str,
    parallel: usize,
) -> Result<Dump> {
    match destination {
        Destination::Store(store) => Ok(restrict(transfer::export(store.as_ref()).await?, prefix)),
        Destination::Registry(remote) => Ok(restrict(
            read_registry(remote.clone(), prefix, parallel, false).await?,
            prefix,
        )),
    }
}

/// Only the subjects under `prefix` with the versions they refer to, their configs and modes,
/// and the ids they carry; the global config and mode only without a prefix (moving some
/// subjects leaves the destination's own).
fn restrict(mut dump: Dump, prefix: &str) -> Dump {
    let under = |s: &Option<String>| match s {
        Some(s) => s.starts_with(prefix),
        None => prefix.is_empty(),
    };
    reconcile::keep_with_references(&mut dump, |s| s.starts_with(prefix));
    dump.configs.retain(|c| under(&c.subject));
    dump.modes.retain(|m| under(&m.subject));
    dump.audit.clear();
    dump
}

// ----- progress ----------------------------------------------------------------------------

/// Progress on stderr: one rewritten line on a terminal, otherwise a line every `EVERY` items.
struct Progress {
    what: &'static str,
    total: usize,
    tty: bool,
    done: AtomicUsize,
}

impl Progress {
    const EVERY: usize = 10;

    fn new(what: &'static str, total: usize) -> Progress {
        Progress {
            what,
            total,
            tty: std::io::stderr().is_terminal(),
            done: AtomicUsize::new(0),
        }
    }

    fn step(&self) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if self.tty {
            eprint!("\r{} {done}/{}", self.what, self.total);
            if done == self.total {
                eprintln!();
            }
        } else if done.is_multiple_of(Self::EVERY) || done == self.total {
            eprintln!("{} {done}/{}", self.what, self.total);
        }
    }
}

// ----- a registry over REST ----------------------------------------------------------------

/// A Confluent-compatible registry: its base URL and a client with the caller's credentials.
struct Remote {
    server: Server,
    http: reqwest::Client,
}

fn enc(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

impl Remote {
    fn new(
        url: &str,
        basic_auth: Option<String>,
        token: Option<String>,
        args: &MigrateArgs,
    ) -> Result<Remote> {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            bail!("'{url}' is not an http:// or https:// URL");
        }
        let server = Server {
            url: url.trim_end_matches('/').to_string(),
            basic_auth,
            token,
            ca_cert: args.ca_cert.clone(),
        };
        let http = server.client()?;
        Ok(Remote { server, http })
    }

    /// Sends one request; answers the status and the JSON body (`Null` when there is none).
    async fn send(
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
    async fn get(&self, path: &str) -> Result<Option<Value>> {
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
    async fn get_setting(&self, path: &str) -> Result<Option<Value>> {
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
    async fn put(&self, path: &str, body: Value) -> Result<()> {
        match self.send(reqwest::Method::PUT, path, Some(body)).await? {
            (200, _) => Ok(()),
            (status, body) => bail!("PUT {path} answered HTTP {status}: {}", message(&body)),
        }
    }
}

fn message(body: &Value) -> String {
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
async fn read_registry(
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
    let mut schemas: BTreeMap<i64, (String, DumpSchema)> = BTreeMap::new();
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
    Ok(dump)
}

pub fn empty_dump() -> Dump {
    Dump {
        format: transfer::FORMAT.to_string(),
        format_version: transfer::FORMAT_VERSION,
        exported_at: None,
        schemas: Vec::new(),
        subjects: Vec::new(),
        configs: Vec::new(),
        modes: Vec::new(),
        audit: Vec::new(),
    }
}

/// Adds one id's schema; the same id with other content (as Confluent contexts allow) cannot be
/// kept in one id space, so it stops the migration before anything is written.
pub fn add_schema(
    schemas: &mut BTreeMap<i64, (String, DumpSchema)>,
    subject: &str,
    schema: DumpSchema,
) -> Result<()> {
    match schemas.get(&schema.id) {
        Some((first, held)) if held.content_key != schema.content_key => bail!(
            "schema id {} carries different schemas in subjects '{first}' and '{subject}' \
             (ids numbered per context cannot share one id space)",
            schema.id
        ),
        Some(_) => Ok(()),
        None => {
            schemas.insert(schema.id, (subject.to_string(), schema));
            Ok(())
        }
    }
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
            dump.schemas.sort_by_key(|s| s.id);
            return Ok(());
        }
        for (name, version) in wanted {
            let (_, live) = version_lists(remote, &name).await?;
            let Some((v, schema)) = read_version(remote, &name, version, &live).await? else {
                continue;
            };
            match dump.schemas.iter().find(|s| s.id == schema.id) {
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

/// A schema as Confluent's version and `_schemas` records carry it (`schemaType` absent means
/// Avro), keyed as the registry keys it.
pub fn schema_from(body: &Value) -> Result<DumpSchema> {
    let id = body
        .get("id")
        .and_then(Value::as_i64)
        .context("no numeric 'id'")?;
    let schema = body
        .get("schema")
        .and_then(Value::as_str)
        .context("no 'schema' text")?
        .to_string();
    let schema_type = body
        .get("schemaType")
        .and_then(Value::as_str)
        .unwrap_or("AVRO")
        .to_string();
    let references: Vec<SchemaRef> = match body.get("references") {
        None | Some(Value::Null) => Vec::new(),
        Some(r) => serde_json::from_value(r.clone()).context("malformed 'references'")?,
    };
    let present = |key: &str| body.get(key).filter(|v| !v.is_null()).cloned();
    let (metadata, rule_set) = (present("metadata"), present("ruleSet"));
    let content_key =
        covenant_registry::content_key(&schema_type, &schema, &references, &metadata, &rule_set);
    Ok(DumpSchema {
        id,
        schema_type,
        schema,
        references,
        metadata,
        rule_set,
        content_key,
    })
}

/// A config as `GET /config` and `_schemas` CONFIG records show it.
pub fn config_from(subject: Option<&str>, body: &Value) -> DumpConfig {
    const NOT_SETTINGS: &[&str] = &[
        "compatibilityLevel",
        "compatibility",
        "subject",
        "offset",
        "ts",
    ];
    let compatibility = ["compatibilityLevel", "compatibility"]
        .iter()
        .find_map(|k| body.get(*k).and_then(Value::as_str))
        .map(str::to_string);
    let extra = body
        .as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, v)| !NOT_SETTINGS.contains(&k.as_str()) && !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    DumpConfig {
        subject: subject.map(str::to_string),
        compatibility,
        extra,
    }
}

// ----- writing -----------------------------------------------------------------------------

async fn write_store(store: &dyn covenant_store::Store, dump: &Dump) -> Result<Vec<String>> {
    let progress = Progress::new("wrote versions", reconcile::write_order(dump).len());
    let counts = transfer::apply(store, dump, &mut |_| progress.step()).await?;
    eprintln!(
        "wrote {} versions ({} already present, {} soft-deleted), {} configs, {} modes",
        counts.versions_written,
        counts.versions_present,
        counts.soft_deleted,
        counts.configs,
        counts.modes
    );
    Ok(counts.conflicts)
}

/// Writes into a running registry switched to IMPORT mode, restoring its mode afterwards even
/// when a write fails. The source's global mode, when it is not READWRITE, takes its place.
async fn write_registry(remote: &Remote, dump: &Dump) -> Result<Vec<String>> {
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
    let written = write_versions(remote, dump).await;
    let settings = match &written {
        Ok(_) => write_settings(remote, dump).await,
        Err(_) => Ok(()),
    };
    let restored = remote
        .put("/mode?force=true", json!({"mode": restore}))
        .await;
    let conflicts = written?;
    settings?;
    restored?;
    Ok(conflicts)
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
    let schemas: BTreeMap<i64, &DumpSchema> = dump.schemas.iter().map(|s| (s.id, s)).collect();
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
        let live = write_version(remote, subject, v, schemas[&v.id], present, &mut tally).await?;
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
