//! `covenant export` and `covenant import`: move a registry's whole state between stores (the
//! embedded one and PostgreSQL, either way) as one JSON document, keeping ids, version numbers,
//! soft deletes, config and modes, the audit trail, and consumer governance with samples and
//! live marks. The format is described in `docs/export-format.md`.

mod governance;

use crate::reconcile::{identity, schema_identity, write_levels};
use anyhow::{Context, Result, bail};
use covenant_store::context;
use covenant_store::deks::{Dek, DekStore, Kek};
use covenant_store::deks_postgres::PostgresDekStore;
use covenant_store::deks_sqlite::SqliteDekStore;
use covenant_store::governance::GovernanceSnapshot;
use covenant_store::{
    AuditEntry, AuditQuery, ConfigRecord, Dedupe, GovernanceStore, NewSchema, Placement,
    PostgresGovernanceStore, PostgresProfileStore, PostgresSampleStore, PostgresStore,
    ProfileRecord, ProfileStore, Registration, SampleStore, SchemaRef, Scope,
    SqliteGovernanceStore, SqliteProfileStore, SqliteSampleStore, SqliteStore, Store, StoreError,
    StoredVersion,
};
pub use governance::{DumpLiveMark, DumpSample};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::task::Poll;

/// The `format` value of every dump.
pub const FORMAT: &str = "covenant-export";
/// The `formatVersion` this build writes: 2 added governance, samples and live marks, 3 data
/// profiles, 4 the DEK Registry's keys. It reads every version up to this one (an older dump
/// reads as one without the later sections).
pub const FORMAT_VERSION: u32 = 4;

#[derive(clap::Args)]
pub struct StoreArgs {
    /// PostgreSQL store, as postgres://user:password@host:port/dbname.
    #[arg(long, value_name = "URL", conflicts_with = "data_dir")]
    pub store: Option<String>,
    /// Folder of the embedded store (the default store).
    #[arg(long, value_name = "DIR", default_value = "./covenant-data")]
    pub data_dir: PathBuf,
}

#[derive(clap::Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Write the dump here instead of standard output.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// The dump written by `covenant export` (`-` for standard input).
    pub dump: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dump {
    pub format: String,
    pub format_version: u32,
    /// RFC 3339 time of the export; informative.
    #[serde(default)]
    pub exported_at: Option<String>,
    /// Every schema some version carries, by id.
    pub schemas: Vec<DumpSchema>,
    /// Every subject with all its versions (soft-deleted ones included), oldest first.
    pub subjects: Vec<DumpSubject>,
    #[serde(default)]
    pub configs: Vec<DumpConfig>,
    #[serde(default)]
    pub modes: Vec<DumpMode>,
    /// The audit trail, oldest first (absent in dumps written before the trail existed).
    #[serde(default)]
    pub audit: Vec<AuditEntry>,
    /// Consumers, deprecations, findings and usage buckets (format 2; empty when read over
    /// REST by `covenant migrate`, which sees no governance).
    #[serde(flatten)]
    pub governance: GovernanceSnapshot,
    /// Stored samples by id (format 2).
    #[serde(default)]
    pub samples: Vec<DumpSample>,
    /// Versions marked live (format 2).
    #[serde(default)]
    pub live_marks: Vec<DumpLiveMark>,
    /// Stored data profiles by id (format 3).
    #[serde(default)]
    pub profiles: Vec<DumpProfile>,
    /// The DEK Registry's KEKs by name (format 4), in Confluent's JSON shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keks: Vec<DumpKek>,
    /// The DEK Registry's DEKs (format 4), encrypted as clients stored them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deks: Vec<DumpDek>,
}

/// A KEK of the DEK Registry, as Confluent's API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpKek {
    pub name: String,
    pub kms_type: String,
    pub kms_key_id: String,
    #[serde(default)]
    pub kms_props: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doc: Option<String>,
    #[serde(default)]
    pub shared: bool,
    pub ts: i64,
    #[serde(default)]
    pub deleted: bool,
}

/// A DEK of the DEK Registry, as Confluent's API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpDek {
    pub kek_name: String,
    pub subject: String,
    pub version: i64,
    pub algorithm: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encrypted_key_material: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_material: Option<String>,
    pub ts: i64,
    #[serde(default)]
    pub deleted: bool,
}

impl From<Kek> for DumpKek {
    fn from(k: Kek) -> DumpKek {
        DumpKek {
            name: k.name,
            kms_type: k.kms_type,
            kms_key_id: k.kms_key_id,
            kms_props: k.kms_props,
            doc: k.doc,
            shared: k.shared,
            ts: k.ts,
            deleted: k.deleted,
        }
    }
}

impl From<&DumpKek> for Kek {
    fn from(k: &DumpKek) -> Kek {
        Kek {
            name: k.name.clone(),
            kms_type: k.kms_type.clone(),
            kms_key_id: k.kms_key_id.clone(),
            kms_props: k.kms_props.clone(),
            doc: k.doc.clone(),
            shared: k.shared,
            ts: k.ts,
            deleted: k.deleted,
        }
    }
}

impl From<Dek> for DumpDek {
    fn from(d: Dek) -> DumpDek {
        DumpDek {
            kek_name: d.kek_name,
            subject: d.subject,
            version: d.version,
            algorithm: d.algorithm,
            encrypted_key_material: d.encrypted_key_material,
            key_material: d.key_material,
            ts: d.ts,
            deleted: d.deleted,
        }
    }
}

impl From<&DumpDek> for Dek {
    fn from(d: &DumpDek) -> Dek {
        Dek {
            kek_name: d.kek_name.clone(),
            subject: d.subject.clone(),
            version: d.version,
            algorithm: d.algorithm.clone(),
            encrypted_key_material: d.encrypted_key_material.clone(),
            key_material: d.key_material.clone(),
            ts: d.ts,
            deleted: d.deleted,
        }
    }
}

/// A stored data profile; the document is kept as the exact text stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpProfile {
    pub id: i64,
    pub subject: String,
    pub window_from: i64,
    pub window_to: i64,
    pub records: i64,
    pub created_at: i64,
    pub document: String,
}

impl From<ProfileRecord> for DumpProfile {
    fn from(p: ProfileRecord) -> DumpProfile {
        DumpProfile {
            id: p.id,
            subject: p.subject,
            window_from: p.window_from,
            window_to: p.window_to,
            records: p.records,
            created_at: p.created_at,
            document: p.document,
        }
    }
}

impl From<&DumpProfile> for ProfileRecord {
    fn from(p: &DumpProfile) -> ProfileRecord {
        ProfileRecord {
            id: p.id,
            subject: p.subject.clone(),
            window_from: p.window_from,
            window_to: p.window_to,
            records: p.records,
            created_at: p.created_at,
            document: p.document.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpSchema {
    /// The id clients see, within [`DumpSchema::context`].
    pub id: i64,
    /// The context whose id space `id` belongs to (`.` when absent).
    #[serde(
        default = "default_context",
        skip_serializing_if = "is_default_context"
    )]
    pub context: String,
    pub schema_type: String,
    pub schema: String,
    #[serde(default)]
    pub references: Vec<SchemaRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_set: Option<serde_json::Value>,
    pub content_key: String,
}

fn default_context() -> String {
    context::DEFAULT_CONTEXT.to_string()
}

fn is_default_context(c: &str) -> bool {
    c == context::DEFAULT_CONTEXT
}

/// Where a schema sits in a dump: its context and id (ids repeat across contexts).
pub type SchemaKey<'a> = (&'a str, i64);

impl DumpSchema {
    pub fn key(&self) -> SchemaKey<'_> {
        (&self.context, self.id)
    }
}

/// The key of the schema that version `v` of `subject` carries.
pub fn version_key<'a>(subject: &'a str, v: &DumpVersion) -> SchemaKey<'a> {
    (context::context_of(subject), v.id)
}

/// The dump's schemas by key.
pub fn schemas_by_key(dump: &Dump) -> BTreeMap<SchemaKey<'_>, &DumpSchema> {
    dump.schemas.iter().map(|s| (s.key(), s)).collect()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpSubject {
    pub name: String,
    pub versions: Vec<DumpVersion>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpVersion {
    pub version: i64,
    pub id: i64,
    #[serde(default)]
    pub deleted: bool,
    /// Milliseconds since the Unix epoch; informative (an import records its own time).
    #[serde(default)]
    pub created_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpConfig {
    /// The subject, or absent for the global scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DumpMode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub mode: String,
}

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportCounts {
    pub versions_written: usize,
    pub versions_present: usize,
    pub soft_deleted: usize,
    pub configs: usize,
    pub modes: usize,
    pub audit_entries: usize,
    pub governance: governance::Restored,
    pub profiles: usize,
    /// KEKs and DEKs written.
    pub keys: usize,
    /// Versions the store already holds with another schema, or ids it holds with other
    /// content: left as they are and reported, never overwritten.
    pub conflicts: Vec<String>,
}

/// Opens the store the flags name: PostgreSQL for `--store`, else the embedded one.
pub async fn open_store(args: &StoreArgs) -> Result<Arc<dyn Store>> {
    match &args.store {
        Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
            let store = PostgresStore::connect(url)
                .await
                .context("cannot open the PostgreSQL store")?;
            Ok(Arc::new(store))
        }
        Some(other) => bail!(
            "unsupported store '{}': expected a postgres:// URL",
            other.split('@').next_back().unwrap_or(other)
        ),
        None => {
            let store = SqliteStore::open(&args.data_dir).with_context(|| {
                format!(
                    "cannot open the embedded store in '{}'",
                    args.data_dir.display()
                )
            })?;
            Ok(Arc::new(store))
        }
    }
}

/// The stores of one registry: schemas, governance, samples and profiles share one database.
pub struct Stores {
    pub registry: Arc<dyn Store>,
    pub governance: Arc<dyn GovernanceStore>,
    pub samples: Arc<dyn SampleStore>,
    pub profiles: Arc<dyn ProfileStore>,
    /// The DEK Registry's keys.
    pub keys: Arc<dyn DekStore>,
}

/// Opens every store of the registry the flags name.
pub async fn open_stores(args: &StoreArgs) -> Result<Stores> {
    let registry = open_store(args).await?;
    match &args.store {
        Some(url) => Ok(Stores {
            registry,
            governance: Arc::new(
                PostgresGovernanceStore::connect(url)
                    .await
                    .map_err(|e| anyhow::anyhow!("cannot open the governance tables: {e}"))?,
            ),
            samples: Arc::new(
                PostgresSampleStore::connect(url)
                    .await
                    .context("cannot open the sample tables")?,
            ),
            profiles: Arc::new(
                PostgresProfileStore::connect(url)
                    .await
                    .context("cannot open the profile tables")?,
            ),
            keys: Arc::new(
                PostgresDekStore::connect(url)
                    .await
                    .context("cannot open the DEK Registry tables")?,
            ),
        }),
        None => {
            // The governance tables live in the registry's own database file, as under serve.
            let governance = SqliteGovernanceStore::open(&args.data_dir)
                .map_err(|e| anyhow::anyhow!("cannot open the governance tables: {e}"))?;
            let samples = SqliteSampleStore::open(governance.path())
                .context("cannot open the sample tables")?;
            let profiles = SqliteProfileStore::open(governance.path())
                .context("cannot open the profile tables")?;
            let keys = SqliteDekStore::open(governance.path())
                .context("cannot open the DEK Registry tables")?;
            Ok(Stores {
                registry,
                governance: Arc::new(governance),
                samples: Arc::new(samples),
                profiles: Arc::new(profiles),
                keys: Arc::new(keys),
            })
        }
    }
}

/// Reads the whole state of a registry: [`export`] and the governance sections. Each store
/// is read in one snapshot; the three are not one transaction (see `docs/export-format.md`).
pub async fn export_all(stores: &Stores) -> Result<Dump> {
    let mut dump = export(stores.registry.as_ref()).await?;
    let (snapshot, samples, marks) =
        governance::export(stores.governance.as_ref(), stores.samples.as_ref()).await?;
    dump.governance = snapshot;
    dump.samples = samples;
    dump.live_marks = marks;
    dump.profiles = stores
        .profiles
        .all_profiles()
        .await?
        .into_iter()
        .map(DumpProfile::from)
        .collect();
    let (keks, deks) = stores.keys.all_keys().await?;
    dump.keks = keks.into_iter().map(DumpKek::from).collect();
    dump.deks = deks.into_iter().map(DumpDek::from).collect();
    Ok(dump)
}

/// Reads the schema state of `store` (versions, configs, modes, audit trail), without
/// governance: what `covenant migrate` compares against a registry read over REST.
pub async fn export(store: &dyn Store) -> Result<Dump> {
    let versions = store.all_versions().await?;
    let slots: BTreeMap<i64, String> = store
        .contexts()
        .await?
        .into_iter()
        .map(|(name, slot)| (slot, name))
        .chain([(0, default_context())])
        .collect();
    let mut schemas: BTreeMap<i64, DumpSchema> = BTreeMap::new();
    let mut subjects: Vec<DumpSubject> = Vec::new();
    for v in versions {
        let StoredVersion {
            subject,
            version,
            deleted,
            created_at,
            schema,
        } = v;
        let id = context::public_id(schema.id);
        let slot = context::slot_of(schema.id);
        schemas.entry(schema.id).or_insert_with(|| DumpSchema {
            id,
            context: slots.get(&slot).cloned().unwrap_or_else(default_context),
            schema_type: schema.schema_type,
            schema: schema.schema,
            references: schema.references,
            metadata: schema.metadata,
            rule_set: schema.rule_set,
            content_key: schema.content_key,
        });
        let entry = DumpVersion {
            version,
            id,
            deleted,
            created_at: Some(created_at),
        };
        match subjects.last_mut() {
            Some(last) if last.name == subject => last.versions.push(entry),
            _ => subjects.push(DumpSubject {
                name: subject,
                versions: vec![entry],
            }),
        }
    }
    let configs = store
        .all_configs()
        .await?
        .into_iter()
        .map(|(subject, c)| DumpConfig {
            subject,
            compatibility: c.compatibility,
            extra: c.extra,
        })
        .collect();
    let modes = store
        .all_modes()
        .await?
        .into_iter()
        .map(|(subject, mode)| DumpMode { subject, mode })
        .collect();
    Ok(Dump {
        format: FORMAT.to_string(),
        format_version: FORMAT_VERSION,
        exported_at: Some(chrono_now()),
        schemas: schemas.into_values().collect(),
        subjects,
        configs,
        modes,
        audit: whole_trail(store).await?,
        governance: GovernanceSnapshot::default(),
        samples: Vec::new(),
        live_marks: Vec::new(),
        profiles: Vec::new(),
        keks: Vec::new(),
        deks: Vec::new(),
    })
}

/// Every audit entry, read a page at a time.
async fn whole_trail(store: &dyn Store) -> Result<Vec<AuditEntry>> {
    const PAGE: i64 = 1000;
    let mut out: Vec<AuditEntry> = Vec::new();
    loop {
        let query = AuditQuery {
            after: out.last().map(|e| e.seq).unwrap_or(0),
            limit: PAGE,
            ..AuditQuery::default()
        };
        let page = store.audit_entries(&query).await?;
        let full = page.len() as i64 == PAGE;
        out.extend(page);
        if !full {
            return Ok(out);
        }
    }
}

/// What identifies an entry across stores (its `seq` is renumbered by each store).
type EntryKey = (
    i64,
    String,
    String,
    Option<String>,
    Option<i64>,
    Option<String>,
);

fn entry_key(e: &AuditEntry) -> EntryKey {
    (
        e.at,
        e.principal.clone(),
        e.operation.clone(),
        e.subject.clone(),
        e.version,
        e.request_id.clone(),
    )
}

/// Appends the dump's trail, skipping entries the store already holds, so that an import run
/// again does not repeat them; entries keep their times and principals.
async fn import_trail(store: &dyn Store, trail: &[AuditEntry]) -> Result<usize> {
    let present: std::collections::HashSet<EntryKey> =
        whole_trail(store).await?.iter().map(entry_key).collect();
    let mut added = 0;
    for entry in trail.iter().filter(|e| !present.contains(&entry_key(e))) {
        store.record_audit(entry).await?;
        added += 1;
    }
    Ok(added)
}

fn chrono_now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Checks a dump before anything is written, so a bad file changes nothing.
pub fn validate(dump: &Dump) -> Result<()> {
    if dump.format != FORMAT {
        bail!("not a covenant export: format is '{}'", dump.format);
    }
    if dump.format_version > FORMAT_VERSION {
        bail!(
            "export format version {} is newer than this build reads (up to {FORMAT_VERSION}); \
             import it with a newer covenant",
            dump.format_version
        );
    }
    if dump.format_version == 0 {
        bail!("unsupported export format version 0");
    }
    governance::validate(dump)?;
    let mut ids = BTreeMap::new();
    for s in &dump.schemas {
        if ids.insert(s.key(), s).is_some() {
            bail!(
                "schema id {} of context '{}' appears twice in the dump",
                s.id,
                s.context
            );
        }
    }
    for subject in &dump.subjects {
        let mut seen = std::collections::BTreeSet::new();
        for v in &subject.versions {
            if !ids.contains_key(&version_key(&subject.name, v)) {
                bail!(
                    "version {} of subject '{}' carries schema id {}, which the dump does not hold",
                    v.version,
                    subject.name,
                    v.id
                );
            }
            if !seen.insert(v.version) {
                bail!(
                    "version {} of subject '{}' appears twice in the dump",
                    v.version,
                    subject.name
                );
            }
        }
    }
    Ok(())
}

/// Writes `dump` into a registry's stores: [`apply`], then governance, samples and live marks.
/// Everything already present is left alone, so an interrupted import can be run again; a
/// version present with another id (or a deprecation or sample id held with another record)
/// is an error once everything else is written.
pub async fn import(stores: &Stores, dump: &Dump) -> Result<ImportCounts> {
    let mut counts = apply(stores.registry.as_ref(), dump, &mut |_| {}).await?;
    counts.governance =
        governance::import(stores.governance.as_ref(), stores.samples.as_ref(), dump).await?;
    let restored = &counts.governance;
    let more = [&restored.governance.conflicts, &restored.samples.conflicts];
    counts.conflicts.extend(more.into_iter().flatten().cloned());
    let profiles: Vec<ProfileRecord> = dump.profiles.iter().map(ProfileRecord::from).collect();
    let written = stores.profiles.restore_profiles(&profiles).await?;
    counts.profiles = written.written;
    counts.conflicts.extend(
        written
            .conflicts
            .iter()
            .map(|id| format!("profile {id} already exists with other content")),
    );
    let keks: Vec<Kek> = dump.keks.iter().map(Kek::from).collect();
    let deks: Vec<Dek> = dump.deks.iter().map(Dek::from).collect();
    let keys = stores.keys.restore_keys(&keks, &deks).await?;
    counts.keys = keys.written;
    counts.conflicts.extend(keys.conflicts);
    match counts.conflicts.first() {
        Some(conflict) => bail!("{conflict}"),
        None => Ok(counts),
    }
}

/// Writes `dump` into `store` in the order of [`write_levels`], then the soft deletes (referrers first, so a
/// reference never names a version deleted before its referrer was written), then configs,
/// modes and the audit trail. An identical (subject, version, id) already there is skipped; a
/// conflicting one, or one the store refuses, is left alone and listed in
/// [`ImportCounts::conflicts`]. `progress` hears the number of versions handled so far.
pub async fn apply(
    store: &dyn Store,
    dump: &Dump,
    progress: &mut dyn FnMut(usize),
) -> Result<ImportCounts> {
    validate(dump)?;
    let schemas = schemas_by_key(dump);
    let mut counts = ImportCounts::default();
    let mut existing: BTreeMap<&str, Vec<StoredVersion>> = BTreeMap::new();
    let mut to_delete = Vec::new();
    let mut done = 0;
    // Level by level ([`write_levels`]), `APPLY_CHUNK` versions of a level at a time: their
    // reads at once, then their writes in batches of `APPLY_BATCH`, each batch one transaction
    // ([`Store::register_all`]), the batches at once. One version a transaction paid a commit
    // and a turn of the writer each; one transaction for the whole chunk made PostgreSQL run
    // every statement one after another on one connection. Figures in benches/RESULTS.md.
    for level in write_levels(dump) {
        for (subject, _) in &level {
            if !existing.contains_key(subject) {
                existing.insert(subject, store.subject_versions(subject).await?);
            }
        }
        for chunk in level.chunks(APPLY_CHUNK) {
            let slots = context_slots(store, chunk).await?;
            let reads = chunk.iter().map(|&(subject, v)| {
                let present = existing[subject].iter().find(|e| e.version == v.version);
                let schema = schemas[&version_key(subject, v)];
                let slot = slots[context::context_of(subject)];
                Box::pin(prepare_version(store, subject, v, schema, present, slot))
                    as Pending<'_, (Prepared, Option<String>)>
            });
            let mut prepared = Vec::with_capacity(chunk.len());
            for read in join_all(reads.collect()).await {
                let (p, conflict) = read?;
                counts.absorb(conflict, &p);
                prepared.push(p);
            }
            let mut prepared = prepared.into_iter();
            let writes = chunk.chunks(APPLY_BATCH).map(|batch| {
                let mine: Vec<Prepared> = prepared.by_ref().take(batch.len()).collect();
                Box::pin(write_prepared(store, batch, mine))
                    as Pending<'_, (Vec<bool>, ImportCounts)>
            });
            let written = join_all(writes.collect()).await;
            for (batch, outcome) in chunk.chunks(APPLY_BATCH).zip(written) {
                let (live, one) = outcome?;
                counts.versions_written += one.versions_written;
                counts.conflicts.extend(one.conflicts);
                for (&(subject, v), live) in batch.iter().zip(live) {
                    if v.deleted && live {
                        to_delete.push((subject, v.version));
                    }
                    done += 1;
                    progress(done);
                }
            }
        }
    }
    for (subject, version) in to_delete.into_iter().rev() {
        store.soft_delete(subject, &[version]).await?;
        counts.soft_deleted += 1;
    }
    apply_settings(store, dump, &mut counts).await?;
    counts.audit_entries = import_trail(store, &dump.audit).await?;
    Ok(counts)
}

/// Versions of a level read and written at a time.
const APPLY_CHUNK: usize = 512;
/// Versions written in one transaction.
const APPLY_BATCH: usize = 32;

/// A borrowed future to run with others by [`join_all`].
type Pending<'a, T> = Pin<Box<dyn Future<Output = Result<T>> + Send + 'a>>;

/// Runs borrowed futures at once (they may borrow, so they are polled here rather than
/// spawned) and answers their outputs in order.
async fn join_all<T>(mut futures: Vec<Pending<'_, T>>) -> Vec<Result<T>> {
    let mut outputs: Vec<Option<Result<T>>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

async fn apply_settings(store: &dyn Store, dump: &Dump, counts: &mut ImportCounts) -> Result<()> {
    fn scope(subject: &Option<String>) -> Scope<'_> {
        subject.as_deref().map_or(Scope::Global, Scope::Subject)
    }
    for c in &dump.configs {
        let record = ConfigRecord {
            compatibility: c.compatibility.clone(),
            extra: c.extra.clone(),
        };
        store.set_config(scope(&c.subject), &record, None).await?;
        counts.configs += 1;
    }
    for m in &dump.modes {
        store.set_mode(scope(&m.subject), &m.mode, None).await?;
        counts.modes += 1;
    }
    Ok(())
}

/// One version of a batch: already settled (held, or a conflict listed in the counts), or to
/// be written with this candidate at its id and version.
enum Prepared {
    /// Already held; whether it is live (so a soft delete is still due).
    Present(bool),
    /// Not to be written: whether the version is held and live.
    Settled(bool),
    Write(Box<NewSchema>, Placement),
}

/// The slot of each context the versions of `chunk` live in (`None` for a context the store
/// does not hold yet), read once per context rather than once per version.
async fn context_slots<'a>(
    store: &dyn Store,
    chunk: &[(&'a str, &DumpVersion)],
) -> Result<BTreeMap<&'a str, Option<i64>>> {
    let mut slots = BTreeMap::new();
    for &(subject, _) in chunk {
        let context = context::context_of(subject);
        if !slots.contains_key(context) {
            slots.insert(context, store.context_slot(context).await?);
        }
    }
    Ok(slots)
}

/// What writing `v` takes, its context being in `slot`: nothing when `present` already holds it, a conflict when it holds
/// another id or the id holds other content, else the candidate (bound to the id's content
/// as the destination spells it, when it holds the same schema spelled differently).
async fn prepare_version(
    store: &dyn Store,
    subject: &str,
    v: &DumpVersion,
    schema: &DumpSchema,
    present: Option<&StoredVersion>,
    slot: Option<i64>,
) -> Result<(Prepared, Option<String>)> {
    let what = || format!("version {} of subject '{subject}' (id {})", v.version, v.id);
    match present {
        Some(e) if context::public_id(e.schema.id) == v.id => {
            return Ok((Prepared::Present(!e.deleted), None));
        }
        Some(e) => {
            let id = context::public_id(e.schema.id);
            let conflict = format!("{} already exists with schema id {id}", what());
            return Ok((Prepared::Settled(false), Some(conflict)));
        }
        None => {}
    }
    let mut candidate = NewSchema {
        schema_type: schema.schema_type.clone(),
        schema: schema.schema.clone(),
        references: schema.references.clone(),
        metadata: schema.metadata.clone(),
        rule_set: schema.rule_set.clone(),
        content_key: schema.content_key.clone(),
    };
    let held = match slot {
        Some(slot) => store.schema_by_id(context::stored_id(slot, v.id)).await?,
        None => None,
    };
    if let Some(held) = held {
        let same = identity(
            &held.schema_type,
            &held.schema,
            &held.references,
            &held.metadata,
            &held.rule_set,
        ) == schema_identity(schema);
        if !same {
            let conflict = format!("{}: schema id {} holds other content", what(), v.id);
            return Ok((Prepared::Settled(false), Some(conflict)));
        }
        candidate.schema = held.schema;
        candidate.content_key = held.content_key;
    }
    let placement = Placement {
        id: Some(v.id),
        version: Some(v.version),
        dedupe: Dedupe::Never,
    };
    Ok((Prepared::Write(Box::new(candidate), placement), None))
}

/// Writes the versions of `batch` that `prepared` says to write, in one transaction; when the
/// store refuses any of them, one by one, so that each refusal is listed as its own conflict
/// and the others are still written. Answers, per version, whether it is held and live, with
/// what was written and refused.
async fn write_prepared(
    store: &dyn Store,
    batch: &[(&str, &DumpVersion)],
    prepared: Vec<Prepared>,
) -> Result<(Vec<bool>, ImportCounts)> {
    let mut counts = ImportCounts::default();
    let members: Vec<Registration<'_>> = batch
        .iter()
        .zip(&prepared)
        .filter_map(|(&(subject, _), p)| match p {
            Prepared::Write(candidate, placement) => Some(Registration {
                subject,
                candidate,
                placement: *placement,
                audit: None,
            }),
            Prepared::Present(_) | Prepared::Settled(_) => None,
        })
        .collect();
    if members.is_empty() || store.register_all(&members).await.is_ok() {
        counts.versions_written += members.len();
        return Ok((prepared.iter().map(Prepared::live).collect(), counts));
    }
    let mut live = Vec::with_capacity(batch.len());
    for (&(subject, v), p) in batch.iter().zip(prepared) {
        live.push(match p {
            Prepared::Write(candidate, placement) => {
                write_one(store, subject, v, &candidate, placement, &mut counts).await?
            }
            settled => settled.live(),
        });
    }
    Ok((live, counts))
}

impl Prepared {
    /// Whether the version is held and live once a write of it succeeded.
    fn live(&self) -> bool {
        match self {
            Prepared::Present(live) | Prepared::Settled(live) => *live,
            Prepared::Write(..) => true,
        }
    }
}

impl ImportCounts {
    /// Counts what reading one version found.
    fn absorb(&mut self, conflict: Option<String>, prepared: &Prepared) {
        if let Prepared::Present(_) = prepared {
            self.versions_present += 1;
        }
        self.conflicts.extend(conflict);
    }
}

/// Writes one version; a refusal is listed as a conflict. Answers whether it was written.
async fn write_one(
    store: &dyn Store,
    subject: &str,
    v: &DumpVersion,
    candidate: &NewSchema,
    placement: Placement,
    counts: &mut ImportCounts,
) -> Result<bool> {
    let what = format!("version {} of subject '{subject}' (id {})", v.version, v.id);
    let allow = |_: &[StoredVersion]| Ok(());
    match store
        .register(subject, candidate, placement, &allow, None)
        .await
    {
        Ok(_) => {
            counts.versions_written += 1;
            Ok(true)
        }
        Err(StoreError::Backend(e)) => Err(anyhow::anyhow!("cannot import {what}: {e}")),
        Err(refused) => {
            counts
                .conflicts
                .push(format!("{what} was refused: {refused}"));
            Ok(false)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn run_export(args: ExportArgs) -> Result<ExitCode> {
    let dump = runtime()?.block_on(async {
        let stores = open_stores(&args.store).await?;
        export_all(&stores).await
    })?;
    let mut text = serde_json::to_string_pretty(&dump)?;
    text.push('\n');
    match &args.output {
        Some(path) => std::fs::write(path, text)
            .with_context(|| format!("cannot write '{}'", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
                crate::output::quit(&e);
            }
        }
    }
    let g = &dump.governance;
    eprintln!(
        "exported {} schemas, {} subjects, {} versions, {} configs, {} modes, {} audit entries, \
         {} consumers, {} deprecations, {} approvals, {} findings, {} usage rows, {} samples, \
         {} live marks, {} KEKs, {} DEKs",
        dump.schemas.len(),
        dump.subjects.len(),
        dump.subjects
            .iter()
            .map(|s| s.versions.len())
            .sum::<usize>(),
        dump.configs.len(),
        dump.modes.len(),
        dump.audit.len(),
        g.consumers.len(),
        g.deprecations.len(),
        g.approvals.len(),
        g.findings.len(),
        g.usage_readers.len() + g.usage_fields.len() + g.usage_counts.len() + g.schema_reads.len(),
        dump.samples.len(),
        dump.live_marks.len(),
        dump.keks.len(),
        dump.deks.len()
    );
    Ok(ExitCode::SUCCESS)
}

pub fn run_import(args: ImportArgs) -> Result<ExitCode> {
    let text = if args.dump.as_os_str() == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)?;
        text
    } else {
        std::fs::read_to_string(&args.dump)
            .with_context(|| format!("cannot read '{}'", args.dump.display()))?
    };
    let dump: Dump = serde_json::from_str(&text).context("the dump is not valid export JSON")?;
    validate(&dump)?;
    let counts = runtime()?.block_on(async {
        let stores = open_stores(&args.store).await?;
        import(&stores, &dump).await
    })?;
    let (g, s) = (&counts.governance.governance, &counts.governance.samples);
    eprintln!(
        "imported {} versions ({} already present, {} soft-deleted), {} configs, {} modes, \
         {} audit entries, {} consumers, {} deprecations, {} approvals, {} findings, {} usage rows, \
         {} samples, {} live marks ({} governance rows already present), {} DEK Registry keys",
        counts.versions_written,
        counts.versions_present,
        counts.soft_deleted,
        counts.configs,
        counts.modes,
        counts.audit_entries,
        g.consumers,
        g.deprecations,
        g.approvals,
        g.findings,
        g.usage_rows,
        s.samples,
        s.live_marks,
        g.present + s.present,
        counts.keys
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_store::conformance::schema as avro;

    fn allow(_: &[StoredVersion]) -> Result<(), covenant_store::Rejection> {
        Ok(())
    }

    #[test]
    fn export_times_are_rfc3339() {
        let t = chrono_now();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    }

    #[test]
    fn bad_dumps_are_refused_before_writing() {
        let mut dump = Dump {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            exported_at: None,
            schemas: vec![],
            subjects: vec![DumpSubject {
                name: "s".into(),
                versions: vec![DumpVersion {
                    version: 1,
                    id: 4,
                    deleted: false,
                    created_at: None,
                }],
            }],
            configs: vec![],
            modes: vec![],
            audit: vec![],
            governance: Default::default(),
            samples: vec![],
            live_marks: vec![],
            profiles: vec![],
            keks: vec![],
            deks: vec![],
        };
        let err = validate(&dump).expect_err("dangling id");
        assert!(err.to_string().contains("schema id 4"), "{err}");
        dump.subjects.clear();
        dump.format_version = 1;
        validate(&dump).expect("format 1 still reads");
        dump.format_version = 9;
        let err = validate(&dump).expect_err("newer format");
        assert!(err.to_string().contains("newer than this build"), "{err}");
        dump.format = "other".into();
        assert!(validate(&dump).is_err());
    }

    /// The example in `docs/export-format.md` is a dump this build reads, every section filled.
    #[test]
    fn the_documented_example_reads() {
        let doc = include_str!("../../../docs/export-format.md");
        let example = doc
            .split("```json\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("a json example");
        let dump: Dump = serde_json::from_str(example).expect("the example parses as a dump");
        validate(&dump).expect("the example is valid");
        assert_eq!(dump.format_version, FORMAT_VERSION);
        let g = &dump.governance;
        let sizes = [
            g.consumers.len(),
            g.deprecations.len(),
            g.approvals.len(),
            g.findings.len(),
            g.usage_readers.len(),
            g.usage_fields.len(),
            g.usage_counts.len(),
            g.schema_reads.len(),
            dump.samples.len(),
            dump.live_marks.len(),
            dump.profiles.len(),
            dump.keks.len(),
            dump.deks.len(),
        ];
        assert!(sizes.iter().all(|n| *n > 0), "{sizes:?}");
    }

    #[test]
    fn a_format_1_dump_reads_as_one_without_governance() {
        let text = r#"{"format":"covenant-export","formatVersion":1,"schemas":[],"subjects":[],
            "audit":[]}"#;
        let dump: Dump = serde_json::from_str(text).expect("a format 1 dump parses");
        validate(&dump).expect("and is accepted");
        assert!(dump.governance.is_empty() && dump.samples.is_empty());
        assert!(dump.live_marks.is_empty());
    }

    #[test]
    fn governance_sections_are_checked_before_writing() {
        let text = r#"{"format":"covenant-export","formatVersion":2,"schemas":[],"subjects":[],
            "samples":[{"id":1,"subject":"s","version":1,"encoding":"avro","payload":"***",
            "createdAt":5}]}"#;
        let dump: Dump = serde_json::from_str(text).expect("parses");
        let err = validate(&dump).expect_err("bad payload");
        assert!(err.to_string().contains("not base64"), "{err}");
        let twice = text.replace("\"payload\":\"***\"", "\"payload\":\"AA==\"");
        let mut dump: Dump = serde_json::from_str(&twice).expect("parses");
        validate(&dump).expect("a valid sample");
        dump.samples.push(dump.samples[0].clone());
        let err = validate(&dump).expect_err("same id twice");
        assert!(err.to_string().contains("sample 1 appears twice"), "{err}");
    }

    /// A batch the store refuses as a whole is written one by one: the version the store
    /// refuses (its reference names a version nobody holds) is listed, the others are written.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_version_leaves_the_rest_of_its_batch_written() {
        let dir = tempfile::tempdir().expect("dir");
        let store = SqliteStore::open(dir.path()).expect("open");
        let dump: Dump = serde_json::from_value(serde_json::json!({
            "format": FORMAT, "formatVersion": FORMAT_VERSION,
            "schemas": [
                {"id": 1, "schemaType": "AVRO", "schema": "\"string\"", "contentKey": "k1"},
                {"id": 2, "schemaType": "AVRO", "schema": "\"long\"", "contentKey": "k2",
                 "references": [{"name": "g", "subject": "ghost", "version": 1}]},
                {"id": 3, "schemaType": "AVRO", "schema": "\"int\"", "contentKey": "k3"}
            ],
            "subjects": [
                {"name": "a", "versions": [{"version": 1, "id": 1}]},
                {"name": "b", "versions": [{"version": 1, "id": 2}]},
                {"name": "c", "versions": [{"version": 1, "id": 3}]}
            ],
            "configs": [], "modes": []
        }))
        .expect("dump");
        let counts = apply(&store, &dump, &mut |_| {}).await.expect("apply");
        assert_eq!(counts.versions_written, 2);
        assert_eq!(counts.conflicts.len(), 1, "{:?}", counts.conflicts);
        assert!(
            counts.conflicts[0].starts_with("version 1 of subject 'b' (id 2) was refused"),
            "{:?}",
            counts.conflicts
        );
        for (subject, held) in [("a", 1), ("b", 0), ("c", 1)] {
            let versions = store.subject_versions(subject).await.expect("versions");
            assert_eq!(versions.len(), held, "{subject}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn embedded_round_trip_keeps_ids_versions_deletes_config_and_modes() {
        let a = tempfile::tempdir().expect("dir");
        let b = tempfile::tempdir().expect("dir");
        let src = SqliteStore::open(a.path()).expect("open");
        for text in ["one", "two", "three"] {
            src.register("orders", &avro(text), Placement::default(), &allow, None)
                .await
                .expect("register");
        }
        let alice = covenant_store::AuditContext {
            principal: "alice".into(),
            source: Some("10.0.0.7:5000".into()),
            request_id: Some("r-7".into()),
            detail: None,
        };
        src.register(
            "users",
            &avro("two"),
            Placement::default(),
            &allow,
            Some(&alice),
        )
        .await
        .expect("register");
        src.soft_delete("orders", &[2]).await.expect("delete");
        src.hard_delete("orders", &[1]).await.expect("delete");
        src.set_config(
            Scope::Global,
            &ConfigRecord {
                compatibility: Some("FULL".into()),
                extra: Default::default(),
            },
            None,
        )
        .await
        .expect("config");
        src.set_mode(Scope::Subject("users"), "READONLY", Some(&alice))
            .await
            .expect("mode");
        let dump = export(&src).await.expect("export");
        let trail: Vec<(&str, &str)> = dump
            .audit
            .iter()
            .map(|e| (e.operation.as_str(), e.principal.as_str()))
            .collect();
        assert_eq!(trail, [("register", "alice"), ("mode.set", "alice")]);
        let dst = open_stores(&StoreArgs {
            store: None,
            data_dir: b.path().to_path_buf(),
        })
        .await
        .expect("open");
        let counts = import(&dst, &dump).await.expect("import");
        assert_eq!(counts.versions_written, 3);
        assert_eq!(counts.soft_deleted, 1);
        assert_eq!(counts.audit_entries, 2);
        let again = export_all(&dst).await.expect("export");
        assert_eq!(
            Dump {
                exported_at: None,
                subjects: strip_times(&again.subjects),
                ..again.clone()
            },
            Dump {
                exported_at: None,
                subjects: strip_times(&dump.subjects),
                ..dump.clone()
            }
        );
        // A second import finds everything in place.
        let counts = import(&dst, &dump).await.expect("re-import");
        assert_eq!((counts.versions_written, counts.versions_present), (0, 3));
        assert_eq!(counts.audit_entries, 0, "the trail is not repeated");
    }

    fn strip_times(subjects: &[DumpSubject]) -> Vec<DumpSubject> {
        subjects
            .iter()
            .map(|s| DumpSubject {
                name: s.name.clone(),
                versions: s
                    .versions
                    .iter()
                    .map(|v| DumpVersion {
                        created_at: None,
                        ..v.clone()
                    })
                    .collect(),
            })
            .collect()
    }
}
