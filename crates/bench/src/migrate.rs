//! Part 5: moving a registry. A source server holding many schemas (ten versions to a subject,
//! some with references; loaded with `covenant import` from a generated dump), `covenant
//! migrate --from SOURCE --to DESTINATION` into a second running server, and the rate of plain
//! `GET /schemas/ids/{id}` on the source beside it: every schema a migration moves is at least
//! one such read, so that rate is its ceiling. Then the same source into a store folder
//! (`covenant migrate --data-dir`), written without a server in between.

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
        schemas: 20_000,
        read_seconds: 10.0,
    };
    pub const SMOKE: MigrateSizes = MigrateSizes {
        schemas: 200,
        read_seconds: 1.0,
    };
}

/// Versions per subject in the generated registry.
const VERSIONS: u64 = 10;

/// A dump of `n` schemas (ids 1..=n), `VERSIONS` versions to a subject, each version an Avro
/// record with one more optional field than the one before; every tenth subject's versions
/// also refer to version 1 of the subject before it (a field of its record type), so the
/// migration has references to order.
fn dump(n: u64) -> Value {
    let (mut schemas, mut subjects) = (Vec::new(), Vec::new());
    for s in 0..n.div_ceil(VERSIONS) {
        let name = |s: u64| format!("m{s:07}-value");
        let refers = s % 10 == 9;
        let mut versions = Vec::new();
        for v in 1..=VERSIONS.min(n - s * VERSIONS) {
            let id = s * VERSIONS + v;
            let mut fields = vec![json!({"name": "id", "type": "long"})];
            fields.extend((2..=v).map(|k| {
                json!({"name": format!("f{k}"),
                "type": ["null", "string"], "default": null})
            }));
            let mut references = Vec::new();
            if refers {
                fields.push(json!({"name": "prev", "type": format!("bench.M{}", s - 1)}));
                references.push(json!({"name": format!("bench.M{}", s - 1),
                    "subject": name(s - 1), "version": 1}));
            }
            let schema = json!({"type": "record", "name": format!("M{s}"),
                "namespace": "bench", "fields": fields})
            .to_string();
            schemas.push(json!({"id": id, "schemaType": "AVRO", "schema": schema,
                "references": references, "contentKey": format!("m{id}")}));
            versions.push(json!({"version": v, "id": id}));
        }
        subjects.push(json!({"name": name(s), "versions": versions}));
    }
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
    destination.stop();
    let into_store = scratch.join("migrate-into-store");
    let started = Instant::now();
    covenant_command(
        covenant,
        &[
            "migrate",
            "--from",
            &source.base,
            "--data-dir",
            &into_store.display().to_string(),
        ],
    )?;
    let store_took = started.elapsed();
    let store_rate = n as f64 / store_took.as_secs_f64();
    source.stop();
    rows.push(
        Row::new(
            PART,
            format!(
                "{n} schemas in {} subjects, server to server (`covenant migrate --from --to`), verified",
                n.div_ceil(VERSIONS)
            ),
        )
        .covenant(format!("{} ({rate:.0} schemas/s)", human(took)))
        .peer(format!("{:.0} GET /schemas/ids/{{id}} per s", reads.rate()))
        .ratio(format!("{:.2} of the read rate", rate / reads.rate()))
        .notes(format!(
            "source loaded by `covenant import` in {}; every version is a durable write on the destination",
            human(load_time)
        )),
    );
    rows.push(
        Row::new(
            PART,
            format!("{n} schemas, server into a store folder (`covenant migrate --from --data-dir`), verified"),
        )
        .covenant(format!("{} ({store_rate:.0} schemas/s)", human(store_took)))
        .peer(format!("{:.0} GET /schemas/ids/{{id}} per s", reads.rate()))
        .ratio(format!("{:.2} of the read rate", store_rate / reads.rate()))
        .notes("the destination's versions written in batches, one transaction each"),
    );
    Ok(())
}
