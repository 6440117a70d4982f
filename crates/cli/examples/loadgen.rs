//! A small load generator for the registry: registration and GET-by-id throughput against one
//! or more nodes, with the clients spread round-robin over the nodes.
//!
//! ```sh
//! covenant serve --listen 127.0.0.1:8081 --store postgres://postgres@127.0.0.1:5432/bench &
//! covenant serve --listen 127.0.0.1:8082 --store postgres://postgres@127.0.0.1:5432/bench &
//! cargo run --release -p covenant-cli --example loadgen -- \
//!     --node http://127.0.0.1:8081 --node http://127.0.0.1:8082 --clients 32
//! ```
//! It sets the global compatibility to NONE on every node first, so use a scratch database.

use clap::Parser;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// Base URL of a node; repeat for several nodes.
    #[arg(long = "node", required = true)]
    nodes: Vec<String>,
    /// Concurrent clients.
    #[arg(long, default_value_t = 32)]
    clients: usize,
    /// Registrations in total (each a new schema, so each creates an id).
    #[arg(long, default_value_t = 2000)]
    registrations: usize,
    /// GET /schemas/ids/{id} requests in total.
    #[arg(long, default_value_t = 20000)]
    reads: usize,
    /// Subjects the registrations are spread over.
    #[arg(long, default_value_t = 16)]
    subjects: usize,
    /// Prefix for subject and record names, so runs do not collide.
    #[arg(long, default_value = "bench")]
    prefix: String,
}

fn schema(prefix: &str, n: usize) -> String {
    json!({
        "type": "record",
        "name": format!("{prefix}_{n}"),
        "fields": [{"name": "id", "type": "string"}, {"name": "n", "type": "long", "default": n}]
    })
    .to_string()
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1000.0
}

fn report(what: &str, count: usize, errors: usize, elapsed: Duration, mut lat: Vec<Duration>) {
    lat.sort();
    println!(
        "{what}: {count} ok, {errors} errors in {:.2}s = {:.0}/s (p50 {:.2} ms, p99 {:.2} ms)",
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99)
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let http = covenant_exporter::client::builder()
        .timeout(Duration::from_secs(30))
        .pool_max_idle_per_host(args.clients)
        .build()?;
    let nodes = Arc::new(args.nodes.clone());
    for node in nodes.iter() {
        http.put(format!("{node}/config"))
            .json(&json!({"compatibility": "NONE"}))
            .send()
            .await?
            .error_for_status()?;
    }

    // Registrations: client c takes every clients-th schema number.
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let http = http.clone();
        let nodes = nodes.clone();
        let prefix = args.prefix.clone();
        let (total, clients, subjects) = (args.registrations, args.clients, args.subjects);
        tasks.push(tokio::spawn(async move {
            let node = &nodes[c % nodes.len()];
            let mut ids = Vec::new();
            let mut lat = Vec::new();
            let mut errors = 0;
            for n in (c..total).step_by(clients) {
                let subject = format!("{prefix}-{}", n % subjects);
                let t = Instant::now();
                let ok = http
                    .post(format!("{node}/subjects/{subject}/versions"))
                    .json(&json!({"schema": schema(&prefix, n)}))
                    .send()
                    .await
                    .ok()
                    .filter(|r| r.status().is_success());
                let id = match ok {
                    Some(r) => r.json::<Value>().await.ok().and_then(|v| v["id"].as_i64()),
                    None => None,
                };
                lat.push(t.elapsed());
                match id {
                    Some(id) => ids.push(id),
                    None => errors += 1,
                }
            }
            (ids, lat, errors)
        }));
    }
    let mut ids = Vec::new();
    let mut lat = Vec::new();
    let mut errors = 0;
    for t in tasks {
        let (i, l, e) = t.await?;
        ids.extend(i);
        lat.extend(l);
        errors += e;
    }
    report(
        &format!("register ({} node(s))", nodes.len()),
        ids.len(),
        errors,
        started.elapsed(),
        lat,
    );
    if ids.is_empty() {
        anyhow::bail!("no registration succeeded");
    }

    // Reads by id, spread over every node (a node may not have seen the id before).
    let ids = Arc::new(ids);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..args.clients {
        let http = http.clone();
        let nodes = nodes.clone();
        let ids = ids.clone();
        let (total, clients) = (args.reads, args.clients);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let (mut ok, mut errors) = (0, 0);
            for n in (c..total).step_by(clients) {
                let node = &nodes[n % nodes.len()];
                let id = ids[(n * 7919) % ids.len()];
                let t = Instant::now();
                let good = match http.get(format!("{node}/schemas/ids/{id}")).send().await {
                    Ok(r) if r.status().is_success() => r.bytes().await.is_ok(),
                    _ => false,
                };
                lat.push(t.elapsed());
                if good {
                    ok += 1;
                } else {
                    errors += 1;
                }
            }
            (ok, lat, errors)
        }));
    }
    let (mut ok, mut lat, mut errors) = (0, Vec::new(), 0);
    for t in tasks {
        let (o, l, e) = t.await?;
        ok += o;
        lat.extend(l);
        errors += e;
    }
    report(
        &format!("get by id ({} node(s))", nodes.len()),
        ok,
        errors,
        started.elapsed(),
        lat,
    );
    Ok(())
}
