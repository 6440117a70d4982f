//! Part 3b: a store of many schemas on PostgreSQL, served by one node: memory, start-up,
//! lookups and the subject list.
//!
//! Loading through the REST API would take hours (new registrations run at about 1,700 a
//! second on a 2-core machine: ten million in 1.6 hours), and part 3 already times that path.
//! So the store is filled with `COPY`, with exactly the rows registrations write: the schema
//! text as the clients of part 3 send it, the content key and guid as the registry computes
//! them (`covenant_registry::content_key`, `covenant_store::guid::guid_of`). The lookups then
//! prove the rows right: every lookup by content must find its version.

use crate::scale::{ScaleSizes, lookup_row, lookups, scale_schema};
use crate::server::{Backend, Server, first_start, restart};
use crate::table::{Row, human};
use anyhow::{Context, Result, bail};
use futures_util::SinkExt;
use std::path::Path;
use std::time::{Duration, Instant};

const PART: &str = "3 scale, PostgreSQL";

/// Rows sent to `COPY` in one message.
const COPY_CHUNK: usize = 4 << 20;

/// How long a start on the filled store may take before the part fails.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Subject pages timed at the start, middle and end of the list.
const PAGE: u64 = 1000;

/// Escapes `text` for `COPY`'s text format.
fn copy_text(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// Fills `table` through `COPY` with the rows `row` writes for `0..n`, in chunks.
async fn copy_rows(
    client: &tokio_postgres::Client,
    statement: &str,
    n: u64,
    mut row: impl FnMut(u64, &mut String),
) -> Result<()> {
    let sink = client
        .copy_in(statement)
        .await
        .context(statement.to_string())?;
    let mut sink = std::pin::pin!(sink);
    let mut chunk = String::with_capacity(COPY_CHUNK + 4096);
    for g in 0..n {
        row(g, &mut chunk);
        if chunk.len() >= COPY_CHUNK {
            sink.send(bytes_of(&mut chunk)).await.context("COPY")?;
        }
    }
    if !chunk.is_empty() {
        sink.send(bytes_of(&mut chunk)).await.context("COPY")?;
    }
    sink.as_mut().finish().await.context("finishing COPY")?;
    Ok(())
}

fn bytes_of(chunk: &mut String) -> bytes::Bytes {
    bytes::Bytes::from(std::mem::take(chunk).into_bytes())
}

/// Creates the tables (by opening the store) and copies `subjects × versions` schemas in, one
/// per version, ids from 1; returns how long it took.
async fn fill(url: &str, sizes: ScaleSizes) -> Result<Duration> {
    let started = Instant::now();
    drop(
        covenant_store::PostgresStore::connect(url)
            .await
            .map_err(|e| anyhow::anyhow!("creating the tables: {e}"))?,
    );
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("connecting to PostgreSQL")?;
    let driver = tokio::spawn(connection);
    let n = sizes.subjects * sizes.versions;
    let versions = sizes.versions.max(1);
    copy_rows(
        &client,
        "COPY schemas(id, schema_type, schema, refs, content_key, guid) FROM STDIN",
        n,
        |g, out| {
            let text = scale_schema(g / versions, g % versions);
            let key = covenant_registry::content_key("AVRO", &text, &[], &None, &None);
            let guid = covenant_store::guid::guid_of(&text, &[], None, None);
            out.push_str(&format!("{}\tAVRO\t", g + 1));
            copy_text(out, &text);
            out.push_str(&format!("\t[]\t{key}\t{guid}\n"));
        },
    )
    .await?;
    let now = 1_765_000_000_000_i64;
    copy_rows(
        &client,
        "COPY subject_versions(subject, version, schema_id, deleted, created_at, updated_at) \
         FROM STDIN",
        n,
        |g, out| {
            let (s, v) = (g / versions, g % versions + 1);
            out.push_str(&format!("scale-{s}\t{v}\t{}\tf\t{now}\t{now}\n", g + 1));
        },
    )
    .await?;
    client
        .batch_execute(&format!(
            "SELECT setval('schema_ids', {}); ANALYZE",
            n.max(1)
        ))
        .await
        .context("moving the id sequence")?;
    drop(client);
    let _ = driver.await;
    Ok(started.elapsed())
}

/// Runs `statement` on the database of `url`.
async fn admin(url: &str, statement: &str) -> Result<()> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .context("connecting to PostgreSQL")?;
    let driver = tokio::spawn(connection);
    client
        .batch_execute(statement)
        .await
        .context(statement.to_string())?;
    drop(client);
    let _ = driver.await;
    Ok(())
}

/// `url` with its database named `name` (the part after the last `/`, before any `?`).
fn with_database(url: &str, name: &str) -> Result<String> {
    let (base, rest) = url
        .rsplit_once('/')
        .context("the PostgreSQL URL names no database")?;
    let query = rest.split_once('?').map(|(_, q)| format!("?{q}"));
    Ok(format!("{base}/{name}{}", query.unwrap_or_default()))
}

/// Part 3b on a database of its own, created next to the one `url` names and dropped after.
pub async fn run(
    covenant: &Path,
    url: &str,
    sizes: ScaleSizes,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let name = format!("covenant_scale_{}", std::process::id());
    admin(url, &format!("CREATE DATABASE {name}")).await?;
    let own = with_database(url, &name)?;
    let measured = measure(covenant, &own, sizes, scratch, rows).await;
    admin(url, &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await?;
    measured
}

async fn measure(
    covenant: &Path,
    url: &str,
    sizes: ScaleSizes,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let fill_time = fill(url, sizes).await?;
    let n = sizes.subjects * sizes.versions;
    let backend = Backend::Postgres(url.to_string());
    let client = crate::server::client(sizes.concurrency)?;
    let start = || Server::start(covenant, &backend, scratch, &client, START_TIMEOUT);
    let Some((server, ready_after)) = first_start(start().await, rows, PART, "all measurements")?
    else {
        return Ok(());
    };
    let memory_started = server.memory_kib();
    let base = server.base.clone();

    // Pages of the subject list at its start, middle and end.
    let mut pages = Vec::new();
    let mut offsets = vec![0, sizes.subjects / 2, sizes.subjects.saturating_sub(PAGE)];
    offsets.sort_unstable();
    offsets.dedup();
    for offset in offsets {
        let at = Instant::now();
        let r = client
            .get(format!("{base}/subjects?offset={offset}&limit={PAGE}"))
            .send()
            .await
            .context("GET /subjects page")?;
        let status = r.status();
        let names: Vec<String> = r.json().await.context("GET /subjects page answer")?;
        if !status.is_success() || names.len() as u64 != PAGE.min(sizes.subjects - offset) {
            bail!(
                "GET /subjects?offset={offset}: HTTP {status}, {} names",
                names.len()
            );
        }
        pages.push((offset, at.elapsed()));
    }
    let memory_paged = server.memory_kib();

    let lookups = lookups(&client, &base, sizes, sizes.subjects).await?;
    let memory_after = server.memory_kib();
    drop(server);

    // Start-up again, now that the database has everything in its cache.
    let (server, ready_again) = restart(start().await, "restarting on the PostgreSQL store")?;
    drop(server);

    let mib = |m: Option<(u64, u64)>| match m {
        Some((rss, peak)) => format!(
            "RSS {:.0} MiB (peak {:.0} MiB)",
            rss as f64 / 1024.0,
            peak as f64 / 1024.0
        ),
        None => "n/a".to_string(),
    };
    rows.push(
        Row::new(
            PART,
            format!(
                "a store of {n} schemas ({} subjects × {} versions), filled by COPY",
                sizes.subjects, sizes.versions
            ),
        )
        .covenant(human(fill_time))
        .notes("the rows registrations write, content keys and guids as the registry computes them (the lookups below find every one)"),
    );
    rows.push(
        Row::new(PART, "start-up on the filled store")
            .covenant(format!("{} to /health/ready", human(ready_after)))
            .notes(format!(
                "{} idle; {} on a second start",
                mib(memory_started),
                human(ready_again)
            )),
    );
    for (offset, took) in &pages {
        rows.push(
            Row::new(PART, format!("GET /subjects?offset={offset}&limit={PAGE}"))
                .covenant(human(*took))
                .notes(format!("{} after the three pages", mib(memory_paged))),
        );
    }
    rows.extend(lookup_row(PART, sizes, &lookups, mib(memory_after)));
    Ok(())
}
