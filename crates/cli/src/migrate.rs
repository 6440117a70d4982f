//! `covenant migrate`: move in from a running Confluent-compatible registry (Confluent, Karapace,
//! Apicurio's compatibility API, another Covenant) or from a dump of the `_schemas` topic,
//! keeping every id and version number.
//!
//! Every source is first read into the [`Dump`] that `covenant export` writes; the dump is then
//! written with the references-first order of [`reconcile::write_order`] (into a store through
//! [`transfer::apply`], into a running registry over REST in IMPORT mode) and the result is
//! checked with [`reconcile::verify`]. So migrate, import and export share one notion of order,
//! identity and verification.

mod into_registry;
mod records;
mod remote;
mod topic_dump;

use crate::output::{out, outln};
use crate::reconcile::{self, Difference};
use crate::transfer::{self, Dump, StoreArgs};
use anyhow::{Context, Result};
use records::empty_dump;
use remote::{Remote, read_registry};
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
    /// Only the subjects of one Confluent context (`.ctx`), with their ids, and the versions
    /// they refer to.
    #[arg(long, value_name = "CONTEXT", conflicts_with = "subjects")]
    context: Option<String>,
    /// Read both sides and report what would be written; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// How many requests to a registry are in flight at once (subjects read, versions written).
    // 48, not the 4 it was at first nor the 16 after: per-request latency, not either
    // server's capacity, bounded the migration, and a destination's group commit makes one
    // sync durable for more writes the more arrive together. A 20,000-version run into a
    // Covenant server took 5.4-5.6 s at 48 against 7.0-7.6 s at 16; reading the source was
    // no faster nor slower (benches/RESULTS.md, part 5).
    #[arg(long, value_name = "N", default_value_t = 48,
          value_parser = clap::value_parser!(u16).range(1..=64))]
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

/// The subject prefix of a context: `:.ctx:`.
fn context_prefix(context: &str) -> Result<String> {
    match covenant_store::context::normalize_context(context) {
        Some(c) if c == covenant_store::context::DEFAULT_CONTEXT => anyhow::bail!(
            "--context . is every unqualified subject; leave --context out, or use --subjects"
        ),
        Some(c) => Ok(covenant_store::context::context_key(&c)),
        None => anyhow::bail!("'{context}' is not a context name"),
    }
}

/// Where the migration writes.
enum Destination {
    Store(Arc<dyn covenant_store::Store>),
    Registry(Arc<Remote>),
}

async fn migrate(mut args: MigrateArgs) -> Result<ExitCode> {
    if let Some(context) = &args.context {
        args.subjects = context_prefix(context)?;
    }
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
        Destination::Registry(remote) => into_registry::write(remote, &source, parallel).await?,
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
    let (auth, token) = (args.basic_auth.clone(), args.bearer.clone());
    let remote = Remote::new(url, auth, token, args.ca_cert.clone())?;
    let dump = read_registry(Arc::new(remote), &args.subjects, parallel, true).await?;
    Ok(restrict(dump, &args.subjects))
}

async fn open_destination(args: &MigrateArgs) -> Result<Destination> {
    if let Some(url) = &args.to {
        let (auth, token) = (args.to_basic_auth.clone(), args.to_bearer.clone());
        let remote = Remote::new(url, auth, token, args.ca_cert.clone())?;
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
