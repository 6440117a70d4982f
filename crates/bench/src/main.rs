//! `covenant-bench`: Covenant side by side with its peers, in one run, on the same inputs,
//! printed as one markdown table. `benches/run.sh` installs the peers and calls this; see
//! `benches/README.md` for what each line measures.
//!
//! Exit code 0 when every part ran (a peer that could not be installed is n/a, not a failure),
//! 1 when a part broke.

mod generate;
mod http;
mod inproc;
mod memory;
mod migrate;
mod process;
mod profile;
mod scale;
mod scale_pg;
mod server;
mod table;

use anyhow::{Context, Result};
use clap::Parser;
use covenant_engine::Level;
use covenant_schema::SchemaType;
use std::path::PathBuf;
use std::process::ExitCode;
use table::Row;

/// The same allocator as the `covenant` binary, so in-process rows measure what it runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "covenant-bench",
    about = "Covenant side by side with its peers"
)]
struct Args {
    /// Tiny sizes and short runs: every part runs in seconds, to prove it still works.
    #[arg(long)]
    smoke: bool,
    /// The `covenant` binary to benchmark (whole-process checks and the server).
    #[arg(long)]
    covenant: PathBuf,
    /// The peer corpus folder (`../shared/peer-corpus`); its rows are n/a when absent.
    #[arg(long)]
    corpus: PathBuf,
    /// Python interpreter that has Apache's `avro` package.
    #[arg(long)]
    python: Option<PathBuf>,
    /// Why there is no Python peer, when there is none.
    #[arg(long)]
    python_missing: Option<String>,
    /// The peer script driving `avro.compatibility` like `covenant check`.
    #[arg(long, default_value = "benches/peers/avro_check.py")]
    peer_script: PathBuf,
    /// The `buf` binary.
    #[arg(long)]
    buf: Option<PathBuf>,
    /// Why there is no buf, when there is none.
    #[arg(long)]
    buf_missing: Option<String>,
    /// PostgreSQL database for the second HTTP run (an empty database).
    #[arg(long, env = "COVENANT_TEST_POSTGRES")]
    postgres: Option<String>,
    /// The peer script counting keys with json.loads and a Counter (the seed's approach).
    #[arg(long, default_value = "benches/peers/profile_counter.py")]
    profile_counter_script: PathBuf,
    /// The peer script profiling with DuckDB's SUMMARIZE.
    #[arg(long, default_value = "benches/peers/profile_duckdb.py")]
    profile_duckdb_script: PathBuf,
    /// Sizes in MB of the two generated files the profile part reads.
    #[arg(long, value_delimiter = ',')]
    profile_mb: Option<Vec<u64>>,
    /// Parts to run: any of check, http, scale, scale-pg, profile, migrate, memory.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "check,http,scale,scale-pg,profile,migrate,memory"
    )]
    parts: Vec<String>,
    /// Repetitions of each timed measurement (median and spread are reported).
    #[arg(long)]
    runs: Option<usize>,
    /// Corpus cases run as one process each (part 1b).
    #[arg(long)]
    process_cases: Option<usize>,
    /// Subjects for the scale part.
    #[arg(long)]
    scale_subjects: Option<u64>,
    /// Versions per subject for the scale part.
    #[arg(long)]
    scale_versions: Option<u64>,
    /// Longest time the scale part spends loading, in seconds.
    #[arg(long)]
    scale_max_seconds: Option<u64>,
    /// Schemas the migrate part moves.
    #[arg(long)]
    migrate_schemas: Option<u64>,
    /// Seconds each HTTP route is driven.
    #[arg(long)]
    http_seconds: Option<f64>,
    /// HTTP routes to drive (default: all): any of live, id, lookup, idempotent, new.
    #[arg(long)]
    http_routes: Option<String>,
    /// New subjects the `new` route registers in all (default 5,000; more for a longer,
    /// steadier measurement or a profile of the write path).
    #[arg(long)]
    new_registrations: Option<u64>,
    /// Also write the table to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("covenant-bench: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Runs one part, turning an error into a FAILED row so the other parts still report.
fn part(
    rows: &mut Vec<Row>,
    failed: &mut bool,
    name: &str,
    f: impl FnOnce(&mut Vec<Row>) -> Result<()>,
) {
    eprintln!("covenant-bench: {name} ...");
    let before = rows.len();
    if let Err(e) = f(rows) {
        *failed = true;
        eprintln!("covenant-bench: {name} FAILED: {e:#}");
        rows.truncate(before);
        rows.push(Row::new(name, "FAILED").notes(format!("{e:#}")));
    }
}

fn run(args: Args) -> Result<bool> {
    let smoke = args.smoke;
    let runs = args.runs.unwrap_or(if smoke { 2 } else { 5 });
    let scratch = tempfile::Builder::new()
        .prefix("covenant-bench-")
        .tempdir()
        .context("creating a scratch folder")?;
    let wants = |p: &str| args.parts.iter().any(|x| x == p);
    let covenant = std::fs::canonicalize(&args.covenant)
        .with_context(|| format!("covenant binary {}", args.covenant.display()))?;
    let corpus = args.corpus.is_dir().then(|| args.corpus.clone());
    if corpus.is_none() {
        eprintln!(
            "covenant-bench: peer corpus not found at {}; corpus rows are n/a",
            args.corpus.display()
        );
    }
    let peers = process::Peers {
        covenant: covenant.clone(),
        python: match &args.python {
            Some(p) => process::probe_python(p, &args.peer_script),
            None => Err(args
                .python_missing
                .clone()
                .unwrap_or_else(|| "no --python given".into())),
        },
        buf: match &args.buf {
            Some(b) => process::probe_buf(b),
            None => Err(args
                .buf_missing
                .clone()
                .unwrap_or_else(|| "no --buf given".into())),
        },
    };

    let mut rows = Vec::new();
    let mut failed = false;
    let no_corpus = |rows: &mut Vec<Row>, part: &str| {
        rows.push(
            Row::new(part, "peer corpus")
                .covenant("n/a")
                .notes("corpus folder absent"),
        );
    };

    if wants("check") {
        let sizes = if smoke {
            generate::Sizes::SMOKE
        } else {
            generate::Sizes::FULL
        };
        let gen_dir = scratch.path().join("generated");
        let g = generate::generate(&gen_dir, sizes)?;
        part(&mut rows, &mut failed, "1a check, in process", |rows| {
            match &corpus {
                Some(c) => {
                    inproc::avro_corpus(c, runs, rows)?;
                    inproc::other_corpus(c, "jsonschema.jsonl", SchemaType::Json, runs, rows)?;
                    inproc::other_corpus(c, "protobuf.jsonl", SchemaType::Protobuf, runs, rows)?;
                }
                None => no_corpus(rows, "1a check, in process"),
            }
            inproc::avro_generated(&g, runs, rows)?;
            inproc::other_generated(
                &g.json,
                SchemaType::Json,
                Level::BackwardTransitive,
                format!(
                    "JSON Schema {}-property object, BACKWARD_TRANSITIVE vs {} versions",
                    sizes.json_properties,
                    sizes.json_versions - 1
                ),
                runs,
                rows,
            )?;
            let proto_history = generate::History {
                newest: g.proto.newest.clone(),
                history_dir: g.proto.history_dir.clone(),
                versions: g.proto.versions.clone(),
            };
            inproc::other_generated(
                &proto_history,
                SchemaType::Protobuf,
                Level::FullTransitive,
                format!(
                    "Protobuf {} messages × {} fields, FULL_TRANSITIVE vs {} versions",
                    sizes.proto_messages,
                    sizes.proto_fields,
                    sizes.proto_versions - 1
                ),
                runs,
                rows,
            )
        });
        let process_runs = if smoke { 1 } else { runs.min(3) };
        part(&mut rows, &mut failed, "1b check, whole process", |rows| {
            process::avro_generated(&g, &peers, process_runs, rows)?;
            match &corpus {
                Some(c) => process::avro_corpus(
                    c,
                    &peers,
                    args.process_cases.unwrap_or(if smoke { 5 } else { 100 }),
                    process_runs,
                    scratch.path(),
                    rows,
                )?,
                None => no_corpus(rows, "1b check, whole process"),
            }
            process::proto_generated(&g, &peers, process_runs, rows)
        });
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;

    if wants("http") {
        let mut sizes = if smoke {
            http::HttpSizes::SMOKE
        } else {
            http::HttpSizes::FULL
        };
        if let Some(s) = args.http_seconds {
            sizes.duration = std::time::Duration::from_secs_f64(s);
        }
        if let Some(list) = &args.http_routes {
            sizes.routes = http::route_bits(list)?;
        }
        if let Some(n) = args.new_registrations {
            sizes.new_registrations = n;
        }
        let embedded = server::Backend::Embedded(scratch.path().join("http-data"));
        part(&mut rows, &mut failed, "2 HTTP, embedded SQLite", |rows| {
            runtime.block_on(http::run(&covenant, embedded, sizes, scratch.path(), rows))
        });
        match &args.postgres {
            Some(url) => {
                let backend = server::Backend::Postgres(url.clone());
                part(&mut rows, &mut failed, "2 HTTP, PostgreSQL", |rows| {
                    runtime.block_on(http::run(&covenant, backend, sizes, scratch.path(), rows))
                });
            }
            None => rows.push(
                Row::new("2 HTTP, PostgreSQL", "all routes")
                    .covenant("n/a")
                    .notes("no PostgreSQL given (run through scripts/with-postgres.sh)"),
            ),
        }
    }

    let scale_sizes = {
        let mut sizes = if smoke {
            scale::ScaleSizes::SMOKE
        } else {
            scale::ScaleSizes::FULL
        };
        if let Some(n) = args.scale_subjects {
            sizes.subjects = n;
        }
        if let Some(n) = args.scale_versions {
            sizes.versions = n.max(1);
        }
        if let Some(n) = args.scale_max_seconds {
            sizes.max_load = std::time::Duration::from_secs(n);
        }
        sizes
    };
    if wants("scale") {
        let sizes = scale_sizes;
        part(&mut rows, &mut failed, "3 scale, embedded SQLite", |rows| {
            runtime.block_on(scale::run(&covenant, sizes, scratch.path(), rows))
        });
    }

    if wants("scale-pg") {
        let sizes = scale_sizes;
        match &args.postgres {
            Some(url) => part(&mut rows, &mut failed, "3 scale, PostgreSQL", |rows| {
                runtime.block_on(scale_pg::run(&covenant, url, sizes, scratch.path(), rows))
            }),
            None => rows.push(
                Row::new("3 scale, PostgreSQL", "all measurements")
                    .covenant("n/a")
                    .notes("no PostgreSQL given (run through scripts/with-postgres.sh)"),
            ),
        }
    }

    if wants("memory") {
        let sizes = if smoke {
            memory::MemorySizes::SMOKE
        } else {
            memory::MemorySizes::FULL
        };
        part(
            &mut rows,
            &mut failed,
            "6 memory, embedded SQLite",
            |rows| runtime.block_on(memory::run(&covenant, sizes, scratch.path(), rows)),
        );
    }

    if wants("migrate") {
        let mut sizes = if smoke {
            migrate::MigrateSizes::SMOKE
        } else {
            migrate::MigrateSizes::FULL
        };
        if let Some(n) = args.migrate_schemas {
            sizes.schemas = n.max(1);
        }
        part(&mut rows, &mut failed, "5 migrate", |rows| {
            runtime.block_on(migrate::run(&covenant, sizes, scratch.path(), rows))
        });
    }

    if wants("profile") {
        let mut sizes = if smoke {
            profile::ProfileSizes::SMOKE
        } else {
            profile::ProfileSizes::FULL
        };
        if let Some([small, large]) = args.profile_mb.as_deref() {
            sizes.megabytes = [*small, *large];
        }
        let python = peers.python.as_ref().ok().map(|(python, _)| python.clone());
        let python_peers = profile::PythonPeers {
            python,
            counter_script: args.profile_counter_script.clone(),
            duckdb_script: args.profile_duckdb_script.clone(),
        };
        part(&mut rows, &mut failed, "4 profile data", |rows| {
            profile::run(&covenant, &python_peers, sizes, scratch.path(), rows)
        });
    }

    if failed {
        // The servers' logs and generated inputs stay for a look at what broke.
        eprintln!(
            "covenant-bench: a part failed; logs and inputs kept in {}",
            scratch.keep().display()
        );
    }
    let rendered = table::render(&rows);
    print!("{rendered}");
    if let Some(out) = &args.out {
        std::fs::write(out, &rendered).with_context(|| format!("writing {}", out.display()))?;
    }
    Ok(!failed)
}
