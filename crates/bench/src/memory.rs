//! Part 6: what the server's memory grows with. Resident memory (`VmRSS`) of a server on the
//! embedded store, measured before and after filling each in-memory cache with the same
//! schemas, and before and after holding many idle keep-alive connections; each difference is
//! divided by the count. The allocator keeps some freed memory, so the figures are upper
//! bounds of what each entry costs, not exact sizes.

use crate::http::event_schema;
use crate::server::{Backend, Limits, Server, V1, first_start, load, require_clean, restart};
use crate::table::Row;
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PART: &str = "6 memory, embedded SQLite";

#[derive(Debug, Clone, Copy)]
pub struct MemorySizes {
    /// Schemas registered, then read back into the caches (each cache holds 10,000 by default).
    pub schemas: u64,
    /// Fields per schema: a typical event value.
    pub fields: usize,
    /// Held at once; the server serves 512 by default.
    pub connections: usize,
}

impl MemorySizes {
    pub const FULL: MemorySizes = MemorySizes {
        schemas: 10_000,
        fields: 20,
        connections: 400,
    };
    pub const SMOKE: MemorySizes = MemorySizes {
        schemas: 100,
        fields: 5,
        connections: 20,
    };
}

/// The event every row registers: [`event_schema`]'s fields in each format.
#[derive(Debug, Clone, Copy)]
enum EventFormat {
    Avro,
    Json,
    Protobuf,
}

impl EventFormat {
    fn name(self) -> &'static str {
        match self {
            EventFormat::Avro => "Avro",
            EventFormat::Json => "JSON Schema",
            EventFormat::Protobuf => "Protobuf",
        }
    }

    fn text(self, i: u64, fields: usize) -> String {
        match self {
            EventFormat::Avro => event_schema(&format!("Mem{i}"), fields),
            EventFormat::Json => {
                let mut properties = serde_json::Map::new();
                properties.insert("id".into(), json!({"type": "string"}));
                properties.insert("at".into(), json!({"type": "integer"}));
                for f in 0..fields {
                    properties.insert(format!("f{f}"), json!({"type": ["null", "string"]}));
                }
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "title": format!("Mem{i}"),
                    "type": "object", "properties": properties})
                .to_string()
            }
            EventFormat::Protobuf => {
                let mut text = format!(
                    "syntax = \"proto3\";\npackage com.example.events;\n\nmessage Mem{i} {{\n  string id = 1;\n  int64 at = 2;\n"
                );
                for f in 0..fields {
                    text.push_str(&format!("  optional string f{f} = {};\n", f + 3));
                }
                text.push_str("}\n");
                text
            }
        }
    }

    /// A registration or check body; Avro's names no type, as most serializers send it.
    fn body(self, i: u64, fields: usize) -> String {
        let schema = self.text(i, fields);
        match self {
            EventFormat::Avro => json!({ "schema": schema }),
            EventFormat::Json => json!({"schemaType": "JSON", "schema": schema}),
            EventFormat::Protobuf => json!({"schemaType": "PROTOBUF", "schema": schema}),
        }
        .to_string()
    }
}

/// Checks a schema against each of `n` subjects' latest version, which parses that version
/// into the parsed-schema cache.
async fn check_each(
    client: &reqwest::Client,
    server: &Server,
    n: u64,
    format: EventFormat,
    fields: usize,
) -> Result<()> {
    let base = server.base.clone();
    drive(
        client,
        "checking",
        n,
        Arc::new(move |c, i| {
            c.post(format!(
                "{base}/compatibility/subjects/mem-{i}/versions/latest"
            ))
            .header("content-type", V1)
            .body(format.body(i, fields))
        }),
    )
    .await
}

fn rss_kib(server: &Server) -> Result<u64> {
    server
        .memory_kib()
        .map(|(rss, _)| rss)
        .context("reading the server's memory from /proc")
}

/// Drives `n` requests built by `make` from 8 connections; any non-2xx fails the part.
async fn drive(
    client: &reqwest::Client,
    what: &str,
    n: u64,
    make: crate::server::MakeRequest,
) -> Result<()> {
    let limits = Limits {
        concurrency: 8,
        max_requests: n,
        max_duration: Duration::from_secs(600),
    };
    let result = load(client, limits, make).await;
    require_clean(what, &result)?;
    if result.requests < n {
        bail!(
            "{what}: {} of {n} requests in the time allowed",
            result.requests
        );
    }
    Ok(())
}

pub async fn run(
    covenant: &Path,
    sizes: MemorySizes,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let backend = Backend::Embedded(scratch.join("memory-data"));
    let client = crate::server::client(8)?;
    let start = || {
        Server::start(
            covenant,
            &backend,
            scratch,
            &client,
            Duration::from_secs(60),
        )
    };
    let Some((server, _)) = first_start(start().await, rows, PART, "all measurements")? else {
        return Ok(());
    };
    // On the fresh server: after the caches are filled, how much of a connection's memory the
    // allocator finds among pages that earlier requests freed depends on those requests.
    let idle = hold_connections(&server, sizes.connections).await?;
    let (n, fields) = (sizes.schemas, sizes.fields);
    let mut server = loaded_and_restarted(
        &client,
        server,
        start,
        n,
        Arc::new(move |i| EventFormat::Avro.body(i, fields)),
    )
    .await?;
    let base = server.base.clone();
    let empty = rss_kib(&server)?;

    let ids_base = base.clone();
    drive(
        &client,
        "reading by id",
        n,
        Arc::new(move |c, i| c.get(format!("{ids_base}/schemas/ids/{}", i + 1))),
    )
    .await?;
    let with_records = rss_kib(&server)?;

    // Twice each: the second lookup is answered from the cache, and the answer then keeps
    // the body it sent.
    let lookup_base = base.clone();
    drive(
        &client,
        "looking up",
        2 * n,
        Arc::new(move |c, i| {
            let i = i % n;
            c.post(format!("{lookup_base}/subjects/mem-{i}"))
                .header("content-type", V1)
                .body(EventFormat::Avro.body(i, fields))
        }),
    )
    .await?;
    let with_answers = rss_kib(&server)?;

    check_each(&client, &server, n, EventFormat::Avro, fields).await?;
    let with_parsed = rss_kib(&server)?;

    let per = |after: u64, before: u64| {
        let bytes = after.saturating_sub(before) as f64 * 1024.0 / n as f64;
        format!("{:.1} KiB per schema", bytes / 1024.0)
    };
    let text_len = EventFormat::Avro.text(0, fields).len();
    rows.push(
        Row::new(
            PART,
            format!("schema records cache, {n} schemas of {fields} fields"),
        )
        .covenant(per(with_records, empty))
        .notes(format!(
            "GET /schemas/ids/{{id}} of each; the stored text is {text_len} bytes; RSS {} → {} KiB",
            empty, with_records
        )),
    );
    rows.push(
        Row::new(PART, "lookup answers cache, same schemas")
            .covenant(per(with_answers, with_records))
            .notes(format!(
                "POST /subjects/{{s}} of each, twice (an answer shares the record and keeps the body of its hit); RSS → {with_answers} KiB"
            )),
    );
    rows.push(
        Row::new(PART, "parsed schemas cache, same schemas")
            .covenant(per(with_parsed, with_answers))
            .notes(format!(
                "POST /compatibility/subjects/{{s}}/versions/latest of each; RSS → {with_parsed} KiB"
            )),
    );
    rows.push(
        Row::new(
            PART,
            format!("{} idle keep-alive connections", sizes.connections),
        )
        .covenant(format!("{:.1} KiB per connection", idle))
        .notes("on a fresh server, each answered one GET /health/live and stays open"),
    );
    server.stop();
    for format in [EventFormat::Json, EventFormat::Protobuf] {
        let row = parsed_cache_row(covenant, sizes, scratch, &client, format).await?;
        rows.push(row);
    }
    Ok(())
}

/// The parsed-schema cache's growth for `format`, on a store of its own: `n` subjects
/// registered, a restart to empty the caches, then a check against each subject's latest
/// version, which parses that version into the cache.
async fn parsed_cache_row(
    covenant: &Path,
    sizes: MemorySizes,
    scratch: &Path,
    client: &reqwest::Client,
    format: EventFormat,
) -> Result<Row> {
    let backend = Backend::Embedded(scratch.join(format!("memory-data-{format:?}")));
    let start = || Server::start(covenant, &backend, scratch, client, Duration::from_secs(60));
    let (n, fields) = (sizes.schemas, sizes.fields);
    let (server, _) = restart(start().await, "starting a server")?;
    let mut server = loaded_and_restarted(
        client,
        server,
        start,
        n,
        Arc::new(move |i| format.body(i, fields)),
    )
    .await?;
    let before = rss_kib(&server)?;
    check_each(client, &server, n, format, fields).await?;
    let after = rss_kib(&server)?;
    server.stop();
    let per = after.saturating_sub(before) as f64 / n as f64;
    Ok(Row::new(
        PART,
        format!("parsed schemas cache, {} of the same fields", format.name()),
    )
    .covenant(format!("{per:.1} KiB per schema"))
    .notes(format!(
        "a store of its own, {n} subjects; POST /compatibility/subjects/{{s}}/versions/latest of each; the stored text is {} bytes; RSS {before} → {after} KiB",
        format.text(0, fields).len()
    )))
}

/// Registers `n` subjects with the request bodies `body` makes, then restarts the server on
/// the same store, so that its caches are empty, and warms the store's pages with reads that
/// fill no cache (listing versions): the differences measured next are the caches' own.
async fn loaded_and_restarted<F, Fut>(
    client: &reqwest::Client,
    mut server: Server,
    start: F,
    n: u64,
    body: Arc<dyn Fn(u64) -> String + Send + Sync>,
) -> Result<Server>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<(Server, Duration), crate::server::StartError>>,
{
    let base = server.base.clone();
    drive(
        client,
        "registering",
        n,
        Arc::new(move |c, i| {
            c.post(format!("{base}/subjects/mem-{i}/versions"))
                .header("content-type", V1)
                .body(body(i))
        }),
    )
    .await?;
    server.stop();
    let (server, _) = restart(start().await, "restarting")?;
    let list_base = server.base.clone();
    drive(
        client,
        "listing versions",
        n,
        Arc::new(move |c, i| c.get(format!("{list_base}/subjects/mem-{i}/versions"))),
    )
    .await?;
    Ok(server)
}

/// Opens `count` connections, each sending one request and keeping the connection open, and
/// returns the growth of the server's memory per connection in KiB.
async fn hold_connections(server: &Server, count: usize) -> Result<f64> {
    let addr = server
        .base
        .strip_prefix("http://")
        .context("server address")?
        .to_string();
    let before = rss_kib(server)?;
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let mut stream = tokio::net::TcpStream::connect(&addr)
            .await
            .context("opening a connection")?;
        stream
            .write_all(b"GET /health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .await?;
        let mut buf = [0u8; 512];
        let read = stream.read(&mut buf).await?;
        if !buf[..read].starts_with(b"HTTP/1.1 200") {
            bail!("a held connection was not answered 200");
        }
        held.push(stream);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = rss_kib(server)?;
    drop(held);
    Ok(after.saturating_sub(before) as f64 / count as f64)
}
