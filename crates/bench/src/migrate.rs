//! Part 5: moving a registry. A source server holding many schemas (loaded with `covenant
//! import` from a generated dump), `covenant migrate --from SOURCE --to DESTINATION` into a
//! second running server, and the rate of plain `GET /schemas/ids/{id}` on the source beside it:
//! every schema a migration moves is at least one such read, so that rate is its ceiling.

use crate::server::{Backend, Limits, Server, StartError, load, require_clean};
use crate::table::{Row, human};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

const PART: &str = "5 migrate";

#[derive(Debug, Clone, Copy)]
pub struct MigrateSizes {
    pub schemas: u64,
    pub read_seconds: f64,
}

impl MigrateSizes {
    pub const FULL: MigrateSizes = MigrateSizes {
        schemas: 100_000,
        read_seconds: 10.0,
    };
    pub const SMOKE: MigrateSizes = MigrateSizes {
        schemas: 200,
        read_seconds: 1.0,
    };
}

/// A dump of `n` subjects with one small Avro record each, ids 1..=n.
fn dump(n: u64) -> Value {
    let schemas: Vec<Value> = (1..=n)
        .map(|i| {
            let schema = json!({"type": "record", "name": format!("M{i}"),
                "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string"}]})
            .to_string();
            json!({"id": i, "schemaType": "AVRO", "schema": schema, "contentKey": format!("m{i}")})
        })
        .collect();
    let subjects: Vec<Value> = (1..=n)
        .map(|i| json!({"name": format!("m{i:07}-value"), "versions": [{"version": 1, "id": i}]}))
        .collect();
    json!({"format": "covenant-export", "formatVersion": 3, "schemas": schemas,
        "subjects": subjects, "configs": [], "modes": []})
}

fn covenant_command(covenant: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new(covenant)
        .args(args)
        .output()
        .with_context(|| format!("running covenant {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "covenant {} exited {:?}: {}",
            args.first().unwrap_or(&""),
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

async fn start(covenant: &Path, data: &Path, scratch: &Path) -> Result<Option<Server>> {
    let client = crate::server::client(4)?;
    let backend = Backend::Embedded(data.to_path_buf());
    match Server::start(
        covenant,
        &backend,
        scratch,
        &client,
        Duration::from_secs(300),
    )
    .await
    {
        Ok((server, _)) => Ok(Some(server)),
        Err(StartError::NotInBuild(_)) => Ok(None),
        Err(StartError::Failed(e)) => Err(e),
    }
}

pub async fn run(
    covenant: &Path,
    sizes: MigrateSizes,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let dump_path = scratch.join("migrate-dump.json");
    std::fs::write(&dump_path, dump(sizes.schemas).to_string()).context("writing the dump")?;
    let source_data = scratch.join("migrate-source");
    let loaded = Instant::now();
    covenant_command(
        covenant,
        &[
            "import",
            "--data-dir",
            &source_data.display().to_string(),
            &dump_path.display().to_string(),
        ],
    )?;
    let load_time = loaded.elapsed();
    let Some(mut source) = start(covenant, &source_data, scratch).await? else {
        rows.push(Row::new(PART, "migration").covenant("n/a"));
        return Ok(());
    };
    let Some(mut destination) = start(covenant, &scratch.join("migrate-dest"), scratch).await?
    else {
        rows.push(Row::new(PART, "migration").covenant("n/a"));
        return Ok(());
    };

    let client = crate::server::client(8)?;
    let base = source.base.clone();
    let n = sizes.schemas;
    let reads = load(
        &client,
        Limits {
            concurrency: 8,
            max_requests: u64::MAX,
            max_duration: Duration::from_secs_f64(sizes.read_seconds),
        },
        Arc::new(move |c, i| c.get(format!("{base}/schemas/ids/{}", i % n + 1))),
    )
    .await;
    require_clean("GET /schemas/ids on the source", &reads)?;

    let started = Instant::now();
    covenant_command(
        covenant,
        &["migrate", "--from", &source.base, "--to", &destination.base],
    )?;
    let took = started.elapsed();
    let rate = n as f64 / took.as_secs_f64();
    source.stop();
    destination.stop();
    rows.push(
        Row::new(
            PART,
            format!("{n} schemas, server to server (`covenant migrate --from --to`), verified"),
        )
        .covenant(format!("{} ({rate:.0} schemas/s)", human(took)))
        .peer(format!("{:.0} GET /schemas/ids/{{id}} per s", reads.rate()))
        .ratio(format!("{:.2} of the read rate", rate / reads.rate()))
        .notes(format!(
            "source loaded by `covenant import` in {}; every version is a durable write on the destination",
            human(load_time)
        )),
    );
    Ok(())
}
