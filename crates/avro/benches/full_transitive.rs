//! FULL_TRANSITIVE check of a 300-field record against 1,000 earlier versions that grew by
//! adding fields with defaults, compared with `apache-avro`'s `mutual_read` over the same
//! pairs. Run with `cargo bench -p covenant-avro`.

use covenant_avro::AvroFormat;
use covenant_engine::{CheckOptions, Format, Level, PriorVersion, check_history};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const FIELDS: usize = 300;
const VERSIONS: usize = 1000;
const RUNS: usize = 7;

fn field(i: usize) -> Value {
    let name = format!("field_{i}");
    match i % 7 {
        0 => json!({"name": name, "type": "string", "default": ""}),
        1 => json!({"name": name, "type": "long", "default": 0}),
        2 => json!({"name": name, "type": ["null", "string"], "default": null}),
        3 => json!({"name": name, "type": "double", "default": 0.0, "doc": "a measurement"}),
        4 => json!({"name": name, "type": {"type": "enum", "name": format!("Status{i}"),
            "symbols": ["UNKNOWN", "OPEN", "CLOSED"], "default": "UNKNOWN"}, "default": "UNKNOWN"}),
        5 => json!({"name": name, "type": {"type": "array", "items": "string"}, "default": []}),
        _ => {
            json!({"name": name, "type": {"type": "record", "name": format!("Nested{i}"), "fields": [
            {"name": "id", "type": "string", "default": ""},
            {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}, "default": ""}
        ]}, "default": {}})
        }
    }
}

/// Version `v` (0-based) of the subject: the first fields, growing to `FIELDS` at the newest.
fn version(v: usize) -> String {
    let n = 1 + (FIELDS - 1) * v / VERSIONS;
    let fields: Vec<Value> = (0..n).map(field).collect();
    json!({"type": "record", "name": "Order", "namespace": "com.example", "fields": fields})
        .to_string()
}

fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs[xs.len() / 2]
}

fn main() {
    let texts: Vec<String> = (0..=VERSIONS).map(version).collect();
    let parsed: Vec<_> = texts
        .iter()
        .map(|t| AvroFormat::parse(t, &[]).expect("generated schema parses"))
        .collect();
    let (newest, earlier) = parsed.split_last().expect("versions");
    let history: Vec<PriorVersion<'_, _>> = earlier
        .iter()
        .enumerate()
        .map(|(i, s)| PriorVersion {
            version: i as i64 + 1,
            schema: s,
        })
        .collect();
    let options = CheckOptions::default();

    let mut ours = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let report = covenant_engine::budget::unlimited(|m| {
            check_history::<AvroFormat>(m, Level::FullTransitive, newest, &history, &options)
        });
        ours.push(start.elapsed());
        assert!(report.compatible, "{:?}", report.findings.first());
    }
    let ours = median(ours);

    let apache: Vec<apache_avro::Schema> = texts
        .iter()
        .map(|t| apache_avro::Schema::parse_str(t).expect("apache-avro parses"))
        .collect();
    let (a_newest, a_earlier) = apache.split_last().expect("versions");
    let mut theirs = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        for s in a_earlier {
            let r =
                apache_avro::schema_compatibility::SchemaCompatibility::mutual_read(a_newest, s);
            assert!(r.is_ok());
        }
        theirs.push(start.elapsed());
    }
    let theirs = median(theirs);

    let per = |d: Duration| d.as_secs_f64() * 1e6 / VERSIONS as f64;
    println!(
        "covenant FULL_TRANSITIVE, {FIELDS} fields vs {VERSIONS} versions: {:.1} ms per check ({:.1} us per version, both directions), median of {RUNS}",
        ours.as_secs_f64() * 1e3,
        per(ours)
    );
    println!(
        "apache-avro mutual_read over the same {VERSIONS} pairs:           {:.1} ms ({:.1} us per pair), median of {RUNS}",
        theirs.as_secs_f64() * 1e3,
        per(theirs)
    );
}
