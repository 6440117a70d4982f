//! Store-level throughput on PostgreSQL: registrations and lookups by id, through one store
//! and through two stores (two pools, as two nodes would hold) on the same database.
//!
//! ```sh
//! cargo run --release -p covenant-store --example pg_bench -- postgres://postgres@127.0.0.1:5432/bench
//! ```
//! The database should be empty; every run uses its own subject and schema names.

use covenant_store::{NewSchema, Placement, PostgresStore, Store, StoredVersion};
use std::sync::Arc;
use std::time::Instant;

const TASKS: usize = 32;
const REGISTRATIONS: usize = 2000;
const READS: usize = 20000;

fn schema(run: u128, n: usize) -> NewSchema {
    let text = format!("{{\"type\":\"record\",\"name\":\"B{run}_{n}\",\"fields\":[]}}");
    NewSchema {
        schema_type: "AVRO".into(),
        content_key: format!("key:{text}"),
        schema: text,
        references: Vec::new(),
        metadata: None,
        rule_set: None,
    }
}

async fn run(stores: &[Arc<PostgresStore>], run: u128) -> Result<(), String> {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = stores[t % stores.len()].clone();
        tasks.push(tokio::spawn(async move {
            let allow = |_: &[StoredVersion]| Ok(());
            let mut ids = Vec::new();
            for n in (t..REGISTRATIONS).step_by(TASKS) {
                let subject = format!("bench-{run}-{}", n % 16);
                let r = store
                    .register(
                        &subject,
                        &schema(run, n),
                        Placement::default(),
                        &allow,
                        None,
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                ids.push(r.id);
            }
            Ok::<_, String>(ids)
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.extend(t.await.map_err(|e| e.to_string())??);
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "register, {} store(s): {} in {secs:.2}s = {:.0}/s",
        stores.len(),
        ids.len(),
        ids.len() as f64 / secs
    );

    let ids = Arc::new(ids);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = stores[t % stores.len()].clone();
        let ids = ids.clone();
        tasks.push(tokio::spawn(async move {
            let mut found = 0usize;
            for n in (t..READS).step_by(TASKS) {
                let id = ids[(n * 7919) % ids.len()];
                if store
                    .schema_by_id(id)
                    .await
                    .map_err(|e| e.to_string())?
                    .is_some()
                {
                    found += 1;
                }
            }
            Ok::<_, String>(found)
        }));
    }
    let mut found = 0;
    for t in tasks {
        found += t.await.map_err(|e| e.to_string())??;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "schema_by_id, {} store(s): {found} in {secs:.2}s = {:.0}/s",
        stores.len(),
        found as f64 / secs
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let url = std::env::args()
        .nth(1)
        .ok_or("usage: pg_bench postgres://user@host:port/db")?;
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let one = Arc::new(
        PostgresStore::connect(&url)
            .await
            .map_err(|e| e.to_string())?,
    );
    run(std::slice::from_ref(&one), stamp).await?;
    let two = Arc::new(
        PostgresStore::connect(&url)
            .await
            .map_err(|e| e.to_string())?,
    );
    run(&[one, two], stamp + 1).await
}
