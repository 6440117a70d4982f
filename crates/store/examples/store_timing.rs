//! Micro-timing of the registry store's hot paths on both backends: `Store::register` (one
//! writer, then 32 at once), `Store::register_shared` (32 at once: PostgreSQL writes them in
//! groups), `schema_by_id` and `subject_versions`; on PostgreSQL also 32 writers spread over
//! two stores on one database, as two nodes hold them, each way.
//!
//! ```sh
//! cargo run --release -p covenant-store --example store_timing -- [postgres://user@host:port/admin-db]
//! ```
//! SQLite runs in a temporary folder; PostgreSQL (when a URL is given) in a new database made
//! through the given one.

use covenant_store::{
    NewSchema, Placement, PostgresStore, SharedGuard, SqliteStore, Store, StoredVersion,
};
use std::sync::Arc;
use std::time::Instant;

const SEQUENTIAL: usize = 2000;
const CONCURRENT: usize = 4000;
const TASKS: usize = 32;
const SUBJECTS: usize = 500;
const READS: usize = 20000;

fn schema(tag: &str, n: usize) -> NewSchema {
    let text = format!("{{\"type\":\"record\",\"name\":\"T{tag}_{n}\",\"fields\":[]}}");
    NewSchema {
        schema_type: "AVRO".into(),
        content_key: format!("key:{text}"),
        schema: text,
        references: Vec::new(),
        metadata: None,
        rule_set: None,
    }
}

/// How a registration reaches the store.
#[derive(Clone, Copy, PartialEq)]
enum Via {
    Register,
    Shared,
}

async fn register(store: &dyn Store, tag: &str, n: usize, via: Via) -> Result<i64, String> {
    let allow = |_: &[StoredVersion]| Ok(());
    let subject = format!("timing-{}", n % SUBJECTS);
    let candidate = schema(tag, n);
    let placement = Placement::default();
    let registered = match via {
        Via::Register => {
            store
                .register(&subject, &candidate, placement, &allow, None)
                .await
        }
        Via::Shared => {
            let guard: SharedGuard = Arc::new(allow);
            store
                .register_shared(&subject, &candidate, placement, guard, None)
                .await
        }
    };
    Ok(registered.map_err(|e| e.to_string())?.id)
}

/// `CONCURRENT` registrations from `TASKS` tasks, each task on `stores[task % stores.len()]`.
async fn concurrently(
    stores: &[Arc<dyn Store>],
    tag: &'static str,
    via: Via,
) -> Result<Vec<i64>, String> {
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let store = stores[t % stores.len()].clone();
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for n in (t..CONCURRENT).step_by(TASKS) {
                ids.push(register(store.as_ref(), tag, n, via).await?);
            }
            Ok::<_, String>(ids)
        }));
    }
    let mut ids = Vec::new();
    for t in tasks {
        ids.extend(t.await.map_err(|e| e.to_string())??);
    }
    Ok(ids)
}

fn report(what: &str, count: usize, started: Instant) {
    let secs = started.elapsed().as_secs_f64();
    println!(
        "  {what:<28} {count:>6} in {secs:>6.2}s = {:>8.0}/s ({:>7.1} µs each)",
        count as f64 / secs,
        secs * 1e6 / count as f64
    );
}

async fn time(store: Arc<dyn Store>) -> Result<(), String> {
    let started = Instant::now();
    let mut ids = Vec::new();
    for n in 0..SEQUENTIAL {
        ids.push(register(store.as_ref(), "s", n, Via::Register).await?);
    }
    report("register, one writer", SEQUENTIAL, started);

    let stores = [store.clone()];
    let started = Instant::now();
    ids.extend(concurrently(&stores, "c", Via::Register).await?);
    report("register, 32 writers", CONCURRENT, started);

    let started = Instant::now();
    ids.extend(concurrently(&stores, "g", Via::Shared).await?);
    report("register_shared, 32 writers", CONCURRENT, started);

    let started = Instant::now();
    for n in 0..READS {
        let id = ids[(n * 7919) % ids.len()];
        let found = store.schema_by_id(id).await.map_err(|e| e.to_string())?;
        assert!(found.is_some());
    }
    report("schema_by_id", READS, started);

    let started = Instant::now();
    for n in 0..READS {
        let subject = format!("timing-{}", (n * 7919) % SUBJECTS);
        let versions = store
            .subject_versions(&subject)
            .await
            .map_err(|e| e.to_string())?;
        assert!(!versions.is_empty());
    }
    report("subject_versions (~12 each)", READS, started);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("covenant-timing-{}", std::process::id()));
    println!("SQLite");
    let sqlite = Arc::new(SqliteStore::open(&dir).map_err(|e| e.to_string())?);
    time(sqlite).await?;
    std::fs::remove_dir_all(&dir).map_err(|e| e.to_string())?;

    if let Some(admin) = std::env::args().nth(1) {
        let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        let db = format!("timing_{}", std::process::id());
        client
            .batch_execute(&format!("CREATE DATABASE {db}"))
            .await
            .map_err(|e| e.to_string())?;
        let url = match admin.rsplit_once('/') {
            Some((base, _)) => format!("{base}/{db}"),
            None => return Err("the URL names no database".into()),
        };
        println!("PostgreSQL");
        let pg = Arc::new(
            PostgresStore::connect(&url)
                .await
                .map_err(|e| e.to_string())?,
        );
        time(pg.clone()).await?;
        let other = PostgresStore::connect(&url)
            .await
            .map_err(|e| e.to_string())?;
        two_nodes([pg, Arc::new(other)]).await?;
    }
    Ok(())
}

/// 32 writers, half of them on each of two stores of one database, each way.
async fn two_nodes(stores: [Arc<dyn Store>; 2]) -> Result<(), String> {
    let started = Instant::now();
    concurrently(&stores, "n", Via::Register).await?;
    report("register, 32 writers, 2 nodes", CONCURRENT, started);
    let started = Instant::now();
    concurrently(&stores, "m", Via::Shared).await?;
    report("register_shared, 32 w., 2 nodes", CONCURRENT, started);
    Ok(())
}
