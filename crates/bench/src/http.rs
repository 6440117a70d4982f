//! Part 2: the registry over HTTP on loopback. Every route's rate is set against a trivial
//! route of the same server (`/health/live`) measured the same way: how close a real route
//! comes to the rate at which the HTTP stack alone answers.

use crate::server::{
    Backend, Limits, LoadResult, MakeRequest, Server, V1, first_start, load, require_clean,
};
use crate::table::{Row, percentiles, us};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A small Avro record, distinct per `name`, like a typical event value schema.
pub fn event_schema(name: &str, fields: usize) -> String {
    let mut list = vec![
        json!({"name": "id", "type": "string"}),
        json!({"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}),
    ];
    for i in 0..fields {
        list.push(json!({"name": format!("f{i}"), "type": ["null", "string"], "default": null}));
    }
    json!({"type": "record", "name": name, "namespace": "com.example.events", "fields": list})
        .to_string()
}

fn body(schema: &str) -> String {
    json!({ "schema": schema }).to_string()
}

/// Each route is driven this many times, taking turns with the others.
const ROUNDS: u64 = 3;

/// The routes part 2 drives, by the names `--http-routes` takes, in the order of its rows.
pub const ROUTE_NAMES: [&str; 5] = ["live", "id", "lookup", "idempotent", "new"];

#[derive(Debug, Clone, Copy)]
pub struct HttpSizes {
    pub seed_subjects: u64,
    pub concurrency: usize,
    pub duration: Duration,
    pub max_requests: u64,
    pub new_registrations: u64,
    /// Which of [`ROUTE_NAMES`] are driven: bit `k` for the `k`th (profiling one route).
    pub routes: u8,
}

/// Every route of [`ROUTE_NAMES`].
pub const ALL_ROUTES: u8 = (1 << ROUTE_NAMES.len()) - 1;

/// The [`HttpSizes::routes`] bits of a comma-separated list of [`ROUTE_NAMES`].
pub fn route_bits(list: &str) -> Result<u8> {
    list.split(',').map(str::trim).try_fold(0, |bits, name| {
        match ROUTE_NAMES.iter().position(|n| *n == name) {
            Some(k) => Ok(bits | 1 << k),
            None => bail!(
                "unknown route {name:?}: the routes are {}",
                ROUTE_NAMES.join(", ")
            ),
        }
    })
}

impl HttpSizes {
    pub const FULL: HttpSizes = HttpSizes {
        seed_subjects: 1000,
        concurrency: 16,
        duration: Duration::from_secs(5),
        max_requests: 2_000_000,
        new_registrations: 5000,
        routes: ALL_ROUTES,
    };
    pub const SMOKE: HttpSizes = HttpSizes {
        seed_subjects: 20,
        concurrency: 4,
        duration: Duration::from_millis(500),
        max_requests: 2000,
        new_registrations: 50,
        routes: ALL_ROUTES,
    };
}

fn describe(r: &LoadResult) -> String {
    let mut l = r.latencies_us.clone();
    match percentiles(&mut l) {
        Some((p50, _, p99)) => format!(
            "{:.0} req/s (p50 {}, p99 {}, n={})",
            r.rate(),
            us(p50),
            us(p99),
            r.requests
        ),
        None => "no requests".to_string(),
    }
}

fn of_trivial(r: &LoadResult, trivial: &LoadResult) -> String {
    if trivial.rate() == 0.0 {
        return "n/a".to_string();
    }
    format!("{:.2} of /health/live", r.rate() / trivial.rate())
}

/// Seeds `n` subjects with one schema each and returns their ids, by subject index.
pub async fn seed(client: &reqwest::Client, base: &str, prefix: &str, n: u64) -> Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(n as usize);
    for i in 0..n {
        let r = client
            .post(format!("{base}/subjects/{prefix}-{i}/versions"))
            .header("content-type", V1)
            .body(body(&event_schema(&format!("Seed{i}"), 4)))
            .send()
            .await
            .context("seeding")?;
        let status = r.status();
        let v: Value = r.json().await.context("seed answer")?;
        if !status.is_success() {
            bail!("seeding {prefix}-{i}: HTTP {status}: {v}");
        }
        ids.push(v["id"].as_i64().context("seed answer has no id")?);
    }
    Ok(ids)
}

/// Runs the route set against a fresh server on `backend`.
pub async fn run(
    covenant: &Path,
    backend: Backend,
    sizes: HttpSizes,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let part = format!("2 HTTP, {}", backend.label());
    let client = crate::server::client(sizes.concurrency)?;
    let started = Server::start(
        covenant,
        &backend,
        scratch,
        &client,
        Duration::from_secs(60),
    )
    .await;
    let Some((server, _)) = first_start(started, rows, &part, "all routes")? else {
        return Ok(());
    };
    let base = server.base.clone();
    let ids = Arc::new(seed(&client, &base, "seed", sizes.seed_subjects).await?);
    let n = sizes.seed_subjects.max(1);
    let limits = Limits {
        concurrency: sizes.concurrency,
        max_requests: sizes.max_requests,
        max_duration: sizes.duration,
    };
    let schemas: Arc<Vec<String>> = Arc::new(
        (0..n)
            .map(|i| body(&event_schema(&format!("Seed{i}"), 4)))
            .collect(),
    );

    // Warm-up: connections open and caches filled before anything is timed.
    let b = base.clone();
    let warm: MakeRequest = Arc::new(move |c, _| c.get(format!("{b}/health/live")));
    load(
        &client,
        Limits {
            max_requests: 200,
            ..limits
        },
        warm,
    )
    .await;

    // The routes take turns, ROUNDS times each, so that a change in the machine's load during
    // the run (other processes share these cores) falls on every route alike.
    let (b, ids2, s2, s3, b2, b3, b4, b5) = (
        base.clone(),
        ids.clone(),
        schemas.clone(),
        schemas.clone(),
        base.clone(),
        base.clone(),
        base.clone(),
        base.clone(),
    );
    let routes: Vec<(&str, MakeRequest)> = vec![
        (
            "GET /health/live",
            Arc::new(move |c, _| c.get(format!("{b}/health/live"))),
        ),
        (
            "GET /schemas/ids/{id}",
            Arc::new(move |c, i| {
                c.get(format!(
                    "{b2}/schemas/ids/{}",
                    ids2[(i % ids2.len() as u64) as usize]
                ))
            }),
        ),
        (
            "POST /subjects/{s} lookup",
            Arc::new(move |c, i| {
                let k = i % s2.len() as u64;
                c.post(format!("{b3}/subjects/seed-{k}"))
                    .header("content-type", V1)
                    .body(s2[k as usize].clone())
            }),
        ),
        (
            "POST register (idempotent)",
            Arc::new(move |c, i| {
                let k = i % s3.len() as u64;
                c.post(format!("{b4}/subjects/seed-{k}/versions"))
                    .header("content-type", V1)
                    .body(s3[k as usize].clone())
            }),
        ),
    ];
    let round_limits = Limits {
        max_requests: limits.max_requests / ROUNDS,
        max_duration: limits.max_duration / ROUNDS as u32,
        ..limits
    };
    let new_limits = Limits {
        max_requests: sizes.new_registrations / ROUNDS,
        ..round_limits
    };
    let mut results: Vec<LoadResult> = (0..=routes.len()).map(|_| LoadResult::default()).collect();
    let driven = |k: usize| sizes.routes & (1 << k) != 0;
    for round in 0..ROUNDS {
        for (k, (_, make)) in routes.iter().enumerate().filter(|(k, _)| driven(*k)) {
            results[k].merge(load(&client, round_limits, make.clone()).await);
        }
        if !driven(routes.len()) {
            continue;
        }
        let b = b5.clone();
        let new = load(
            &client,
            new_limits,
            Arc::new(move |c, i| {
                c.post(format!("{b}/subjects/new-{round}-{i}/versions"))
                    .header("content-type", V1)
                    .body(body(&event_schema(&format!("New{round}x{i}"), 4)))
            }),
        )
        .await;
        results[routes.len()].merge(new);
    }
    for (k, (name, _)) in routes.iter().enumerate().filter(|(k, _)| driven(*k)) {
        require_clean(name, &results[k])?;
    }
    if driven(routes.len()) {
        require_clean("POST register (new subject)", &results[routes.len()])?;
    }
    let mut results = results.into_iter();
    let mut next = || results.next().unwrap_or_default();
    let (trivial, by_id, lookup, idempotent, new) = (next(), next(), next(), next(), next());

    let c = sizes.concurrency;
    let mut all = Vec::new();
    all.push(
        Row::new(
            &part,
            format!("GET /health/live (trivial route), {c} connections"),
        )
        .covenant(describe(&trivial))
        .ratio("1.00 (reference)")
        .notes("the HTTP stack alone: the ceiling for every other route"),
    );
    all.push(
        Row::new(&part, format!("GET /schemas/ids/{{id}}, {n} ids"))
            .covenant(describe(&by_id))
            .peer(format!("{:.0} req/s trivial", trivial.rate()))
            .ratio(of_trivial(&by_id, &trivial))
            .notes("distance from the HTTP limit"),
    );
    all.push(
        Row::new(&part, "POST /subjects/{s} lookup")
            .covenant(describe(&lookup))
            .peer(format!("{:.0} req/s trivial", trivial.rate()))
            .ratio(of_trivial(&lookup, &trivial))
            .notes("parses and normalizes the posted schema"),
    );
    all.push(
        Row::new(&part, "POST /subjects/{s}/versions, already registered")
            .covenant(describe(&idempotent))
            .peer(format!("{:.0} req/s trivial", trivial.rate()))
            .ratio(of_trivial(&idempotent, &trivial))
            .notes("idempotent: answers the existing id"),
    );
    all.push(
        Row::new(&part, "POST /subjects/{s}/versions, new subject each")
            .covenant(describe(&new))
            .peer(format!("{:.0} req/s trivial", trivial.rate()))
            .ratio(of_trivial(&new, &trivial))
            .notes(format!(
                "durable write per request, at most {}",
                sizes.new_registrations / ROUNDS * ROUNDS
            )),
    );
    rows.extend(
        all.into_iter()
            .enumerate()
            .filter(|(k, _)| driven(*k))
            .map(|(_, r)| r),
    );
    drop(server);
    Ok(())
}
